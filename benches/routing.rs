//! Routing cost against its floor: `ShardMap::resolve` on the seed's map (16 buckets, four
//! shards, four pins) versus one SHA-256 of the same canonical route text.
//!
//! SPEC section 10 asks that routing add little beyond one SHA-256; compare the `resolve` and
//! `sha256_canonical` groups for the same key.

use std::hint::black_box;

use criterion::{Criterion, criterion_main};
use sha2::{Digest, Sha256};
use shardlite::map::ShardMap;
use shardlite::routing::{RouteSource, canonical_route_text};

/// The map of `seed/api-level-sharding.txt`.
const SEED_MAP: &str = r#"{
    "keyspace": "orders_by_month",
    "mapVersion": 1,
    "virtualBucketCount": 16,
    "shards": [
        { "shardId": "shard-0", "dataSource": "data/shard-0.db" },
        { "shardId": "shard-1", "dataSource": "data/shard-1.db" },
        { "shardId": "shard-2", "dataSource": "data/shard-2.db" },
        { "shardId": "shard-3", "dataSource": "data/shard-3.db" }
    ],
    "bucketRanges": [
        { "startBucketInclusive": 0, "endBucketExclusive": 4, "shardId": "shard-0" },
        { "startBucketInclusive": 4, "endBucketExclusive": 8, "shardId": "shard-1" },
        { "startBucketInclusive": 8, "endBucketExclusive": 12, "shardId": "shard-2" },
        { "startBucketInclusive": 12, "endBucketExclusive": 16, "shardId": "shard-3" }
    ],
    "exactKeyPins": {
        "2026-06": "shard-0",
        "2026-05": "shard-1",
        "2026-04": "shard-2",
        "2025-12": "shard-3"
    }
}"#;

const KEYSPACE: &str = "orders_by_month";
/// Pinned to shard-0 by the seed map.
const PINNED_KEY: &str = "2026-06";
/// Not pinned: resolved through its bucket.
const UNPINNED_KEY: &str = "2024-01";

fn routing(c: &mut Criterion) {
    let map = ShardMap::from_json(SEED_MAP).expect("the seed map is valid");
    let cases = [
        ("pinned", PINNED_KEY, RouteSource::Pin),
        ("unpinned", UNPINNED_KEY, RouteSource::BucketRange),
    ];
    for (_, key, source) in cases {
        let resolution = map.resolve(KEYSPACE, key).expect("seed keys resolve");
        assert_eq!(
            resolution.source, source,
            "benchmark key {key} no longer exercises {source:?}"
        );
    }

    let mut resolve = c.benchmark_group("resolve");
    for (name, key, _) in cases {
        resolve.bench_function(name, |b| {
            b.iter(|| {
                map.resolve(black_box(KEYSPACE), black_box(key))
                    .expect("seed keys resolve")
                    .shard_index
            });
        });
    }
    resolve.finish();

    let mut sha = c.benchmark_group("sha256_canonical");
    for (name, key, _) in cases {
        let canonical = canonical_route_text(KEYSPACE, key).expect("seed keys are not blank");
        let bytes = canonical.as_bytes();
        sha.bench_function(name, |b| b.iter(|| Sha256::digest(black_box(bytes))));
    }
    sha.finish();
}

/// `criterion_group!` defines a public, undocumented function; keep it out of the crate root.
mod harness {
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::routing);
}

criterion_main!(harness::benches);
