//! The request's constructors and the JSON the wire and the catalog keep.

use serde_json::json;

use super::*;
use crate::data::Audit;

fn manifest() -> ReshardManifest {
    ReshardManifest {
        page_size: Some(100),
        tables: vec![TableManifest {
            table_name: "orders".into(),
            route_key_column: "tenant".into(),
            primary_key_column: "id".into(),
        }],
        collections: vec![CollectionManifest {
            collection_name: "profiles".into(),
            route_key_property: "tenant".into(),
        }],
    }
}

const MANIFEST_JSON: &str = r#"{"pageSize":100,"tables":[{"tableName":"orders","routeKeyColumn":"tenant","primaryKeyColumn":"id"}],"collections":[{"collectionName":"profiles","routeKeyProperty":"tenant"}]}"#;

fn key_body(json: &str) -> Result<ReshardRequest, serde_json::Error> {
    serde_json::from_str::<KeyReshardBody>(json).map(ReshardRequest::from)
}

fn bucket_body(json: &str) -> Result<ReshardRequest, serde_json::Error> {
    serde_json::from_str::<BucketReshardBody>(json).map(ReshardRequest::from)
}

/// The request's wire body, as the REST and gRPC clients send it.
fn body_json(request: &ReshardRequest) -> String {
    match ReshardBody::from(request.clone()) {
        ReshardBody::RouteKey(body) => serde_json::to_string(&body).unwrap(),
        ReshardBody::BucketRange(body) => serde_json::to_string(&body).unwrap(),
    }
}

#[test]
fn the_route_key_constructor_spells_out_the_defaults() {
    let request = ReshardRequest::route_key("tenants", "acme", "s1", manifest());
    assert_eq!(
        request,
        ReshardRequest {
            scope: ReshardScope::RouteKey {
                keyspace: "tenants".into(),
                route_key: "acme".into(),
            },
            destination_shard_id: "s1".into(),
            manifest: manifest(),
            migration_id: None,
            expected_current_map_version: None,
            dry_run: false,
            online: true,
            activate: false,
            delete_source: false,
            audit: Audit::default(),
        }
    );
    assert_eq!(request.scope.keyspace(), "tenants");
    assert_eq!(request.scope.route_key(), Some("acme"));
    assert_eq!(request.scope.buckets(), None);
}

#[test]
fn the_bucket_range_constructor_and_the_setters_change_one_thing_each() {
    let request = ReshardRequest::bucket_range("tenants", "s0", 2..6, "s1", manifest())
        .migration_id("move-2-6")
        .expecting_map_version(7)
        .dry_run()
        .offline()
        .activate()
        .delete_source()
        .audit(Audit::by("ada").because("rebalance"));
    assert_eq!(
        request,
        ReshardRequest {
            scope: ReshardScope::BucketRange {
                keyspace: "tenants".into(),
                source_shard_id: "s0".into(),
                start_bucket_inclusive: 2,
                end_bucket_exclusive: 6,
            },
            destination_shard_id: "s1".into(),
            manifest: manifest(),
            migration_id: Some("move-2-6".into()),
            expected_current_map_version: Some(7),
            dry_run: true,
            online: false,
            activate: true,
            delete_source: true,
            audit: Audit::by("ada").because("rebalance"),
        }
    );
    assert_eq!(request.scope.keyspace(), "tenants");
    assert_eq!(request.scope.route_key(), None);
    assert_eq!(request.scope.buckets(), Some(2..6));
    let scope = request.scope.clone();
    assert_eq!(ReshardRequest::new(scope, "s1", manifest()).scope, request.scope);
}

#[test]
fn a_route_key_request_travels_as_the_exact_route_key_body_of_before() {
    let minimal = ReshardRequest::route_key("tenants", "acme", "s1", manifest());
    let json = format!(
        r#"{{"keyspace":"tenants","routeKey":"acme","destinationShardId":"s1","manifest":{MANIFEST_JSON},"dryRun":false,"online":true,"activate":false,"deleteSource":false}}"#
    );
    assert_eq!(body_json(&minimal), json);
    assert_eq!(key_body(&json).unwrap(), minimal);

    let full = minimal
        .migration_id("m1")
        .expecting_map_version(3)
        .offline()
        .activate()
        .delete_source()
        .audit(Audit::by("ada").because("why"));
    let json = format!(
        r#"{{"keyspace":"tenants","routeKey":"acme","destinationShardId":"s1","manifest":{MANIFEST_JSON},"migrationId":"m1","expectedCurrentMapVersion":3,"dryRun":false,"online":false,"activate":true,"deleteSource":true,"operator":"ada","comment":"why"}}"#
    );
    assert_eq!(body_json(&full), json);
    assert_eq!(key_body(&json).unwrap(), full);
}

