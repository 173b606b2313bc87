//! A participant's half of an atomic transaction: recording which rows the transaction's
//! session writes, preparing (one local commit that stores the rows' new values and locks them,
//! leaving the table itself as it was), and finishing (one local commit that applies or drops
//! them and releases the locks).
//!
//! The changes are kept as row images by rowid, read inside the session just before it rolls its
//! own writes back: what SQLite's session extension would put in a changeset, in ordinary tables
//! (the extension needs bindings generated at build time, which the bundled build lacks). SQLite
//! reports each row a statement writes (its update hook), including rows written by triggers and
//! foreign-key actions; a table without a rowid is not reported, so a session that wrote one (the
//! change count tells) cannot prepare.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension, params_from_iter};

use super::{AtomicIntent, Finished, SCHEMA};
use super::{decision, locks};
use crate::data::Value;
use crate::engine::guard;
use crate::engine::sqlite_error::sql_error;
use crate::error::{Error, Result};
use crate::sql::{
    ATOMIC_INTENTS_TABLE, ATOMIC_LOCKS_TABLE, ATOMIC_ROWS_TABLE, ATOMIC_VALUES_TABLE, INTERNAL_PREFIX, quote_ident,
};

/// The savepoint an atomic session's statements run in, rolled back at prepare.
const WORK_SAVEPOINT: &str = "_shardlite_atomic_work";

#[derive(Default)]
struct Touched {
    rows: Vec<(String, i64)>,
    seen: HashSet<(String, i64)>,
    reported: u64,
}

/// What a participant prepares: the transaction, its participants (the first holds the
/// decision), whether that is this file, and when its commit began (the coordinator's clock),
/// the time the intent and the decision record carry.
pub(crate) struct Intent<'a> {
    /// The atomic transaction's id.
    pub(crate) id: &'a str,
    /// Its participant shards.
    pub(crate) participants: &'a [String],
    /// Whether this file is the first participant, which holds the decision record.
    pub(crate) holds_decision: bool,
    /// When the coordinator began the commit (Unix milliseconds).
    pub(crate) started_unix_ms: i64,
}

/// The rows an atomic session wrote, as SQLite reports them.
pub(crate) struct Recorder {
    touched: Arc<Mutex<Touched>>,
    unsupported: bool,
}

/// The change counts before a statement, to tell afterwards whether SQLite reported every row.
pub(crate) struct Mark {
    total: u64,
    reported: u64,
}

