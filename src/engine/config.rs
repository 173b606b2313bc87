//! The engine's settings: one [`EngineConfig`] per set of files that share limits.

use std::sync::Arc;
use std::time::Duration;

use super::shelf::OpenShards;
use crate::error::{Error, Result};

/// The limits of the job a thread is running: the statement time limit and the result caps of
/// [`EngineConfig`], which the guard enforces.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// How long one statement may run.
    pub statement_timeout: Option<Duration>,
    /// Rows one result may buffer.
    pub max_rows: usize,
    /// Bytes (of values) one result may buffer.
    pub max_bytes: usize,
}

/// Tuning for one database file.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Reader threads (read-only connections). Default 2.
    pub readers: usize,
    /// How long a statement waits for a lock held by another connection. Default 5 s.
    pub busy_timeout: Duration,
    /// Prepared statements cached per connection. Default 64.
    pub statement_cache_capacity: usize,
    /// Open transactions allowed at once; beyond it, begin answers busy. Default 8.
    pub max_open_transactions: usize,
    /// An open transaction idle this long is rolled back. `None` never expires. Default 60 s.
    pub transaction_idle_timeout: Option<Duration>,
    /// Whether SQL may `ATTACH` and `DETACH` other files (and so `VACUUM INTO` a path). Default
    /// false, and the daemon never turns it on: SQL then reaches only its own file. An
    /// in-process application that attaches files of its own may turn it on, knowing that an
    /// attached database stays attached on the shared connection for every later caller.
    pub allow_attach: bool,
    /// How long one statement may run before it is interrupted with
    /// [`Error::StatementTimeout`]. `None` never interrupts. Default 30 s (ADO.NET's
    /// `CommandTimeout`).
    pub statement_timeout: Option<Duration>,
    /// Rows one result may buffer; more is [`Error::ResultTooLarge`]. Default 250 000.
    pub max_result_rows: usize,
    /// Bytes of values one result may buffer; more is [`Error::ResultTooLarge`]. Default 128 MiB.
    pub max_result_bytes: usize,
    /// Jobs that may wait for the writer, and for the readers; beyond it calls answer
    /// [`Error::Busy`] at once instead of queueing without bound. Default 1024.
    pub max_queued_jobs: usize,
    /// How long a read-only query of an async caller may run on the caller's own task before
    /// it is stopped and started again on a reader thread. Point queries finish well inside it
    /// and so never pay for a thread hop; a long query gives the task back after this much
    /// SQLite work. The same budget holds for a single statement that writes, which runs on
    /// the caller's task when the writer's connection is free (and starts over on the writer's
    /// thread past the budget, rolled back). `None` sends every query to a reader thread and
    /// every write to the writer's thread. Default 1 ms.
    pub inline_read_budget: Option<Duration>,
    /// How long a moved record stays in a migration's source file once the new map is active:
    /// a writer still on the old map is refused for that long rather than writing where nobody
    /// reads. Afterwards the record and its triggers are removed (the engine checks when it
    /// opens the file and from time to time while it serves it). Keep it longer than the
    /// refresh interval of every router and client on the catalog (250 ms by default). Default
    /// 10 minutes.
    pub moved_record_grace: Duration,
    /// How old an atomic transaction's undecided record may grow before whoever looks aborts it
    /// (presumed abort): its coordinator is taken to have died between its first prepare and its
    /// decision. Keep it well above the time the prepares of one transaction take. Default 30 s.
    pub atomic_abandon_age: Duration,
    /// How many shard files may be open at once (each open file holds SQLite connections and
    /// about a dozen file descriptors). When the set is full, the least recently used idle file
    /// closes to make room; a file with an open transaction, a dedicated connection or a call in
    /// flight never closes under it, and a caller that finds every open file busy waits up to
    /// the busy timeout for one, then answers [`Error::Busy`]. Default: what the descriptor
    /// limit of the process allows (see [`default_max_open_shards`]).
    pub max_open_shards: usize,
    /// How long an open shard file may sit unused before it closes, releasing its connections
    /// and descriptors; it opens again on its next use. `None` keeps files open until the set is
    /// full. Default 60 s.
    pub shard_idle_timeout: Option<Duration>,
    /// Threads that run queued jobs for every file of the process (writes, and reads that do not
    /// run on the caller's task). They start on demand and end after a while idle. The process
    /// uses the largest value any configuration asked for. A statement that runs long keeps its
    /// thread, so there are more threads than cores. Default: eight per core, at least 16 and at
    /// most 64.
    pub worker_threads: usize,
    /// The set of open files these settings count against. Clones of one configuration share
    /// it, so every shard a client opens counts against one `max_open_shards`; each
    /// `EngineConfig::default()` starts a set of its own.
    pub open_shards: OpenShards,
    /// Called when a data file opens holding atomic-transaction state (a prepared intent or a
    /// decision record), with the file's label (the shard id). The sharded client sets one
    /// that hands the shard to its resolver, so a transaction a coordinator left is finished
    /// when the shard opens rather than on the resolver's next round. A file without the atomic
    /// tables costs it nothing (the table check every open makes); one with the tables, two
    /// probes. Default none.
    pub atomic_open_hook: Option<AtomicOpenHook>,
}

