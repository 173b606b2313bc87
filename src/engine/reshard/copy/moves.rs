//! [`Moves`]: the copy, cursor and checksum jobs a data migration runs on one file (see the
//! [module](super) docs).

use std::sync::Arc;
use std::time::Duration;

use super::{
    COPY_AUTOCHECKPOINT, COPY_CURSORS_SCHEMA, COPY_SOURCE_SCHEMA, CopyRecord, PageCursor, PagedCopy, PagedQuery,
    READ_AHEAD, has_cursor_table, read_pages, write_pages,
};
use crate::data::Value;
use crate::engine::database::Database;
use crate::engine::guard;
use crate::engine::session::SessionJob;
use crate::engine::sqlite_error::sql_error;
use crate::engine::value::value_from_ref;
use crate::error::{Error, Result};

/// The data-migration side of one [`Database`] file: copying pages into it from another file,
/// the copy cursors it records, and page checksums, on its shared connections or inside one of
/// its sessions. Handed out by [`Database::moves`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Moves<'db> {
    db: &'db Database,
}

impl<'db> Moves<'db> {
    pub(in crate::engine) fn new(db: &'db Database) -> Self {
        Self { db }
    }

    /// Copies pages of `copy` from `source` into this file, from `cursor` on: a reader of
    /// `source` reads and hashes each page, and this file's writer upserts it in a transaction
    /// of its own, which also records the cursor after the page under `copy.record`, then calls
    /// `on_page` with that cursor. Stops after the last page,
    /// or at the first page boundary after `budget`, so other writers of this file are not
    /// kept waiting for a whole table; returns the cursor to continue from.
    pub(crate) async fn copy_pages(
        self,
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
        let reading = Moves::new(source).read_pages(Arc::clone(&copy), cursor.clone(), budget, move |page| {
            pages.send(page.clone()).is_ok()
        });
        let writing = self.db.write(move |conn| {
            let pragma = |sql: &str| guard::trusted(|| conn.query_row(sql, [], |row| row.get::<_, i64>(0)));
            // Under the point-in-time archive, checkpoints are the archive's (it reads every
            // frame before one folds it): the copy leaves them alone.
            let archived = crate::engine::archive::is_active();
            let autocheckpoint = pragma("PRAGMA wal_autocheckpoint").map_err(sql_error)?;
            if !archived {
                pragma(&format!("PRAGMA wal_autocheckpoint = {COPY_AUTOCHECKPOINT}")).map_err(sql_error)?;
            }
            let mut cursor = cursor;
            let outcome = guard::trusted(|| conn.execute_batch(COPY_CURSORS_SCHEMA))
                .and_then(|()| {
                    guard::trusted(|| conn.execute(&format!("ATTACH DATABASE ?1 AS {COPY_SOURCE_SCHEMA}"), [&path]))
                })
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
            if outcome.is_ok() && cursor.finished && !archived {
                // The WAL the copy grew is checkpointed now, as part of the copy. A checkpoint
                // that cannot finish (a reader still needs the WAL) is left to SQLite's next one.
                let _ = pragma("PRAGMA wal_checkpoint(PASSIVE)");
            }
            pragma(&format!("PRAGMA wal_autocheckpoint = {autocheckpoint}")).map_err(sql_error)?;
            if !archived {
                // The setting read 0 under the writer's own checkpoint hook, which it put back.
                crate::engine::checkpoint::install(conn);
            }
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

    /// The cursor `record` was last recorded with in this file (by the transaction of the last
    /// page a copy committed here), if there is one. Read on the writer, so it comes after any
    /// copy job of this file still under way.
    pub(crate) async fn copy_cursor(self, record: &CopyRecord) -> Result<Option<PageCursor>> {
        let record = record.clone();
        self.db
            .write(move |conn| {
                guard::trusted(|| {
                    if !has_cursor_table(conn)? {
                        return Ok(None);
                    }
                    let mut select = conn
                        .prepare(
                            "SELECT after_key, checksum, rows, pages, finished FROM _shardlite_copy_cursors
                         WHERE migration_id = ?1 AND item = ?2",
                        )
                        .map_err(sql_error)?;
                    let mut rows = select.query([&record.migration_id, &record.item]).map_err(sql_error)?;
                    let Some(row) = rows.next().map_err(sql_error)? else {
                        return Ok(None);
                    };
                    let corrupt = |what: &str| {
                        Error::invalid_argument(
                            "copy cursor",
                            format!("the recorded cursor of {} has {what}", record.item),
                        )
                    };
                    let after = value_from_ref(row.get_ref(0).map_err(sql_error)?);
                    let checksum: Vec<u8> = row.get(1).map_err(sql_error)?;
                    let count = |index: usize| -> Result<u64> {
                        let value: i64 = row.get(index).map_err(sql_error)?;
                        u64::try_from(value).map_err(|_| corrupt("a negative count"))
                    };
                    Ok(Some(PageCursor {
                        after: (after != Value::Null).then_some(after),
                        checksum: checksum
                            .try_into()
                            .map_err(|_| corrupt("a checksum that is not 32 bytes"))?,
                        rows: count(2)?,
                        pages: count(3)?,
                        finished: row.get::<_, i64>(4).map_err(sql_error)? != 0,
                    }))
                })
            })
            .await
    }

    /// Removes every cursor record of `migration_id` from this file (nothing when there is none).
    pub(crate) async fn clear_copy_cursors(self, migration_id: &str) -> Result<()> {
        let migration_id = migration_id.to_owned();
        self.db
            .write(move |conn| {
                guard::trusted(|| {
                    if has_cursor_table(conn)? {
                        conn.execute(
                            "DELETE FROM _shardlite_copy_cursors WHERE migration_id = ?1",
                            [&migration_id],
                        )
                        .map_err(sql_error)?;
                    }
                    Ok(())
                })
            })
            .await
    }

    /// Reads and hashes pages of `query` on a read-only connection, from `cursor` on, until the
    /// last page or the first page boundary after `budget`; returns the cursor to continue from.
    pub(crate) async fn checksum_pages(
        self,
        query: Arc<PagedQuery>,
        cursor: PageCursor,
        budget: Duration,
    ) -> Result<PageCursor> {
        self.db
            .read(move |conn| read_pages(conn, &query, cursor, budget, |_| true))
            .await
    }

    /// [`checksum_pages`](Self::checksum_pages) of a copy's pages, handing `on_page` the cursor
    /// after each; stops early when `on_page` answers false.
    async fn read_pages(
        self,
        copy: Arc<PagedCopy>,
        cursor: PageCursor,
        budget: Duration,
        on_page: impl FnMut(&PageCursor) -> bool + Send + 'static,
    ) -> Result<PageCursor> {
        self.db
            .read(move |conn| read_pages(conn, &copy.query, cursor, budget, on_page))
            .await
    }

    /// Reads and hashes pages of `query` inside the open session `id`, so every page is read
    /// from the one snapshot the session's transaction holds, from `cursor` on, until the last
    /// page or the first page boundary after `budget`; returns the cursor to continue from. The
    /// rows are hashed as SQLite column references, as
    /// [`checksum_pages`](Self::checksum_pages) hashes them, never turned into values.
    pub(crate) async fn session_checksum_pages(
        self,
        id: &str,
        query: Arc<PagedQuery>,
        cursor: PageCursor,
        budget: Duration,
    ) -> Result<PageCursor> {
        self.db
            .sessions()
            .session_call(id, |cancel, reply| SessionJob::Checksum {
                query,
                cursor,
                budget,
                cancel,
                reply,
            })
            .await
    }
}
