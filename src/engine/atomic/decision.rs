//! Decision records, kept on an atomic transaction's first participant: created `pending` by
//! that participant's prepare, then moved by one compare-and-set to `commit` (the commit point)
//! or `abort`. A pending record older than the abandon age is aborted by whoever looks
//! (presumed abort); a record is forgotten once every participant has finished.
//!
//! The participants prepare concurrently, so another participant's intent may exist before the
//! record does. Recovery that finds such an intent without a record waits until the intent is
//! older than the abandon age, then writes an `abort` record in the record's place (a
//! tombstone, [`abort_unknown`]): the first participant's late prepare then fails on it, and the
//! compare-and-set to `commit` ([`decide_commit`]) refuses a record older than half the abandon
//! age, so a late prepare after the tombstone was forgotten cannot commit either. Ages count
//! from the time the coordinator began the commit, which the record and every intent carry.

use rusqlite::{Connection, OptionalExtension};

use super::participant::has_tables;
use super::{Decision, DecisionState, SCHEMA};
use crate::engine::guard;
use crate::engine::sqlite_error::sql_error;
use crate::engine::unix_ms_now;
use crate::error::{Error, Result};
use crate::sql::ATOMIC_DECISIONS_TABLE;

const COLUMNS: &str = "transaction_id, state, participants, created_unix_ms, decided_unix_ms";

fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Decision> {
    let state: String = row.get(1)?;
    Ok(Decision {
        transaction_id: row.get(0)?,
        state: DecisionState::from_stored(&state).unwrap_or(DecisionState::Pending),
        participants: serde_json::from_str(&row.get::<_, String>(2)?).unwrap_or_default(),
        created_unix_ms: row.get(3)?,
        decided_unix_ms: row.get(4)?,
    })
}

/// Creates the pending record of `id` for a commit begun at `created_unix_ms`, inside the
/// caller's write transaction.
pub(super) fn create(conn: &Connection, id: &str, participants: &[String], created_unix_ms: i64) -> Result<()> {
    guard::trusted(|| guard::internal_writes(|| conn.execute_batch(SCHEMA))).map_err(sql_error)?;
    let participants = serde_json::to_string(participants).unwrap_or_default();
    guard::internal_writes(|| {
        conn.execute(
            &format!(
                "INSERT INTO {ATOMIC_DECISIONS_TABLE} (transaction_id, state, participants, created_unix_ms) \
                 VALUES (?1, 'pending', ?2, ?3)"
            ),
            rusqlite::params![id, participants, created_unix_ms],
        )
    })
    .map_err(|err| match sql_error(err) {
        Error::Sql(failure) if failure.code & 0xff == rusqlite::ffi::SQLITE_CONSTRAINT => Error::AtomicDecided {
            transaction_id: id.into(),
            state: "begun already",
        },
        other => other,
    })?;
    Ok(())
}

/// Moves a pending record to `want` (`Commit` or `Abort`); returns the state the record holds
/// afterwards (another's decision, if it came first), or `None` when there is no record.
pub(super) fn decide(conn: &Connection, id: &str, want: DecisionState) -> Result<Option<DecisionState>> {
    if !has_tables(conn)? {
        return Ok(None);
    }
    guard::internal_writes(|| {
        conn.execute(
            &format!(
                "UPDATE {ATOMIC_DECISIONS_TABLE} SET state = ?2, decided_unix_ms = ?3 \
                 WHERE transaction_id = ?1 AND state = 'pending'"
            ),
            rusqlite::params![id, want.stored(), unix_ms_now()],
        )
    })
    .map_err(sql_error)?;
    Ok(get(conn, id)?.map(|d| d.state))
}

/// Moves a pending record to `commit` when it was created less than `max_age_ms` ago, and to
/// `abort` otherwise (a coordinator that took this long may have lost to a tombstone recovery
/// wrote and forgot); returns the state the record holds afterwards, or `None` without one.
pub(super) fn decide_commit(conn: &Connection, id: &str, max_age_ms: i64) -> Result<Option<DecisionState>> {
    if !has_tables(conn)? {
        return Ok(None);
    }
    let now = unix_ms_now();
    guard::internal_writes(|| {
        conn.execute(
            &format!(
                "UPDATE {ATOMIC_DECISIONS_TABLE} \
                 SET state = CASE WHEN created_unix_ms > ?2 THEN 'commit' ELSE 'abort' END, decided_unix_ms = ?3 \
                 WHERE transaction_id = ?1 AND state = 'pending'"
            ),
            rusqlite::params![id, now.saturating_sub(max_age_ms), now],
        )
    })
    .map_err(sql_error)?;
    Ok(get(conn, id)?.map(|d| d.state))
}

