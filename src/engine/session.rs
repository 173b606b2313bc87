//! Explicit transactions as sessions: each owns a connection on a thread of its own, holds
//! the write lock from `BEGIN IMMEDIATE` to commit or rollback, and is rolled back if it stays
//! idle past its timeout. Ended sessions are remembered for a while as tombstones, so a late
//! caller hears "expired" rather than "unknown".

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use rusqlite::Connection;
use tokio::sync::{OwnedSemaphorePermit, oneshot};

use super::database::{Database, EngineConfig, open_session, spawn_thread};
use super::sql::{self, Access, sql_error};
use crate::data::{Params, SqlResult};
use crate::error::{Error, Result};

pub(super) enum SessionJob {
    Execute {
        sql: String,
        params: Params,
        reply: oneshot::Sender<Result<SqlResult>>,
    },
    Commit(oneshot::Sender<Result<()>>),
    Rollback(Option<oneshot::Sender<Result<()>>>),
}

pub(super) struct Session {
    jobs: flume::Sender<SessionJob>,
    expired: Arc<AtomicBool>,
    last_used: Instant,
    ended_at: Option<Instant>,
}

/// How long an ended session is remembered, so a late caller hears "expired" rather than "unknown".
const TOMBSTONE_TTL: Duration = Duration::from_secs(600);

/// An open session's id and expiry.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    /// The session (inner transaction) id: 32 lowercase hex digits.
    pub id: String,
    /// When it expires if left idle.
    pub expires_at: Option<SystemTime>,
}

