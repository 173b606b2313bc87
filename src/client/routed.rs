//! The route-bound client: every call resolves one route and runs on that shard.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::forward::impl_data_client;
use super::sharded::generation::{Generation, ShardSlot};
use super::{ShardedClient, ShardedTransaction};
use crate::data::{DataClient, DatabaseInfo, Params, SqlResult, TransactionInfo};
use crate::error::Result;
use crate::map::ShardMap;
use crate::routing::{ResolvedRoute, RouteContext};

/// A [`DataClient`] bound to one route. Every call resolves the route and runs on that shard;
/// transaction calls also check that the id belongs to the route's shard.
///
/// The route's shard is resolved once per map version and remembered, so a call on an
/// unchanged map does not hash the route again.
#[derive(Clone, Debug)]
pub struct RoutedClient {
    pub(super) sharded: ShardedClient,
    pub(super) route: RouteContext,
    pub(super) resolved: ResolvedIndex,
}

/// The shard index a route resolved to, and under which map version: one word,
/// `VALID | version << 16 | index`, or 0 before the first call.
#[derive(Debug, Default)]
pub(super) struct ResolvedIndex(AtomicU64);

const VALID: u64 = 1 << 63;
/// Versions and indexes that fit the word beside the valid bit; larger ones are resolved on
/// every call.
const MAX_REMEMBERED_VERSION: u64 = (1 << 47) - 1;
const MAX_REMEMBERED_INDEX: u64 = (1 << 16) - 1;

impl Clone for ResolvedIndex {
    fn clone(&self) -> Self {
        Self(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }
}

impl ResolvedIndex {
    /// The index of `route`'s shard in `map`.
    pub(super) fn index(&self, map: &ShardMap, route: &RouteContext) -> Result<usize> {
        let version = map.version();
        let known = self.0.load(Ordering::Relaxed);
        if known & VALID != 0 && (known & !VALID) >> 16 == version {
            return Ok(usize::try_from(known & MAX_REMEMBERED_INDEX).unwrap_or(usize::MAX));
        }
        let index = map.resolve(route.keyspace(), route.key())?.shard_index;
        if let Ok(wide) = u64::try_from(index)
            && version <= MAX_REMEMBERED_VERSION
            && wide <= MAX_REMEMBERED_INDEX
        {
            self.0.store(VALID | version << 16 | wide, Ordering::Relaxed);
        }
        Ok(index)
    }
}

impl RoutedClient {
    /// The route this client is bound to.
    pub fn route(&self) -> &RouteContext {
        &self.route
    }

    /// Where the route resolves.
    pub fn resolve(&self) -> Result<ResolvedRoute> {
        self.sharded.resolve_route(&self.route)
    }

    /// Begins an RAII transaction on this route's shard.
    pub async fn begin(&self) -> Result<ShardedTransaction> {
        self.sharded.begin(&self.route).await
    }

    async fn shard(&self) -> Result<Arc<dyn DataClient>> {
        let (generation, index) = self.target().await?;
        generation.slot_client(index)
    }

    /// The generation serving this call and the index of the route's shard in it.
    async fn target(&self) -> Result<(Arc<Generation>, usize)> {
        let generation = self.sharded.fresh().await;
        let index = self.resolved.index(&generation.map, &self.route)?;
        Ok((generation, index))
    }
}

impl_data_client!(RoutedClient, |this| this.shard().await, {
    async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        let (generation, index) = self.target().await?;
        match &generation.shards[index] {
            // A local shard's engine directly: no client object in between.
            ShardSlot::Ready { local: Some(local), .. } => local.database().execute(sql, params).await,
            _ => generation.slot_client(index)?.execute_sql(sql, params).await,
        }
    }
    async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        let (generation, index) = self.target().await?;
        match &generation.shards[index] {
            ShardSlot::Ready { local: Some(local), .. } => local.database().execute_read_only(sql, params).await,
            _ => generation.slot_client(index)?.execute_read_only_sql(sql, params).await,
        }
    }
    async fn info(&self) -> Result<DatabaseInfo> {
        self.shard().await?.info().await
    }
    async fn begin_transaction(&self) -> Result<TransactionInfo> {
        self.sharded.begin_on(&self.route).await
    }
    async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        self.sharded
            .tx_execute(transaction_id, Some(&self.route), sql, params)
            .await
    }
    async fn commit_transaction(&self, transaction_id: &str) -> Result<()> {
        self.sharded.tx_commit(transaction_id, Some(&self.route)).await
    }
    async fn rollback_transaction(&self, transaction_id: &str) -> Result<()> {
        self.sharded.tx_rollback(transaction_id, Some(&self.route)).await
    }
});
