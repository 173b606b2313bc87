//! What SQL may do on the engine's connections, and how long it may run.
//!
//! Every connection the engine opens gets SQLite's authorizer and progress handler. Both run on
//! the thread that owns the connection, so their state lives in that thread: the job being run
//! ([`arm`]), whether the engine itself is issuing a statement ([`trusted`]), and why the last
//! statement was refused or stopped.
//!
//! The authorizer refuses, as SQLite compiles each statement (whatever its spelling):
//! - `ATTACH` of a file (literal, bound, computed or URI) and `DETACH`, so SQL reaches only its
//!   own shard; `VACUUM INTO` attaches its target, so it is refused too (plain `VACUUM` works);
//! - transaction control outside the transaction API: `BEGIN`, `COMMIT`, `END`, `ROLLBACK` on
//!   every connection, and `SAVEPOINT`/`RELEASE` on the shared ones (a transaction session
//!   may use savepoints inside its own transaction);
//! - pragmas that change durability, safety or connection state (see
//!   [`pragma_allowed`](crate::sql::pragma_allowed));
//! - `load_extension()`;
//! - on the shared connections, creating, dropping or altering TEMP tables, views, triggers and
//!   indexes, however the statement names the temp schema (`TEMP`, `TEMPORARY`, `temp.x`,
//!   `"temp".x`, `CREATE TEMP TABLE ... AS SELECT`): such an object would live on a connection
//!   every caller shares, in no file, and change what later callers' statements do (a TEMP
//!   table shadows the real one, a TEMP trigger fires on every caller's writes). A transaction
//!   session's connection and a dedicated connection are their caller's own, so TEMP objects
//!   stay allowed there and die with the connection.
//!
//! - writing shardlite's internal tables (`_shardlite_*`: collections, saved queries, procedures,
//!   a data migration's fences, pins, targets and copy cursors), and creating, dropping or
//!   altering them or any index, trigger or view that is internal or on an internal table. The
//!   engine's own statements write them under [`internal_writes`] (or [`trusted`]); a data
//!   migration writes them through the data interface inside a *maintenance* transaction
//!   ([`ConnectionKind::Maintenance`]), an operator capability asked for explicitly when the transaction
//!   begins. Either way only a top-level statement may write them, never a trigger or view a
//!   client defined, except shardlite's own change-capture triggers (see
//!   [`capture`](super::reshard::capture)), which insert into the change table. Reading them is allowed: they hold what the collection, saved-query,
//!   procedure and migration APIs show anyway.
//!
//! As a second line behind that refusal, a statement on a shared connection that names the temp
//! schema at all marks the thread, and the end of its job ([`temp_left`]) then checks that the
//! connection's temp schema is empty, drops anything found and fails the job. A job that never
//! names the temp schema pays for nothing but a flag read.
//!
//! The progress handler interrupts a statement that runs past its time limit, or whose caller
//! has gone away.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rusqlite::Connection;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};

use super::config::Limits;
use super::sqlite_error::sql_error;
use crate::error::{Error, Result};
use crate::sql::{
    Allowances, CAPTURE_TRIGGER_PREFIX, CHANGES_TABLE, INTERNAL_PREFIX, INTERNAL_REFUSAL, StatementKind, TEMP_REFUSAL,
    classify, pragma_allowed, refuse_kind, shown,
};

/// SQLite VM instructions between two progress checks: small enough to stop a runaway query
/// within a millisecond or so, large enough that a point query never pays for a check.
const PROGRESS_PERIOD: i32 = 1000;

/// Which connection a guard protects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnectionKind {
    /// The writer and the readers, which every caller shares.
    Shared,
    /// A transaction session's own connection (or a dedicated one): savepoints and TEMP objects
    /// are its caller's business.
    Session,
    /// A maintenance transaction's own connection: a session whose top-level statements may
    /// also write the internal tables and change their schema and triggers (data migrations).
    Maintenance,
}

