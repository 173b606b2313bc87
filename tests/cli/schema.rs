//! `shardlite schema migrate|status` end to end on a four-shard master, locally and through a
//! daemon: a pre-broken shard named in the output and the exit code, the rerun after the repair,
//! dry runs, per-shard progress, drift after a hand-made `ALTER TABLE`, and two processes
//! migrating at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::by_hand;
use crate::support::cli::{json_of, seeded_with, shardlite, stderr, stdout};

const SHARDS: [&str; 4] = ["shard-0", "shard-1", "shard-2", "shard-3"];

/// The orders map seeded through `shardlite seed`, with three migrations in `dir/migrations`.
fn orders_with_migrations(dir: &Path) -> String {
    let conn = seeded_with(dir, &crate::support::orders_options());
    let migrations = dir.join("migrations");
    std::fs::create_dir(&migrations).unwrap();
    for (name, sql) in [
        (
            "0001_create_orders.sql",
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL);",
        ),
        (
            "0002_index_orders.sql",
            "CREATE INDEX orders_by_month ON orders (order_month);",
        ),
        (
            "0003_create_audit.sql",
            "CREATE TABLE audit (id INTEGER PRIMARY KEY, note TEXT);",
        ),
    ] {
        std::fs::write(migrations.join(name), sql).unwrap();
    }
    conn
}

fn migrations(dir: &Path) -> String {
    dir.join("migrations").to_str().unwrap().to_owned()
}

