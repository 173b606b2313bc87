//! Catalog updates through every surface: the same scenario (validate, compare-and-set apply,
//! activate, catalog state) gives the same transcript in-process, over REST and over gRPC; the
//! REST endpoints answer with the documented statuses and problem bodies, the gRPC service with
//! the documented codes and trailers.
#![cfg(all(feature = "server", feature = "http"))]

use std::path::Path;
use std::sync::Arc;

use reqwest::StatusCode;
use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};
use shardlite::client::{ShardAdmin, ShardedClient};
use shardlite::data::{ActivationRequest, Audit, CatalogUpdateRequest};
use shardlite::map::{BucketRange, ShardingOptions};
use shardlite::server::{ServerConfig, ServerState};
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::grpc::proto::{self as pb, shardlite_client::ShardliteClient};
use shardlite::transport::http::HttpClient;
use shardlite::wire::ERROR_CODE_METADATA;
use shardlite::{ErrorKind, RouteContext};

use crate::support::daemon::{Daemon, http_client, start_daemon, start_daemon_on};
use crate::support::{seeded_master, with_third_shard};

/// Version 2 with bucket 1 moved from s0 to s2 and tenant-b re-pinned from s1 to s0.
fn moving_map(dir: &Path) -> ShardingOptions {
    let mut map = with_third_shard(dir);
    map.bucket_ranges = vec![
        BucketRange::new(0, 1, "s0"),
        BucketRange::new(1, 2, "s2"),
        BucketRange::new(2, 4, "s1"),
    ];
    map.exact_key_pins.insert("tenant-b".into(), "s0".into());
    map
}

fn update(map: ShardingOptions, expected: Option<u64>) -> CatalogUpdateRequest {
    let mut request = CatalogUpdateRequest::new(map);
    request.expected_current_map_version = expected;
    request.audit = Audit::by("ada").because("add s2");
    request
}

fn activation(version: u64) -> ActivationRequest {
    ActivationRequest::new(version).audit(Audit::by("grace").because("go live"))
}

/// Outcomes in a transport-neutral form: values as JSON without what differs between runs (file
/// paths, times), errors as their kind.
#[derive(Default)]
struct Transcript(Vec<String>);

impl Transcript {
    fn record<T: serde::Serialize>(&mut self, step: &str, outcome: shardlite::Result<T>) -> T {
        match outcome {
            Ok(value) => {
                let mut json = serde_json::to_value(&value).unwrap();
                scrub(&mut json);
                self.0.push(format!("{step}: ok {json}"));
                value
            }
            Err(err) => panic!("{step}: {err}"),
        }
    }

    fn expect_kind<T: std::fmt::Debug>(&mut self, step: &str, outcome: shardlite::Result<T>, kind: ErrorKind) {
        let err = outcome.expect_err(step);
        assert_eq!(err.kind(), kind, "{step}: {err}");
        self.0.push(format!("{step}: error {}", err.kind()));
    }
}

