//! An atomic transaction across shards begun through a daemon: [`RemoteAtomicTransaction`],
//! handed out by [`HttpClient::begin_atomic`](super::http::HttpClient::begin_atomic) and
//! [`GrpcClient::begin_atomic`](super::grpc::GrpcClient::begin_atomic). Each execute carries the
//! route of the shard it runs on; commit applies every shard's writes or none (the daemon runs
//! the protocol, see [`AtomicTransaction`](crate::client::AtomicTransaction)).

use crate::data::{Params, SqlResult, TransactionData};
use crate::error::{Error, Result};
use crate::routing::RouteContext;

/// A remote client that can send one call with a route of its own: the daemon clients.
pub trait RoutedCalls: TransactionData + Clone + Send + Sync + 'static {
    /// The same client, its calls carrying `route`.
    fn routed(&self, route: &RouteContext) -> Self;
}

/// An atomic transaction a daemon holds open: statements on any route, committed on every
/// shard they wrote or on none. Dropped without [`commit`](Self::commit) or
/// [`rollback`](Self::rollback), it sends a rollback in the background (the daemon rolls it
/// back anyway once it stays idle past the daemon's idle timeout).
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::client::Params;
/// use shardlite::transport::RemoteOptions;
/// use shardlite::transport::http::HttpClient;
/// use shardlite::RouteContext;
///
/// let daemon = HttpClient::new(RemoteOptions::new("http://127.0.0.1:5820"))?;
/// let mut transfer = daemon.begin_atomic().await?;
/// let (from, to) = (RouteContext::new("accounts", "alice")?, RouteContext::new("accounts", "bob")?);
/// transfer.execute(&from, "UPDATE accounts SET balance = balance - 5 WHERE owner = 'alice'", Params::none()).await?;
/// transfer.execute(&to, "UPDATE accounts SET balance = balance + 5 WHERE owner = 'bob'", Params::none()).await?;
/// transfer.commit().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct RemoteAtomicTransaction<C: RoutedCalls> {
    client: C,
    id: String,
    finished: bool,
}

impl<C: RoutedCalls> RemoteAtomicTransaction<C> {
    /// The transaction `id` the daemon began, driven through `client`.
    pub(crate) fn new(client: C, id: String) -> Self {
        Self {
            client,
            id,
            finished: false,
        }
    }

    /// Its id (`csdbatomic:...`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Executes SQL on the shard `route` resolves to, inside this transaction.
    pub async fn execute(&mut self, route: &RouteContext, sql: &str, params: Params) -> Result<SqlResult> {
        if self.finished {
            return Err(Error::TransactionNotFound {
                transaction_id: self.id.clone(),
            });
        }
        self.client
            .routed(route)
            .execute_in_transaction(&self.id, sql, params)
            .await
    }

    /// Commits on every shard it wrote, or on none.
    pub async fn commit(mut self) -> Result<()> {
        self.finished = true;
        self.client.commit_transaction(&self.id).await
    }

    /// Rolls back on every shard it touched.
    pub async fn rollback(mut self) -> Result<()> {
        self.finished = true;
        self.client.rollback_transaction(&self.id).await
    }
}

impl<C: RoutedCalls> Drop for RemoteAtomicTransaction<C> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (client, id) = (self.client.clone(), std::mem::take(&mut self.id));
            runtime.spawn(async move {
                let _ = client.rollback_transaction(&id).await;
            });
        }
    }
}
