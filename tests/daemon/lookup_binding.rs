//! Requests bound by a shard directory's lookup key instead of a route: REST's
//! `X-Shardlite-Directory` and `X-Shardlite-Lookup-Key` headers and the same gRPC metadata run a
//! request on the route of the entry, and every half or mixed binding, unknown directory or
//! entry, and inactive entry is a clear 4xx that runs nothing.

use reqwest::StatusCode;
use serde_json::{Value, json};
use shardlite::client::ShardedClient;
use shardlite::transport::grpc::proto::{self as pb, shardlite_client::ShardliteClient};
use shardlite::wire::{
    DIRECTORY_HEADER, DIRECTORY_METADATA, ERROR_CODE_METADATA, LOOKUP_KEY_HEADER, LOOKUP_KEY_METADATA,
};

use crate::support::Fixture;
use crate::support::daemon::{http_client, routed};
use crate::support::migrate::add_directory;

/// Rows of `items` on shard `shard`, read in process.
async fn ids_on(sharded: &ShardedClient, shard: &str) -> Vec<Value> {
    let result = sharded
        .for_shard_id(shard)
        .unwrap()
        .execute_read_only_sql("SELECT id FROM items ORDER BY id", Default::default())
        .await
        .unwrap();
    result
        .rows
        .iter()
        .map(|row| serde_json::to_value(&row[0]).unwrap())
        .collect()
}

fn by_lookup(request: reqwest::RequestBuilder, directory: &str, key: &str) -> reqwest::RequestBuilder {
    request
        .header(DIRECTORY_HEADER, directory)
        .header(LOOKUP_KEY_HEADER, key)
}

