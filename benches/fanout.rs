//! Read-only fan-out latency over 8 shards against 1 shard, in the same run: the diagnostic
//! `SELECT count(*) FROM orders` on every shard of a map, each shard holding the
//! same 1,000 rows, through the async client (`execute_read_only_sql_on_all_shards`) and the
//! blocking client. SPEC section 12: the 8-shard fan-out at most the latency of raw rusqlite
//! running the same query on the same 8 files one after another on one thread (≤ 1.0×).
//!
//! The 8 shards against 1 are shown too, as is the raw query on 8 files against 1: what 8
//! shards cost against 1 without shardlite, the work itself. Divided by the machine's cores it
//! is the lowest ratio any fan-out can reach here, however it spreads the shards, and the table
//! prints it.
//!
//! `cargo bench --bench fanout`

mod common;

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use common::{Subject, Target, header, measure, ratio_line, settings, time};
use shardlite::client::{ShardedClient, blocking};
use shardlite::map::{BucketRange, ShardDefinition, ShardMap, ShardingOptions};

const SQL: &str = "SELECT count(*) FROM orders";
const SCHEMA: &str = "CREATE TABLE orders (id INTEGER PRIMARY KEY, month TEXT NOT NULL, amount REAL NOT NULL); \
     WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) \
     INSERT INTO orders SELECT i, '2026-06', i * 1.5 FROM n;";

/// A map of `shards` local shards in `dir`, buckets split evenly.
fn map(dir: &Path, shards: i64) -> ShardMap {
    let buckets: i64 = 16;
    let per = buckets / shards;
    ShardMap::new(ShardingOptions {
        keyspace: "orders_by_month".into(),
        map_version: 1,
        virtual_bucket_count: buckets,
        shards: (0..shards)
            .map(|i| {
                ShardDefinition::local(
                    format!("shard-{i}"),
                    dir.join(format!("shard-{i}.db")).to_string_lossy(),
                )
            })
            .collect(),
        bucket_ranges: (0..shards)
            .map(|i| BucketRange::new(i * per, (i + 1) * per, format!("shard-{i}")))
            .collect(),
        exact_key_pins: Default::default(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    })
    .expect("map")
}

fn main() {
    let (rounds, ops) = settings(2_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, usize::from))
        .enable_all()
        .build()
        .expect("runtime");
    let one_dir = tempfile::tempdir().expect("temp dir");
    let eight_dir = tempfile::tempdir().expect("temp dir");
    let (one, eight) = runtime.block_on(async {
        let one = ShardedClient::from_map(map(one_dir.path(), 1))
            .await
            .expect("one shard");
        let eight = ShardedClient::from_map(map(eight_dir.path(), 8))
            .await
            .expect("eight shards");
        for client in [&one, &eight] {
            for result in client.query().execute_all(SCHEMA).await.expect("schema") {
                assert!(result.error.is_none(), "{result:?}");
            }
        }
        (one, eight)
    });
    let blocking_one = blocking::ShardedClient::from_map(map(one_dir.path(), 1)).expect("one shard");
    let blocking_eight = blocking::ShardedClient::from_map(map(eight_dir.path(), 8)).expect("eight shards");

    let open_raw = |dir: &Path, shards: usize| -> Vec<rusqlite::Connection> {
        (0..shards)
            .map(|i| rusqlite::Connection::open(dir.join(format!("shard-{i}.db"))).expect("raw connection"))
            .collect()
    };
    let raw_one = open_raw(one_dir.path(), 1);
    let raw_eight = open_raw(eight_dir.path(), 8);
    let raw = |conns: &[rusqlite::Connection], ops: u64| {
        time(ops, |_| {
            for conn in conns {
                let mut stmt = conn.prepare_cached(SQL).expect("prepare");
                black_box(stmt.query_row([], |row| row.get::<_, i64>(0)).expect("count"));
            }
        })
    };
    let fan_out = |client: &ShardedClient, ops: u64| {
        runtime.block_on(async {
            let started = Instant::now();
            for _ in 0..ops {
                let results = client.query().read_all(SQL).await.expect("fan-out");
                black_box(results);
            }
            started.elapsed()
        })
    };
    let mut subjects = vec![
        Subject::new("raw rusqlite, 1 file", |ops| raw(&raw_one, ops)),
        Subject::new("raw rusqlite, 8 files", |ops| raw(&raw_eight, ops)),
        Subject::new("async, 1 shard", |ops| fan_out(&one, ops)),
        Subject::new("async, 8 shards", |ops| fan_out(&eight, ops)),
        Subject::new("blocking, 1 shard", |ops| {
            time(ops, |_| {
                black_box(blocking_one.query().read_all(SQL).expect("fan-out"));
            })
        }),
        Subject::new("blocking, 8 shards", |ops| {
            time(ops, |_| {
                black_box(blocking_eight.query().read_all(SQL).expect("fan-out"));
            })
        }),
    ];
    let results = measure(rounds, ops, &mut subjects);
    header("read-only fan-out over 8 shards (latency)", "ns/op");
    ratio_line(
        &results,
        "async, 8 shards",
        "raw rusqlite, 8 files",
        Target::AtMost(1.0),
        false,
    );
    ratio_line(
        &results,
        "blocking, 8 shards",
        "raw rusqlite, 8 files",
        Target::AtMost(1.0),
        false,
    );
    ratio_line(&results, "async, 8 shards", "async, 1 shard", Target::None, false);
    ratio_line(&results, "blocking, 8 shards", "blocking, 1 shard", Target::None, false);
    ratio_line(
        &results,
        "raw rusqlite, 8 files",
        "raw rusqlite, 1 file",
        Target::None,
        false,
    );
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let (work, _, _) = results.ratio("raw rusqlite, 8 files", "raw rusqlite, 1 file");
    println!(
        "  the work of 8 shards is {work:.2}x that of 1 (raw rusqlite, one file after another); \
         spread over this machine's {cores} cores no fan-out can take less than {:.2}x",
        work / cores as f64
    );
}
