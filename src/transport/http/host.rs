//! A data host's operations over REST: `GET /api/host/shards` and `PUT /api/host/shards/{id}`.

use async_trait::async_trait;

use super::HttpClient;
use crate::data::{HostAdmin, HostShardCreated, HostShardPage, HostShardQuery};
use crate::error::Result;

#[async_trait]
impl HostAdmin for HttpClient {
    async fn list_host_shards(&self, query: &HostShardQuery) -> Result<HostShardPage> {
        query.check()?;
        self.json(self.get(&["host", "shards"]).query(query)).await
    }

    async fn create_host_shard(&self, shard_id: &str) -> Result<HostShardCreated> {
        self.json(self.put(&["host", "shards", shard_id])).await
    }
}
