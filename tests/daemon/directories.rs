//! Shard directories through the daemon: the same scenario (resolve, the six changes and their
//! no-ops, every refusal, paged entries) gives the same transcript in process, through the REST
//! client and through the gRPC client; the REST endpoints answer 200, 400 with the refused
//! result, 404 and 403 as documented, bad input is a clear 4xx that writes nothing, and the gRPC
//! methods answer with the documented codes.
#![cfg(all(feature = "server", feature = "http"))]

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use shardlite::client::ShardedClient;
use shardlite::data::{
    DirectoryAdmin, DirectoryEntryQuery, DirectoryLookup, DirectoryMutation, DirectoryOperation as Op,
    MutationStatus as Status,
};
use shardlite::map::{DirectoryDefinition, DirectoryEntry, EntryState, ShardingOptions};
use shardlite::server::keys::KeyRing;
use shardlite::server::{ServerConfig, ServerState};
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::grpc::proto::{self as pb, shardlite_client::ShardliteClient};
use shardlite::transport::http::HttpClient;
use shardlite::wire::ERROR_CODE_METADATA;
use shardlite::{ErrorKind, Result};

use crate::support::daemon::{Daemon, http_client, start_daemon, start_daemon_on};
use crate::support::{seed_master, temp_dir, tenants_options};

const KEY_HEADER: &str = "X-CSharpDB-Api-Key";

fn entry(key: &str, route_key: &str, shard: &str) -> DirectoryEntry {
    DirectoryEntry {
        directory_name: "orders_by_id".into(),
        lookup_key: key.into(),
        target_keyspace: "tenants".into(),
        route_key: route_key.into(),
        shard_id: shard.into(),
        map_version: 1,
        state: EntryState::Active,
    }
}

/// The test map: writable `orders_by_id` holding SO-1 and SO-9, read-only `archive_by_id`
/// holding AR-1.
fn directory_map(dir: &Path) -> ShardingOptions {
    let mut options = tenants_options(dir);
    options.directories = vec![
        DirectoryDefinition::writable("orders_by_id", "tenants"),
        DirectoryDefinition {
            read_only: true,
            ..DirectoryDefinition::writable("archive_by_id", "tenants")
        },
    ];
    let mut archived = entry("AR-1", "tenant-b", "s1");
    archived.directory_name = "archive_by_id".into();
    options.directory_entries = vec![
        entry("SO-1", "tenant-a", "s0"),
        entry("SO-9", "tenant-b", "s1"),
        archived,
    ];
    options
}

fn change(key: &str) -> DirectoryMutation {
    DirectoryMutation::new("orders_by_id", key)
}

/// Outcomes as JSON text, errors as their kind, so transports can be compared.
#[derive(Default)]
struct Transcript(Vec<String>);

impl Transcript {
    fn ok<T: serde::Serialize>(&mut self, step: &str, outcome: Result<T>) -> T {
        let value = outcome.unwrap_or_else(|err| panic!("{step}: {err}"));
        self.0
            .push(format!("{step}: ok {}", serde_json::to_value(&value).unwrap()));
        value
    }

    fn err<T: std::fmt::Debug>(&mut self, step: &str, outcome: Result<T>, kind: ErrorKind) {
        let err = outcome.expect_err(step);
        assert_eq!(err.kind(), kind, "{step}: {err}");
        self.0.push(format!("{step}: error {}", err.kind()));
    }

    async fn mutate(
        &mut self,
        admin: &dyn DirectoryAdmin,
        op: Op,
        mutation: DirectoryMutation,
        status: Status,
    ) -> shardlite::data::DirectoryMutationResult {
        let step = format!("{} {}", op.as_str(), mutation.lookup_key);
        let result = self.ok(&step, admin.mutate_directory_entry(op, &mutation).await);
        assert_eq!(result.status, status, "{step}: {result:?}");
        assert_eq!(result.succeeded, status != Status::Rejected, "{step}: {result:?}");
        result
    }

