//! Queries across shards through every surface: REST `POST /api/sharding/query` (and
//! `/openapi.json`), gRPC `QueryAllShards`, the remote clients, and `shardlite query-all`, each
//! answering like the library and refusing what cannot be exact with the same code.

#![cfg(all(feature = "server", feature = "http", feature = "grpc"))]

use std::path::{Path, PathBuf};

use reqwest::StatusCode;
use serde_json::json;
use shardlite::client::{FanOut, Params, ShardedClient, SqlData, Value};
use shardlite::server::ServerConfig;
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::grpc::proto::{self as pb, shardlite_client::ShardliteClient};
use shardlite::transport::http::HttpClient;
use shardlite::wire::ERROR_CODE_METADATA;
use shardlite::{ErrorKind, RouteContext};

use crate::support::daemon::{http_client, start_daemon_on};

const MERGED: &str = "SELECT tenant, count(*) AS orders, sum(amount) FROM orders WHERE amount > ? \
                      GROUP BY tenant ORDER BY orders DESC, tenant LIMIT 3";
const REFUSED: &str = "SELECT amount, rank() OVER (ORDER BY amount) FROM orders";

/// A seeded two-shard master whose shards hold orders of six tenants.
async fn master(dir: &Path) -> PathBuf {
    let master = crate::support::seed_master(dir, crate::support::tenants_options(dir)).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    sharded
        .query()
        .execute_all("CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant TEXT, amount INTEGER)")
        .await
        .unwrap();
    for id in 1..=30_i64 {
        let tenant = format!("tenant-{}", id % 6);
        sharded
            .for_route(RouteContext::new("tenants", &tenant).unwrap())
            .execute_sql(
                "INSERT INTO orders VALUES (?1, ?2, ?3)",
                Params::from(vec![
                    Value::Integer(id),
                    tenant.as_str().into(),
                    Value::Integer(id * 3 % 17),
                ]),
            )
            .await
            .unwrap();
    }
    master
}

