//! Live activation: a new map goes live without a restart, in this process and in others on the
//! same master, and no write lands on a shard that no longer owns its key.

#[cfg(feature = "sqlx")]
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
#[cfg(feature = "sqlx")]
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::support::{path_str, route, temp_dir};
use shardlite::ErrorKind;
use shardlite::client::{DataClient, Params, ShardedClient, ShardedClientOptions, SqlData, Value};
use shardlite::data::{ActivationRequest, Audit, CatalogUpdateRequest};
use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};

#[cfg(feature = "sqlx")]
const CHILD_MASTER: &str = "SHARDLITE_TEST_CHILD_MASTER";

/// Eight buckets over three shards; `tenant-a` is pinned to s0.
fn map_v1(dir: &Path) -> ShardingOptions {
    ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 8,
        shards: ["s0", "s1", "s2"]
            .iter()
            .map(|id| ShardDefinition::local(*id, path_str(&dir.join(format!("{id}.db")))))
            .collect(),
        bucket_ranges: vec![
            BucketRange::new(0, 3, "s0"),
            BucketRange::new(3, 6, "s1"),
            BucketRange::new(6, 8, "s2"),
        ],
        exact_key_pins: [("tenant-a".to_owned(), "s0".to_owned())].into(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    }
}

/// Version 2: `tenant-a` is pinned to s1 instead (s2 is untouched).
fn map_v2(dir: &Path) -> ShardingOptions {
    let mut map = map_v1(dir);
    map.map_version = 2;
    map.exact_key_pins.insert("tenant-a".into(), "s1".into());
    map
}

async fn seed(dir: &Path) -> PathBuf {
    let master = crate::support::seed_master(dir, map_v1(dir)).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    sharded
        .query()
        .execute_all("CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, after INTEGER)")
        .await
        .unwrap();
    master
}

/// Applies version 2 (acknowledging the pin move) as the pending map.
async fn apply_v2(sharded: &ShardedClient, dir: &Path) {
    let mut request = CatalogUpdateRequest::new(map_v2(dir));
    request.expected_current_map_version = Some(1);
    request.allow_ownership_change = true;
    let applied = sharded.catalog().apply(&request).await.unwrap();
    assert!(applied.applied, "{:?}", applied.validation);
}

fn activation() -> ActivationRequest {
    ActivationRequest::new(2).audit(Audit::by("test"))
}

