//! What the point-in-time archive adds to a steady routed write load: two keyspaces of 8 shard
//! files in one process, one opened before the archive starts (so not archived) and one after,
//! written in turns, one routed insert at a time; prints each one's mean and 99th-percentile
//! write latency.
//!
//! `cargo run --release --example archive_latency [WRITES_PER_ROUND]` (default 2000).

use std::path::Path;
use std::time::{Duration, Instant};

use shardlite::catalog::Catalog;
use shardlite::client::{Params, ShardedClient, SqlData};
use shardlite::engine::archive::start_archive;
use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};

const SHARDS: usize = 8;
const ROUNDS: usize = 5;

#[tokio::main]
async fn main() -> shardlite::Result<()> {
    let writes: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(2000);
    let dir = tempfile::tempdir().map_err(|source| shardlite::Error::Io {
        what: "a temporary folder".into(),
        source,
    })?;
    let plain = keyspace(&dir.path().join("plain")).await?;
    start_archive(&dir.path().join("archive"))?;
    let archived = keyspace(&dir.path().join("archived")).await?;
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        without.extend(load(&plain, writes, round).await?);
        with.extend(load(&archived, writes, round).await?);
    }
    let (base, archive) = (summary(&mut without), summary(&mut with));
    println!("without archive: mean {:?}, p99 {:?}", base.0, base.1);
    println!("with archive:    mean {:?}, p99 {:?}", archive.0, archive.1);
    println!(
        "added: mean {:+.1} %, p99 {:+.1} %",
        percent(base.0, archive.0),
        percent(base.1, archive.1)
    );
    Ok(())
}

fn percent(base: Duration, other: Duration) -> f64 {
    (other.as_secs_f64() / base.as_secs_f64() - 1.0) * 100.0
}

fn summary(latencies: &mut [Duration]) -> (Duration, Duration) {
    latencies.sort();
    let total: Duration = latencies.iter().sum();
    let mean = total / u32::try_from(latencies.len().max(1)).unwrap_or(u32::MAX);
    let p99 = latencies[latencies.len() * 99 / 100];
    (mean, p99)
}

/// A keyspace of `SHARDS` files under `dir`, every shard opened and holding the table.
async fn keyspace(dir: &Path) -> shardlite::Result<ShardedClient> {
    let map = ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 8,
        shards: (0..SHARDS)
            .map(|i| ShardDefinition::local(format!("s{i}"), format!("s{i}.db")))
            .collect(),
        bucket_ranges: (0..SHARDS)
            .map(|i| {
                let i = i64::try_from(i).unwrap_or_default();
                BucketRange::new(i, i + 1, format!("s{i}"))
            })
            .collect(),
        exact_key_pins: Default::default(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    };
    let master = dir.join("master.db");
    Catalog::open(&master).await?.seed(map, false).await?;
    let sharded = ShardedClient::open(&master).await?;
    for i in 0..SHARDS {
        sharded
            .for_shard_id(&format!("s{i}"))?
            .execute_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)", Params::none())
            .await?;
    }
    Ok(sharded)
}

/// `writes` routed inserts, one at a time, spread over the keyspace; each one's latency.
async fn load(sharded: &ShardedClient, writes: usize, round: usize) -> shardlite::Result<Vec<Duration>> {
    let mut latencies = Vec::with_capacity(writes);
    for n in 0..writes {
        let route = shardlite::routing::RouteContext::new("tenants", format!("tenant-{round}-{n}"))?;
        let started = Instant::now();
        sharded
            .for_route(route)
            .execute_sql("INSERT INTO t (body) VALUES ('a row of some length')", Params::none())
            .await?;
        latencies.push(started.elapsed());
    }
    Ok(latencies)
}
