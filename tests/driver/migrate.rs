//! sqlx's own `Migrator` on route-bound shardlite pools: it migrates the route's shard and no
//! other, in-process and through a daemon (gRPC and REST), writes rows that `schema migrate` and
//! `schema status` read, and two migrators on one shard at once apply each migration once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::Fixture;
use shardlite::client::ShardedClient;
use shardlite::data::{SchemaMigrationRequest, SchemaMigrationState};
use shardlite::driver::ShardlitePool;
use sqlx::migrate::{MigrateError, Migrator};

/// A seeded four-shard master (`orders_by_month`) and a migration folder: two that create
/// tables, then six that each log their version.
async fn fixture() -> Fixture {
    let fx = Fixture::orders().await;
    let logged = (3..=8).map(|version| {
        (
            format!("{version:04}_log_{version}.sql"),
            format!("INSERT INTO migration_log (version) VALUES ({version});\nCREATE TABLE t{version} (x);\n"),
        )
    });
    fx.write_migrations(
        [
            (
                "0001_create_orders.sql".to_owned(),
                "CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL, total REAL NOT NULL);\n"
                    .to_owned(),
            ),
            (
                "0002_create_log.sql".to_owned(),
                "CREATE TABLE migration_log (version INTEGER NOT NULL);\n".to_owned(),
            ),
        ]
        .into_iter()
        .chain(logged),
    );
    fx
}

/// What a shard file records of the migrations.
trait ShardState {
    fn shard_state(&self, shard: &str) -> (Vec<i64>, Vec<i64>);
}

impl ShardState for Fixture {
    /// Versions in a shard file's `_sqlx_migrations` (empty without the table), and its log.
    fn shard_state(&self, shard: &str) -> (Vec<i64>, Vec<i64>) {
        let conn = rusqlite::Connection::open(self.shard_file(shard)).unwrap();
        let read = |sql: &str| -> Vec<i64> {
            match conn.prepare(sql) {
                Ok(mut stmt) => stmt
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .collect::<rusqlite::Result<_>>()
                    .unwrap(),
                Err(_) => Vec::new(),
            }
        };
        (
            read("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version"),
            read("SELECT version FROM migration_log ORDER BY version"),
        )
    }
}

async fn migrator(dir: &Path) -> Migrator {
    Migrator::new(dir.to_path_buf()).await.unwrap()
}