    /// A change refused with the issue `code`, writing nothing.
    async fn refused(&mut self, admin: &dyn DirectoryAdmin, op: Op, mutation: DirectoryMutation, code: &str) {
        let result = self.mutate(admin, op, mutation, Status::Rejected).await;
        assert_eq!(result.pending_map_version, None, "{result:?}");
        assert!(
            result.issues.iter().any(|issue| issue.code == code),
            "{code}: {result:?}"
        );
    }
}

/// Every call of [`DirectoryAdmin`] on the map of [`directory_map`] at version 1.
async fn directory_scenario(admin: &dyn DirectoryAdmin) -> Vec<String> {
    let mut t = Transcript::default();
    let lookup = |key: &str| DirectoryLookup::new("orders_by_id", key);

    let found = t.ok("resolve SO-1", admin.resolve_directory_entry(&lookup("SO-1")).await);
    assert_eq!(found.route_resolution.shard_id, "s0");
    let unknown = DirectoryLookup::new("nope", "SO-1");
    t.err(
        "resolve in an unknown directory",
        admin.resolve_directory_entry(&unknown).await,
        ErrorKind::NotFound,
    );
    t.err(
        "resolve a missing entry",
        admin.resolve_directory_entry(&lookup("SO-404")).await,
        ErrorKind::NotFound,
    );
    t.err(
        "resolve a blank key",
        admin.resolve_directory_entry(&lookup(" ")).await,
        ErrorKind::InvalidInput,
    );

    let reserve = change("SO-2").route("tenants", "tenant-b");
    let written = t
        .mutate(
            admin,
            Op::Reserve,
            reserve.clone().expecting_version(1),
            Status::Reserved,
        )
        .await;
    assert_eq!(
        (written.pending_map_version, written.requires_activation),
        (Some(2), true)
    );
    t.mutate(admin, Op::Reserve, reserve.clone(), Status::AlreadyReserved)
        .await;
    let activated = t
        .mutate(admin, Op::Activate, change("SO-2").activating(), Status::Activated)
        .await;
    assert_eq!(
        (activated.pending_map_version, activated.requires_activation),
        (Some(3), false)
    );
    let live = t.ok("resolve SO-2", admin.resolve_directory_entry(&lookup("SO-2")).await);
    assert_eq!(
        (
            live.route_resolution.shard_id.as_str(),
            live.route_resolution.map_version
        ),
        ("s1", 3)
    );
    t.mutate(admin, Op::Activate, change("SO-2"), Status::AlreadyActive)
        .await;

    let upsert = change("SO-3")
        .route("tenants", "tenant-a")
        .state(EntryState::Disabled)
        .activating();
    t.mutate(admin, Op::Upsert, upsert.clone(), Status::Upserted).await;
    t.mutate(admin, Op::Upsert, upsert, Status::AlreadyUpToDate).await;
    let moved = change("SO-3").route("tenants", "tenant-b").activating();
    let repaired = t.mutate(admin, Op::Upsert, moved, Status::Repaired).await;
    assert_eq!(repaired.entry.map(|e| e.shard_id).as_deref(), Some("s1"));
    t.mutate(admin, Op::Disable, change("SO-2").activating(), Status::Disabled)
        .await;
    t.mutate(admin, Op::Disable, change("SO-2"), Status::AlreadyDisabled)
        .await;
    t.err(
        "resolve a disabled entry",
        admin.resolve_directory_entry(&lookup("SO-2")).await,
        ErrorKind::Conflict,
    );
    let inactive = lookup("SO-2").including_inactive();
    let disabled = t.ok("resolve SO-2 inactive", admin.resolve_directory_entry(&inactive).await);
    assert_eq!(disabled.entry.state, EntryState::Disabled);
    t.mutate(admin, Op::MarkStale, change("SO-3").activating(), Status::MarkedStale)
        .await;
    t.mutate(admin, Op::MarkStale, change("SO-3"), Status::AlreadyStale)
        .await;
    t.mutate(admin, Op::Delete, change("SO-1").activating(), Status::Deleted)
        .await;
    t.mutate(admin, Op::Delete, change("SO-1"), Status::AlreadyDeleted)
        .await;
    let removed = t
        .mutate(
            admin,
            Op::Delete,
            change("SO-1").removing_entry().activating(),
            Status::Removed,
        )
        .await;
    assert_eq!(removed.entry, None);
    t.mutate(
        admin,
        Op::Delete,
        change("SO-1").removing_entry(),
        Status::AlreadyDeleted,
    )
    .await;

    // Each refusal writes nothing (the next change's version shows it).
    let unknown = DirectoryMutation::new("nope", "SO-5").route("tenants", "tenant-a");
    t.refused(admin, Op::Reserve, unknown, "unknown-directory").await;
    let archived = DirectoryMutation::new("archive_by_id", "AR-2").route("tenants", "tenant-a");
    t.refused(admin, Op::Upsert, archived, "directory-read-only").await;
    t.refused(
        admin,
        Op::Reserve,
        change("SO-5").route("orders", "tenant-a"),
        "keyspace-mismatch",
    )
    .await;
    let lowercase = DirectoryMutation {
        state: Some("active".to_owned()),
        ..change("SO-5").route("tenants", "tenant-a")
    };
    t.refused(admin, Op::Upsert, lowercase, "invalid-state").await;
    t.refused(
        admin,
        Op::Reserve,
        change("SO-9").route("tenants", "tenant-a"),
        "directory-entry-exists",
    )
    .await;
    t.refused(admin, Op::Activate, change("SO-3"), "directory-entry-not-reserved")
        .await;
    t.refused(admin, Op::Disable, change("SO-404"), "entry-not-found").await;
    t.refused(
        admin,
        Op::Reserve,
        change(" ").route("tenants", "tenant-a"),
        "invalid-input",
    )
    .await;
    let stale = change("SO-5").route("tenants", "tenant-a").expecting_version(1);
    t.refused(admin, Op::Reserve, stale, "map-version-mismatch").await;
    let next = t
        .mutate(
            admin,
            Op::Reserve,
            change("SO-5").route("tenants", "tenant-a"),
            Status::Reserved,
        )
        .await;
    assert_eq!(next.pending_map_version, Some(10), "{next:?}");

    let first = DirectoryEntryQuery {
        limit: Some(2),
        ..DirectoryEntryQuery::default()
    };
    let page = t.ok("entries page 1", admin.directory_entries("ORDERS_BY_ID", &first).await);
    let keys: Vec<&str> = page.entries.iter().map(|e| e.lookup_key.as_str()).collect();
    assert_eq!((page.entry_count, keys.as_slice()), (3, ["SO-2", "SO-3"].as_slice()));
    let second = DirectoryEntryQuery {
        after: page.next_after.clone(),
        limit: Some(2),
    };
    let last = t.ok("entries page 2", admin.directory_entries("orders_by_id", &second).await);
    assert_eq!((last.entries.len(), last.next_after), (1, None));
    let none = DirectoryEntryQuery::default();
    t.err(
        "entries of an unknown directory",
        admin.directory_entries("nope", &none).await,
        ErrorKind::NotFound,
    );
    let zero = DirectoryEntryQuery {
        limit: Some(0),
        ..DirectoryEntryQuery::default()
    };
    t.err(
        "entries with limit 0",
        admin.directory_entries("orders_by_id", &zero).await,
        ErrorKind::InvalidInput,
    );
    t.0
}