/// The answer of one SQLite database holding every order.
fn expected() -> Vec<Vec<Value>> {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant TEXT, amount INTEGER)")
        .unwrap();
    for id in 1..=30_i64 {
        conn.execute(
            "INSERT INTO orders VALUES (?1, ?2, ?3)",
            rusqlite::params![id, format!("tenant-{}", id % 6), id * 3 % 17],
        )
        .unwrap();
    }
    let mut stmt = conn.prepare(MERGED).unwrap();
    stmt.query_map([4], |row| {
        Ok(vec![
            row.get::<_, Value>(0)?,
            row.get::<_, Value>(1)?,
            row.get::<_, Value>(2)?,
        ])
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[tokio::test]
async fn rest_answers_merged_and_refuses_with_422() {
    let dir = crate::support::temp_dir();
    let master = master(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let http = http_client();

    let response = http
        .post(daemon.url("/api/sharding/query"))
        .json(&json!({ "sql": MERGED, "parameters": [4] }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body: shardlite::client::SqlResult = response.json().await.unwrap();
    assert_eq!(body.column_names, ["tenant", "orders", "sum(amount)"]);
    assert_eq!(body.rows, expected());

    let response = http
        .post(daemon.url("/api/sharding/query"))
        .json(&json!({ "sql": REFUSED }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let problem: serde_json::Value = response.json().await.unwrap();
    assert_eq!(problem["errorCode"], "unsupported_cross_shard_query", "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains("window function rank()"),
        "{problem}"
    );

    let openapi: serde_json::Value = http
        .get(daemon.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let operation = &openapi["paths"]["/api/sharding/query"]["post"];
    assert_eq!(operation["operationId"], "queryAllShards", "{operation}");
    assert!(operation["responses"]["422"].is_object(), "{operation}");

    let remote = HttpClient::new(RemoteOptions::new(&daemon.base_url)).unwrap();
    let result = remote.query_all_shards(MERGED, Params::from(vec![4])).await.unwrap();
    assert_eq!(result.rows, expected());
    let err = remote.query_all_shards(REFUSED, Params::none()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnsupportedCrossShardQuery, "{err}");
    daemon.stop().await.unwrap();
}

#[tokio::test]
async fn grpc_answers_merged_and_refuses_with_failed_precondition() {
    let dir = crate::support::temp_dir();
    let master = master(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;

    let client = GrpcClient::new(RemoteOptions::new(&daemon.base_url)).unwrap();
    let result = client.query_all_shards(MERGED, Params::from(vec![4])).await.unwrap();
    assert_eq!(result.column_names, ["tenant", "orders", "sum(amount)"]);
    assert_eq!(result.rows, expected());
    let err = client.query_all_shards(REFUSED, Params::none()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnsupportedCrossShardQuery, "{err}");

    let mut raw = ShardliteClient::connect(daemon.base_url.clone()).await.unwrap();
    let status = raw
        .query_all_shards(pb::SqlRequest {
            sql: "DELETE FROM orders".to_owned(),
            params: None,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition, "{status:?}");
    assert_eq!(
        status.metadata().get(ERROR_CODE_METADATA).unwrap(),
        "unsupported_cross_shard_query"
    );
    let count = client
        .query_all_shards("SELECT count(*) FROM orders", Params::none())
        .await
        .unwrap();
    assert_eq!(count.rows, vec![vec![Value::Integer(30)]], "the refused DELETE ran");
    daemon.stop().await.unwrap();
}

#[cfg(feature = "cli")]
#[tokio::test]
async fn the_cli_prints_one_merged_result() {
    use crate::support::cli::{shardlite, stderr, stdout};

    let dir = crate::support::temp_dir();
    let master = master(dir.path()).await;
    let conn = format!("Data Source={}", master.display());
    let out = tokio::task::spawn_blocking(move || {
        let ok = shardlite(&["query-all", "-c", &conn, MERGED, "--param", "4", "--json"]);
        let refused = shardlite(&["query-all", "-c", &conn, REFUSED]);
        (ok, refused)
    })
    .await
    .unwrap();
    let (ok, refused) = out;
    assert!(ok.status.success(), "{}", stderr(&ok));
    let result: shardlite::client::SqlResult = serde_json::from_str(&stdout(&ok)).unwrap();
    assert_eq!(result.rows, expected());
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("cannot be answered exactly across shards"),
        "{}",
        stderr(&refused)
    );
}

/// The admin page's diagnostics tab merges one SELECT across shards, and shows a refusal with
/// its code (skipped where Chromium is not installed, as the other browser checks are).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_page_merges_a_query_across_shards() {
    let Some(browser) = crate::support::browser::Browser::start().await else {
        return;
    };
    let dir = crate::support::temp_dir();
    let master = master(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    browser.goto(&daemon.url("/admin")).await;
    browser.click("button[data-view=diagnostics]").await;
    browser.type_into("#diagnostics-sql", &MERGED.replace('?', "4")).await;
    browser.click("#diagnostics-merge").await;
    browser
        .wait_until(
            "the merged answer",
            "return document.querySelectorAll('#diagnostics-merged tbody tr').length === 3;",
        )
        .await;
    let cells = browser
        .run(
            "return [...document.querySelectorAll('#diagnostics-merged tbody tr')].map((row) =>
               [...row.querySelectorAll('td')].map((cell) => cell.textContent));",
            vec![],
        )
        .await;
    let expected: Vec<Vec<String>> = expected()
        .iter()
        .map(|row| {
            row.iter()
                .map(|value| match value {
                    Value::Integer(v) => v.to_string(),
                    Value::Text(v) => v.clone(),
                    other => format!("{other:?}"),
                })
                .collect()
        })
        .collect();
    assert_eq!(cells, json!(expected));

    browser.type_into("#diagnostics-sql", REFUSED).await;
    browser.click("#diagnostics-merge").await;
    let refused = browser.text("#diagnostics-error").await;
    assert!(refused.contains("unsupported_cross_shard_query"), "{refused}");
    browser.close().await;
    daemon.stop().await.unwrap();
}
