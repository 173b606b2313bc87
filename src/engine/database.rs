//! One SQLite file: [`Database`], the one `impl Database` of the engine. It opens the file,
//! runs SQL on it (queued on its writer or readers, on the caller's task, or on the calling
//! thread), reports on its life, and hands out its parts, each a type of its own in a file of
//! its own: [`Tables`] (`store/tables.rs`), [`Collections`] (`store/collections.rs`),
//! [`SavedQueries`] (`store/saved_queries.rs`), [`Procedures`] (`store/procedures.rs`),
//! [`Sessions`] (`session.rs`) and, inside the crate, the data-migration jobs
//! ([`Moves`], `copy/moves.rs`).
//!
//! WAL lets one writer and many readers work at once. Ordinary writes are serialised on
//! the writer's connection, so concurrent callers never race for the write lock and
//! never see "database is locked". Reads run on read-only connections (`SQLITE_OPEN_READ_ONLY`
//! plus `PRAGMA query_only`). Queued jobs run on the process's [worker threads](super::workers),
//! never on the async runtime. An explicit transaction is a session: it owns a connection on a
//! thread of its own, holds the write lock from `BEGIN IMMEDIATE` to commit or rollback, and
//! is rolled back if it stays idle past its timeout. The file opens on first use and closes
//! when idle ([`lifecycle`](super::lifecycle)).

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::atomic::Atomic;
use super::config::EngineConfig;
use super::dedicated::DedicatedConnection;
use super::guard;
use super::inline::{self, Here};
use super::lane::{Job, Lane};
use super::lifecycle::{Pin, Shared};
use super::open::Role;
use super::reshard::copy::Moves;
use super::script::{self, ScriptMode};
use super::session::Sessions;
use super::sqlite_error::{read_only_file, sql_error, storage_failure};
use super::store::{self, Collections, Procedures, SavedQueries, Tables};
use super::workers::CancelOnDrop;
use crate::data::{DatabaseInfo, Params, RowRef, SqlResult};
use crate::error::{Error, Result};