#[test]
fn a_bucket_range_request_travels_as_the_bucket_range_body_of_before() {
    let request = ReshardRequest::bucket_range("tenants", "s0", 0..8, "s1", manifest())
        .dry_run()
        .audit(Audit::default().because("why"));
    let json = format!(
        r#"{{"keyspace":"tenants","sourceShardId":"s0","destinationShardId":"s1","startBucketInclusive":0,"endBucketExclusive":8,"manifest":{MANIFEST_JSON},"dryRun":true,"online":true,"activate":false,"deleteSource":false,"comment":"why"}}"#
    );
    assert_eq!(body_json(&request), json);
    assert_eq!(bucket_body(&json).unwrap(), request);
}

#[test]
fn bodies_take_their_defaults_and_run_online_unless_told() {
    let key = key_body(r#"{"keyspace":"t","routeKey":"k","destinationShardId":"s1","manifest":{}}"#).unwrap();
    assert_eq!(
        key,
        ReshardRequest::route_key("t", "k", "s1", ReshardManifest::default())
    );
    let offline = bucket_body(
        r#"{"keyspace":"t","sourceShardId":"s0","destinationShardId":"s1","startBucketInclusive":1,
            "endBucketExclusive":2,"manifest":{},"online":false,"operator":"ada"}"#,
    )
    .unwrap();
    assert_eq!(
        offline,
        ReshardRequest::bucket_range("t", "s0", 1..2, "s1", ReshardManifest::default())
            .offline()
            .audit(Audit::by("ada"))
    );
}

