//! Page-by-page work inside SQLite for data migrations between two files this process serves:
//! copying moving rows from another file into this one across `ATTACH`, and checksumming pages
//! of rows. Rows are stepped and hashed as SQLite column references and copied by
//! `INSERT ... SELECT`; none of them becomes a [`Value`].
//!
//! The caller (the `reshard` module) writes the SQL: the page query in key order, with
//! `:after` (the last key of the previous page, in the later pages' text only) and `:limit`,
//! and the upsert that copies the same page. The engine binds those two and the caller's named
//! values.
//!
//! A copy runs on two threads at once: a reader of the source reads and hashes each page (see
//! [`checksum`](super::checksum)) and hands its cursor to the destination's writer, which copies
//! that page in a transaction of its own while the reader goes on to the next. The source is
//! attached to the writer connection by the engine itself, past the authorizer, for one job
//! only, and detached before the job returns (also when it fails): client SQL never runs while
//! it is attached, and is still refused `ATTACH` of its own.
//!
//! Each page lands in a transaction of its own together with the copy's cursor after it (last
//! key, running checksum, counts), which the writer upserts into the destination's internal
//! table [`COPY_CURSORS_TABLE`] under the copy's [`CopyRecord`]: the record on the destination
//! is always exactly as far as the pages it holds, whatever happens to the process. A migration
//! reads it back on resume ([`Moves::copy_cursor`]) and goes on from there, so no committed
//! page is copied twice, and removes it when it no longer needs it
//! ([`Moves::clear_copy_cursors`]).
//!
//! While a copy job runs, the writer checkpoints its WAL every [`COPY_AUTOCHECKPOINT`] pages
//! rather than every thousand (each checkpoint waits for the disk twice), and once more after
//! the last page; the setting is put back when the job ends.
//!
//! [`Moves`], handed out by [`Database::moves`](crate::engine::Database::moves), runs these jobs on a
//! file (`moves.rs`); this file holds what they copy and read, and the loops that do it.
//!
//! The pages are read twice, by the reader and by the writer's `INSERT ... SELECT`, on two
//! connections. They read the same rows because the migration's fence keeps every writer away
//! from them; were they to differ anyway, the destination would not match the checksum, and
//! verification would fail.

use std::time::{Duration, Instant};

use rusqlite::{Connection, Statement};

use super::checksum::PageDigest;
use crate::data::Value;
use crate::engine::guard;
use crate::engine::sqlite_error::sql_error;
use crate::engine::value::value_from_ref;
use crate::error::{Error, Result};

/// The schema name the source file of a copy is attached under, for the copy's SQL to name.
pub(crate) const COPY_SOURCE_SCHEMA: &str = "shardlite_copy_source";

pub(crate) use crate::sql::COPY_CURSORS_TABLE;

/// Created by the engine when a copy job starts. `after_key` has no declared type, so a key
/// keeps its storage class (an integer key stays an integer, a text key text).
pub(super) const COPY_CURSORS_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS _shardlite_copy_cursors (
    migration_id TEXT NOT NULL,
    item TEXT NOT NULL,
    after_key,
    checksum BLOB NOT NULL,
    rows INTEGER NOT NULL,
    pages INTEGER NOT NULL,
    finished INTEGER NOT NULL,
    PRIMARY KEY (migration_id, item)
)";

const RECORD_CURSOR: &str = "INSERT INTO _shardlite_copy_cursors
         (migration_id, item, after_key, checksum, rows, pages, finished)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
     ON CONFLICT (migration_id, item) DO UPDATE SET after_key = excluded.after_key,
         checksum = excluded.checksum, rows = excluded.rows, pages = excluded.pages,
         finished = excluded.finished";

/// A query read page by page in key order.
#[derive(Debug, Clone)]
pub(crate) struct PagedQuery {
    /// The first page's query, then the later pages' (which also binds `:after`). Both bind
    /// `:limit`.
    pub(crate) select: [String; 2],
    /// The named values the statements use besides `:after` and `:limit` (names without the
    /// sigil).
    pub(crate) params: Vec<(&'static str, Value)>,
    /// The key column's index among the selected columns.
    pub(crate) key_index: usize,
    /// Rows per page.
    pub(crate) page_size: usize,
    /// What is being read, for errors: `table 'orders'`.
    pub(crate) label: String,
}

/// A page-by-page copy from another file into this one.
#[derive(Debug, Clone)]
pub(crate) struct PagedCopy {
    /// The page query, run on the source's own connections.
    pub(crate) query: PagedQuery,
    /// The upsert that copies the first page, then the later pages' (same parameters as the
    /// page queries), reading the source attached as [`COPY_SOURCE_SCHEMA`].
    pub(crate) insert: [String; 2],
    /// Whose cursor each page's transaction records on the destination.
    pub(crate) record: CopyRecord,
}

/// The key of a copy's cursor record on the destination: one per migration and item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CopyRecord {
    /// The migration copying.
    pub(crate) migration_id: String,
    /// The table or collection copied, as the migration names it.
    pub(crate) item: String,
}

