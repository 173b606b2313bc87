//! The client of a connection to a master catalog that names no route: reads are answered
//! across every shard (see [`crate::query`]); writes, and everything else that touches one
//! shard's data, need a route.

use std::sync::Arc;

use super::ShardedClient;
use super::forward::impl_data_client;
use crate::data::{DataClient, DatabaseInfo, Params, SqlResult, TransactionInfo};
use crate::engine::classify;
use crate::error::{Error, Result};

/// A [`DataClient`] over every shard of a map with no route: `SELECT`s are merged across the
/// shards with [`ShardedClient::query_all_shards`]; anything that may write fails with
/// [`Error::RouteRequired`]. Transactions begun elsewhere are still reached by their ids.
#[derive(Debug, Clone)]
pub struct MergedReadsClient {
    sharded: ShardedClient,
}

impl MergedReadsClient {
    /// A client answering reads across every shard of `sharded`.
    pub fn new(sharded: ShardedClient) -> Self {
        Self { sharded }
    }
}

impl_data_client!(
    MergedReadsClient,
    |_this| Err::<Arc<dyn DataClient>, _>(Error::RouteRequired),
    {
        async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
            if classify::check_read_only_script(sql).is_err() {
                return Err(Error::RouteRequired);
            }
            self.sharded.query_all_shards(sql, params).await
        }
        async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
            self.sharded.query_all_shards(sql, params).await
        }
        async fn info(&self) -> Result<DatabaseInfo> {
            DataClient::info(&self.sharded).await
        }
        async fn begin_transaction(&self) -> Result<TransactionInfo> {
            Err(Error::RouteRequired)
        }
        async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
            DataClient::execute_in_transaction(&self.sharded, transaction_id, sql, params).await
        }
        async fn commit_transaction(&self, transaction_id: &str) -> Result<()> {
            DataClient::commit_transaction(&self.sharded, transaction_id).await
        }
        async fn rollback_transaction(&self, transaction_id: &str) -> Result<()> {
            DataClient::rollback_transaction(&self.sharded, transaction_id).await
        }
    }
);
