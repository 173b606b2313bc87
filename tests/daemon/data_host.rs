//! A data host (`serve --shard-dir`): one daemon serving a folder of shard files by id, under a
//! router (an in-process sharded client and a `serve --master` daemon) whose map names every
//! shard as the host's endpoint plus a `remoteShardId`, over REST and gRPC; and the host's
//! refusals of missing, unknown and malformed shard ids.
#![cfg(all(feature = "server", feature = "http", feature = "grpc"))]

use std::path::Path;

use crate::support::daemon::{Daemon, http_client, remote_shard, routed, start_daemon, start_daemon_on};
use crate::support::route;
use reqwest::StatusCode;
use serde_json::{Value as Json, json};
use shardlite::ErrorKind;
use shardlite::client::{Params, RowData, ShardedClient, SqlData, TransactionData, Value};
use shardlite::data::{HostAdmin, HostShardQuery};
use shardlite::map::{BucketRange, ShardMap, ShardingOptions};
use shardlite::server::{ServerConfig, ServerState};
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::http::HttpClient;
use shardlite::wire::{SHARD_HEADER, SHARD_METADATA};

const SHARDS: i64 = 8;

async fn start_host(dir: &Path) -> Daemon {
    let state = ServerState::open_shard_dir(dir, ServerConfig::default()).expect("a data host");
    start_daemon(state).await
}

/// Eight shards, all on `host`: `s{i}` is the host's `h-{i}`, over gRPC for even `i` and REST for
/// odd; `tenant-{i}` is pinned to `s{i}`.
fn map_on(host: &Daemon) -> ShardingOptions {
    let shards = (0..SHARDS)
        .map(|i| {
            let transport = if i % 2 == 0 { "grpc" } else { "http" };
            let mut shard = remote_shard(&format!("s{i}"), host, transport);
            shard.remote_shard_id = Some(format!("h-{i}"));
            shard
        })
        .collect();
    ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 8,
        shards,
        bucket_ranges: (0..SHARDS)
            .map(|i| BucketRange::new(i, i + 1, format!("s{i}")))
            .collect(),
        exact_key_pins: (0..SHARDS).map(|i| (format!("tenant-{i}"), format!("s{i}"))).collect(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    }
}

