//! Keys with scopes: every REST operation (listed from the daemon's own `/openapi.json`) and
//! every gRPC method (listed from the proto's descriptor) called with a `read`, a `write` and an
//! `admin` key, against the table of SPEC section 17 written out here. An operation missing from
//! that table fails the test, so a new endpoint needs a scope decision (an operation both
//! surfaces serve, such as the atomic participant calls, has one name and one scope). Also:
//! keyspace limits, and reloading the key file.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::Fixture;
use crate::support::daemon::{Daemon, http_client, routed};
use prost::Message as _;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use shardlite::server::ServerConfig;
use shardlite::server::keys::KeyRing;
use shardlite::wire::proto::{self as pb, FILE_DESCRIPTOR_SET};
use shardlite::wire::{ERROR_CODE_METADATA, KEYSPACE_METADATA, SHARD_KEY_METADATA};

const KEY_HEADER: &str = "X-CSharpDB-Api-Key";

/// SPEC section 17: `read` for queries, reads, read-only SQL, read-only fan-out, merged reads and
/// status (a data host's shard list too), shard directory lookups and entry lists; `write` for data
/// changes and transactions; `admin` for the catalog, shard directory changes, migrations, schema migrations, exec-all and creating a data host's shard files.
/// `None`: any valid key. SQL that `read` runs read-only (see [`allows`]) is listed under `write`,
/// the scope its refusal names.
fn expected_scope(operation: &str) -> Option<Option<&'static str>> {
    let mut chars = operation.chars();
    let name: String = chars
        .next()
        .map(|c| c.to_ascii_uppercase())
        .into_iter()
        .chain(chars)
        .collect();
    let scope = match name.as_str() {
        "GetInfo"
        | "ExecuteReadOnlySql"
        | "ListTables"
        | "GetTableSchema"
        | "CountRows"
        | "BrowseRows"
        | "GetRow"
        | "ListCollections"
        | "CountDocuments"
        | "BrowseDocuments"
        | "GetDocument"
        | "ListSavedQueries"
        | "GetSavedQuery"
        | "ListProcedures"
        | "GetProcedure"
        | "GetShardMap"
        | "ResolveShardRoute"
        | "GetShardStatus"
        | "GetShardStatusPage"
        | "GetShardHeat"
        | "ListAtomicTransactions"
        | "ExecuteReadOnlySqlOnAllShards"
        | "QueryAllShards"
        | "ListHostShards"
        | "ResolveShardDirectoryEntry"
        | "ListShardDirectoryEntries" => Some("read"),
        "ExecuteSql"
        | "BeginTransaction"
        | "ExecuteInTransaction"
        | "CommitTransaction"
        | "RollbackTransaction"
        | "BeginAtomicSession"
        | "ExecuteInAtomicSession"
        | "PrepareAtomicSession"
        | "RollbackAtomicSession"
        | "RunAtomicStep"
        | "GetAtomicDecision"
        | "GetAtomicState"
        | "InsertRow"
        | "UpdateRow"
        | "DeleteRow"
        | "PutDocument"
        | "DeleteDocument"
        | "DropCollection"
        | "PutSavedQuery"
        | "DeleteSavedQuery"
        | "CreateProcedure"
        | "PutProcedure"
        | "DeleteProcedure"
        | "ExecuteProcedure" => Some("write"),
        "ExecuteSqlOnAllShards"
        | "GetShardCatalog"
        | "ValidateShardCatalogUpdate"
        | "ApplyShardCatalogUpdate"
        | "ActivateShardCatalog"
        | "GetShardSchemaStatus"
        | "MigrateShardSchema"
        | "MigrateExactRouteKey"
        | "MigrateBucketRange"
        | "GetShardMigrations"
        | "GetShardMigrationHistory"
        | "GetShardMigrationProgress"
        | "ResumeShardMigration"
        | "AbandonShardMigration"
        | "ReserveShardDirectoryEntry"
        | "ActivateShardDirectoryEntry"
        | "UpsertShardDirectoryEntry"
        | "DisableShardDirectoryEntry"
        | "DeleteShardDirectoryEntry"
        | "MarkShardDirectoryEntryStale"
        | "ImportShardDirectoryEntries"
        | "CreateHostShard"
        | "CreateBackup"
        | "ListBackups"
        | "GetBackupOverview" => Some("admin"),
        "GetOpenApiDocument" => None,
        _ => return None,
    };
    Some(scope)
}

/// Whether a key holding only `holds` may call `operation`, which needs `scope`: SQL
/// (`ExecuteSql`, transactions and running a procedure) runs read-only with `read` alone, and as
/// sent with `write`.
fn allows(operation: &str, scope: Option<&str>, holds: &str) -> bool {
    let sql = [
        "executeSql",
        "beginTransaction",
        "executeInTransaction",
        "commitTransaction",
        "rollbackTransaction",
        "executeProcedure",
    ]
    .iter()
    .any(|sql| operation.eq_ignore_ascii_case(sql));
    scope.is_none_or(|scope| scope == holds) || (sql && holds == "read")
}

