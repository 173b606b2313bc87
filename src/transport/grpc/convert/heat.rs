//! The heat report and its parts, field for field.

use super::pb;
use crate::error::{Error, Result};
use crate::heat::{BucketHeat, HeatReport, KeyHeat, ShardHeat};

impl From<HeatReport> for pb::ShardHeat {
    fn from(report: HeatReport) -> Self {
        Self {
            keyspace: report.keyspace,
            map_version: report.map_version,
            virtual_bucket_count: report.virtual_bucket_count,
            half_life_seconds: report.half_life_seconds,
            total_requests: report.total_requests,
            total_rows: report.total_rows,
            shards: report
                .shards
                .into_iter()
                .map(|shard| pb::ShardHeatEntry {
                    shard_id: shard.shard_id,
                    requests: shard.requests,
                    rows: shard.rows,
                    share: shard.share,
                })
                .collect(),
            buckets: report
                .buckets
                .into_iter()
                .map(|bucket| pb::BucketHeat {
                    bucket: bucket.bucket,
                    shard_id: bucket.shard_id,
                    requests: bucket.requests,
                    rows: bucket.rows,
                })
                .collect(),
            keys: report
                .keys
                .into_iter()
                .map(|key| pb::KeyHeat {
                    keyspace: key.keyspace,
                    key: key.key,
                    bucket: key.bucket,
                    shard_id: key.shard_id,
                    pinned: key.pinned,
                    requests: key.requests,
                    rows: key.rows,
                })
                .collect(),
        }
    }
}

impl TryFrom<pb::ShardHeat> for HeatReport {
    type Error = Error;

    fn try_from(heat: pb::ShardHeat) -> Result<Self> {
        if heat.keyspace.is_empty() {
            return Err(Error::invalid_argument("gRPC message", "the heat names no keyspace"));
        }
        Ok(Self {
            keyspace: heat.keyspace,
            map_version: heat.map_version,
            virtual_bucket_count: heat.virtual_bucket_count,
            half_life_seconds: heat.half_life_seconds,
            total_requests: heat.total_requests,
            total_rows: heat.total_rows,
            shards: heat
                .shards
                .into_iter()
                .map(|shard| ShardHeat {
                    shard_id: shard.shard_id,
                    requests: shard.requests,
                    rows: shard.rows,
                    share: shard.share,
                })
                .collect(),
            buckets: heat
                .buckets
                .into_iter()
                .map(|bucket| BucketHeat {
                    bucket: bucket.bucket,
                    shard_id: bucket.shard_id,
                    requests: bucket.requests,
                    rows: bucket.rows,
                })
                .collect(),
            keys: heat
                .keys
                .into_iter()
                .map(|key| KeyHeat {
                    keyspace: key.keyspace,
                    key: key.key,
                    bucket: key.bucket,
                    shard_id: key.shard_id,
                    pinned: key.pinned,
                    requests: key.requests,
                    rows: key.rows,
                })
                .collect(),
        })
    }
}
