//! Row locks of prepared atomic transactions: one row per locked row in the locks table, and
//! beside each table a prepared transaction wrote, three `AFTER` triggers (insert, update,
//! delete) that refuse any other write to a locked row with [`Error::RowLocked`](crate::Error::RowLocked).
//!
//! The triggers live in the file, so every process that writes it honours them, plain `sqlite3`
//! included. Like the fence triggers they raise a string literal (a message expression needs
//! SQLite 3.47) and use only what SQLite 3.31 parses. They are `AFTER` triggers so that an
//! insert is checked with the rowid SQLite gave the row. A table keeps its triggers once it has
//! them: a write to it costs one probe of the (usually empty) locks table's primary key, and no
//! schema change (which would make every connection re-prepare) happens per transaction.

use rusqlite::{Connection, OptionalExtension};

use crate::engine::guard;
use crate::engine::sqlite_error::{FENCE_FIELD_SEPARATOR, ROW_LOCKED_MESSAGE_PREFIX, sql_error};
use crate::error::Result;
use crate::sql::{ATOMIC_LOCKS_TABLE, LOCK_TRIGGER_PREFIX, quote_ident, sql_literal};

/// The three lock triggers of `table`: `(name, statement)`.
pub(super) fn trigger_statements(table: &str) -> [(String, String); 3] {
    let message = sql_literal(&format!("{ROW_LOCKED_MESSAGE_PREFIX}{FENCE_FIELD_SEPARATOR}{table}"));
    let table_literal = sql_literal(table);
    [
        ("insert", "INSERT", "row_id = NEW.rowid"),
        ("update", "UPDATE", "row_id IN (OLD.rowid, NEW.rowid)"),
        ("delete", "DELETE", "row_id = OLD.rowid"),
    ]
    .map(|(suffix, event, rows)| {
        let name = format!("{LOCK_TRIGGER_PREFIX}{table}_{suffix}");
        let statement = format!(
            "CREATE TRIGGER {} AFTER {event} ON {} BEGIN SELECT RAISE(ABORT, {message}) FROM {ATOMIC_LOCKS_TABLE} \
             WHERE table_name = {table_literal} AND {rows}; END",
            quote_ident(&name),
            quote_ident(table),
        );
        (name, statement)
    })
}

/// Creates the lock triggers of `table` that are missing, inside the caller's transaction.
pub(super) fn ensure_triggers(conn: &Connection, table: &str) -> Result<()> {
    for (name, statement) in trigger_statements(table) {
        let exists = conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?1",
                [&name],
                |_| Ok(()),
            )
            .optional()
            .map_err(sql_error)?
            .is_some();
        if !exists {
            guard::trusted(|| conn.execute_batch(&statement)).map_err(sql_error)?;
        }
    }
    Ok(())
}
