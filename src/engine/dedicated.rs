//! Dedicated connections: one SQLite connection owned by one caller for as long as it likes, as
//! a connection of sqlx's own SQLite driver is.
//!
//! Whatever the caller creates for itself stays visible to its later statements: `TEMP` tables,
//! `last_insert_rowid()`, `changes()`. The connection runs on a thread of its own (blocking calls
//! never run on the async runtime), under the same guard as every engine connection: no `ATTACH`,
//! no transaction control in SQL, no pragmas that change durability or safety, a per-statement
//! time limit, and cancellation when the caller stops waiting. Between transactions it is in
//! autocommit mode, and SQL that leaves a transaction open (a `SAVEPOINT` outside one) is rolled
//! back and refused. Its transactions begin `IMMEDIATE` by default, so they take the write lock
//! at begin (waiting up to the busy timeout for it) and never fail later on a stale snapshot,
//! and one left idle past the transaction idle timeout is rolled back.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::config::EngineConfig;
use super::database::Database;
use super::guard::{self, ConnectionKind};
use super::open::open_session;
use super::script::{self, ScriptMode};
use super::sqlite_error::{is_busy_or_locked, sql_error};
use super::workers::{CancelOnDrop, spawn_thread};
use crate::data::{Params, SqlResult};
use crate::error::{Error, Result};

/// How a dedicated connection's transaction takes SQLite's locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BeginMode {
    /// `BEGIN DEFERRED`: locks are taken by the first read and the first write.
    Deferred,
    /// `BEGIN IMMEDIATE` (the default): the write lock is taken at begin.
    #[default]
    Immediate,
    /// `BEGIN EXCLUSIVE`: in WAL mode, the same as `IMMEDIATE`.
    Exclusive,
}

impl BeginMode {
    fn statement(self) -> &'static str {
        match self {
            Self::Deferred => "BEGIN DEFERRED",
            Self::Immediate => "BEGIN IMMEDIATE",
            Self::Exclusive => "BEGIN EXCLUSIVE",
        }
    }
}

enum Job {
    Execute {
        sql: String,
        params: Params,
        /// Whether the caller runs this inside its transaction (and so expects one open).
        in_transaction: bool,
        cancel: Arc<AtomicBool>,
        reply: oneshot::Sender<Result<SqlResult>>,
    },
    Begin(BeginMode, oneshot::Sender<Result<()>>),
    Commit(oneshot::Sender<Result<()>>),
    Rollback(oneshot::Sender<Result<()>>),
}

/// One SQLite connection of its own on a [`Database`]'s file; see the module docs. Dropping it
/// rolls back an open transaction and closes the connection.
#[derive(Debug)]
pub struct DedicatedConnection {
    jobs: flume::Sender<Job>,
    label: String,
    /// The connection and what it knows of the caller's transaction. Its thread locks it for
    /// each job; a short read-only query outside a transaction runs on the caller's task instead
    /// (see [`EngineConfig::inline_read_budget`]), when the thread is not busy.
    shared: Arc<Mutex<Owned>>,
    config: EngineConfig,
    _pin: super::lifecycle::Pin,
}

/// What the connection's thread and an inline read share.
#[derive(Debug)]
struct Owned {
    conn: Connection,
    state: TransactionState,
}

impl DedicatedConnection {
    /// Opens a connection of its own on `db`'s file, for one caller (see [`Database::dedicated`]).
    pub(super) async fn open(db: &Database) -> Result<Self> {
        let file = &db.shared;
        // The file stays open (and counted in its set) for as long as the connection lives.
        let pin = file.pin();
        file.opened_async().await?;
        let (jobs, rx) = flume::unbounded();
        let (ready_tx, ready_rx) = oneshot::channel();
        let path = file.path.clone();
        let config = file.config.clone();
        spawn_thread(&format!("shardlite-conn-{}", file.label), move || {
            serve(&path, &config, &rx, ready_tx);
        })?;
        let shared = ready_rx.await.map_err(|_| file.closed())??;
        Ok(Self {
            jobs,
            label: file.label.clone(),
            shared,
            config: file.config.clone(),
            _pin: pin,
        })
    }

