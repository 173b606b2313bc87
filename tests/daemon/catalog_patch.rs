//! A catalog change sent as a patch (RFC 7386 JSON Merge Patch of the newest map) over REST and
//! gRPC: the same validation, compare-and-set and history as a whole map.
#![cfg(all(feature = "server", feature = "http"))]

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};
use shardlite::client::ShardAdmin;
use shardlite::data::{ActivationRequest, CatalogUpdateRequest};
use shardlite::map::MapPatch;
use shardlite::server::ServerConfig;
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;

use crate::support::daemon::{http_client, start_daemon_on};
use crate::support::{seeded_master, temp_dir};

async fn post(url: String, body: Value) -> (StatusCode, Value) {
    let response = http_client().post(url).json(&body).send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_is_validated_applied_and_activated_like_a_whole_map() {
    let dir = temp_dir();
    let master = seeded_master(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;

    // A typo is an invalid map, named; a patch and a map together are refused.
    let (status, typo) = post(
        daemon.url("/api/sharding/catalog/validate"),
        json!({ "patch": { "mapVersion": 2, "exactKeyPinz": { "t": "s0" } } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(typo["valid"], false, "{typo}");
    assert!(
        typo["issues"][0]["message"].as_str().unwrap().contains("exactKeyPinz"),
        "{typo}"
    );
    let (status, _) = post(
        daemon.url("/api/sharding/catalog/validate"),
        json!({ "patch": { "mapVersion": 2 }, "map": { "shards": [] } }),
    )
    .await;
    assert!(status.is_client_error(), "{status}");

    // One pin added, one pin removed, one shard disabled-then-enabled field changed by id.
    let patch = json!({
        "mapVersion": 2,
        "exactKeyPins": { "tenant-c": "s0", "tenant-a": null },
        "shards": { "S1": { "apiKeyHeaderName": "X-Key" } },
    });
    let (status, validated) = post(
        daemon.url("/api/sharding/catalog/validate"),
        json!({ "patch": patch, "expectedCurrentMapVersion": 1, "allowOwnershipChange": true }),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(validated["valid"], true, "{validated}");
    let (status, applied) = post(
        daemon.url("/api/sharding/catalog/apply"),
        json!({ "patch": patch, "expectedCurrentMapVersion": 1, "allowOwnershipChange": true, "operator": "ada" }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    assert_eq!(applied["pendingMapVersion"], 2);
    // The same patch again is stale: compare-and-set as for a whole map.
    let (status, stale) = post(
        daemon.url("/api/sharding/catalog/apply"),
        json!({ "patch": patch, "expectedCurrentMapVersion": 1, "allowOwnershipChange": true }),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{stale}");

    // Over gRPC, a patch of the pending map (version 2) to version 3.
    let grpc: Arc<dyn ShardAdmin> = Arc::new(GrpcClient::new(RemoteOptions::new(&daemon.base_url)).unwrap());
    let patch = MapPatch::from_json(r#"{"mapVersion": 3, "exactKeyPins": {"tenant-d": "s1"}}"#).unwrap();
    let mut request = CatalogUpdateRequest::new(patch).expecting_version(2);
    request.allow_ownership_change = true;
    let applied = grpc.apply_catalog_update(&request).await.unwrap();
    assert_eq!(applied.pending_map_version, Some(3), "{applied:?}");
    grpc.activate_pending_map(&ActivationRequest::new(3)).await.unwrap();

    let catalog = shardlite::catalog::Catalog::open(&master).await.unwrap();
    let active = catalog.active_options().await.unwrap().unwrap();
    let pins: Vec<(&str, &str)> = active
        .exact_key_pins
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(pins, vec![("tenant-b", "s1"), ("tenant-c", "s0"), ("tenant-d", "s1")]);
    assert_eq!(active.shards[1].api_key_header_name.as_deref(), Some("X-Key"));
    let history = catalog.history().await.unwrap();
    assert_eq!(history[2].audit.operator.as_deref(), Some("ada"));
    daemon.stop().await.unwrap();
}