/// Where a paged read or copy stands after its last whole page.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PageCursor {
    /// The last key read; `None` before the first page.
    pub(crate) after: Option<Value>,
    /// The running checksum: the link of the last page (zeros before the first).
    pub(crate) checksum: [u8; 32],
    /// Rows read so far.
    pub(crate) rows: u64,
    /// Pages read so far (empty pages do not count).
    pub(crate) pages: u64,
    /// Whether the last page was short, so nothing follows it.
    pub(crate) finished: bool,
}

impl PageCursor {
    /// A cursor before the first page.
    pub(crate) fn start() -> Self {
        Self {
            after: None,
            checksum: [0; 32],
            rows: 0,
            pages: 0,
            finished: false,
        }
    }
}

/// Pages the reader of a copy may read ahead of the writer.
pub(super) const READ_AHEAD: usize = 4;

/// WAL pages between automatic checkpoints while a copy job runs, instead of SQLite's 1000.
/// Each checkpoint syncs the WAL and the database file; a copy that commits a page of rows
/// every few milliseconds would otherwise spend much of its time waiting for the disk. The
/// WAL may grow to this many pages (32 MiB of 4 KiB pages), and the copy checkpoints it once
/// more after its last page.
pub(super) const COPY_AUTOCHECKPOINT: i64 = 8192;

/// Whether this file has the table of copy cursors.
pub(super) fn has_cursor_table(conn: &Connection) -> Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [COPY_CURSORS_TABLE],
        |row| row.get::<_, i64>(0),
    )
    .map(|count| count > 0)
    .map_err(sql_error)
}

