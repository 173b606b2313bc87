//! `shardlite backup create` and `backup restore` of 1,000 shards, most of them written by a
//! client that keeps them open, under a descriptor limit of 1024 (soft and hard): the set holds
//! a bounded number of descriptors at a time, and the restored keyspace holds every row.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::support::cli::{binary, seeded_with, stderr};
use crate::support::many::pinned_tenants;
use crate::support::temp_dir;
use shardlite::backup::SNAPSHOTS_PER_FENCE;
use shardlite::client::{Params, ShardedClient, Value};

const SHARDS: usize = 1_000;

/// Rows written into shard `i`: none into every fifth shard, else one to three.
fn rows_of(i: usize) -> usize {
    if i.is_multiple_of(5) { 0 } else { 1 + i % 3 }
}

/// Runs `shardlite ARGS` with its descriptor limit at 1024, soft and hard; returns its output
/// and what the descriptors were when it was seen to hold the most.
fn limited(args: &[&str]) -> (Output, Vec<std::path::PathBuf>) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -S -n 1024 && ulimit -H -n 1024 && exec "$0" "$@""#)
        .arg(binary())
        .args(args)
        .env_remove("SHARDLITE_CONNECTION")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start shardlite");
    let fds = format!("/proc/{}/fd", child.id());
    // Watched until its output ends, before it is reaped: its number is not reused meanwhile.
    let done = Arc::new(AtomicBool::new(false));
    let watching = Arc::clone(&done);
    let watcher = std::thread::spawn(move || {
        let mut peak = Vec::new();
        while !watching.load(Ordering::SeqCst)
            && let Ok(entries) = std::fs::read_dir(&fds)
        {
            let held: Vec<_> = entries
                .flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .collect();
            if held.len() > peak.len() {
                peak = held;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        peak
    });
    let stdout = std::io::read_to_string(child.stdout.take().unwrap()).unwrap();
    let stderr = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
    done.store(true, Ordering::SeqCst);
    let peak = watcher.join().unwrap();
    let status = child.wait().unwrap();
    (
        Output {
            status,
            stdout: stdout.into_bytes(),
            stderr: stderr.into_bytes(),
        },
        peak,
    )
}

fn count_in(file: &Path) -> i64 {
    let conn = rusqlite::Connection::open_with_flags(file, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    conn.query_row("SELECT count(*) FROM items", [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_of_1000_shards_under_a_descriptor_limit_of_1024_restores_every_row() {
    let dir = temp_dir();
    let connection = seeded_with(dir.path(), &pinned_tenants(SHARDS, |i| format!("shards/s{i}.db")));
    let master = dir.path().join("master.db");
    // The writer keeps the shards it wrote open, as a daemon does.
    let sharded = ShardedClient::open(&master).await.unwrap();
    for i in 0..SHARDS {
        let shard = sharded.for_shard_id(&format!("s{i}")).unwrap();
        shard
            .execute_sql(
                "CREATE TABLE items (id INTEGER PRIMARY KEY, shard INTEGER NOT NULL)",
                Params::none(),
            )
            .await
            .unwrap();
        for _ in 0..rows_of(i) {
            shard
                .execute_sql(&format!("INSERT INTO items (shard) VALUES ({i})"), Params::none())
                .await
                .unwrap();
        }
    }

    let place = dir.path().join("backups");
    let (created, peak) = limited(&["backup", "create", "-c", &connection, "--to", place.to_str().unwrap()]);
    assert!(created.status.success(), "{}", stderr(&created));
    assert!(
        String::from_utf8_lossy(&created.stdout).contains(&format!("{SHARDS} shard(s), {SHARDS} copied")),
        "{}",
        String::from_utf8_lossy(&created.stdout)
    );
    // About three descriptors per snapshot, plus the catalog, the copy and the process's own.
    let bound = 3 * SNAPSHOTS_PER_FENCE + 64;
    println!(
        "backup of {SHARDS} shards: at most {} descriptors seen (bound {bound})",
        peak.len()
    );
    assert!(peak.len() <= bound, "{} descriptors held at once: {peak:?}", peak.len());

    let target = dir.path().join("restored");
    let (restored, _) = limited(&[
        "backup",
        "restore",
        place.to_str().unwrap(),
        "--to",
        target.to_str().unwrap(),
    ]);
    assert!(restored.status.success(), "{}", stderr(&restored));
    for i in 0..SHARDS {
        let expected = i64::try_from(rows_of(i)).unwrap();
        assert_eq!(count_in(&target.join(format!("s{i}.db"))), expected, "shard s{i}");
    }
    // The restored master routes each tenant to its restored file.
    let restored = ShardedClient::open(target.join("master.db")).await.unwrap();
    for i in [1, 499, 998] {
        let rows = restored
            .for_shard_id(&format!("s{i}"))
            .unwrap()
            .execute_read_only_sql("SELECT count(*), min(shard) FROM items", Params::none())
            .await
            .unwrap();
        let expected = i64::try_from(rows_of(i)).unwrap();
        assert_eq!(rows.rows[0][0], Value::Integer(expected), "s{i}");
        assert_eq!(rows.rows[0][1], Value::Integer(i64::try_from(i).unwrap()), "s{i}");
    }
}