    fn closed(&self) -> Error {
        Error::Closed {
            shard_id: self.label.clone(),
        }
    }

    async fn call<T>(&self, job: Job, rx: oneshot::Receiver<Result<T>>) -> Result<T> {
        self.jobs.send(job).map_err(|_| self.closed())?;
        rx.await.map_err(|_| self.closed())?
    }

    /// Executes SQL with bound parameters; `in_transaction` says whether the caller means its open
    /// transaction (an error if there is none: it ended or expired) or autocommit (an error if one
    /// is open).
    pub async fn execute(&self, sql: &str, params: Params, in_transaction: bool) -> Result<SqlResult> {
        if !in_transaction
            && script::starts_like_query(sql)
            && let Some(done) = self.read_inline(sql, &params)
        {
            return done;
        }
        let (reply, rx) = oneshot::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let job = Job::Execute {
            sql: sql.to_owned(),
            params,
            in_transaction,
            cancel: Arc::clone(&cancel),
            reply,
        };
        let cancel_on_drop = CancelOnDrop(cancel);
        let outcome = self.call(job, rx).await;
        std::mem::forget(cancel_on_drop);
        outcome
    }

    /// Runs a read-only query outside a transaction on the caller's task, when the connection's
    /// thread is idle and the query ends within the inline budget; `None` sends it to the thread.
    fn read_inline(&self, sql: &str, params: &Params) -> Option<Result<SqlResult>> {
        let budget = self.config.inline_read_budget?;
        // Busy means the thread is running a job: queue behind it, in order.
        let owned = self.shared.try_lock().ok()?;
        if !matches!(owned.state, TransactionState::None) || !owned.conn.is_autocommit() {
            return None;
        }
        let conn = &owned.conn;
        // Never wait for a lock on the caller's task.
        conn.busy_timeout(Duration::ZERO).ok()?;
        let started = Instant::now();
        let outcome = guard::run_inline(
            &self.config.limits(),
            guard::allowances(ConnectionKind::Session, self.config.allow_attach),
            started.checked_add(budget),
            || script::execute_from(started, conn, sql, params, ScriptMode::ReadOnly),
        );
        if conn.busy_timeout(self.config.busy_timeout).is_err() {
            return None;
        }
        match outcome {
            guard::Inline::Done(Err(Error::ReadOnlyViolation { .. })) | guard::Inline::OverBudget => None,
            // A borrowed connection does not wait for a lock.
            guard::Inline::Done(Err(err)) if is_busy_or_locked(&err) => None,
            guard::Inline::Done(result) => Some(result),
        }
    }

    /// Begins a transaction.
    pub async fn begin(&self, mode: BeginMode) -> Result<()> {
        let (reply, rx) = oneshot::channel();
        self.call(Job::Begin(mode, reply), rx).await
    }

    /// Commits the open transaction.
    pub async fn commit(&self) -> Result<()> {
        let (reply, rx) = oneshot::channel();
        self.call(Job::Commit(reply), rx).await
    }

    /// Rolls back the open transaction (nothing to do when none is open).
    pub async fn rollback(&self) -> Result<()> {
        let (reply, rx) = oneshot::channel();
        self.call(Job::Rollback(reply), rx).await
    }
}

/// What the connection's thread knows about the caller's transaction.
#[derive(Debug)]
enum TransactionState {
    None,
    Open,
    /// Ended without the caller asking (idle timeout, or SQLite rolled it back after an error):
    /// the caller's next use of it fails, once.
    Ended {
        expired: bool,
    },
}

