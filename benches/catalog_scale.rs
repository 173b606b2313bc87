//! The catalog at scale (SPEC section 14): a map of 100,000 shards and 1,000,000 pins in a
//! master file and in a three-member etcd on its default limits, against a 4-shard map in the
//! same run.
//!
//! For each store and map it measures the seed; one pin added (a patch) then activated, and one
//! shard's endpoint changed then activated (median, lowest and highest of 3 each); how long a
//! second router (another in-process client on the same catalog) takes to serve the activated
//! map; and the catalog's growth over 1,000 such changes (a master file). A `shardlite serve` on
//! the large master then gives the router's resident memory, and an in-process route resolve
//! on both maps the cost of a lookup.
//!
//! `cargo bench --all-features --bench catalog_scale` (`SHARDLITE_SCALE_SHARDS=10000` and
//! `SHARDLITE_SCALE_PINS=100000` for a smaller run, `SHARDLITE_SCALE_CHANGES` for the growth
//! run's length; `SHARDLITE_SCALE_NO_ROUTER=1` leaves out the resolve and the `serve` rows).
//! Needs an `etcd` binary on the PATH for the etcd rows.

#[path = "../tests/support/mod.rs"]
pub mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shardlite::catalog::Catalog;
use shardlite::client::ShardedClient;
use shardlite::data::{ActivationRequest, CatalogUpdateRequest};
use shardlite::map::MapPatch;
use support::etcd::EtcdCluster;
use support::large_catalog::large_options;

const BINARY: &str = env!("CARGO_BIN_EXE_shardlite");

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Median, lowest and highest.
fn spread(mut values: Vec<f64>) -> String {
    values.sort_by(f64::total_cmp);
    let median = values[values.len() / 2];
    format!("{median:.1} ms ({:.1} to {:.1})", values[0], values[values.len() - 1])
}

/// The figures of one store and map.
struct Figures {
    seed: Duration,
    pin: Vec<f64>,
    pin_apply: Vec<f64>,
    pin_validate: Vec<f64>,
    endpoint: Vec<f64>,
    follow: Vec<f64>,
}

/// Applies `patch` as version `version` and activates it; the time both took, and apply's.
async fn change(catalog: &Catalog, version: u64, patch: serde_json::Value) -> (Duration, Duration) {
    let patch = MapPatch::new(patch).expect("a patch");
    let started = Instant::now();
    let mut request = CatalogUpdateRequest::new(patch).expecting_version(version - 1);
    request.allow_ownership_change = true;
    let applied = catalog.apply_update(request).await.expect("apply");
    assert!(applied.applied, "{:?}", applied.validation.issues);
    let apply = started.elapsed();
    catalog
        .activate_pending(&ActivationRequest::new(version))
        .await
        .expect("activate");
    (started.elapsed(), apply)
}

/// Waits until `router` serves `version`; how long that took.
async fn served(router: &ShardedClient, version: u64, since: Instant) -> Duration {
    while router.map().version() < version {
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "the second router never served {version}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    since.elapsed()
}

async fn measure(master: &str, shards: usize, pins: usize) -> Figures {
    let catalog = Catalog::open(master).await.expect("open the catalog");
    let map = large_options(shards, pins);
    let started = Instant::now();
    catalog.seed(map, false).await.expect("seed");
    let seed = started.elapsed();
    let router = ShardedClient::open(master).await.expect("a second router");
    let mut figures = Figures {
        seed,
        pin: Vec::new(),
        pin_apply: Vec::new(),
        pin_validate: Vec::new(),
        endpoint: Vec::new(),
        follow: Vec::new(),
    };
    // The first change reads the maps; the three measured ones follow what changed.
    let mut version = 1;
    for round in 0..4 {
        version += 1;
        let patch = serde_json::json!({ "mapVersion": version, "exactKeyPins": { format!("bench-{round}"): "s1" } });
        let started = Instant::now();
        let request = CatalogUpdateRequest::new(MapPatch::new(patch).expect("a patch")).expecting_version(version - 1);
        catalog.validate_update(&request).await.expect("validate");
        let validate = started.elapsed();
        let (took, apply) = change(
            &catalog,
            version,
            serde_json::json!({ "mapVersion": version, "exactKeyPins": { format!("bench-{round}"): "s1" } }),
        )
        .await;
        let since = Instant::now();
        let follow = served(&router, version, since).await;
        version += 1;
        let endpoint = format!("http://127.0.0.1:{}", 30_000 + round);
        let (moved, _) = change(
            &catalog,
            version,
            serde_json::json!({ "mapVersion": version, "shards": { "s2": { "endpoint": endpoint } } }),
        )
        .await;
        // The second router follows it before the next change is timed (it shares the cores).
        served(&router, version, Instant::now()).await;
        if round > 0 {
            figures.pin.push(ms(took));
            figures.pin_apply.push(ms(apply));
            figures.pin_validate.push(ms(validate));
            figures.endpoint.push(ms(moved));
            figures.follow.push(ms(took) + ms(follow));
        }
    }
    figures
}

/// The pages the master file uses (its size less its free pages), its write-ahead log
/// checkpointed first.
fn used_bytes(path: &Path) -> u64 {
    let db = rusqlite::Connection::open(path).expect("open the master");
    let pragma = |name: &str| -> u64 {
        db.query_row(&format!("PRAGMA {name}"), [], |row| row.get::<_, i64>(0))
            .map_or(0, |v| u64::try_from(v).unwrap_or(0))
    };
    let _ = db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    (pragma("page_count") - pragma("freelist_count")) * pragma("page_size")
}

/// The master file's growth over `changes` more pin changes, each applied and activated.
async fn growth(master: &Path, changes: usize) -> (u64, Duration) {
    let catalog = Catalog::open(master).await.expect("open");
    let mut version = catalog.active_version().await.expect("version").expect("a map");
    let size = used_bytes;
    let before = size(master);
    let started = Instant::now();
    for n in 0..changes {
        version += 1;
        change(
            &catalog,
            version,
            serde_json::json!({ "mapVersion": version, "exactKeyPins": { format!("growth-{n}"): "s3" } }),
        )
        .await;
    }
    drop(catalog);
    (size(master).saturating_sub(before), started.elapsed())
}

/// `shardlite serve` on `master`: its resident memory once it answers, and how long that took.
fn router_memory(master: &Path) -> (u64, Duration) {
    let started = Instant::now();
    let mut child = Command::new(BINARY)
        .args(["serve", "--listen", "127.0.0.1:0", "--master"])
        .arg(master)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the daemon");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("its first line");
    let took = started.elapsed();
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse::<u64>().ok())
        .unwrap_or(0);
    let _ = child.kill();
    let _ = child.wait();
    (rss / 1024, took)
}

