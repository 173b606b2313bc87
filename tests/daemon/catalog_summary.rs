//! Answers about a large map stay small: validate, apply and the catalog view summarise a map
//! whose lists pass the echo limit (counts, and what changed, in place of every pin), over REST
//! and gRPC; a small map is echoed whole as before, and the whole map stays available at
//! `GET /api/sharding/map`.
#![cfg(all(feature = "server", feature = "http"))]

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};
use shardlite::client::ShardAdmin;
use shardlite::data::{CatalogUpdateRequest, MapProposal};
use shardlite::map::{MapPatch, SNAPSHOT_ECHO_LIMIT};
use shardlite::server::ServerConfig;
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;

use crate::support::daemon::{http_client, start_daemon_on};
use crate::support::{seed_master, temp_dir, tenants_options};

async fn post(url: String, body: Value) -> (StatusCode, Value, usize) {
    let response = http_client().post(url).json(&body).send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null), text.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_map_is_summarised_and_a_small_one_echoed_whole() {
    let dir = temp_dir();
    let pins = SNAPSHOT_ECHO_LIMIT + 500;
    let mut large = tenants_options(dir.path());
    large.exact_key_pins = (0..pins)
        .map(|n| {
            (
                format!("tenant-{n:05}"),
                if n % 2 == 0 { "s0" } else { "s1" }.to_owned(),
            )
        })
        .collect();
    let master = seed_master(dir.path(), large).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;

    // One pin added and one changed by a patch: the answer counts the map and names the moved
    // pins (the new one's bucket is on s0).
    let patch = json!({ "mapVersion": 2, "exactKeyPins": { "tenant-new": "s1", "tenant-00000": "s1" } });
    let body = json!({ "patch": patch, "expectedCurrentMapVersion": 1, "allowOwnershipChange": true });
    let (status, validated, size) = post(daemon.url("/api/sharding/catalog/validate"), body.clone()).await;
    assert_eq!(status, StatusCode::OK, "{validated}");
    assert_eq!(validated["valid"], true, "{validated}");
    let preview = &validated["preview"];
    assert_eq!(preview["mapVersion"], 2);
    assert_eq!(preview["exactKeyPins"], json!({}), "the pins are counted, not listed");
    assert_eq!(preview["summary"]["pinCount"], pins + 1);
    assert_eq!(preview["summary"]["shardCount"], 2);
    assert_eq!(preview["summary"]["omitted"], json!(["exactKeyPins"]));
    assert_eq!(
        preview["shards"].as_array().unwrap().len(),
        2,
        "short lists stay listed"
    );
    assert_eq!(
        validated["movedPins"],
        json!([["tenant-00000", "s0", "s1"], ["tenant-new", "s0", "s1"]]),
        "{validated}"
    );
    assert!(size < 4_096, "validate answered {size} bytes");
    let (status, applied, size) = post(daemon.url("/api/sharding/catalog/apply"), body).await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    assert_eq!(applied["applied"], true, "{applied}");
    assert!(size < 4_096, "apply answered {size} bytes");

    // The catalog view summarises the active and pending maps; the map view lists every pin.
    let view: Value = http_client()
        .get(daemon.url("/api/sharding/catalog"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(view["activeMap"]["summary"]["pinCount"], pins, "{view}");
    assert_eq!(view["pendingMap"]["summary"]["pinCount"], pins + 1, "{view}");
    let whole: Value = http_client()
        .get(daemon.url("/api/sharding/map"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(whole["exactKeyPins"].as_object().unwrap().len(), pins);
    assert!(whole.get("summary").is_none());

    // gRPC carries the same summary.
    let grpc: Arc<dyn ShardAdmin> = Arc::new(GrpcClient::new(RemoteOptions::new(&daemon.base_url)).unwrap());
    let state = grpc.catalog_state().await.unwrap();
    let summary = state.pending_map.unwrap().summary.expect("a summary over gRPC");
    assert_eq!(summary.pin_count, u64::try_from(pins + 1).unwrap());
    assert_eq!(summary.omitted, ["exactKeyPins"]);
    let small = CatalogUpdateRequest::new(MapProposal::Patch(MapPatch::from_json(r#"{"mapVersion": 3}"#).unwrap()));
    let validation = grpc.validate_catalog_update(&small).await.unwrap();
    assert_eq!(
        validation.preview.unwrap().summary.unwrap().pin_count,
        u64::try_from(pins + 1).unwrap()
    );

    // A small map is echoed whole, with no summary.
    let small_dir = temp_dir();
    let master = seed_master(small_dir.path(), tenants_options(small_dir.path())).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let body = json!({ "patch": { "mapVersion": 2, "exactKeyPins": { "tenant-c": "s1" } } });
    let (status, validated, _) = post(daemon.url("/api/sharding/catalog/validate"), body).await;
    assert_eq!(status, StatusCode::OK, "{validated}");
    assert_eq!(validated["preview"]["exactKeyPins"].as_object().unwrap().len(), 3);
    assert!(validated["preview"].get("summary").is_none(), "{validated}");
}
