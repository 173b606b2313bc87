//! The blocking form of [`client::AtomicTransaction`](crate::client::AtomicTransaction).

use super::ShardedClient;
use crate::data::{Params, SqlResult};
use crate::error::Result;
use crate::routing::RouteContext;

/// An atomic transaction across shards through a blocking [`ShardedClient`]: statements on any
/// route, committed on every shard they wrote or on none. Dropped without
/// [`commit`](Self::commit), it rolls back. Begun by [`ShardedClient::begin_atomic`].
///
/// ```no_run
/// # fn demo(sharded: &shardlite::client::blocking::ShardedClient) -> shardlite::Result<()> {
/// use shardlite::client::Params;
/// use shardlite::RouteContext;
///
/// let mut tx = sharded.begin_atomic();
/// tx.execute(&RouteContext::new("accounts", "alice")?, "UPDATE accounts SET balance = balance - 5", Params::none())?;
/// tx.execute(&RouteContext::new("accounts", "bob")?, "UPDATE accounts SET balance = balance + 5", Params::none())?;
/// tx.commit()?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct AtomicTransaction {
    client: ShardedClient,
    inner: crate::client::AtomicTransaction,
}

impl AtomicTransaction {
    pub(super) fn new(client: ShardedClient) -> Self {
        let inner = client.sharded.begin_atomic();
        Self { client, inner }
    }

    /// Its id (`csdbatomic:...`).
    pub fn id(&self) -> String {
        self.inner.id()
    }

    /// The shards it has touched; the first will hold the decision.
    pub fn participants(&self) -> Vec<String> {
        self.inner.participants()
    }

    /// Executes SQL on the shard `route` resolves to, inside this transaction.
    pub fn execute(&mut self, route: &RouteContext, sql: &str, params: Params) -> Result<SqlResult> {
        let Self { client, inner } = self;
        client.wait(inner.execute(route, sql, params))
    }

    /// Commits on every shard it wrote, or on none.
    pub fn commit(self) -> Result<()> {
        let Self { client, inner } = self;
        client.wait(inner.commit())
    }

    /// Rolls back on every shard it touched.
    pub fn rollback(self) -> Result<()> {
        let Self { client, inner } = self;
        client.wait(inner.rollback())
    }
}