const ALL: [i64; 8] = [1, 2, 3, 4, 5, 6, 7, 8];
const LOGGED: [i64; 6] = [3, 4, 5, 6, 7, 8];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrator_run_on_a_route_bound_pool_migrates_that_shard_only() {
    let fx = fixture().await;
    // 2026-06 is pinned to shard-0.
    let pool = ShardlitePool::connect(&fx.connection_string("2026-06")).await.unwrap();
    let m = migrator(&fx.migrations_dir()).await;
    m.run(&pool).await.unwrap();
    assert_eq!(fx.shard_state("shard-0"), (ALL.to_vec(), LOGGED.to_vec()));
    for other in ["shard-1", "shard-2", "shard-3"] {
        assert_eq!(fx.shard_state(other), (vec![], vec![]), "{other} must be untouched");
    }
    // A second run finds everything applied and validates the checksums it wrote.
    m.run(&pool).await.unwrap();
    assert_eq!(fx.shard_state("shard-0").1, LOGGED);

    // The rows sqlx wrote are the rows `schema migrate` writes: it skips shard-0 and brings the
    // others to the same version.
    let sharded = ShardedClient::open(&fx.master).await.unwrap();
    let request = SchemaMigrationRequest::new(shardlite::schema::read_migration_dir(fx.migrations_dir()).unwrap());
    let report = sharded.schema().migrate(&request).await.unwrap();
    let states: Vec<SchemaMigrationState> = report.shards.iter().map(|s| s.state).collect();
    assert_eq!(
        states,
        [
            SchemaMigrationState::UpToDate,
            SchemaMigrationState::Migrated,
            SchemaMigrationState::Migrated,
            SchemaMigrationState::Migrated
        ]
    );
    let status = sharded.schema().status().await.unwrap();
    assert_eq!(status.drifted().count(), 0, "{status:?}");
    assert_eq!(status.majority_versions, ALL);

    // And sqlx reads the rows `schema migrate` wrote: a route on shard-3 has nothing left to do.
    let pool3 = ShardlitePool::connect(&fx.connection_string("2025-12")).await.unwrap();
    m.run(&pool3).await.unwrap();
    assert_eq!(fx.shard_state("shard-3"), (ALL.to_vec(), LOGGED.to_vec()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrator_run_on_an_any_pool_migrates_the_route_shard() {
    crate::install_any_driver();
    let fx = fixture().await;
    // 2026-05 is pinned to shard-1.
    let url = format!(
        "shardlite://{}?shard_keyspace=orders_by_month&shard_key=2026-05",
        fx.master.display()
    );
    let pool = sqlx::AnyPool::connect(&url).await.unwrap();
    migrator(&fx.migrations_dir()).await.run(&pool).await.unwrap();
    assert_eq!(fx.shard_state("shard-1"), (ALL.to_vec(), LOGGED.to_vec()));
    for other in ["shard-0", "shard-2", "shard-3"] {
        assert_eq!(fx.shard_state(other), (vec![], vec![]), "{other} must be untouched");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_migration_is_refused_by_version() {
    let fx = fixture().await;
    let pool = ShardlitePool::connect(&fx.connection_string("2026-06")).await.unwrap();
    migrator(&fx.migrations_dir()).await.run(&pool).await.unwrap();
    std::fs::write(
        fx.migrations_dir().join("0001_create_orders.sql"),
        "CREATE TABLE orders (id INTEGER PRIMARY KEY);\n",
    )
    .unwrap();
    let err = migrator(&fx.migrations_dir()).await.run(&pool).await.unwrap_err();
    assert!(matches!(err, MigrateError::VersionMismatch(1)), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_migrators_on_one_shard_at_once_apply_each_migration_once() {
    let fx = fixture().await;
    // Two pools from two connection strings: two engines on the same file, as two processes.
    let a = ShardlitePool::connect(&fx.connection_string("2026-06")).await.unwrap();
    let b = ShardlitePool::connect(&format!(
        "Data Source={};Shard Keyspace=orders_by_month;Shard Key=2026-06;Busy Timeout=2",
        fx.master.display()
    ))
    .await
    .unwrap();
    let m = migrator(&fx.migrations_dir()).await;
    let (ra, rb) = tokio::join!(m.run(&a), m.run(&b));
    ra.unwrap();
    rb.unwrap();
    assert_eq!(fx.shard_state("shard-0"), (ALL.to_vec(), LOGGED.to_vec()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_database_creates_and_drops_plain_files_but_never_shards() {
    use shardlite::driver::Shardlite;
    use sqlx::migrate::MigrateDatabase;

    let fx = fixture().await;
    let plain = fx.dir.path().join("plain.db");
    let url = format!("Data Source={}", plain.display());
    assert!(!Shardlite::database_exists(&url).await.unwrap());
    Shardlite::create_database(&url).await.unwrap();
    assert!(plain.exists());
    assert!(Shardlite::database_exists(&url).await.unwrap());
    Shardlite::drop_database(&url).await.unwrap();
    assert!(!plain.exists());

    let routed = fx.connection_string("2026-06");
    assert!(Shardlite::database_exists(&routed).await.unwrap());
    Shardlite::create_database(&routed).await.unwrap();
    let err = Shardlite::drop_database(&routed).await.unwrap_err().to_string();
    assert!(err.contains("does not drop shards"), "{err}");
    assert!(fx.master.exists());
    let missing = format!(
        "Data Source={};Shard Keyspace=orders_by_month;Shard Key=2026-06",
        fx.dir.path().join("nowhere.db").display()
    );
    let err = Shardlite::create_database(&missing).await.unwrap_err().to_string();
    assert!(err.contains("shardlite seed"), "{err}");
}

#[cfg(all(feature = "server", feature = "http", feature = "grpc"))]
mod through_a_daemon {
    use super::*;
    use crate::support::daemon::start_daemon_on;
    use shardlite::server::ServerConfig;

    fn remote(base_url: &str, transport: &str, key: &str) -> String {
        format!("Endpoint={base_url};Transport={transport};Shard Keyspace=orders_by_month;Shard Key={key}")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn migrator_run_over_grpc_and_rest_migrates_the_route_shard() {
        let fx = fixture().await;
        let daemon = start_daemon_on(&fx.master, ServerConfig::default()).await;
        let m = migrator(&fx.migrations_dir()).await;
        // 2026-05 is pinned to shard-1, 2026-04 to shard-2.
        let grpc = ShardlitePool::connect(&remote(&daemon.base_url, "Grpc", "2026-05"))
            .await
            .unwrap();
        m.run(&grpc).await.unwrap();
        let http = ShardlitePool::connect(&remote(&daemon.base_url, "Http", "2026-04"))
            .await
            .unwrap();
        m.run(&http).await.unwrap();
        m.run(&http).await.unwrap();
        assert_eq!(fx.shard_state("shard-1"), (ALL.to_vec(), LOGGED.to_vec()));
        assert_eq!(fx.shard_state("shard-2"), (ALL.to_vec(), LOGGED.to_vec()));
        assert_eq!(fx.shard_state("shard-0"), (vec![], vec![]));
        assert_eq!(fx.shard_state("shard-3"), (vec![], vec![]));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_remote_and_a_local_migrator_at_once_apply_each_migration_once() {
        let fx = fixture().await;
        let daemon = start_daemon_on(&fx.master, ServerConfig::default()).await;
        let m = migrator(&fx.migrations_dir()).await;
        let over_grpc = ShardlitePool::connect(&remote(&daemon.base_url, "Grpc", "2026-06"))
            .await
            .unwrap();
        let local = ShardlitePool::connect(&fx.connection_string("2026-06")).await.unwrap();
        let (ra, rb) = tokio::join!(m.run(&over_grpc), m.run(&local));
        ra.unwrap();
        rb.unwrap();
        assert_eq!(fx.shard_state("shard-0"), (ALL.to_vec(), LOGGED.to_vec()));
        let sharded = ShardedClient::open(&fx.master).await.unwrap();
        let status = sharded.schema().status().await.unwrap();
        assert_eq!(status.shards[0].applied_versions, ALL);
    }
}
