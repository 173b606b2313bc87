//! The blocking form of [`client::ShardedQuery`](crate::client::ShardedQuery).

use super::ShardedClient;
use crate::data::{Params, ShardSqlResult, SqlResult};
use crate::error::Result;

/// SQL on every enabled shard of a blocking [`ShardedClient`], and one `SELECT` merged across
/// them. Handed out by [`ShardedClient::query`].
///
/// ```no_run
/// # fn demo(sharded: &shardlite::client::blocking::ShardedClient) -> shardlite::Result<()> {
/// use shardlite::client::Params;
///
/// sharded.query().execute_all("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, amount REAL)")?;
/// let total = sharded.query().merged("SELECT sum(amount) FROM orders", Params::none())?;
/// # let _ = total; Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ShardedQuery<'a> {
    client: &'a ShardedClient,
}

impl<'a> ShardedQuery<'a> {
    pub(super) fn new(client: &'a ShardedClient) -> Self {
        Self { client }
    }

    /// SQL on every enabled shard (schema setup); per-shard results.
    pub fn execute_all(self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        self.client.wait(self.client.sharded.query().execute_all(sql))
    }

    /// Read-only SQL on every enabled shard, enforced by the engine.
    pub fn read_all(self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        self.client.wait(self.client.sharded.query().read_all(sql))
    }

    /// One read-only `SELECT` over every enabled shard, answered as SQLite would answer it over
    /// one file holding every shard's rows (see the async client's
    /// [`merged`](crate::client::ShardedQuery::merged)).
    pub fn merged(self, sql: &str, params: Params) -> Result<SqlResult> {
        self.client.wait(self.client.sharded.query().merged(sql, params))
    }
}