/// What [`EngineConfig::atomic_open_hook`] calls: it runs on the thread that opened the file,
/// after the file is open, and must return at once (queue the work, never do it there).
#[derive(Clone)]
pub struct AtomicOpenHook(pub Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for AtomicOpenHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AtomicOpenHook")
    }
}

// The limits are the connection-string limits, so a parsed connection string always fits.
pub use crate::options::{MAX_BUSY_TIMEOUT, MAX_TIMEOUT};

/// The longest [`EngineConfig::inline_read_budget`] accepted.
pub const MAX_INLINE_READ_BUDGET: Duration = Duration::from_millis(100);

impl EngineConfig {
    /// Checks that every setting is one the engine can honour; the error names the setting.
    pub fn validate(&self) -> Result<()> {
        if self.busy_timeout > MAX_BUSY_TIMEOUT {
            return Err(Error::invalid_argument(
                "busy timeout",
                format!(
                    "{:?} is longer than SQLite accepts ({} ms)",
                    self.busy_timeout,
                    i32::MAX
                ),
            ));
        }
        for (name, value) in [
            ("transaction idle timeout", self.transaction_idle_timeout),
            ("statement timeout", self.statement_timeout),
            ("moved record grace", Some(self.moved_record_grace)),
            ("atomic abandon age", Some(self.atomic_abandon_age)),
        ] {
            if value.is_some_and(|value| value > MAX_TIMEOUT) {
                return Err(Error::invalid_argument(
                    name,
                    format!("{value:?} is longer than the longest accepted, one year"),
                ));
            }
        }
        if self
            .inline_read_budget
            .is_some_and(|budget| budget > MAX_INLINE_READ_BUDGET)
        {
            return Err(Error::invalid_argument(
                "inline read budget",
                format!(
                    "{:?} is longer than the longest accepted, {MAX_INLINE_READ_BUDGET:?}: an async task must not be held that long",
                    self.inline_read_budget.unwrap_or_default()
                ),
            ));
        }
        if self.max_open_shards == 0 {
            return Err(Error::invalid_argument(
                "max open shards",
                "must be at least 1: a shard must be open to serve a call",
            ));
        }
        if let Some(limit) = descriptor_limit()
            && self.max_open_shards as u64 > limit
        {
            return Err(Error::invalid_argument(
                "max open shards",
                format!(
                    "{} is more than the descriptor limit of this process ({limit}), and each open shard needs \
                     several descriptors; lower it or raise the limit (ulimit -n)",
                    self.max_open_shards
                ),
            ));
        }
        if self.worker_threads == 0 {
            return Err(Error::invalid_argument("worker threads", "must be at least 1"));
        }
        if self.max_result_rows == 0 || self.max_result_bytes == 0 || self.max_queued_jobs == 0 {
            return Err(Error::invalid_argument(
                "engine limits",
                "the result and queue limits must be at least 1",
            ));
        }
        Ok(())
    }

    pub(super) fn limits(&self) -> Limits {
        Limits {
            statement_timeout: self.statement_timeout,
            max_rows: self.max_result_rows,
            max_bytes: self.max_result_bytes,
        }
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            readers: 2,
            busy_timeout: Duration::from_secs(5),
            statement_cache_capacity: 64,
            max_open_transactions: 8,
            transaction_idle_timeout: Some(Duration::from_secs(60)),
            allow_attach: false,
            statement_timeout: Some(Duration::from_secs(30)),
            max_result_rows: 250_000,
            max_result_bytes: 128 * 1024 * 1024,
            max_queued_jobs: 1024,
            inline_read_budget: Some(Duration::from_millis(1)),
            moved_record_grace: Duration::from_secs(600),
            atomic_abandon_age: Duration::from_secs(30),
            max_open_shards: default_max_open_shards(),
            shard_idle_timeout: Some(Duration::from_secs(60)),
            worker_threads: default_worker_threads(),
            open_shards: OpenShards::default(),
            atomic_open_hook: None,
        }
    }
}

/// Descriptors one open shard file may hold: two per SQLite connection (the file and its WAL)
/// for the writer, the readers and the connections callers borrow, and the shared-memory index.
pub const DESCRIPTORS_PER_OPEN_SHARD: u64 = 12;

/// The default [`EngineConfig::max_open_shards`]: the descriptor limit of the process, less a
/// quarter (at least 64) kept for sockets, the catalog and everything else, divided by
/// [`DESCRIPTORS_PER_OPEN_SHARD`]; at least 1. Without a known limit, 1024.
pub fn default_max_open_shards() -> usize {
    descriptor_limit().map_or(1024, |limit| {
        let reserved = (limit / 4).max(64);
        usize::try_from(limit.saturating_sub(reserved) / DESCRIPTORS_PER_OPEN_SHARD)
            .unwrap_or(usize::MAX)
            .max(1)
    })
}

fn default_worker_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, std::num::NonZeroUsize::get)
        .saturating_mul(8)
        .clamp(16, 64)
}

/// The soft limit on open file descriptors of this process, when the platform tells.
pub fn descriptor_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Raises the soft limit on open file descriptors to the hard limit, as servers do at start;
/// returns the soft limit before and after (`None` when the platform does not tell, or sets no
/// limit).
pub fn raise_descriptor_limit() -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        let before = limit.current?;
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => Some((before, getrlimit(Resource::Nofile).current.unwrap_or(before))),
            Err(_) => Some((before, before)),
        }
    }
    #[cfg(not(unix))]
    {
        None
    }
}
