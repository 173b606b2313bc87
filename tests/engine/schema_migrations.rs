//! Schema migrations across the four shards of a seeded master, in-process and through a real
//! daemon (REST and gRPC): one pre-broken shard is reported while the others migrate and a run
//! after the repair brings all four to the target; a dry run changes nothing; the rows written
//! are sqlx's own; a hand-made `ALTER TABLE` shows as drift; two runs at once never apply a
//! migration twice.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use crate::support::Fixture;
use shardlite::ErrorKind;
use shardlite::client::{SchemaAdmin, ShardAdmin, ShardedClient};
use shardlite::data::{
    SchemaChange, SchemaMigrationReport, SchemaMigrationRequest, SchemaMigrationState, ShardSchemaStatus,
};
use shardlite::schema::read_migration_dir;

const SHARDS: [&str; 4] = ["shard-0", "shard-1", "shard-2", "shard-3"];

/// A row of `_sqlx_migrations`: version, description, success, checksum, execution time.
type RecordedRow = (i64, String, bool, Vec<u8>, i64);

/// A seeded four-shard master and a folder of three migrations.
async fn fixture() -> Fixture {
    let fx = Fixture::orders().await;
    fx.write_migrations([
        (
            "0001_create_orders.sql",
            "CREATE TABLE orders (\n    id INTEGER PRIMARY KEY,\n    order_month TEXT NOT NULL,\n    total REAL NOT NULL\n);\n",
        ),
        (
            "0002_index_orders.sql",
            "CREATE INDEX orders_by_month ON orders (order_month);\n",
        ),
        (
            "0003_create_audit.sql",
            "CREATE TABLE audit (id INTEGER PRIMARY KEY, note TEXT NOT NULL);\n",
        ),
    ]);
    fx
}

/// The fixture's migrations as a request, and what a shard file records of them.
trait Migrations {
    fn request(&self) -> SchemaMigrationRequest;
    fn recorded(&self, shard: &str) -> Option<Vec<RecordedRow>>;
}

impl Migrations for Fixture {
    fn request(&self) -> SchemaMigrationRequest {
        SchemaMigrationRequest::new(read_migration_dir(self.migrations_dir()).unwrap())
    }

    /// `(version, description, success, checksum, execution_time)` rows of a shard's
    /// `_sqlx_migrations`, read from the file; `None` when the table does not exist.
    fn recorded(&self, shard: &str) -> Option<Vec<RecordedRow>> {
        let conn = rusqlite::Connection::open(self.shard_file(shard)).unwrap();
        let exists: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = '_sqlx_migrations'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        if exists == 0 {
            return None;
        }
        let mut stmt = conn
            .prepare(
                "SELECT version, description, success, checksum, execution_time FROM _sqlx_migrations ORDER BY version",
            )
            .unwrap();
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        Some(rows)
    }
}

fn states(report: &SchemaMigrationReport) -> Vec<(&str, SchemaMigrationState)> {
    report.shards.iter().map(|s| (s.shard_id.as_str(), s.state)).collect()
}

fn versions(steps: &[shardlite::data::SchemaStep]) -> Vec<i64> {
    steps.iter().map(|s| s.version).collect()
}

fn status_of<'a>(shards: &'a [ShardSchemaStatus], id: &str) -> &'a ShardSchemaStatus {
    shards.iter().find(|s| s.shard_id == id).unwrap()
}