impl Recorder {
    /// Starts recording on `conn`, whose transaction has begun.
    pub(crate) fn install(conn: &Connection) -> Result<Self> {
        guard::trusted(|| conn.execute_batch(&format!("SAVEPOINT {WORK_SAVEPOINT}"))).map_err(sql_error)?;
        let touched = Arc::new(Mutex::new(Touched::default()));
        let hook = Arc::clone(&touched);
        conn.update_hook(Some(move |_, _: &str, table: &str, rowid: i64| {
            let mut touched = hook.lock().unwrap_or_else(PoisonError::into_inner);
            touched.reported += 1;
            let key = (table.to_owned(), rowid);
            if touched.seen.insert(key.clone()) {
                touched.rows.push(key);
            }
        }))
        .map_err(sql_error)?;
        Ok(Self {
            touched,
            unsupported: false,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Touched> {
        self.touched.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The counts before a statement runs.
    pub(crate) fn mark(&self, conn: &Connection) -> Mark {
        Mark {
            total: conn.total_changes(),
            reported: self.lock().reported,
        }
    }

    /// After a statement: whether it changed rows SQLite did not report (a table without a
    /// rowid, a `DELETE` without `WHERE` that emptied a table at once). Such a session cannot
    /// prepare.
    pub(crate) fn check(&mut self, conn: &Connection, mark: &Mark) -> Result<()> {
        let changed = conn.total_changes().saturating_sub(mark.total);
        let reported = self.lock().reported.saturating_sub(mark.reported);
        if changed > reported {
            self.unsupported = true;
            return Err(unsupported());
        }
        Ok(())
    }

    /// Prepares `intent` on `conn` in one local commit: stores the new values of every row the
    /// session wrote and locks those rows, with the session's own writes rolled back. Returns how
    /// many rows it locked. The connection's transaction has ended either way.
    pub(crate) fn prepare(self, conn: &Connection, intent: &Intent<'_>) -> Result<usize> {
        let outcome = self.prepare_in(conn, intent).and_then(|rows| {
            guard::trusted(|| conn.execute_batch("COMMIT"))
                .map_err(sql_error)
                .map(|()| rows)
        });
        if outcome.is_err() && !conn.is_autocommit() {
            let _ = guard::trusted(|| conn.execute_batch("ROLLBACK"));
        }
        outcome
    }

    fn prepare_in(self, conn: &Connection, intent: &Intent<'_>) -> Result<usize> {
        conn.update_hook(None::<fn(rusqlite::hooks::Action, &str, &str, i64)>)
            .map_err(sql_error)?;
        if self.unsupported {
            return Err(unsupported());
        }
        let touched = std::mem::take(&mut self.lock().rows);
        let mut images = Vec::with_capacity(touched.len());
        let mut columns: Vec<(String, Vec<String>)> = Vec::new();
        for (table, rowid) in touched {
            if table.starts_with(INTERNAL_PREFIX) {
                continue; // Change capture rows: writing the values again captures them again.
            }
            let names = match columns.iter().find(|(t, _)| *t == table) {
                Some((_, names)) => names.clone(),
                None => {
                    let names = table_columns(conn, &table)?;
                    columns.push((table.clone(), names.clone()));
                    names
                }
            };
            let image = row_image(conn, &table, rowid, &names)?;
            images.push((table, rowid, names, image));
        }
        guard::trusted(|| {
            conn.execute_batch(&format!(
                "ROLLBACK TO SAVEPOINT {WORK_SAVEPOINT}; RELEASE SAVEPOINT {WORK_SAVEPOINT}"
            ))
        })
        .map_err(sql_error)?;
        guard::trusted(|| guard::internal_writes(|| write_intent(conn, intent, &columns, &images)))?;
        if intent.holds_decision {
            guard::trusted(|| decision::create(conn, intent.id, intent.participants, intent.started_unix_ms))?;
        }
        Ok(images.len())
    }
}

fn unsupported() -> Error {
    Error::AtomicUnsupported {
        what: "a table without a rowid (WITHOUT ROWID), or all of a table's rows by a DELETE without WHERE".into(),
    }
}

type Image = (String, i64, Vec<String>, Option<Vec<Value>>);

fn write_intent(
    conn: &Connection,
    intent: &Intent<'_>,
    columns: &[(String, Vec<String>)],
    images: &[Image],
) -> Result<()> {
    let id = intent.id;
    conn.execute_batch(SCHEMA).map_err(sql_error)?;
    for (table, _) in columns {
        locks::ensure_triggers(conn, table)?;
    }
    let participants_json = serde_json::to_string(intent.participants).unwrap_or_default();
    conn.execute(
        &format!(
            "INSERT INTO {ATOMIC_INTENTS_TABLE} (transaction_id, participants, prepared_unix_ms) VALUES (?1, ?2, ?3)"
        ),
        rusqlite::params![id, participants_json, intent.started_unix_ms],
    )
    .map_err(sql_error)?;
    let mut insert_row = conn
        .prepare(&format!(
            "INSERT INTO {ATOMIC_ROWS_TABLE} (transaction_id, seq, table_name, row_id, deleted) VALUES (?1, ?2, ?3, ?4, ?5)"
        ))
        .map_err(sql_error)?;
    let mut insert_value = conn
        .prepare(&format!(
            "INSERT INTO {ATOMIC_VALUES_TABLE} (transaction_id, seq, column_name, value) VALUES (?1, ?2, ?3, ?4)"
        ))
        .map_err(sql_error)?;
    let mut insert_lock = conn
        .prepare(&format!(
            "INSERT INTO {ATOMIC_LOCKS_TABLE} (table_name, row_id, transaction_id) VALUES (?1, ?2, ?3)"
        ))
        .map_err(sql_error)?;
    for (seq, (table, rowid, names, image)) in images.iter().enumerate() {
        let seq = i64::try_from(seq).unwrap_or(i64::MAX);
        insert_row
            .execute(rusqlite::params![id, seq, table, rowid, image.is_none()])
            .map_err(sql_error)?;
        for (name, value) in names.iter().zip(image.iter().flatten()) {
            insert_value
                .execute(rusqlite::params![id, seq, name, value])
                .map_err(sql_error)?;
        }
        insert_lock
            .execute(rusqlite::params![table, rowid, id])
            .map_err(|err| {
                match sql_error(err) {
                    // Another prepared transaction holds the row (its lock came before the triggers).
                    Error::Sql(failure) if failure.code & 0xff == rusqlite::ffi::SQLITE_CONSTRAINT => {
                        Error::RowLocked {
                            table: table.as_str().into(),
                        }
                    }
                    other => other,
                }
            })?;
    }
    Ok(())
}

/// The columns of `table` a row image holds (generated columns are left out).
fn table_columns(conn: &Connection, table: &str) -> Result<Vec<String>> {
    let mut statement = conn
        .prepare(&format!("PRAGMA table_info({})", quote_ident(table)))
        .map_err(sql_error)?;
    let names = statement
        .query_map([], |row| row.get::<_, String>(1))
        .map_err(sql_error)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql_error)?;
    Ok(names)
}

fn column_list(names: &[String]) -> String {
    names.iter().map(|n| quote_ident(n)).collect::<Vec<_>>().join(", ")
}

fn row_image(conn: &Connection, table: &str, rowid: i64, names: &[String]) -> Result<Option<Vec<Value>>> {
    let sql = format!(
        "SELECT {} FROM {} WHERE rowid = ?1",
        column_list(names),
        quote_ident(table)
    );
    conn.query_row(&sql, [rowid], |row| {
        (0..names.len())
            .map(|i| row.get::<_, Value>(i))
            .collect::<rusqlite::Result<Vec<_>>>()
    })
    .optional()
    .map_err(sql_error)
}

/// Whether the file has the atomic tables at all.
pub(super) fn has_tables(conn: &Connection) -> Result<bool> {
    conn.query_row(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [ATOMIC_INTENTS_TABLE],
        |_| Ok(()),
    )
    .optional()
    .map(|found| found.is_some())
    .map_err(sql_error)
}

/// Applies (`commit`) or drops the prepared transaction `id` and releases its locks, inside the
/// caller's write transaction.
pub(super) fn finish(conn: &Connection, id: &str, commit: bool) -> Result<Finished> {
    if !has_tables(conn)? {
        return Ok(Finished::NotPrepared);
    }
    let prepared = conn
        .query_row(
            &format!("SELECT 1 FROM {ATOMIC_INTENTS_TABLE} WHERE transaction_id = ?1"),
            [id],
            |_| Ok(()),
        )
        .optional()
        .map_err(sql_error)?
        .is_some();
    if !prepared {
        return Ok(Finished::NotPrepared);
    }
    guard::internal_writes(|| -> Result<()> {
        conn.execute(
            &format!("DELETE FROM {ATOMIC_LOCKS_TABLE} WHERE transaction_id = ?1"),
            [id],
        )
        .map_err(sql_error)?;
        if commit {
            guard::trusted(|| conn.execute_batch("PRAGMA defer_foreign_keys = ON")).map_err(sql_error)?;
            apply(conn, id)?;
        }
        for table in [ATOMIC_VALUES_TABLE, ATOMIC_ROWS_TABLE, ATOMIC_INTENTS_TABLE] {
            conn.execute(&format!("DELETE FROM {table} WHERE transaction_id = ?1"), [id])
                .map_err(sql_error)?;
        }
        Ok(())
    })?;
    Ok(if commit { Finished::Applied } else { Finished::Dropped })
}

fn apply(conn: &Connection, id: &str) -> Result<()> {
    let mut rows = conn
        .prepare(&format!(
            "SELECT seq, table_name, row_id, deleted FROM {ATOMIC_ROWS_TABLE} WHERE transaction_id = ?1 ORDER BY seq"
        ))
        .map_err(sql_error)?;
    let rows = rows
        .query_map([id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, bool>(3)?,
            ))
        })
        .map_err(sql_error)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql_error)?;
    let mut values = conn
        .prepare(&format!(
            "SELECT column_name, value FROM {ATOMIC_VALUES_TABLE} WHERE transaction_id = ?1 AND seq = ?2"
        ))
        .map_err(sql_error)?;
    for (seq, table, rowid, deleted) in rows {
        let quoted = quote_ident(&table);
        if deleted {
            conn.execute(&format!("DELETE FROM {quoted} WHERE rowid = ?1"), [rowid])
                .map_err(sql_error)?;
            continue;
        }
        let (names, mut bound): (Vec<String>, Vec<Value>) = values
            .query_map(rusqlite::params![id, seq], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Value>(1)?))
            })
            .map_err(sql_error)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql_error)?
            .into_iter()
            .unzip();
        bound.push(Value::Integer(rowid));
        let sets = names
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{} = ?{}", quote_ident(n), i + 1))
            .collect::<Vec<_>>()
            .join(", ");
        let updated = if names.is_empty() {
            0
        } else {
            conn.execute(
                &format!("UPDATE {quoted} SET {sets} WHERE rowid = ?{}", names.len() + 1),
                params_from_iter(bound.iter()),
            )
            .map_err(sql_error)?
        };
        if updated == 0 {
            let mut list = column_list(&names);
            list.push_str(if names.is_empty() { "rowid" } else { ", rowid" });
            let marks = (1..=bound.len())
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(", ");
            let insert = |verb: &str| {
                conn.execute(
                    &format!("{verb} INTO {quoted} ({list}) VALUES ({marks})"),
                    params_from_iter(bound.iter()),
                )
                .map_err(sql_error)
            };
            // A row the transaction wrote with REPLACE over another row's unique key replaces it
            // again.
            match insert("INSERT") {
                Err(err) if err.kind() == crate::ErrorKind::Constraint => insert("INSERT OR REPLACE")?,
                other => other?,
            };
        }
    }
    Ok(())
}

/// The prepared transactions in the file, oldest first.
pub(super) fn intents(conn: &Connection) -> Result<Vec<AtomicIntent>> {
    if !has_tables(conn)? {
        return Ok(Vec::new());
    }
    let mut statement = conn
        .prepare(&format!(
            "SELECT i.transaction_id, i.participants, i.prepared_unix_ms, \
             (SELECT count(*) FROM {ATOMIC_ROWS_TABLE} r WHERE r.transaction_id = i.transaction_id) \
             FROM {ATOMIC_INTENTS_TABLE} i ORDER BY i.prepared_unix_ms, i.transaction_id"
        ))
        .map_err(sql_error)?;
    let rows = statement
        .query_map([], |r| {
            Ok(AtomicIntent {
                transaction_id: r.get(0)?,
                participants: serde_json::from_str(&r.get::<_, String>(1)?).unwrap_or_default(),
                prepared_unix_ms: r.get(2)?,
                rows: usize::try_from(r.get::<_, i64>(3)?).unwrap_or(0),
            })
        })
        .map_err(sql_error)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql_error)?;
    Ok(rows)
}
