//! A catalog in etcd keeps maps as records within etcd's default limits: a large map through
//! the store conformance checks, a member killed during a large seed (the seed completes or
//! fails, never half-applies), and a prefix written as one value per map (schema version 1)
//! read and migrated on open.
#![cfg(feature = "etcd")]

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use shardlite::catalog::Catalog;

use crate::support::etcd::EtcdCluster;
use crate::support::large_catalog::{large_map_conformance, large_options};
use crate::support::{temp_dir, tenants_options, with_third_shard};

/// One raw v3 JSON call to `endpoint`.
async fn call(endpoint: &str, path: &str, body: Value) -> Value {
    let response = reqwest::Client::new()
        .post(format!("{endpoint}{path}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    response.json().await.unwrap()
}

async fn put(endpoint: &str, key: &str, value: &str) {
    call(
        endpoint,
        "/v3/kv/put",
        json!({ "key": STANDARD.encode(key), "value": STANDARD.encode(value) }),
    )
    .await;
}

/// How many keys start with `prefix`.
async fn count(endpoint: &str, prefix: &str) -> u64 {
    let mut end = prefix.as_bytes().to_vec();
    *end.last_mut().unwrap() += 1;
    let answer = call(
        endpoint,
        "/v3/kv/range",
        json!({ "key": STANDARD.encode(prefix), "range_end": STANDARD.encode(&end), "count_only": true }),
    )
    .await;
    answer["count"].as_str().and_then(|c| c.parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_map_passes_the_store_checks_in_etcd_with_its_default_limits() {
    let Some(cluster) = EtcdCluster::start(3) else {
        return;
    };
    large_map_conformance(&cluster.url("big"), 2_000, 20_000).await;
    // One generation of records: the seed's, the five changes' and nothing of the map copied.
    assert_eq!(
        count(&cluster.endpoint(1), "/big/records/").await,
        1 + 2_000 + 2_000 + 20_000 + 2 + 2 + 3 + 2 + 2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_killed_during_a_large_seed_leaves_one_whole_map() {
    let Some(mut cluster) = EtcdCluster::start(3) else {
        return;
    };
    let dir = temp_dir();
    let url = cluster.url("kill");
    let small = tenants_options(dir.path());
    Catalog::open(&url)
        .await
        .unwrap()
        .seed(small.clone(), false)
        .await
        .unwrap();
    let large = large_options(2_000, 20_000);
    let seeding = {
        let (url, large) = (url.clone(), large.clone());
        tokio::spawn(async move { Catalog::open(&url).await?.seed(large, true).await })
    };
    // Once some chunks of the new map are written, the member the writer talks to first dies.
    let watcher = cluster.endpoint(2);
    while count(&watcher, "/kill/records/").await < 2_000 {
        assert!(!seeding.is_finished(), "the seed ended before a member could be killed");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    cluster.kill_member(0);
    let outcome = seeding.await.unwrap();

    let catalog = Catalog::open(&url).await.unwrap();
    let active = catalog.active_options().await.unwrap().unwrap();
    match &outcome {
        Ok(_) => assert_eq!(active, large),
        Err(err) => {
            assert_eq!(active, small, "a failed seed ({err}) must leave the old map whole");
        }
    }
    // The next write keeps one generation only, whatever the failed one left.
    catalog.seed(small.clone(), true).await.unwrap();
    assert_eq!(catalog.active_options().await.unwrap().as_ref(), Some(&small));
    assert_eq!(count(&watcher, "/kill/records/").await, 1 + 2 + 2 + 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_written_as_one_value_per_map_is_read_and_migrated_on_open() {
    let Some(cluster) = EtcdCluster::start(1) else {
        return;
    };
    let dir = temp_dir();
    let endpoint = cluster.endpoint(0);
    let (active, pending) = (tenants_options(dir.path()), with_third_shard(dir.path()));
    // The keys and values the release before records wrote.
    put(&endpoint, "/old/meta", r#"{"schemaVersion":1}"#).await;
    for (slot, map) in [("active", &active), ("pending", &pending)] {
        let value = json!({
            "keyspace": "tenants",
            "mapVersion": map.map_version,
            "map": map.to_json(),
            "writtenUtc": "2026-01-01T00:00:00Z",
        });
        put(&endpoint, &format!("/old/map/{slot}"), &value.to_string()).await;
    }
    let entry = json!({ "appliedUtc": "2026-01-01T00:00:00Z", "keyspace": "tenants", "mapVersion": 1,
                        "operator": "seed", "comment": "seeded the active map",
                        "metadataOnlyOwnershipChange": false });
    put(
        &endpoint,
        "/old/history/catalog/000000000000000000000001-a",
        &entry.to_string(),
    )
    .await;

    let catalog = Catalog::open(&cluster.url("old")).await.unwrap();
    assert_eq!(catalog.active_options().await.unwrap().as_ref(), Some(&active));
    assert_eq!(catalog.pending_options().await.unwrap().as_ref(), Some(&pending));
    assert_eq!(catalog.history().await.unwrap().len(), 1);
    assert_eq!(count(&endpoint, "/old/map/active").await, 0);
    let meta = call(
        &endpoint,
        "/v3/kv/range",
        json!({ "key": STANDARD.encode("/old/meta") }),
    )
    .await;
    let meta = STANDARD.decode(meta["kvs"][0]["value"].as_str().unwrap()).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&meta).unwrap()["schemaVersion"], 2);
    // Opening again reads the same.
    let again = Catalog::open(&cluster.url("old")).await.unwrap();
    assert_eq!(again.pending_options().await.unwrap().as_ref(), Some(&pending));
}