async fn transcript_in_process() -> Vec<String> {
    let dir = temp_dir();
    let master = seed_master(dir.path(), directory_map(dir.path())).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    directory_scenario(&sharded).await
}

async fn transcript_over(admin: fn(&Daemon) -> Arc<dyn DirectoryAdmin>) -> Vec<String> {
    let dir = temp_dir();
    let master = seed_master(dir.path(), directory_map(dir.path())).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let transcript = directory_scenario(admin(&daemon).as_ref()).await;
    daemon.stop().await.unwrap();
    transcript
}

fn over_http(daemon: &Daemon) -> Arc<dyn DirectoryAdmin> {
    Arc::new(HttpClient::new(RemoteOptions::new(&daemon.base_url)).unwrap())
}

fn over_grpc(daemon: &Daemon) -> Arc<dyn DirectoryAdmin> {
    Arc::new(GrpcClient::new(RemoteOptions::new(&daemon.base_url)).unwrap())
}

fn assert_same(name: &str, expected: &[String], actual: &[String]) {
    for (want, got) in expected.iter().zip(actual) {
        assert_eq!(want, got, "{name} differs from in-process");
    }
    assert_eq!(expected.len(), actual.len(), "{name}: transcript lengths differ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_directory_calls_behave_exactly_like_in_process() {
    let expected = transcript_in_process().await;
    assert_same("http", &expected, &transcript_over(over_http).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_directory_calls_behave_exactly_like_in_process() {
    let expected = transcript_in_process().await;
    assert_same("grpc", &expected, &transcript_over(over_grpc).await);
}

// ------------------------------------------------------------------------------------ REST

/// A daemon over the directory map whose key file holds `key-read` (scope read) and `key-admin`.
async fn keyed_daemon(dir: &Path) -> Daemon {
    let master = seed_master(dir, directory_map(dir)).await;
    let file = dir.join("keys.json");
    let keys = json!([
        {"name": "reader", "key": "key-read", "scopes": ["read"], "keyspaces": ["*"]},
        {"name": "operator", "key": "key-admin", "scopes": ["read", "admin"], "keyspaces": ["*"]},
    ]);
    std::fs::write(&file, serde_json::to_vec(&keys).unwrap()).unwrap();
    let config = ServerConfig {
        api_keys: Some(KeyRing::load(&file).expect("the key file loads")),
        ..ServerConfig::default()
    };
    start_daemon_on(&master, config).await
}

/// Sends `body` (JSON, or raw text when it is a string) to `path` with `key`.
async fn send(daemon: &Daemon, method: reqwest::Method, path: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    let request = http_client().request(method, daemon.url(path));
    let request = if key.is_empty() {
        request
    } else {
        request.header(KEY_HEADER, key)
    };
    let request = match body {
        Some(Value::String(raw)) => request.header("content-type", "application/json").body(raw),
        Some(body) => request.json(&body),
        None => request,
    };
    let response = request.send().await.expect("the daemon answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}")),
    )
}

async fn post(daemon: &Daemon, path: &str, key: &str, body: Value) -> (u16, Value) {
    send(daemon, reqwest::Method::POST, path, key, Some(body)).await
}

async fn get(daemon: &Daemon, path: &str, key: &str) -> (u16, Value) {
    send(daemon, reqwest::Method::GET, path, key, None).await
}

/// The catalog's newest map version and the writable directory's live entry count.
async fn written(daemon: &Daemon) -> (Value, Value) {
    let (_, catalog) = get(daemon, "/api/sharding/catalog", "key-admin").await;
    let (_, page) = get(daemon, "/api/sharding/directory/orders_by_id/entries", "key-read").await;
    (catalog["pendingMap"]["mapVersion"].clone(), page["entryCount"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_directory_endpoints_answer_200_400_404_and_403() {
    let dir = temp_dir();
    let daemon = keyed_daemon(dir.path()).await;
    let base = "/api/sharding/directory";

    let (status, found) = post(
        &daemon,
        &format!("{base}/resolve"),
        "key-read",
        json!({"directoryName": "orders_by_id", "lookupKey": "SO-1"}),
    )
    .await;
    assert_eq!(
        (status, &found["routeResolution"]["shardId"]),
        (200, &json!("s0")),
        "{found}"
    );
    let (status, page) = get(&daemon, &format!("{base}/ORDERS_BY_ID/entries?limit=1"), "key-read").await;
    assert_eq!(
        (status, &page["entryCount"], &page["nextAfter"]),
        (200, &json!(2), &json!("SO-1")),
        "{page}"
    );

    // A read key may resolve and list, not change.
    let reserve = json!({"directoryName": "orders_by_id", "lookupKey": "SO-2", "targetKeyspace": "tenants", "routeKey": "tenant-b"});
    for op in ["reserve", "activate", "upsert", "disable", "delete", "mark-stale"] {
        let (status, problem) = post(&daemon, &format!("{base}/{op}"), "key-read", reserve.clone()).await;
        assert_eq!(
            (status, &problem["errorCode"]),
            (403, &json!("permission_denied")),
            "{op}: {problem}"
        );
    }
    let reader = HttpClient::new(RemoteOptions::new(&daemon.base_url).with_api_key("key-read")).unwrap();
    let mutation = change("SO-2").route("tenants", "tenant-b");
    let err = reader.mutate_directory_entry(Op::Reserve, &mutation).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{err}");
    assert_eq!(written(&daemon).await, (Value::Null, json!(2)));

    // Each refusal: 400, the result as `mutation`, its issue naming the problem, nothing written.
    let refusals = [
        (
            "reserve",
            json!({"directoryName": "nope", "lookupKey": "SO-5", "targetKeyspace": "tenants", "routeKey": "tenant-a"}),
            "unknown-directory",
        ),
        (
            "upsert",
            json!({"directoryName": "archive_by_id", "lookupKey": "AR-2", "targetKeyspace": "tenants", "routeKey": "tenant-a"}),
            "directory-read-only",
        ),
        (
            "delete",
            json!({"directoryName": "archive_by_id", "lookupKey": "AR-1"}),
            "directory-read-only",
        ),
        (
            "reserve",
            json!({"directoryName": "orders_by_id", "lookupKey": "SO-5", "targetKeyspace": "orders", "routeKey": "tenant-a"}),
            "keyspace-mismatch",
        ),
        (
            "upsert",
            json!({"directoryName": "orders_by_id", "lookupKey": "SO-5", "targetKeyspace": "tenants", "routeKey": "tenant-a", "state": "Gone"}),
            "invalid-state",
        ),
        (
            "reserve",
            json!({"directoryName": "orders_by_id", "lookupKey": "SO-1", "targetKeyspace": "tenants", "routeKey": "tenant-b"}),
            "directory-entry-exists",
        ),
        (
            "mark-stale",
            json!({"directoryName": "orders_by_id", "lookupKey": "SO-404"}),
            "entry-not-found",
        ),
        (
            "reserve",
            json!({"directoryName": "orders_by_id", "lookupKey": "SO-5", "targetKeyspace": "tenants"}),
            "invalid-input",
        ),
        (
            "disable",
            json!({"directoryName": " ", "lookupKey": "SO-1"}),
            "invalid-input",
        ),
        (
            "reserve",
            json!({"directoryName": "orders_by_id", "lookupKey": "SO-5", "targetKeyspace": "tenants", "routeKey": "tenant-a", "expectedCurrentMapVersion": 7}),
            "map-version-mismatch",
        ),
    ];
    for (op, body, code) in refusals {
        let (status, problem) = post(&daemon, &format!("{base}/{op}"), "key-admin", body).await;
        assert_eq!(
            (status, &problem["errorCode"]),
            (400, &json!("invalid_input")),
            "{op} {code}: {problem}"
        );
        let mutation = &problem["mutation"];
        assert_eq!(
            (&mutation["succeeded"], &mutation["status"]),
            (&json!(false), &json!("Rejected")),
            "{problem}"
        );
        assert_eq!(mutation["issues"][0]["code"], code, "{problem}");
        let (detail, message) = (
            problem["detail"].as_str().unwrap(),
            mutation["message"].as_str().unwrap(),
        );
        assert!(!message.is_empty() && detail.contains(message), "{problem}");
    }
    assert_eq!(written(&daemon).await, (Value::Null, json!(2)));

    // Bad input: a clear 4xx naming the problem, nothing written.
    let bad = [
        (
            "POST",
            "reserve",
            Some(json!("{\"directoryName\": ")),
            400,
            "invalid_input",
            "request body",
        ),
        (
            "POST",
            "reserve",
            Some(json!({"directoryName": "orders_by_id", "lookupKey": "SO-5", "shard": "s0"})),
            400,
            "invalid_input",
            "unknown field `shard`",
        ),
        (
            "POST",
            "resolve",
            Some(json!({"directoryName": "orders_by_id"})),
            400,
            "invalid_input",
            "lookupKey",
        ),
        (
            "POST",
            "resolve",
            Some(json!({"directoryName": "nope", "lookupKey": "SO-1"})),
            404,
            "not_found",
            "'nope' is not configured",
        ),
        (
            "POST",
            "resolve",
            Some(json!({"directoryName": "orders_by_id", "lookupKey": "SO-404"})),
            404,
            "not_found",
            "was not found",
        ),
        (
            "POST",
            "resolve",
            Some(json!({"directoryName": "orders_by_id", "lookupKey": " "})),
            400,
            "invalid_input",
            "lookupKey",
        ),
        (
            "POST",
            "reserve",
            Some(
                json!({"directoryName": "orders_by_id", "lookupKey": "SO-5", "expectedCurrentMapVersion": 9_223_372_036_854_775_808_u64}),
            ),
            400,
            "invalid_input",
            "expectedCurrentMapVersion",
        ),
        (
            "GET",
            "nope/entries",
            None,
            404,
            "not_found",
            "'nope' is not configured",
        ),
        (
            "GET",
            "orders_by_id/entries?limit=0",
            None,
            400,
            "invalid_input",
            "limit",
        ),
        (
            "GET",
            "orders_by_id/entries?limit=1001",
            None,
            400,
            "invalid_input",
            "limit",
        ),
        (
            "GET",
            "orders_by_id/entries?page=2",
            None,
            400,
            "invalid_input",
            "unknown field `page`",
        ),
    ];
    for (method, path, body, want, code, names) in bad {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let (status, problem) = send(&daemon, method, &format!("{base}/{path}"), "key-admin", body).await;
        assert_eq!(
            (status, &problem["errorCode"]),
            (want, &json!(code)),
            "{path}: {problem}"
        );
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(names), "{path}: {detail}");
    }
    assert_eq!(written(&daemon).await, (Value::Null, json!(2)));

    // An entry not Active is a 409; a change that succeeds is a 200 with its result.
    let upsert = json!({"directoryName": "orders_by_id", "lookupKey": "SO-6", "targetKeyspace": "tenants", "routeKey": "tenant-b", "state": "Stale", "activate": true, "operator": "ada"});
    let (status, result) = post(&daemon, &format!("{base}/upsert"), "key-admin", upsert).await;
    assert_eq!(
        (status, &result["status"], &result["requiresActivation"]),
        (200, &json!("Upserted"), &json!(false)),
        "{result}"
    );
    let (status, problem) = post(
        &daemon,
        &format!("{base}/resolve"),
        "key-read",
        json!({"directoryName": "orders_by_id", "lookupKey": "SO-6"}),
    )
    .await;
    assert_eq!((status, &problem["errorCode"]), (409, &json!("conflict")), "{problem}");
    let activate = json!({"directoryName": "orders_by_id", "lookupKey": "SO-6"});
    let (status, problem) = post(&daemon, &format!("{base}/activate"), "key-admin", activate).await;
    let code = &problem["mutation"]["issues"][0]["code"];
    assert_eq!(
        (status, code),
        (400, &json!("directory-entry-not-reserved")),
        "{problem}"
    );
    let (_, catalog) = get(&daemon, "/api/sharding/catalog", "key-admin").await;
    assert_eq!(catalog["activeMap"]["mapVersion"], 2, "{catalog}");
    assert_eq!(catalog["history"][0]["operator"], "ada", "{catalog}");
    let comment = &catalog["history"][1]["comment"];
    assert_eq!(comment, "upsert shard directory entry orders_by_id:SO-6", "{catalog}");
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsharded_daemon_answers_directory_calls_not_sharded() {
    let dir = temp_dir();
    let state = ServerState::open(dir.path().join("plain.db"), ServerConfig::default())
        .await
        .unwrap();
    let daemon = start_daemon(state).await;
    let (status, problem) = post(
        &daemon,
        "/api/sharding/directory/resolve",
        "",
        json!({"directoryName": "d", "lookupKey": "k"}),
    )
    .await;
    assert_eq!(
        (status, &problem["errorCode"]),
        (404, &json!("not_sharded")),
        "{problem}"
    );
    let (status, problem) = post(
        &daemon,
        "/api/sharding/directory/reserve",
        "",
        json!({"directoryName": "d", "lookupKey": "k"}),
    )
    .await;
    assert_eq!(
        (status, &problem["errorCode"]),
        (404, &json!("not_sharded")),
        "{problem}"
    );
    let (status, _) = get(&daemon, "/api/sharding/directory/d/entries", "").await;
    assert_eq!(status, 404);

    let mut raw = ShardliteClient::connect(daemon.base_url.clone()).await.unwrap();
    let lookup = pb::ShardDirectoryLookup {
        directory_name: "d".to_owned(),
        lookup_key: "k".to_owned(),
        include_inactive: false,
    };
    let status = raw.resolve_shard_directory_entry(lookup).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    let code = status.metadata().get(ERROR_CODE_METADATA).and_then(|v| v.to_str().ok());
    assert_eq!(code, Some("not_sharded"));
    for admin in [over_http(&daemon), over_grpc(&daemon)] {
        let mutation = DirectoryMutation::new("d", "k");
        let err = admin.mutate_directory_entry(Op::Disable, &mutation).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotSharded, "{err}");
    }
    daemon.stop().await.unwrap();
}

// ------------------------------------------------------------------------------------ gRPC

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_directory_methods_answer_with_the_documented_codes() {
    let dir = temp_dir();
    let daemon = keyed_daemon(dir.path()).await;
    let client = |key: &str| GrpcClient::new(RemoteOptions::new(&daemon.base_url).with_api_key(key)).unwrap();
    let (reader, operator) = (client("key-read"), client("key-admin"));

    let found = reader
        .resolve_directory_entry(&DirectoryLookup::new("orders_by_id", "SO-1"))
        .await
        .unwrap();
    assert_eq!(found.route_resolution.shard_id, "s0");
    let mutation = change("SO-2").route("tenants", "tenant-b");
    for op in Op::ALL {
        let err = reader.mutate_directory_entry(op, &mutation).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{}: {err}", op.as_str());
    }
    let archived = DirectoryMutation::new("archive_by_id", "AR-1");
    let refused = operator.mutate_directory_entry(Op::Disable, &archived).await.unwrap();
    assert_eq!(
        (refused.status, refused.issues[0].code.as_str()),
        (Status::Rejected, "directory-read-only")
    );

    let mut raw = ShardliteClient::connect(daemon.base_url.clone()).await.unwrap();
    let mut request = tonic::Request::new(pb::ShardDirectoryLookup {
        directory_name: "nope".to_owned(),
        lookup_key: "SO-1".to_owned(),
        include_inactive: false,
    });
    request
        .metadata_mut()
        .insert("x-csharpdb-api-key", "key-read".parse().unwrap());
    let status = raw.resolve_shard_directory_entry(request).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound, "{status:?}");
    assert!(status.message().contains("'nope' is not configured"), "{status:?}");
    let mut request = tonic::Request::new(pb::ShardDirectoryMutation {
        directory_name: "orders_by_id".to_owned(),
        lookup_key: "SO-5".to_owned(),
        target_keyspace: Some("tenants".to_owned()),
        route_key: Some("tenant-a".to_owned()),
        state: Some("Gone".to_owned()),
        ..Default::default()
    });
    request
        .metadata_mut()
        .insert("x-csharpdb-api-key", "key-admin".parse().unwrap());
    let result = raw.upsert_shard_directory_entry(request).await.unwrap().into_inner();
    assert_eq!((result.succeeded, result.status.as_str()), (false, "Rejected"));
    assert_eq!(result.issues[0].code, "invalid-state");
    let page = reader
        .directory_entries("orders_by_id", &DirectoryEntryQuery::default())
        .await
        .unwrap();
    assert_eq!(page.entry_count, 2);
    daemon.stop().await.unwrap();
}
