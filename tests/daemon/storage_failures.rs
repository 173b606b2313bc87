//! What happens when the storage under a daemon fails, with real files and real daemons: the
//! daemon process killed mid-write, a shard file that is not a database or was deleted or replaced, and a
//! corrupt or truncated master. Each failure is a clear error naming what failed, the other shards
//! keep serving, and nothing acknowledged is lost. And when a remote shard's daemon dies during a
//! data migration, stays down or stalls: per-shard errors in bounded time, and the schema and
//! data migrations resume once it is back.
#![cfg(all(feature = "cli", feature = "server", feature = "http"))]

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::daemon::{http_client, start_daemon_on};
use crate::support::{path_str, temp_dir, tenants_options};
use shardlite::client::{Params, RowData, ShardedClient, SqlData, Value};
use shardlite::server::{KEYSPACE_HEADER, SHARD_KEY_HEADER, ServerConfig, ServerState};
use shardlite::transport::RemoteOptions;
use shardlite::transport::http::HttpClient;
use shardlite::{ErrorKind, RouteContext};

fn route(key: &str) -> RouteContext {
    RouteContext::new("tenants", key).unwrap()
}

/// A master with the two-shard `tenants` map and an `items` table on both shards.
async fn seed(dir: &Path) -> std::path::PathBuf {
    let master = crate::support::seed_master(dir, tenants_options(dir)).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    sharded
        .query()
        .execute_all("CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL)")
        .await
        .unwrap();
    master
}

/// `shardlite serve` on `master` in a process of its own; returns it and its base URL.
fn spawn_daemon(master: &Path) -> (Child, String) {
    spawn_daemon_on(master, "127.0.0.1:0", &[])
}

/// `shardlite serve` on `master`, listening on `listen`, with `extra` arguments.
fn spawn_daemon_on(master: &Path, listen: &str, extra: &[&str]) -> (Child, String) {
    spawn_daemon_as(Command::new(env!("CARGO_BIN_EXE_shardlite")), master, listen, extra)
}

/// `shardlite serve` on `master` run by `command` (the binary, or a wrapper that runs it),
/// listening on `listen`, with `extra` arguments; returns it and its base URL.
pub(crate) fn spawn_daemon_as(mut command: Command, master: &Path, listen: &str, extra: &[&str]) -> (Child, String) {
    let mut child = command
        .args(["serve", "--master"])
        .arg(master)
        .args(["--listen", listen])
        .args(extra)
        .env_remove("SHARDLITE_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run shardlite serve");
    let stdout = child.stdout.take().expect("piped stdout");
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = sender.send(line);
    });
    let line = match receiver.recv_timeout(Duration::from_secs(60)) {
        Ok(line) => line,
        Err(err) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the daemon did not print its address: {err}");
        }
    };
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .trim_end_matches('/')
        .to_owned();
    (child, url)
}