/// Why the authorizer refused a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    TransactionControl,
    OtherFile,
    Pragma,
    Extension,
    TempObject,
    Internal,
}

/// Why the progress handler stopped a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    TimedOut,
    Cancelled,
    /// A job run on its caller's thread used up the time it was given there (see [`run_inline`]).
    OverBudget,
}

#[derive(Default)]
struct ThreadGuard {
    /// What the connection this thread owns accepts (set when its guard is installed).
    allowances: Cell<Option<Allowances>>,
    trusted: Cell<bool>,
    /// The engine is writing its internal tables (see [`internal_writes`]).
    internal: Cell<bool>,
    vacuum: Cell<bool>,
    /// A statement on a shared connection named the temp schema since the last [`temp_left`].
    temp_named: Cell<bool>,
    refusal: Cell<Option<Refusal>>,
    stop: Cell<Option<Stop>>,
    deadline: Cell<Option<Instant>>,
    /// When a job run inline must give its caller's thread back (see [`run_inline`]).
    budget: Cell<Option<Instant>>,
    limits: RefCell<Option<Limits>>,
    cancel: RefCell<Option<Arc<AtomicBool>>>,
}

thread_local! {
    static GUARD: ThreadGuard = ThreadGuard::default();
}

/// What a connection of `scope` accepts.
pub(crate) fn allowances(scope: ConnectionKind, allow_attach: bool) -> Allowances {
    let own = scope != ConnectionKind::Shared;
    Allowances {
        savepoints: own,
        attach: allow_attach,
        temp: own,
        internal: scope == ConnectionKind::Maintenance,
    }
}

/// Installs the authorizer and progress handler on `conn`, for a connection this thread will
/// own: the guard's state lives in the thread that runs the statements.
pub(crate) fn install(conn: &Connection, scope: ConnectionKind, allow_attach: bool) -> Result<()> {
    GUARD.with(|guard| guard.allowances.set(Some(allowances(scope, allow_attach))));
    install_hooks(conn, scope, allow_attach)
}

/// Installs the authorizer and progress handler on `conn`, for a connection that any thread may
/// borrow: each use runs under [`run_inline`], which gives the borrowing thread the connection's
/// allowances for that use only.
pub(crate) fn install_hooks(conn: &Connection, scope: ConnectionKind, allow_attach: bool) -> Result<()> {
    conn.authorizer(Some(move |context: AuthContext<'_>| {
        authorize(&context, scope, allow_attach)
    }))
    .map_err(sql_error)?;
    conn.progress_handler(PROGRESS_PERIOD, Some(should_interrupt))
        .map_err(sql_error)?;
    Ok(())
}

