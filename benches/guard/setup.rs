//! The guard's files and clients: a two-shard `tenants` map with 1,000 `orders` rows on each
//! shard (and an empty `events` table for the inserts), the daemon's state on it, an 8-shard map
//! for the fan-out, and the raw rusqlite connections of the baselines.

use std::path::{Path, PathBuf};
use std::sync::Once;

use shardlite::RouteContext;
use shardlite::catalog::Catalog;
use shardlite::client::{RoutedClient, ShardedClient};
use shardlite::map::{BucketRange, Secret, ShardDefinition, ShardMap, ShardingOptions};
use shardlite::server::{ServerConfig, ServerState, ServerTls};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

/// Rows in `orders` on each shard.
pub const ROWS: i64 = 1_000;
pub const KEYSPACE: &str = "tenants";
pub const KEY: &str = "tenant-a";

const SCHEMA: &str = "CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, amount REAL NOT NULL); \
     CREATE TABLE events (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, amount REAL NOT NULL); \
     WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) \
     INSERT INTO orders SELECT i, 'tenant-a', i * 1.5 FROM n;";

/// A folder removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Everything the rows measure.
pub struct Env {
    dir: TempDir,
    state: ServerState,
    /// The in-process routed client for `tenant-a` (the daemon's own sharded client).
    pub routed: RoutedClient,
    /// The shard file `tenant-a` routes to.
    pub routed_file: PathBuf,
    /// A client over 8 local shards.
    pub eight: ShardedClient,
}

fn shard(dir: &Path, id: &str) -> ShardDefinition {
    ShardDefinition::local(id, dir.join(format!("{id}.db")).to_string_lossy())
}

/// The daemon's configuration: the defaults, or with `operator` an API key and the Prometheus
/// metrics on, as an operator runs it (heat is always counted).
fn server_config(operator: Option<&str>) -> ServerConfig {
    match operator {
        Some(key) => ServerConfig {
            api_key: Some(Secret::new(key)),
            metrics: true,
            ..ServerConfig::default()
        },
        None => ServerConfig::default(),
    }
}

impl Env {
    /// The files and clients; `api_key` runs the daemon as [`server_config`] says.
    pub fn new(runtime: &Runtime, api_key: Option<&str>) -> Self {
        let dir = std::env::temp_dir().join(format!("shardlite-perf-guard-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(dir.join("eight")).expect("temp dir");
        let dir = TempDir(dir);
        let master = dir.0.join("master.db");
        let two = ShardingOptions {
            keyspace: KEYSPACE.into(),
            map_version: 1,
            virtual_bucket_count: 4,
            shards: vec![shard(&dir.0, "s0"), shard(&dir.0, "s1")],
            bucket_ranges: vec![BucketRange::new(0, 2, "s0"), BucketRange::new(2, 4, "s1")],
            exact_key_pins: Default::default(),
            directories: Vec::new(),
            directory_entries: Vec::new(),
        };
        let eight_dir = dir.0.join("eight");
        let eight = ShardMap::new(ShardingOptions {
            keyspace: KEYSPACE.into(),
            map_version: 1,
            virtual_bucket_count: 16,
            shards: (0..8).map(|i| shard(&eight_dir, &format!("shard-{i}"))).collect(),
            bucket_ranges: (0..8)
                .map(|i| BucketRange::new(i * 2, (i + 1) * 2, format!("shard-{i}")))
                .collect(),
            exact_key_pins: Default::default(),
            directories: Vec::new(),
            directory_entries: Vec::new(),
        })
        .expect("map");
        let route = RouteContext::new(KEYSPACE, KEY).expect("route");
        let (state, routed_file, eight) = runtime.block_on(async {
            Catalog::open(&master)
                .await
                .expect("catalog")
                .seed(two, false)
                .await
                .expect("seed");
            let state = ServerState::open(&master, server_config(api_key)).await.expect("state");
            let sharded = state.sharded().expect("sharded");
            let eight = ShardedClient::from_map(eight).await.expect("eight shards");
            for client in [sharded, &eight] {
                for result in client.query().execute_all(SCHEMA).await.expect("schema") {
                    assert!(result.error.is_none(), "{result:?}");
                }
            }
            let shard_id = sharded.resolve_route(&route).expect("resolve").shard_id;
            (state.clone(), dir.0.join(format!("{shard_id}.db")), eight)
        });
        let routed = state.sharded().expect("sharded").for_route(route);
        Self {
            dir,
            state,
            routed,
            routed_file,
            eight,
        }
    }

    /// A connection to the routed shard file.
    pub fn raw_connection(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(&self.routed_file).expect("raw connection")
    }

    /// A file of its own with the `events` table, in WAL mode with `synchronous=NORMAL` as
    /// shardlite's shards are.
    pub fn raw_writer(&self) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(self.dir.0.join("raw-writes.db")).expect("raw writer");
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .expect("wal");
        conn.execute_batch(
            "PRAGMA synchronous = NORMAL; \
             CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, amount REAL NOT NULL);",
        )
        .expect("raw schema");
        conn
    }

    /// A connection to each of the 8 fan-out files.
    pub fn raw_fan_out(&self) -> Vec<rusqlite::Connection> {
        (0..8)
            .map(|i| {
                rusqlite::Connection::open(self.dir.0.join(format!("eight/shard-{i}.db"))).expect("raw connection")
            })
            .collect()
    }

    /// Starts the daemon on `127.0.0.1:0`, over TLS with `tls`; returns its base URL and what
    /// stops it.
    pub async fn start_daemon(&self, tls: Option<ServerTls>) -> (String, oneshot::Sender<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("bound address");
        let (stop, stopped) = oneshot::channel::<()>();
        let stopped = async move {
            let _ = stopped.await;
        };
        let state = self.state.clone();
        match tls {
            Some(tls) => {
                tokio::spawn(shardlite::server::run_tls(listener, tls, state, stopped));
                (format!("https://{addr}"), stop)
            }
            None => {
                tokio::spawn(shardlite::server::run(listener, state, stopped));
                (format!("http://{addr}"), stop)
            }
        }
    }
}

/// An HTTP client for the daemon and the bare axum server (plain HTTP on loopback).
pub fn http_client() -> reqwest::Client {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder().no_proxy().build().expect("http client")
}
