//! A shard file the daemon may not write (permission denied), with real files and a real daemon
//! process: writes that need the file are refused with a storage error naming the shard
//! (`unavailable`, 503), told apart from a client's read-only violation (`read_only`, 400); the
//! other shard keeps serving, the read-only shard still serves reads, and nothing acknowledged
//! is lost.
//!
//! File permissions do not bind root, and tests often run as root: the daemon then runs as the
//! unprivileged user 65534 (`setpriv` from util-linux), with the test folder handed to it.

#![cfg(all(feature = "cli", feature = "server", feature = "http"))]

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Child, Command};

use crate::support::daemon::http_client;
use crate::support::{path_str, temp_dir, tenants_options};
use shardlite::client::{Params, RowData, ShardedClient, SqlData, TransactionData, Value};
use shardlite::server::{KEYSPACE_HEADER, SHARD_KEY_HEADER};
use shardlite::transport::RemoteOptions;
use shardlite::transport::http::HttpClient;
use shardlite::{ErrorKind, RouteContext};

use super::storage_failures::spawn_daemon_as;

/// The unprivileged user and group the daemon runs as when the tests run as root.
const NOBODY: u32 = 65534;

fn route(key: &str) -> RouteContext {
    RouteContext::new("tenants", key).unwrap()
}

/// Whether this process runs as root (its effective user id, from `/proc/self/status`).
fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let uids = status.lines().find_map(|line| line.strip_prefix("Uid:")).unwrap();
    uids.split_whitespace().nth(1) == Some("0")
}

