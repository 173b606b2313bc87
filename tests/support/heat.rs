//! A skewed workload for the heat tests: one hot route key and one hot bucket range, both on
//! the first of three shards, over a little background load everywhere.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde_json::json;
use shardlite::map::{BucketRange, ShardDefinition, ShardMap, ShardingOptions};

use super::daemon::{Daemon, http_client, routed};
use super::{by_hand, path_str, seed_master};

/// The buckets the workload makes hot (all owned by `s0`).
pub const HOT_BUCKETS: Range<u32> = 0..8;

/// Keyspace `tenants`, version 1, 64 buckets: `s0` owns [0, 22), `s1` [22, 43), `s2` [43, 64).
pub fn skewed_options(dir: &Path) -> ShardingOptions {
    ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 64,
        shards: ["s0", "s1", "s2"]
            .iter()
            .map(|id| ShardDefinition::local(*id, path_str(&dir.join(format!("{id}.db")))))
            .collect(),
        bucket_ranges: vec![
            BucketRange::new(0, 22, "s0"),
            BucketRange::new(22, 43, "s1"),
            BucketRange::new(43, 64, "s2"),
        ],
        exact_key_pins: Default::default(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    }
}

/// [`skewed_options`] seeded into `dir/master.db`, with a `notes` table on every shard.
pub async fn skewed_master(dir: &Path) -> PathBuf {
    let master = seed_master(dir, skewed_options(dir)).await;
    for shard in ["s0", "s1", "s2"] {
        by_hand(dir, shard, "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)");
    }
    master
}

/// Which keys the workload calls, and how often.
pub struct SkewedWorkload {
    /// The hot key: on `s0`, outside [`HOT_BUCKETS`].
    pub whale: String,
    /// Its bucket.
    pub whale_bucket: u32,
    /// Three keys in each bucket of [`HOT_BUCKETS`].
    pub hot_range_keys: Vec<String>,
    /// One key per call of background load, anywhere.
    pub background: Vec<String>,
}

impl SkewedWorkload {
    /// The whale's calls.
    pub const WHALE_CALLS: usize = 120;
    /// Calls of each hot-range key.
    pub const HOT_RANGE_CALLS: usize = 6;

    /// The keys for `map` (the map of [`skewed_options`]).
    pub fn new(map: &ShardMap) -> Self {
        let bucket = |key: &str| map.resolve("tenants", key).expect("the key resolves").bucket;
        let (whale, whale_bucket) = (0..)
            .map(|n| format!("whale-{n}"))
            .map(|key| {
                let b = bucket(&key);
                (key, b)
            })
            .find(|(_, b)| (HOT_BUCKETS.end..22).contains(b))
            .expect("a key on s0 outside the hot range");
        let mut hot_range_keys = Vec::new();
        for target in HOT_BUCKETS {
            let keys = (0..)
                .map(|n| format!("hot-{n}"))
                .filter(|key| bucket(key) == target)
                .take(3);
            hot_range_keys.extend(keys);
        }
        let background = (0..64).map(|n| format!("bg-{n}")).collect();
        Self {
            whale,
            whale_bucket,
            hot_range_keys,
            background,
        }
    }

    /// Every call's route key, interleaved.
    pub fn calls(&self) -> Vec<&str> {
        let mut calls = Vec::new();
        for round in 0..Self::WHALE_CALLS {
            calls.push(self.whale.as_str());
            if round < Self::HOT_RANGE_CALLS {
                calls.extend(self.hot_range_keys.iter().map(String::as_str));
            }
            if round < self.background.len() {
                calls.push(self.background[round].as_str());
            }
        }
        calls.extend(self.background.iter().skip(Self::WHALE_CALLS).map(String::as_str));
        calls
    }

    /// Runs every call against `daemon` over REST: one routed `INSERT` each.
    pub async fn run(&self, daemon: &Daemon) {
        let http = http_client();
        for key in self.calls() {
            let response = routed(http.post(daemon.url("/api/sql/execute")), key)
                .json(&json!({ "sql": "INSERT INTO notes(body) VALUES ('x')" }))
                .send()
                .await
                .expect("the daemon answers");
            assert!(response.status().is_success(), "{key}: {}", response.status());
        }
    }
}
