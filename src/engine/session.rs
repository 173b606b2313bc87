//! Explicit transactions as sessions: each owns a connection on a thread of its own, holds
//! the write lock from `BEGIN IMMEDIATE` to commit or rollback, and is rolled back if it stays
//! idle past its timeout. Ended sessions are remembered for a while as tombstones, so a late
//! caller hears "expired" rather than "unknown".
//!
//! A file's sessions live in its [`SessionTable`] (with the slots that bound how many are open
//! at once); [`Sessions`], handed out by [`Database::sessions`], is the API over them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use rusqlite::Connection;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use super::atomic::{Intent, Recorder};
use super::config::EngineConfig;
use super::database::Database;
use super::guard;
use super::identity::FileIdentity;
use super::open::open_session;
use super::reshard::copy::{PageCursor, PagedQuery, read_pages};
use super::script::{self, ScriptMode};
use super::sqlite_error::{begin_failure, read_only_file, sql_error};
use super::workers::{CancelOnDrop, spawn_thread};
use crate::data::{Params, SqlResult, TransactionOptions};
use crate::error::{Error, Result};

mod prepare;

pub(super) enum SessionJob {
    Execute {
        sql: String,
        params: Params,
        cancel: Arc<AtomicBool>,
        reply: oneshot::Sender<Result<SqlResult>>,
    },
    Checksum {
        query: Arc<PagedQuery>,
        cursor: PageCursor,
        budget: Duration,
        cancel: Arc<AtomicBool>,
        reply: oneshot::Sender<Result<PageCursor>>,
    },
    Commit(oneshot::Sender<Result<()>>),
    /// Prepares an atomic session's writes (see [`super::atomic`]) and ends the session.
    Prepare {
        transaction_id: String,
        participants: Vec<String>,
        holds_decision: bool,
        started_unix_ms: i64,
        reply: oneshot::Sender<Result<usize>>,
    },
    Rollback(Option<oneshot::Sender<Result<()>>>),
}

struct Session {
    jobs: flume::Sender<SessionJob>,
    expired: Arc<AtomicBool>,
    last_used: Instant,
    ended_at: Option<Instant>,
}

/// How long an ended session is remembered, so a late caller hears "expired" rather than "unknown".
const TOMBSTONE_TTL: Duration = Duration::from_secs(600);

/// The most ended sessions remembered at once; the oldest are forgotten first.
const MAX_TOMBSTONES: usize = 4096;

/// A file's sessions: the open ones, the ended ones still remembered, and the slots that bound
/// how many may be open at once. Every handle of the file shares it.
pub(super) struct SessionTable {
    slots: Arc<Semaphore>,
    max_open: usize,
    sessions: Mutex<HashMap<String, Session>>,
}