/// A handle to one SQLite file. Cheap to clone; the file closes when idle (and when the last
/// clone drops) and opens again on its next use.
///
/// It runs SQL itself ([`execute`](Self::execute) and its kin); row, collection, saved-query,
/// procedure and transaction calls go through its parts: [`tables`](Self::tables),
/// [`collections`](Self::collections), [`saved_queries`](Self::saved_queries),
/// [`procedures`](Self::procedures) and [`sessions`](Self::sessions).
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::client::Params;
/// use shardlite::engine::{Database, EngineConfig};
///
/// let db = Database::open("data/orders.db", "orders", EngineConfig::default()).await?;
/// db.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, amount REAL)", Params::none()).await?;
/// db.execute("INSERT INTO orders (amount) VALUES (?1)", Params::from(vec![19.5])).await?;
/// println!("tables: {:?}", db.tables().list_tables().await?);
/// # Ok(()) }
/// ```
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
        database.shared.opened_async().await?;
        Ok(database)
    }

    fn from_shared(shared: Shared) -> Self {
        Self {
            shared: Arc::new(shared),
        }
    }

    /// The file this database lives in.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The label used in errors.
    pub fn label(&self) -> &str {
        &self.shared.label
    }

    /// Its tables, row by row by primary key.
    pub fn tables(&self) -> Tables<'_> {
        Tables::new(self)
    }

    /// Its JSON collections.
    pub fn collections(&self) -> Collections<'_> {
        Collections::new(self)
    }

    /// Its saved queries.
    pub fn saved_queries(&self) -> SavedQueries<'_> {
        SavedQueries::new(self)
    }

    /// Its procedures.
    pub fn procedures(&self) -> Procedures<'_> {
        Procedures::new(self)
    }

    /// Its explicit transactions, each a session on a connection of its own.
    pub fn sessions(&self) -> Sessions<'_> {
        Sessions::new(self)
    }

    /// Its part in atomic transactions across shards: a participant's commit and abort, its
    /// prepared intents, and the decision records it holds.
    pub fn atomic(&self) -> Atomic<'_> {
        Atomic::new(self)
    }

    /// Its side of data migrations: page copies into it, their cursors, and page checksums.
    pub(crate) fn moves(&self) -> Moves<'_> {
        Moves::new(self)
    }

    /// Opens a connection of its own on this file, for one caller.
    pub async fn dedicated(&self) -> Result<DedicatedConnection> {
        DedicatedConnection::open(self).await
    }

    /// Counts for this database.
    pub async fn info(&self) -> Result<DatabaseInfo> {
        store::info(self).await
    }

    /// Whether the file is open now (it opens on its next use otherwise).
    pub fn is_open(&self) -> bool {
        self.shared.is_open()
    }

    /// Closes the file now if nothing uses it (see [`EngineConfig::shard_idle_timeout`] for
    /// when it closes on its own); whether it closed. It opens again on its next use.
    pub fn close_if_idle(&self) -> bool {
        self.shared.close_if_idle()
    }

    /// Keeps the file open until the pin drops: for work that spans calls (a copy, a fence
    /// being installed, a dedicated connection).
    pub(crate) fn pin(&self) -> Pin {
        self.shared.pin()
    }

    /// Jobs queued on the writer and on the readers, for metrics; 0 when closed.
    pub fn queued_jobs(&self) -> usize {
        self.shared.queued_jobs()
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
        let open = self.shared.opened_async().await?;
        let on_writer = queue == Queue::Writer;
        let (tx, rx) = oneshot::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let limits = self.shared.config.limits();
        let allowances = guard::allowances(guard::ConnectionKind::Shared, self.shared.config.allow_attach);
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
        let outcome = rx.await.map_err(|_| self.shared.closed());
        std::mem::forget(cancel_on_drop);
        outcome?.map_err(|err| self.storage_failure(err))
    }

    /// `err`, or, when SQLite could not use the file itself, [`Error::ShardStorage`] naming
    /// this database (see [`storage_failure`]).
    pub(super) fn storage_failure(&self, err: Error) -> Error {
        storage_failure(&self.shared.label, err)
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

    /// Executes SQL with bound parameters. Queries run on a reader, anything that writes on the
    /// writer's connection; a short query, or a short single statement that writes while the
    /// writer's connection is free, runs on the caller's task (see
    /// [`EngineConfig::inline_read_budget`]).
    pub async fn execute(&self, sql: &str, params: Params) -> Result<SqlResult> {
        match inline::execute_inline(self, sql, &params) {
            Here::Done(done) => done,
            Here::Writes => self.execute_elsewhere(sql, params, true).await,
            Here::Elsewhere => self.execute_elsewhere(sql, params, false).await,
        }
    }

    /// [`execute`](Self::execute) as far as the caller's task takes it: a query that runs to
    /// its result within the inline budget is [`Here::Done`]; one that turns out to write is
    /// [`Here::Writes`]; anything else is [`Here::Elsewhere`]. The caller then awaits
    /// [`execute_elsewhere`](Self::execute_elsewhere), which starts it over.
    pub(crate) fn execute_inline(&self, sql: &str, params: &Params) -> Here<SqlResult> {
        inline::execute_inline(self, sql, params)
    }

    /// Runs one query on the caller's task, lending each row to `each` in place, when it
    /// finishes within the inline budget: the fast path of the async client's `query_row` and
    /// `query_map`, for a call that read the clock at `started`. What became of it is as for
    /// [`execute_inline`](Self::execute_inline). `each` may have seen some rows by then: the
    /// caller forgets what it made of them, since the query starts over.
    pub(crate) fn query_inline(
        &self,
        started: Instant,
        sql: &str,
        params: &Params,
        each: &mut dyn FnMut(&RowRef<'_>) -> Result<ControlFlow<()>>,
    ) -> Here<()> {
        inline::query_inline(self, started, sql, params, each)
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
                    move |conn| match script::execute(conn, &query, &params, ScriptMode::ReadOnly) {
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
        self.write(move |conn| script::execute(conn, &text, &params, ScriptMode::ReadWrite))
            .await
    }

    /// Executes a script atomically on the writer: all of it commits, or none of it does.
    pub async fn execute_atomic(&self, sql: &str, params: Params) -> Result<SqlResult> {
        let text = sql.to_owned();
        self.write_atomic(move |conn| script::execute(conn, &text, &params, ScriptMode::ReadWrite))
            .await
    }

    /// Executes SQL that must not write, on a read-only connection. Every statement must be a
    /// query (SELECT, VALUES, WITH ... SELECT, EXPLAIN) that SQLite itself reports as read-only;
    /// otherwise nothing runs and [`Error::ReadOnlyViolation`] is returned.
    pub async fn execute_read_only(&self, sql: &str, params: Params) -> Result<SqlResult> {
        if let Some(done) = inline::read_inline(self, sql, &params) {
            return done;
        }
        let text = sql.to_owned();
        self.read(move |conn| script::execute(conn, &text, &params, ScriptMode::ReadOnly))
            .await
    }

    /// Runs one query that must not write on a reader connection and hands each row to `each`
    /// in place, with `state`, which it returns: a read of many rows (a map's million directory
    /// records) that never holds them all. Refused as
    /// [`execute_read_only`](Self::execute_read_only) refuses a statement that writes.
    pub(crate) async fn fold_read_only<T: Send + 'static>(
        &self,
        sql: &str,
        params: Params,
        state: T,
        mut each: impl FnMut(&mut T, &RowRef<'_>) -> Result<()> + Send + 'static,
    ) -> Result<T> {
        let text = sql.to_owned();
        self.read(move |conn| {
            let mut state = state;
            let kind = crate::sql::classify(&text);
            script::query_with(
                conn,
                &text,
                kind,
                &params,
                ScriptMode::ReadOnly,
                Instant::now(),
                &mut |row| each(&mut state, row).map(|()| ControlFlow::Continue(())),
            )?;
            Ok(state)
        })
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

    /// [`execute`](Self::execute) on the calling thread, for callers that do not run on an
    /// async runtime: queries run on a borrowed read-only connection, anything that writes on
    /// the writer's connection (locked for the call, so writes stay serialised with the writer
    /// thread's). Blocks for as long as the statement runs, within the statement time limit.
    pub fn execute_blocking(&self, sql: &str, params: &Params) -> Result<SqlResult> {
        inline::execute_blocking(self, sql, params)
    }

    /// Runs one statement on the calling thread and lends each row it returns to `each`, in
    /// place, until the rows end or `each` breaks: the row-closure form of
    /// [`execute_blocking`](Self::execute_blocking). A query runs on a borrowed read-only
    /// connection; a statement that writes (`INSERT … RETURNING`) runs on the writer's, and its
    /// rows are read to the end before `each` sees them, so a closure that calls back into this
    /// file never waits for a lock its own call holds.
    pub fn query_blocking(
        &self,
        sql: &str,
        params: &Params,
        each: &mut dyn FnMut(&RowRef<'_>) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        inline::query_blocking_from(self, Instant::now(), sql, params, each)
    }

    /// [`query_blocking`](Self::query_blocking) for a call that read the clock at `started`:
    /// the statement's time limit counts from then.
    pub(crate) fn query_blocking_from(
        &self,
        started: Instant,
        sql: &str,
        params: &Params,
        each: &mut dyn FnMut(&RowRef<'_>) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        inline::query_blocking_from(self, started, sql, params, each)
    }

    /// [`execute_read_only`](Self::execute_read_only) on the calling thread.
    pub fn execute_read_only_blocking(&self, sql: &str, params: &Params) -> Result<SqlResult> {
        inline::read_blocking(self, |conn| script::execute(conn, sql, params, ScriptMode::ReadOnly))
    }
}