fn serve(
    path: &Path,
    config: &EngineConfig,
    jobs: &flume::Receiver<Job>,
    ready: oneshot::Sender<Result<Arc<Mutex<Owned>>>>,
) {
    let conn = match open_session(path, config, ConnectionKind::Session) {
        Ok(conn) => conn,
        Err(err) => {
            let _ = ready.send(Err(err));
            return;
        }
    };
    let shared = Arc::new(Mutex::new(Owned {
        conn,
        state: TransactionState::None,
    }));
    if ready.send(Ok(Arc::clone(&shared))).is_err() {
        return;
    }
    let limits = config.limits();
    let trusted =
        |conn: &Connection, statement: &str| guard::trusted(|| conn.execute_batch(statement)).map_err(sql_error);
    loop {
        let open = matches!(
            shared.lock().unwrap_or_else(PoisonError::into_inner).state,
            TransactionState::Open
        );
        let job = match (open, config.transaction_idle_timeout) {
            (true, Some(idle)) => jobs.recv_timeout(idle),
            _ => jobs.recv().map_err(|_| flume::RecvTimeoutError::Disconnected),
        };
        let mut owned = shared.lock().unwrap_or_else(PoisonError::into_inner);
        let Owned { conn, state } = &mut *owned;
        let conn = &*conn;
        match job {
            Ok(Job::Execute {
                sql,
                params,
                in_transaction,
                cancel,
                reply,
            }) => {
                if cancel.load(Ordering::Relaxed) {
                    continue;
                }
                if let Err(err) = expect(state, in_transaction) {
                    let _ = reply.send(Err(err));
                    continue;
                }
                let mut result = guard::arm(&limits, Some(cancel), || {
                    script::execute(conn, &sql, &params, ScriptMode::ReadWrite)
                });
                match state {
                    TransactionState::Open if conn.is_autocommit() => {
                        // An error made SQLite roll the transaction back: the caller hears it on
                        // its next use of the transaction.
                        *state = TransactionState::Ended { expired: false };
                    }
                    TransactionState::None if !conn.is_autocommit() => {
                        let _ = trusted(conn, "ROLLBACK");
                        if result.is_ok() {
                            result = Err(Error::TransactionControl {
                                statement: "(the statements left a transaction open)".to_owned(),
                            });
                        }
                    }
                    _ => {}
                }
                let _ = reply.send(result);
            }
            Ok(Job::Begin(mode, reply)) => {
                let result = match state {
                    TransactionState::Open => Err(Error::TransactionControl {
                        statement: "BEGIN (a transaction is already open on this connection)".to_owned(),
                    }),
                    _ => trusted(conn, mode.statement()).map(|()| *state = TransactionState::Open),
                };
                let _ = reply.send(result);
            }
            Ok(Job::Commit(reply)) => {
                let result = match std::mem::replace(state, TransactionState::None) {
                    TransactionState::Open => {
                        let outcome = trusted(conn, "COMMIT");
                        if outcome.is_err() && !conn.is_autocommit() {
                            let _ = trusted(conn, "ROLLBACK");
                        }
                        outcome
                    }
                    ended => gone(&ended),
                };
                let _ = reply.send(result);
            }
            Ok(Job::Rollback(reply)) => {
                let result = match std::mem::replace(state, TransactionState::None) {
                    TransactionState::Open if !conn.is_autocommit() => trusted(conn, "ROLLBACK"),
                    _ => Ok(()),
                };
                let _ = reply.send(result);
            }
            Err(flume::RecvTimeoutError::Timeout) => {
                let _ = trusted(conn, "ROLLBACK");
                *state = TransactionState::Ended { expired: true };
                tracing::info!(database = %path.display(), "transaction idle past its timeout; rolled back");
            }
            Err(flume::RecvTimeoutError::Disconnected) => {
                if !conn.is_autocommit() {
                    let _ = trusted(conn, "ROLLBACK");
                }
                return;
            }
        }
    }
}

/// Checks that the caller's idea of its transaction matches the connection's.
fn expect(state: &mut TransactionState, in_transaction: bool) -> Result<()> {
    match (&*state, in_transaction) {
        (TransactionState::Open, true) | (TransactionState::None, false) => Ok(()),
        (TransactionState::Open, false) => Err(Error::TransactionControl {
            statement: "(a statement outside the transaction open on this connection)".to_owned(),
        }),
        (TransactionState::None, true) => gone(state),
        (TransactionState::Ended { .. }, _) => {
            let ended = std::mem::replace(state, TransactionState::None);
            if in_transaction { gone(&ended) } else { Ok(()) }
        }
    }
}

