//! Routing cost against its floor, in the same run: `ShardMap::resolve` on the seed's map (16
//! buckets, four shards, four pins) versus one SHA-256 of the same canonical route text, for a
//! pinned and an unpinned key. SPEC section 12: at most 1.5 times one SHA-256.
//!
//! The same on a map with a pin per tenant (SPEC section 13: 100,000 exact-key pins over 16
//! shards), for a pinned and an unpinned key, and against the same 16-shard map without pins.
//!
//! What counting a routed call in the heat adds to it: one known key, and a new key every call
//! (the key table's worst case), against the resolve it follows.
//!
//! `cargo bench --bench routing`

#[path = "../tests/support/mod.rs"]
pub mod support;

mod common;

use std::hint::black_box;

use common::{Subject, Target, header, measure, ratio_line, settings, time};
use sha2::{Digest, Sha256};
use shardlite::heat::{DEFAULT_HALF_LIFE, HeatRecorder};
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

/// Pins in the map with a pin per tenant, and its shards.
const MANY_PINS: usize = 100_000;
const PINNED_SHARDS: usize = 16;
/// Pinned in that map (`tenant-{n}` for n below [`MANY_PINS`]).
const MANY_PINNED_KEY: &str = "tenant-77777";
/// Not pinned in that map.
const MANY_UNPINNED_KEY: &str = "customer-77777";

fn main() {
    let (rounds, ops) = settings(2_000_000);
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
    let many_pins =
        ShardMap::new(crate::support::many::pinned(PINNED_SHARDS, MANY_PINS)).expect("the pinned map is valid");
    let no_pins = ShardMap::new(crate::support::many::pinned(PINNED_SHARDS, 0)).expect("the unpinned map is valid");
    let tenants = many_pins.keyspace().to_owned();
    for (key, source) in [
        (MANY_PINNED_KEY, RouteSource::Pin),
        (MANY_UNPINNED_KEY, RouteSource::BucketRange),
    ] {
        // Also builds the map's pin lookup, once, before timing.
        let resolution = many_pins.resolve(&tenants, key).expect("tenant keys resolve");
        assert_eq!(
            resolution.source, source,
            "benchmark key {key} no longer exercises {source:?}"
        );
    }
    let many_pinned_text = canonical_route_text(&tenants, MANY_PINNED_KEY).expect("not blank");
    let many_unpinned_text = canonical_route_text(&tenants, MANY_UNPINNED_KEY).expect("not blank");
    let (many_pins, no_pins, tenants) = (&many_pins, &no_pins, tenants.as_str());
    let pinned_text = canonical_route_text(KEYSPACE, PINNED_KEY).expect("seed keys are not blank");
    let unpinned_text = canonical_route_text(KEYSPACE, UNPINNED_KEY).expect("seed keys are not blank");
    let map = &map;
    let heat = HeatRecorder::new(map.bucket_count(), DEFAULT_HALF_LIFE);
    let heat = &heat;
    let distinct: Vec<String> = (0..100_000).map(|n| format!("customer-{n}")).collect();
    let distinct = &distinct;
    let mut subjects = vec![
        Subject::new("record heat, one key", |ops| {
            time(ops, |_| {
                heat.record(black_box(5), black_box(UNPINNED_KEY), black_box(1))
            })
        }),
        Subject::new("record heat, a new key each call", |ops| {
            time(ops, |op| {
                let key = &distinct[usize::try_from(op).unwrap_or(0) % distinct.len()];
                heat.record(black_box(5), black_box(key), black_box(1));
            })
        }),
        Subject::new("resolve, pinned key", |ops| {
            time(ops, |_| {
                black_box(
                    map.resolve(black_box(KEYSPACE), black_box(PINNED_KEY))
                        .expect("seed keys resolve")
                        .shard_index,
                );
            })
        }),
        Subject::new("sha256, pinned key", |ops| {
            time(ops, |_| {
                black_box(Sha256::digest(black_box(pinned_text.as_bytes())));
            })
        }),
        Subject::new("resolve, unpinned key", |ops| {
            time(ops, |_| {
                black_box(
                    map.resolve(black_box(KEYSPACE), black_box(UNPINNED_KEY))
                        .expect("seed keys resolve")
                        .shard_index,
                );
            })
        }),
        Subject::new("sha256, unpinned key", |ops| {
            time(ops, |_| {
                black_box(Sha256::digest(black_box(unpinned_text.as_bytes())));
            })
        }),
        Subject::new("resolve, 100k pins, pinned key", |ops| {
            time(ops, |_| {
                black_box(
                    many_pins
                        .resolve(black_box(tenants), black_box(MANY_PINNED_KEY))
                        .expect("tenant keys resolve")
                        .shard_index,
                );
            })
        }),
        Subject::new("sha256, 100k pins, pinned key", |ops| {
            time(ops, |_| {
                black_box(Sha256::digest(black_box(many_pinned_text.as_bytes())));
            })
        }),
        Subject::new("resolve, 100k pins, unpinned key", |ops| {
            time(ops, |_| {
                black_box(
                    many_pins
                        .resolve(black_box(tenants), black_box(MANY_UNPINNED_KEY))
                        .expect("tenant keys resolve")
                        .shard_index,
                );
            })
        }),
        Subject::new("sha256, 100k pins, unpinned key", |ops| {
            time(ops, |_| {
                black_box(Sha256::digest(black_box(many_unpinned_text.as_bytes())));
            })
        }),
        Subject::new("resolve, no pins, same key", |ops| {
            time(ops, |_| {
                black_box(
                    no_pins
                        .resolve(black_box(tenants), black_box(MANY_PINNED_KEY))
                        .expect("tenant keys resolve")
                        .shard_index,
                );
            })
        }),
    ];
    let results = measure(rounds, ops, &mut subjects);
    header(
        "route resolve against one SHA-256 of the canonical text (latency)",
        "ns/op",
    );
    ratio_line(
        &results,
        "resolve, pinned key",
        "sha256, pinned key",
        Target::AtMost(1.5),
        false,
    );
    ratio_line(
        &results,
        "resolve, unpinned key",
        "sha256, unpinned key",
        Target::AtMost(1.5),
        false,
    );
    header(
        "a pin per tenant: 100,000 exact-key pins over 16 shards (latency)",
        "ns/op",
    );
    ratio_line(
        &results,
        "resolve, 100k pins, pinned key",
        "sha256, 100k pins, pinned key",
        Target::AtMost(1.5),
        false,
    );
    ratio_line(
        &results,
        "resolve, 100k pins, unpinned key",
        "sha256, 100k pins, unpinned key",
        Target::AtMost(1.5),
        false,
    );
    ratio_line(
        &results,
        "resolve, 100k pins, pinned key",
        "resolve, no pins, same key",
        Target::None,
        false,
    );
    header(
        "counting a routed call in the heat, against resolving it (latency)",
        "ns/op",
    );
    for subject in ["record heat, one key", "record heat, a new key each call"] {
        ratio_line(&results, subject, "resolve, unpinned key", Target::None, false);
    }
}
