//! What a data database holds besides plain SQL, one part each, handed out by the
//! [`Database`]'s accessors: row operations by primary key ([`Tables`], `tables.rs`), JSON
//! collections ([`Collections`], `collections.rs`), saved queries ([`SavedQueries`],
//! `saved_queries.rs`) and procedures ([`Procedures`], `procedures.rs`); and the reserved
//! internal tables behind them, with the counts of [`Database::info`].
//!
//! Internal tables are named `_shardlite_*` and never appear in table lists or counts. Client SQL
//! may read them but not write them (see [`guard`](super::guard)): the writes here run under
//! [`internal_writes`](super::guard::internal_writes).
//! Identifiers are always quoted; values are always bound.

mod collections;
mod procedures;
mod saved_queries;
mod tables;

pub use collections::Collections;
pub use procedures::Procedures;
pub use saved_queries::SavedQueries;
pub use tables::Tables;

use rusqlite::Connection;

use super::database::Database;
use super::sqlite_error::sql_error;
use crate::data::DatabaseInfo;
use crate::error::{Error, Result};
use crate::sql::internal_table;

/// The largest page size browse operations accept.
pub(crate) const MAX_PAGE_SIZE: u32 = 1000;

pub(super) fn require_name(what: &'static str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(Error::invalid_argument(what, "must not be blank"));
    }
    Ok(())
}

pub(super) fn page_bounds(page: u32, page_size: u32) -> Result<(u32, u32, i64)> {
    if page == 0 {
        return Err(Error::invalid_argument("page", "pages start at 1"));
    }
    if page_size == 0 || page_size > MAX_PAGE_SIZE {
        return Err(Error::invalid_argument(
            "pageSize",
            format!("must be between 1 and {MAX_PAGE_SIZE} (got {page_size})"),
        ));
    }
    let offset = (i64::from(page) - 1) * i64::from(page_size);
    Ok((page, page_size, offset))
}

pub(super) fn total_pages(total: u64, page_size: u32) -> u64 {
    total.div_ceil(u64::from(page_size)).max(1)
}

pub(super) fn count(conn: &Connection, sql: &str, args: impl rusqlite::Params) -> Result<u64> {
    let n: i64 = conn.query_row(sql, args, |r| r.get(0)).map_err(sql_error)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Runs a query returning one text column, on a reader of `db`.
async fn read_names(db: &Database, sql: &'static str) -> Result<Vec<String>> {
    db.read(move |conn| {
        let mut stmt = conn.prepare_cached(sql).map_err(sql_error)?;
        stmt.query_map([], |r| r.get(0))
            .map_err(sql_error)?
            .collect::<rusqlite::Result<Vec<String>>>()
            .map_err(sql_error)
    })
    .await
}

/// Runs `f` on `db`'s writer, where its statements may write the internal tables (see
/// [`internal_writes`](super::guard::internal_writes)).
async fn write_internal<T: Send + 'static>(
    db: &Database,
    f: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
) -> Result<T> {
    db.write(move |conn| super::guard::internal_writes(|| f(conn))).await
}

/// Runs a `DELETE` of an internal table with text parameters on `db`'s writer; returns whether
/// it removed anything.
async fn delete_where(db: &Database, sql: &'static str, params: Vec<String>) -> Result<bool> {
    write_internal(db, move |conn| {
        let n = conn
            .prepare_cached(sql)
            .map_err(sql_error)?
            .execute(rusqlite::params_from_iter(params.iter()))
            .map_err(sql_error)?;
        Ok(n > 0)
    })
    .await
}

/// Counts for `db` (see [`Database::info`]).
pub(super) async fn info(db: &Database) -> Result<DatabaseInfo> {
    let data_source = db.path().display().to_string();
    db.read(move |conn| {
        let objects = |kind: &str| {
            count(
                conn,
                "SELECT count(*) FROM sqlite_master WHERE type = ?1 \
                 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_shardlite\\_%' ESCAPE '\\' \
                 AND tbl_name NOT LIKE '\\_shardlite\\_%' ESCAPE '\\'",
                [kind],
            )
        };
        Ok(DatabaseInfo {
            data_source,
            table_count: objects("table")?,
            index_count: objects("index")?,
            view_count: objects("view")?,
            trigger_count: objects("trigger")?,
            collection_count: count(
                conn,
                concat!("SELECT count(DISTINCT collection) FROM ", internal_table!(collections)),
                [],
            )?,
            saved_query_count: count(
                conn,
                concat!("SELECT count(*) FROM ", internal_table!(saved_queries)),
                [],
            )?,
            procedure_count: count(conn, concat!("SELECT count(*) FROM ", internal_table!(procedures)), [])?,
        })
    })
    .await
}
