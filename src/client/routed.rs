//! The route-bound client: every call resolves one route and runs on that shard.

use std::sync::Arc;

use super::forward::impl_data_client;
use super::{ShardedClient, ShardedTransaction};
use crate::data::{DataClient, DatabaseInfo, Params, SqlResult, TransactionInfo};
use crate::error::Result;
use crate::routing::{ResolvedRoute, RouteContext};

/// A [`DataClient`] bound to one route. Every call resolves the route and runs on that shard;
/// transaction calls also check that the id belongs to the route's shard.
#[derive(Clone, Debug)]
pub struct RoutedClient {
    pub(super) sharded: ShardedClient,
    pub(super) route: RouteContext,
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
        Ok(self.sharded.route_client(&self.route).await?.1)
    }
}

impl_data_client!(RoutedClient, |this| this.shard().await, {
    async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.shard().await?.execute_sql(sql, params).await
    }
    async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.shard().await?.execute_read_only_sql(sql, params).await
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
