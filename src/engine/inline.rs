//! Running SQL on the caller's own thread: short reads and short single-statement writes of
//! async callers, and every call of blocking callers.
//!
//! A thread hop to a reader thread and back costs more than a point query itself. So a read-only
//! query of an async caller first runs on the caller's task, on a borrowed read-only connection,
//! under [`EngineConfig::inline_read_budget`](super::EngineConfig::inline_read_budget): past the
//! budget SQLite interrupts it, and it starts over on a reader thread, where only the statement
//! time limit applies. Nothing is lost by starting over, because a read-only query changes
//! nothing. A borrowed connection never waits for a lock either: where it would, the query
//! moves to a reader thread too. While such reads overlap, a [hold](super::hold) keeps the
//! file's shared locks taken, so that the workers running them do not meet on SQLite's lock
//! bookkeeping.
//!
//! A single statement that writes runs on the caller's task too, on the writer's connection,
//! when that connection is free at that instant and no other connection holds the write lock
//! (see [`write_inline`]); otherwise it is queued on the writer's thread.
//!
//! Blocking callers (the [`blocking`](crate::client::blocking) client) run reads on a borrowed
//! connection of their own pool, and writes on the writer's connection, which they lock for the
//! call; the writer thread takes the same lock, so writes stay serialised.
//!
//! Every borrowed connection has the same guard as the engine's threads: the same authorizer,
//! statement time limit and result limits.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::checkpoint;
use super::config::EngineConfig;
use super::database::Database;
use super::guard::{self, ConnectionKind, Inline};
use super::open::open_borrowed_reader;
use super::script::{self, ScriptMode};
use super::sqlite_error::{is_busy_or_locked, read_only_file};
use crate::data::{Params, RowRef, SqlResult};
use crate::error::{Error, Result};
use crate::sql::{self, StatementKind};

/// Stripes of a pool: each thread takes from and gives back to its own stripe, so threads that
/// run queries at once do not contend for one lock (or bounce one cache line between cores).
const STRIPES: usize = 8;

/// Idle connections kept per stripe; a caller that finds none opens one, and a connection given
/// back to a full stripe is closed.
const MAX_IDLE_PER_STRIPE: usize = 2;

/// An idle connection of a pool, boxed so that taking it and giving it back moves a pointer,
/// not the connection (a call does both).
struct Idle(Box<Connection>);

/// A pool of read-only connections that callers borrow for one call on their own thread.
pub(super) struct Borrowed {
    stripes: [Mutex<Vec<Idle>>; STRIPES],
    busy_timeout: Duration,
}

thread_local! {
    /// This thread's stripe, given out round-robin on first use.
    static STRIPE: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES
    };
}

impl Borrowed {
    pub(super) fn new(busy_timeout: Duration) -> Self {
        Self {
            stripes: std::array::from_fn(|_| Mutex::new(Vec::new())),
            busy_timeout,
        }
    }

    fn stripe(&self) -> &Mutex<Vec<Idle>> {
        &self.stripes[STRIPE.with(|stripe| *stripe)]
    }

    fn take(&self, path: &Path, config: &EngineConfig) -> Result<Box<Connection>> {
        let idle = self.stripe().lock().unwrap_or_else(PoisonError::into_inner).pop();
        match idle {
            Some(Idle(conn)) => Ok(conn),
            None => open_borrowed_reader(path, config, self.busy_timeout).map(Box::new),
        }
    }

    fn give_back(&self, conn: Box<Connection>) {
        let mut idle = self.stripe().lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE_PER_STRIPE {
            idle.push(Idle(conn));
        }
    }
}

/// Runs `f` on a borrowed read-only connection of `pool`, on this thread.
fn borrow_reader<T>(
    db: &Database,
    pool: &Borrowed,
    budget: Option<Instant>,
    f: impl FnOnce(&Connection) -> T,
) -> Result<Inline<T>> {
    let shared = &db.shared;
    let conn = pool.take(&shared.path, &shared.config)?;
    let outcome = guard::run_inline(
        &shared.config.limits(),
        guard::allowances(ConnectionKind::Shared, shared.config.allow_attach),
        budget,
        || f(&conn),
    );
    // A connection that had a TEMP object left on it is closed rather than given back.
    guard::temp_left(&conn)?;
    pool.give_back(conn);
    Ok(outcome)
}

/// Runs a read-only query on the caller's task when it finishes within the inline budget.
///
/// `None` means it did not run to a result here (no budget configured, over budget, a lock
/// to wait for, or no connection to borrow) and should run on a reader thread. A statement
/// that is not read-only comes back as [`Error::ReadOnlyViolation`], as on a reader.
pub(super) fn read_inline(db: &Database, sql: &str, params: &Params) -> Option<Result<SqlResult>> {
    // One clock read serves the hold, the budget and the statement's time limit.
    let started = Instant::now();
    within_budget(db, started, |conn| {
        script::execute_from(started, conn, sql, params, ScriptMode::ReadOnly)
    })
}

