//! What the heat view shows: decayed request and row counts by shard, bucket and route key.

use serde::{Deserialize, Serialize};

/// The heat of one keyspace: where requests went lately, counted with exponential decay.
///
/// Counts are decayed sums (a request `h` half-lives ago counts `2^-h`), so with a steady load
/// a count is about the rate per second times the half-life divided by ln 2. Shards are
/// credited as the active map routes today: a bucket's heat goes to its owner, and a tracked
/// pinned key's heat to the shard it is pinned to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HeatReport {
    /// The keyspace.
    pub keyspace: String,
    /// The map version the shards are credited by.
    pub map_version: u64,
    /// The number of virtual buckets.
    pub virtual_bucket_count: u32,
    /// How long a count takes to halve, in seconds.
    pub half_life_seconds: f64,
    /// Decayed requests of every routed call.
    pub total_requests: f64,
    /// Decayed rows those calls returned or changed.
    pub total_rows: f64,
    /// Every shard, hottest first.
    pub shards: Vec<ShardHeat>,
    /// Buckets with any heat, a row per serving shard, hottest first (at most [`MAX_LISTED_BUCKETS`](super::MAX_LISTED_BUCKETS)).
    pub buckets: Vec<BucketHeat>,
    /// The hottest route keys, hottest first (at most the recorder's slot count).
    pub keys: Vec<KeyHeat>,
}

/// One shard's heat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardHeat {
    /// The shard.
    pub shard_id: String,
    /// Decayed requests routed to it.
    pub requests: f64,
    /// Decayed rows those requests returned or changed.
    pub rows: f64,
    /// Its part of all requests, from 0 to 1.
    pub share: f64,
}

/// One bucket's heat on one shard. A bucket's calls are served by its owner, except those of a
/// key pinned to another shard: such a bucket has a row for each shard that served its calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BucketHeat {
    /// The bucket.
    pub bucket: u32,
    /// The shard that served these calls in the active map: the bucket's owner, or the pin of
    /// the pinned keys counted here.
    pub shard_id: String,
    /// Decayed requests of route keys in this bucket served by that shard.
    pub requests: f64,
    /// Decayed rows those requests returned or changed.
    pub rows: f64,
}

/// One hot route key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct KeyHeat {
    /// The keyspace.
    pub keyspace: String,
    /// The route key (trimmed).
    pub key: String,
    /// Its bucket.
    pub bucket: u32,
    /// The shard it resolves to in the active map.
    pub shard_id: String,
    /// Whether an exact pin places it.
    pub pinned: bool,
    /// Decayed requests it certainly made (the count is a lower bound).
    pub requests: f64,
    /// Decayed rows its requests returned or changed since it was last tracked.
    pub rows: f64,
}

impl HeatReport {
    /// The shard with the most requests, when any has some.
    pub fn hottest_shard(&self) -> Option<&ShardHeat> {
        self.shards
            .iter()
            .filter(|shard| shard.requests > 0.0)
            .max_by(|a, b| a.requests.total_cmp(&b.requests))
    }

    /// A shard's heat, by id (ignoring case).
    pub fn shard(&self, shard_id: &str) -> Option<&ShardHeat> {
        self.shards
            .iter()
            .find(|shard| shard.shard_id.eq_ignore_ascii_case(shard_id))
    }
}
