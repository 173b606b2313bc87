//! What a shard costs while nobody uses it: `shardlite serve` over maps of 1, 100, 1,000 and
//! 10,000 shards, under a descriptor limit of 1024 (soft and hard), measured from /proc once it
//! answers (threads, descriptors, resident memory), then again after one routed point query on
//! each of up to 1,000 shards. SPEC section 13: the cost follows the shards in use, not the
//! shards in the map.
//!
//! `cargo bench --all-features --bench many_shards` (`SHARDLITE_BENCH_SHARDS=1,100` for other sizes)

#[path = "../tests/support/mod.rs"]
pub mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_shardlite");

fn usage(pid: u32) -> (u64, usize, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the daemon's status");
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count);
    (field("Threads:"), descriptors, field("VmRSS:") / 1024)
}

fn seed(dir: &Path, count: usize) -> Duration {
    let map_file = dir.join("map.json");
    std::fs::write(
        &map_file,
        serde_json::to_string(&crate::support::many::pinned_tenants(count, |i| {
            format!("shards/s{i}.db")
        }))
        .expect("a map as JSON"),
    )
    .expect("write the map");
    let started = Instant::now();
    let out = Command::new(BINARY)
        .args(["seed", "--master"])
        .arg(dir.join("master.db"))
        .arg("--map")
        .arg(&map_file)
        .output()
        .expect("run seed");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    started.elapsed()
}

fn serve(dir: &Path) -> (Child, String, Duration) {
    let started = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -S -n 1024 && ulimit -H -n 1024 && exec "$0" "$@""#)
        .arg(BINARY)
        .args(["serve", "--listen", "127.0.0.1:0", "--master"])
        .arg(dir.join("master.db"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the daemon");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("its first line");
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .expect("an address")
        .to_owned();
    (child, base, started.elapsed())
}

fn main() {
    let sizes: Vec<usize> = std::env::var("SHARDLITE_BENCH_SHARDS")
        .unwrap_or_else(|_| "1,100,1000,10000".to_owned())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let http = crate::support::daemon::http_client();
    println!(
        "| shards | seed | answers after | idle: threads / descriptors / MiB | after a query on each of up to 1,000: threads / descriptors / MiB |"
    );
    println!("|---|---|---|---|---|");
    for count in sizes {
        let dir = tempfile::tempdir().expect("a temp dir");
        let seed_time = seed(dir.path(), count);
        let (mut child, base, start) = serve(dir.path());
        let pid = child.id();
        let asked = Instant::now();
        runtime.block_on(async {
            let health = http.get(format!("{base}/healthz")).send().await.expect("healthz");
            assert!(health.status().is_success());
        });
        let answered = start + asked.elapsed();
        std::thread::sleep(Duration::from_millis(300));
        let idle = usage(pid);
        runtime.block_on(async {
            for i in 0..count.min(1_000) {
                let response = http
                    .post(format!("{base}/api/sql/execute"))
                    .header("X-CSharpDB-Keyspace", "tenants")
                    .header("X-CSharpDB-Shard-Key", format!("t{i}"))
                    .json(&serde_json::json!({"sql": "SELECT count(*) FROM sqlite_master"}))
                    .send()
                    .await
                    .expect("a point query");
                assert!(
                    response.status().is_success(),
                    "{}",
                    response.text().await.unwrap_or_default()
                );
            }
        });
        let used = usage(pid);
        println!(
            "| {count} | {:.1} s | {:.0} ms | {} / {} / {} | {} / {} / {} |",
            seed_time.as_secs_f64(),
            answered.as_secs_f64() * 1000.0,
            idle.0,
            idle.1,
            idle.2,
            used.0,
            used.1,
            used.2
        );
        let _ = child.kill();
        let _ = child.wait();
    }
}
