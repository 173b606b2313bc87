//! One SQLite file served by a writer thread, a few reader threads and per-transaction
//! session threads.
//!
//! WAL lets one writer and many readers work at once. Ordinary writes are serialised on
//! the writer thread's connection, so concurrent callers never race for the write lock and
//! never see "database is locked". Reads run on read-only connections (`SQLITE_OPEN_READ_ONLY`
//! plus `PRAGMA query_only`). An explicit transaction is a session: it owns a connection on a
//! thread of its own, holds the write lock from `BEGIN IMMEDIATE` to commit or rollback, and
//! is rolled back if it stays idle past its timeout. Async callers talk to all of these
//! threads over channels; no blocking call ever runs on the async runtime.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::{Semaphore, oneshot};

use super::fence_upkeep::Upkeep;
use super::guard::{self, Limits};
use super::hold::Hold;
use super::identity::{FileIdentity, read_only_file};
use super::inline::{Borrowed, Here};
use super::open::{open_reader, open_writer};
use super::script::{self, Access};
use super::session::Session;
use super::sqlite_error::sql_error;
use crate::data::{Params, SqlResult};
use crate::error::{Error, Result};

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
    /// SQLite work. `None` sends every query to a reader thread. Default 1 ms.
    pub inline_read_budget: Option<Duration>,
    /// How long a moved record stays in a migration's source file once the new map is active:
    /// a writer still on the old map is refused for that long rather than writing where nobody
    /// reads. Afterwards the record and its triggers are removed (the engine checks when it
    /// opens the file and from time to time while it serves it). Keep it longer than the
    /// refresh interval of every router and client on the catalog (250 ms by default). Default
    /// 10 minutes.
    pub moved_record_grace: Duration,
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
        if self.max_result_rows == 0 || self.max_result_bytes == 0 || self.max_queued_jobs == 0 {
            return Err(Error::invalid_argument(
                "engine limits",
                "the result and queue limits must be at least 1",
            ));
        }
        Ok(())
    }

    pub(crate) fn limits(&self) -> Limits {
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
        }
    }
}

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A handle to one open SQLite file. Cheap to clone; the threads stop when the last clone drops.
#[derive(Clone)]
pub struct Database {
    pub(super) shared: Arc<Shared>,
}

pub(super) struct Shared {
    pub(super) path: PathBuf,
    pub(super) label: String,
    /// The file the writer opened: writes stop if the path comes to name another (or none).
    pub(super) identity: Option<FileIdentity>,
    pub(super) config: EngineConfig,
    writer: flume::Sender<Job>,
    /// The writer's connection: its thread runs queued jobs on it, and blocking callers run
    /// their writes on it on their own thread; the lock serialises the two.
    pub(super) writer_conn: Arc<Mutex<Connection>>,
    readers: flume::Sender<Job>,
    /// Read-only connections that async callers borrow to run a short query on their own task.
    pub(super) inline_readers: Borrowed,
    /// The read transaction kept open while async callers' inline reads overlap.
    pub(super) inline_hold: Arc<Hold>,
    /// Read-only connections that blocking callers borrow to run queries on their own thread.
    pub(super) blocking_readers: Borrowed,
    pub(super) transaction_slots: Arc<Semaphore>,
    pub(super) sessions: Mutex<HashMap<String, Session>>,
}

impl Shared {
    /// Fails when the path no longer names the file the writer opened (see [`FileIdentity`]).
    pub(super) fn check_file(&self) -> Result<()> {
        FileIdentity::check(self.identity, &self.path, &self.label)
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("label", &self.shared.label)
            .field("path", &self.shared.path)
            .finish_non_exhaustive()
    }
}

/// What kind of file is being opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// A data database: gets the internal tables for collections, saved queries and procedures.
    Data,
    /// The master catalog.
    Catalog,
}

impl Database {
    /// Opens (creating if needed, with its parent folder) a database file.
    ///
    /// `label` names the database in errors (a shard id, say); it is never a secret.
    pub async fn open(path: impl AsRef<Path>, label: impl Into<String>, config: EngineConfig) -> Result<Self> {
        Self::open_as(path.as_ref(), label.into(), config, Role::Data).await
    }

