//! One SQLite file: its writer's queue, its readers' queue and its transaction sessions.
//!
//! WAL lets one writer and many readers work at once. Ordinary writes are serialised on
//! the writer's connection, so concurrent callers never race for the write lock and
//! never see "database is locked". Reads run on read-only connections (`SQLITE_OPEN_READ_ONLY`
//! plus `PRAGMA query_only`). Queued jobs run on the process's [worker threads](super::workers),
//! never on the async runtime. An explicit transaction is a session: it owns a connection on a
//! thread of its own, holds the write lock from `BEGIN IMMEDIATE` to commit or rollback, and
//! is rolled back if it stays idle past its timeout. The file opens on first use and closes
//! when idle ([`lifecycle`](super::lifecycle)).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::config::EngineConfig;
use super::guard;
use super::identity::read_only_file;
use super::inline::Here;
use super::lane::{Job, Lane};
use super::lifecycle::Shared;
use super::script::{self, Access};
use super::sqlite_error::sql_error;
use crate::data::{Params, SqlResult};
use crate::error::{Error, Result};

/// A handle to one SQLite file. Cheap to clone; the file closes when idle (and when the last
/// clone drops) and opens again on its next use.
#[derive(Clone)]
pub struct Database {
    pub(super) shared: Arc<Shared>,
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
    /// A data database: gets the internal tables for collections, saved queries and procedures,
    /// and counts against its set of open files.
    Data,
    /// The master catalog: stays open while any handle lives.
    Catalog,
}

/// Which of a file's queues a job goes to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Queue {
    Writer,
    Readers,
}

impl Database {
    /// Opens (creating if needed, with its parent folder) a database file.
    ///
    /// `label` names the database in errors (a shard id, say); it is never a secret.
    pub async fn open(path: impl AsRef<Path>, label: impl Into<String>, config: EngineConfig) -> Result<Self> {
        Self::open_as(path.as_ref(), label.into(), config, Role::Data).await
    }

    /// A handle to a database file that opens it (creating it if needed) on first use, not
    /// now: a shard of a large map costs nothing until a call reaches it.
    pub fn lazy(path: impl AsRef<Path>, label: impl Into<String>, config: EngineConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self::from_shared(Shared::new(
            path.as_ref().to_path_buf(),
            label.into(),
            config,
            Role::Data,
        )))
    }

    pub(crate) async fn open_as(path: &Path, label: String, config: EngineConfig, role: Role) -> Result<Self> {
        config.validate()?;
        let database = Self::from_shared(Shared::new(PathBuf::from(path), label, config, role));
        database.opened_async().await?;
        Ok(database)
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
        queue: Queue,
        f: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        // Held until the job ends: a file with a call in flight is never closed.
        let open = self.opened_async().await?;
        let on_writer = queue == Queue::Writer;
        let (tx, rx) = oneshot::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let limits = self.shared.config.limits();
        let allowances = guard::allowances(guard::Scope::Shared, self.shared.config.allow_attach);
        let job_cancel = Arc::clone(&cancel);
        let job_open = Arc::clone(&open);
        let shared = Arc::clone(&self.shared);
        let job: Job = Box::new(move |conn: &mut Connection| {
            if job_cancel.load(Ordering::Relaxed) {
                return;
            }
            let mut result = match on_writer.then(|| job_open.check_file(&shared)) {
                Some(Err(err)) => Err(err),
                _ => guard::arm_for(&limits, allowances, Some(job_cancel), || f(conn)),
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
        let lane: &Arc<Lane> = if on_writer { &open.writer } else { &open.readers };
        if lane.submit(job).is_err() {
            return Err(Error::busy(
                self.shared.label.clone(),
                format!(
                    "{} jobs are already waiting for its connections; retry shortly",
                    self.shared.config.max_queued_jobs
                ),
            ));
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
        self.call(Queue::Writer, f).await
    }

    /// Runs `f` on a read-only connection.
    pub(crate) async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.call(Queue::Readers, f).await
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

/// Tells a running or queued job that its caller stopped waiting.
pub(super) struct CancelOnDrop(pub(super) Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
