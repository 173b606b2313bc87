//! Keeping a file's shared locks taken while async callers read it at the same time.
//!
//! Every read transaction takes and drops shared locks on the database file and on a slot of
//! its WAL index. Within one process SQLite counts them, and calls `fcntl` only when the count
//! of a lock goes from 0 to 1 or back, holding a mutex of the file's across the call. Two
//! inline reads that keep taking turns on one file make those counts go up and down on nearly
//! every read, so they meet on that mutex; a runtime worker that sleeps on it leaves its core
//! idle (a thread of its own would hand the core to another thread). With 8 async callers on a
//! 2-core machine that halved throughput.
//!
//! So while inline reads overlap, one extra read-only connection keeps a read transaction open
//! on the file (a *hold*): the counts stay above zero, and the readers' own transactions start
//! and end without `fcntl` and without meeting on the mutex.
//!
//! What a hold does not do:
//! - It never changes what a reader sees: each reader still starts its own read transaction,
//!   on the newest commit.
//! - It is begun only when a read starts while another is in flight, and it ends [`MAX_AGE`]
//!   after the last read in flight (at once where no Tokio runtime runs the caller), so a
//!   short gap between reads does not cost a new hold.
//! - It never pins an old snapshot for long: it is renewed once it is [`MAX_AGE`] old, so a
//!   checkpoint is held back no longer than by a reader of that age.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::guard;

/// How long a hold keeps one snapshot before it moves to the newest commit.
pub(super) const MAX_AGE: Duration = Duration::from_millis(1);

/// A file's hold, and the count of inline reads in flight on it.
pub(super) struct Hold {
    in_flight: AtomicUsize,
    /// When (in nanoseconds since `epoch`) the hold is due to begin or be renewed: 0 while none
    /// is held, so that overlapping reads look at the lock only when there is work to do.
    due_ns: AtomicU64,
    epoch: Instant,
    /// Whether a task will end the hold if no read is in flight by then.
    ending: AtomicBool,
    state: Mutex<State>,
}

impl Default for Hold {
    fn default() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            due_ns: AtomicU64::new(0),
            epoch: Instant::now(),
            ending: AtomicBool::new(false),
            state: Mutex::new(State::default()),
        }
    }
}

#[derive(Default)]
struct State {
    /// The connection that holds (or held) the read transaction, kept for the next hold.
    conn: Option<Connection>,
    /// When the open read transaction began; `None` when none is open.
    since: Option<Instant>,
}

/// One inline read in flight; dropping it ends the read (see [`Hold::enter`]).
pub(super) struct Reading<'a> {
    hold: &'a Arc<Hold>,
}

impl Hold {
    /// Counts an inline read in, beginning or renewing the hold when another read is in flight.
    /// `open` opens the hold's connection the first time one is needed. Never waits: when
    /// another caller is busy with the hold, this read goes on without touching it.
    /// `now` is the caller's clock reading.
    pub(super) fn enter(self: &Arc<Self>, now: Instant, open: impl FnOnce() -> Option<Connection>) -> Reading<'_> {
        let others = self.in_flight.fetch_add(1, Ordering::SeqCst);
        let now_ns = u64::try_from(now.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX);
        if others > 0
            && now_ns >= self.due_ns.load(Ordering::Relaxed)
            && let Ok(mut state) = self.state.try_lock()
            && state
                .since
                .is_none_or(|since| now.saturating_duration_since(since) >= MAX_AGE)
        {
            self.end(&mut state);
            if state.conn.is_none() {
                state.conn = open();
            }
            if state.begin(now) {
                let age = u64::try_from(MAX_AGE.as_nanos()).unwrap_or(u64::MAX);
                self.due_ns.store(now_ns.saturating_add(age), Ordering::Relaxed);
            }
        }
        Reading { hold: self }
    }

    /// Ends the held read transaction, if any, and lets the next overlap begin another.
    fn end(&self, state: &mut State) {
        state.end();
        self.due_ns.store(0, Ordering::Relaxed);
    }

    /// Whether a read transaction is held now.
    #[cfg(test)]
    fn is_held(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .since
            .is_some()
    }

    /// Ends the hold if no read is in flight. Waiting for the lock (held only for a `BEGIN` or
    /// a `ROLLBACK`) rather than trying it means no hold is ever left behind: a read that began
    /// meanwhile ends it when it is the last.
    fn end_if_idle(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if self.in_flight.load(Ordering::SeqCst) == 0 {
            self.end(&mut state);
        }
    }
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        let hold = self.hold;
        if hold.in_flight.fetch_sub(1, Ordering::SeqCst) != 1 {
            return;
        }
        // The last read in flight: the hold ends after MAX_AGE unless reads overlap again. One
        // task at a time waits for that; it clears `ending` before it looks, so a read that
        // ends after it looked starts another.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            hold.end_if_idle();
            return;
        };
        if hold.ending.swap(true, Ordering::SeqCst) {
            return;
        }
        let ender = Ender(Arc::downgrade(hold));
        runtime.spawn(async move {
            // However the task ends (the time passed, the runtime shut down, or it has no
            // timer and the sleep panicked), dropping the ender ends an idle hold.
            let _ender = ender;
            tokio::time::sleep(MAX_AGE).await;
        });
    }
}

