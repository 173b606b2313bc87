//! A second daemon on one catalog serves a changed directory entry within a second of its
//! activation through the first, in etcd and in a master file, and an in-process router on etcd
//! applies the changed entries to the map it serves, not the whole directory.
#![cfg(all(feature = "server", feature = "etcd"))]

use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use shardlite::catalog::Catalog;
use shardlite::client::ShardedClient;
use shardlite::data::{DirectoryLookup, DirectoryMutation, DirectoryOperation};
use shardlite::map::ShardingOptions;

use crate::support::daemon::http_client;
use crate::support::etcd::EtcdCluster;
use crate::support::serve::ServeProcess;
use crate::support::{path_str, temp_dir, tenants_with_directory};

/// Entries of the directory before the change.
const ENTRIES: usize = 2_000;

/// The reference fixture with the writable directory `orders_by_id` of [`ENTRIES`] entries.
fn directory_map(dir: &Path) -> ShardingOptions {
    tenants_with_directory(dir, ENTRIES, 50)
}

/// The status and body of `daemon`'s resolve of `key`.
async fn resolve(http: &reqwest::Client, daemon: &ServeProcess, key: &str) -> (StatusCode, Value) {
    let response = http
        .post(daemon.url("/api/sharding/directory/resolve"))
        .json(&json!({ "directoryName": "orders_by_id", "lookupKey": key }))
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap_or(Value::Null))
}

/// Upserts and activates `NEW-1` through daemon A, then asks daemon B until it resolves it;
/// how long after the activation B served it.
async fn a_changed_entry_on_the_second_daemon(master: &str) -> Duration {
    let (a, b) = (
        ServeProcess::start(&["--master", master, "--listen", "127.0.0.1:0"]),
        ServeProcess::start(&["--master", master, "--listen", "127.0.0.1:0"]),
    );
    let http = http_client();
    let (status, known) = resolve(&http, &b, "SO-7").await;
    assert_eq!(status, StatusCode::OK, "{known}");
    let (status, unknown) = resolve(&http, &b, "NEW-1").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{unknown}");

    let upsert = json!({"directoryName": "orders_by_id", "lookupKey": "NEW-1", "targetKeyspace": "tenants",
                        "routeKey": "tenant-7", "activate": true, "operator": "ada"});
    let response = http
        .post(a.url("/api/sharding/directory/upsert"))
        .json(&upsert)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let result: Value = response.json().await.unwrap();
    assert_eq!(result["status"], json!("Upserted"), "{result}");
    assert_eq!(result["requiresActivation"], json!(false), "{result}");
    let activation = Instant::now();
    loop {
        let (status, found) = resolve(&http, &b, "NEW-1").await;
        if status == StatusCode::OK {
            assert_eq!(found["entry"]["routeKey"], json!("tenant-7"), "{found}");
            assert_eq!(found["entry"]["mapVersion"], json!(2), "{found}");
            assert_eq!(found["routeResolution"]["mapVersion"], json!(2), "{found}");
            break activation.elapsed();
        }
        assert!(
            activation.elapsed() < Duration::from_secs(5),
            "after 5 s the second daemon answers {status}: {found}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The catalog URL of prefix `name` on `cluster`, seeded with [`directory_map`] of `dir`.
async fn seeded_on_etcd(cluster: &EtcdCluster, name: &str, dir: &Path) -> String {
    let url = cluster.url(name);
    Catalog::open(&url)
        .await
        .unwrap()
        .seed(directory_map(dir), false)
        .await
        .unwrap();
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_directory_entry_reaches_a_second_daemon_within_a_second_on_etcd_and_on_a_master_file() {
    let Some(cluster) = EtcdCluster::start(3) else {
        return;
    };
    let dir = temp_dir();
    let url = seeded_on_etcd(&cluster, "directory-follow", dir.path()).await;
    let on_etcd = a_changed_entry_on_the_second_daemon(&url).await;

    let file_dir = temp_dir();
    let master = crate::support::seed_master(file_dir.path(), directory_map(file_dir.path())).await;
    let on_file = a_changed_entry_on_the_second_daemon(&path_str(&master)).await;
    println!("the second daemon served the changed entry after {on_etcd:?} (etcd) and {on_file:?} (master file)");
    assert!(on_etcd < Duration::from_secs(1), "{on_etcd:?}");
    assert!(on_file < Duration::from_secs(1), "{on_file:?}");
}

/// Upserts and activates `key` through `writer`; the new map version.
async fn upsert_activated(writer: &ShardedClient, key: &str) -> u64 {
    let upsert = DirectoryMutation::new("orders_by_id", key)
        .route("tenants", "tenant-7")
        .activating();
    let result = writer
        .directories()
        .mutate(DirectoryOperation::Upsert, &upsert)
        .await
        .unwrap();
    assert!(result.succeeded, "{result:?}");
    result.pending_map_version.unwrap()
}

/// Waits until `follower` serves map `version`.
async fn served(follower: &ShardedClient, version: u64) {
    let started = Instant::now();
    while follower.map().version() != version {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the follower did not follow"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_process_router_on_etcd_applies_changed_entries_to_the_map_it_serves() {
    let Some(cluster) = EtcdCluster::start(1) else {
        return;
    };
    let dir = temp_dir();
    let url = seeded_on_etcd(&cluster, "directory-router", dir.path()).await;
    let writer = ShardedClient::open(&url).await.unwrap();
    let follower = ShardedClient::open(&url).await.unwrap();
    // Once the follower serves the first change, its watch is open (it may have read that map
    // whole, had the watch opened after the change).
    served(&follower, upsert_activated(&writer, "NEW-1").await).await;
    let followed_from = follower.map();
    for n in 2..=4 {
        served(&follower, upsert_activated(&writer, &format!("NEW-{n}")).await).await;
    }
    let found = follower
        .directories()
        .resolve(&DirectoryLookup::new("orders_by_id", "NEW-4"))
        .await
        .unwrap();
    assert_eq!(found.entry.route_key, "tenant-7");
    assert!(
        follower.map().shares_directory_index(&followed_from),
        "the follower read and indexed the directory again"
    );
    assert_eq!(follower.map().directory_entry_count("orders_by_id"), ENTRIES + 4);
}
