//! The catalog in a real etcd cluster on loopback ports: `etcd://` URLs wherever a master path
//! goes, compare-and-set between two routers, activation reaching every router through a watch,
//! routers serving through an etcd outage, and catalog export/import. The same activation test
//! runs on a master file, whose routers follow it by a version read.
#![cfg(all(feature = "server", feature = "etcd"))]

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::cli::{shardlite as run_cli, stderr, stdout};
use crate::support::daemon::http_client;
use crate::support::etcd::EtcdCluster;
use crate::support::serve::ServeProcess;
use crate::support::{path_str, temp_dir, tenants_options, with_third_shard};
use reqwest::StatusCode;
use serde_json::{Value, json};
use shardlite::ErrorKind;
use shardlite::catalog::Catalog;
use shardlite::client::ShardedClient;
use shardlite::data::{ActivationRequest, CatalogUpdateRequest};
use shardlite::map::ShardingOptions;
use shardlite::wire::{KEYSPACE_HEADER, SHARD_KEY_HEADER};

fn write_map(dir: &Path, name: &str, map: &ShardingOptions) -> String {
    let path = dir.join(name);
    std::fs::write(&path, map.to_json()).unwrap();
    path_str(&path)
}

/// The catalog `prefix` in `cluster`, seeded with [`tenants_options`]; returns its URL.
async fn seeded(cluster: &EtcdCluster, prefix: &str, dir: &Path) -> String {
    let url = cluster.url(prefix);
    let catalog = Catalog::open(&url).await.unwrap();
    catalog.seed(tenants_options(dir), false).await.unwrap();
    url
}

fn serve(master: &str) -> ServeProcess {
    ServeProcess::start(&["--master", master, "--listen", "127.0.0.1:0"])
}