fn authorize(context: &AuthContext<'_>, scope: ConnectionKind, allow_attach: bool) -> Authorization {
    GUARD.with(|guard| {
        if guard.trusted.get() {
            return Authorization::Allow;
        }
        // A plain VACUUM runs its own BEGIN, ATTACH of an unnamed temporary database, and DETACH.
        let vacuum = guard.vacuum.get();
        let names_temp = context
            .database_name
            .is_some_and(|name| name.eq_ignore_ascii_case(TEMP_SCHEMA));
        if names_temp && scope == ConnectionKind::Shared {
            guard.temp_named.set(true);
        }
        let refusal = match context.action {
            action if scope == ConnectionKind::Shared && changes_temp_schema(action, names_temp) => {
                guard.temp_named.set(true);
                Some(Refusal::TempObject)
            }
            AuthAction::Transaction { .. } if !vacuum => Some(Refusal::TransactionControl),
            // Only a top-level statement writes the internal tables, never a trigger or view a
            // client defined.
            // A plain VACUUM copies every table, internal ones included, through statements of
            // its own.
            // The one exception: shardlite's own capture triggers (which no client can create)
            // record changes in the change table.
            action
                if !vacuum
                    && touches_internal(action)
                    && !((scope == ConnectionKind::Maintenance || guard.internal.get())
                        && context.accessor.is_none())
                    && !captures_change(action, context.accessor) =>
            {
                Some(Refusal::Internal)
            }
            AuthAction::Savepoint { .. } if scope == ConnectionKind::Shared => Some(Refusal::TransactionControl),
            // Nothing else may attach: a bound or computed filename reaches the authorizer as an
            // empty one, so an empty filename is refused too outside a plain VACUUM.
            AuthAction::Attach { filename } if !(allow_attach || filename.is_empty() && vacuum) => {
                Some(Refusal::OtherFile)
            }
            AuthAction::Detach { .. } if !allow_attach && !vacuum => Some(Refusal::OtherFile),
            // An ATTACH whose filename is not a literal reaches the authorizer with no filename
            // at all, which rusqlite reports as an unknown action.
            AuthAction::Unknown { code, .. }
                if (code == rusqlite::ffi::SQLITE_ATTACH || code == rusqlite::ffi::SQLITE_DETACH)
                    && !allow_attach
                    && !vacuum =>
            {
                Some(Refusal::OtherFile)
            }
            AuthAction::Unknown { code, .. } if code == rusqlite::ffi::SQLITE_TRANSACTION && !vacuum => {
                Some(Refusal::TransactionControl)
            }
            AuthAction::Pragma {
                pragma_name,
                pragma_value,
            } if !pragma_allowed(pragma_name, pragma_value.is_some()) => Some(Refusal::Pragma),
            AuthAction::Function { function_name } if function_name.eq_ignore_ascii_case("load_extension") => {
                Some(Refusal::Extension)
            }
            _ => None,
        };
        match refusal {
            Some(refusal) => {
                guard.refusal.set(Some(refusal));
                Authorization::Deny
            }
            None => Authorization::Allow,
        }
    })
}

/// The name SQLite gives the connection's temporary schema.
const TEMP_SCHEMA: &str = "temp";

/// Whether `action` creates, drops or alters a TEMP object; `names_temp` is whether it names
/// the temp schema (`CREATE TABLE temp.x`, `ALTER TABLE temp.x`).
fn changes_temp_schema(action: AuthAction<'_>, names_temp: bool) -> bool {
    match action {
        AuthAction::CreateTempIndex { .. }
        | AuthAction::CreateTempTable { .. }
        | AuthAction::CreateTempTrigger { .. }
        | AuthAction::CreateTempView { .. }
        | AuthAction::DropTempIndex { .. }
        | AuthAction::DropTempTable { .. }
        | AuthAction::DropTempTrigger { .. }
        | AuthAction::DropTempView { .. } => true,
        AuthAction::CreateIndex { .. }
        | AuthAction::CreateTable { .. }
        | AuthAction::CreateTrigger { .. }
        | AuthAction::CreateView { .. }
        | AuthAction::CreateVtable { .. }
        | AuthAction::DropIndex { .. }
        | AuthAction::DropTable { .. }
        | AuthAction::DropTrigger { .. }
        | AuthAction::DropView { .. }
        | AuthAction::DropVtable { .. }
        | AuthAction::AlterTable { .. } => names_temp,
        _ => false,
    }
}

/// Whether `name` is reserved for shardlite's internal tables and triggers.
fn is_internal(name: &str) -> bool {
    name.as_bytes()
        .get(..INTERNAL_PREFIX.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(INTERNAL_PREFIX.as_bytes()))
}

/// Whether `action` is one of shardlite's capture triggers (internal, so no client created it)
/// recording a change in the change table.
fn captures_change(action: AuthAction<'_>, accessor: Option<&str>) -> bool {
    matches!(action, AuthAction::Insert { table_name } if table_name.eq_ignore_ascii_case(CHANGES_TABLE))
        && accessor.is_some_and(|trigger| {
            trigger
                .get(..CAPTURE_TRIGGER_PREFIX.len())
                .is_some_and(|start| start.eq_ignore_ascii_case(CAPTURE_TRIGGER_PREFIX))
        })
}

