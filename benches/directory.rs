//! Shard directories at scale (SPEC sections 12 and 18), each part against a baseline in the
//! same run:
//!
//! 1. A resolve by lookup key on a map with 1,000,000 directory entries, as routing by a lookup
//!    key runs it (`directory::locate`, borrowing from the map), against a route resolve on the
//!    same map: at most 3 times. The owned answer REST and gRPC build (`directory::resolve`) is
//!    shown beside it.
//! 2. `shardlite directory import` of 1,000,000 entries into a master file as one pending
//!    change, activated: at most 60 s (the baseline: the same import of 1,000 entries, and the
//!    seed of the map without entries).
//! 3. One entry upserted and activated on that catalog of 1,000,000 entries, against the same on
//!    a catalog of 10: at most 2 times, and at most 50 ms.
//! 4. The resident memory of a process that opens that catalog and holds its live map (a
//!    router's or a daemon's share of it; `VmRSS` of a child process of its own), against the
//!    same child on the catalog of 10 entries: at most 256 MiB.
//!
//! `cargo bench --bench directory`; `SHARDLITE_BENCH_ENTRIES` changes the entry count.

#[path = "../tests/support/mod.rs"]
pub mod support;

mod common;

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{Subject, Target, header, measure, ratio_line, settings, time};
use shardlite::client::ShardedClient;
use shardlite::data::{DirectoryImport, DirectoryImportEntry, DirectoryLookup, DirectoryMutation, DirectoryOperation};
use shardlite::map::{DirectoryDefinition, DirectoryEntry, EntryState, ShardMap, ShardingOptions};

/// Shards of the map, and the route keys its entries point to.
const SHARDS: usize = 16;
const ROUTES: usize = 10_000;