/// Ids in tenant-a's `items`, read from its shard file with a connection of the test's own.
fn ids_in_file(path: &Path) -> BTreeSet<i64> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn.prepare("SELECT id FROM items").unwrap();
    stmt.query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_mid_write_keeps_every_acknowledged_write() {
    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let (mut child, url) = spawn_daemon(&master);
    let client = HttpClient::new(
        RemoteOptions::new(&url)
            .with_route(route("tenant-a"))
            .with_request_timeout(Duration::from_secs(10)),
    )
    .unwrap();
    // Four writers insert ids of their own until the daemon dies under them; each records the
    // ids the daemon acknowledged.
    let acknowledged = Arc::new(std::sync::Mutex::new(BTreeSet::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let (enough_tx, enough_rx) = tokio::sync::oneshot::channel::<()>();
    let enough_tx = Arc::new(std::sync::Mutex::new(Some(enough_tx)));
    let mut writers = Vec::new();
    for writer in 0..4_i64 {
        let client = client.clone();
        let acknowledged = Arc::clone(&acknowledged);
        let count = Arc::clone(&count);
        let enough_tx = Arc::clone(&enough_tx);
        writers.push(tokio::spawn(async move {
            for n in 0.. {
                let id = writer * 1_000_000 + n;
                let outcome = client
                    .execute_sql(
                        "INSERT INTO items (id, tenant) VALUES (?1, 'tenant-a')",
                        Params::from(vec![Value::Integer(id)]),
                    )
                    .await;
                match outcome {
                    Ok(result) => {
                        assert_eq!(result.rows_affected, 1);
                        acknowledged.lock().unwrap().insert(id);
                        if count.fetch_add(1, Ordering::SeqCst) + 1 == 200
                            && let Some(tx) = enough_tx.lock().unwrap().take()
                        {
                            let _ = tx.send(());
                        }
                    }
                    // The daemon is gone: this write was never acknowledged.
                    Err(_) => return,
                }
            }
        }));
    }
    enough_rx.await.unwrap();
    // SIGKILL while the writers are still writing: no shutdown, no checkpoint.
    child.kill().unwrap();
    child.wait().unwrap();
    for writer in writers {
        writer.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() >= 200, "{}", acknowledged.len());

    // Restarted on the same files, the daemon has every acknowledged write.
    let (mut child, url) = spawn_daemon(&master);
    let client = HttpClient::new(RemoteOptions::new(&url).with_route(route("tenant-a"))).unwrap();
    let result = client.execute_sql("SELECT id FROM items", Params::none()).await;
    child.kill().unwrap();
    child.wait().unwrap();
    let served: BTreeSet<i64> = result
        .unwrap()
        .rows
        .iter()
        .map(|row| row[0].as_i64().unwrap())
        .collect();
    let missing: Vec<_> = acknowledged.difference(&served).collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    // And they are in the shard's file itself.
    let in_file = ids_in_file(&dir.path().join("s0.db"));
    assert!(acknowledged.is_subset(&in_file));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_file_that_is_not_a_database_answers_503_naming_the_shard_while_the_other_serves() {
    let dir = temp_dir();
    let master = crate::support::seed_master(dir.path(), tenants_options(dir.path())).await;
    // s0's file is garbage before anything opens it; s1 is a database with an `items` table.
    std::fs::write(dir.path().join("s0.db"), [0xAB; 16 * 1024]).unwrap();
    let s1 = rusqlite::Connection::open(dir.path().join("s1.db")).unwrap();
    s1.execute_batch("CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL)")
        .unwrap();
    drop(s1);

    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let http = http_client();
    for (key, path) in [("tenant-a", "/api/sql/execute"), ("tenant-a", "/api/sql/read-only")] {
        let response = http
            .post(daemon.url(path))
            .header(KEYSPACE_HEADER, "tenants")
            .header(SHARD_KEY_HEADER, key)
            .json(&serde_json::json!({ "sql": "SELECT count(*) FROM items" }))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(status, 503, "{path}: {body}");
        assert_eq!(body["errorCode"], "unavailable", "{body}");
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains("'s0'"), "{detail}");
        assert!(!detail.contains(&path_str(dir.path())), "{detail}");
    }
    // The other shard serves reads and writes.
    let other = HttpClient::new(RemoteOptions::new(daemon.url("")).with_route(route("tenant-b"))).unwrap();
    other
        .execute_sql("INSERT INTO items (id, tenant) VALUES (1, 'tenant-b')", Params::none())
        .await
        .unwrap();
    assert_eq!(other.count_rows("items").await.unwrap(), 1);
    // So does the in-process client's error: the same kind, naming the shard.
    let sharded = ShardedClient::open(&master).await.unwrap();
    let err = sharded
        .for_route(route("tenant-a"))
        .execute_sql("SELECT 1", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("'s0'"), "{err}");
    daemon.stop().await.unwrap();
}

#[tokio::test]
async fn a_corrupt_or_truncated_master_is_refused_with_an_error_naming_it() {
    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, vec![0x5A; 8192]).unwrap();
    // A complete copy of the master in one file (whatever is still in its write-ahead log
    // included), cut in half.
    let truncated = dir.path().join("truncated.db");
    rusqlite::Connection::open(&master)
        .unwrap()
        .execute("VACUUM INTO ?1", [path_str(&truncated)])
        .unwrap();
    let size = std::fs::metadata(&truncated).unwrap().len();
    assert!(size >= 4 * 4096, "{size}");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&truncated)
        .unwrap()
        .set_len(size / 2)
        .unwrap();
    for broken in [&garbage, &truncated] {
        let err = ServerState::open(broken, ServerConfig::default())
            .await
            .err()
            .unwrap_or_else(|| panic!("{} opened", broken.display()));
        let text = err.to_string();
        assert!(text.contains("master") || text.contains("catalog"), "{text}");
        let out = Command::new(env!("CARGO_BIN_EXE_shardlite"))
            .args(["serve", "--master"])
            .arg(broken)
            .args(["--listen", "127.0.0.1:0"])
            .env_remove("SHARDLITE_API_KEY")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}: {stderr}", broken.display());
        assert!(String::from_utf8_lossy(&out.stdout).is_empty(), "nothing listened");
        assert!(stderr.contains(&path_str(broken)), "{stderr}");
    }
}