/// Whether `action` writes an internal table, or creates, drops or alters an internal table or
/// any index, trigger or view that is internal or on an internal table.
fn touches_internal(action: AuthAction<'_>) -> bool {
    match action {
        AuthAction::Insert { table_name }
        | AuthAction::Update { table_name, .. }
        | AuthAction::Delete { table_name }
        | AuthAction::CreateTable { table_name }
        | AuthAction::CreateTempTable { table_name }
        | AuthAction::DropTable { table_name }
        | AuthAction::DropTempTable { table_name }
        | AuthAction::AlterTable { table_name, .. }
        | AuthAction::CreateVtable { table_name, .. }
        | AuthAction::DropVtable { table_name, .. } => is_internal(table_name),
        AuthAction::CreateIndex { index_name, table_name }
        | AuthAction::CreateTempIndex { index_name, table_name }
        | AuthAction::DropIndex { index_name, table_name }
        | AuthAction::DropTempIndex { index_name, table_name } => is_internal(index_name) || is_internal(table_name),
        AuthAction::CreateTrigger {
            trigger_name,
            table_name,
        }
        | AuthAction::CreateTempTrigger {
            trigger_name,
            table_name,
        }
        | AuthAction::DropTrigger {
            trigger_name,
            table_name,
        }
        | AuthAction::DropTempTrigger {
            trigger_name,
            table_name,
        } => is_internal(trigger_name) || is_internal(table_name),
        AuthAction::CreateView { view_name }
        | AuthAction::CreateTempView { view_name }
        | AuthAction::DropView { view_name }
        | AuthAction::DropTempView { view_name } => is_internal(view_name),
        _ => false,
    }
}

/// Runs the engine's own writes of its internal tables (collections, saved queries,
/// procedures, a migration's copy into a collection): top-level statements of `f` may write
/// them, and every other rule of the guard still holds.
pub(crate) fn internal_writes<T>(f: impl FnOnce() -> T) -> T {
    let before = GUARD.with(|guard| guard.internal.replace(true));
    let value = f();
    GUARD.with(|guard| guard.internal.set(before));
    value
}

/// Ends a job on a shared connection: when one of its statements named the temp schema, checks
/// that no TEMP object is left on `conn`; one that is (which the authorizer should have made
/// impossible) is dropped, and the job fails. Costs a flag read when the job never named the
/// temp schema.
pub(crate) fn temp_left(conn: &Connection) -> Result<()> {
    if !GUARD.with(|guard| guard.temp_named.take()) {
        return Ok(());
    }
    trusted(|| {
        let mut stmt = conn
            .prepare(
                "SELECT type, name FROM temp.sqlite_master WHERE type IN ('trigger', 'view', 'table') \
                 ORDER BY CASE type WHEN 'trigger' THEN 0 WHEN 'view' THEN 1 ELSE 2 END",
            )
            .map_err(sql_error)?;
        let objects = stmt
            .query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))
            .map_err(sql_error)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql_error)?;
        if objects.is_empty() {
            return Ok(());
        }
        for (kind, name) in &objects {
            let kind = match kind.as_str() {
                "trigger" => "TRIGGER",
                "view" => "VIEW",
                _ => "TABLE",
            };
            let name = name.replace('"', "\"\"");
            conn.execute_batch(&format!("DROP {kind} IF EXISTS temp.\"{name}\""))
                .map_err(sql_error)?;
        }
        Err(Error::ForbiddenStatement {
            statement: "(the statements left TEMP objects on a shared connection; they were dropped)".to_owned(),
            reason: TEMP_REFUSAL,
        })
    })
}

fn should_interrupt() -> bool {
    GUARD.with(|guard| {
        if guard.stop.get().is_some() {
            return true;
        }
        let stop = if guard
            .cancel
            .borrow()
            .as_ref()
            .is_some_and(|cancel| cancel.load(Ordering::Relaxed))
        {
            Some(Stop::Cancelled)
        } else if let Some(now) = (guard.deadline.get().is_some() || guard.budget.get().is_some()).then(Instant::now) {
            if guard.budget.get().is_some_and(|budget| now >= budget) {
                Some(Stop::OverBudget)
            } else if guard.deadline.get().is_some_and(|deadline| now >= deadline) {
                Some(Stop::TimedOut)
            } else {
                None
            }
        } else {
            None
        };
        guard.stop.set(stop);
        stop.is_some()
    })
}

