//! Backup sets through the daemon: `POST /api/sharding/backups` into the daemon's own backup
//! place (`--backup-dir`), `GET` lists the sets, `shardlite backup create -c http://…` asks the
//! daemon for one through the HTTP client (and over gRPC, as the gRPC client does),
//! `shardlite_backup_last_success_timestamp_seconds`
//! follows them (checked by promtool), `GET /api/sharding/backups/overview` sums each set up (and
//! names the shards whose copy went missing), and a daemon without a backup place refuses with a
//! 400 naming the flag.

use std::time::{SystemTime, UNIX_EPOCH};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::metrics::promtool_check;
use crate::support::cli::{shardlite, stderr, stdout};
use crate::support::daemon::{http_client, routed, start_metrics};
use crate::support::{Fixture, temp_dir};
use shardlite::backup::restore_backup;
use shardlite::client::{ShardedClient, Value as SqlValue};
use shardlite::error::ErrorKind;
use shardlite::server::ServerConfig;
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;

const GAUGE: &str = "shardlite_backup_last_success_timestamp_seconds";

async fn gauge(http: &reqwest::Client, url: &str) -> f64 {
    let text = http.get(url).send().await.unwrap().text().await.unwrap();
    promtool_check(&text);
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{GAUGE} ")))
        .unwrap_or_else(|| panic!("no {GAUGE} in:\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_takes_and_lists_backup_sets_into_its_own_place() {
    let fixture = Fixture::new().await;
    let place = temp_dir();
    let daemon = fixture
        .start_with(ServerConfig {
            backup_dir: Some(place.path().join("sets-of-the-daemon")),
            metrics: true,
            ..ServerConfig::default()
        })
        .await;
    let metrics = start_metrics(&daemon.state).await;
    let http = http_client();
    let execute = daemon.url("/api/sql/execute");
    for (tenant, id) in [("tenant-a", 1), ("tenant-b", 2), ("tenant-a", 3)] {
        let sql = if id < 3 {
            vec!["CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL)".to_owned()]
        } else {
            Vec::new()
        };
        for sql in sql
            .into_iter()
            .chain([format!("INSERT INTO items VALUES ({id}, '{tenant}')")])
        {
            let answer = routed(http.post(&execute), tenant)
                .json(&json!({ "sql": sql }))
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), StatusCode::OK, "{:?}", answer.text().await);
        }
    }
    assert_eq!(gauge(&http, &metrics).await, 0.0, "no set yet");

    let backups = daemon.url("/api/sharding/backups");
    let created = http.post(&backups).send().await.unwrap();
    assert_eq!(created.status(), StatusCode::OK);
    let first: Value = created.json().await.unwrap();
    assert_eq!(first["shards"].as_array().unwrap().len(), 2, "{first:#}");
    assert!(first["shards"].as_array().unwrap().iter().all(|s| s["copied"] == true));
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let published = gauge(&http, &metrics).await;
    assert!((now - published).abs() < 60.0, "{published} is not about {now}");

    // The CLI asks the daemon through its HTTP client; nothing changed, so nothing is copied.
    let endpoint = daemon.base_url.clone();
    let out = shardlite(&["backup", "create", "-c", &endpoint, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let second: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        second["shards"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["copied"] == false),
        "{second:#}"
    );
    let out = shardlite(&["backup", "create", "-c", &endpoint, "--to", "/tmp/elsewhere"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--backup-dir"), "{}", stderr(&out));

    let listed: Value = http.get(&backups).send().await.unwrap().json().await.unwrap();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [first["id"].as_str().unwrap(), second["id"].as_str().unwrap()]);

    // The overview sums each set up; a copy gone from the place makes its set incomplete.
    let overview_url = daemon.url("/api/sharding/backups/overview");
    let overview: Value = http.get(&overview_url).send().await.unwrap().json().await.unwrap();
    assert_eq!(overview["backupPlace"], true, "{overview:#}");
    assert_eq!(overview["archiving"], false, "{overview:#}");
    assert_eq!(overview["archiveLag"], json!([]), "{overview:#}");
    let sets = overview["sets"].as_array().unwrap();
    assert_eq!(sets.len(), 2, "{overview:#}");
    let shard_bytes = |set: &Value| -> u64 {
        set["shards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["bytes"].as_u64().unwrap())
            .sum()
    };
    for (summary, manifest) in sets.iter().zip([&first, &second]) {
        assert_eq!(summary["id"], manifest["id"]);
        assert_eq!(summary["mapVersion"], manifest["mapVersion"]);
        assert_eq!(summary["takenAt"], manifest["takenAt"]);
        assert_eq!(summary["shards"], 2);
        assert_eq!(
            summary["bytes"].as_u64().unwrap(),
            shard_bytes(manifest) + manifest["catalog"]["bytes"].as_u64().unwrap()
        );
        assert_eq!((&summary["complete"], &summary["missing"]), (&json!(true), &json!([])));
    }
    assert_eq!((&sets[0]["copied"], &sets[1]["copied"]), (&json!(2), &json!(0)));
    assert_eq!(sets[1]["copiedBytes"], 0);
    let lost = &first["shards"][1];
    let lost_file = place
        .path()
        .join("sets-of-the-daemon")
        .join(lost["file"].as_str().unwrap());
    let kept = std::fs::read(&lost_file).unwrap();
    std::fs::remove_file(&lost_file).unwrap();
    let overview: Value = http.get(&overview_url).send().await.unwrap().json().await.unwrap();
    for set in overview["sets"].as_array().unwrap() {
        assert_eq!(set["complete"], false, "{overview:#}");
        assert_eq!(set["missing"], json!([lost["shardId"]]), "{overview:#}");
    }
    std::fs::write(&lost_file, kept).unwrap();

    // The daemon's set restores every row.
    let manifest = place
        .path()
        .join("sets-of-the-daemon/sets")
        .join(format!("{}.json", second["id"].as_str().unwrap()));
    let target = temp_dir();
    let restored = restore_backup(&manifest, &target.path().join("k")).await.unwrap();
    let restored = ShardedClient::open(&restored.master).await.unwrap();
    let mut ids = Vec::new();
    for shard in restored.query().read_all("SELECT id FROM items").await.unwrap() {
        for row in shard.result.unwrap().rows {
            let SqlValue::Integer(id) = row[0] else {
                panic!("{row:?}")
            };
            ids.push(id);
        }
    }
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 3]);
    daemon.stop().await.unwrap();

    // Without a backup place, both are refused naming the flag, and the daemon serves on; the
    // overview says it has none.
    let plain = fixture.start().await;
    let overview: Value = http
        .get(plain.url("/api/sharding/backups/overview"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(overview["backupPlace"], false, "{overview:#}");
    assert_eq!(overview["sets"], json!([]), "{overview:#}");
    for request in [
        http.post(plain.url("/api/sharding/backups")),
        http.get(plain.url("/api/sharding/backups")),
    ] {
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
        let problem: Value = answer.json().await.unwrap();
        assert_eq!(problem["errorCode"], "invalid_input", "{problem:#}");
        assert!(problem.to_string().contains("--backup-dir"), "{problem:#}");
    }
    let grpc = GrpcClient::connect(RemoteOptions::new(plain.base_url.clone()))
        .await
        .unwrap();
    let refused = grpc.create_backup().await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InvalidInput, "{refused}");
    assert!(refused.to_string().contains("--backup-dir"), "{refused}");
    let info = http.get(plain.url("/api/info")).send().await.unwrap();
    assert!(info.status().is_success());
    plain.stop().await.unwrap();
}