/// The whole workflow through `admin` (in-process, REST or gRPC).
async fn broken_shard_then_repair_then_drift(fx: &Fixture, admin: &dyn ShardAdmin) {
    // shard-2 was set up by hand once, with a table of its own named like migration 3's.
    fx.by_hand("shard-2", "CREATE TABLE audit (legacy TEXT)");

    // A dry run lists everything for every shard and changes nothing.
    let dry = admin.migrate_schema(&fx.request().dry_run(true)).await.unwrap();
    assert!(dry.dry_run);
    assert_eq!(dry.target_version, Some(3));
    for shard in &dry.shards {
        assert_eq!(shard.state, SchemaMigrationState::WouldMigrate, "{shard:?}");
        assert_eq!(versions(&shard.pending), [1, 2, 3]);
        assert!(shard.applied.is_empty());
    }
    assert_eq!(dry.shards.len(), 4);
    for shard in SHARDS {
        assert_eq!(
            fx.recorded(shard),
            None,
            "a dry run must not create _sqlx_migrations on {shard}"
        );
    }

    // The broken shard fails at migration 3, by name; the other three reach the target.
    let first = admin.migrate_schema(&fx.request()).await.unwrap();
    assert_eq!(
        states(&first),
        [
            ("shard-0", SchemaMigrationState::Migrated),
            ("shard-1", SchemaMigrationState::Migrated),
            ("shard-2", SchemaMigrationState::Failed),
            ("shard-3", SchemaMigrationState::Migrated),
        ]
    );
    assert!(!first.all_at_target());
    let broken = &first.shards[2];
    assert_eq!(broken.failed_version, Some(3));
    assert_eq!(versions(&broken.applied), [1, 2]);
    assert_eq!(versions(&broken.pending), [3]);
    assert_eq!(broken.version_after, Some(2));
    let error = broken.error.as_deref().unwrap();
    assert!(error.contains("audit") && error.contains("already exists"), "{error}");
    assert_eq!(broken.error_code.as_deref(), Some(ErrorKind::Sql.code()));
    for shard in [&first.shards[0], &first.shards[1], &first.shards[3]] {
        assert_eq!(versions(&shard.applied), [1, 2, 3]);
        assert_eq!((shard.version_before, shard.version_after), (None, Some(3)));
    }
    // The failed migration left nothing behind: no row, and the legacy table is untouched.
    let rows = fx.recorded("shard-2").unwrap();
    assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 2]);

    // Status shows the broken shard behind the majority, with the table that differs.
    let status = admin.schema_status().await.unwrap();
    assert_eq!(status.majority_versions, [1, 2, 3]);
    let drifted: Vec<&str> = status.drifted().map(|s| s.shard_id.as_str()).collect();
    assert_eq!(drifted, ["shard-2"]);
    let shard2 = status_of(&status.shards, "shard-2");
    assert_eq!(shard2.applied_versions, [1, 2]);
    assert_eq!(shard2.missing_versions, [3]);
    assert!(
        shard2
            .differences
            .iter()
            .any(|d| d.name == "audit" && d.object_type == "table" && d.change == SchemaChange::Different),
        "{shard2:?}"
    );

    // After the repair, the same run again migrates only what is missing.
    fx.by_hand("shard-2", "DROP TABLE audit");
    let second = admin.migrate_schema(&fx.request()).await.unwrap();
    assert_eq!(
        states(&second),
        [
            ("shard-0", SchemaMigrationState::UpToDate),
            ("shard-1", SchemaMigrationState::UpToDate),
            ("shard-2", SchemaMigrationState::Migrated),
            ("shard-3", SchemaMigrationState::UpToDate),
        ]
    );
    assert!(second.all_at_target());
    assert_eq!(versions(&second.shards[2].applied), [3]);
    assert_eq!(
        (second.shards[2].version_before, second.shards[2].version_after),
        (Some(2), Some(3))
    );
    for shard in [&second.shards[0], &second.shards[1], &second.shards[3]] {
        assert!(shard.applied.is_empty());
        assert_eq!(shard.version_after, Some(3));
    }

    // Every shard recorded sqlx's rows: descriptions and SHA-384 checksums of the files.
    let expected = read_migration_dir(fx.migrations_dir()).unwrap();
    for shard in SHARDS {
        let rows = fx.recorded(shard).unwrap();
        assert_eq!(rows.len(), 3, "{shard}");
        for (row, migration) in rows.iter().zip(&expected) {
            assert_eq!(row.0, migration.version);
            assert_eq!(row.1, migration.description);
            assert!(row.2, "success");
            assert_eq!(row.3, migration.checksum());
            assert!(row.4 >= 0, "execution time in nanoseconds");
        }
    }
    let status = admin.schema_status().await.unwrap();
    assert_eq!(status.drifted().count(), 0, "{status:?}");
    let fingerprints: std::collections::BTreeSet<_> = status.shards.iter().map(|s| s.fingerprint.clone()).collect();
    assert_eq!(fingerprints.len(), 1);

    // A hand-made ALTER TABLE on one shard is drift, with a diff naming the table.
    fx.by_hand("shard-1", "ALTER TABLE orders ADD COLUMN note TEXT");
    let status = admin.schema_status().await.unwrap();
    let drifted: Vec<&ShardSchemaStatus> = status.drifted().collect();
    assert_eq!(drifted.len(), 1, "{status:?}");
    let shard1 = drifted[0];
    assert_eq!(shard1.shard_id, "shard-1");
    assert_eq!(
        shard1.applied_versions,
        [1, 2, 3],
        "versions agree: only the schema drifts"
    );
    assert!(shard1.missing_versions.is_empty() && shard1.extra_versions.is_empty());
    assert_eq!(shard1.differences.len(), 1, "{shard1:?}");
    let diff = &shard1.differences[0];
    assert_eq!(
        (diff.object_type.as_str(), diff.name.as_str(), diff.change),
        ("table", "orders", SchemaChange::Different)
    );
    assert_ne!(shard1.fingerprint, status.majority_fingerprint);

    // A migration edited after it was applied is refused on every shard, by version.
    std::fs::write(
        fx.migrations_dir().join("0002_index_orders.sql"),
        "CREATE INDEX orders_by_month ON orders (order_month, total);\n",
    )
    .unwrap();
    let changed = admin.migrate_schema(&fx.request()).await.unwrap();
    for shard in &changed.shards {
        assert_eq!(shard.state, SchemaMigrationState::Failed);
        assert_eq!(shard.error_code.as_deref(), Some(ErrorKind::Conflict.code()));
        assert!(
            shard.error.as_deref().unwrap().contains("migration 2 was changed"),
            "{shard:?}"
        );
    }
}

