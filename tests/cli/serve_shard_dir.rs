//! `shardlite serve --shard-dir DIR`: a data host as a process. A host of 1,000 shard files
//! answers at once and, while every shard is used, holds at most `--max-open-shards` of them open
//! under a descriptor limit of 1024; `host create-shard` / `host shards`, `seed
//! --create-host-shards` and `-c` commands with `Shard Id` reach one shard of it; bad flags are
//! refused clearly.
#![cfg(all(feature = "cli", feature = "server", feature = "http", feature = "grpc"))]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::cli::{json_of, shardlite, stderr, stdout};
use crate::support::daemon::http_client;
use crate::support::serve::ServeProcess;
use crate::support::temp_dir;
use futures_util::StreamExt as _;
use serde_json::{Value, json};

const FILES: usize = 1000;
const MAX_OPEN: usize = 32;

/// Threads and descriptors of a process, from /proc.
fn usage(pid: u32) -> (usize, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let threads = status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap();
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    (threads, descriptors)
}

struct Host {
    child: Child,
    base: String,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `serve --shard-dir DIR --max-open-shards 32` with its descriptor limit at 1024, soft and hard.
fn serve_host(dir: &Path, log: &Path) -> (Host, Duration) {
    let started = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -S -n 1024 && ulimit -H -n 1024 && exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_shardlite"))
        .args(["serve", "--listen", "127.0.0.1:0", "--max-open-shards"])
        .arg(MAX_OPEN.to_string())
        .arg("--shard-dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("start the data host");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let Some(base) = line.trim().strip_prefix("listening on ").map(str::to_owned) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "the host did not start: {line:?} {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
    };
    (Host { child, base }, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_file_data_host_starts_at_once_and_holds_only_a_bounded_set_open() {
    let dir = temp_dir();
    let shards = dir.path().join("shards");
    std::fs::create_dir(&shards).unwrap();
    // One small SQLite file, copied: shard files made elsewhere (a restore, a copy) are served as they are.
    let template = dir.path().join("template.db");
    let db = rusqlite::Connection::open(&template).unwrap();
    db.execute_batch("CREATE TABLE items (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
        .unwrap();
    drop(db);
    for i in 0..FILES {
        std::fs::copy(&template, shards.join(format!("s{i:04}.db"))).unwrap();
    }

    let log = dir.path().join("host.log");
    let (host, spawned) = serve_host(&shards, &log);
    let pid = host.child.id();
    let http = http_client();
    let answered = Instant::now();
    let page: Value = http
        .get(format!("{}/api/host/shards?limit=5", host.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ready = spawned + answered.elapsed();
    let (threads, descriptors) = usage(pid);
    println!("{FILES}-file data host: answering {ready:?} after start, {threads} threads, {descriptors} descriptors");
    assert_eq!(page["shardCount"], FILES, "{page}");
    assert_eq!(page["openShards"], 0, "nothing opens at start: {page}");
    assert_eq!(page["maxOpenShards"], MAX_OPEN, "{page}");
    assert_eq!(page["shardIds"], json!(["s0000", "s0001", "s0002", "s0003", "s0004"]));
    assert!(ready < Duration::from_secs(2), "answered {ready:?} after start");

    // Every shard is written and read once, 16 at a time.
    let started = Instant::now();
    let errors: Vec<String> = futures_util::stream::iter(0..FILES)
        .map(|i| {
            let http = http.clone();
            let url = format!("{}/api/sql/execute", host.base);
            async move {
                let id = format!("s{i:04}");
                let sql = format!("INSERT INTO items (n) VALUES ({i}); SELECT n FROM items");
                let response = http
                    .post(url)
                    .header("X-Shardlite-Shard", &id)
                    .json(&json!({ "sql": sql }))
                    .send()
                    .await
                    .unwrap();
                let status = response.status();
                let body: Value = response.json().await.unwrap_or(Value::Null);
                (status != 200 || body["rows"][0][0] != i).then(|| format!("{id}: {status} {body}"))
            }
        })
        .buffer_unordered(16)
        .filter_map(|error| async move { error })
        .collect()
        .await;
    let load = started.elapsed();
    assert!(
        errors.is_empty(),
        "{} errors, the first: {:?}\n{}",
        errors.len(),
        errors.first(),
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let (threads, descriptors) = usage(pid);
    let page: Value = http
        .get(format!("{}/api/host/shards?limit=1", host.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let open = page["openShards"].as_u64().unwrap();
    println!("after touching all {FILES} shards ({load:?}): {open} open, {threads} threads, {descriptors} descriptors");
    assert!(open <= u64::try_from(MAX_OPEN).unwrap(), "{page}");
    // At most twelve descriptors per open shard, plus sockets and the process's own.
    let bound = MAX_OPEN * 12 + 128;
    assert!(descriptors <= bound, "{descriptors} descriptors (bound {bound})");
    assert!(threads <= 64, "{threads} threads");
    let files_now = std::fs::read_dir(&shards)
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "db"))
        })
        .count();
    assert_eq!(files_now, FILES, "no file was created");
}

#[test]
fn host_commands_create_and_list_shard_files_and_connection_strings_reach_one() {
    let dir = temp_dir();
    let shards = dir.path().join("new-host");
    let folder = shards.to_str().unwrap();
    // The folder must exist, unless --create asks for it.
    let out = shardlite(&["serve", "--listen", "127.0.0.1:0", "--shard-dir", folder]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--create"), "{}", stderr(&out));
    let out = shardlite(&["serve", "--shard-dir", folder, "--master", "m.db"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--master"), "{}", stderr(&out));

    let host = ServeProcess::start(&["--listen", "127.0.0.1:0", "--create", "--shard-dir", folder]);
    let http = format!("Endpoint={};Transport=Http", host.base_url);
    let grpc = format!("Endpoint={};Transport=Grpc", host.base_url);

    let out = shardlite(&["host", "create-shard", "-c", &grpc, "orders-1", "orders-2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "orders-1: created\norders-2: created\n");
    let out = shardlite(&["host", "create-shard", "-c", &http, "orders-1", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json_of(&out), json!([{"shardId": "orders-1", "created": false}]));
    let out = shardlite(&["host", "create-shard", "-c", &http, "../escape"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("shard id"), "{}", stderr(&out));
    assert!(!dir.path().join("escape.db").exists());

    for conn in [
        format!("{http};Shard Id=orders-1"),
        format!(
            "shardlite+grpc://{}?shard_id=orders-1",
            host.base_url.trim_start_matches("http://")
        ),
    ] {
        let out = shardlite(&[
            "sql",
            "-c",
            &conn,
            "CREATE TABLE IF NOT EXISTS t (v TEXT); INSERT INTO t VALUES ('x')",
        ]);
        assert!(out.status.success(), "{conn}: {}", stderr(&out));
    }
    let db = rusqlite::Connection::open(shards.join("orders-1.db")).unwrap();
    let rows: i64 = db.query_row("SELECT count(*) FROM t", [], |row| row.get(0)).unwrap();
    assert_eq!(rows, 2);

    let out = shardlite(&["sql", "-c", &format!("{http};Shard Id=orders-9"), "SELECT 1"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("'orders-9'"), "{}", stderr(&out));
    // A data request that names no shard is told how to name one, in a form that pastes.
    let out = shardlite(&["sql", "-c", &http, "SELECT 1"]);
    assert!(!out.status.success());
    let hint = format!("hint: add 'Shard Id=ID' to the connection string: -c '{http};Shard Id=ID'");
    assert!(stderr(&out).contains(&hint), "{}", stderr(&out));

    // `seed --create-host-shards` creates the files a new map names on the host, and a router
    // over the seeded master (here, the in-process one of a `-c Data Source` command) reaches them.
    let map = json!({
        "keyspace": "orders",
        "shards": [
            {"shardId": "a", "endpoint": host.base_url, "transport": "grpc", "remoteShardId": "orders-2"},
            {"shardId": "b", "endpoint": host.base_url, "transport": "http", "remoteShardId": "orders-3"},
        ],
        "virtualBucketCount": 2,
        "bucketRanges": [
            {"startBucketInclusive": 0, "endBucketExclusive": 1, "shardId": "a"},
            {"startBucketInclusive": 1, "endBucketExclusive": 2, "shardId": "b"},
        ],
        "exactKeyPins": {"k3": "b"},
    });
    let map_file = dir.path().join("map.json");
    std::fs::write(&map_file, map.to_string()).unwrap();
    let master = dir.path().join("master.db");
    let (master, map_file) = (master.to_str().unwrap(), map_file.to_str().unwrap());
    // Without it, a map naming a file the host does not have is refused, naming the file, and
    // nothing is stored.
    let out = shardlite(&["seed", "--master", master, "--map", map_file]);
    assert!(!out.status.success(), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("'orders-3' on") && !err.contains("'orders-2' on") && err.contains("--create-host-shards"),
        "{err}"
    );
    assert!(!Path::new(master).exists());
    let out = shardlite(&["seed", "--master", master, "--map", map_file, "--create-host-shards"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("file 'orders-3' on"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("'orders-2' on") && stdout(&out).contains("exists already"),
        "{}",
        stdout(&out)
    );
    let routed = format!("Data Source={master};Shard Keyspace=orders;Shard Key=k3");
    let out = shardlite(&["sql", "-c", &routed, "CREATE TABLE t3 (v); INSERT INTO t3 VALUES (3)"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = rusqlite::Connection::open(shards.join("orders-3.db")).unwrap();
    let rows: i64 = db.query_row("SELECT count(*) FROM t3", [], |row| row.get(0)).unwrap();
    assert_eq!(rows, 1);

    let out = shardlite(&["host", "shards", "-c", &grpc, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = json_of(&out);
    assert_eq!(page["shardCount"], 3, "{page}");
    assert_eq!(page["shardIds"], json!(["orders-1", "orders-2", "orders-3"]));
    let out = shardlite(&["host", "shards", "-c", &http, "--limit", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("3 shard file(s)"), "{}", stdout(&out));
    assert!(stdout(&out).contains("more: --offset 1"), "{}", stdout(&out));
    host.stop();
}
