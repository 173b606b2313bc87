//! Upkeep of the fences in a shard file, run by the engine on the file's writer connection when
//! it opens the file and then from time to time while it serves it:
//! - a moved record (the fence a migration leaves on its source once the new map is active, so
//!   that a writer still on the old map is refused) is removed once it is older than
//!   [`EngineConfig::moved_record_grace`](crate::engine::EngineConfig::moved_record_grace), with its
//!   triggers, and the fence tables are dropped once they hold no fence: a finished migration
//!   leaves nothing behind;
//! - fence triggers written by earlier releases, which raised an expression that SQLite before
//!   3.47 cannot parse (so older readers could not open the file at all), are rewritten in the
//!   form every SQLite from 3.31 parses.
//!
//! The check costs one read of `sqlite_master` when the file has no fence; the work itself runs
//! in one write transaction, and is skipped (tried again later) while another connection holds
//! the write lock, so upkeep never makes a writer wait.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension};

use super::fence::{
    FENCE_TABLES, FENCE_TRIGGERS_QUERY, FENCED_TARGETS_QUERY, FENCES_TABLE, FencedTarget, trigger_statements,
};
use crate::engine::guard;
use crate::engine::sqlite_error::sql_error;
use crate::engine::value::value_from_ref;
use crate::error::Result;
use crate::sql::quote_ident;

/// The longest pause between two upkeep checks of an open file.
const MAX_CHECK_PERIOD: Duration = Duration::from_secs(60);

/// When a serving writer next looks at its file's fences.
#[derive(Debug)]
pub(in crate::engine) struct Upkeep {
    grace: Duration,
    busy_timeout: Duration,
    period: Duration,
    next: Instant,
}

impl Upkeep {
    /// Upkeep with moved records kept for `grace`; `busy_timeout` is the connection's own, put
    /// back after each run.
    pub(in crate::engine) fn new(grace: Duration, busy_timeout: Duration) -> Self {
        let period = (grace / 4).clamp(Duration::from_millis(10), MAX_CHECK_PERIOD);
        Self {
            grace,
            busy_timeout,
            period,
            next: Instant::now() + period,
        }
    }

    /// When the next check is due.
    pub(in crate::engine) fn next(&self) -> Instant {
        self.next
    }

    /// Runs the check when it is due. A failure is logged and tried again at the next check:
    /// upkeep never fails a caller's job.
    pub(in crate::engine) fn run_if_due(&mut self, conn: &Connection, label: &str) {
        let now = Instant::now();
        if now < self.next {
            return;
        }
        self.next = now + self.period;
        if let Err(err) = conn
            .busy_timeout(Duration::ZERO)
            .map_err(sql_error)
            .and_then(|()| tidy(conn, self.grace))
        {
            tracing::debug!(shard = label, error = %err, "fence upkeep will be tried again");
        }
        if let Err(err) = conn.busy_timeout(self.busy_timeout) {
            tracing::warn!(shard = label, error = %err, "could not restore the busy timeout after fence upkeep");
        }
    }
}

/// Removes moved records older than `grace` (and the fence tables once empty), and rewrites
/// fence triggers of an earlier release, in one write transaction; does nothing when there is
/// nothing to do. Runs past the guard: these are the engine's own statements.
pub(crate) fn tidy(conn: &Connection, grace: Duration) -> Result<()> {
    guard::trusted(|| {
        let now = unix_ms_now();
        if !needs_work(conn, now, grace)? {
            return Ok(());
        }
        conn.execute_batch("BEGIN IMMEDIATE").map_err(sql_error)?;
        let outcome = tidy_in(conn, now, grace).and_then(|()| conn.execute_batch("COMMIT").map_err(sql_error));
        if outcome.is_err() && !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        outcome
    })
}