/// Nanoseconds per resolve of a pinned and of an unpinned key on the map at `master`.
async fn resolve_cost(master: &str) -> (f64, f64) {
    let router = ShardedClient::open(master).await.expect("open");
    let map = router.map();
    let per = |key_of: &dyn Fn(u64) -> String| {
        let keys: Vec<String> = (0..10_000).map(key_of).collect();
        let started = Instant::now();
        for _ in 0..20 {
            for key in &keys {
                std::hint::black_box(map.resolve("tenants", key).expect("resolve"));
            }
        }
        started.elapsed().as_secs_f64() * 1e9 / 200_000.0
    };
    (per(&|i| format!("tenant-{i}")), per(&|i| format!("customer-{i}")))
}

fn row(name: &str, large: &Figures, small: &Figures) {
    let median = |values: &[f64]| {
        let mut values = values.to_vec();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    println!("{name}");
    println!(
        "  seed: {:.2} s (4 shards: {:.3} s)",
        large.seed.as_secs_f64(),
        small.seed.as_secs_f64()
    );
    for (what, large, small) in [
        ("one pin added, then activated", &large.pin, &small.pin),
        ("  of which apply", &large.pin_apply, &small.pin_apply),
        (
            "  validate alone (not included)",
            &large.pin_validate,
            &small.pin_validate,
        ),
        ("one endpoint changed, then activated", &large.endpoint, &small.endpoint),
        (
            "a second router serves the new pin (from apply)",
            &large.follow,
            &small.follow,
        ),
    ] {
        println!(
            "  {what}: {} / 4 shards {} = {:.2}x",
            spread(large.clone()),
            spread(small.clone()),
            median(large) / median(small)
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let shards = env_usize("SHARDLITE_SCALE_SHARDS", 100_000);
    let pins = env_usize("SHARDLITE_SCALE_PINS", 1_000_000);
    let changes = env_usize("SHARDLITE_SCALE_CHANGES", 1_000);
    println!("catalog at scale: {shards} shards, {pins} pins, against 4 shards and no pins");
    let dir = tempfile::tempdir().expect("a temp dir");
    let large_master = dir.path().join("large.db");
    let small_master = dir.path().join("small.db");
    let large = measure(large_master.to_str().expect("utf-8"), shards, pins).await;
    let small = measure(small_master.to_str().expect("utf-8"), 4, 0).await;
    row("master file", &large, &small);

    let (grown, took) = growth(&large_master, changes).await;
    println!(
        "  {changes} pin changes (each applied and activated) grew the master by {:.2} MiB in {:.1} s",
        grown as f64 / (1024.0 * 1024.0),
        took.as_secs_f64()
    );
    if let Some(cluster) = EtcdCluster::start(3) {
        let large = measure(&cluster.url("large"), shards, pins).await;
        let small = measure(&cluster.url("small"), 4, 0).await;
        row("etcd, 3 members, default limits", &large, &small);
    } else {
        println!("etcd: skipped (no etcd binary)");
    }

    if std::env::var_os("SHARDLITE_SCALE_NO_ROUTER").is_some() {
        return;
    }
    let (pinned, unpinned) = resolve_cost(large_master.to_str().expect("utf-8")).await;
    let (small_pinned, small_unpinned) = resolve_cost(small_master.to_str().expect("utf-8")).await;
    println!(
        "a route resolve: {pinned:.0} ns pinned, {unpinned:.0} ns unpinned (4 shards: {small_pinned:.0} / {small_unpinned:.0} ns)"
    );
    let (rss, started) = router_memory(&large_master);
    println!(
        "`shardlite serve` on the large master: answers after {:.2} s, {rss} MiB resident",
        started.as_secs_f64()
    );
}