/// A shard file deleted while serving: every write is refused naming the shard (through the
/// writer thread, on a blocking caller's thread, and at a transaction's commit), so nothing is
/// acknowledged into a file that is gone; a connection opened afterwards finds no file.
#[tokio::test]
async fn a_shard_file_deleted_while_serving_is_reported_as_that_shards_storage_failure() {
    let dir = temp_dir();
    let path = dir.path().join("s0.db");
    let database = shardlite::engine::Database::open(&path, "s0", shardlite::engine::EngineConfig::default())
        .await
        .unwrap();
    database.execute("CREATE TABLE t (x)", Params::none()).await.unwrap();
    let open = database.sessions().begin().await.unwrap();
    database
        .sessions()
        .session_execute(&open.id, "INSERT INTO t VALUES ('in a transaction')", Params::none())
        .await
        .unwrap();
    for suffix in ["", "-wal", "-shm"] {
        std::fs::remove_file(dir.path().join(format!("s0.db{suffix}"))).unwrap();
    }
    let deleted = |err: shardlite::Error| {
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
        let text = err.to_string();
        assert!(text.contains("'s0'") && text.contains("deleted"), "{text}");
    };
    deleted(
        database
            .execute("INSERT INTO t VALUES (1)", Params::none())
            .await
            .unwrap_err(),
    );
    deleted(
        database
            .execute_blocking("INSERT INTO t VALUES (2)", &Params::none())
            .unwrap_err(),
    );
    deleted(database.sessions().session_commit(&open.id).await.unwrap_err());
    // A connection opened now finds no file: the error names the shard and is not a client's
    // mistake.
    let err = database
        .execute_read_only_blocking("SELECT count(*) FROM t", &Params::none())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    let text = err.to_string();
    assert!(text.contains("'s0'") && text.contains("SQLITE_CANTOPEN"), "{text}");
}

/// A shard file replaced by another file while serving: writes are refused naming the shard,
/// and the file that took its place is left as it was.
#[tokio::test]
async fn a_shard_file_replaced_while_serving_takes_no_write() {
    let dir = temp_dir();
    let path = dir.path().join("s0.db");
    let database = shardlite::engine::Database::open(&path, "s0", shardlite::engine::EngineConfig::default())
        .await
        .unwrap();
    database.execute("CREATE TABLE t (x)", Params::none()).await.unwrap();
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES ('theirs');")
        .unwrap();
    let theirs = std::fs::read(&other).unwrap();
    std::fs::rename(&other, &path).unwrap();
    let err = database
        .execute("INSERT INTO t VALUES ('ours')", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("replaced"), "{err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        theirs,
        "the file in its place is untouched"
    );
}