/// Reads and hashes pages of `query` on `conn` (in whatever transaction it holds), from
/// `cursor` on, handing `on_page` the cursor after each, until the last page, the first page
/// boundary after `budget`, or `on_page` answering false; returns the cursor to continue from.
pub(in crate::engine) fn read_pages(
    conn: &Connection,
    query: &PagedQuery,
    mut cursor: PageCursor,
    budget: Duration,
    mut on_page: impl FnMut(&PageCursor) -> bool,
) -> Result<PageCursor> {
    let started = Instant::now();
    let mut selects: [Option<Statement<'_>>; 2] = [None, None];
    loop {
        let which = usize::from(cursor.after.is_some());
        let select = prepared(conn, &mut selects, &query.select, which)?;
        guard::statement_started(false);
        let page = read_page(select, query, &cursor, &query.select[which])?;
        let more = advance(&mut cursor, page, query.page_size);
        if !on_page(&cursor) || !more || started.elapsed() >= budget {
            return Ok(cursor);
        }
    }
}

/// One page read: its rows, its last key and the checksum link after it.
struct Page {
    rows: u64,
    last: Value,
    link: [u8; 32],
}

/// Moves `cursor` past `page`; false when nothing follows.
fn advance(cursor: &mut PageCursor, page: Option<Page>, page_size: usize) -> bool {
    match page {
        None => cursor.finished = true,
        Some(page) => {
            cursor.finished = usize::try_from(page.rows).map_or(true, |rows| rows < page_size);
            cursor.rows += page.rows;
            cursor.pages += 1;
            cursor.after = Some(page.last);
            cursor.checksum = page.link;
        }
    }
    !cursor.finished
}

/// Copies each page the reader hands over, one transaction per page: `BEGIN IMMEDIATE`, the
/// page's upsert, the record of the cursor after it, `COMMIT`. A step that fails leaves the
/// transaction open for the caller to roll back, so neither the page nor its record lands.
pub(super) fn write_pages(
    conn: &Connection,
    copy: &PagedCopy,
    cursor: &mut PageCursor,
    pages: &flume::Receiver<PageCursor>,
    on_page: &mut impl FnMut(&PageCursor),
) -> Result<()> {
    let mut inserts: [Option<Statement<'_>>; 2] = [None, None];
    // The engine's own statements, past the authorizer (which refuses transaction control).
    let engine = |sql: &str| guard::trusted(|| conn.prepare(sql)).map_err(|err| guard::explain(sql_error(err), sql));
    let mut begin = engine("BEGIN IMMEDIATE")?;
    let mut commit = engine("COMMIT")?;
    let mut record = engine(RECORD_CURSOR)?;
    let (migration, item) = (copy.record.migration_id.as_str(), copy.record.item.as_str());
    while let Ok(next) = pages.recv() {
        if next.pages > cursor.pages {
            let which = usize::from(cursor.after.is_some());
            let insert = prepared(conn, &mut inserts, &copy.insert, which)?;
            bind(insert, &copy.query, cursor)?;
            guard::trusted(|| begin.raw_execute()).map_err(sql_error)?;
            guard::statement_started(false);
            // The engine's own statement, which writes the internal table of a collection.
            guard::internal_writes(|| insert.raw_execute())
                .map_err(|err| guard::explain(sql_error(err), &copy.insert[which]))?;
            let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            guard::trusted(|| {
                record.execute(rusqlite::params![
                    migration,
                    item,
                    next.after.as_ref().unwrap_or(&Value::Null),
                    &next.checksum[..],
                    count(next.rows),
                    count(next.pages),
                    next.finished,
                ])
            })
            .map_err(sql_error)?;
            guard::trusted(|| commit.raw_execute()).map_err(sql_error)?;
        }
        *cursor = next;
        on_page(cursor);
    }
    Ok(())
}

/// The statement `texts[which]`, prepared on first use.
fn prepared<'c, 's>(
    conn: &'c Connection,
    statements: &'s mut [Option<Statement<'c>>; 2],
    texts: &[String; 2],
    which: usize,
) -> Result<&'s mut Statement<'c>> {
    let slot = &mut statements[which];
    if slot.is_none() {
        let statement = guard::internal_writes(|| conn.prepare(&texts[which]))
            .map_err(|err| guard::explain(sql_error(err), &texts[which]))?;
        *slot = Some(statement);
    }
    slot.as_mut()
        .ok_or_else(|| Error::invalid_argument("sql", "the statement was not prepared"))
}

/// Binds the query's named values, `:after` and `:limit`.
fn bind(statement: &mut Statement<'_>, query: &PagedQuery, cursor: &PageCursor) -> Result<()> {
    statement.clear_bindings();
    let limit = Value::Integer(i64::try_from(query.page_size).unwrap_or(i64::MAX));
    for index in 1..=statement.parameter_count() {
        let Some(name) = statement
            .parameter_name(index)
            .map(|n| n.get(1..).unwrap_or("").to_owned())
        else {
            continue;
        };
        let value = match name.as_str() {
            "after" => cursor.after.as_ref(),
            "limit" => Some(&limit),
            other => query.params.iter().find(|(n, _)| *n == other).map(|(_, v)| v),
        };
        let value = value.ok_or_else(|| {
            Error::invalid_argument("parameters", format!("no value was given for placeholder ':{name}'"))
        })?;
        statement.raw_bind_parameter(index, value).map_err(sql_error)?;
    }
    Ok(())
}

/// Steps one page of `select`, hashing its rows after `cursor`'s link; `None` when it is empty.
fn read_page(select: &mut Statement<'_>, query: &PagedQuery, cursor: &PageCursor, text: &str) -> Result<Option<Page>> {
    bind(select, query, cursor)?;
    let columns = select.column_count();
    let mut digest = PageDigest::new(&cursor.checksum);
    let mut count = 0u64;
    let mut last = Value::Null;
    let mut rows = select.raw_query();
    while let Some(row) = rows.next().map_err(|err| guard::explain(sql_error(err), text))? {
        digest.row_len(columns);
        for index in 0..columns {
            let value = row.get_ref(index).map_err(sql_error)?;
            digest.add_value(value);
            if index == query.key_index {
                last = value_from_ref(value);
            }
        }
        count += 1;
    }
    if count > 0 && last == Value::Null {
        return Err(Error::invalid_argument(
            "manifest",
            format!("{} has a row with a NULL primary key; it cannot be paged", query.label),
        ));
    }
    Ok((count > 0).then(|| Page {
        rows: count,
        last,
        link: digest.finish(),
    }))
}

mod moves;
#[cfg(test)]
mod tests;

pub(crate) use moves::Moves;