/// Refuses, before anything of a script runs, a statement the authorizer would refuse when its
/// turn came: so a script whose third statement is `COMMIT` does not commit its first two.
/// Does nothing on a thread without a guard, and for the engine's own statements.
pub(crate) fn precheck(statement: &str) -> Result<()> {
    precheck_kind(statement, classify(statement))
}

/// [`precheck`] for a statement already classified as `kind`.
pub(crate) fn precheck_kind(statement: &str, kind: StatementKind<'_>) -> Result<()> {
    let allowances = GUARD.with(|guard| guard.allowances.get().filter(|_| !guard.trusted.get()));
    match allowances {
        Some(allowances) => refuse_kind(statement, kind, allowances),
        None => Ok(()),
    }
}

/// Runs `f` with this thread's job limits and cancellation flag, then clears them.
pub(crate) fn arm<T>(limits: &Limits, cancel: Option<Arc<AtomicBool>>, f: impl FnOnce() -> T) -> T {
    GUARD.with(|guard| {
        *guard.limits.borrow_mut() = Some(limits.clone());
        *guard.cancel.borrow_mut() = cancel;
        guard.stop.set(None);
        guard.deadline.set(None);
    });
    let value = f();
    GUARD.with(|guard| {
        *guard.limits.borrow_mut() = None;
        *guard.cancel.borrow_mut() = None;
        guard.deadline.set(None);
        guard.stop.set(None);
    });
    value
}

/// [`arm`] for a job of a connection this thread does not own (a worker thread running a
/// file's queued job): the connection's `allowances` hold for the job, and the thread's own
/// (normally none) come back afterwards.
pub(crate) fn arm_for<T>(
    limits: &Limits,
    allowances: Allowances,
    cancel: Option<Arc<AtomicBool>>,
    f: impl FnOnce() -> T,
) -> T {
    let saved = GUARD.with(|guard| guard.allowances.replace(Some(allowances)));
    let value = arm(limits, cancel, f);
    GUARD.with(|guard| guard.allowances.set(saved));
    value
}

/// How a job run with [`run_inline`] ended.
pub(crate) enum Inline<T> {
    /// It ran to its end (successfully or not).
    Done(T),
    /// It used up its budget and was stopped; it must run again elsewhere. Only jobs that change
    /// nothing (read-only queries) may be run with a budget.
    OverBudget,
}

/// Runs `f` on the calling thread with a borrowed connection's `allowances`, the job `limits`,
/// and optionally a `budget` (the time by which it must give the thread back): past it the
/// statement is interrupted and [`Inline::OverBudget`] returned, so the caller can hand the job
/// to a thread of its own. Restores the thread's own guard state afterwards, so a thread that
/// owns a connection may also borrow one.
pub(crate) fn run_inline<T>(
    limits: &Limits,
    allowances: Allowances,
    budget: Option<Instant>,
    f: impl FnOnce() -> T,
) -> Inline<T> {
    // What the thread had before is put back afterwards, so a call made from inside another
    // (a row closure that queries again) leaves the outer call's limits and deadline in force.
    let saved = GUARD.with(|guard| {
        guard.stop.set(None);
        (
            guard.limits.replace(Some(limits.clone())),
            guard.deadline.take(),
            guard.budget.replace(budget),
            guard.allowances.replace(Some(allowances)),
        )
    });
    let value = f();
    let over = GUARD.with(|guard| {
        let (limits, deadline, budget, allowances) = saved;
        *guard.limits.borrow_mut() = limits;
        guard.deadline.set(deadline);
        guard.budget.set(budget);
        guard.allowances.set(allowances);
        guard.stop.take() == Some(Stop::OverBudget)
    });
    if over { Inline::OverBudget } else { Inline::Done(value) }
}

