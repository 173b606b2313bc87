//! Page-by-page work inside SQLite for data migrations between two files this process serves:
//! copying moving rows from another file into this one across `ATTACH`, and checksumming pages
//! of rows. Rows are stepped and hashed as SQLite column references and copied by
//! `INSERT ... SELECT`; none of them becomes a [`Value`].
//!
//! The caller (the `migrate` module) writes the SQL: the page query in key order, with
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
//! While a copy job runs, the writer checkpoints its WAL every [`COPY_AUTOCHECKPOINT`] pages
//! rather than every thousand (each checkpoint waits for the disk twice), and once more after
//! the last page; the setting is put back when the job ends.
//!
//! The pages are read twice, by the reader and by the writer's `INSERT ... SELECT`, on two
//! connections. They read the same rows because the migration's fence keeps every writer away
//! from them; were they to differ anyway, the destination would not match the checksum, and
//! verification would fail.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{Connection, Statement};

use super::checksum::PageDigest;
use super::database::Database;
use super::guard;
use super::sql::sql_error;
use super::value::value_from_ref;
use crate::data::Value;
use crate::error::{Error, Result};

/// The schema name the source file of a copy is attached under, for the copy's SQL to name.
pub(crate) const COPY_SOURCE_SCHEMA: &str = "shardlite_copy_source";

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
const READ_AHEAD: usize = 4;

/// WAL pages between automatic checkpoints while a copy job runs, instead of SQLite's 1000.
/// Each checkpoint syncs the WAL and the database file; a copy that commits a page of rows
/// every few milliseconds would otherwise spend much of its time waiting for the disk. The
/// WAL may grow to this many pages (32 MiB of 4 KiB pages), and the copy checkpoints it once
/// more after its last page.
const COPY_AUTOCHECKPOINT: i64 = 8192;

impl Database {
    /// Copies pages of `copy` from `source` into this file, from `cursor` on: a reader of
    /// `source` reads and hashes each page, and this file's writer upserts it in a transaction
    /// of its own, then calls `on_page` with the cursor after it. Stops after the last page,
    /// or at the first page boundary after `budget`, so other writers of this file are not
    /// kept waiting for a whole table; returns the cursor to continue from.
    pub(crate) async fn copy_pages(
        &self,
        source: &Database,
        copy: Arc<PagedCopy>,
        cursor: PageCursor,
        budget: Duration,
        mut on_page: impl FnMut(&PageCursor) + Send + 'static,
    ) -> Result<PageCursor> {
        let path = source
            .path()
            .to_str()
            .ok_or_else(|| Error::invalid_argument("data source", "the path is not valid UTF-8"))?
            .to_owned();
        let (pages, read) = flume::bounded::<PageCursor>(READ_AHEAD);
        let reading = source.read_pages(Arc::clone(&copy), cursor.clone(), budget, move |page| {
            pages.send(page.clone()).is_ok()
        });
        let writing = self.write(move |conn| {
            let pragma = |sql: &str| guard::trusted(|| conn.query_row(sql, [], |row| row.get::<_, i64>(0)));
            let autocheckpoint = pragma("PRAGMA wal_autocheckpoint").map_err(sql_error)?;
            pragma(&format!("PRAGMA wal_autocheckpoint = {COPY_AUTOCHECKPOINT}")).map_err(sql_error)?;
            let mut cursor = cursor;
            let outcome =
                guard::trusted(|| conn.execute(&format!("ATTACH DATABASE ?1 AS {COPY_SOURCE_SCHEMA}"), [&path]))
                    .map_err(sql_error)
                    .and_then(|_| {
                        let copied = write_pages(conn, &copy, &mut cursor, &read, &mut on_page);
                        if !conn.is_autocommit() {
                            let _ = guard::trusted(|| conn.execute_batch("ROLLBACK"));
                        }
                        let detached =
                            guard::trusted(|| conn.execute_batch(&format!("DETACH DATABASE {COPY_SOURCE_SCHEMA}")))
                                .map_err(sql_error);
                        copied.and(detached)
                    });
            if outcome.is_ok() && cursor.finished {
                // The WAL the copy grew is checkpointed now, as part of the copy. A checkpoint
                // that cannot finish (a reader still needs the WAL) is left to SQLite's next one.
                let _ = pragma("PRAGMA wal_checkpoint(PASSIVE)");
            }
            pragma(&format!("PRAGMA wal_autocheckpoint = {autocheckpoint}")).map_err(sql_error)?;
            outcome?;
            Ok(cursor)
        });
        // A reader that fails closes its channel, and the writer stops after the pages it was
        // handed; a writer that fails drops its end, and the reader stops at its next page.
        let (read, written) = tokio::join!(reading, writing);
        let written = written?;
        read?;
        Ok(written)
    }