impl Database {
    /// Begins a transaction on a connection of its own (`BEGIN IMMEDIATE`).
    ///
    /// Answers [`Error::Busy`] at once when the open-transaction limit is reached, and after the
    /// busy timeout when another transaction holds the write lock.
    pub async fn begin(&self) -> Result<SessionInfo> {
        let permit = Arc::clone(&self.shared.transaction_slots)
            .try_acquire_owned()
            .map_err(|_| Error::Busy {
                shard_id: self.shared.label.clone(),
                reason: format!(
                    "{} transactions are already open, the most allowed",
                    self.shared.config.max_open_transactions
                ),
            })?;
        let (jobs, rx) = flume::unbounded();
        let expired = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = oneshot::channel();
        {
            let path = self.shared.path.clone();
            let config = self.shared.config.clone();
            let expired = Arc::clone(&expired);
            spawn_thread(&format!("shardlite-tx-{}", self.shared.label), move || {
                run_session(&path, &config, &rx, &expired, permit, ready_tx);
            })?;
        }
        ready_rx.await.map_err(|_| self.closed())?.map_err(|err| match err {
            Error::Sql { code, .. } if code & 0xff == rusqlite::ffi::SQLITE_BUSY => Error::Busy {
                shard_id: self.shared.label.clone(),
                reason: "another transaction holds the write lock".to_owned(),
            },
            other => other,
        })?;

        let id = uuid::Uuid::new_v4().simple().to_string();
        let now = Instant::now();
        let mut sessions = self.sessions();
        sessions.retain(|_, s| s.ended_at.is_none_or(|at| now.duration_since(at) < TOMBSTONE_TTL));
        sessions.insert(
            id.clone(),
            Session {
                jobs,
                expired,
                last_used: now,
                ended_at: None,
            },
        );
        drop(sessions);
        Ok(SessionInfo {
            expires_at: self.expiry_from_now(),
            id,
        })
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.shared.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn expiry_from_now(&self) -> Option<SystemTime> {
        self.shared
            .config
            .transaction_idle_timeout
            .map(|idle| SystemTime::now() + idle)
    }

    /// The idle timeout of sessions.
    pub fn transaction_idle_timeout(&self) -> Option<Duration> {
        self.shared.config.transaction_idle_timeout
    }

    fn session_gone(&self, id: &str) -> Error {
        let mut sessions = self.sessions();
        let expired = sessions
            .get_mut(id)
            .map(|s| {
                s.ended_at.get_or_insert_with(Instant::now);
                s.expired.load(Ordering::Acquire)
            })
            .unwrap_or(false);
        if expired {
            Error::TransactionExpired {
                transaction_id: id.to_owned(),
            }
        } else {
            sessions.remove(id);
            Error::TransactionNotFound {
                transaction_id: id.to_owned(),
            }
        }
    }

    fn session_sender(&self, id: &str, ending: bool) -> Result<flume::Sender<SessionJob>> {
        let mut sessions = self.sessions();
        match sessions.get_mut(id) {
            Some(s) if s.ended_at.is_none() && !s.jobs.is_disconnected() => {
                s.last_used = Instant::now();
                let jobs = s.jobs.clone();
                if ending {
                    s.ended_at = Some(Instant::now());
                    sessions.remove(id);
                }
                Ok(jobs)
            }
            _ => {
                drop(sessions);
                Err(self.session_gone(id))
            }
        }
    }

    /// Runs SQL inside an open session, extending its idle deadline.
    pub async fn session_execute(&self, id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        let jobs = self.session_sender(id, false)?;
        let (reply, rx) = oneshot::channel();
        jobs.send(SessionJob::Execute {
            sql: sql.to_owned(),
            params,
            reply,
        })
        .map_err(|_| self.session_gone(id))?;
        match rx.await {
            Ok(result) => result,
            Err(_) => Err(self.session_gone(id)),
        }
    }

    /// When the session expires if left idle from now.
    pub fn session_expires_at(&self, id: &str) -> Option<SystemTime> {
        let sessions = self.sessions();
        let session = sessions.get(id)?;
        let idle = self.shared.config.transaction_idle_timeout?;
        let remaining = idle.checked_sub(session.last_used.elapsed()).unwrap_or_default();
        Some(SystemTime::now() + remaining)
    }

    /// Commits and closes a session.
    pub async fn session_commit(&self, id: &str) -> Result<()> {
        let jobs = self.session_sender(id, true)?;
        let (reply, rx) = oneshot::channel();
        jobs.send(SessionJob::Commit(reply))
            .map_err(|_| Error::TransactionExpired {
                transaction_id: id.to_owned(),
            })?;
        rx.await.map_err(|_| Error::TransactionExpired {
            transaction_id: id.to_owned(),
        })?
    }

    /// Rolls back and closes a session.
    pub async fn session_rollback(&self, id: &str) -> Result<()> {
        let jobs = self.session_sender(id, true)?;
        let (reply, rx) = oneshot::channel();
        if jobs.send(SessionJob::Rollback(Some(reply))).is_err() {
            return Ok(()); // The session already ended, and an ended session has rolled back.
        }
        rx.await.unwrap_or(Ok(()))
    }

    /// Rolls back a session without waiting (for guards being dropped).
    pub fn session_abandon(&self, id: &str) {
        if let Ok(jobs) = self.session_sender(id, true) {
            let _ = jobs.send(SessionJob::Rollback(None));
        }
    }

    /// Number of open sessions.
    pub fn open_sessions(&self) -> usize {
        self.sessions().values().filter(|s| s.ended_at.is_none()).count()
    }
}

fn run_session(
    path: &Path,
    config: &EngineConfig,
    jobs: &flume::Receiver<SessionJob>,
    expired: &AtomicBool,
    permit: OwnedSemaphorePermit,
    ready: oneshot::Sender<Result<()>>,
) {
    // Frees the connection and the transaction slot before the final reply, so a caller that
    // hears "committed" can begin again at once.
    let finish = |conn: Connection, permit: OwnedSemaphorePermit| {
        drop(conn);
        drop(permit);
    };
    let conn = match open_session(path, config).and_then(|conn| {
        conn.execute_batch("BEGIN IMMEDIATE").map_err(sql_error)?;
        Ok(conn)
    }) {
        Ok(conn) => conn,
        Err(err) => {
            let _ = ready.send(Err(err));
            return;
        }
    };
    if ready.send(Ok(())).is_err() {
        let _ = conn.execute_batch("ROLLBACK");
        return;
    }
    loop {
        let job = match config.transaction_idle_timeout {
            Some(idle) => jobs.recv_timeout(idle),
            None => jobs.recv().map_err(|_| flume::RecvTimeoutError::Disconnected),
        };
        match job {
            Ok(SessionJob::Execute { sql, params, reply }) => {
                let result = sql::execute(&conn, &sql, &params, Access::ReadWrite);
                let _ = reply.send(result);
                if conn.is_autocommit() {
                    // The SQL ended the transaction itself (COMMIT in the text, or an error that
                    // made SQLite roll back): the session is over.
                    return;
                }
            }
            Ok(SessionJob::Commit(reply)) => {
                let result = conn.execute_batch("COMMIT").map_err(sql_error);
                if result.is_err() && !conn.is_autocommit() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                finish(conn, permit);
                let _ = reply.send(result);
                return;
            }
            Ok(SessionJob::Rollback(reply)) => {
                let result = if conn.is_autocommit() {
                    Ok(())
                } else {
                    conn.execute_batch("ROLLBACK").map_err(sql_error)
                };
                finish(conn, permit);
                if let Some(reply) = reply {
                    let _ = reply.send(result);
                }
                return;
            }
            Err(flume::RecvTimeoutError::Timeout) => {
                expired.store(true, Ordering::Release);
                let _ = conn.execute_batch("ROLLBACK");
                tracing::info!(database = %path.display(), "transaction idle past its timeout; rolled back");
                return;
            }
            Err(flume::RecvTimeoutError::Disconnected) => {
                let _ = conn.execute_batch("ROLLBACK");
                return;
            }
        }
    }
}