/// Migrations 4..=9 each log their version; a migration applied twice logs it twice.
fn logging_migrations(dir: &Path) -> SchemaMigrationRequest {
    let mut request = SchemaMigrationRequest::new(read_migration_dir(dir.join("migrations")).unwrap());
    request.migrations.push(shardlite::data::SchemaScript::new(
        4,
        "create log",
        "CREATE TABLE migration_log (version INTEGER NOT NULL)",
    ));
    for version in 5..=9 {
        request.migrations.push(shardlite::data::SchemaScript::new(
            version,
            format!("log {version}"),
            format!("INSERT INTO migration_log (version) VALUES ({version}); CREATE TABLE t{version} (x)"),
        ));
    }
    request
}

/// Two runs at once (`a` and `b`, each its own engine on the same files) apply every migration
/// exactly once on every shard.
async fn concurrent_runs_apply_each_migration_once(fx: &Fixture, a: &dyn ShardAdmin, b: &dyn ShardAdmin) {
    let request = logging_migrations(fx.dir.path());
    let (first, second) = tokio::join!(a.migrate_schema(&request), b.migrate_schema(&request));
    let (first, second) = (first.unwrap(), second.unwrap());
    assert!(first.all_at_target(), "{first:?}");
    assert!(second.all_at_target(), "{second:?}");
    for (index, shard) in SHARDS.iter().enumerate() {
        let mut applied = versions(&first.shards[index].applied);
        applied.extend(versions(&second.shards[index].applied));
        applied.sort_unstable();
        assert_eq!(
            applied,
            [1, 2, 3, 4, 5, 6, 7, 8, 9],
            "{shard}: applied between the two runs"
        );
        let conn = rusqlite::Connection::open(fx.shard_file(shard)).unwrap();
        let logged: Vec<i64> = conn
            .prepare("SELECT version FROM migration_log ORDER BY version")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(logged, [5, 6, 7, 8, 9], "{shard}: a migration ran twice");
        assert_eq!(fx.recorded(shard).unwrap().len(), 9);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_a_broken_shard_is_reported_repaired_and_drift_is_flagged() {
    let fx = fixture().await;
    let sharded = ShardedClient::open(&fx.master).await.unwrap();
    broken_shard_then_repair_then_drift(&fx, &sharded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_two_runs_at_once_apply_each_migration_once() {
    let fx = fixture().await;
    let a = ShardedClient::open(&fx.master).await.unwrap();
    let b = ShardedClient::open(&fx.master).await.unwrap();
    concurrent_runs_apply_each_migration_once(&fx, &a, &b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_sets_and_unknown_shards_are_errors_before_anything_runs() {
    let fx = fixture().await;
    let sharded = ShardedClient::open(&fx.master).await.unwrap();
    let mut request = fx.request();
    request.migrations.push(shardlite::data::SchemaScript::new(
        4,
        "attach",
        "ATTACH 'elsewhere.db' AS e",
    ));
    let err = sharded.schema().migrate(&request).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("migration 4 (attach)"), "{err}");
    let err = sharded
        .schema()
        .migrate(&fx.request().on_shards(["shard-9"]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    for shard in SHARDS {
        assert_eq!(fx.recorded(shard), None, "nothing may run on {shard}");
    }
    // One shard only.
    let report = sharded
        .schema()
        .migrate(&fx.request().on_shards(["SHARD-1"]))
        .await
        .unwrap();
    assert_eq!(states(&report), [("shard-1", SchemaMigrationState::Migrated)]);
    assert_eq!(fx.recorded("shard-0"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_transaction_migration_is_claimed_then_recorded_and_a_failed_one_leaves_no_row() {
    let fx = fixture().await;
    let sharded = ShardedClient::open(&fx.master).await.unwrap();
    let mut request = fx.request();
    request.migrations.push(shardlite::data::SchemaScript::new(
        4,
        "outside a transaction",
        "-- no-transaction\nCREATE TABLE nt (x);",
    ));
    let report = sharded.schema().migrate(&request).await.unwrap();
    assert!(report.all_at_target(), "{report:?}");
    for shard in SHARDS {
        let rows = fx.recorded(shard).unwrap();
        assert_eq!(rows.len(), 4);
        assert!(rows.iter().all(|row| row.2), "{shard}: every row successful");
    }
    // A failing one is reported and leaves no row, so a fixed rerun applies it.
    request.migrations.push(shardlite::data::SchemaScript::new(
        5,
        "broken",
        "-- no-transaction\nCREATE TABLE nt (x);",
    ));
    let report = sharded.schema().migrate(&request).await.unwrap();
    assert!(report.shards.iter().all(|s| s.failed_version == Some(5)), "{report:?}");
    assert_eq!(fx.recorded("shard-0").unwrap().len(), 4);
    request.migrations[4].sql = "-- no-transaction\nCREATE TABLE nt2 (x);".into();
    let report = sharded.schema().migrate(&request).await.unwrap();
    assert!(report.all_at_target(), "{report:?}");
    assert!(report.shards.iter().all(|s| versions(&s.applied) == [5]));
}

#[cfg(all(feature = "server", feature = "http", feature = "grpc"))]
mod through_a_daemon {
    use std::sync::Arc;

    use super::*;
    use crate::support::daemon::start_daemon_on;
    use shardlite::server::ServerConfig;
    use shardlite::transport::RemoteOptions;
    use shardlite::transport::grpc::GrpcClient;
    use shardlite::transport::http::HttpClient;

    async fn clients(fx: &Fixture) -> (crate::support::daemon::Daemon, Arc<HttpClient>, Arc<GrpcClient>) {
        let daemon = start_daemon_on(&fx.master, ServerConfig::default()).await;
        let http = Arc::new(HttpClient::new(RemoteOptions::new(&daemon.base_url)).unwrap());
        let grpc = Arc::new(GrpcClient::new(RemoteOptions::new(&daemon.base_url)).unwrap());
        (daemon, http, grpc)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn over_rest_a_broken_shard_is_reported_repaired_and_drift_is_flagged() {
        let fx = fixture().await;
        let (_daemon, http, _) = clients(&fx).await;
        broken_shard_then_repair_then_drift(&fx, &*http).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn over_grpc_a_broken_shard_is_reported_repaired_and_drift_is_flagged() {
        let fx = fixture().await;
        let (_daemon, _, grpc) = clients(&fx).await;
        broken_shard_then_repair_then_drift(&fx, &*grpc).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_daemon_and_an_application_migrating_at_once_apply_each_migration_once() {
        let fx = fixture().await;
        let (_daemon, http, grpc) = clients(&fx).await;
        let local = ShardedClient::open(&fx.master).await.unwrap();
        concurrent_runs_apply_each_migration_once(&fx, &*grpc, &local).await;
        // A third run over REST finds nothing to do.
        let again = http.migrate_schema(&logging_migrations(fx.dir.path())).await.unwrap();
        assert!(
            again.shards.iter().all(|s| s.state == SchemaMigrationState::UpToDate),
            "{again:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rest_refuses_a_bad_set_with_a_problem_body() {
        let fx = fixture().await;
        let (daemon, _, _) = clients(&fx).await;
        let response = crate::support::daemon::http_client()
            .post(daemon.url("/api/sharding/schema/migrate"))
            .json(&serde_json::json!({
                "migrations": [
                    {"version": 1, "description": "a", "sql": "CREATE TABLE a (x)"},
                    {"version": 1, "description": "b", "sql": "CREATE TABLE b (x)"}
                ]
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["errorCode"], "invalid_input");
        assert!(body["detail"].as_str().unwrap().contains("appears twice"), "{body}");
        let doc: serde_json::Value = crate::support::daemon::http_client()
            .get(daemon.url("/openapi.json"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(doc["paths"]["/api/sharding/schema/migrate"]["post"].is_object());
        assert!(doc["paths"]["/api/sharding/schema"]["get"].is_object());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn grpc_refuses_a_bad_set_with_its_kind_and_a_plain_daemon_is_not_sharded() {
        let fx = fixture().await;
        let (_daemon, _, grpc) = clients(&fx).await;
        let mut request = fx.request();
        request.migrations[0].sql = "BEGIN; CREATE TABLE x (y); COMMIT".into();
        let err = grpc.migrate_schema(&request).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("migration 1 (create orders)"), "{err}");
        for shard in SHARDS {
            assert_eq!(fx.recorded(shard), None);
        }

        let plain = start_daemon_on(&fx.dir.path().join("shard-0.db"), ServerConfig::default()).await;
        let response = crate::support::daemon::http_client()
            .get(plain.url("/api/sharding/schema"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404);
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["errorCode"], "not_sharded");
        let plain_grpc = GrpcClient::new(RemoteOptions::new(&plain.base_url)).unwrap();
        let err = plain_grpc.schema_status().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotSharded);
    }
}
