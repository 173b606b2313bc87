//! Queries across shards (SPEC section 12), in two parts.
//!
//! 1. Latency of `ORDER BY … LIMIT 100` over 8 shards answered as one merged result
//!    (`query_all_shards`) against the plain read-only fan-out of the same query, which returns
//!    each shard's 100 rows unmerged (`execute_read_only_sql_on_all_shards`), in the same run:
//!    at most 1.3 times. Each shard holds 20,000 rows, with an index on the sort column.
//! 2. Peak memory of a `GROUP BY` (100 groups) over every row of 8 shards, at 250,000 and
//!    1,000,000 rows: the extra resident memory at the query's peak (`VmHWM` after resetting
//!    it through `/proc/self/clear_refs`, less `VmRSS` before the query), three queries at a
//!    time, after the same queries warmed every connection's page cache. It must not grow with
//!    the row count: the shards return one row per group, and the merge holds only those.
//!    Linux only; printed once, by the parent process.
//!
//! `cargo bench --bench cross_shard`

mod common;

use std::hint::black_box;
use std::path::Path;

use common::{Subject, Target, header, measure, ratio_line, settings};
use shardlite::client::{Params, ShardedClient};
use shardlite::map::{BucketRange, ShardDefinition, ShardMap, ShardingOptions};

const SHARDS: i64 = 8;
const ORDER_BY: &str = "SELECT id, customer, amount FROM orders ORDER BY amount DESC, id LIMIT 100";
const GROUP_BY: &str = "SELECT customer, count(*), sum(amount), avg(amount), min(id), max(id) \
                        FROM orders GROUP BY customer";

/// A map of [`SHARDS`] local shards in `dir`, buckets split evenly.
fn map(dir: &Path) -> ShardMap {
    let buckets: i64 = 16;
    let per = buckets / SHARDS;
    ShardMap::new(ShardingOptions {
        keyspace: "orders_by_month".into(),
        map_version: 1,
        virtual_bucket_count: buckets,
        shards: (0..SHARDS)
            .map(|i| {
                ShardDefinition::local(
                    format!("shard-{i}"),
                    dir.join(format!("shard-{i}.db")).to_string_lossy(),
                )
            })
            .collect(),
        bucket_ranges: (0..SHARDS)
            .map(|i| BucketRange::new(i * per, (i + 1) * per, format!("shard-{i}")))
            .collect(),
        exact_key_pins: Default::default(),
    })
    .expect("map")
}

/// A client on 8 fresh shards in `dir`, each with `rows_per_shard` orders of 100 customers.
async fn shards_with(dir: &Path, rows_per_shard: u64) -> ShardedClient {
    let client = ShardedClient::from_map(map(dir)).await.expect("eight shards");
    let schema = format!(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, amount REAL NOT NULL); \
         CREATE INDEX orders_amount ON orders (amount); \
         CREATE INDEX orders_customer ON orders (customer); \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows_per_shard}) \
         INSERT INTO orders SELECT i, 'customer-' || (i % 100), ((i * 7919) % 100003) / 100.0 FROM n;"
    );
    for result in client.execute_sql_on_all_shards(&schema).await.expect("schema") {
        assert!(result.error.is_none(), "{result:?}");
    }
    client
}

/// A `/proc/self/status` field in kB.
fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The extra resident memory, in kB, at the peak of `rounds` rounds of three concurrent runs of
/// the `GROUP BY` on `client`. The same rounds run first to warm up, so that every connection
/// the runs use (each shard's readers and borrowed connections) has its page cache filled before
/// the peak is reset: what is left is what the query itself holds.
fn group_by_peak_kb(runtime: &tokio::runtime::Runtime, client: &ShardedClient, rounds: usize) -> Option<u64> {
    let round = || {
        runtime.block_on(async {
            let run = || async {
                let result = client
                    .query_all_shards(GROUP_BY, Params::none())
                    .await
                    .expect("group by");
                assert_eq!(result.rows.len(), 100);
                black_box(result);
            };
            tokio::join!(run(), run(), run());
        });
    };
    for _ in 0..rounds {
        round();
    }
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    let before = status_kb("VmRSS:")?;
    for _ in 0..rounds {
        round();
    }
    Some(status_kb("VmHWM:")?.saturating_sub(before))
}

fn main() {
    let (rounds, ops) = settings(200);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, usize::from))
        .enable_all()
        .build()
        .expect("runtime");

    let dir = tempfile::tempdir().expect("temp dir");
    let eight = runtime.block_on(shards_with(dir.path(), 20_000));
    let merged = runtime
        .block_on(eight.query_all_shards(ORDER_BY, Params::none()))
        .expect("merged");
    assert_eq!(merged.rows.len(), 100);
    let mut subjects = vec![
        Subject::new("plain fan-out, 8 x 100 rows", |ops| {
            runtime.block_on(async {
                let started = std::time::Instant::now();
                for _ in 0..ops {
                    black_box(
                        eight
                            .execute_read_only_sql_on_all_shards(ORDER_BY)
                            .await
                            .expect("fan-out"),
                    );
                }
                started.elapsed()
            })
        }),
        Subject::new("query_all_shards, 100 rows", |ops| {
            runtime.block_on(async {
                let started = std::time::Instant::now();
                for _ in 0..ops {
                    black_box(eight.query_all_shards(ORDER_BY, Params::none()).await.expect("merged"));
                }
                started.elapsed()
            })
        }),
    ];
    let results = measure(rounds, ops, &mut subjects);
    header(
        "ORDER BY … LIMIT 100 over 8 shards: merged against the plain fan-out (latency)",
        "ns/op",
    );
    ratio_line(
        &results,
        "query_all_shards, 100 rows",
        "plain fan-out, 8 x 100 rows",
        Target::AtMost(1.3),
        false,
    );

    // Memory is measured once, by the parent (the measuring children run the part above).
    if std::env::var_os("SHARDLITE_BENCH_CHILD").is_some() {
        return;
    }
    println!();
    println!("GROUP BY (100 groups) over every row of 8 shards: extra resident memory at the peak");
    let mut peaks = Vec::new();
    for total in [250_000_u64, 1_000_000] {
        let dir = tempfile::tempdir().expect("temp dir");
        let client = runtime.block_on(shards_with(dir.path(), total / 8));
        match group_by_peak_kb(&runtime, &client, 10) {
            Some(kb) => {
                println!("  {total:>9} rows   {kb:>8} kB");
                peaks.push(kb);
            }
            None => println!("  {total:>9} rows   not measured: /proc/self/clear_refs or VmHWM unavailable here"),
        }
    }
    if let [small, large] = peaks[..] {
        println!(
            "  4x the rows: {:.2}x the peak (target: flat in the row count)",
            large as f64 / small.max(1) as f64
        );
    }
}