/// Ends its hold, if idle, when dropped.
struct Ender(Weak<Hold>);

impl Drop for Ender {
    fn drop(&mut self) {
        if let Some(hold) = self.0.upgrade() {
            hold.ending.store(false, Ordering::SeqCst);
            hold.end_if_idle();
        }
    }
}

impl State {
    /// Begins a read transaction on the hold's connection, as of `now`; whether it did.
    fn begin(&mut self, now: Instant) -> bool {
        let Some(conn) = &self.conn else {
            return false;
        };
        // The engine's own statements: the connection's guard refuses `BEGIN` from callers.
        let begun = guard::trusted(|| {
            conn.execute_batch("BEGIN")?;
            conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
        });
        match begun {
            Ok(()) => {
                self.since = Some(now);
                true
            }
            Err(_) => {
                self.end();
                false
            }
        }
    }

    fn end(&mut self) {
        self.since = None;
        if let Some(conn) = &self.conn
            && !conn.is_autocommit()
            && guard::trusted(|| conn.execute_batch("ROLLBACK")).is_err()
        {
            // A connection that cannot end its transaction is not kept.
            self.conn = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hold.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        (dir, path)
    }

    #[test]
    fn a_hold_lasts_only_while_reads_overlap_and_never_hides_a_commit() {
        let (_dir, path) = file();
        let hold = Arc::new(Hold::default());
        let open = || Connection::open(&path).ok();
        let writer = Connection::open(&path).unwrap();
        let reader = Connection::open(&path).unwrap();
        let count = || {
            reader
                .query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0))
                .unwrap()
        };

        // One read alone: no hold.
        let first = hold.enter(Instant::now(), open);
        assert!(!hold.is_held());
        // A second read while the first is in flight begins one.
        let second = hold.enter(Instant::now(), open);
        assert!(hold.is_held());
        // A commit made while the hold is open is seen by a new read.
        writer.execute("INSERT INTO t VALUES (2)", []).unwrap();
        assert_eq!(count(), 2);
        drop(first);
        assert!(hold.is_held());
        // The last read out ends it (here at once: no runtime runs this test), so a
        // checkpoint can take every frame.
        drop(second);
        assert!(!hold.is_held());
        let (busy, _, _): (i64, i64, i64) = writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!(busy, 0, "nothing holds the WAL once no read is in flight");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_a_runtime_a_hold_outlives_a_short_gap_and_then_ends() {
        let (_dir, path) = file();
        let hold = Arc::new(Hold::default());
        let open = || Connection::open(&path).ok();
        let first = hold.enter(Instant::now(), open);
        let second = hold.enter(Instant::now(), open);
        let last_out = Instant::now();
        drop(first);
        drop(second);
        let held = hold.is_held();
        // The ending task cannot have run before MAX_AGE passed (a loaded machine may take
        // that long to get here, and then there is nothing to check).
        if last_out.elapsed() < MAX_AGE / 2 {
            assert!(held, "a gap shorter than MAX_AGE keeps the hold");
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while hold.is_held() && Instant::now() < deadline {
            tokio::time::sleep(MAX_AGE).await;
        }
        assert!(!hold.is_held(), "an idle hold ends");
        assert!(!hold.ending.load(Ordering::SeqCst));
    }

    #[test]
    fn a_hold_moves_to_the_newest_commit_once_it_is_old() {
        let (_dir, path) = file();
        let hold = Arc::new(Hold::default());
        let open = || Connection::open(&path).ok();
        let writer = Connection::open(&path).unwrap();
        let _first = hold.enter(Instant::now(), open);
        let second = hold.enter(Instant::now(), open);
        let since = |hold: &Hold| hold.state.lock().unwrap().since.unwrap();
        let began = since(&hold);
        writer.execute("INSERT INTO t VALUES (2)", []).unwrap();
        std::thread::sleep(MAX_AGE * 2);
        drop(second);
        let _third = hold.enter(Instant::now(), open);
        assert!(since(&hold) > began, "an old hold is renewed");
        let held_count: i64 = hold
            .state
            .lock()
            .unwrap()
            .conn
            .as_ref()
            .unwrap()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(held_count, 2, "the renewed hold is on the newest commit");
    }
}