/// Rows of `tenant` in a shard file, read with plain SQLite: `(id, after)`.
fn rows_in(dir: &Path, shard: &str, tenant: &str) -> Vec<(i64, i64)> {
    let conn = rusqlite::Connection::open(dir.join(format!("{shard}.db"))).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, coalesce(after, 0) FROM items WHERE tenant = ?1 ORDER BY id")
        .unwrap();
    stmt.query_map([tenant], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// Writers that insert rows on their routes until stopped, marking each row with whether the
/// activation had completed when the write was issued.
struct WriteLoad {
    activated: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    /// Per writer, the rows it wrote before (`[0]`) and after (`[1]`) the activation.
    written: Vec<Arc<[AtomicU64; 2]>>,
    writers: Vec<tokio::task::JoinHandle<u64>>,
}

impl WriteLoad {
    fn start(routes: Vec<(String, Arc<dyn DataClient>)>) -> Self {
        let activated = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let next_id = Arc::new(AtomicI64::new(1));
        let written: Vec<Arc<[AtomicU64; 2]>> = routes.iter().map(|_| Arc::default()).collect();
        let writers = routes
            .into_iter()
            .zip(&written)
            .map(|((key, client), counts)| {
                let (activated, stop, next_id) = (Arc::clone(&activated), Arc::clone(&stop), Arc::clone(&next_id));
                let counts = Arc::clone(counts);
                tokio::spawn(async move {
                    let mut written = 0;
                    while !stop.load(Ordering::Acquire) {
                        let after = i64::from(activated.load(Ordering::Acquire));
                        let id = next_id.fetch_add(1, Ordering::Relaxed);
                        client
                            .execute_sql(
                                "INSERT INTO items (id, tenant, after) VALUES (?1, ?2, ?3)",
                                Params::from(vec![
                                    Value::Integer(id),
                                    Value::from(key.as_str()),
                                    Value::Integer(after),
                                ]),
                            )
                            .await
                            .unwrap_or_else(|err| panic!("write for {key} failed: {err}"));
                        written += 1;
                        counts[usize::from(after == 1)].fetch_add(1, Ordering::Relaxed);
                    }
                    written
                })
            })
            .collect();
        Self {
            activated,
            stop,
            written,
            writers,
        }
    }

    /// Waits until every writer has written `rows` rows in the current phase (before or after
    /// the activation), so that a writer the activation held back still writes in the phase:
    /// counting rows over all writers let the others finish it alone on a loaded machine.
    async fn run_for(&self, rows: u64) {
        let phase = usize::from(self.activated.load(Ordering::Acquire));
        let deadline = Instant::now() + Duration::from_secs(60);
        while let Some(writer) = self
            .written
            .iter()
            .position(|counts| counts[phase].load(Ordering::Relaxed) < rows)
        {
            assert!(
                Instant::now() < deadline,
                "writer {writer} wrote fewer than {rows} rows in a minute"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    fn mark_activated(&self) {
        self.activated.store(true, Ordering::Release);
    }

    /// Stops the writers; every one of them wrote.
    async fn finish(self) {
        self.stop.store(true, Ordering::Release);
        for writer in self.writers {
            assert!(writer.await.unwrap() > 0);
        }
    }
}

/// A route key that resolves through bucket ranges to `shard`.
fn key_on(sharded: &ShardedClient, shard: &str) -> String {
    (0..1000)
        .map(|n| format!("key-{n}"))
        .find(|key| sharded.resolve_route(&route(key)).unwrap().shard_id == shard)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn activation_under_a_steady_write_load_puts_no_row_on_the_old_owner() {
    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    apply_v2(&sharded, dir.path()).await;
    let keys = [
        "tenant-a".to_owned(),
        key_on(&sharded, "s0"),
        key_on(&sharded, "s1"),
        key_on(&sharded, "s2"),
    ];

    let load = WriteLoad::start(
        keys.iter()
            .map(|key| {
                (
                    key.clone(),
                    Arc::new(sharded.for_route(route(key))) as Arc<dyn DataClient>,
                )
            })
            .collect(),
    );
    load.run_for(50).await;
    let result = sharded.catalog().activate(&activation()).await.unwrap();
    load.mark_activated();
    assert_eq!((result.previous_map_version, result.active_map_version), (1, 2));
    assert_eq!(result.affected_shards, ["s0", "s1"]);
    load.run_for(50).await;
    load.finish().await;

    // tenant-a wrote to s0 before the activation and to s1 after it; never to s0 after.
    let on_s0 = rows_in(dir.path(), "s0", "tenant-a");
    let on_s1 = rows_in(dir.path(), "s1", "tenant-a");
    assert!(
        !on_s0.is_empty() && on_s0.iter().all(|(_, after)| *after == 0),
        "{on_s0:?}"
    );
    assert!(on_s1.iter().any(|(_, after)| *after == 1), "{on_s1:?}");
    // The other routes stayed where they were.
    for (key, shard) in keys[1..].iter().zip(["s0", "s1", "s2"]) {
        let rows = rows_in(dir.path(), shard, key);
        assert!(rows.iter().any(|(_, after)| *after == 1), "{key} on {shard}: {rows:?}");
    }
    assert_eq!(sharded.map().version(), 2);
    let history = sharded.catalog().state().await.unwrap().history;
    assert_eq!(history[0].map_version, 2);
    assert_eq!(history[0].audit.operator.as_deref(), Some("test"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activation_drains_transactions_on_affected_shards_and_spares_the_others() {
    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let options = ShardedClientOptions {
        drain_timeout: Duration::from_millis(300),
        ..ShardedClientOptions::default()
    };
    let sharded = ShardedClient::open_with(&master, options).await.unwrap();
    apply_v2(&sharded, dir.path()).await;
    let moved = sharded.for_route(route("tenant-a"));
    let untouched = sharded.for_route(route(&key_on(&sharded, "s2")));

    let doomed = moved.begin().await.unwrap();
    doomed
        .execute("INSERT INTO items (id, tenant) VALUES (1, 'tenant-a')", Params::none())
        .await
        .unwrap();
    let survivor = untouched.begin().await.unwrap();
    survivor
        .execute("INSERT INTO items (id, tenant) VALUES (2, 'other')", Params::none())
        .await
        .unwrap();

    let started = Instant::now();
    let result = sharded.catalog().activate(&activation()).await.unwrap();
    assert_eq!(result.rolled_back_transactions, 1, "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(5));

    let err = doomed
        .execute("INSERT INTO items (id, tenant) VALUES (3, 'tenant-a')", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StaleMapVersion, "{err}");
    survivor
        .execute("INSERT INTO items (id, tenant) VALUES (4, 'other')", Params::none())
        .await
        .unwrap();
    survivor.commit().await.unwrap();
    assert!(rows_in(dir.path(), "s0", "tenant-a").is_empty());
    assert_eq!(rows_in(dir.path(), "s2", "other").len(), 2);

    // A transaction begun now gets a version-2 id on the new owner.
    let fresh = moved.begin().await.unwrap();
    assert!(fresh.id().to_string().starts_with("csdbshard:2:s1:"), "{}", fresh.id());
    fresh.rollback().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_client_on_the_same_master_follows_the_activation() {
    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let operator = ShardedClient::open(&master).await.unwrap();
    let options = ShardedClientOptions {
        refresh_interval: Duration::from_millis(50),
        ..ShardedClientOptions::default()
    };
    let other = ShardedClient::open_with(&master, options).await.unwrap();
    let writer = other.for_route(route("tenant-a"));
    writer
        .execute_sql("INSERT INTO items (id, tenant) VALUES (1, 'tenant-a')", Params::none())
        .await
        .unwrap();
    let stale = writer.begin().await.unwrap();

    apply_v2(&operator, dir.path()).await;
    operator.catalog().activate(&activation()).await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(10);
    let mut id = 2;
    loop {
        writer
            .execute_sql(
                "INSERT INTO items (id, tenant) VALUES (?1, 'tenant-a')",
                Params::from(vec![id]),
            )
            .await
            .unwrap();
        if rows_in(dir.path(), "s1", "tenant-a").iter().any(|(row, _)| *row == id) {
            break;
        }
        assert!(Instant::now() < deadline, "the other client never saw version 2");
        id += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(other.map().version(), 2);
    let err = stale
        .execute(
            "INSERT INTO items (id, tenant) VALUES (999, 'tenant-a')",
            Params::none(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StaleMapVersion, "{err}");
}

/// Runs in a child process (see the next test): holds one sqlx connection bound to `tenant-a`
/// and inserts the ids it reads from stdin.
#[cfg(feature = "sqlx")]
#[test]
fn child_process_driver_connection() {
    let Ok(master) = std::env::var(CHILD_MASTER) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        use sqlx::Connection;
        let mut conn = shardlite::driver::ShardliteConnection::connect(&format!(
            "Data Source={master};Shard Keyspace=tenants;Shard Key=tenant-a"
        ))
        .await
        .unwrap();
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let line = line.unwrap();
            let Ok(id) = line.trim().parse::<i64>() else {
                break;
            };
            let outcome = sqlx::query("INSERT INTO items (id, tenant) VALUES (?, 'tenant-a')")
                .bind(id)
                .execute(&mut conn)
                .await;
            match outcome {
                Ok(_) => println!("child: ok {id}"),
                Err(err) => println!("child: error {err}"),
            }
            std::io::stdout().flush().unwrap();
        }
    });
}

#[cfg(feature = "sqlx")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_connection_in_another_process_follows_the_activation_without_a_restart() {
    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "catalog_activation::child_process_driver_connection",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_MASTER, path_str(&master))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut insert = |id: i64| {
        writeln!(stdin, "{id}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "the child process ended");
            // The test harness may print its own text before ours on the same line.
            if let Some(at) = line.find("child: ") {
                assert_eq!(line[at + "child: ".len()..].trim(), format!("ok {id}"));
                return;
            }
        }
    };
    insert(1);
    assert_eq!(rows_in(dir.path(), "s0", "tenant-a"), [(1, 0)]);

    let operator = ShardedClient::open(&master).await.unwrap();
    apply_v2(&operator, dir.path()).await;
    operator.catalog().activate(&activation()).await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(10);
    let mut id = 2;
    loop {
        insert(id);
        if rows_in(dir.path(), "s1", "tenant-a").iter().any(|(row, _)| *row == id) {
            break;
        }
        assert!(Instant::now() < deadline, "the child never saw version 2");
        id += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // From then on every write goes to the new owner.
    let s0_before = rows_in(dir.path(), "s0", "tenant-a").len();
    for next in id + 1..id + 6 {
        insert(next);
    }
    assert_eq!(rows_in(dir.path(), "s0", "tenant-a").len(), s0_before);
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[cfg(all(feature = "server", feature = "http"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_daemon_under_write_load_activates_over_rest_and_no_row_lands_on_the_old_owner() {
    use crate::support::daemon::start_daemon_on;
    use shardlite::client::{CatalogAdmin, Topology};
    use shardlite::server::ServerConfig;
    use shardlite::transport::RemoteOptions;
    use shardlite::transport::http::HttpClient;

    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let admin = HttpClient::new(RemoteOptions::new(daemon.url(""))).unwrap();
    let local = ShardedClient::open(&master).await.unwrap();
    let keys = [
        "tenant-a".to_owned(),
        key_on(&local, "s0"),
        key_on(&local, "s1"),
        key_on(&local, "s2"),
    ];
    drop(local);

    let load = WriteLoad::start(
        keys.iter()
            .map(|key| {
                (
                    key.clone(),
                    Arc::new(admin.with_route(route(key))) as Arc<dyn DataClient>,
                )
            })
            .collect(),
    );
    load.run_for(25).await;
    let mut request = CatalogUpdateRequest::new(map_v2(dir.path()));
    request.expected_current_map_version = Some(1);
    request.allow_ownership_change = true;
    assert!(admin.apply_catalog_update(&request).await.unwrap().applied);
    let result = admin.activate_pending_map(&activation()).await.unwrap();
    load.mark_activated();
    assert_eq!(result.active_map_version, 2);
    load.run_for(25).await;
    load.finish().await;
    let on_s0 = rows_in(dir.path(), "s0", "tenant-a");
    assert!(on_s0.iter().all(|(_, after)| *after == 0), "{on_s0:?}");
    assert!(
        rows_in(dir.path(), "s1", "tenant-a")
            .iter()
            .any(|(_, after)| *after == 1)
    );
    assert_eq!(admin.shard_map().await.unwrap().map_version, 2);
    daemon.stop().await.unwrap();
}
