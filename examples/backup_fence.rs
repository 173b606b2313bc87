//! How long a backup's fence holds activations and atomic-commit decisions back, on a keyspace
//! of 1,000 shard files kept open by this process (as a daemon keeps them): a first set copies
//! every shard, then sets after writing 8, 100 and 1,000 of them; each prints how many shards it
//! copied and how long its fence held.
//!
//! `cargo run --example backup_fence [SHARDS]` (default 1000).

use std::time::Instant;

use shardlite::backup::{BackupStep, create_backup};
use shardlite::catalog::Catalog;
use shardlite::client::{Params, ShardedClient};
use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};

#[tokio::main]
async fn main() -> shardlite::Result<()> {
    let shards: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(1000);
    let dir = tempfile::tempdir().map_err(|source| shardlite::Error::Io {
        what: "a temporary folder".into(),
        source,
    })?;
    let bucket = |i: usize| i64::try_from(i * 4).unwrap_or(i64::MAX);
    let map = ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: bucket(shards),
        shards: (0..shards)
            .map(|i| ShardDefinition::local(format!("s{i}"), format!("s{i}.db")))
            .collect(),
        bucket_ranges: (0..shards)
            .map(|i| BucketRange::new(bucket(i), bucket(i + 1), format!("s{i}")))
            .collect(),
        exact_key_pins: Default::default(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    };
    let master = dir.path().join("master.db");
    Catalog::open(&master).await?.seed(map, false).await?;
    let sharded = ShardedClient::open(&master).await?;
    write(&sharded, shards, 0).await?;
    let place = dir.path().join("backups");
    for (round, written) in [(0, shards), (1, 8), (2, 100), (3, 1000)] {
        if written > shards {
            continue;
        }
        if round > 0 {
            write(&sharded, written, round).await?;
        }
        let started = Instant::now();
        let (_, manifest) = create_backup(&sharded, &place, &|step: &BackupStep| {
            if let BackupStep::Restarted { .. } = step {
                eprintln!("{step:?}");
            }
        })
        .await?;
        println!(
            "{written:>5} written of {shards}: copied {:>5}, fences {:>8} µs in all, longest {:>8} µs, set {:>6} ms",
            manifest.shards.iter().filter(|s| s.copied).count(),
            manifest.fence_micros,
            manifest.longest_fence_micros,
            started.elapsed().as_millis()
        );
    }
    Ok(())
}

/// Writes a row into each of the first `count` shards (creating the table in round 0).
async fn write(sharded: &ShardedClient, count: usize, round: i64) -> shardlite::Result<()> {
    for i in 0..count {
        let shard = sharded.for_shard_id(&format!("s{i}"))?;
        if round == 0 {
            shard
                .execute_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)", Params::none())
                .await?;
        }
        shard
            .execute_sql(
                &format!("INSERT INTO t (body) VALUES ('round {round}')"),
                Params::none(),
            )
            .await?;
    }
    Ok(())
}
