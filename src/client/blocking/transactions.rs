//! The blocking form of [`client::ShardedTransactions`](crate::client::ShardedTransactions).

use super::ShardedClient;
use crate::data::{Params, SqlResult};
use crate::error::Result;

/// Transaction calls routed by the id alone, through a blocking [`ShardedClient`]. Handed out
/// by [`ShardedClient::transactions`].
///
/// ```no_run
/// # fn demo(sharded: &shardlite::client::blocking::ShardedClient, id: &str) -> shardlite::Result<()> {
/// use shardlite::client::Params;
///
/// sharded.transactions().execute(id, "UPDATE orders SET amount = 0", Params::none())?;
/// sharded.transactions().commit(id)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ShardedTransactions<'a> {
    client: &'a ShardedClient,
}

impl<'a> ShardedTransactions<'a> {
    pub(super) fn new(client: &'a ShardedClient) -> Self {
        Self { client }
    }

    /// Executes SQL inside a transaction, routed by its id alone.
    pub fn execute(self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        self.client
            .wait(self.client.sharded.transactions().execute(transaction_id, sql, params))
    }

    /// Commits a transaction, routed by its id alone.
    pub fn commit(self, transaction_id: &str) -> Result<()> {
        self.client
            .wait(self.client.sharded.transactions().commit(transaction_id))
    }

    /// Rolls back a transaction, routed by its id alone.
    pub fn rollback(self, transaction_id: &str) -> Result<()> {
        self.client
            .wait(self.client.sharded.transactions().rollback(transaction_id))
    }
}