async fn problem(response: reqwest::Response, status: StatusCode, code: &str) -> String {
    let actual = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(actual, status, "{body}");
    assert_eq!(body["errorCode"], code, "{body}");
    body["detail"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_key_binds_rest_and_grpc_requests_to_its_entrys_route() {
    let fixture = Fixture::new().await;
    let sharded = ShardedClient::open(&fixture.master).await.unwrap();
    sharded
        .query()
        .execute_all("CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL)")
        .await
        .unwrap();
    // tenant-a is pinned to s0 and tenant-b to s1.
    add_directory(&sharded, &["tenant-a", "tenant-b"]).await;
    let daemon = fixture.start().await;
    let http = http_client();
    let insert = |id: i64, tenant: &str| json!({ "sql": "INSERT INTO items (id, tenant) VALUES (?1, ?2)", "parameters": [id, tenant] });

    // REST: the order number alone finds the shard.
    let response = by_lookup(http.post(daemon.url("/api/sql/execute")), "orders_by_id", "SO-tenant-b")
        .json(&insert(1, "tenant-b"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{}", response.text().await.unwrap());
    assert_eq!(ids_on(&sharded, "s1").await, vec![json!(1)]);
    assert!(ids_on(&sharded, "s0").await.is_empty());

    // gRPC: the same metadata, lower-cased.
    let mut raw = ShardliteClient::connect(daemon.base_url.clone()).await.unwrap();
    let mut request = tonic::Request::new(pb::SqlRequest {
        sql: "INSERT INTO items (id, tenant) VALUES (2, 'tenant-a')".into(),
        params: None,
    });
    request
        .metadata_mut()
        .insert(DIRECTORY_METADATA, "orders_by_id".parse().unwrap());
    request
        .metadata_mut()
        .insert(LOOKUP_KEY_METADATA, "SO-tenant-a".parse().unwrap());
    raw.execute_sql(request).await.unwrap();
    assert_eq!(ids_on(&sharded, "s0").await, vec![json!(2)]);

    // Refusals: each a 4xx naming the problem, and nothing runs.
    let half = http
        .post(daemon.url("/api/sql/execute"))
        .header(DIRECTORY_HEADER, "orders_by_id")
        .json(&insert(3, "tenant-a"))
        .send()
        .await
        .unwrap();
    let detail = problem(half, StatusCode::BAD_REQUEST, "invalid_input").await;
    assert!(detail.contains("X-Shardlite-Lookup-Key is missing"), "{detail}");
    let both = by_lookup(
        routed(http.post(daemon.url("/api/sql/execute")), "tenant-a"),
        "orders_by_id",
        "SO-tenant-a",
    )
    .json(&insert(3, "tenant-a"))
    .send()
    .await
    .unwrap();
    let detail = problem(both, StatusCode::BAD_REQUEST, "invalid_input").await;
    assert!(detail.contains("not both"), "{detail}");
    let unknown = by_lookup(http.post(daemon.url("/api/sql/execute")), "no_such_directory", "SO-1")
        .json(&insert(3, "tenant-a"))
        .send()
        .await
        .unwrap();
    let detail = problem(unknown, StatusCode::NOT_FOUND, "not_found").await;
    assert!(detail.contains("no_such_directory"), "{detail}");
    let missing = by_lookup(http.post(daemon.url("/api/sql/execute")), "orders_by_id", "SO-nobody")
        .json(&insert(3, "tenant-a"))
        .send()
        .await
        .unwrap();
    problem(missing, StatusCode::NOT_FOUND, "not_found").await;
    let deleted = by_lookup(
        http.post(daemon.url("/api/sql/execute")),
        "orders_by_id",
        "gone-tenant-a",
    )
    .json(&insert(3, "tenant-a"))
    .send()
    .await
    .unwrap();
    let detail = problem(deleted, StatusCode::CONFLICT, "conflict").await;
    assert!(detail.contains("not Active"), "{detail}");

    let mut request = tonic::Request::new(pb::SqlRequest {
        sql: "INSERT INTO items (id, tenant) VALUES (4, 'tenant-a')".into(),
        params: None,
    });
    request
        .metadata_mut()
        .insert(LOOKUP_KEY_METADATA, "SO-tenant-a".parse().unwrap());
    let status = raw.execute_sql(request).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert_eq!(
        status.metadata().get(ERROR_CODE_METADATA).and_then(|v| v.to_str().ok()),
        Some("invalid_input")
    );
    assert!(
        status.message().contains("x-shardlite-directory is missing"),
        "{}",
        status.message()
    );

    assert_eq!(ids_on(&sharded, "s0").await, vec![json!(2)]);
    assert_eq!(ids_on(&sharded, "s1").await, vec![json!(1)]);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_string_over_an_endpoint_binds_to_a_lookup_keys_route() {
    let fixture = Fixture::new().await;
    let sharded = ShardedClient::open(&fixture.master).await.unwrap();
    sharded
        .query()
        .execute_all("CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL)")
        .await
        .unwrap();
    // tenant-b is pinned to s1.
    add_directory(&sharded, &["tenant-b"]).await;
    let daemon = fixture.start().await;
    for (id, transport) in [(10, "Http"), (11, "Grpc")] {
        let text = format!(
            "Endpoint={};Transport={transport};Shard Directory=orders_by_id;Lookup Key=SO-tenant-b",
            daemon.base_url
        );
        let connected = shardlite::connect::connect(&text.parse().unwrap()).await.unwrap();
        assert_eq!(connected.route().map(|r| r.key()), Some("tenant-b"), "{transport}");
        connected
            .client()
            .unwrap()
            .execute_sql(
                &format!("INSERT INTO items (id, tenant) VALUES ({id}, 'tenant-b')"),
                shardlite::client::Params::none(),
            )
            .await
            .unwrap();

        for (key, kind) in [
            ("SO-nobody", shardlite::ErrorKind::NotFound),
            ("gone-tenant-b", shardlite::ErrorKind::Conflict),
        ] {
            let text = format!(
                "Endpoint={};Transport={transport};Shard Directory=orders_by_id;Lookup Key={key}",
                daemon.base_url
            );
            let err = shardlite::connect::connect(&text.parse().unwrap()).await.unwrap_err();
            assert_eq!(err.kind(), kind, "{transport} {key}: {err}");
        }
    }
    assert_eq!(ids_on(&sharded, "s1").await, vec![json!(10), json!(11)]);
    assert!(ids_on(&sharded, "s0").await.is_empty());
    daemon.stop().await.unwrap();
}
