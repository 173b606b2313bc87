//! `shardlite serve` over thousands of shards under a descriptor limit of 1024 (soft and hard):
//! the figures of SPEC section 13. CI runs it at 2,000 shards; the full size is
//! `SHARDLITE_SCALE_SHARDS=10000 cargo test --release --all-features --test cli serve_many_shards -- --nocapture`.
//! Time bounds scale with the shard count; the thread and memory bounds do not.
#![cfg(all(feature = "cli", feature = "server"))]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::cli::seeded_with;
use crate::support::daemon::http_client;
use crate::support::many::pinned_tenants;
use crate::support::temp_dir;
use futures_util::StreamExt as _;
use serde_json::{Value, json};

const KEYSPACE_HEADER: &str = "X-CSharpDB-Keyspace";
const KEY_HEADER: &str = "X-CSharpDB-Shard-Key";

fn shard_count() -> usize {
    std::env::var("SHARDLITE_SCALE_SHARDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000)
}

/// What /proc says of a process: threads, descriptors, resident MiB.
fn usage(pid: u32) -> (usize, usize, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap()
    };
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    (
        usize::try_from(field("Threads:")).unwrap(),
        descriptors,
        field("VmRSS:") / 1024,
    )
}

struct Served {
    child: Child,
    base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the daemon with its descriptor limit at 1024, soft and hard.
fn serve(master: &Path) -> (Served, Duration) {
    let started = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -S -n 1024 && ulimit -H -n 1024 && exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_shardlite"))
        .args(["serve", "--listen", "127.0.0.1:0", "--master"])
        .arg(master)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(master.with_file_name("serve.log")).unwrap())
        .spawn()
        .expect("start the daemon");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let Some(base) = line.trim().strip_prefix("listening on ").map(str::to_owned) else {
        let _ = child.kill();
        let _ = child.wait();
        let log = std::fs::read_to_string(master.with_file_name("serve.log")).unwrap_or_default();
        panic!("the daemon did not start: {line:?} {log}");
    };
    (Served { child, base }, started.elapsed())
}