fn column(dir: &Path, shard: &str, sql: &str) -> Vec<i64> {
    let conn = rusqlite::Connection::open(dir.join(format!("{shard}.db"))).unwrap();
    conn.prepare(sql)
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn a_broken_shard_fails_by_name_and_a_rerun_after_the_repair_brings_all_four_to_the_target() {
    let dir = crate::support::temp_dir();
    let conn = orders_with_migrations(dir.path());
    let folder = migrations(dir.path());
    by_hand(dir.path(), "shard-2", "CREATE TABLE audit (legacy TEXT)");

    // The dry run lists what would run where and changes nothing.
    let out = shardlite(&["schema", "migrate", "-c", &conn, &folder, "--dry-run", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dry = json_of(&out);
    for (shard, report) in SHARDS.iter().zip(dry["shards"].as_array().unwrap()) {
        assert_eq!(report["shardId"], *shard);
        assert_eq!(report["state"], "wouldMigrate");
        let pending: Vec<i64> = report["pending"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["version"].as_i64().unwrap())
            .collect();
        assert_eq!(pending, [1, 2, 3]);
    }
    let out = shardlite(&["schema", "migrate", "-c", &conn, &folder, "--dry-run"]);
    assert!(stdout(&out).contains("dry run: nothing changed"), "{}", stdout(&out));
    assert!(
        column(
            dir.path(),
            "shard-0",
            "SELECT count(*) FROM sqlite_master WHERE name = '_sqlx_migrations'"
        ) == [0]
    );

    // The real run: progress per shard, shard-2 named with its error, non-zero exit.
    let out = shardlite(&["schema", "migrate", "-c", &conn, &folder, "--progress", "always"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    for shard in SHARDS {
        assert!(err.contains(&format!("{shard}: migrating")), "{err}");
    }
    assert!(err.contains("shard-0: migrated - -> 3 (applied 1, 2, 3)"), "{err}");
    assert!(err.contains("shard-2: FAILED at migration 3"), "{err}");
    assert!(err.contains("already exists"), "{err}");
    assert!(err.contains("1 shard(s) are not at version 3: shard-2"), "{err}");
    assert!(
        stdout(&out).contains("3 of 4 shard(s) at target version 3"),
        "{}",
        stdout(&out)
    );
    for shard in ["shard-0", "shard-1", "shard-3"] {
        assert_eq!(
            column(dir.path(), shard, "SELECT version FROM _sqlx_migrations"),
            [1, 2, 3]
        );
    }
    assert_eq!(
        column(dir.path(), "shard-2", "SELECT version FROM _sqlx_migrations"),
        [1, 2]
    );

    // Status flags shard-2 as behind, and exits non-zero.
    let out = shardlite(&["schema", "status", "-c", &conn, "--json"]);
    assert!(!out.status.success());
    let status = json_of(&out);
    assert_eq!(status["majorityVersions"], serde_json::json!([1, 2, 3]));
    assert_eq!(status["shards"][2]["drift"], true);
    assert_eq!(status["shards"][2]["missingVersions"], serde_json::json!([3]));
    assert_eq!(status["shards"][0]["drift"], false);
    assert!(
        stderr(&out).contains("1 shard(s) drift from the majority: shard-2"),
        "{}",
        stderr(&out)
    );

    // After the repair the same command finishes the job and exits zero.
    by_hand(dir.path(), "shard-2", "DROP TABLE audit");
    let out = shardlite(&["schema", "migrate", "-c", &conn, &folder, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json_of(&out);
    let states: Vec<&str> = report["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["upToDate", "upToDate", "migrated", "upToDate"]);
    let out = shardlite(&["schema", "status", "-c", &conn]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("4 shard(s), 0 drifting"), "{}", stdout(&out));

    // A hand-made ALTER TABLE is drift, with the table named.
    by_hand(dir.path(), "shard-1", "ALTER TABLE orders ADD COLUMN note TEXT");
    let out = shardlite(&["schema", "status", "-c", &conn]);
    assert!(!out.status.success());
    let table = stdout(&out);
    assert!(table.contains("table orders differs"), "{table}");
    assert!(table.contains("DRIFT"), "{table}");
    assert!(
        stderr(&out).contains("drift from the majority: shard-1"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_folders_are_refused_naming_the_problem() {
    let dir = crate::support::temp_dir();
    let conn = orders_with_migrations(dir.path());
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = shardlite(&["schema", "migrate", "-c", &conn, empty.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("holds no <VERSION>_<DESCRIPTION>.sql files"),
        "{}",
        stderr(&out)
    );
    std::fs::write(dir.path().join("migrations").join("next_step.sql"), "SELECT 1").unwrap();
    let out = shardlite(&["schema", "migrate", "-c", &conn, &migrations(dir.path())]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("next_step.sql"), "{}", stderr(&out));
}

fn spawn_migrate(conn: &str, folder: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_shardlite"))
        .args(["schema", "migrate", "-c", conn, folder, "--json"])
        .env_remove("SHARDLITE_CONNECTION")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn two_processes_migrating_at_once_never_apply_a_migration_twice() {
    let dir = crate::support::temp_dir();
    let conn = orders_with_migrations(dir.path());
    let folder = dir.path().join("migrations");
    std::fs::write(
        folder.join("0004_create_log.sql"),
        "CREATE TABLE migration_log (version INTEGER NOT NULL);",
    )
    .unwrap();
    for version in 5..=16 {
        std::fs::write(
            folder.join(format!("{version:04}_log_{version}.sql")),
            format!("INSERT INTO migration_log VALUES ({version}); CREATE TABLE t{version} (x);"),
        )
        .unwrap();
    }
    let folder = migrations(dir.path());
    let first = spawn_migrate(&conn, &folder);
    let second = spawn_migrate(&conn, &folder);
    let (first, second) = (first.wait_with_output().unwrap(), second.wait_with_output().unwrap());
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(second.status.success(), "{}", stderr(&second));
    let logged: Vec<i64> = (5..=16).collect();
    for shard in SHARDS {
        assert_eq!(
            column(dir.path(), shard, "SELECT version FROM migration_log ORDER BY version"),
            logged,
            "{shard}: a migration ran twice or not at all"
        );
        assert_eq!(
            column(dir.path(), shard, "SELECT count(*) FROM _sqlx_migrations WHERE success"),
            [16]
        );
    }
    // Between them the two runs applied each migration once per shard.
    let applied = |out: &Output| -> Vec<usize> {
        json_of(out)["shards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["applied"].as_array().unwrap().len())
            .collect()
    };
    let (a, b) = (applied(&first), applied(&second));
    for shard in 0..4 {
        assert_eq!(a[shard] + b[shard], 16, "shard-{shard}: {a:?} + {b:?}");
    }
}

#[cfg(feature = "server")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_commands_work_through_a_daemon() {
    let dir = crate::support::temp_dir();
    orders_with_migrations(dir.path());
    let folder = migrations(dir.path());
    let master = dir.path().join("master.db");
    let daemon = crate::support::daemon::start_daemon_on(&master, shardlite::server::ServerConfig::default()).await;
    by_hand(dir.path(), "shard-3", "CREATE TABLE audit (legacy TEXT)");
    for transport in ["Grpc", "Http"] {
        let remote = format!("Endpoint={};Transport={transport}", daemon.base_url);
        let out = {
            let (remote, folder) = (remote.clone(), folder.clone());
            tokio::task::spawn_blocking(move || shardlite(&["schema", "migrate", "-c", &remote, &folder]))
                .await
                .unwrap()
        };
        assert!(!out.status.success(), "{transport}");
        assert!(
            stderr(&out).contains("not at version 3: shard-3"),
            "{transport}: {}",
            stderr(&out)
        );
    }
    by_hand(dir.path(), "shard-3", "DROP TABLE audit");
    let remote = format!("Endpoint={};Transport=Grpc", daemon.base_url);
    let out = {
        let (remote, folder) = (remote.clone(), folder.clone());
        tokio::task::spawn_blocking(move || {
            shardlite(&["schema", "migrate", "-c", &remote, &folder, "--progress", "always"])
        })
        .await
        .unwrap()
    };
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("shard-3: migrated 2 -> 3 (applied 3)"),
        "{}",
        stderr(&out)
    );
    let out = tokio::task::spawn_blocking(move || shardlite(&["schema", "status", "-c", &remote, "--json"]))
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let status = json_of(&out);
    assert_eq!(status["majorityVersions"], serde_json::json!([1, 2, 3]));
    assert_eq!(status["shards"].as_array().unwrap().len(), 4);
}