/// One key per scope, plus one with every scope limited to another keyspace.
const KEYS: [(&str, &str); 3] = [("read", "key-read"), ("write", "key-write"), ("admin", "key-admin")];

fn write_key_file(path: &Path, orders_only_key: &str) {
    let mut entries: Vec<Value> = KEYS
        .iter()
        .map(|(scope, key)| json!({"name": format!("{scope}-key"), "key": key, "scopes": [scope], "keyspaces": ["*"]}))
        .collect();
    entries.push(json!({
        "name": "orders-only",
        "key": orders_only_key,
        "scopes": ["read", "write", "admin"],
        "keyspaces": ["orders"],
    }));
    std::fs::write(path, serde_json::to_vec_pretty(&entries).unwrap()).unwrap();
}

async fn keyed_daemon(fixture: &Fixture) -> (Daemon, std::path::PathBuf) {
    let file = fixture.dir.path().join("keys.json");
    write_key_file(&file, "key-orders");
    let config = ServerConfig {
        api_keys: Some(KeyRing::load(&file).expect("the key file loads")),
        api_keys_file: Some(file.clone()),
        ..ServerConfig::default()
    };
    (fixture.start_with(config).await, file)
}

/// `{name}` path parameters filled with harmless values: every call fails on its input or finds
/// nothing, so the matrix changes no data, whatever the key.
fn concrete(path: &str) -> String {
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("closing brace") + start;
        out.push_str("scope-matrix-none");
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

async fn call_rest(daemon: &Daemon, method: &Method, path: &str, key: &str) -> (StatusCode, Value) {
    let request = http_client()
        .request(method.clone(), daemon.url(&concrete(path)))
        .header(KEY_HEADER, key);
    let request = if [Method::POST, Method::PUT].contains(method) {
        request.json(&json!({}))
    } else {
        request
    };
    let response = routed(request, "tenant-a").send().await.expect("the daemon answers");
    let status = response.status();
    let body = response.json::<Value>().await.unwrap_or(Value::Null);
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rest_operation_needs_its_scope() {
    let fixture = Fixture::new().await;
    let (daemon, _) = keyed_daemon(&fixture).await;
    let doc: Value = http_client()
        .get(daemon.url("/openapi.json"))
        .header(KEY_HEADER, "key-read")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut checked = BTreeMap::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("path item") {
            let Ok(method) = method.to_uppercase().parse::<Method>() else {
                continue;
            };
            if operation["security"] == json!([{}]) {
                continue; // the admin page and the probes need no key
            }
            let id = operation["operationId"].as_str().expect("operationId");
            let Some(scope) = expected_scope(id) else {
                panic!("{method} {path} ({id}) has no scope in SPEC section 17's table: decide one");
            };
            for (holds, key) in KEYS {
                let (status, body) = call_rest(&daemon, &method, path, key).await;
                let allowed = allows(id, scope, holds);
                if allowed {
                    assert!(
                        status != StatusCode::FORBIDDEN && status != StatusCode::UNAUTHORIZED,
                        "{method} {path} with the {holds} key: {status} {body}"
                    );
                } else {
                    let scope = scope.unwrap_or_default();
                    assert_eq!(
                        status,
                        StatusCode::FORBIDDEN,
                        "{method} {path} with the {holds} key: {body}"
                    );
                    assert_eq!(body["errorCode"], "permission_denied", "{body}");
                    let detail = body["detail"].as_str().unwrap_or_default();
                    assert!(
                        detail.contains(&format!("'{scope}' scope")),
                        "{method} {path}: {detail}"
                    );
                    assert!(detail.contains(&format!("'{holds}-key'")), "{detail}");
                    assert!(!detail.contains(key), "the key leaked: {detail}");
                }
            }
            checked.insert(id.to_owned(), scope);
        }
    }
    assert!(
        checked.len() > 45,
        "only {} operations checked: {checked:?}",
        checked.len()
    );
    // The 403 is documented where a scope is needed.
    assert!(doc["paths"]["/api/sql/execute"]["post"]["responses"]["403"].is_object());

    // A key with every scope but another keyspace is refused, naming the keyspace.
    let (status, body) = call_rest(&daemon, &Method::GET, "/api/info", "key-orders").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let detail = body["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("not for keyspace 'tenants'"), "{detail}");
    // No key, or an unknown one, is still 401.
    let (status, _) = call_rest(&daemon, &Method::GET, "/api/info", "key-nobody").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    daemon.stop().await.unwrap();
}

/// The service's methods, from the descriptor compiled from `proto/shardlite.proto`.
fn grpc_methods() -> Vec<String> {
    let set = prost_types::FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).expect("descriptor set");
    let methods: Vec<String> = set
        .file
        .iter()
        .flat_map(|file| &file.service)
        .filter(|service| service.name() == "Shardlite")
        .flat_map(|service| &service.method)
        .map(|method| method.name().to_owned())
        .collect();
    assert!(methods.len() > 40, "{methods:?}");
    methods
}

/// Calls `method` with an empty request message (every field at its default, which encodes to
/// no bytes and so fits every request type), reading any answer as `Empty`.
async fn call_grpc(daemon: &Daemon, method: &str, key: &str) -> Result<(), tonic::Status> {
    let channel = tonic::transport::Endpoint::from_shared(daemon.base_url.clone())
        .unwrap()
        .connect()
        .await
        .expect("connect");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    let mut request = tonic::Request::new(pb::Empty {});
    let metadata = request.metadata_mut();
    metadata.insert("x-csharpdb-api-key", key.parse().unwrap());
    metadata.insert(KEYSPACE_METADATA, "tenants".parse().unwrap());
    metadata.insert(SHARD_KEY_METADATA, "tenant-a".parse().unwrap());
    let path = format!("/shardlite.v1.Shardlite/{method}").parse().unwrap();
    let codec = tonic_prost::ProstCodec::<pb::Empty, pb::Empty>::default();
    grpc.unary(request, path, codec).await.map(|_| ())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_grpc_method_needs_its_scope() {
    let fixture = Fixture::new().await;
    let (daemon, _) = keyed_daemon(&fixture).await;
    for method in grpc_methods() {
        let Some(scope) = expected_scope(&method) else {
            panic!("gRPC method {method} has no scope in SPEC section 17's table: decide one");
        };
        for (holds, key) in KEYS {
            let outcome = call_grpc(&daemon, &method, key).await;
            let code = outcome
                .as_ref()
                .err()
                .and_then(|status| status.metadata().get(ERROR_CODE_METADATA))
                .and_then(|value| value.to_str().ok())
                .unwrap_or("ok")
                .to_owned();
            if allows(&method, scope, holds) {
                assert!(
                    code != "permission_denied" && code != "unauthenticated",
                    "{method} with the {holds} key: {outcome:?}"
                );
            } else {
                let status = outcome.expect_err(&method);
                assert_eq!(status.code(), tonic::Code::PermissionDenied, "{method}: {status:?}");
                assert_eq!(code, "permission_denied");
                let scope = scope.unwrap_or_default();
                assert!(
                    status.message().contains(&format!("'{scope}' scope")),
                    "{method}: {status:?}"
                );
            }
        }
    }
    let status = call_grpc(&daemon, "GetInfo", "key-orders")
        .await
        .expect_err("another keyspace");
    assert_eq!(status.code(), tonic::Code::PermissionDenied);
    assert!(status.message().contains("not for keyspace 'tenants'"), "{status:?}");
    let status = call_grpc(&daemon, "GetInfo", "key-nobody")
        .await
        .expect_err("unknown key");
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    daemon.stop().await.unwrap();
}

/// A reload serves the new file from the next request on; a bad file keeps the keys in use and
/// says what is wrong with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloading_the_key_file_swaps_keys_and_a_bad_file_keeps_the_old_ones() {
    let fixture = Fixture::new().await;
    let (daemon, file) = keyed_daemon(&fixture).await;
    let state = daemon_state(&daemon);
    let info = |key: &'static str| {
        let daemon = &daemon;
        async move { call_rest(daemon, &Method::GET, "/api/info", key).await.0 }
    };
    assert_eq!(info("key-read").await, StatusCode::OK);

    std::fs::write(
        &file,
        r#"[{"name": "reader", "key": "key-read", "scopes": ["reed"], "keyspaces": ["*"]}]"#,
    )
    .unwrap();
    let err = state.reload_api_keys().expect_err("a bad scope");
    assert!(err.to_string().contains("unknown scope 'reed'"), "{err}");
    assert!(err.to_string().contains("keys.json"), "{err}");
    assert_eq!(info("key-read").await, StatusCode::OK, "the old keys stay");

    std::fs::write(
        &file,
        r#"[{"name": "rotated", "key": "key-new", "scopes": ["read"], "keyspaces": ["tenants"]}]"#,
    )
    .unwrap();
    assert_eq!(state.reload_api_keys().expect("a good file"), 1);
    assert_eq!(info("key-read").await, StatusCode::UNAUTHORIZED);
    assert_eq!(info("key-new").await, StatusCode::OK);
    daemon.stop().await.unwrap();
}

fn daemon_state(daemon: &Daemon) -> shardlite::server::ServerState {
    daemon.state.clone()
}