fn scrub(json: &mut Value) {
    match json {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match key.as_str() {
                    "dataSource" | "appliedUtc" => *value = Value::from("-"),
                    _ => scrub(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        _ => {}
    }
}

/// Validate, apply (stale, invalid, valid), activate (wrong version, right version), and read
/// the catalog, through `admin` on a master seeded in `dir`.
async fn catalog_scenario(admin: &dyn ShardAdmin, dir: &Path) -> Vec<String> {
    let mut t = Transcript::default();

    let compatible = t.record(
        "validate compatible",
        admin
            .validate_catalog_update(&update(with_third_shard(dir), None))
            .await,
    );
    assert!(
        compatible.valid && !compatible.requires_data_migration,
        "{compatible:?}"
    );
    let moving = t.record(
        "validate moving",
        admin.validate_catalog_update(&update(moving_map(dir), Some(1))).await,
    );
    assert!(!moving.valid && moving.requires_data_migration, "{moving:?}");
    assert_eq!(moving.moved_buckets.len(), 1);
    assert_eq!(moving.moved_pins.len(), 1);

    t.expect_kind(
        "apply stale",
        admin
            .apply_catalog_update(&update(with_third_shard(dir), Some(7)))
            .await,
        ErrorKind::MapVersionConflict,
    );
    let refused = t.record(
        "apply invalid",
        admin.apply_catalog_update(&update(moving_map(dir), Some(1))).await,
    );
    assert!(!refused.applied, "{refused:?}");
    assert_eq!(refused.pending_map_version, None);
    assert_eq!(refused.validation.issues[0].code, "ownership-change-requires-migration");
    let applied = t.record(
        "apply",
        admin
            .apply_catalog_update(&update(with_third_shard(dir), Some(1)))
            .await,
    );
    assert!(applied.applied && applied.pending_map_version == Some(2), "{applied:?}");
    t.expect_kind(
        "apply again with the old version",
        admin
            .apply_catalog_update(&update(with_third_shard(dir), Some(1)))
            .await,
        ErrorKind::MapVersionConflict,
    );
    let pending = t.record("catalog with a pending map", admin.catalog_state().await);
    assert_eq!(pending.active_map.map_version, 1);
    assert_eq!(pending.pending_map.as_ref().map(|m| m.map_version), Some(2));

    t.expect_kind(
        "activate the wrong version",
        admin.activate_pending_map(&activation(3)).await,
        ErrorKind::Conflict,
    );
    let activated = t.record("activate", admin.activate_pending_map(&activation(2)).await);
    assert_eq!((activated.previous_map_version, activated.active_map_version), (1, 2));
    t.expect_kind(
        "activate twice",
        admin.activate_pending_map(&activation(2)).await,
        ErrorKind::Conflict,
    );

    let route = RouteContext::new("tenants", "tenant-a").unwrap();
    let resolved = t.record("resolve on the new map", admin.resolve_route(&route).await);
    assert_eq!(resolved.map_version, 2);
    let state = t.record("catalog after activation", admin.catalog_state().await);
    assert_eq!(state.active_map.map_version, 2);
    assert_eq!(state.active_map.shards.len(), 3);
    assert!(state.pending_map.is_none());
    let versions: Vec<u64> = state.history.iter().map(|entry| entry.map_version).collect();
    assert_eq!(versions, [2, 2, 1], "{:?}", state.history);
    assert_eq!(state.history[0].audit.operator.as_deref(), Some("grace"));
    assert_eq!(state.history[1].audit.operator.as_deref(), Some("ada"));
    t.0
}

async fn transcript_in_process() -> Vec<String> {
    let dir = crate::support::temp_dir();
    let master = seeded_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    catalog_scenario(&sharded, dir.path()).await
}

async fn transcript_over(admin: fn(&Daemon) -> Arc<dyn ShardAdmin>) -> Vec<String> {
    let dir = crate::support::temp_dir();
    let master = seeded_master(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let transcript = catalog_scenario(admin(&daemon).as_ref(), dir.path()).await;
    daemon.stop().await.unwrap();
    transcript
}

fn over_http(daemon: &Daemon) -> Arc<dyn ShardAdmin> {
    Arc::new(HttpClient::new(RemoteOptions::new(&daemon.base_url)).unwrap())
}

fn over_grpc(daemon: &Daemon) -> Arc<dyn ShardAdmin> {
    Arc::new(GrpcClient::new(RemoteOptions::new(&daemon.base_url)).unwrap())
}

fn assert_same(name: &str, expected: &[String], actual: &[String]) {
    for (want, got) in expected.iter().zip(actual) {
        assert_eq!(want, got, "{name} differs from in-process");
    }
    assert_eq!(expected.len(), actual.len(), "{name}: transcript lengths differ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_catalog_updates_behave_exactly_like_in_process() {
    let expected = transcript_in_process().await;
    assert_same("http", &expected, &transcript_over(over_http).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_catalog_updates_behave_exactly_like_in_process() {
    let expected = transcript_in_process().await;
    assert_same("grpc", &expected, &transcript_over(over_grpc).await);
}

// ------------------------------------------------------------------------------------ REST

async fn post(daemon: &Daemon, path: &str, body: &Value) -> (StatusCode, Option<String>, Value) {
    let response = http_client()
        .post(daemon.url(path))
        .json(body)
        .send()
        .await
        .expect("the daemon answers");
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    (status, content_type, body)
}

/// Asserts a problem body with `status` and `code`, and returns it.
fn assert_problem(answer: &(StatusCode, Option<String>, Value), status: StatusCode, code: &str) {
    let (actual, content_type, body) = answer;
    assert_eq!(*actual, status, "{body}");
    assert_eq!(content_type.as_deref(), Some("application/problem+json"), "{body}");
    assert_eq!(body["status"], status.as_u16(), "{body}");
    assert_eq!(body["errorCode"], code, "{body}");
    assert!(body["detail"].as_str().is_some_and(|d| !d.is_empty()), "{body}");
}

fn body(map: &ShardingOptions, extra: Value) -> Value {
    let mut body = json!({ "map": map });
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_catalog_endpoints_answer_with_the_documented_statuses_and_problems() {
    let dir = crate::support::temp_dir();
    let master = seeded_master(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let compatible = with_third_shard(dir.path());
    let moving = moving_map(dir.path());

    // Validation answers 200 whether or not the map is acceptable.
    let (status, _, valid) = post(&daemon, "/api/sharding/catalog/validate", &body(&compatible, json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{valid}");
    assert_eq!(valid["valid"], true);
    assert_eq!(valid["shardChanges"], json!([{ "shardId": "s2", "change": "added" }]));
    let (status, _, refused) = post(&daemon, "/api/sharding/catalog/validate", &body(&moving, json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{refused}");
    assert_eq!(refused["valid"], false);
    assert_eq!(refused["movedBuckets"], json!([[1, 2, "s0", "s2"]]));
    assert_eq!(refused["movedPins"], json!([["tenant-b", "s1", "s0"]]));

    // Bad JSON is a 400 naming the problem, on every catalog endpoint.
    let typo = body(&compatible, json!({ "expectedVersion": 1 }));
    let answer = post(&daemon, "/api/sharding/catalog/validate", &typo).await;
    assert_problem(&answer, StatusCode::BAD_REQUEST, "invalid_input");
    assert!(
        answer.2["detail"].as_str().unwrap().contains("expectedVersion"),
        "{}",
        answer.2
    );
    let mut inner_typo = json!({ "map": compatible });
    inner_typo["map"]["shardz"] = json!([]);
    let answer = post(&daemon, "/api/sharding/catalog/apply", &inner_typo).await;
    assert_problem(&answer, StatusCode::BAD_REQUEST, "invalid_input");
    assert!(answer.2["detail"].as_str().unwrap().contains("shardz"), "{}", answer.2);
    assert!(answer.2.get("validation").is_none(), "{}", answer.2);
    let mut wrong_type = json!({ "map": compatible });
    wrong_type["map"]["mapVersion"] = json!("two");
    let answer = post(&daemon, "/api/sharding/catalog/validate", &wrong_type).await;
    assert_problem(&answer, StatusCode::BAD_REQUEST, "invalid_input");
    assert!(
        answer.2["detail"].as_str().unwrap().contains("mapVersion"),
        "{}",
        answer.2
    );
    let answer = post(&daemon, "/api/sharding/catalog/activate", &json!({ "version": 2 })).await;
    assert_problem(&answer, StatusCode::BAD_REQUEST, "invalid_input");
    assert!(answer.2["detail"].as_str().unwrap().contains("version"), "{}", answer.2);

    // An apply that validation refuses is 400 with the validation as an extension member.
    let answer = post(
        &daemon,
        "/api/sharding/catalog/apply",
        &body(&moving, json!({ "expectedCurrentMapVersion": 1 })),
    )
    .await;
    assert_problem(&answer, StatusCode::BAD_REQUEST, "invalid_input");
    let problem = &answer.2;
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("ownership-change-requires-migration"),
        "{problem}"
    );
    assert_eq!(problem["validation"]["valid"], false, "{problem}");
    assert_eq!(
        problem["validation"]["issues"][0]["code"], "ownership-change-requires-migration",
        "{problem}"
    );
    assert_eq!(problem["validation"]["movedBuckets"], json!([[1, 2, "s0", "s2"]]));

    // A stale expected version is 409 map_version_conflict.
    let stale = body(&compatible, json!({ "expectedCurrentMapVersion": 7 }));
    let answer = post(&daemon, "/api/sharding/catalog/apply", &stale).await;
    assert_problem(&answer, StatusCode::CONFLICT, "map_version_conflict");

    let current = body(
        &compatible,
        json!({ "expectedCurrentMapVersion": 1, "operator": "ada" }),
    );
    let (status, _, applied) = post(&daemon, "/api/sharding/catalog/apply", &current).await;
    assert_eq!(status, StatusCode::OK, "{applied}");
    assert_eq!(applied["applied"], true);
    assert_eq!(applied["pendingMapVersion"], 2);
    let answer = post(&daemon, "/api/sharding/catalog/apply", &current).await;
    assert_problem(&answer, StatusCode::CONFLICT, "map_version_conflict");

    // Activation: 409 without a pending map of that version, else live without a restart.
    let answer = post(
        &daemon,
        "/api/sharding/catalog/activate",
        &json!({ "expectedPendingMapVersion": 3 }),
    )
    .await;
    assert_problem(&answer, StatusCode::CONFLICT, "conflict");
    let (status, _, activated) = post(
        &daemon,
        "/api/sharding/catalog/activate",
        &json!({ "expectedPendingMapVersion": 2, "operator": "grace" }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{activated}");
    assert_eq!(activated["activeMapVersion"], 2);
    assert_eq!(activated["previousMapVersion"], 1);
    let answer = post(
        &daemon,
        "/api/sharding/catalog/activate",
        &json!({ "expectedPendingMapVersion": 2 }),
    )
    .await;
    assert_problem(&answer, StatusCode::CONFLICT, "conflict");

    let http = http_client();
    let map: Value = http
        .get(daemon.url("/api/sharding/map"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(map["mapVersion"], 2);
    assert_eq!(map["shards"].as_array().map(Vec::len), Some(3));
    let catalog: Value = http
        .get(daemon.url("/api/sharding/catalog"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(catalog["activeMap"]["mapVersion"], 2);
    assert!(catalog.get("pendingMap").is_none(), "{catalog}");
    assert_eq!(catalog["history"][0]["operator"], "grace");
    assert_eq!(catalog["history"][1]["operator"], "ada");
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_describes_the_catalog_endpoints() {
    let doc = serde_json::to_value(shardlite::server::rest::openapi_document(
        &ServerConfig::default(),
        Some("tenants"),
    ))
    .unwrap();
    let paths = &doc["paths"];
    let schema_of = |path: &str, status: &str, content: &str| {
        paths[path]["post"]["responses"][status]["content"][content]["schema"]["$ref"].clone()
    };
    for (path, request, ok) in [
        (
            "/api/sharding/catalog/validate",
            "CatalogUpdateRequest",
            "CatalogValidation",
        ),
        (
            "/api/sharding/catalog/apply",
            "CatalogUpdateRequest",
            "CatalogApplyResult",
        ),
        (
            "/api/sharding/catalog/activate",
            "ActivationRequest",
            "ActivationResult",
        ),
    ] {
        let body = &paths[path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"];
        assert_eq!(body, &format!("#/components/schemas/{request}"), "{path}");
        assert_eq!(
            schema_of(path, "200", "application/json"),
            format!("#/components/schemas/{ok}"),
            "{path}"
        );
        assert!(paths[path]["post"]["responses"]["404"].is_object(), "{path}");
    }
    assert_eq!(
        schema_of("/api/sharding/catalog/apply", "400", "application/problem+json"),
        "#/components/schemas/CatalogUpdateRefused"
    );
    for path in ["/api/sharding/catalog/apply", "/api/sharding/catalog/activate"] {
        assert_eq!(
            schema_of(path, "409", "application/problem+json"),
            "#/components/schemas/Problem",
            "{path}"
        );
    }
    let schemas = &doc["components"]["schemas"];
    let refused = serde_json::to_string(&schemas["CatalogUpdateRefused"]).unwrap();
    assert!(
        refused.contains("#/components/schemas/Problem") && refused.contains("validation"),
        "{refused}"
    );
    assert_eq!(schemas["MovedBuckets"]["prefixItems"].as_array().map(Vec::len), Some(4));
    assert_eq!(schemas["MovedPin"]["prefixItems"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        schemas["CatalogUpdateRequest"]["properties"]["map"]["$ref"],
        "#/components/schemas/ShardingOptions"
    );
    assert_eq!(schemas["ShardingOptions"]["additionalProperties"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsharded_daemon_refuses_catalog_updates_on_both_transports() {
    let dir = crate::support::temp_dir();
    let state = ServerState::open(dir.path().join("plain.db"), ServerConfig::default())
        .await
        .unwrap();
    let daemon = start_daemon(state).await;
    let map = with_third_shard(dir.path());
    for (path, request) in [
        ("/api/sharding/catalog/validate", body(&map, json!({}))),
        ("/api/sharding/catalog/apply", body(&map, json!({}))),
        (
            "/api/sharding/catalog/activate",
            json!({ "expectedPendingMapVersion": 2 }),
        ),
    ] {
        let answer = post(&daemon, path, &request).await;
        assert_problem(&answer, StatusCode::NOT_FOUND, "not_sharded");
    }
    for admin in [over_http(&daemon), over_grpc(&daemon)] {
        let request = update(map.clone(), None);
        let kinds = [
            admin.validate_catalog_update(&request).await.unwrap_err().kind(),
            admin.apply_catalog_update(&request).await.unwrap_err().kind(),
            admin.activate_pending_map(&activation(2)).await.unwrap_err().kind(),
        ];
        assert_eq!(kinds, [ErrorKind::NotSharded; 3]);
    }
    daemon.stop().await.unwrap();
}

// ------------------------------------------------------------------------------------ gRPC

fn metadata_text<'a>(status: &'a tonic::Status, key: &str) -> Option<&'a str> {
    status.metadata().get(key).and_then(|v| v.to_str().ok())
}

fn grpc_update(map: &ShardingOptions, expected: Option<u64>) -> pb::ShardCatalogUpdateRequest {
    pb::ShardCatalogUpdateRequest::from(&update(map.clone(), expected))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_answers_refusals_in_the_reply_and_conflicts_as_aborted() {
    let dir = crate::support::temp_dir();
    let master = seeded_master(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let mut raw = ShardliteClient::connect(daemon.base_url.clone()).await.unwrap();

    // Refused by validation: an OK reply that says so.
    let refused = raw
        .apply_shard_catalog_update(grpc_update(&moving_map(dir.path()), Some(1)))
        .await
        .unwrap()
        .into_inner();
    assert!(!refused.applied);
    let validation = refused.validation.expect("the validation travels with the reply");
    assert!(!validation.valid);
    assert_eq!(validation.issues[0].severity, pb::IssueSeverity::Error as i32);
    assert_eq!(validation.issues[0].code, "ownership-change-requires-migration");
    assert_eq!(
        (validation.moved_buckets[0].start, validation.moved_buckets[0].end),
        (1, 2)
    );
    assert_eq!(validation.moved_pins[0].key, "tenant-b");
    assert_eq!(validation.preview.map(|p| p.map_version), Some(2));

    let stale = raw
        .apply_shard_catalog_update(grpc_update(&with_third_shard(dir.path()), Some(7)))
        .await
        .unwrap_err();
    assert_eq!(stale.code(), tonic::Code::Aborted);
    assert_eq!(metadata_text(&stale, ERROR_CODE_METADATA), Some("map_version_conflict"));

    let unparsable = pb::ShardCatalogUpdateRequest {
        map_json: r#"{"shards": [], "mapVersoin": 2}"#.into(),
        ..Default::default()
    };
    let invalid = raw.validate_shard_catalog_update(unparsable).await.unwrap_err();
    assert_eq!(invalid.code(), tonic::Code::InvalidArgument);
    assert_eq!(metadata_text(&invalid, ERROR_CODE_METADATA), Some("invalid_input"));
    assert!(invalid.message().contains("mapVersoin"), "{}", invalid.message());

    let no_pending = raw
        .activate_shard_catalog(pb::ActivateShardCatalogRequest {
            expected_pending_map_version: 2,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(no_pending.code(), tonic::Code::Aborted);
    assert_eq!(metadata_text(&no_pending, ERROR_CODE_METADATA), Some("conflict"));
    daemon.stop().await.unwrap();
}