// ---------------------------------------------------------------------------------------------
// A remote shard that is down or stalls

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_shard_that_is_down_or_stalls_fails_alone_in_bounded_time_and_work_resumes() {
    use crate::support::migrate::{fill, items_on, key_request};
    use shardlite::data::{ReshardStatus, ResumeRequest, SchemaMigrationRequest, SchemaScript};
    use shardlite::map::{BucketRange, Secret, ShardDefinition, ShardingOptions};
    use shardlite::reshard::Resharder;

    let dir = temp_dir();
    let far_file = dir.path().join("far.db");
    let (far_daemon, url) = spawn_daemon_on(&far_file, "127.0.0.1:0", &["--create"]);
    let far_daemon = Arc::new(std::sync::Mutex::new(Some(far_daemon)));
    let addr = url.trim_start_matches("http://").to_owned();
    let mut far = ShardDefinition::local("far", "");
    far.data_source = None;
    far.connection_string = Some(Secret::new(format!(
        "Endpoint={url};Transport=Http;Connect Timeout=1;Command Timeout=2"
    )));
    let options = ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 4,
        shards: vec![
            ShardDefinition::local("local", path_str(&dir.path().join("local.db"))),
            far,
        ],
        bucket_ranges: vec![BucketRange::new(0, 2, "local"), BucketRange::new(2, 4, "far")],
        exact_key_pins: [("wanderer".to_owned(), "local".to_owned())].into(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    };
    let master = crate::support::seed_master(dir.path(), options).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    for outcome in sharded
        .query()
        .execute_all(
            "CREATE TABLE items (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER, amount REAL, data BLOB)",
        )
        .await
        .unwrap()
    {
        assert!(outcome.error.is_none(), "{outcome:?}");
    }
    fill(&sharded, "wanderer", 1, 100).await;
    let before = items_on(&sharded, "local", "wanderer").await;
    let schema = SchemaMigrationRequest::new(vec![SchemaScript::new(
        1,
        "notes",
        "CREATE TABLE notes (id INTEGER PRIMARY KEY)",
    )]);

    // The daemon behind "far" dies (SIGKILL) once the first page of a data migration landed.
    let killer = Arc::clone(&far_daemon);
    let migrator = Resharder::new(sharded.clone()).with_observer(move |progress| {
        if progress.rows > 0
            && let Some(mut child) = killer.lock().unwrap().take()
        {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    });
    let mut request = key_request("wanderer", "far", 40);
    request.manifest.collections.clear();
    request.migration_id = Some("to-far".into());
    // The fenced mode, whose fence a crash leaves in force (an online move keeps taking writes:
    // see migration_stall).
    request.online = false;
    let started = std::time::Instant::now();
    let stopped = migrator.migrate(request).await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the dead shard held the migration for {:?}",
        started.elapsed()
    );
    match &stopped {
        Ok(result) => assert_eq!(result.status, ReshardStatus::Failed, "{result:#?}"),
        Err(err) => assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}"),
    }
    assert!(far_daemon.lock().unwrap().is_none(), "the daemon was killed mid-copy");
    // The source still has every row, and the moving key is fenced there until the migration
    // resumes: a write to it is refused as retryable.
    assert_eq!(items_on(&sharded, "local", "wanderer").await, before);
    let fenced = sharded
        .for_route(crate::support::route("wanderer"))
        .execute_sql(
            "INSERT INTO items (id, tenant) VALUES ('late', 'wanderer')",
            Params::none(),
        )
        .await
        .unwrap_err();
    assert_eq!(fenced.kind(), ErrorKind::RouteFenced, "{fenced}");

    // While it is down, a write fan-out and a schema migration fail on it alone, at once.
    let started = std::time::Instant::now();
    let fan_out = sharded
        .query()
        .execute_all("CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY)")
        .await
        .unwrap();
    let codes: Vec<_> = fan_out
        .iter()
        .map(|r| (r.shard_id.as_str(), r.error_code.as_deref()))
        .collect();
    assert_eq!(codes, vec![("local", None), ("far", Some("unavailable"))]);
    let report = sharded.schema().migrate(&schema).await.unwrap();
    let states: Vec<_> = report.shards.iter().map(|s| (s.shard_id.as_str(), s.state)).collect();
    assert_eq!(
        states,
        vec![
            ("local", shardlite::data::SchemaMigrationState::Migrated),
            ("far", shardlite::data::SchemaMigrationState::Failed)
        ]
    );
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    // Stalled: something accepts on the address and never answers; the command timeout ends
    // each wait, and the other shard is unaffected.
    let stall = tokio::net::TcpListener::bind(addr.as_str()).await.unwrap();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = stall.accept().await {
            held.push(socket);
        }
    });
    let started = std::time::Instant::now();
    let fan_out = sharded
        .query()
        .execute_all("CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY)")
        .await
        .unwrap();
    let codes: Vec<_> = fan_out
        .iter()
        .map(|r| (r.shard_id.as_str(), r.error_code.as_deref()))
        .collect();
    assert_eq!(codes, vec![("local", None), ("far", Some("unavailable"))]);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    holder.abort();
    let _ = holder.await;

    // Back up: the schema migration and the data migration finish where they stopped.
    let (mut far_daemon, _) = spawn_daemon_on(&far_file, &addr, &["--create"]);
    let report = sharded.schema().migrate(&schema).await.unwrap();
    let resumed = migrator.resume("to-far", ResumeRequest::default()).await;
    let far_items = items_on(&sharded, "far", "wanderer").await;
    far_daemon.kill().unwrap();
    far_daemon.wait().unwrap();
    assert!(report.all_at_target(), "{report:#?}");
    let resumed = resumed.unwrap();
    assert_eq!(resumed.status, ReshardStatus::Activated, "{resumed:#?}");
    assert_eq!(far_items, before);
}

// ---------------------------------------------------------------------------------------------
// A full disk

/// A small tmpfs mounted on `dir`, unmounted when dropped; `None` where this process may not
/// mount (not root, or no permission in its namespace), unless `SHARDLITE_REQUIRE_MOUNT=1`.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(dir: &Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .is_ok_and(|out| out.status.success());
        if !mounted {
            assert!(
                std::env::var("SHARDLITE_REQUIRE_MOUNT").as_deref() != Ok("1"),
                "cannot mount a small tmpfs, and SHARDLITE_REQUIRE_MOUNT=1"
            );
            eprintln!("skipped: cannot mount a small tmpfs here (needs root)");
            return None;
        }
        Some(Self(dir.to_path_buf()))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// The reference `tenants` map with `s0`'s file on `small` (a [`SmallDisk`]) and `s1`'s in `dir`.
