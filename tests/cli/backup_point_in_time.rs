//! `serve --archive-dir` and `backup restore --to-time`: rows a daemon acknowledged up to a
//! moment come back with the map of that moment, rows written more than a second after it do not, and the restored files
//! open in the system's older `sqlite3`; `shardlite_archive_lag_seconds` names each shard being
//! written (checked by promtool).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::support::cli::{seeded, shardlite, stderr};
use crate::support::promtool::promtool_check;
use crate::support::serve::ServeProcess;
use crate::support::{old_sqlite, route, temp_dir, with_third_shard};
use shardlite::client::{DataClient, Params, ShardedClient, SqlData, Value};
use shardlite::options::ConnectionOptions;

const TENANTS: [&str; 2] = ["tenant-a", "tenant-b"];

fn tenant_of(id: i64) -> &'static str {
    TENANTS[usize::try_from(id % 2).unwrap()]
}

async fn remote(base_url: &str, tenant: &str) -> Arc<dyn DataClient> {
    let text = format!("Endpoint={base_url};Transport=Http;Shard Keyspace=tenants;Shard Key={tenant}");
    shardlite::connect::connect(&ConnectionOptions::parse(&text).unwrap())
        .await
        .unwrap()
        .into_client()
        .unwrap()
}

async fn ids_in(master: &Path, tenant: &str) -> Vec<i64> {
    let sharded = ShardedClient::open(master).await.unwrap();
    let rows = sharded
        .for_route(route(tenant))
        .execute_read_only_sql("SELECT id FROM items ORDER BY id", Params::none())
        .await
        .unwrap();
    rows.rows
        .iter()
        .map(|r| match r[0] {
            Value::Integer(i) => i,
            ref other => panic!("{other:?}"),
        })
        .collect()
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

fn restore(set: &Path, to: &Path, at: &str, archive: &Path) -> std::process::Output {
    shardlite(&[
        "backup",
        "restore",
        set.to_str().unwrap(),
        "--to",
        to.to_str().unwrap(),
        "--to-time",
        at,
        "--archive",
        archive.to_str().unwrap(),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_to_a_time_holds_what_was_acknowledged_by_then_and_nothing_a_second_later() {
    let dir = temp_dir();
    let connection = seeded(dir.path());
    let master = dir.path().join("master.db");
    let (place, archive) = (dir.path().join("backups"), dir.path().join("archive"));
    {
        let sharded = ShardedClient::open(&master).await.unwrap();
        for tenant in TENANTS {
            let client = sharded.for_route(route(tenant));
            client
                .execute_sql(
                    "CREATE TABLE items (id INTEGER PRIMARY KEY); CREATE TABLE blobs (n INTEGER PRIMARY KEY, b BLOB);",
                    Params::none(),
                )
                .await
                .unwrap();
        }
    }
    let out = shardlite(&["backup", "create", "-c", &connection, "--to", place.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let before_set = "2000-01-01T00:00:00Z";

    let daemon = ServeProcess::start(&[
        "--listen",
        "127.0.0.1:0",
        "--master",
        master.to_str().unwrap(),
        "--archive-dir",
        archive.to_str().unwrap(),
        "--metrics-listen",
        "127.0.0.1:0",
    ]);
    let metrics = daemon.wait_for_stdout("metrics on ");
    let clients = [
        remote(&daemon.base_url, TENANTS[0]).await,
        remote(&daemon.base_url, TENANTS[1]).await,
    ];
    let write = |id: i64| {
        let client = Arc::clone(&clients[usize::try_from(id % 2).unwrap()]);
        async move {
            client
                .execute_sql(&format!("INSERT INTO items (id) VALUES ({id})"), Params::none())
                .await
                .unwrap();
        }
    };
    // More than a thousand WAL frames at once: the archive checkpoints, and the WAL restarts
    // under the writes that follow.
    let blobs = |from: i64| {
        let client = Arc::clone(&clients[0]);
        async move {
            let sql = format!(
                "WITH RECURSIVE n(i) AS (SELECT {from} UNION ALL SELECT i + 1 FROM n WHERE i < {from} + 1499) \
                 INSERT INTO blobs SELECT i, randomblob(3000) FROM n"
            );
            client.execute_sql(&sql, Params::none()).await.unwrap();
        }
    };
    blobs(1).await;
    // The map changes after the set: the catalog as at the moment comes from the archive.
    let next = dir.path().join("next-map.json");
    std::fs::write(&next, serde_json::to_vec(&with_third_shard(dir.path())).unwrap()).unwrap();
    let remote = format!("Endpoint={};Transport=Http", daemon.base_url);
    for args in [
        vec![
            "catalog",
            "apply",
            "-c",
            &remote,
            "--map",
            next.to_str().unwrap(),
            "--expected-version",
            "1",
        ],
        vec!["catalog", "activate", "-c", &remote, "--expected-version", "2"],
    ] {
        let out = shardlite(&args);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let folded = || std::fs::metadata(dir.path().join("s0.db")).unwrap().len();
    for _ in 0..50 {
        if folded() > 4_500_000 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let folded = folded();
    assert!(
        folded > 4_500_000,
        "the archive checkpointed the long WAL: s0.db holds {folded} bytes"
    );
    for id in 1..=10 {
        write(id).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let moment = now_rfc3339();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for id in 11..=20 {
        write(id).await;
    }
    blobs(1501).await;
    write(21).await;
    let end = now_rfc3339();
    // The archive reads a written file at most every 100 ms.
    tokio::time::sleep(Duration::from_millis(400)).await;
    // Both shards were written within 2 s: the archive follows them, caught up.
    let http = crate::support::daemon::http_client();
    let text = http.get(metrics.trim()).send().await.unwrap().text().await.unwrap();
    promtool_check(&text);
    // Labelled by shard id, not by file.
    assert!(!text.contains("shardlite_archive_lag_seconds{file="), "{text}");
    for shard in ["s0", "s1"] {
        let series = format!("shardlite_archive_lag_seconds{{shard=\"{shard}\"}} ");
        let lag: f64 = text
            .lines()
            .find_map(|line| line.strip_prefix(&series))
            .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
            .trim()
            .parse()
            .unwrap();
        assert!(lag < 1.0, "{series}{lag}");
    }

    let restored = dir.path().join("restored");
    let out = restore(&place, &restored, &moment, &archive);
    assert!(out.status.success(), "{}", stderr(&out));
    let master_restored = restored.join("master.db");
    let map = ShardedClient::open(&master_restored).await.unwrap().map();
    assert_eq!((map.version(), map.shards().len()), (2, 3), "the map as at {moment}");
    for tenant in TENANTS {
        let expected: Vec<i64> = (1..=10).filter(|id| tenant_of(*id) == tenant).collect();
        assert_eq!(ids_in(&master_restored, tenant).await, expected, "{tenant} at {moment}");
    }
    for (shard, blobs) in [("s0.db", 1500), ("s1.db", 0)] {
        let file = restored.join(shard);
        assert_eq!(
            old_sqlite::run(
                &file,
                "PRAGMA quick_check; SELECT count(*) FROM items; SELECT count(*), coalesce(sum(length(b)), 0) FROM blobs;"
            )
            .unwrap(),
            format!("ok\n5\n{blobs}|{}\n", blobs * 3000),
            "{shard} in sqlite3 {}",
            old_sqlite::version()
        );
    }

    let later = dir.path().join("later");
    let out = restore(&place, &later, &end, &archive);
    assert!(out.status.success(), "{}", stderr(&out));
    for tenant in TENANTS {
        let expected: Vec<i64> = (1..=21).filter(|id| tenant_of(*id) == tenant).collect();
        assert_eq!(
            ids_in(&later.join("master.db"), tenant).await,
            expected,
            "{tenant} at {end}"
        );
    }
    assert_eq!(
        old_sqlite::run(&later.join("s0.db"), "PRAGMA quick_check; SELECT count(*) FROM blobs;").unwrap(),
        "ok\n3000\n"
    );

    // A moment before the set cannot be restored from it; the target stays empty.
    let early = dir.path().join("early");
    let out = restore(&place, &early, before_set, &archive);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("after the time asked for"), "{}", stderr(&out));
    let out = shardlite(&[
        "backup",
        "restore",
        place.to_str().unwrap(),
        "--to",
        "x",
        "--to-time",
        "yesterday",
        "--archive",
        "a",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("RFC 3339"), "{}", stderr(&out));
    drop(daemon);
}
