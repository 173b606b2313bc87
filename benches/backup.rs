//! Backup sets (SPEC section 20), in three parts, each measured in 3 processes (median and range).
//!
//! 1. A backup set of 8 shards (`create_backup`: the cut, the copies through SQLite's online
//!    backup API, their SHA-256, the content-addressed store, the catalog and the manifest) into
//!    a new backup place, so every shard is copied, against `sqlite3_backup` (rusqlite's backup
//!    API) of the same 8 files into new files, one after the other: at most 1.2 times.
//! 2. On 1,000 shards kept open, a second set after writing 1 of them: it copies 1 file (checked
//!    every round) and how long it takes, beside a set that copies all 1,000 for reference.
//! 3. How long the cut's fence holds (the longest fence and all of them summed) for sets after
//!    writing 8, 100 and 1,000 of the 1,000 shards, with the whole set's time.
//!
//! `cargo bench --bench backup`; `SHARDLITE_BENCH_ROUNDS` (default 5) and
//! `SHARDLITE_BENCH_PROCESSES` (default 3) change the rounds and measuring processes;
//! `SHARDLITE_BENCH_SHARD_MB` the size of each of the 8 shards (default 8 MiB).

mod common;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Subject, Target, header, measure, ratio_line};
use shardlite::backup::{BackupManifest, create_backup};
use shardlite::catalog::Catalog;
use shardlite::client::{Params, ShardedClient};
use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};
use tokio::runtime::Runtime;

const MANY: usize = 1_000;

/// Whether this process only starts the measuring ones.
fn parent() -> bool {
    common::processes() > 1
}

