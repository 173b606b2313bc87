//! The order-history map the examples (and the tests) share: keyspace `orders_by_month`, 16
//! buckets over four local shard files, `shard-N` owning buckets `[4N, 4N+4)`, and four months
//! pinned to a shard each.

use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};

/// The keyspace of the order-history map.
pub const ORDERS_KEYSPACE: &str = "orders_by_month";

/// The four-shard `orders_by_month` map. Its shard files, `shard-0.db` .. `shard-3.db`, are
/// relative paths, so they live beside whichever master catalog the map is seeded into.
pub fn orders_map() -> ShardingOptions {
    let file = |i: u32| format!("shard-{i}.db");
    ShardingOptions {
        keyspace: ORDERS_KEYSPACE.to_owned(),
        map_version: 1,
        virtual_bucket_count: 16,
        shards: (0..4)
            .map(|i| ShardDefinition::local(format!("shard-{i}"), file(i)))
            .collect(),
        bucket_ranges: (0..4)
            .map(|i| BucketRange::new(i * 4, i * 4 + 4, format!("shard-{i}")))
            .collect(),
        exact_key_pins: [
            ("2026-06", "shard-0"),
            ("2026-05", "shard-1"),
            ("2026-04", "shard-2"),
            ("2025-12", "shard-3"),
        ]
        .into_iter()
        .map(|(key, shard)| (key.to_owned(), shard.to_owned()))
        .collect(),
    }
}
