//! The last step of a query across shards: the shards' partial rows loaded into a private
//! in-memory SQLite database, and one query run over them, so the merged answer has SQLite's own
//! semantics for types, NULLs, collations and arithmetic. What is loaded and run (the partial
//! columns, their collations, the merge statement) is planned by [`query`](crate::query); the
//! engine only executes it.
//!
//! The database lives for one call. It attaches nothing, loads nothing, and its query runs under
//! the same row, byte and time limits as any statement a shard runs.

use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use super::sqlite_error::{sql_error, sql_error_by};
use super::value::value_from_ref;
use crate::data::{Params, SqlResult, Value};
use crate::error::{Error, Result};
use crate::query::{PARTIAL_TABLE, PartialColumn};
use crate::sql::quote_ident;

/// The limits one merge runs under: those of a shard's statement.
#[derive(Debug, Clone, Copy)]
pub struct MergeLimits {
    /// Rows the merged result may hold.
    pub max_rows: usize,
    /// Bytes of values the merged result may hold.
    pub max_bytes: usize,
    /// When the merge query is interrupted; `None` never.
    pub deadline: Option<Instant>,
    /// The time limit the deadline came from, for the error.
    pub timeout: Option<Duration>,
}

/// Loads `rows` (each as long as `columns`) into [`PARTIAL_TABLE`] of a new in-memory database
/// and runs `sql` over it with `params` bound. With no columns, no table is made (the query
/// reads none). Blocking: call it from a thread that may block.
pub fn merge_partial_rows(
    columns: &[PartialColumn],
    rows: impl IntoIterator<Item = Vec<Value>>,
    sql: &str,
    params: &Params,
    limits: MergeLimits,
) -> Result<SqlResult> {
    let started = Instant::now();
    let conn = Connection::open_with_flags(
        ":memory:",
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql_error)?;
    if let Some(deadline) = limits.deadline {
        conn.progress_handler(1000, Some(move || Instant::now() >= deadline))
            .map_err(sql_error)?;
    }
    let timed = |err: rusqlite::Error| sql_error_by(err, limits.deadline, limits.timeout);
    if !columns.is_empty() {
        load(&conn, columns, rows).map_err(timed)?;
    }
    let mut stmt = conn.prepare(sql).map_err(timed)?;
    bind(&mut stmt, params)?;
    let mut out = SqlResult {
        is_query: true,
        column_names: stmt.column_names().into_iter().map(str::to_owned).collect(),
        ..SqlResult::default()
    };
    let width = stmt.column_count();
    let mut bytes = 0usize;
    let mut found = stmt.raw_query();
    while let Some(row) = found.next().map_err(timed)? {
        if out.rows.len() >= limits.max_rows {
            return Err(Error::ResultTooLarge {
                limit: u64::try_from(limits.max_rows).unwrap_or(u64::MAX),
                unit: "rows",
            });
        }
        let mut values = Vec::with_capacity(width);
        for index in 0..width {
            let value = value_from_ref(row.get_ref(index).map_err(sql_error)?);
            bytes = bytes.saturating_add(match &value {
                Value::Text(text) => text.len(),
                Value::Blob(blob) => blob.len(),
                _ => 8,
            });
            values.push(value);
        }
        if bytes > limits.max_bytes {
            return Err(Error::ResultTooLarge {
                limit: u64::try_from(limits.max_bytes).unwrap_or(u64::MAX),
                unit: "bytes",
            });
        }
        out.rows.push(values);
    }
    out.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(out)
}

fn load(
    conn: &Connection,
    columns: &[PartialColumn],
    rows: impl IntoIterator<Item = Vec<Value>>,
) -> rusqlite::Result<()> {
    let declared: Vec<String> = columns
        .iter()
        .map(|c| format!("{} COLLATE {}", quote_ident(&c.name), c.collation.name()))
        .collect();
    conn.execute_batch(&format!("CREATE TABLE {PARTIAL_TABLE} ({})", declared.join(", ")))?;
    let slots = vec!["?"; columns.len()].join(", ");
    let mut insert = conn.prepare(&format!("INSERT INTO {PARTIAL_TABLE} VALUES ({slots})"))?;
    conn.execute_batch("BEGIN")?;
    for row in rows {
        insert.execute(rusqlite::params_from_iter(row.iter()))?;
    }
    conn.execute_batch("COMMIT")
}

fn bind(stmt: &mut rusqlite::Statement<'_>, params: &Params) -> Result<()> {
    for index in 1..=stmt.parameter_count() {
        let value = match (params, stmt.parameter_name(index)) {
            (Params::Positional(values), _) => values.get(index - 1),
            (Params::Named(values), Some(name)) => values.get(&name[1..]),
            (Params::Named(_), None) => None,
        };
        if let Some(value) = value {
            stmt.raw_bind_parameter(index, value).map_err(sql_error)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::Collation;

    fn limits() -> MergeLimits {
        MergeLimits {
            max_rows: 10,
            max_bytes: 1 << 20,
            deadline: None,
            timeout: None,
        }
    }

    #[test]
    fn declared_collation_orders_the_merge() {
        let columns = [PartialColumn {
            name: "c0".into(),
            collation: Collation::NoCase,
        }];
        let rows = ["b", "A", "a", "B"].map(|t| vec![Value::from(t)]);
        let sql = format!("SELECT count(DISTINCT c0) FROM {PARTIAL_TABLE}");
        let result = merge_partial_rows(&columns, rows, &sql, &Params::none(), limits()).expect("merge");
        assert_eq!(result.rows, vec![vec![Value::Integer(2)]]);
    }

    #[test]
    fn results_past_the_row_cap_are_refused() {
        let columns = [PartialColumn {
            name: "c0".into(),
            collation: Collation::Binary,
        }];
        let rows = (0..20).map(|i| vec![Value::Integer(i)]);
        let sql = format!("SELECT c0 FROM {PARTIAL_TABLE}");
        let err = merge_partial_rows(&columns, rows, &sql, &Params::none(), limits()).expect_err("capped");
        assert_eq!(err.kind(), crate::ErrorKind::ResultTooLarge);
    }
}