/// How to run the daemon so that file permissions bind it: as it is when the tests are not
/// root, under `setpriv` as user 65534 when they are. `None` (the test is skipped, saying why)
/// when they are root and `setpriv` cannot drop privileges here, unless
/// `SHARDLITE_REQUIRE_SETPRIV=1`.
fn unprivileged_daemon(dir: &Path) -> Option<Command> {
    let binary = env!("CARGO_BIN_EXE_shardlite");
    if !is_root() {
        return Some(Command::new(binary));
    }
    let works = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
        .status()
        .is_ok_and(|status| status.success());
    if !works {
        assert!(
            std::env::var("SHARDLITE_REQUIRE_SETPRIV").as_deref() != Ok("1"),
            "setpriv cannot run a process as user 65534 here, and SHARDLITE_REQUIRE_SETPRIV=1"
        );
        eprintln!(
            "skipped: the tests run as root, which file permissions do not bind, and `setpriv` (util-linux) \
             cannot run the daemon as an unprivileged user here"
        );
        return None;
    }
    // The folder and every file in it become the daemon user's.
    std::os::unix::fs::chown(dir, Some(NOBODY), Some(NOBODY)).unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        std::os::unix::fs::chown(entry.unwrap().path(), Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let mut command = Command::new("setpriv");
    command.args(["--reuid=65534", "--regid=65534", "--clear-groups", binary]);
    Some(command)
}

fn stop(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Ids in `items` of a shard file, read with a connection of the test's own.
fn ids_in_file(path: &Path) -> BTreeSet<i64> {
    let conn = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut stmt = conn.prepare("SELECT id FROM items").unwrap();
    stmt.query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

async fn insert(client: &HttpClient, id: i64) -> shardlite::Result<()> {
    let done = client
        .execute_sql(
            "INSERT INTO items (id, tenant) VALUES (?1, 'x')",
            Params::from(vec![Value::Integer(id)]),
        )
        .await?;
    assert_eq!(done.rows_affected, 1);
    Ok(())
}

/// POSTs `sql` on `key`'s route to `path`; returns the status and the body.
async fn post(url: &str, path: &str, key: &str, sql: &str) -> (u16, serde_json::Value) {
    let response = http_client()
        .post(format!("{url}{path}"))
        .header(KEYSPACE_HEADER, "tenants")
        .header(SHARD_KEY_HEADER, key)
        .json(&serde_json::json!({ "sql": sql }))
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The storage error of a write on s0 while its file is read-only: `unavailable`, naming s0.
fn assert_read_only_storage(err: &shardlite::Error, what: &str) {
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{what}: {err}");
    let text = err.to_string();
    assert!(text.contains("'s0'"), "{what}: {text}");
    assert!(text.contains("read-only"), "{what}: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_file_made_read_only_refuses_writes_naming_the_shard_apart_from_read_only_violations() {
    let dir = temp_dir();
    let master = crate::support::seed_master(dir.path(), tenants_options(dir.path())).await;
    {
        let sharded = ShardedClient::open(&master).await.unwrap();
        sharded
            .query()
            .execute_all("CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL)")
            .await
            .unwrap();
    }
    let Some(command) = unprivileged_daemon(dir.path()) else {
        return;
    };
    let s0_file = dir.path().join("s0.db");
    let (child, url) = spawn_daemon_as(command, &master, "127.0.0.1:0", &[]);
    let s0 = HttpClient::new(RemoteOptions::new(&url).with_route(route("tenant-a"))).unwrap();
    let s1 = HttpClient::new(RemoteOptions::new(&url).with_route(route("tenant-b"))).unwrap();
    let mut acknowledged_s0 = BTreeSet::new();
    let mut acknowledged_s1 = BTreeSet::new();
    for id in 1..=5 {
        insert(&s0, id).await.unwrap();
        acknowledged_s0.insert(id);
        insert(&s1, id).await.unwrap();
        acknowledged_s1.insert(id);
    }

    // Made read-only while the daemon serves. The permission binds a file when it is opened:
    // a transaction opens a connection of its own, which SQLite can only open read-only, and
    // its first write is refused naming the shard.
    set_mode(&s0_file, 0o444);
    let tx = s0.begin_transaction().await.unwrap();
    let err = s0
        .execute_in_transaction(
            &tx.transaction_id,
            "INSERT INTO items (id, tenant) VALUES (100, 'x')",
            Params::none(),
        )
        .await
        .unwrap_err();
    assert_read_only_storage(&err, "a transaction opened after the file became read-only");
    let _ = s0.rollback_transaction(&tx.transaction_id).await;
    // The same through REST: 503 `unavailable`, where a client's write on the read-only
    // endpoint is 400 `read_only`.
    let (status, body) = post(
        &url,
        "/api/sql/read-only",
        "tenant-b",
        "INSERT INTO items (id, tenant) VALUES (100, 'x')",
    )
    .await;
    assert_eq!((status, body["errorCode"].as_str()), (400, Some("read_only")), "{body}");
    // The other shard keeps taking writes, and the read-only one keeps serving reads.
    insert(&s1, 6).await.unwrap();
    acknowledged_s1.insert(6);
    assert_eq!(s0.count_rows("items").await.unwrap(), 5);

    // Restarted on the read-only file: reads are served, every write to the shard is refused
    // naming it, and the other shard serves as before.
    stop(child);
    let command = unprivileged_daemon(dir.path()).expect("available above");
    set_mode(&s0_file, 0o444);
    let (child, url) = spawn_daemon_as(command, &master, "127.0.0.1:0", &[]);
    let s0 = HttpClient::new(RemoteOptions::new(&url).with_route(route("tenant-a"))).unwrap();
    let s1 = HttpClient::new(RemoteOptions::new(&url).with_route(route("tenant-b"))).unwrap();
    let served: BTreeSet<i64> = s0
        .execute_sql("SELECT id FROM items", Params::none())
        .await
        .unwrap()
        .rows
        .iter()
        .map(|row| row[0].as_i64().unwrap())
        .collect();
    assert_eq!(served, acknowledged_s0);
    let err = insert(&s0, 200).await.unwrap_err();
    assert_read_only_storage(&err, "a write after a restart on the read-only file");
    let (status, body) = post(
        &url,
        "/api/sql/execute",
        "tenant-a",
        "INSERT INTO items (id, tenant) VALUES (201, 'x')",
    )
    .await;
    assert_eq!(
        (status, body["errorCode"].as_str()),
        (503, Some("unavailable")),
        "{body}"
    );
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("'s0'") && detail.contains("read-only"), "{detail}");
    assert!(!detail.contains(&path_str(dir.path())), "{detail}");
    let tx = s0.begin_transaction().await.unwrap();
    let err = s0
        .execute_in_transaction(&tx.transaction_id, "UPDATE items SET tenant = 'y'", Params::none())
        .await
        .unwrap_err();
    assert_read_only_storage(&err, "a transaction after a restart on the read-only file");
    let _ = s0.rollback_transaction(&tx.transaction_id).await;
    insert(&s1, 7).await.unwrap();
    acknowledged_s1.insert(7);

    // Writable again: the shard takes writes, and every acknowledged write is in its file.
    set_mode(&s0_file, 0o644);
    stop(child);
    let command = unprivileged_daemon(dir.path()).expect("available above");
    let (child, url) = spawn_daemon_as(command, &master, "127.0.0.1:0", &[]);
    let s0 = HttpClient::new(RemoteOptions::new(&url).with_route(route("tenant-a"))).unwrap();
    insert(&s0, 8).await.unwrap();
    acknowledged_s0.insert(8);
    stop(child);
    assert_eq!(ids_in_file(&s0_file), acknowledged_s0);
    assert_eq!(ids_in_file(&dir.path().join("s1.db")), acknowledged_s1);
}
