//! A file's queue of jobs for one kind of connection, run on the process's
//! [workers](super::workers).
//!
//! The writer's lane runs one job at a time, in order, on the writer's connection, so writes stay
//! serialised; the readers' lane runs as many at once as the file has reader connections. A lane
//! asks for a worker only when it has work and fewer jobs running than connections; the worker
//! then runs the lane's jobs one after another (a batch at most, so that one busy file does not
//! keep a worker from the others) and gives the connection back. A full queue refuses the job at
//! once, so callers hear "busy" instead of waiting without bound.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;

use super::workers::workers;

/// A queued job: runs once on a connection of its lane.
pub(super) type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// Jobs one worker runs from a lane before it lets other lanes' work go first.
const BATCH: usize = 32;

/// The queue is full: the job was not taken.
pub(super) struct Full;

/// One kind of connection of a file, and the jobs waiting for it.
pub(super) struct Lane {
    state: Mutex<State>,
    conns: Conns,
    max_queued: usize,
}

enum Conns {
    /// The writer's connection, shared with blocking callers who lock it for their own writes.
    Writer(Arc<Mutex<Connection>>),
    /// Reader connections: as many jobs run at once as there are connections (those not in use
    /// wait in [`State::idle`]).
    Readers { width: usize },
}

struct State {
    jobs: VecDeque<Job>,
    /// Runs in progress or asked of a worker; never more than the lane's connections.
    running: usize,
    idle: Vec<Connection>,
}

impl Lane {
    /// The lane of the writer's connection.
    pub(super) fn writer(conn: Arc<Mutex<Connection>>, max_queued: usize) -> Arc<Self> {
        Self::new(Conns::Writer(conn), Vec::new(), max_queued)
    }

    /// The lane of a file's reader connections.
    pub(super) fn readers(conns: Vec<Connection>, max_queued: usize) -> Arc<Self> {
        let width = conns.len().max(1);
        Self::new(Conns::Readers { width }, conns, max_queued)
    }

    fn new(conns: Conns, idle: Vec<Connection>, max_queued: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                running: 0,
                idle,
            }),
            conns,
            max_queued,
        })
    }

    fn width(&self) -> usize {
        match &self.conns {
            Conns::Writer(_) => 1,
            Conns::Readers { width } => *width,
        }
    }

    /// Jobs waiting (not yet running).
    pub(super) fn queued(&self) -> usize {
        self.lock().jobs.len()
    }

    /// Queues `job`; a worker runs it when a connection of the lane is free.
    pub(super) fn submit(self: &Arc<Self>, job: Job) -> Result<(), Full> {
        let mut state = self.lock();
        if state.jobs.len() >= self.max_queued {
            return Err(Full);
        }
        state.jobs.push_back(job);
        let start = state.running < self.width();
        if start {
            state.running += 1;
        }
        drop(state);
        if start {
            let lane = Arc::clone(self);
            workers().spawn(Box::new(move || lane.drain()));
        }
        Ok(())
    }

    /// Runs queued jobs on one connection of the lane, a batch at most, then gives the
    /// connection back; a run that leaves jobs queued goes on behind other lanes' work.
    fn drain(self: Arc<Self>) {
        match &self.conns {
            Conns::Writer(conn) => {
                for _ in 0..BATCH {
                    let Some(job) = self.next_job(&mut None) else {
                        return;
                    };
                    run(|| job(&mut conn.lock().unwrap_or_else(PoisonError::into_inner)));
                }
            }
            Conns::Readers { .. } => {
                let mut conn = self.lock().idle.pop();
                for _ in 0..BATCH {
                    let Some(job) = self.next_job(&mut conn) else {
                        return;
                    };
                    // Runs never outnumber connections, so this run holds one.
                    if let Some(conn) = conn.as_mut() {
                        run(|| job(conn));
                    }
                }
                if let Some(conn) = conn {
                    self.lock().idle.push(conn);
                }
            }
        }
        workers().spawn(Box::new(move || self.drain()));
    }

    /// The next job of this run; `None` ends the run, giving its reader connection back (taken
    /// from `conn`) under the same lock, so a job queued meanwhile always finds a run or a
    /// connection.
    fn next_job(&self, conn: &mut Option<Connection>) -> Option<Job> {
        let mut state = self.lock();
        if let Some(job) = state.jobs.pop_front() {
            return Some(job);
        }
        if let Some(conn) = conn.take() {
            state.idle.push(conn);
        }
        state.running -= 1;
        None
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Runs one job; a job that panics fails its own caller (its answer is never sent) but not the
/// lane, whose connection and place are kept for the next job.
fn run(job: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
        tracing::error!("a database job panicked; its caller is told the shard closed");
    }
}