/// The tenants in the `t` table of a shard file, read directly with SQLite.
fn tenants_in(file: &Path) -> Vec<String> {
    let db = rusqlite::Connection::open(file).unwrap();
    let mut statement = db.prepare("SELECT tenant FROM t ORDER BY id").unwrap();
    statement
        .query_map([], |row| row.get::<_, String>(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_over_one_data_host_lands_every_write_in_its_shard_file() {
    let dir = crate::support::temp_dir();
    let folder = dir.path().join("host");
    std::fs::create_dir(&folder).unwrap();
    let host = start_host(&folder).await;

    // The files are created through the host's admin operation, over both transports.
    let over_http = HttpClient::new(RemoteOptions::new(host.base_url.clone())).unwrap();
    let over_grpc = GrpcClient::new(RemoteOptions::new(host.base_url.clone())).unwrap();
    for i in 0..SHARDS {
        let admin: &dyn HostAdmin = if i % 2 == 0 { &over_grpc } else { &over_http };
        let created = admin.create_host_shard(&format!("h-{i}")).await.unwrap();
        assert!(created.created, "{created:?}");
    }
    assert!(!over_http.create_host_shard("h-0").await.unwrap().created, "idempotent");
    let page = over_grpc.list_host_shards(&HostShardQuery::default()).await.unwrap();
    assert_eq!(page.shard_count, 8);
    assert_eq!(page.shard_ids.first().map(String::as_str), Some("h-0"));

    let options = map_on(&host);
    let map = ShardMap::new(options.clone()).unwrap();
    assert_eq!(
        map.snapshot().shards[3].remote_shard_id.as_deref(),
        Some("h-3"),
        "snapshots show the remote shard id"
    );
    let sharded = ShardedClient::from_map(map).await.unwrap();
    let created = sharded
        .query()
        .execute_all("CREATE TABLE t (id INTEGER PRIMARY KEY, tenant TEXT)")
        .await
        .unwrap();
    assert!(created.iter().all(|r| r.error.is_none()), "{created:?}");
    for i in 0..SHARDS {
        let key = format!("tenant-{i}");
        sharded
            .for_route(route(&key))
            .execute_sql(
                "INSERT INTO t VALUES (?1, ?2)",
                Params::from(vec![Value::Integer(i), key.clone().into()]),
            )
            .await
            .unwrap();
    }

    // Transactions over both transports: their ids route back to the right file.
    for (key, commit) in [("tenant-3", true), ("tenant-4", true), ("tenant-5", false)] {
        let tx = sharded.for_route(route(key)).begin().await.unwrap();
        let shard = key.trim_start_matches("tenant-");
        assert!(
            tx.id()
                .to_string()
                .starts_with(&format!("csdbshard:1:s{shard}:h-{shard}:")),
            "{}",
            tx.id()
        );
        tx.execute(
            "INSERT INTO t VALUES (100, ?1)",
            Params::from(vec![format!("{key}-tx")]),
        )
        .await
        .unwrap();
        if commit {
            tx.commit().await.unwrap();
        } else {
            tx.rollback().await.unwrap();
        }
    }

    // Status probes every shard through the host.
    let statuses = sharded.shards().status().await;
    assert!(statuses.iter().all(|s| s.healthy), "{statuses:?}");
    assert_eq!(statuses.len(), 8);

    // Fan-out reaches every shard of the host.
    let counts = sharded.query().read_all("SELECT count(*) FROM t").await.unwrap();
    let counts: Vec<Value> = counts
        .iter()
        .map(|r| r.result.as_ref().expect("no error").rows[0][0].clone())
        .collect();
    let expected: Vec<Value> = (0..SHARDS)
        .map(|i| Value::Integer(if i == 3 || i == 4 { 2 } else { 1 }))
        .collect();
    assert_eq!(counts, expected);

    // A `serve --master` router over the same map routes a REST write to the same file.
    let master = crate::support::seed_master(dir.path(), options).await;
    let router = start_daemon_on(&master, ServerConfig::default()).await;
    let response = routed(http_client().post(router.url("/api/sql/execute")), "tenant-6")
        .json(&json!({"sql": "INSERT INTO t VALUES (7, 'tenant-6-router')"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{:?}", response.text().await);
    router.stop().await.unwrap();
    drop(sharded);
    host.stop().await.unwrap();

    // Every file holds exactly its tenants' rows.
    for i in 0..SHARDS {
        let mut expected = vec![format!("tenant-{i}")];
        match i {
            3 | 4 => expected.push(format!("tenant-{i}-tx")),
            6 => expected.push("tenant-6-router".to_owned()),
            _ => {}
        }
        assert_eq!(tenants_in(&folder.join(format!("h-{i}.db"))), expected, "h-{i}.db");
    }
}

async fn post_sql(daemon: &Daemon, shard: Option<&str>, sql: &str) -> (StatusCode, Json) {
    let mut request = http_client()
        .post(daemon.url("/api/sql/execute"))
        .json(&json!({ "sql": sql }));
    if let Some(shard) = shard {
        request = request.header(SHARD_HEADER, shard);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Json::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_host_refuses_missing_unknown_and_bad_shard_ids_and_keeps_serving() {
    let dir = crate::support::temp_dir();
    let host = start_host(dir.path()).await;
    let admin = HttpClient::new(RemoteOptions::new(host.base_url.clone())).unwrap();
    admin.create_host_shard("a").await.unwrap();
    admin.create_host_shard("b").await.unwrap();

    let (status, body) = post_sql(&host, None, "SELECT 1").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("X-Shardlite-Shard"), "{body}");

    let (status, body) = post_sql(&host, Some("nope"), "CREATE TABLE x (a)").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["errorCode"], "not_found");
    assert!(body["detail"].as_str().unwrap().contains("'nope'"), "{body}");
    assert!(
        !dir.path().join("nope.db").exists(),
        "a data request never creates a file"
    );

    for bad in ["..", "../a", ".hidden", "a:b", "a%2Fb", "a b"] {
        let (status, body) = post_sql(&host, Some(bad), "SELECT 1").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(body["errorCode"], "invalid_input", "{bad}: {body}");
        assert!(body["detail"].as_str().unwrap().contains("shard id"), "{bad}: {body}");
    }
    let (status, body) = post_sql(&host, Some(" "), "SELECT 1").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a blank header names no shard: {body}");
    assert!(body["detail"].as_str().unwrap().contains("blank"), "{body}");
    let err = admin.create_host_shard("..").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let err = admin.create_host_shard("A").await.unwrap_err();
    assert!(err.to_string().contains("differs only in case"), "{err}");

    // Over gRPC: the same answers, as statuses.
    let grpc = |shard: Option<&str>| {
        let mut options = RemoteOptions::new(host.base_url.clone());
        if let Some(shard) = shard {
            options = options.with_shard_id(shard);
        }
        GrpcClient::new(options).unwrap()
    };
    let err = grpc(None).execute_sql("SELECT 1", Params::none()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains(SHARD_METADATA), "{err}");
    let err = grpc(Some("nope")).list_tables().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(err.to_string().contains("'nope'"), "{err}");

    // A transaction id names its shard; another shard's header is a conflict.
    let on_a = HttpClient::new(RemoteOptions::new(host.base_url.clone()).with_shard_id("a")).unwrap();
    let on_b = HttpClient::new(RemoteOptions::new(host.base_url.clone()).with_shard_id("b")).unwrap();
    on_a.execute_sql("CREATE TABLE t (v)", Params::none()).await.unwrap();
    let tx = on_a.begin_transaction().await.unwrap();
    assert!(tx.transaction_id.starts_with("a:"), "{}", tx.transaction_id);
    let err = on_b
        .execute_in_transaction(&tx.transaction_id, "SELECT 1", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    on_a.execute_in_transaction(&tx.transaction_id, "INSERT INTO t VALUES (1)", Params::none())
        .await
        .unwrap();
    on_a.commit_transaction(&tx.transaction_id).await.unwrap();

    // The host still serves, and lists what it has.
    let (status, body) = post_sql(&host, Some("a"), "SELECT count(*) FROM t").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["rows"][0][0], 1);
    let page: Json = http_client()
        .get(host.url("/api/host/shards?limit=1"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(page["shardCount"], 2, "{page}");
    assert_eq!(page["shardIds"], json!(["a"]), "{page}");
    assert_eq!(page["nextOffset"], 1, "{page}");
    assert!(page["openShards"].as_u64().unwrap() <= 2, "{page}");
    // The metrics report the host's open files, not one plain database.
    let scraped = host.state.scrape().await;
    assert!(
        scraped.open_shards.is_some_and(|open| (1..=2).contains(&open)),
        "{scraped:?}"
    );

    // A daemon that is not a data host refuses the shard header and the host operations.
    let plain = start_daemon_on(&dir.path().join("plain.sqlite"), ServerConfig::default()).await;
    let (status, body) = post_sql(&plain, Some("a"), "SELECT 1").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("not a data host"), "{body}");
    let response = http_client().get(plain.url("/api/host/shards")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let err = GrpcClient::new(RemoteOptions::new(plain.base_url.clone()))
        .unwrap()
        .create_host_shard("a")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(err.to_string().contains("not a data host"), "{err}");
    plain.stop().await.unwrap();
    host.stop().await.unwrap();
}

#[test]
fn a_map_names_a_host_shard_only_with_an_endpoint_and_a_valid_id() {
    let json = |shard: &str| format!(r#"{{"shards":[{shard}]}}"#);
    let valid = json(r#"{"shardId":"s1","endpoint":"http://h:1","transport":"http","remoteShardId":"orders-1"}"#);
    ShardMap::from_json(&valid).unwrap();
    for (shard, expected) in [
        (
            r#"{"shardId":"s1","dataSource":"s1.db","remoteShardId":"x"}"#,
            "needs an endpoint",
        ),
        (
            r#"{"shardId":"s1","endpoint":"http://h:1","transport":"http","remoteShardId":"../x"}"#,
            "'../x'",
        ),
        (
            r#"{"shardId":"s1","endpoint":"http://h:1","transport":"http","remoteShardId":".."}"#,
            "must not start with '.'",
        ),
    ] {
        let err = ShardMap::from_json(&json(shard)).unwrap_err();
        assert!(err.to_string().contains(expected), "{shard}: {err}");
    }
}