fn rounds() -> usize {
    std::env::var("SHARDLITE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

/// A keyspace of `shards` files `s{i}.db` under `dir`, each shard owning 4 buckets.
fn map(shards: usize) -> ShardingOptions {
    let bucket = |i: usize| i64::try_from(i * 4).expect("bucket");
    ShardingOptions {
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
    }
}

/// Seeds `dir/master.db` with [`map`] and opens it; each shard gets a table and `rows` rows of
/// 1 KiB.
async fn keyspace(dir: &Path, shards: usize, rows: usize) -> ShardedClient {
    let master = dir.join("master.db");
    Catalog::open(&master)
        .await
        .expect("catalog")
        .seed(map(shards), false)
        .await
        .expect("seed");
    let sharded = ShardedClient::open(&master).await.expect("open");
    for i in 0..shards {
        let shard = sharded.for_shard_id(&format!("s{i}")).expect("shard");
        shard
            .execute_sql(
                "CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)",
                Params::none(),
            )
            .await
            .expect("create");
        for chunk in 0..rows.div_ceil(500) {
            let n = (rows - chunk * 500).min(500);
            shard
                .execute_sql(
                    &format!(
                        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < {n}) \
                         INSERT INTO t (body) SELECT randomblob(1024) FROM n"
                    ),
                    Params::none(),
                )
                .await
                .expect("fill");
        }
    }
    sharded
}

/// Writes one row into each of the first `count` shards.
async fn write(sharded: &ShardedClient, count: usize) {
    for i in 0..count {
        sharded
            .for_shard_id(&format!("s{i}"))
            .expect("shard")
            .execute_sql("INSERT INTO t (body) VALUES (randomblob(64))", Params::none())
            .await
            .expect("write");
    }
}

fn copied(manifest: &BackupManifest) -> usize {
    manifest.shards.iter().filter(|s| s.copied).count()
}

/// A new folder under `dir` for each call.
fn fresh(dir: &Path, what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let path = dir.join(format!("{what}-{}", N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&path).expect("a folder");
    path
}

fn eight_shards(runtime: &Runtime) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mib: usize = std::env::var("SHARDLITE_BENCH_SHARD_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    // The parent of the measuring processes measures nothing: it sets up nothing either.
    let rows = if parent() { 0 } else { mib * 1024 };
    let sharded = runtime.block_on(keyspace(dir.path(), 8, rows));
    let files: Vec<PathBuf> = (0..8).map(|i| dir.path().join(format!("s{i}.db"))).collect();
    let out = dir.path().join("out");
    let mut subjects = [
        Subject::new("backup set of 8 shards", |_| {
            let place = fresh(&out, "set");
            let started = Instant::now();
            let (_, manifest) = runtime
                .block_on(create_backup(&sharded, &place, &|_| {}))
                .expect("a set");
            let took = started.elapsed();
            assert_eq!(copied(&manifest), 8);
            std::fs::remove_dir_all(&place).expect("clean");
            took
        }),
        Subject::new("sqlite3_backup of the 8 files", |_| {
            let place = fresh(&out, "plain");
            let started = Instant::now();
            for (i, file) in files.iter().enumerate() {
                let source = rusqlite::Connection::open(file).expect("open a shard");
                let mut copy = rusqlite::Connection::open(place.join(format!("s{i}.db"))).expect("a copy");
                rusqlite::backup::Backup::new(&source, &mut copy)
                    .and_then(|backup| backup.run_to_completion(i32::MAX, Duration::ZERO, None))
                    .expect("sqlite3_backup");
            }
            let took = started.elapsed();
            std::fs::remove_dir_all(&place).expect("clean");
            took
        }),
    ];
    let results = measure(rounds(), 1, &mut subjects);
    header(
        &format!("A backup set of 8 shards of {mib} MiB against sqlite3_backup of the same files"),
        "ns/set",
    );
    let ms = |name: &str| results.value(name) / 1e6;
    println!(
        "  {:<34} {:>9.1} ms   {:<26} {:>9.1} ms",
        "backup set of 8 shards",
        ms("backup set of 8 shards"),
        "sqlite3_backup of the 8 files",
        ms("sqlite3_backup of the 8 files")
    );
    ratio_line(
        &results,
        "backup set of 8 shards",
        "sqlite3_backup of the 8 files",
        Target::AtMost(1.2),
        false,
    );
}

fn thousand_shards(runtime: &Runtime) {
    let dir = tempfile::tempdir().expect("temp dir");
    let sharded = runtime.block_on(keyspace(dir.path(), if parent() { 1 } else { MANY }, 4));
    let place = dir.path().join("backups");
    if !parent() {
        runtime
            .block_on(create_backup(&sharded, &place, &|_| {}))
            .expect("a first set");
    }
    let last: RefCell<Option<BackupManifest>> = RefCell::new(None);
    let set_after = |written: usize| {
        runtime.block_on(write(&sharded, written));
        let started = Instant::now();
        let (_, manifest) = runtime
            .block_on(create_backup(&sharded, &place, &|_| {}))
            .expect("a set");
        let took = started.elapsed();
        assert_eq!(copied(&manifest), written, "a set after writing {written} shards");
        *last.borrow_mut() = Some(manifest);
        took
    };
    let fence = |all: bool| {
        let last = last.borrow();
        let manifest = last.as_ref().expect("a set before");
        Duration::from_micros(if all {
            manifest.fence_micros
        } else {
            manifest.longest_fence_micros
        })
    };
    let full = || {
        let other = fresh(dir.path(), "full");
        let started = Instant::now();
        let (_, manifest) = runtime
            .block_on(create_backup(&sharded, &other, &|_| {}))
            .expect("a full set");
        let took = started.elapsed();
        assert_eq!(copied(&manifest), MANY);
        std::fs::remove_dir_all(&other).expect("clean");
        took
    };
    let mut subjects = [
        Subject::new("set after writing 1", |_| set_after(1)),
        Subject::new("set copying all 1000", |_| full()),
        Subject::new("set after writing 8", |_| set_after(8)),
        Subject::new("longest fence, 8", |_| fence(false)),
        Subject::new("all fences, 8", |_| fence(true)),
        Subject::new("set after writing 100", |_| set_after(100)),
        Subject::new("longest fence, 100", |_| fence(false)),
        Subject::new("all fences, 100", |_| fence(true)),
        Subject::new("set after writing 1000", |_| set_after(MANY)),
        Subject::new("longest fence, 1000", |_| fence(false)),
        Subject::new("all fences, 1000", |_| fence(true)),
    ];
    let results = measure(rounds(), 1, &mut subjects);
    let line = |name: &str| {
        let (median, low, high) = results.spread(name);
        println!(
            "  {name:<34} {:>10.1} ms   [{:.1}-{:.1}]",
            median / 1e6,
            low / 1e6,
            high / 1e6
        );
    };
    println!();
    println!("A second set after writing 1 of 1,000 shards (copies 1 file, checked every round)");
    line("set after writing 1");
    line("set copying all 1000");
    println!();
    println!("The cut's fence, sets after writing 8, 100 and 1,000 of 1,000 shards");
    for written in ["8", "100", "1000"] {
        line(&format!("set after writing {written}"));
        line(&format!("longest fence, {written}"));
        line(&format!("all fences, {written}"));
    }
}

fn main() {
    common::default_processes(3);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    eight_shards(&runtime);
    thousand_shards(&runtime);
}