    pub(crate) async fn open_as(path: &Path, label: String, config: EngineConfig, role: Role) -> Result<Self> {
        config.validate()?;
        let path = path.to_path_buf();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            let parent = parent.to_path_buf();
            tokio::task::spawn_blocking(move || std::fs::create_dir_all(&parent))
                .await
                .map_err(|_| Error::Closed {
                    shard_id: label.clone(),
                })?
                .map_err(|source| Error::Io {
                    what: format!("the folder of database '{label}'"),
                    source,
                })?;
        }

        let (writer, writer_rx) = flume::bounded::<Job>(config.max_queued_jobs);
        let (ready_tx, ready_rx) = oneshot::channel();
        {
            let path = path.clone();
            let config = config.clone();
            let label_for_writer = label.clone();
            spawn_thread(&format!("shardlite-writer-{label}"), move || {
                let conn = match open_writer(&path, &config, role) {
                    Ok(conn) => Arc::new(Mutex::new(conn)),
                    Err(err) => {
                        let _ = ready_tx.send(Err(err));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(Arc::clone(&conn)));
                let upkeep = (role == Role::Data).then(|| Upkeep::new(config.moved_record_grace, config.busy_timeout));
                serve_shared(&conn, &writer_rx, upkeep, &label_for_writer);
            })?;
        }
        let writer_conn = ready_rx.await.map_err(|_| Error::Closed {
            shard_id: label.clone(),
        })??;

        let (readers, readers_rx) = flume::bounded::<Job>(config.max_queued_jobs);
        for n in 0..config.readers.max(1) {
            let (ready_tx, ready_rx) = oneshot::channel();
            let path = path.clone();
            let config = config.clone();
            let rx = readers_rx.clone();
            spawn_thread(&format!("shardlite-reader-{label}-{n}"), move || {
                match open_reader(&path, &config) {
                    Ok(conn) => {
                        let _ = ready_tx.send(Ok(()));
                        serve(conn, &rx);
                    }
                    Err(err) => {
                        let _ = ready_tx.send(Err(err));
                    }
                }
            })?;
            ready_rx.await.map_err(|_| Error::Closed {
                shard_id: label.clone(),
            })??;
        }

        let identity = FileIdentity::of(&path);
        Ok(Self {
            shared: Arc::new(Shared {
                identity,
                transaction_slots: Arc::new(Semaphore::new(config.max_open_transactions.max(1))),
                inline_readers: Borrowed::new(Duration::ZERO),
                inline_hold: Arc::default(),
                blocking_readers: Borrowed::new(config.busy_timeout),
                path,
                label,
                config,
                writer,
                writer_conn,
                readers,
                sessions: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The file this database lives in.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The label used in errors.
    pub fn label(&self) -> &str {
        &self.shared.label
    }

    pub(super) fn closed(&self) -> Error {
        Error::Closed {
            shard_id: self.shared.label.clone(),
        }
    }

    /// Runs `f` on a connection of `queue`, under the database's statement limits.
    ///
    /// A full queue answers [`Error::Busy`] at once. If the caller stops waiting (its future is
    /// dropped: a client went away, a deadline passed), the job is skipped when it has not
    /// started, and interrupted when it has. A job on the writer that leaves a transaction open
    /// is rolled back and fails: the writer is shared, and must be back in autocommit for the
    /// next caller. Likewise a job that leaves a TEMP object on its connection (see
    /// [`guard::temp_left`]).
    async fn call<T: Send + 'static>(
        &self,
        queue: &flume::Sender<Job>,
        on_writer: bool,
        f: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let limits = self.shared.config.limits();
        let job_cancel = Arc::clone(&cancel);
        let shared = Arc::clone(&self.shared);
        let job: Job = Box::new(move |conn: &mut Connection| {
            if job_cancel.load(Ordering::Relaxed) {
                return;
            }
            let mut result = match on_writer.then(|| shared.check_file()) {
                Some(Err(err)) => Err(err),
                _ => guard::arm(&limits, Some(job_cancel), || f(conn)),
            };
            if on_writer {
                result = result.map_err(|err| read_only_file(conn, &shared.label, err));
            }
            if on_writer && !conn.is_autocommit() {
                let _ = guard::trusted(|| conn.execute_batch("ROLLBACK"));
                if result.is_ok() {
                    result = Err(Error::TransactionControl {
                        statement: "(the statements left a transaction open)".to_owned(),
                    });
                }
            }
            if let Err(err) = guard::temp_left(conn)
                && result.is_ok()
            {
                result = Err(err);
            }
            let _ = tx.send(result);
        });
        match queue.try_send(job) {
            Ok(()) => {}
            Err(flume::TrySendError::Full(_)) => {
                return Err(Error::busy(
                    self.shared.label.clone(),
                    format!(
                        "{} jobs are already waiting for its connections; retry shortly",
                        self.shared.config.max_queued_jobs
                    ),
                ));
            }
            Err(flume::TrySendError::Disconnected(_)) => return Err(self.closed()),
        }
        let cancel_on_drop = CancelOnDrop(cancel);
        let outcome = rx.await.map_err(|_| self.closed());
        std::mem::forget(cancel_on_drop);
        outcome?.map_err(|err| self.storage_failure(err))
    }

    /// `err`, or, when SQLite could not use the file itself (an I/O error, a corrupt or foreign
    /// file, a full disk, a file it cannot open, or one deleted or moved since it was opened),
    /// [`Error::ShardStorage`] naming this database: a failure of this shard's storage, told
    /// apart from a client's mistake (a read-only violation stays one).
    pub(super) fn storage_failure(&self, err: Error) -> Error {
        match err {
            Error::Sql(failure) if is_storage_failure(failure.code) => Error::ShardStorage {
                shard_id: self.shared.label.as_str().into(),
                failure,
            },
            other => other,
        }
    }

    /// Runs `f` on the writer connection.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.call(&self.shared.writer, true, f).await
    }

    /// Runs `f` on a read-only connection.
    pub(crate) async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.call(&self.shared.readers, false, f).await
    }

    /// Runs `f` inside `BEGIN IMMEDIATE` ... `COMMIT` on the writer, rolling back if it fails.
    /// Only the engine's own `BEGIN`, `COMMIT` and `ROLLBACK` pass the guard: SQL run by `f`
    /// cannot end the transaction early.
    pub(crate) async fn write_atomic<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.write(move |conn| {
            guard::trusted(|| conn.execute_batch("BEGIN IMMEDIATE")).map_err(sql_error)?;
            let outcome = f(conn).and_then(|value| {
                guard::trusted(|| conn.execute_batch("COMMIT"))
                    .map_err(sql_error)
                    .map(|()| value)
            });
            if outcome.is_err() && !conn.is_autocommit() {
                let _ = guard::trusted(|| conn.execute_batch("ROLLBACK"));
            }
            outcome
        })
        .await
    }

    /// Executes SQL with bound parameters. Queries run on a reader (a short one on the caller's
    /// task, see [`EngineConfig::inline_read_budget`]); anything that writes on the writer.
    pub async fn execute(&self, sql: &str, params: Params) -> Result<SqlResult> {
        match self.execute_inline(sql, &params) {
            Here::Done(done) => done,
            Here::Writes => self.execute_elsewhere(sql, params, true).await,
            Here::Elsewhere => self.execute_elsewhere(sql, params, false).await,
        }
    }

    /// [`execute`](Self::execute) off the caller's task, for a call that already tried it there
    /// ([`execute_inline`](Self::execute_inline)), so that a query over the inline budget
    /// spends it once: on a reader thread, or straight on the writer when the statement
    /// `writes` or does not start like a query.
    pub(crate) async fn execute_elsewhere(&self, sql: &str, params: Params, writes: bool) -> Result<SqlResult> {
        let params = if !writes && script::starts_like_query(sql) {
            let query: Arc<str> = Arc::from(sql);
            // The reader hands the parameters back when the text turns out to write
            // (`WITH ... DELETE`), so the writer can run it without a copy having been made.
            match self
                .read(
                    move |conn| match script::execute(conn, &query, &params, Access::ReadOnly) {
                        Err(Error::ReadOnlyViolation { .. }) => Ok(Err(params)),
                        other => other.map(Ok),
                    },
                )
                .await?
            {
                Ok(result) => return Ok(result),
                Err(params) => params,
            }
        } else {
            params
        };
        let text = sql.to_owned();
        self.write(move |conn| script::execute(conn, &text, &params, Access::ReadWrite))
            .await
    }

    /// Executes a script atomically on the writer: all of it commits, or none of it does.
    pub async fn execute_atomic(&self, sql: &str, params: Params) -> Result<SqlResult> {
        let text = sql.to_owned();
        self.write_atomic(move |conn| script::execute(conn, &text, &params, Access::ReadWrite))
            .await
    }

    /// Executes SQL that must not write, on a read-only connection. Every statement must be a
    /// query (SELECT, VALUES, WITH ... SELECT, EXPLAIN) that SQLite itself reports as read-only;
    /// otherwise nothing runs and [`Error::ReadOnlyViolation`] is returned.
    pub async fn execute_read_only(&self, sql: &str, params: Params) -> Result<SqlResult> {
        if let Some(done) = self.read_inline(sql, &params) {
            return done;
        }
        let text = sql.to_owned();
        self.read(move |conn| script::execute(conn, &text, &params, Access::ReadOnly))
            .await
    }

    /// A cheap health probe: a read on a reader connection.
    pub async fn probe(&self) -> Result<()> {
        self.read(|conn| {
            conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
                .map_err(sql_error)
        })
        .await
    }
}

/// Whether SQLite's (extended) result `code` says it could not use the file itself: an I/O
/// error, a corrupt or foreign file, a full disk, a file it cannot open or lacks permission for,
/// or one deleted or moved since it was opened.
pub(crate) fn is_storage_failure(code: i32) -> bool {
    match code & 0xff {
        rusqlite::ffi::SQLITE_IOERR
        | rusqlite::ffi::SQLITE_CORRUPT
        | rusqlite::ffi::SQLITE_NOTADB
        | rusqlite::ffi::SQLITE_FULL
        | rusqlite::ffi::SQLITE_CANTOPEN
        | rusqlite::ffi::SQLITE_PERM => true,
        // Plain SQLITE_READONLY is a write on a read-only connection; its extended codes are
        // about the file (moved or deleted, cannot lock, cannot recover).
        rusqlite::ffi::SQLITE_READONLY => code != rusqlite::ffi::SQLITE_READONLY,
        _ => false,
    }
}

pub(super) fn spawn_thread(name: &str, f: impl FnOnce() + Send + 'static) -> Result<()> {
    std::thread::Builder::new()
        .name(name.chars().take(60).collect())
        .spawn(f)
        .map(|_| ())
        .map_err(|source| Error::Io {
            what: "a database worker thread".to_owned(),
            source,
        })
}

fn serve(mut conn: Connection, jobs: &flume::Receiver<Job>) {
    while let Ok(job) = jobs.recv() {
        job(&mut conn);
    }
}

/// Runs the writer's jobs; between them, the file's fence upkeep when it is due.
fn serve_shared(conn: &Mutex<Connection>, jobs: &flume::Receiver<Job>, mut upkeep: Option<Upkeep>, label: &str) {
    loop {
        let job = match &upkeep {
            Some(upkeep) => match jobs.recv_deadline(upkeep.next()) {
                Ok(job) => Some(job),
                Err(flume::RecvTimeoutError::Timeout) => None,
                Err(flume::RecvTimeoutError::Disconnected) => return,
            },
            None => match jobs.recv() {
                Ok(job) => Some(job),
                Err(_) => return,
            },
        };
        let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(job) = job {
            job(&mut conn);
        }
        if let Some(upkeep) = upkeep.as_mut() {
            upkeep.run_if_due(&conn, label);
        }
    }
}

/// Tells a running or queued job that its caller stopped waiting.
pub(super) struct CancelOnDrop(pub(super) Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