async fn post(http: &reqwest::Client, url: String, body: Value, key: Option<&str>) -> (u16, Value) {
    let mut request = http.post(url).json(&body);
    if let Some(key) = key {
        request = request.header(KEYSPACE_HEADER, "tenants").header(KEY_HEADER, key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Runs `sql` on every shard through `/api/sharding/sql/{endpoint}`; checks that each of the
/// `count` shards answered without an error, and returns how long it took.
async fn fan_out(http: &reqwest::Client, base: &str, endpoint: &str, sql: &str, count: usize) -> Duration {
    let started = Instant::now();
    let (status, body) = post(
        http,
        format!("{base}/api/sharding/sql/{endpoint}"),
        json!({ "sql": sql }),
        None,
    )
    .await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{body}");
    let results = body
        .as_array()
        .or_else(|| body["results"].as_array())
        .expect("per-shard results");
    assert_eq!(results.len(), count);
    let failed: Vec<_> = results.iter().filter(|r| !r["error"].is_null()).take(3).collect();
    assert!(failed.is_empty(), "{endpoint}: {failed:?}");
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_shards_under_a_descriptor_limit_of_1024() {
    let count = shard_count();
    let scale = count as f64 / 10_000.0;
    let scaled = |secs: f64| Duration::from_secs_f64((secs * scale).max(5.0));
    let dir = temp_dir();

    let seeding = Instant::now();
    let _ = seeded_with(dir.path(), &pinned_tenants(count, |i| format!("shards/s{i}.db")));
    let seed_time = seeding.elapsed();
    let (served, start_time) = serve(&dir.path().join("master.db"));
    let pid = served.child.id();
    let http = http_client();

    // Answers at once, before any shard opened.
    let answered = Instant::now();
    let health = http.get(format!("{}/healthz", served.base)).send().await.unwrap();
    assert!(health.status().is_success());
    let ready = start_time + answered.elapsed();
    let (threads, descriptors, resident) = usage(pid);
    println!(
        "{count} shards: seed {seed_time:?}; answering {ready:?} after start with {threads} threads, {descriptors} descriptors, {resident} MiB"
    );
    // SPEC 13's 2 s is a release build's figure at 10,000 shards, which `benches/many_shards.rs`
    // measures (docs/scale.md). This debug build on a CI host shared with other tests gets the
    // headroom the other timed steps get: what it proves is that the daemon answers without
    // opening a shard first (a few threads and descriptors, asserted below).
    assert!(ready < scaled(2.0), "answered {ready:?} after start");
    assert!(threads <= 64, "{threads} threads at start");
    assert!(resident <= 150, "{resident} MiB resident at start");

    // exec-all of a CREATE TABLE on every shard.
    let exec_all = fan_out(
        &http,
        &served.base,
        "execute-all",
        "CREATE TABLE items (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)",
        count,
    )
    .await;
    println!("exec-all CREATE TABLE on {count} shards: {exec_all:?}");
    // Each shard's first write creates and syncs its file, so this step follows the disk. A
    // debug build at 2,000 shards took 7 s alone and 11 to 17 s beside the other tests of this
    // binary and CI's checks, on the same 2-core machine and the same disk, before and after the
    // change that brought this bound here: the bound is twice SPEC 13's 60 s per 10,000, which
    // the release run in the module docs is held to.
    let exec_all_bound = if cfg!(debug_assertions) {
        scaled(120.0)
    } else {
        scaled(60.0)
    };
    assert!(exec_all <= exec_all_bound, "exec-all took {exec_all:?}");

    // A routed point-query load that touches every shard.
    let started = Instant::now();
    let errors: Vec<String> = futures_util::stream::iter(0..count)
        .map(|i| {
            let http = http.clone();
            let base = served.base.clone();
            async move {
                let key = format!("t{i}");
                let (status, body) = post(
                    &http,
                    format!("{base}/api/sql/execute"),
                    json!({"sql": "INSERT INTO items (n) VALUES (1)"}),
                    Some(&key),
                )
                .await;
                if status != 200 {
                    return Some(format!("{key} insert: {status} {body}"));
                }
                let (status, body) = post(
                    &http,
                    format!("{base}/api/sql/execute"),
                    json!({"sql": "SELECT count(*) FROM items"}),
                    Some(&key),
                )
                .await;
                (status != 200 || body["rows"][0][0] != 1).then(|| format!("{key} read: {status} {body}"))
            }
        })
        .buffer_unordered(32)
        .filter_map(|error| async move { error })
        .collect()
        .await;
    let load = started.elapsed();
    let (threads, descriptors, resident) = usage(pid);
    println!("point load over {count} shards: {load:?}; {threads} threads, {descriptors} descriptors, {resident} MiB");
    if !errors.is_empty() {
        let log = std::fs::read_to_string(dir.path().join("serve.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        panic!(
            "{} errors, the first: {:#?}\nthe daemon's log ends:\n{}",
            errors.len(),
            &errors[..errors.len().min(3)],
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    assert!(resident <= 400, "{resident} MiB resident after the load");
    assert!(descriptors < 1024, "{descriptors} descriptors");

    // A read-only fan-out over every shard.
    let read_all = fan_out(&http, &served.base, "read-all", "SELECT count(*) FROM items", count).await;
    let (_, _, resident) = usage(pid);
    println!("read-only fan-out over {count} shards: {read_all:?}; {resident} MiB");
    assert!(read_all <= scaled(15.0), "read-only fan-out took {read_all:?}");
    assert!(resident <= 400, "{resident} MiB resident after the fan-out");
    // The daemon still accepts and answers.
    assert!(
        http.get(format!("{}/healthz", served.base))
            .send()
            .await
            .unwrap()
            .status()
            .is_success()
    );
}