fn needs_work(conn: &Connection, now: i64, grace: Duration) -> Result<bool> {
    let has_fences: bool = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [FENCES_TABLE],
            |_| Ok(()),
        )
        .optional()
        .map_err(sql_error)?
        .is_some();
    if !has_fences {
        return Ok(false);
    }
    if !has_moved_time(conn)? || legacy_triggers(conn)? {
        return Ok(true);
    }
    let (fences, due): (i64, i64) = conn
        .query_row(
            "SELECT count(*), count(CASE WHEN state = 'moved' AND (moved_unix_ms IS NULL OR moved_unix_ms <= ?1)
                                   THEN 1 END)
             FROM _shardlite_route_fences",
            [expiry_cutoff(now, grace)],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .map_err(sql_error)?;
    Ok(fences == 0 || due > 0)
}

fn tidy_in(conn: &Connection, now: i64, grace: Duration) -> Result<()> {
    if !has_moved_time(conn)? {
        conn.execute_batch("ALTER TABLE _shardlite_route_fences ADD COLUMN moved_unix_ms INTEGER")
            .map_err(sql_error)?;
    }
    // A moved record written before records had a time gets one now: its grace starts here.
    conn.execute(
        "UPDATE _shardlite_route_fences SET moved_unix_ms = ?1 WHERE state = 'moved' AND moved_unix_ms IS NULL",
        [now],
    )
    .map_err(sql_error)?;
    let expired = {
        let mut statement = conn
            .prepare("SELECT migration_id FROM _shardlite_route_fences WHERE state = 'moved' AND moved_unix_ms <= ?1")
            .map_err(sql_error)?;
        let ids = statement
            .query_map([expiry_cutoff(now, grace)], |row| row.get::<_, String>(0))
            .map_err(sql_error)?;
        ids.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_error)?
    };
    for id in &expired {
        for table in FENCE_TABLES {
            conn.execute(&format!("DELETE FROM {table} WHERE migration_id = ?1"), [id])
                .map_err(sql_error)?;
        }
    }
    rebuild_triggers(conn)?;
    let remaining: i64 = conn
        .query_row("SELECT count(*) FROM _shardlite_route_fences", [], |row| row.get(0))
        .map_err(sql_error)?;
    if remaining == 0 {
        for table in FENCE_TABLES {
            conn.execute_batch(&format!("DROP TABLE IF EXISTS {table}"))
                .map_err(sql_error)?;
        }
    }
    Ok(())
}

/// Drops every fence trigger and creates the ones the remaining fences need.
fn rebuild_triggers(conn: &Connection) -> Result<()> {
    let names = {
        let mut statement = conn.prepare(FENCE_TRIGGERS_QUERY).map_err(sql_error)?;
        let names = statement
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(sql_error)?;
        names.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_error)?
    };
    for name in names {
        conn.execute_batch(&format!("DROP TRIGGER IF EXISTS {}", quote_ident(&name)))
            .map_err(sql_error)?;
    }
    let targets = {
        let mut statement = conn.prepare(FENCED_TARGETS_QUERY).map_err(sql_error)?;
        let columns = statement.column_count();
        let rows = statement
            .query_map([], |row| {
                (0..columns)
                    .map(|i| row.get_ref(i).map(value_from_ref))
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(sql_error)?;
        let rows = rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_error)?;
        rows.iter()
            .filter_map(|row| FencedTarget::from_row(row))
            .collect::<Vec<_>>()
    };
    for statement in trigger_statements(&targets) {
        conn.execute_batch(&statement).map_err(sql_error)?;
    }
    Ok(())
}

fn has_moved_time(conn: &Connection) -> Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM pragma_table_info('_shardlite_route_fences') WHERE name = 'moved_unix_ms'",
        [],
        |row| row.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(sql_error)
}

/// Whether a fence trigger of an earlier release is in the file: those built their message with
/// `char(31)`, which today's never do (their message is a literal).
fn legacy_triggers(conn: &Connection) -> Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name GLOB '_shardlite_fence_*'
         AND sql LIKE '%char(31)%'",
        [],
        |row| row.get::<_, i64>(0),
    )
    .map(|n| n > 0)
    .map_err(sql_error)
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn unix_ms_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn expiry_cutoff(now: i64, grace: Duration) -> i64 {
    now.saturating_sub(i64::try_from(grace.as_millis()).unwrap_or(i64::MAX))
}