fn entry_count() -> usize {
    std::env::var("SHARDLITE_BENCH_ENTRIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000)
}

/// The 16-shard map of `tenants` with the directory `orders_by_id` (empty).
fn base_map() -> ShardingOptions {
    let mut map = support::many::pinned(SHARDS, 0);
    map.directories = vec![DirectoryDefinition::writable("orders_by_id", map.keyspace.clone())];
    map
}

/// `SO-{n}` → `tenant-{n % ROUTES}`, as the entries of a bulk load.
fn upserts(count: usize, keyspace: &str) -> Vec<DirectoryImportEntry> {
    (0..count)
        .map(|n| DirectoryImportEntry {
            directory_name: "orders_by_id".to_owned(),
            lookup_key: format!("SO-{n}"),
            target_keyspace: keyspace.to_owned(),
            route_key: format!("tenant-{}", n % ROUTES),
            state: None,
        })
        .collect()
}

/// The base map with `count` active entries, at version 1.
fn map_with_entries(count: usize) -> ShardMap {
    let mut options = base_map();
    let plain = ShardMap::new(options.clone()).expect("the base map is valid");
    let keyspace = options.keyspace.clone();
    options.directory_entries = (0..count)
        .map(|n| {
            let route_key = format!("tenant-{}", n % ROUTES);
            DirectoryEntry {
                directory_name: "orders_by_id".into(),
                lookup_key: format!("SO-{n}").into(),
                target_keyspace: keyspace.as_str().into(),
                shard_id: plain.resolve(&keyspace, &route_key).expect("resolves").shard_id.into(),
                route_key: route_key.into(),
                map_version: 1,
                state: EntryState::Active,
            }
        })
        .collect();
    ShardMap::new(options).expect("the map with entries is valid")
}

fn resident_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn resolve_part(count: usize) {
    let (rounds, ops) = settings(500_000);
    let map = map_with_entries(count);
    let keyspace = map.keyspace().to_owned();
    let lookup = DirectoryLookup::new("orders_by_id", format!("SO-{}", count / 2));
    let found = shardlite::directory::resolve(&map, &lookup).expect("the entry resolves");
    let route_key = found.entry.route_key.clone();
    let (map, keyspace, lookup, route_key) = (&map, keyspace.as_str(), &lookup, route_key.as_str());
    let mut subjects = vec![
        Subject::new("resolve by lookup key", |ops| {
            time(ops, |_| {
                black_box(
                    shardlite::directory::locate(map, black_box(lookup))
                        .expect("resolves")
                        .route
                        .shard_index,
                );
            })
        }),
        Subject::new("the same, owned (REST)", |ops| {
            time(ops, |_| {
                black_box(shardlite::directory::resolve(map, black_box(lookup)).expect("resolves"));
            })
        }),
        Subject::new("route resolve", |ops| {
            time(ops, |_| {
                black_box(
                    map.resolve(black_box(keyspace), black_box(route_key))
                        .expect("resolves")
                        .shard_index,
                );
            })
        }),
    ];
    header(&format!("directory resolve, {count} entries"), "ns per resolve");
    let results = measure(rounds, ops, &mut subjects);
    ratio_line(
        &results,
        "resolve by lookup key",
        "route resolve",
        Target::AtMost(3.0),
        false,
    );
    ratio_line(
        &results,
        "the same, owned (REST)",
        "route resolve",
        Target::AtMost(3.0),
        false,
    );
}

/// Seeds `dir/master.db` with the base map and imports `count` entries, activated; how long
/// the seed and the import took.
async fn seed_and_import(dir: &Path, count: usize) -> (Duration, Duration, ShardedClient) {
    let started = Instant::now();
    let master = support::seed_master(dir, base_map()).await;
    let seeded = started.elapsed();
    let sharded = ShardedClient::open(&master).await.expect("open the master");
    let entries = upserts(count, sharded.map().keyspace());
    let started = Instant::now();
    let mut import = DirectoryImport::new(entries);
    import.activate = true;
    let outcome = sharded.directories().import(&import).await.expect("import");
    assert!(outcome.succeeded(), "{outcome:?}");
    (seeded, started.elapsed(), sharded)
}

/// One new entry upserted and activated in one call.
async fn one_mutation(sharded: &ShardedClient, n: usize) -> Duration {
    let keyspace = sharded.map().keyspace().to_owned();
    let upsert = DirectoryMutation::new("orders_by_id", format!("NEW-{n}"))
        .route(keyspace, "tenant-1")
        .activating();
    let started = Instant::now();
    let result = sharded
        .directories()
        .mutate(DirectoryOperation::Upsert, &upsert)
        .await
        .expect("upsert");
    assert!(result.succeeded, "{result:?}");
    started.elapsed()
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// Set in the child that opens a catalog and reports its resident memory.
const HOLD: &str = "SHARDLITE_BENCH_HOLD";

/// The resident memory of a child process holding the live map of the master at `master`.
fn held_by_a_child(master: &Path) -> f64 {
    let output = std::process::Command::new(std::env::current_exe().expect("bench binary"))
        .env(HOLD, master)
        .output()
        .expect("run the child");
    assert!(output.status.success(), "the holding child failed: {}", output.status);
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("@rss "))
        .and_then(|v| v.trim().parse().ok())
        .expect("the child reports its memory")
}

async fn hold(master: &str) {
    let sharded = ShardedClient::open(master).await.expect("open the master");
    black_box(sharded.map().version());
    println!("@rss {}", resident_mib());
}

async fn catalog_part(count: usize) {
    let large_dir = support::temp_dir();
    let (seeded, imported, large) = seed_and_import(large_dir.path(), count).await;
    let held = held_by_a_child(&large_dir.path().join("master.db"));
    let small_dir = support::temp_dir();
    let (_, small_import, small) = seed_and_import(small_dir.path(), 10).await;
    let held_small = held_by_a_child(&small_dir.path().join("master.db"));
    let mut on_large = Vec::new();
    let mut on_small = Vec::new();
    for n in 0..5 {
        on_large.push(one_mutation(&large, n).await);
        on_small.push(one_mutation(&small, n).await);
    }
    let (on_large, on_small) = (median(on_large), median(on_small));
    println!("\n== directory catalog, {count} entries, master file");
    println!(
        "seed of the map without entries      {:>10.1} ms",
        seeded.as_secs_f64() * 1e3
    );
    println!(
        "import of {count} entries, activated {:>10.1} s   (target: at most 60 s; 10 entries: {:.1} ms)",
        imported.as_secs_f64(),
        small_import.as_secs_f64() * 1e3
    );
    println!(
        "one upsert + activation             {:>10.1} ms  on 10 entries {:.1} ms  ratio {:.2}x  (target: at most 2x and 50 ms)",
        on_large.as_secs_f64() * 1e3,
        on_small.as_secs_f64() * 1e3,
        on_large.as_secs_f64() / on_small.as_secs_f64()
    );
    println!(
        "resident memory holding the map     {held:>10.1} MiB (10 entries: {held_small:.1} MiB; target: at most 256 MiB)"
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    if let Ok(master) = std::env::var(HOLD) {
        runtime.block_on(hold(&master));
        return;
    }
    let count = entry_count();
    resolve_part(count);
    if common::is_child() {
        return;
    }
    runtime.block_on(catalog_part(count));
}
