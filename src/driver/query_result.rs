//! [`ShardliteQueryResult`]: what executing SQL changed.

/// The outcome of [`execute`](sqlx_core::executor::Executor::execute): rows changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShardliteQueryResult {
    pub(crate) rows_affected: u64,
}

impl ShardliteQueryResult {
    /// Rows inserted, updated or deleted by the statements executed.
    pub fn rows_affected(&self) -> u64 {
        self.rows_affected
    }
}

impl Extend<ShardliteQueryResult> for ShardliteQueryResult {
    fn extend<T: IntoIterator<Item = ShardliteQueryResult>>(&mut self, results: T) {
        for result in results {
            self.rows_affected += result.rows_affected;
        }
    }
}