impl SessionTable {
    /// A table allowing `max_open` open sessions (at least one).
    pub(super) fn new(max_open: usize) -> Self {
        let max_open = max_open.max(1);
        Self {
            slots: Arc::new(Semaphore::new(max_open)),
            max_open,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Transactions open now (their slots taken), whether or not their session is still known.
    pub(super) fn open_transactions(&self) -> usize {
        self.max_open.saturating_sub(self.slots.available_permits())
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The explicit transactions of one [`Database`] file, each a session on a connection of its own:
/// [`Database::sessions`] hands it out.
#[derive(Debug, Clone, Copy)]
pub struct Sessions<'db> {
    db: &'db Database,
}

/// An open session's id and expiry.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    /// The session (inner transaction) id: 32 lowercase hex digits.
    pub id: String,
    /// When it expires if left idle.
    pub expires_at: Option<SystemTime>,
}

impl<'db> Sessions<'db> {
    pub(super) fn new(db: &'db Database) -> Self {
        Self { db }
    }

    /// Begins a transaction on a connection of its own.
    ///
    /// The transaction is deferred: it takes SQLite's write lock at its first write, not at
    /// begin, so a transaction that has only begun (or only reads) costs other writers nothing.
    /// Once it has written, other writers wait for it (up to their busy timeout) until it
    /// commits, rolls back, or is rolled back after the idle timeout.
    ///
    /// Answers [`Error::Busy`] at once when the open-transaction limit is reached.
    pub async fn begin(self) -> Result<SessionInfo> {
        self.begin_with(TransactionOptions::default()).await
    }

    /// [`begin`](Self::begin) with `options`: a maintenance transaction's statements may also
    /// write shardlite's internal tables (see [`TransactionOptions::maintenance`]); a read-only
    /// one runs on a connection that cannot write, and refuses a statement that would write
    /// with [`Error::ReadOnlyViolation`] before it runs (see [`TransactionOptions::read_only`]).
    pub async fn begin_with(self, options: TransactionOptions) -> Result<SessionInfo> {
        self.begin_session(options, false).await
    }

    /// Begins a participant's session of an atomic transaction: like [`begin`](Self::begin),
    /// but its writes are recorded, and it ends with
    /// [`session_prepare`](Self::session_prepare) (or a rollback) rather than a commit.
    pub async fn begin_atomic(self) -> Result<SessionInfo> {
        self.begin_session(TransactionOptions::default(), true).await
    }

    async fn begin_session(self, options: TransactionOptions, atomic: bool) -> Result<SessionInfo> {
        let scope = if options.maintenance {
            guard::ConnectionKind::Maintenance
        } else {
            guard::ConnectionKind::Session
        };
        let mode = if options.read_only {
            ScriptMode::ReadOnly
        } else {
            ScriptMode::ReadWrite
        };
        let shared = &self.db.shared;
        let permit = Arc::clone(&shared.sessions.slots).try_acquire_owned().map_err(|_| {
            Error::busy(
                shared.label.clone(),
                format!(
                    "{} transactions are already open, the most allowed",
                    shared.config.max_open_transactions
                ),
            )
        })?;
        let identity = shared.opened_async().await?.identity;
        let (jobs, rx) = flume::unbounded();
        let expired = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = oneshot::channel();
        {
            let file = SessionFile {
                path: shared.path.clone(),
                identity,
                label: shared.label.clone(),
            };
            let config = shared.config.clone();
            let expired = Arc::clone(&expired);
            spawn_thread(&format!("shardlite-tx-{}", shared.label), move || {
                run_session(&file, &config, (scope, mode, atomic), &rx, &expired, permit, ready_tx);
            })?;
        }
        ready_rx
            .await
            .map_err(|_| shared.closed())?
            .map_err(|err| begin_failure(&shared.label, err))?;

        let id = uuid::Uuid::new_v4().simple().to_string();
        let now = Instant::now();
        let mut sessions = self.table();
        forget_old_sessions(&mut sessions, now);
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

    fn table(self) -> MutexGuard<'db, HashMap<String, Session>> {
        self.db.shared.sessions.lock()
    }

    fn expiry_from_now(self) -> Option<SystemTime> {
        self.db
            .shared
            .config
            .transaction_idle_timeout
            .map(|idle| SystemTime::now() + idle)
    }

    /// The idle timeout of sessions.
    pub fn transaction_idle_timeout(self) -> Option<Duration> {
        self.db.shared.config.transaction_idle_timeout
    }

    fn session_gone(self, id: &str) -> Error {
        let mut sessions = self.table();
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

    fn session_sender(self, id: &str, ending: bool) -> Result<flume::Sender<SessionJob>> {
        let mut sessions = self.table();
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
    pub async fn session_execute(self, id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        let sql = sql.to_owned();
        self.session_call(id, |cancel, reply| SessionJob::Execute {
            sql,
            params,
            cancel,
            reply,
        })
        .await
    }

    /// Sends the job `make` builds to session `id` and waits for its answer; the job is
    /// cancelled if the caller goes away first.
    pub(super) async fn session_call<T>(
        self,
        id: &str,
        make: impl FnOnce(Arc<AtomicBool>, oneshot::Sender<Result<T>>) -> SessionJob,
    ) -> Result<T> {
        let jobs = self.session_sender(id, false)?;
        let (reply, rx) = oneshot::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        jobs.send(make(Arc::clone(&cancel), reply))
            .map_err(|_| self.session_gone(id))?;
        let cancel_on_drop = CancelOnDrop(cancel);
        let outcome = rx.await;
        std::mem::forget(cancel_on_drop);
        match outcome {
            Ok(result) => result.map_err(|err| self.db.storage_failure(err)),
            Err(_) => Err(self.session_gone(id)),
        }
    }

    /// When the session expires if left idle from now.
    pub fn session_expires_at(self, id: &str) -> Option<SystemTime> {
        let sessions = self.table();
        let session = sessions.get(id)?;
        let idle = self.db.shared.config.transaction_idle_timeout?;
        let remaining = idle.checked_sub(session.last_used.elapsed()).unwrap_or_default();
        Some(SystemTime::now() + remaining)
    }

    /// Commits and closes a session.
    pub async fn session_commit(self, id: &str) -> Result<()> {
        let jobs = self.session_sender(id, true)?;
        let (reply, rx) = oneshot::channel();
        jobs.send(SessionJob::Commit(reply))
            .map_err(|_| Error::TransactionExpired {
                transaction_id: id.to_owned(),
            })?;
        rx.await
            .map_err(|_| Error::TransactionExpired {
                transaction_id: id.to_owned(),
            })?
            .map_err(|err| self.db.storage_failure(err))
    }

    /// Rolls back and closes a session.
    pub async fn session_rollback(self, id: &str) -> Result<()> {
        let jobs = self.session_sender(id, true)?;
        let (reply, rx) = oneshot::channel();
        if jobs.send(SessionJob::Rollback(Some(reply))).is_err() {
            return Ok(()); // The session already ended, and an ended session has rolled back.
        }
        rx.await.unwrap_or(Ok(()))
    }

    /// Rolls back a session without waiting (for guards being dropped).
    pub fn session_abandon(self, id: &str) {
        if let Ok(jobs) = self.session_sender(id, true) {
            let _ = jobs.send(SessionJob::Rollback(None));
        }
    }

    /// Rolls back every open session at once (they fail as expired from then on), for when the
    /// file's shard changed owner. Returns how many there were.
    pub fn abort_sessions(self) -> usize {
        let mut sessions = self.table();
        let mut aborted = 0;
        for session in sessions.values_mut() {
            if session.ended_at.is_none() && session.jobs.send(SessionJob::Rollback(None)).is_ok() {
                session.expired.store(true, Ordering::Release);
                session.ended_at = Some(Instant::now());
                aborted += 1;
            }
        }
        aborted
    }

    /// Number of open sessions.
    pub fn open_sessions(self) -> usize {
        self.table().values().filter(|s| s.ended_at.is_none()).count()
    }
}

/// Forgets ended sessions past their time to live, and the oldest beyond [`MAX_TOMBSTONES`], so
/// the session table cannot grow without bound. A session whose thread ended on its own (idle
/// expiry, or SQL that ended the transaction) counts as ended from its last use.
fn forget_old_sessions(sessions: &mut HashMap<String, Session>, now: Instant) {
    sessions.retain(|_, s| {
        if s.ended_at.is_none() && s.jobs.is_disconnected() {
            s.ended_at = Some(s.last_used);
        }
        s.ended_at.is_none_or(|at| now.duration_since(at) < TOMBSTONE_TTL)
    });
    let mut ended: Vec<(Instant, String)> = sessions
        .iter()
        .filter_map(|(id, s)| s.ended_at.map(|at| (at, id.clone())))
        .collect();
    if ended.len() > MAX_TOMBSTONES {
        ended.sort_unstable();
        for (_, id) in &ended[..ended.len() - MAX_TOMBSTONES] {
            sessions.remove(id);
        }
    }
}

/// The file a session writes, and what the database opened as it.
struct SessionFile {
    path: PathBuf,
    identity: Option<FileIdentity>,
    label: String,
}

/// Runs a session on a connection of its own for `scope`; its statements run in `mode` and, read
/// only, on a connection that cannot write.
fn run_session(
    file: &SessionFile,
    config: &EngineConfig,
    (scope, mode, atomic): (guard::ConnectionKind, ScriptMode, bool),
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
    let path = file.path.as_path();
    let conn = match open_session(path, config, scope).and_then(|conn| {
        // A maintenance transaction (a data migration's fence or capture) reads before it writes:
        // holding the write lock from the start, it never meets a writer that committed in between.
        let begin = if scope == guard::ConnectionKind::Maintenance {
            "BEGIN IMMEDIATE"
        } else {
            "BEGIN"
        };
        guard::trusted(|| conn.execute_batch(begin)).map_err(sql_error)?;
        if mode == ScriptMode::ReadOnly {
            // The connection is the session's alone and closes with it: nothing to restore.
            guard::trusted(|| conn.execute_batch("PRAGMA query_only = ON")).map_err(sql_error)?;
        }
        Ok(conn)
    }) {
        Ok(conn) => conn,
        Err(err) => {
            let _ = ready.send(Err(err));
            return;
        }
    };
    let rollback = |conn: &Connection| guard::trusted(|| conn.execute_batch("ROLLBACK")).map_err(sql_error);
    let mut recorder = match atomic.then(|| Recorder::install(&conn)).transpose() {
        Ok(recorder) => recorder,
        Err(err) => {
            let _ = rollback(&conn);
            let _ = ready.send(Err(err));
            return;
        }
    };
    if ready.send(Ok(())).is_err() {
        let _ = rollback(&conn);
        return;
    }
    let limits = config.limits();
    loop {
        let job = match config.transaction_idle_timeout {
            Some(idle) => jobs.recv_timeout(idle),
            None => jobs.recv().map_err(|_| flume::RecvTimeoutError::Disconnected),
        };
        match job {
            Ok(SessionJob::Execute {
                sql,
                params,
                cancel,
                reply,
            }) => {
                if cancel.load(Ordering::Relaxed) {
                    continue;
                }
                let mark = recorder.as_ref().map(|r| r.mark(&conn));
                let mut result = guard::arm(&limits, Some(cancel), || script::execute(&conn, &sql, &params, mode))
                    .map_err(|err| read_only_file(&conn, &file.label, err));
                if let (Some(recorder), Some(mark)) = (recorder.as_mut(), mark)
                    && let Err(err) = recorder.check(&conn, &mark)
                    && result.is_ok()
                {
                    result = Err(err);
                }
                let _ = reply.send(result);
                if conn.is_autocommit() {
                    // An error made SQLite roll the transaction back (an interrupted write, say):
                    // the session is over.
                    return;
                }
            }
            Ok(SessionJob::Checksum {
                query,
                cursor,
                budget,
                cancel,
                reply,
            }) => {
                if cancel.load(Ordering::Relaxed) {
                    continue;
                }
                let result = guard::arm(&limits, Some(cancel), || {
                    read_pages(&conn, &query, cursor, budget, |_| true)
                });
                let _ = reply.send(result);
                if conn.is_autocommit() {
                    // A failed read made SQLite roll the transaction back: the session is over.
                    return;
                }
            }
            Ok(SessionJob::Commit(reply)) => {
                // A file deleted or replaced since the shard opened it would take the commit and
                // lose it: refuse, and roll back.
                let result = FileIdentity::check(file.identity, path, &file.label)
                    .and_then(|()| guard::trusted(|| conn.execute_batch("COMMIT")).map_err(sql_error));
                if result.is_err() && !conn.is_autocommit() {
                    let _ = rollback(&conn);
                }
                finish(conn, permit);
                let _ = reply.send(result);
                return;
            }
            Ok(SessionJob::Prepare {
                transaction_id,
                participants,
                holds_decision,
                started_unix_ms,
                reply,
            }) => {
                let result = match recorder.take() {
                    Some(recorder) => FileIdentity::check(file.identity, path, &file.label).and_then(|()| {
                        let (id, participants) = (transaction_id.as_str(), participants.as_slice());
                        recorder.prepare(
                            &conn,
                            &Intent {
                                id,
                                participants,
                                holds_decision,
                                started_unix_ms,
                            },
                        )
                    }),
                    None => Err(Error::AtomicUnsupported {
                        what: "outside an atomic transaction (prepare needs a session begun as atomic)".into(),
                    }),
                };
                if !conn.is_autocommit() {
                    let _ = rollback(&conn);
                }
                finish(conn, permit);
                let _ = reply.send(result);
                return;
            }
            Ok(SessionJob::Rollback(reply)) => {
                let result = if conn.is_autocommit() { Ok(()) } else { rollback(&conn) };
                finish(conn, permit);
                if let Some(reply) = reply {
                    let _ = reply.send(result);
                }
                return;
            }
            Err(flume::RecvTimeoutError::Timeout) => {
                expired.store(true, Ordering::Release);
                let _ = rollback(&conn);
                tracing::info!(database = %path.display(), "transaction idle past its timeout; rolled back");
                return;
            }
            Err(flume::RecvTimeoutError::Disconnected) => {
                let _ = rollback(&conn);
                return;
            }
        }
    }
}
