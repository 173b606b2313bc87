//! Queries across shards (SPEC section 12), in two parts.
//!
//! 1. Latency of `ORDER BY … LIMIT 100` over 8 shards answered as one merged result
//!    (`query_all_shards`) against the plain read-only fan-out of the per-shard query, which
//!    returns each shard's 100 rows unmerged (`execute_read_only_sql_on_all_shards`), in the same
//!    run: at most 1.3 times. The per-shard query is checked to be the very text the baseline
//!    runs, so both sides do the same work on the shards. Each shard holds 20,000 rows, with an
//!    index on the sort column.
//! 2. Peak memory of a `GROUP BY` (100 groups) over every row of 8 shards, at 125,000 and
//!    1,000,000 rows (`SHARDLITE_BENCH_GROUP_ROWS=a,b,…` for others): the extra resident memory
//!    at the query's peak (`VmHWM` after resetting it through `/proc/self/clear_refs`, less
//!    `VmRSS` before the query), three queries at a time. It must not grow with the row count:
//!    the shards return one row per group, and the merge holds only those. Before measuring,
//!    the same queries run until resident memory stops growing: each shard connection's page
//!    cache fills up to SQLite's `cache_size` over the first rounds (at 1,000,000 rows a shard
//!    file is larger than one cache, so that takes a few dozen rounds), and that memory is held
//!    by the connections, whatever runs on them, not by the query. The resident memory before
//!    the query is printed too. Linux only; printed once, by the parent process.
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
        directories: Vec::new(),
        directory_entries: Vec::new(),
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
    for result in client.query().execute_all(&schema).await.expect("schema") {
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

/// Rounds of three concurrent runs of the `GROUP BY` on `client`.
fn group_by_rounds(runtime: &tokio::runtime::Runtime, client: &ShardedClient, rounds: usize) {
    for _ in 0..rounds {
        runtime.block_on(async {
            let run = || async {
                let result = client.query().merged(GROUP_BY, Params::none()).await.expect("group by");
                assert_eq!(result.rows.len(), 100);
                black_box(result);
            };
            tokio::join!(run(), run(), run());
        });
    }
}

/// What [`group_by_peak`] measured, in kB.
struct Peak {
    /// Resident memory before the measured rounds.
    resident: u64,
    /// Resident memory at the peak of the measured rounds, beyond `resident`.
    extra: u64,
    /// Warm-up rounds run before.
    warm_up: usize,
}

/// The extra resident memory at the peak of `rounds` rounds of the `GROUP BY` on `client`.
///
/// The same rounds run first, at least twice as many, until resident memory grew by less than
/// 256 kB over the last ten (at most 200 rounds), so that every connection the runs use (each
/// shard's readers and borrowed connections) has filled its page cache: what is left is what
/// the query holds.
fn group_by_peak(runtime: &tokio::runtime::Runtime, client: &ShardedClient, rounds: usize) -> Option<Peak> {
    let mut resident = vec![status_kb("VmRSS:")?];
    while resident.len() <= 200 {
        group_by_rounds(runtime, client, 1);
        resident.push(status_kb("VmRSS:")?);
        let settled = resident.len() > 2 * rounds
            && resident
                .get(resident.len() - 11..)
                .is_some_and(|last| last[10].saturating_sub(last[0]) < 256);
        if settled {
            break;
        }
    }
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    let before = status_kb("VmRSS:")?;
    group_by_rounds(runtime, client, rounds);
    Some(Peak {
        resident: before,
        extra: status_kb("VmHWM:")?.saturating_sub(before),
        warm_up: resident.len() - 1,
    })
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
        .block_on(eight.query().merged(ORDER_BY, Params::none()))
        .expect("merged");
    assert_eq!(merged.rows.len(), 100);
    let per_shard = shardlite::query::plan(ORDER_BY, Params::none())
        .and_then(|plan| plan.shard_statement(None))
        .expect("per-shard query");
    assert_eq!(per_shard.0, ORDER_BY, "the baseline runs the per-shard query");
    let mut subjects = vec![
        Subject::new("plain fan-out, 8 x 100 rows", |ops| {
            runtime.block_on(async {
                let started = std::time::Instant::now();
                for _ in 0..ops {
                    black_box(eight.query().read_all(ORDER_BY).await.expect("fan-out"));
                }
                started.elapsed()
            })
        }),
        Subject::new("query_all_shards, 100 rows", |ops| {
            runtime.block_on(async {
                let started = std::time::Instant::now();
                for _ in 0..ops {
                    black_box(eight.query().merged(ORDER_BY, Params::none()).await.expect("merged"));
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
    let totals: Vec<u64> = std::env::var("SHARDLITE_BENCH_GROUP_ROWS")
        .ok()
        .map(|list| list.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![125_000, 1_000_000]);
    let mut peaks = Vec::new();
    for total in totals {
        let dir = tempfile::tempdir().expect("temp dir");
        let client = runtime.block_on(shards_with(dir.path(), total / 8));
        match group_by_peak(&runtime, &client, 10) {
            Some(peak) => {
                println!(
                    "  {total:>9} rows   {:>8} kB extra at the peak   ({} kB resident before, after {} warm-up rounds)",
                    peak.extra, peak.resident, peak.warm_up
                );
                peaks.push((total, peak.extra));
            }
            None => println!("  {total:>9} rows   not measured: /proc/self/clear_refs or VmHWM unavailable here"),
        }
    }
    if let (Some((fewest, small)), Some((most, large))) = (peaks.first(), peaks.last())
        && most > fewest
    {
        println!(
            "  {:.0}x the rows: {:+} kB at the peak (target: flat in the row count)",
            *most as f64 / *fewest as f64,
            i128::from(*large) - i128::from(*small)
        );
    }
}