/// [`execute`](Database::execute) as far as the caller's task takes it: a query that runs to
/// its result within the inline budget, or a statement that writes and runs to its end on the
/// writer's connection here ([`write_inline`]), is [`Here::Done`]; a query that turns out to
/// write and could not run here is [`Here::Writes`]; anything else (a script or a statement
/// that could not run on the writer's connection here, or any reason [`read_inline`] gives) is
/// [`Here::Elsewhere`]. The caller then awaits
/// [`execute_elsewhere`](Database::execute_elsewhere), which starts it over.
pub(super) fn execute_inline(db: &Database, sql: &str, params: &Params) -> Here<SqlResult> {
    let query = script::starts_like_query(sql);
    if query {
        match Here::from(read_inline(db, sql, params)) {
            Here::Writes => {}
            other => return other,
        }
    }
    match write_inline(db, sql, params) {
        Some(done) => Here::Done(done),
        None if query => Here::Writes,
        None => Here::Elsewhere,
    }
}

/// Runs one query on the caller's task, lending each row to `each` in place, when it
/// finishes within the inline budget: the fast path of the async client's `query_row` and
/// `query_map`, for a call that read the clock at `started`. What became of it is as for
/// [`execute_inline`]. `each` may have seen some rows by then: the
/// caller forgets what it made of them, since the query starts over.
pub(super) fn query_inline(
    db: &Database,
    started: Instant,
    sql: &str,
    params: &Params,
    each: &mut dyn FnMut(&RowRef<'_>) -> Result<ControlFlow<()>>,
) -> Here<()> {
    let kind = sql::classify(sql);
    if kind != StatementKind::Query {
        return Here::Elsewhere;
    }
    Here::from(within_budget(db, started, |conn| {
        script::query_with(conn, sql, kind, params, ScriptMode::ReadOnly, started, each)
    }))
}

/// Runs `read` on a borrowed read-only connection on the caller's task, under the inline
/// budget counted from `started` and inside the file's [hold](super::hold).
fn within_budget<T>(db: &Database, started: Instant, read: impl FnOnce(&Connection) -> Result<T>) -> Option<Result<T>> {
    let shared = &db.shared;
    let budget = shared.config.inline_read_budget?;
    // A closed file opens on a worker, not on the caller's task.
    let open = shared.opened_if_open()?;
    let _reading = open.inline_hold.enter(started, || {
        open_borrowed_reader(&shared.path, &shared.config, Duration::ZERO).ok()
    });
    match borrow_reader(db, &open.inline_readers, started.checked_add(budget), read) {
        Ok(Inline::Done(Err(err))) if is_busy_or_locked(&err) => None,
        Ok(Inline::Done(result)) => Some(result.map_err(|err| db.storage_failure(err))),
        Ok(Inline::OverBudget) | Err(_) => None,
    }
}

/// Runs `f` on the writer's connection, on this thread, under the same rules as a job of the
/// writer thread: a transaction left open is rolled back and the call fails.
fn write_here<T>(db: &Database, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    let shared = &db.shared;
    let open = shared.opened().map_err(|err| db.storage_failure(err))?;
    open.check_file(shared)?;
    let conn = open.writer_conn.lock().unwrap_or_else(PoisonError::into_inner);
    match on_writer(db, &conn, None, f) {
        Inline::Done(result) => result.map_err(|err| db.storage_failure(err)),
        // Only a budget stops a job with `OverBudget`, and writes run without one.
        Inline::OverBudget => Err(Error::Cancelled),
    }
}

/// Runs `f` on the writer's connection `conn` (locked by the caller) under the writer's rules
/// and, when given, a `budget`.
fn on_writer<T>(
    db: &Database,
    conn: &Connection,
    budget: Option<Instant>,
    f: impl FnOnce(&Connection) -> Result<T>,
) -> Inline<Result<T>> {
    let shared = &db.shared;
    guard::run_inline(
        &shared.config.limits(),
        guard::allowances(ConnectionKind::Shared, shared.config.allow_attach),
        budget,
        || {
            let mut result = f(conn).map_err(|err| read_only_file(conn, &shared.label, err));
            if !conn.is_autocommit() {
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
            result
        },
    )
}

/// Runs one statement that writes, for an async caller, on the caller's task, when that costs
/// no wait: the file is open, the writer's connection is free this instant, no other
/// connection holds the write lock, and the statement finishes within the inline budget
/// ([`EngineConfig::inline_read_budget`]). A thread hop to the writer and back costs more than
/// a single-row write itself.
///
/// `None` means it ran nothing that lasts and should run on the writer's thread: a script
/// (several statements), a writer in use, a lock to wait for (the busy timeout is zero here,
/// the writer's thread waits as configured) or a statement stopped by the budget. A single
/// statement in autocommit mode that SQLite stops (busy, or interrupted before it commits) is
/// rolled back whole, so starting it over on the writer's thread writes it once; once it
/// commits, the budget no longer applies (the writer's commit hook,
/// [`guard::committing`]). The file-identity check, the
/// guard, the statement time limit and the checks after the job are those of the writer's
/// thread.
pub(super) fn write_inline(db: &Database, sql: &str, params: &Params) -> Option<Result<SqlResult>> {
    let shared = &db.shared;
    let budget = shared.config.inline_read_budget?;
    if !sql::is_single_statement(sql) {
        return None;
    }
    let started = Instant::now();
    let open = shared.opened_if_open()?;
    let conn = open.writer_conn.try_lock().ok()?;
    if !conn.is_autocommit() {
        return None;
    }
    if let Err(err) = open.check_file(shared) {
        return Some(Err(err));
    }
    conn.busy_timeout(Duration::ZERO).ok()?;
    let (outcome, checkpoint_due) = checkpoint::deferred(|| {
        on_writer(db, &conn, started.checked_add(budget), |conn| {
            script::execute_from(started, conn, sql, params, ScriptMode::ReadWrite)
        })
    });
    if conn.busy_timeout(shared.config.busy_timeout).is_err() {
        tracing::warn!(shard = %shared.label, "could not restore the writer's busy timeout");
    }
    drop(conn);
    if checkpoint_due {
        open.queue_checkpoint();
    }
    match outcome {
        Inline::Done(Err(err)) if is_busy_or_locked(&err) => None,
        Inline::Done(result) => Some(result.map_err(|err| db.storage_failure(err))),
        Inline::OverBudget => None,
    }
}

/// [`execute`](Database::execute) on the calling thread, for callers that do not run on an
/// async runtime: queries run on a borrowed read-only connection, anything that writes on
/// the writer's connection (locked for the call, so writes stay serialised with the writer
/// thread's). Blocks for as long as the statement runs, within the statement time limit.
pub(super) fn execute_blocking(db: &Database, sql: &str, params: &Params) -> Result<SqlResult> {
    if script::starts_like_query(sql) {
        match read_blocking(db, |conn| script::execute(conn, sql, params, ScriptMode::ReadOnly)) {
            Err(Error::ReadOnlyViolation { .. }) => {}
            other => return other,
        }
    }
    write_here(db, |conn| script::execute(conn, sql, params, ScriptMode::ReadWrite))
}

/// [`query_blocking`](Database::query_blocking) for a call that read the clock at `started`:
/// the statement's time limit counts from then.
pub(super) fn query_blocking_from(
    db: &Database,
    started: Instant,
    sql: &str,
    params: &Params,
    each: &mut dyn FnMut(&RowRef<'_>) -> Result<ControlFlow<()>>,
) -> Result<()> {
    let kind = sql::classify(sql);
    if kind == StatementKind::Query {
        match read_blocking(db, |conn| {
            script::query_with(conn, sql, kind, params, ScriptMode::ReadOnly, started, &mut *each)
        }) {
            Err(Error::ReadOnlyViolation { .. }) => {}
            other => return other,
        }
    }
    script::require_single_statement(sql)?;
    let result = write_here(db, |conn| script::execute(conn, sql, params, ScriptMode::ReadWrite))?;
    result.lend_rows(each)
}

/// Runs `f` on a borrowed read-only connection on the calling thread.
pub(super) fn read_blocking<T>(db: &Database, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    let open = db.shared.opened().map_err(|err| db.storage_failure(err))?;
    match borrow_reader(db, &open.blocking_readers, None, f).map_err(|err| db.storage_failure(err))? {
        Inline::Done(result) => result.map_err(|err| db.storage_failure(err)),
        Inline::OverBudget => Err(Error::Cancelled),
    }
}

/// What became of a statement the caller's task tried to run.
pub(crate) enum Here<T> {
    /// It ran to its end here (successfully or not).
    Done(Result<T>),
    /// It turned out to write: the writer runs it.
    Writes,
    /// It did not run to its end here, or was not tried: a reader thread runs it, or the
    /// writer when it does not start like a query.
    Elsewhere,
}

impl<T> From<Option<Result<T>>> for Here<T> {
    fn from(outcome: Option<Result<T>>) -> Self {
        match outcome {
            Some(Err(Error::ReadOnlyViolation { .. })) => Self::Writes,
            Some(done) => Self::Done(done),
            None => Self::Elsewhere,
        }
    }
}