/// Called by the writer's connection as a transaction commits (its commit hook): from then on
/// no budget stops the statement. SQLite checks for an interrupt once more after a statement's
/// commit, and a write stopped there would be reported stopped though it committed, and so be
/// run again elsewhere (see [`run_inline`]).
pub(crate) fn committing() {
    GUARD.with(|guard| guard.budget.set(None));
}

/// Starts the clock of one statement (called before each statement of a script).
pub(crate) fn statement_started(is_vacuum: bool) {
    statement_started_at(is_vacuum, Instant::now());
}

/// [`statement_started`] with the time it started, when the caller has just read the clock.
pub(crate) fn statement_started_at(is_vacuum: bool, now: Instant) {
    GUARD.with(|guard| {
        let timeout = guard.limits.borrow().as_ref().and_then(|l| l.statement_timeout);
        guard.deadline.set(timeout.and_then(|t| now.checked_add(t)));
        guard.refusal.set(None);
        guard.vacuum.set(is_vacuum);
    });
}

/// The row and byte limits of the current job (none outside a job).
pub(crate) fn result_limits() -> (usize, usize) {
    GUARD.with(|guard| {
        guard
            .limits
            .borrow()
            .as_ref()
            .map_or((usize::MAX, usize::MAX), |l| (l.max_rows, l.max_bytes))
    })
}

/// Whether the current job's caller has gone away.
pub(crate) fn cancelled() -> bool {
    GUARD.with(|guard| {
        guard
            .cancel
            .borrow()
            .as_ref()
            .is_some_and(|cancel| cancel.load(Ordering::Relaxed))
    })
}

/// Runs the engine's own statements (transaction control, setup) past the authorizer.
pub(crate) fn trusted<T>(f: impl FnOnce() -> T) -> T {
    let before = GUARD.with(|guard| guard.trusted.replace(true));
    let value = f();
    GUARD.with(|guard| guard.trusted.set(before));
    value
}

/// Turns an error from preparing or stepping `statement` into the guard's own error, when the
/// authorizer refused it or the progress handler stopped it.
pub(crate) fn explain(err: Error, statement: &str) -> Error {
    let code = err.sqlite_code().map(|code| code & 0xff);
    GUARD.with(|guard| match code {
        Some(rusqlite::ffi::SQLITE_AUTH) => match guard.refusal.take() {
            Some(Refusal::TransactionControl) => Error::TransactionControl {
                statement: shown(statement),
            },
            Some(Refusal::OtherFile) => Error::ForbiddenStatement {
                statement: shown(statement),
                reason: "SQL may reach only its own shard: ATTACH, DETACH and VACUUM INTO are refused",
            },
            Some(Refusal::Pragma) => Error::ForbiddenStatement {
                statement: shown(statement),
                reason: "this pragma changes durability, safety or connection state that other callers share",
            },
            Some(Refusal::Extension) => Error::ForbiddenStatement {
                statement: shown(statement),
                reason: "loading extensions is not allowed",
            },
            Some(Refusal::TempObject) => Error::ForbiddenStatement {
                statement: shown(statement),
                reason: TEMP_REFUSAL,
            },
            Some(Refusal::Internal) => Error::ForbiddenStatement {
                statement: shown(statement),
                reason: INTERNAL_REFUSAL,
            },
            None => err,
        },
        Some(rusqlite::ffi::SQLITE_INTERRUPT) => match guard.stop.get() {
            Some(Stop::Cancelled) => Error::Cancelled,
            // The caller runs the job again elsewhere and never sees this error.
            Some(Stop::OverBudget) => Error::Cancelled,
            Some(Stop::TimedOut) => Error::StatementTimeout {
                limit_ms: guard
                    .limits
                    .borrow()
                    .as_ref()
                    .and_then(|l| l.statement_timeout)
                    .map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
            },
            None => err,
        },
        _ => err,
    })
}
