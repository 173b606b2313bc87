//! A data host's operations over gRPC: `ListHostShards` and `CreateHostShard`.

use async_trait::async_trait;

use super::{GrpcClient, pb};
use crate::data::{HostAdmin, HostShardCreated, HostShardPage, HostShardQuery};
use crate::error::Result;

#[async_trait]
impl HostAdmin for GrpcClient {
    async fn list_host_shards(&self, query: &HostShardQuery) -> Result<HostShardPage> {
        query.check()?;
        Ok(rpc!(self, list_host_shards, pb::HostShardQuery::from(query.clone()))?.into())
    }

    async fn create_host_shard(&self, shard_id: &str) -> Result<HostShardCreated> {
        let request = pb::CreateHostShardRequest {
            shard_id: shard_id.to_owned(),
        };
        Ok(rpc!(self, create_host_shard, request)?.into())
    }
}
