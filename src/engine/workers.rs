//! The threads that run the engine's queued jobs, for every file of the process.
//!
//! A file's queued work ([lanes](super::lane)) runs on these threads rather than on threads of
//! its own, so the thread count follows the work in flight, not the number of files: a file
//! that nobody uses costs no thread. Threads start when work arrives and none is idle, up to the
//! bound (the largest [`EngineConfig::worker_threads`](super::EngineConfig::worker_threads)
//! asked for), and end after [`IDLE_EXIT`] without work. Tasks beyond the bound wait in order.
//!
//! A transaction or a dedicated connection has a thread of its own instead ([`spawn_thread`]).
//! A caller that stops waiting for a job it handed to any of these threads tells it so through
//! [`CancelOnDrop`].

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// How long a worker waits for work before it ends.
const IDLE_EXIT: Duration = Duration::from_secs(10);

/// A unit of work: runs once on some worker thread.
pub(super) type Task = Box<dyn FnOnce() + Send>;

/// The process's worker threads.
pub(super) struct Workers {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    tasks: VecDeque<Task>,
    threads: usize,
    idle: usize,
    max: usize,
}

/// The process's workers.
pub(super) fn workers() -> &'static Workers {
    static WORKERS: OnceLock<Workers> = OnceLock::new();
    WORKERS.get_or_init(|| Workers {
        state: Mutex::new(State {
            tasks: VecDeque::new(),
            threads: 0,
            idle: 0,
            max: 1,
        }),
        wake: Condvar::new(),
    })
}

impl Workers {
    /// Allows up to `threads` workers (the bound only grows).
    pub(super) fn allow(&self, threads: usize) {
        let mut state = self.lock();
        state.max = state.max.max(threads);
    }

    /// Runs `task` on a worker thread, starting one when none is idle and the bound allows.
    pub(super) fn spawn(&'static self, task: Task) {
        let mut state = self.lock();
        state.tasks.push_back(task);
        if state.idle > state.tasks.len().saturating_sub(1) {
            drop(state);
            self.wake.notify_one();
            return;
        }
        if state.threads >= state.max {
            return;
        }
        state.threads += 1;
        drop(state);
        let started = std::thread::Builder::new()
            .name("shardlite-worker".to_owned())
            .spawn(move || self.work());
        if let Err(err) = started {
            let mut state = self.lock();
            state.threads -= 1;
            if state.threads == 0 {
                // No thread runs queued work: run it here rather than leave callers waiting.
                tracing::warn!(error = %err, "no engine worker thread could start; running the job on the caller's thread");
                let tasks = std::mem::take(&mut state.tasks);
                drop(state);
                tasks.into_iter().for_each(|task| task());
            }
        }
    }

    fn work(&self) {
        let mut state = self.lock();
        loop {
            if let Some(task) = state.tasks.pop_front() {
                drop(state);
                // A job that panics must not take the thread's bookkeeping with it.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
                state = self.lock();
                continue;
            }
            state.idle += 1;
            let (next, timeout) = self
                .wake
                .wait_timeout(state, IDLE_EXIT)
                .unwrap_or_else(PoisonError::into_inner);
            state = next;
            state.idle -= 1;
            if timeout.timed_out() && state.tasks.is_empty() {
                state.threads -= 1;
                return;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Starts a thread of its own named `name` (cut to 60 characters) running `f`.
pub(super) fn spawn_thread(name: &str, f: impl FnOnce() + Send + 'static) -> crate::Result<()> {
    std::thread::Builder::new()
        .name(name.chars().take(60).collect())
        .spawn(f)
        .map(|_| ())
        .map_err(|source| crate::Error::Io {
            what: "a database worker thread".to_owned(),
            source,
        })
}

/// Tells a running or queued job that its caller stopped waiting.
pub(super) struct CancelOnDrop(pub(super) Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