#[test]
fn bodies_refuse_unknown_and_missing_members_by_name() {
    let typo = key_body(r#"{"keyspace":"t","routeKey":"k","destinationShardId":"s1","manifest":{},"dryrun":true}"#)
        .unwrap_err()
        .to_string();
    assert!(typo.contains("unknown field `dryrun`"), "{typo}");
    assert!(typo.contains("expected one of `keyspace`, `routeKey`"), "{typo}");
    // A bucket-range member in a route-key body is no more welcome than a typo.
    let other =
        key_body(r#"{"keyspace":"t","routeKey":"k","destinationShardId":"s1","manifest":{},"sourceShardId":"s0"}"#)
            .unwrap_err()
            .to_string();
    assert!(other.contains("unknown field `sourceShardId`"), "{other}");
    let missing = bucket_body(r#"{"keyspace":"t","sourceShardId":"s0","destinationShardId":"s1","manifest":{}}"#)
        .unwrap_err()
        .to_string();
    assert!(missing.contains("missing field `startBucketInclusive`"), "{missing}");
    let wrong = key_body("[]").unwrap_err().to_string();
    assert!(wrong.contains("struct KeyMigrationRequest"), "{wrong}");
}

/// A route-key spec as releases with online moves stored it, member for member.
const KEY_SPEC: &str = r#"{"kind":"ExactRouteKey","keyspace":"tenants","routeKey":"acme","sourceShardId":"s0","destinationShardId":"s1","manifest":{"tables":[{"tableName":"items","routeKeyColumn":"tenant","primaryKeyColumn":"id"}],"collections":[]},"activate":true,"deleteSource":true,"online":true,"operator":"ada","comment":"acme outgrew s0"}"#;

/// A bucket-range spec as releases before online moves stored it: no `online`.
const BUCKET_SPEC_BEFORE_ONLINE: &str = r#"{"kind":"BucketRange","keyspace":"tenants","startBucketInclusive":0,"endBucketExclusive":4,"sourceShardId":"s0","destinationShardId":"s1","manifest":{"pageSize":50,"tables":[],"collections":[{"collectionName":"profiles","routeKeyProperty":"tenant"}]},"activate":false,"deleteSource":false}"#;

#[test]
fn a_stored_route_key_spec_reads_and_writes_back_member_for_member() {
    let spec: ReshardSpec = serde_json::from_str(KEY_SPEC).unwrap();
    assert_eq!(
        spec.scope,
        ReshardScope::RouteKey {
            keyspace: "tenants".into(),
            route_key: "acme".into(),
        }
    );
    assert_eq!(spec.keyspace(), "tenants");
    assert_eq!(
        (spec.source_shard_id.as_str(), spec.destination_shard_id.as_str()),
        ("s0", "s1")
    );
    assert_eq!(spec.manifest.tables[0].table_name, "items");
    assert!(spec.activate && spec.delete_source && spec.online);
    assert_eq!(spec.audit, Audit::by("ada").because("acme outgrew s0"));
    assert_eq!(serde_json::to_string(&spec).unwrap(), KEY_SPEC);
}

#[test]
fn a_bucket_range_spec_stored_before_online_moves_reads_as_fenced() {
    let spec: ReshardSpec = serde_json::from_str(BUCKET_SPEC_BEFORE_ONLINE).unwrap();
    assert_eq!(
        spec.scope,
        ReshardScope::BucketRange {
            keyspace: "tenants".into(),
            source_shard_id: "s0".into(),
            start_bucket_inclusive: 0,
            end_bucket_exclusive: 4,
        }
    );
    assert_eq!(spec.source_shard_id, "s0");
    assert!(!spec.online, "migrations recorded before online moves ran fenced");
    assert!(spec.audit.is_empty());
    assert_eq!(spec.manifest.page_size, Some(50));
    // Written back as before, `online` now spelled out.
    let mut expected: serde_json::Value = serde_json::from_str(BUCKET_SPEC_BEFORE_ONLINE).unwrap();
    expected["online"] = json!(false);
    assert_eq!(serde_json::to_value(&spec).unwrap(), expected);
    assert_eq!(
        serde_json::to_string(&spec).unwrap(),
        BUCKET_SPEC_BEFORE_ONLINE.replace(r#""deleteSource":false}"#, r#""deleteSource":false,"online":false}"#)
    );
}

#[test]
fn a_checkpoint_stored_before_online_moves_reads_and_writes_back_as_it_was() {
    let checkpoint = json!({
        "migrationId": "mig-20250101000000-0123456789abcdef0123456789abcdef",
        "status": "Failed",
        "phase": "copying",
        "message": "the migration failed: shard 's1' is unavailable",
        "spec": {
            "kind": "ExactRouteKey",
            "keyspace": "tenants",
            "routeKey": "acme",
            "sourceShardId": "s0",
            "destinationShardId": "s1",
            "manifest": { "pageSize": 2, "tables": [
                { "tableName": "items", "routeKeyColumn": "tenant", "primaryKeyColumn": "id" }
            ], "collections": [] },
            "activate": true,
            "deleteSource": false,
            "operator": "ada"
        },
        "mapVersion": 1,
        "requiresOperatorRecovery": true,
        "recoveryAction": "run `shardlite migrate resume` with this id",
        "receipts": [{
            "name": "items",
            "collection": false,
            "sourceRows": 2,
            "pagesCopied": 1,
            "lastKey": "acme-2",
            "copied": false,
            "sourceChecksum": "00",
            "verified": false,
            "sourceRowsDeleted": 0
        }],
        "issues": [{ "severity": "error", "code": "copy-failed", "message": "shard 's1' is unavailable" }],
        "attempt": 1,
        "startedUtc": "2025-01-01T00:00:00Z",
        "updatedUtc": "2025-01-01T00:00:01Z",
        "completedUtc": "2025-01-01T00:00:01Z"
    });
    let state: ReshardResult = serde_json::from_value(checkpoint.clone()).unwrap();
    assert_eq!(state.status, ReshardStatus::Failed);
    assert_eq!(state.spec.scope.route_key(), Some("acme"));
    assert!(!state.spec.online);
    assert_eq!(state.spec.audit, Audit::by("ada"));
    assert_eq!(state.receipts[0].last_key, Some(Value::from("acme-2")));
    assert_eq!(state.online, None);
    let mut expected = checkpoint;
    expected["spec"]["online"] = json!(false);
    assert_eq!(serde_json::to_value(&state).unwrap(), expected);
}

#[test]
fn a_stored_spec_without_the_members_of_its_kind_is_refused_by_name() {
    let keyless = KEY_SPEC.replace(r#""routeKey":"acme","#, "");
    let err = serde_json::from_str::<ReshardSpec>(&keyless).unwrap_err().to_string();
    assert!(err.contains("routeKey"), "{err}");
    let rangeless = BUCKET_SPEC_BEFORE_ONLINE.replace(r#""endBucketExclusive":4,"#, "");
    let err = serde_json::from_str::<ReshardSpec>(&rangeless).unwrap_err().to_string();
    assert!(err.contains("endBucketExclusive"), "{err}");
    let unknown_kind = KEY_SPEC.replace("ExactRouteKey", "Everything");
    assert!(serde_json::from_str::<ReshardSpec>(&unknown_kind).is_err());
}
