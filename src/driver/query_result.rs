//! [`ShardliteQueryResult`]: what executing SQL changed.

/// The outcome of [`execute`](sqlx_core::executor::Executor::execute): rows changed, and the rowid
/// of the last row inserted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardliteQueryResult {
    pub(crate) rows_affected: u64,
    pub(crate) last_insert_rowid: Option<i64>,
}

impl ShardliteQueryResult {
    /// Rows inserted, updated or deleted by the statements executed.
    pub fn rows_affected(&self) -> u64 {
        self.rows_affected
    }

    /// The rowid of the last row an `INSERT` (or `REPLACE`) of the statements executed added to
    /// a rowid table, as SQLite's `last_insert_rowid()` reported it on the connection that ran
    /// them, right after them; `0` when they inserted nothing (SQLite's own "no insert" value).
    ///
    /// ```no_run
    /// # async fn demo(conn: &mut shardlite::driver::ShardliteConnection) -> sqlx_core::Result<()> {
    /// let done = sqlx_core::query::query("INSERT INTO orders (order_month, total) VALUES ('2026-06', 1)")
    ///     .execute(&mut *conn)
    ///     .await?;
    /// println!("new order {}", done.last_insert_rowid());
    /// # Ok(()) }
    /// ```
    pub fn last_insert_rowid(&self) -> i64 {
        self.last_insert_rowid.unwrap_or(0)
    }
}

impl Extend<ShardliteQueryResult> for ShardliteQueryResult {
    fn extend<T: IntoIterator<Item = ShardliteQueryResult>>(&mut self, results: T) {
        for result in results {
            self.rows_affected += result.rows_affected;
            if result.last_insert_rowid.is_some() {
                self.last_insert_rowid = result.last_insert_rowid;
            }
        }
    }
}