    /// Reads and hashes pages of `query` on a read-only connection, from `cursor` on, until the
    /// last page or the first page boundary after `budget`; returns the cursor to continue from.
    pub(crate) async fn checksum_pages(
        &self,
        query: Arc<PagedQuery>,
        cursor: PageCursor,
        budget: Duration,
    ) -> Result<PageCursor> {
        self.read(move |conn| read_pages(conn, &query, cursor, budget, |_| true))
            .await
    }

    /// [`checksum_pages`](Self::checksum_pages) of a copy's pages, handing `on_page` the cursor
    /// after each; stops early when `on_page` answers false.
    async fn read_pages(
        &self,
        copy: Arc<PagedCopy>,
        cursor: PageCursor,
        budget: Duration,
        on_page: impl FnMut(&PageCursor) -> bool + Send + 'static,
    ) -> Result<PageCursor> {
        self.read(move |conn| read_pages(conn, &copy.query, cursor, budget, on_page))
            .await
    }
}

fn read_pages(
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

/// Copies each page the reader hands over, one transaction per page.
fn write_pages(
    conn: &Connection,
    copy: &PagedCopy,
    cursor: &mut PageCursor,
    pages: &flume::Receiver<PageCursor>,
    on_page: &mut impl FnMut(&PageCursor),
) -> Result<()> {
    let mut inserts: [Option<Statement<'_>>; 2] = [None, None];
    while let Ok(next) = pages.recv() {
        if next.pages > cursor.pages {
            let which = usize::from(cursor.after.is_some());
            let insert = prepared(conn, &mut inserts, &copy.insert, which)?;
            bind(insert, &copy.query, cursor)?;
            // One statement, so one transaction: the page lands whole or not at all.
            guard::statement_started(false);
            insert
                .raw_execute()
                .map_err(|err| guard::explain(sql_error(err), &copy.insert[which]))?;
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
        let statement = conn
            .prepare(&texts[which])
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Params;
    use crate::engine::EngineConfig;

    async fn shard(dir: &std::path::Path, name: &str) -> Database {
        let db = Database::open(dir.join(name), name, EngineConfig::default())
            .await
            .expect("open");
        db.execute(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v BLOB)",
            Params::none(),
        )
        .await
        .expect("schema");
        db
    }

    fn query(schema: Option<&str>) -> [String; 2] {
        let from = schema.map_or_else(|| "t".to_owned(), |s| format!("{s}.t"));
        [false, true].map(|after| {
            format!(
                "SELECT id, k, v FROM {from} WHERE k = :k{} ORDER BY id LIMIT :limit",
                if after { " AND id > :after" } else { "" }
            )
        })
    }

    /// Pages land on the destination with the upsert's rule, the checksums of both sides agree
    /// page for page, and the source is detached again: client SQL neither sees it nor may
    /// attach anything.
    #[tokio::test]
    async fn pages_are_copied_checksummed_and_the_source_detached() {
        let dir = tempfile::tempdir().expect("temp dir");
        let source = shard(dir.path(), "source.db").await;
        let destination = shard(dir.path(), "destination.db").await;
        source
            .execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 9)
                 INSERT INTO t SELECT i, CASE WHEN i % 3 = 0 THEN 'other' ELSE 'moving' END, randomblob(i) FROM n",
                Params::none(),
            )
            .await
            .expect("fill");
        let paged = PagedQuery {
            select: query(None),
            params: vec![("k", Value::from("moving"))],
            key_index: 0,
            page_size: 2,
            label: "table 't'".to_owned(),
        };
        let insert = query(Some(COPY_SOURCE_SCHEMA)).map(|select| {
            format!(
                "INSERT INTO main.t (id, k, v) {select} ON CONFLICT (id) DO UPDATE SET k = excluded.k, v = excluded.v \
                 WHERE t.k IS excluded.k"
            )
        });
        let copy = Arc::new(PagedCopy {
            query: paged.clone(),
            insert,
        });
        let mut cursor = PageCursor::start();
        let mut seen = Vec::new();
        while !cursor.finished {
            let (tx, rx) = std::sync::mpsc::channel();
            cursor = destination
                .copy_pages(&source, Arc::clone(&copy), cursor, Duration::ZERO, move |page| {
                    let _ = tx.send(page.rows);
                })
                .await
                .expect("copy");
            seen.extend(rx.try_iter());
        }
        assert_eq!((cursor.rows, cursor.pages), (6, 3));
        assert_eq!(seen.last(), Some(&6));
        let checksum = |db: Database| {
            let paged = Arc::new(paged.clone());
            async move {
                let mut cursor = PageCursor::start();
                while !cursor.finished {
                    cursor = db
                        .checksum_pages(Arc::clone(&paged), cursor, Duration::ZERO)
                        .await
                        .expect("checksum");
                }
                cursor
            }
        };
        let on_source = checksum(source.clone()).await;
        let on_destination = checksum(destination.clone()).await;
        assert_eq!(on_source.checksum, cursor.checksum);
        assert_eq!(on_destination, on_source);

        let autocheckpoint = destination
            .write(|conn| {
                guard::trusted(|| conn.query_row("PRAGMA wal_autocheckpoint", [], |row| row.get::<_, i64>(0)))
                    .map_err(sql_error)
            })
            .await
            .expect("autocheckpoint");
        assert_eq!(autocheckpoint, 1000, "the writer's checkpoint setting is put back");
        let attached = destination
            .execute("SELECT name FROM pragma_database_list", Params::none())
            .await
            .expect("database list");
        assert_eq!(attached.rows, vec![vec![Value::from("main")]]);
        let refused = destination
            .execute(
                "ATTACH DATABASE ?1 AS other",
                Params::from(vec![dir.path().join("source.db").to_string_lossy().into_owned()]),
            )
            .await
            .expect_err("client SQL may not attach");
        assert!(matches!(refused, Error::ForbiddenStatement { .. }), "{refused:?}");
    }

    /// A destination row with a moving key but another route value is left alone, so the
    /// destination's checksum differs and verification can report it.
    #[tokio::test]
    async fn a_colliding_row_is_not_overwritten() {
        let dir = tempfile::tempdir().expect("temp dir");
        let source = shard(dir.path(), "source.db").await;
        let destination = shard(dir.path(), "destination.db").await;
        source
            .execute(
                "INSERT INTO t VALUES (1, 'moving', x'01'), (2, 'moving', x'02')",
                Params::none(),
            )
            .await
            .expect("fill");
        destination
            .execute("INSERT INTO t VALUES (2, 'someone else', x'ff')", Params::none())
            .await
            .expect("collision");
        let copy = Arc::new(PagedCopy {
            query: PagedQuery {
                select: query(None),
                params: vec![("k", Value::from("moving"))],
                key_index: 0,
                page_size: 10,
                label: "table 't'".to_owned(),
            },
            insert: query(Some(COPY_SOURCE_SCHEMA)).map(|select| {
                format!("INSERT INTO main.t (id, k, v) {select} ON CONFLICT (id) DO UPDATE SET k = excluded.k WHERE t.k IS excluded.k")
            }),
        });
        let cursor = destination
            .copy_pages(&source, copy, PageCursor::start(), Duration::from_secs(5), |_| {})
            .await
            .expect("copy");
        assert!(cursor.finished);
        assert_eq!(cursor.rows, 2);
        let rows = destination
            .execute("SELECT id, k FROM t ORDER BY id", Params::none())
            .await
            .expect("rows");
        assert_eq!(
            rows.rows,
            vec![
                vec![Value::Integer(1), Value::from("moving")],
                vec![Value::Integer(2), Value::from("someone else")]
            ]
        );
    }
}
