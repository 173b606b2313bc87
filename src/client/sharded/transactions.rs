//! Routed transactions: ids that carry the map version and shard, and the RAII guard.

use std::sync::Arc;

use super::ShardedClient;
use super::generation::ShardSlot;
use crate::data::{DataClient, Params, SqlResult, TransactionInfo, TransactionOptions};
use crate::error::{Error, Result, StaleMapVersion, TransactionRouteConflict};
use crate::routing::RouteContext;
use crate::transaction::TransactionId;

/// The transactions of a [`ShardedClient`]: begun on a route's shard, then run, committed or
/// rolled back by their id alone, which names the map version and shard. Handed out by
/// [`ShardedClient::transactions`].
///
/// ```no_run
/// # async fn demo(sharded: shardlite::client::ShardedClient, id: &str) -> shardlite::Result<()> {
/// use shardlite::client::Params;
///
/// // An id handed back by a route's client, or by a daemon, needs no route here.
/// let transactions = sharded.transactions();
/// transactions.execute(id, "UPDATE orders SET amount = amount + 1", Params::none()).await?;
/// transactions.commit(id).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ShardedTransactions<'a> {
    sharded: &'a ShardedClient,
}

impl<'a> ShardedTransactions<'a> {
    pub(super) fn new(sharded: &'a ShardedClient) -> Self {
        Self { sharded }
    }

    /// Begins a transaction on the shard `route` resolves to. The guard rolls back when
    /// dropped without [`commit`](ShardedTransaction::commit).
    pub async fn begin(self, route: &RouteContext) -> Result<ShardedTransaction> {
        let info = self.begin_with(route, TransactionOptions::default()).await?;
        Ok(ShardedTransaction {
            sharded: self.sharded.clone(),
            id: TransactionId::parse(&info.transaction_id)?,
            expires_at_utc: info.expires_at_utc,
            finished: false,
        })
    }

    /// Begins a transaction with `options` on the shard `route` resolves to; its id is the
    /// shard-prefixed one.
    pub(crate) async fn begin_with(self, route: &RouteContext, options: TransactionOptions) -> Result<TransactionInfo> {
        let generation = self.sharded.inner.fresh().await;
        let (index, client) = generation.route_client(route)?;
        let inner = client.begin_transaction_with(options).await?;
        let id = TransactionId::new(
            generation.map.version(),
            generation.map.shards()[index].id.clone(),
            inner.transaction_id,
        );
        Ok(TransactionInfo {
            transaction_id: id.to_string(),
            expires_at_utc: inner.expires_at_utc,
        })
    }

    /// Checks a transaction id against the live map and an optional route; returns the id and
    /// the shard's client.
    ///
    /// An id of an earlier map version stays valid when no activation since changed the
    /// ownership of its shard; otherwise it is [`Error::StaleMapVersion`].
    async fn transaction_target(
        self,
        transaction_id: &str,
        route: Option<&RouteContext>,
    ) -> Result<(TransactionId, usize, Arc<dyn DataClient>)> {
        let id = TransactionId::parse(transaction_id)?;
        let generation = self.sharded.inner.fresh().await;
        let map = &generation.map;
        if !generation.admits(id.map_version(), id.shard_id()) {
            return Err(Error::from(StaleMapVersion {
                transaction_id: transaction_id.to_owned(),
                transaction_version: id.map_version(),
                active_version: map.version(),
            }));
        }
        let index = map.shard_index(id.shard_id()).ok_or_else(|| Error::UnknownShard {
            shard_id: id.shard_id().to_owned(),
        })?;
        if let Some(route) = route {
            let resolution = map.resolve(route.keyspace(), route.key())?;
            if resolution.shard_index != index {
                return Err(Error::from(TransactionRouteConflict {
                    transaction_id: transaction_id.to_owned(),
                    transaction_shard_id: map.shards()[index].id.clone(),
                    route_shard_id: resolution.shard_id.to_owned(),
                }));
            }
        }
        Ok((id, index, generation.slot_client(index)?))
    }

    /// Executes SQL inside a transaction, routed by its id alone (a route's client checks the
    /// route against the id too).
    pub async fn execute(self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        self.execute_on(transaction_id, None, sql, params).await
    }

    /// Commits a transaction, routed by its id alone.
    pub async fn commit(self, transaction_id: &str) -> Result<()> {
        self.commit_on(transaction_id, None).await
    }

    /// Rolls back a transaction, routed by its id alone.
    pub async fn rollback(self, transaction_id: &str) -> Result<()> {
        self.rollback_on(transaction_id, None).await
    }

