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
    /// Taken by commit and rollback; dropped inside the client's runtime otherwise.
    inner: Option<crate::client::AtomicTransaction>,
}

impl AtomicTransaction {
    pub(super) fn new(client: ShardedClient) -> Self {
        let inner = client.sharded.begin_atomic();
        Self {
            client,
            inner: Some(inner),
        }
    }

    fn open(&self) -> &crate::client::AtomicTransaction {
        self.inner
            .as_ref()
            .unwrap_or_else(|| unreachable!("taken only by commit and rollback, which consume the handle"))
    }

    /// Its id (`csdbatomic:...`).
    pub fn id(&self) -> String {
        self.open().id()
    }

    /// The shards it has touched; the first will hold the decision.
    pub fn participants(&self) -> Vec<String> {
        self.open().participants()
    }

    /// Executes SQL on the shard `route` resolves to, inside this transaction.
    pub fn execute(&mut self, route: &RouteContext, sql: &str, params: Params) -> Result<SqlResult> {
        let Self { client, inner } = self;
        match inner.as_mut() {
            Some(inner) => client.wait(inner.execute(route, sql, params)),
            None => unreachable!("taken only by commit and rollback, which consume the handle"),
        }
    }

    /// Commits on every shard it wrote, or on none.
    pub fn commit(mut self) -> Result<()> {
        match self.inner.take() {
            Some(inner) => self.client.wait(inner.commit()),
            None => Ok(()),
        }
    }

    /// Rolls back on every shard it touched.
    pub fn rollback(mut self) -> Result<()> {
        match self.inner.take() {
            Some(inner) => self.client.wait(inner.rollback()),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicTransaction {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            // The rollback of a participant on another daemon is a task on the current
            // runtime: give it this client's.
            let _entered = self.client.waiter.0.get().enter();
            drop(inner);
        }
    }
}
