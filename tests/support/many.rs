//! Large maps: thousands of shards, or a pin per tenant.

use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};

/// A map of `count` shards `s0`, `s1`, ... with files `shards/s{i}.db` (relative to the master's
/// folder), four buckets each; shard `i` is disabled when `disabled(i)`.
pub fn many_shards(count: usize, disabled: impl Fn(usize) -> bool) -> ShardingOptions {
    let bucket = |i: usize| i64::try_from(i * 4).expect("bucket in range");
    ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: bucket(count),
        shards: (0..count)
            .map(|i| ShardDefinition {
                enabled: !disabled(i),
                ..ShardDefinition::local(format!("s{i}"), format!("shards/s{i}.db"))
            })
            .collect(),
        bucket_ranges: (0..count)
            .map(|i| BucketRange::new(bucket(i), bucket(i + 1), format!("s{i}")))
            .collect(),
        exact_key_pins: Default::default(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    }
}

/// [`many_shards`] (all enabled) with `pins` exact-key pins `tenant-{n}`, spread over the shards.
pub fn pinned(shards: usize, pins: usize) -> ShardingOptions {
    let mut map = many_shards(shards, |_| false);
    map.exact_key_pins = (0..pins)
        .map(|n| (format!("tenant-{n}"), format!("s{}", n % shards)))
        .collect();
    map
}

/// A map of `count` shards `s0`, `s1`, … in keyspace `tenants`, shard `s{i}` at `path(i)`, one
/// bucket each, and tenant `t{i}` pinned to shard `s{i}`: a map of many small shards whose
/// every shard a test can reach by name.
pub fn pinned_tenants(count: usize, path: impl Fn(usize) -> String) -> ShardingOptions {
    let buckets = i64::try_from(count).expect("a shard count fits");
    ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: buckets,
        shards: (0..count)
            .map(|i| ShardDefinition::local(format!("s{i}"), path(i)))
            .collect(),
        bucket_ranges: (0..buckets)
            .map(|i| BucketRange::new(i, i + 1, format!("s{i}")))
            .collect(),
        exact_key_pins: (0..count).map(|i| (format!("t{i}"), format!("s{i}"))).collect(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    }
}

/// Creates table `accounts` on tenant `t{i}`'s shard of a [`pinned_tenants`] map, holding
/// account `i` with a balance of 100.
pub async fn open_account(sharded: &shardlite::client::ShardedClient, i: usize) {
    use shardlite::client::SqlData as _;
    sharded
        .for_route(super::route(&format!("t{i}")))
        .execute_sql(
            &format!("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL); INSERT INTO accounts VALUES ({i}, 100)"),
            shardlite::client::Params::none(),
        )
        .await
        .unwrap();
}

/// The balance of account `i` (see [`open_account`]), read through its route `t{i}`.
pub async fn balance(sharded: &shardlite::client::ShardedClient, i: usize) -> i64 {
    use shardlite::client::SqlData as _;
    let result = sharded
        .for_route(super::route(&format!("t{i}")))
        .execute_sql(
            &format!("SELECT balance FROM accounts WHERE id = {i}"),
            shardlite::client::Params::none(),
        )
        .await
        .unwrap();
    match result.rows[0][0] {
        shardlite::client::Value::Integer(n) => n,
        ref other => panic!("balance {other:?}"),
    }
}