    /// [`execute`](Self::execute), checking that `route` (when given) resolves to the id's shard.
    pub(crate) async fn execute_on(
        self,
        transaction_id: &str,
        route: Option<&RouteContext>,
        sql: &str,
        params: Params,
    ) -> Result<SqlResult> {
        let (id, _, client) = self.transaction_target(transaction_id, route).await?;
        client
            .execute_in_transaction(id.inner_id(), sql, params)
            .await
            .map_err(|err| outer_id(err, transaction_id))
    }

    /// [`commit`](Self::commit), checking that `route` (when given) resolves to the id's shard.
    pub(crate) async fn commit_on(self, transaction_id: &str, route: Option<&RouteContext>) -> Result<()> {
        let (id, _, client) = self.transaction_target(transaction_id, route).await?;
        client
            .commit_transaction(id.inner_id())
            .await
            .map_err(|err| outer_id(err, transaction_id))
    }

    /// [`rollback`](Self::rollback), checking that `route` (when given) resolves to the id's
    /// shard.
    pub(crate) async fn rollback_on(self, transaction_id: &str, route: Option<&RouteContext>) -> Result<()> {
        let (id, _, client) = self.transaction_target(transaction_id, route).await?;
        client
            .rollback_transaction(id.inner_id())
            .await
            .map_err(|err| outer_id(err, transaction_id))
    }

    /// Rolls back a transaction whose guard was dropped, without waiting.
    fn abandon(self, id: &TransactionId) {
        let generation = self.sharded.inner.generation();
        let Some(index) = generation.map.shard_index(id.shard_id()) else {
            return;
        };
        match &generation.shards[index] {
            ShardSlot::Ready { local: Some(local), .. } => local.abandon_transaction(id.inner_id()),
            ShardSlot::Ready { client, .. } => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    let client = Arc::clone(client);
                    let inner = id.inner_id().to_owned();
                    runtime.spawn(async move {
                        let _ = client.rollback_transaction(&inner).await;
                    });
                }
            }
            _ => {}
        }
    }
}

/// Errors from a shard name the shard's inner id; callers know the sharded id.
fn outer_id(err: Error, transaction_id: &str) -> Error {
    match err {
        Error::TransactionNotFound { .. } => Error::TransactionNotFound {
            transaction_id: transaction_id.to_owned(),
        },
        Error::TransactionExpired { .. } => Error::TransactionExpired {
            transaction_id: transaction_id.to_owned(),
        },
        other => other,
    }
}

/// An open routed transaction. Dropping it without [`commit`](Self::commit) rolls it back.
///
/// ```no_run
/// # async fn demo(sharded: shardlite::client::ShardedClient) -> shardlite::Result<()> {
/// use shardlite::client::Params;
/// use shardlite::RouteContext;
///
/// let tx = sharded.transactions().begin(&RouteContext::new("orders_by_month", "2026-06")?).await?;
/// tx.execute("INSERT INTO orders (order_month) VALUES (?1)", Params::from(vec!["2026-06"])).await?;
/// tx.commit().await?;
/// # Ok(()) }
/// ```
#[must_use = "a transaction rolls back when dropped; call commit to keep its changes"]
pub struct ShardedTransaction {
    sharded: ShardedClient,
    id: TransactionId,
    expires_at_utc: Option<String>,
    finished: bool,
}

impl std::fmt::Debug for ShardedTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedTransaction")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ShardedTransaction {
    /// The shard-prefixed id (`csdbshard:{mapVersion}:{shardId}:{inner}`).
    pub fn id(&self) -> &TransactionId {
        &self.id
    }

    /// When the transaction expires if left idle, as reported at begin.
    pub fn expires_at_utc(&self) -> Option<&str> {
        self.expires_at_utc.as_deref()
    }

    /// Executes SQL inside the transaction.
    pub async fn execute(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.sharded
            .transactions()
            .execute_on(&self.id.to_string(), None, sql, params)
            .await
    }

    /// Commits.
    pub async fn commit(mut self) -> Result<()> {
        self.finished = true;
        self.sharded.transactions().commit_on(&self.id.to_string(), None).await
    }

    /// Rolls back.
    pub async fn rollback(mut self) -> Result<()> {
        self.finished = true;
        self.sharded
            .transactions()
            .rollback_on(&self.id.to_string(), None)
            .await
    }
}

impl Drop for ShardedTransaction {
    fn drop(&mut self) {
        if !self.finished {
            self.sharded.transactions().abandon(&self.id);
        }
    }
}