/// Makes sure `id` has a record, writing an `abort` one (a tombstone, dated `created_unix_ms`)
/// when it has none; returns the state the record holds afterwards.
pub(super) fn abort_unknown(
    conn: &Connection,
    id: &str,
    participants: &[String],
    created_unix_ms: i64,
) -> Result<DecisionState> {
    guard::trusted(|| guard::internal_writes(|| conn.execute_batch(SCHEMA))).map_err(sql_error)?;
    let participants = serde_json::to_string(participants).unwrap_or_default();
    guard::internal_writes(|| {
        conn.execute(
            &format!(
                "INSERT OR IGNORE INTO {ATOMIC_DECISIONS_TABLE} \
                 (transaction_id, state, participants, created_unix_ms, decided_unix_ms) \
                 VALUES (?1, 'abort', ?2, ?3, ?4)"
            ),
            rusqlite::params![id, participants, created_unix_ms, unix_ms_now()],
        )
    })
    .map_err(sql_error)?;
    Ok(get(conn, id)?.map_or(DecisionState::Abort, |d| d.state))
}

/// Aborts every pending record created at or before `cutoff_unix_ms`; returns their ids.
pub(super) fn abort_abandoned(conn: &Connection, cutoff_unix_ms: i64) -> Result<Vec<String>> {
    if !has_tables(conn)? {
        return Ok(Vec::new());
    }
    let mut statement = conn
        .prepare(&format!(
            "SELECT transaction_id FROM {ATOMIC_DECISIONS_TABLE} WHERE state = 'pending' AND created_unix_ms <= ?1"
        ))
        .map_err(sql_error)?;
    let ids = statement
        .query_map([cutoff_unix_ms], |r| r.get::<_, String>(0))
        .map_err(sql_error)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql_error)?;
    for id in &ids {
        decide(conn, id, DecisionState::Abort)?;
    }
    Ok(ids)
}

/// The record of `id`.
pub(super) fn get(conn: &Connection, id: &str) -> Result<Option<Decision>> {
    if !has_tables(conn)? {
        return Ok(None);
    }
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM {ATOMIC_DECISIONS_TABLE} WHERE transaction_id = ?1"),
        [id],
        from_row,
    )
    .optional()
    .map_err(sql_error)
}

/// Every record in the file, oldest first.
pub(super) fn list(conn: &Connection) -> Result<Vec<Decision>> {
    if !has_tables(conn)? {
        return Ok(Vec::new());
    }
    let mut statement = conn
        .prepare(&format!(
            "SELECT {COLUMNS} FROM {ATOMIC_DECISIONS_TABLE} ORDER BY created_unix_ms, transaction_id"
        ))
        .map_err(sql_error)?;
    let rows = statement
        .query_map([], from_row)
        .map_err(sql_error)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql_error)?;
    Ok(rows)
}

/// Removes the decided record of `id` (a pending one stays); whether one was removed.
pub(super) fn forget(conn: &Connection, id: &str) -> Result<bool> {
    if !has_tables(conn)? {
        return Ok(false);
    }
    let removed = guard::internal_writes(|| {
        conn.execute(
            &format!("DELETE FROM {ATOMIC_DECISIONS_TABLE} WHERE transaction_id = ?1 AND state <> 'pending'"),
            [id],
        )
    })
    .map_err(sql_error)?;
    Ok(removed > 0)
}

/// Removes the decided records of `ids` (pending ones stay); how many were removed.
pub(super) fn forget_all(conn: &Connection, ids: &[String]) -> Result<usize> {
    let mut removed = 0;
    for id in ids {
        removed += usize::from(forget(conn, id)?);
    }
    Ok(removed)
}