fn gone(state: &TransactionState) -> Result<()> {
    let transaction_id = "(this connection's transaction)".to_owned();
    match state {
        TransactionState::Ended { expired: true } => Err(Error::TransactionExpired { transaction_id }),
        TransactionState::Open => Ok(()),
        _ => Err(Error::TransactionNotFound { transaction_id }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Value;

    async fn open() -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let database = Database::open(dir.path().join("d.db"), "d", EngineConfig::default())
            .await
            .unwrap();
        (dir, database)
    }

    #[tokio::test]
    async fn state_lasts_for_the_connection_and_transactions_are_checked() {
        let (_dir, database) = open().await;
        let conn = database.dedicated().await.unwrap();
        let none = Params::none;
        conn.execute("CREATE TEMP TABLE t (n INTEGER)", none(), false)
            .await
            .unwrap();
        let inserted = conn.execute("INSERT INTO t VALUES (5)", none(), false).await.unwrap();
        assert_eq!(inserted.last_insert_rowid, Some(1));
        let read = conn
            .execute("SELECT n, last_insert_rowid() FROM t", none(), false)
            .await
            .unwrap();
        assert_eq!(read.rows, vec![vec![Value::Integer(5), Value::Integer(1)]]);
        // Other connections of the file do not see it.
        assert!(database.execute("SELECT n FROM t", none()).await.is_err());

        // A statement meant for a transaction with none open, and a second begin, are refused.
        let err = conn.execute("SELECT 1", none(), true).await.unwrap_err();
        assert!(matches!(err, Error::TransactionNotFound { .. }), "{err}");
        conn.begin(BeginMode::Immediate).await.unwrap();
        assert!(conn.begin(BeginMode::Immediate).await.is_err());
        let err = conn.execute("SELECT 1", none(), false).await.unwrap_err();
        assert!(matches!(err, Error::TransactionControl { .. }), "{err}");
        conn.execute("INSERT INTO t VALUES (6)", none(), true).await.unwrap();
        conn.rollback().await.unwrap();
        let count = conn.execute("SELECT count(*) FROM t", none(), false).await.unwrap();
        assert_eq!(count.rows, vec![vec![Value::Integer(1)]]);
        let err = conn.commit().await.unwrap_err();
        assert!(matches!(err, Error::TransactionNotFound { .. }), "{err}");

        // SQL that would leave a transaction open in autocommit is rolled back and refused.
        let err = conn
            .execute("SAVEPOINT s; INSERT INTO t VALUES (7)", none(), false)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::TransactionControl { .. }), "{err}");
        let count = conn.execute("SELECT count(*) FROM t", none(), false).await.unwrap();
        assert_eq!(count.rows, vec![vec![Value::Integer(1)]]);
    }

    #[tokio::test]
    async fn an_idle_transaction_is_rolled_back_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig {
            transaction_idle_timeout: Some(std::time::Duration::from_millis(100)),
            ..EngineConfig::default()
        };
        let database = Database::open(dir.path().join("d.db"), "d", config).await.unwrap();
        let conn = database.dedicated().await.unwrap();
        conn.execute("CREATE TABLE t (n INTEGER)", Params::none(), false)
            .await
            .unwrap();
        conn.begin(BeginMode::Immediate).await.unwrap();
        conn.execute("INSERT INTO t VALUES (1)", Params::none(), true)
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
        let err = conn.execute("SELECT 1", Params::none(), true).await.unwrap_err();
        assert!(matches!(err, Error::TransactionExpired { .. }), "{err}");
        // The lock is free: the shared writer writes at once.
        database
            .execute("INSERT INTO t VALUES (2)", Params::none())
            .await
            .unwrap();
        let rows = conn.execute("SELECT n FROM t", Params::none(), false).await.unwrap();
        assert_eq!(rows.rows, vec![vec![Value::Integer(2)]]);
    }
}