async fn post(http: &reqwest::Client, url: String, body: Value) -> (StatusCode, Value) {
    let response = http.post(url).json(&body).send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The map version a daemon's `GET /api/sharding/map` and `POST /api/sharding/resolve` report.
async fn served_versions(http: &reqwest::Client, daemon: &ServeProcess) -> (u64, u64) {
    let map: Value = http
        .get(daemon.url("/api/sharding/map"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (_, resolved) = post(
        http,
        daemon.url("/api/sharding/resolve"),
        json!({ "keyspace": "tenants", "key": "tenant-x" }),
    )
    .await;
    (
        map["mapVersion"].as_u64().unwrap_or(0),
        resolved["mapVersion"].as_u64().unwrap_or(0),
    )
}

/// Applies version 2 (a third shard) through daemon A and activates it, then waits until
/// daemon B (map and resolve) and an in-process client serve it; returns how long that took.
async fn activation_reaches_every_router(master: &str, dir: &Path) -> Duration {
    let a = serve(master);
    let b = serve(master);
    let client = ShardedClient::open(master).await.unwrap();
    let http = http_client();
    assert_eq!(served_versions(&http, &b).await, (1, 1));

    let body = json!({ "map": serde_json::from_str::<Value>(&with_third_shard(dir).to_json()).unwrap(), "expectedCurrentMapVersion": 1 });
    let (status, applied) = post(&http, a.url("/api/sharding/catalog/apply"), body).await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    let (status, activated) = post(
        &http,
        a.url("/api/sharding/catalog/activate"),
        json!({ "expectedPendingMapVersion": 2 }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{activated}");
    let started = Instant::now();
    loop {
        let (map, resolved) = served_versions(&http, &b).await;
        if map == 2 && resolved == 2 && client.map().version() == 2 {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "daemon B still serves map {map}/{resolved} and the client {} after 5 s",
            client.map().version()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_activation_reaches_every_router_within_a_second_on_etcd_and_on_a_master_file() {
    let Some(cluster) = EtcdCluster::start(3) else {
        return;
    };
    let dir = temp_dir();
    let url = cluster.url("shop");
    let seeded = run_cli(&[
        "seed",
        "--master",
        &url,
        "--map",
        &write_map(dir.path(), "v1.json", &tenants_options(dir.path())),
    ]);
    assert!(seeded.status.success(), "{}", stderr(&seeded));
    assert!(
        stdout(&seeded).contains(&format!("seeded {url}")),
        "{}",
        stdout(&seeded)
    );
    let on_etcd = activation_reaches_every_router(&url, dir.path()).await;

    let file_dir = temp_dir();
    let master = crate::support::seeded_master(file_dir.path()).await;
    let on_file = activation_reaches_every_router(&path_str(&master), file_dir.path()).await;
    println!("activation reached the other routers after {on_etcd:?} (etcd watch) and {on_file:?} (master file)");
    assert!(on_etcd < Duration::from_secs(1), "{on_etcd:?}");
    assert!(on_file < Duration::from_secs(1), "{on_file:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_routers_applying_the_same_expected_version_exactly_one_wins_even_without_the_leader() {
    let Some(mut cluster) = EtcdCluster::start(3) else {
        return;
    };
    let dir = temp_dir();
    let url = seeded(&cluster, "cas", dir.path()).await;
    let (a, b) = (serve(&url), serve(&url));
    let http = http_client();
    let map = serde_json::from_str::<Value>(&with_third_shard(dir.path()).to_json()).unwrap();
    for round in 0..2 {
        if round == 1 {
            // One member down (perhaps the leader): the cluster keeps its quorum.
            cluster.kill_member(0);
        }
        let mut next = map.clone();
        next["mapVersion"] = json!(2 + round);
        let body = json!({ "map": next, "expectedCurrentMapVersion": 1 + round });
        let (first, second) = tokio::join!(
            post(&http, a.url("/api/sharding/catalog/apply"), body.clone()),
            post(&http, b.url("/api/sharding/catalog/apply"), body.clone()),
        );
        let mut statuses = [first.0, second.0];
        statuses.sort();
        assert_eq!(statuses, [StatusCode::OK, StatusCode::CONFLICT], "{first:?} {second:?}");
        let loser = if first.0 == StatusCode::CONFLICT {
            &first.1
        } else {
            &second.1
        };
        assert_eq!(loser["errorCode"], "map_version_conflict", "{loser}");
    }
    let history = Catalog::open(&url).await.unwrap().history().await.unwrap();
    assert_eq!(
        history
            .iter()
            .filter(|e| e.audit.comment.as_deref() == Some("applied as the pending map"))
            .count(),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routers_keep_serving_while_etcd_is_down_and_catch_up_when_it_returns() {
    let Some(mut cluster) = EtcdCluster::start(1) else {
        return;
    };
    let dir = temp_dir();
    let url = seeded(&cluster, "outage", dir.path()).await;
    let daemon = serve(&url);
    let http = http_client();
    let sql = |sql: &str| {
        http.post(daemon.url("/api/sql/execute"))
            .header(KEYSPACE_HEADER, "tenants")
            .header(SHARD_KEY_HEADER, "tenant-a")
            .json(&json!({ "sql": sql }))
            .send()
    };
    assert!(sql("CREATE TABLE t (x)").await.unwrap().status().is_success());

    cluster.stop();
    // Data keeps flowing on the last map known.
    let write = sql("INSERT INTO t VALUES (1)").await.unwrap();
    assert!(write.status().is_success(), "{:?}", write.text().await);
    let read: Value = sql("SELECT count(*) AS n FROM t").await.unwrap().json().await.unwrap();
    assert_eq!(read["rows"][0][0], 1, "{read}");
    // Catalog writes fail, retryable, naming the cause.
    let body = json!({ "map": serde_json::from_str::<Value>(&with_third_shard(dir.path()).to_json()).unwrap(), "expectedCurrentMapVersion": 1 });
    let (status, problem) = post(&http, daemon.url("/api/sharding/catalog/apply"), body).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{problem}");
    assert_eq!(problem["errorCode"], "catalog_unavailable", "{problem}");
    // It stays in the load balancer: it serves data.
    let ready = http.get(daemon.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    let opened = Catalog::open(&url).await.expect_err("no member answers");
    assert_eq!(opened.kind(), ErrorKind::CatalogUnavailable);
    assert!(opened.is_retryable());

    cluster.restart();
    // Nothing of the refused write is there; a map activated now reaches the daemon.
    let catalog = Catalog::open(&url).await.unwrap();
    assert_eq!(catalog.pending_options().await.unwrap(), None);
    let mut update = CatalogUpdateRequest::new(with_third_shard(dir.path()));
    update.expected_current_map_version = Some(1);
    assert!(catalog.apply_update(update).await.unwrap().applied);
    catalog.activate_pending(&ActivationRequest::new(2)).await.unwrap();
    let started = Instant::now();
    while served_versions(&http, &daemon).await.0 != 2 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the daemon never picked up map 2"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "after etcd returned, the daemon served the new map within {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_urls_are_checked_and_catalogs_copy_between_a_file_and_etcd() {
    let Some(cluster) = EtcdCluster::start(1) else {
        return;
    };
    let dir = temp_dir();
    let map = write_map(dir.path(), "v1.json", &tenants_options(dir.path()));
    for (master, expected) in [
        ("etc://127.0.0.1:2379/shop", "'etc://' is not one this release knows"),
        ("etcd://127.0.0.1:2379", "the key prefix is missing"),
        (
            "etcd://127.0.0.1:1/shop",
            "catalog is unavailable: no etcd endpoint answered",
        ),
    ] {
        let out = run_cli(&["seed", "--master", master, "--map", &map]);
        assert!(!out.status.success(), "{master}");
        assert!(stderr(&out).contains(expected), "{master}: {}", stderr(&out));
    }
    assert!(
        !Path::new("etc:").exists() && !Path::new("etcd:").exists(),
        "a URL became a folder"
    );
    let empty = run_cli(&["status", "-c", &format!("Data Source={}", cluster.url("nothing"))]);
    assert!(stderr(&empty).contains("holds no catalog"), "{}", stderr(&empty));

    // A master file with history moves into etcd and back.
    let master = crate::support::seeded_master(dir.path()).await;
    let export_file = path_str(&dir.path().join("catalog.json"));
    let out = run_cli(&[
        "catalog",
        "export",
        "--master",
        &path_str(&master),
        "--out",
        &export_file,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let url = cluster.url("moved");
    let out = run_cli(&["catalog", "import", "--master", &url, "--from", &export_file]);
    assert!(out.status.success(), "{}", stderr(&out));
    let again = run_cli(&["catalog", "import", "--master", &url, "--from", &export_file]);
    assert!(stderr(&again).contains("already holds a map"), "{}", stderr(&again));
    let on_etcd = ShardedClient::open(&url).await.unwrap();
    assert_eq!(
        on_etcd.map_snapshot(),
        ShardedClient::open(&master).await.unwrap().map_snapshot()
    );
    let history = Catalog::open(&url).await.unwrap().history().await.unwrap();
    assert_eq!(history.len(), 2, "{history:?}");

    // The sqlx driver takes the URL as its Data Source, bound to a route.
    #[cfg(feature = "sqlx")]
    {
        use sqlx::Connection as _;
        let text = format!("Data Source={url};Shard Keyspace=tenants;Shard Key=tenant-a");
        let mut conn = shardlite::driver::ShardliteConnection::connect(&text).await.unwrap();
        sqlx::query("CREATE TABLE IF NOT EXISTS t (x)")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("INSERT INTO t VALUES (7)")
            .execute(&mut conn)
            .await
            .unwrap();
        let (x,): (i64,) = sqlx::query_as("SELECT x FROM t").fetch_one(&mut conn).await.unwrap();
        assert_eq!(x, 7);
    }
    assert_eq!(history[0].audit.operator.as_deref(), Some("import"));
    assert_eq!(history[1].audit.operator.as_deref(), Some("seed"));
}
