//! The data-host types: a page of shard ids with its counts, the query for it, and the answer
//! of creating a shard file.

use super::pb;
use crate::data::{HostShardCreated, HostShardPage, HostShardQuery};

impl From<HostShardQuery> for pb::HostShardQuery {
    fn from(query: HostShardQuery) -> Self {
        Self {
            offset: query.offset,
            limit: query.limit,
        }
    }
}

impl From<pb::HostShardQuery> for HostShardQuery {
    fn from(query: pb::HostShardQuery) -> Self {
        Self {
            offset: query.offset,
            limit: query.limit,
        }
    }
}

impl From<HostShardPage> for pb::HostShardPage {
    fn from(page: HostShardPage) -> Self {
        Self {
            shard_count: page.shard_count,
            open_shards: page.open_shards,
            max_open_shards: page.max_open_shards,
            shard_ids: page.shard_ids,
            next_offset: page.next_offset,
        }
    }
}

impl From<pb::HostShardPage> for HostShardPage {
    fn from(page: pb::HostShardPage) -> Self {
        Self {
            shard_count: page.shard_count,
            open_shards: page.open_shards,
            max_open_shards: page.max_open_shards,
            shard_ids: page.shard_ids,
            next_offset: page.next_offset,
        }
    }
}

impl From<HostShardCreated> for pb::HostShardCreated {
    fn from(created: HostShardCreated) -> Self {
        Self {
            shard_id: created.shard_id,
            created: created.created,
        }
    }
}

impl From<pb::HostShardCreated> for HostShardCreated {
    fn from(created: pb::HostShardCreated) -> Self {
        Self {
            shard_id: created.shard_id,
            created: created.created,
        }
    }
}