fn tenants_with_s0_on(small: &Path, dir: &Path) -> shardlite::map::ShardingOptions {
    let mut options = tenants_options(dir);
    options.shards[0] = shardlite::map::ShardDefinition::local("s0", path_str(&small.join("s0.db")));
    options
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_the_write_naming_the_shard_and_keeps_what_was_acknowledged() {
    let dir = temp_dir();
    let small = dir.path().join("small");
    let Some(_disk) = SmallDisk::mount(&small, "1m") else {
        return;
    };
    let options = tenants_with_s0_on(&small, dir.path());
    let master = crate::support::seed_master(dir.path(), options).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let client = |key: &str| HttpClient::new(RemoteOptions::new(daemon.url("")).with_route(route(key))).unwrap();
    let (a, b) = (client("tenant-a"), client("tenant-b"));
    a.execute_sql(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, data BLOB)",
        Params::none(),
    )
    .await
    .unwrap();
    b.execute_sql(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, data BLOB)",
        Params::none(),
    )
    .await
    .unwrap();
    // 64 KiB a row: the 1 MiB disk fills within a few dozen writes.
    let mut acknowledged = Vec::new();
    let err = loop {
        let id = i64::try_from(acknowledged.len()).unwrap();
        assert!(id < 100, "the disk never filled");
        match a
            .execute_sql(
                "INSERT INTO items (id, tenant, data) VALUES (?1, 'tenant-a', zeroblob(65536))",
                Params::from(vec![Value::Integer(id)]),
            )
            .await
        {
            Ok(_) => acknowledged.push(id),
            Err(err) => break err,
        }
    };
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    let text = err.to_string();
    assert!(text.contains("'s0'") && text.contains("SQLITE_FULL"), "{text}");
    assert!(!text.contains(&path_str(dir.path())), "{text}");
    // The other shard keeps taking writes, and every acknowledged write on the full one is there.
    b.execute_sql(
        "INSERT INTO items (id, tenant, data) VALUES (1, 'tenant-b', zeroblob(65536))",
        Params::none(),
    )
    .await
    .unwrap();
    let ids = a
        .execute_read_only_sql("SELECT id FROM items ORDER BY id", Params::none())
        .await
        .unwrap();
    let ids: Vec<i64> = ids.rows.iter().map(|row| row[0].as_i64().unwrap()).collect();
    assert_eq!(ids, acknowledged);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_destination_disk_stops_a_data_migration_and_leaves_the_source_whole() {
    use crate::support::migrate::{fill, items_on, key_request};
    use shardlite::data::ReshardStatus;
    use shardlite::reshard::Resharder;

    let dir = temp_dir();
    let small = dir.path().join("small");
    let Some(_disk) = SmallDisk::mount(&small, "1m") else {
        return;
    };
    let mut options = tenants_with_s0_on(&small, dir.path());
    options.exact_key_pins = [("wanderer".to_owned(), "s1".to_owned())].into();
    let master = crate::support::seed_master(dir.path(), options).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    for outcome in sharded
        .query()
        .execute_all(
            "CREATE TABLE items (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER, amount REAL, data BLOB)",
        )
        .await
        .unwrap()
    {
        assert!(outcome.error.is_none(), "{outcome:?}");
    }
    // About 3 MiB of rows for a 1 MiB destination.
    fill(&sharded, "wanderer", 1, 40_000).await;
    let before = items_on(&sharded, "s1", "wanderer").await;
    let outcome = Resharder::new(sharded.clone())
        .migrate(key_request("wanderer", "s0", 1000))
        .await;
    let message = match outcome {
        Ok(result) => {
            assert_eq!(result.status, ReshardStatus::Failed, "{result:#?}");
            result.message
        }
        Err(err) => {
            assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
            err.to_string()
        }
    };
    assert!(message.contains("'s0'") && message.contains("SQLITE_FULL"), "{message}");
    // The source has every row and still takes writes of other keys.
    assert_eq!(items_on(&sharded, "s1", "wanderer").await, before);
    sharded
        .for_shard_id("s1")
        .unwrap()
        .execute_sql(
            "INSERT INTO items (id, tenant) VALUES ('other-1', 'other')",
            Params::none(),
        )
        .await
        .unwrap();
}
