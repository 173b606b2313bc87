//! The point-in-time archive under 1,000 shards of which 10 are written: it holds descriptors
//! (its log and its two connections) for those 10 only, its thread runs only while they are
//! written, and it lets go of them once they are quiet. Reading every shard costs it nothing.
#![cfg(all(feature = "cli", feature = "server"))]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::cli::{seeded_with, shardlite, stderr};
use crate::support::daemon::http_client;
use crate::support::many::pinned_tenants;
use crate::support::serve::ServeProcess;
use crate::support::temp_dir;

const SHARDS: usize = 1_000;
const WRITTEN: usize = 10;

/// The daemon's descriptors: all of them, and those on files under `archive`.
fn descriptors(pid: u32, archive: &Path) -> (usize, usize) {
    let links: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .collect();
    let archived = links.iter().filter(|link| link.starts_with(archive)).count();
    (links.len(), archived)
}

/// Whether the archive's thread runs in the daemon.
fn archive_thread(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .any(|task| {
            std::fs::read_to_string(task.path().join("comm")).is_ok_and(|name| name.starts_with("shardlite-arch"))
        })
}

async fn post(http: &reqwest::Client, url: String, body: Value, key: Option<&str>) -> (u16, Value) {
    let mut request = http.post(url).json(&body);
    if let Some(key) = key {
        request = request
            .header("X-CSharpDB-Keyspace", "tenants")
            .header("X-CSharpDB-Shard-Key", key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_archive_holds_descriptors_for_the_written_shards_only() {
    let dir = temp_dir();
    let connection = seeded_with(dir.path(), &pinned_tenants(SHARDS, |i| format!("shards/s{i}.db")));
    let out = shardlite(&[
        "exec-all",
        "-c",
        &connection,
        "CREATE TABLE items (id INTEGER PRIMARY KEY)",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let archive = dir.path().join("archive");
    let master = dir.path().join("master.db");
    let daemon = ServeProcess::start(&[
        "--listen",
        "127.0.0.1:0",
        "--master",
        master.to_str().unwrap(),
        "--archive-dir",
        archive.to_str().unwrap(),
    ]);
    let archive = std::fs::canonicalize(&archive).unwrap();
    let pid = daemon.pid();
    let http = http_client();

    // Every shard opened, none written: the archive has nothing open and no thread.
    let (status, body) = post(
        &http,
        daemon.url("/api/sharding/sql/read-all"),
        json!({"sql": "SELECT count(*) FROM items"}),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (all_read, archived_read) = descriptors(pid, &archive);
    assert_eq!(archived_read, 0);
    assert!(!archive_thread(pid), "no archive thread while nothing is written");

    for round in 0..3 {
        for i in 0..WRITTEN {
            let (status, body) = post(
                &http,
                daemon.url("/api/sql/execute"),
                json!({"sql": format!("INSERT INTO items (id) VALUES ({round})")}),
                Some(&format!("t{i}")),
            )
            .await;
            assert_eq!(status, 200, "{body}");
        }
    }
    let (all_written, archived_written) = descriptors(pid, &archive);
    println!(
        "{SHARDS} shards open, {WRITTEN} written: {all_read} descriptors before the writes, {all_written} after ({archived_written} on archive files)"
    );
    assert_eq!(archived_written, WRITTEN, "one log per written shard");
    // Its log and two connections (the file and its WAL each) per written shard; a few more
    // for the HTTP connections.
    assert!(
        all_written <= all_read + WRITTEN * 5 + 5,
        "{all_read} descriptors before, {all_written} after writing {WRITTEN} shards"
    );
    assert!(archive_thread(pid));
    let generations = std::fs::read_dir(archive.join("files"))
        .unwrap()
        .flatten()
        .filter(|folder| {
            std::fs::read_dir(folder.path())
                .unwrap()
                .flatten()
                .any(|f| f.file_name().to_string_lossy().ends_with(".base"))
        })
        .count();
    assert_eq!(generations, WRITTEN);

    // Quiet again: the archive lets go of the files and its thread ends.
    let deadline = Instant::now() + Duration::from_secs(20);
    while (descriptors(pid, &archive).1 > 0 || archive_thread(pid)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(descriptors(pid, &archive).1, 0, "the archive let go of the quiet files");
    assert!(!archive_thread(pid), "the archive's thread ended");
}
