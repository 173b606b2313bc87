//! Prometheus metrics: a known workload over REST and gRPC, then `/metrics` scraped, its counts
//! checked, and the text checked by `promtool check metrics` (Debian's `prometheus` package;
//! `.ci/run` installs it and sets `SHARDLITE_REQUIRE_PROMTOOL`, which makes a missing one fail).

use std::collections::BTreeMap;

use crate::support::Fixture;
use crate::support::daemon::{http_client, routed, start_metrics};
use reqwest::StatusCode;
use serde_json::json;
use shardlite::server::ServerConfig;
use shardlite::transport::grpc::proto::{self as pb, shardlite_client::ShardliteClient};

pub(crate) use crate::support::promtool::promtool_check;

/// Sample lines (`name{labels} value`) by their name and labels.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| line.rsplit_once(' '))
        .map(|(series, value)| (series.to_owned(), value.parse().expect("a number")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_a_known_workload_and_pass_promtool() {
    let fixture = Fixture::new().await;
    let config = ServerConfig {
        metrics: true,
        ..ServerConfig::default()
    };
    let daemon = fixture.start_with(config).await;
    let metrics_url = start_metrics(&daemon.state).await;
    let http = http_client();
    let sql = |sql: &str| json!({ "sql": sql });

    let created = http
        .post(daemon.url("/api/sharding/sql/execute-all"))
        .json(&sql("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)"))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::OK);
    for n in 0..3 {
        let insert = sql(&format!("INSERT INTO notes(body) VALUES ('secret-sql-{n}')"));
        let response = routed(http.post(daemon.url("/api/sql/execute")), "tenant-a")
            .json(&insert)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    for _ in 0..2 {
        let response = routed(http.post(daemon.url("/api/sql/read-only")), "tenant-b")
            .json(&sql("SELECT count(*) FROM notes"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    let bad = routed(http.post(daemon.url("/api/sql/execute")), "tenant-a")
        .json(&sql("INSERT INTO no_such_table VALUES (1)"))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    let begun = routed(http.post(daemon.url("/api/transactions")), "tenant-a")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(begun.status(), StatusCode::OK, "{:?}", begun.text().await);
    let mut grpc = ShardliteClient::connect(daemon.base_url.clone()).await.unwrap();
    for _ in 0..2 {
        grpc.get_info(pb::Empty {}).await.expect("GetInfo");
    }

    let scraped = http.get(&metrics_url).send().await.unwrap();
    assert_eq!(scraped.status(), StatusCode::OK);
    let content_type = scraped.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    let text = scraped.text().await.unwrap();
    let got = samples(&text);
    let value = |series: &str| {
        got.get(series)
            .copied()
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    let requests = |transport: &str, operation: &str, code: &str| {
        value(&format!(
            "shardlite_requests_total{{transport=\"{transport}\",operation=\"{operation}\",code=\"{code}\"}}"
        ))
    };
    assert_eq!(requests("rest", "ExecuteSqlOnAllShards", "ok"), 1.0);
    assert_eq!(requests("rest", "ExecuteSql", "ok"), 3.0);
    assert_eq!(requests("rest", "ExecuteSql", "sql"), 1.0);
    assert_eq!(requests("rest", "ExecuteReadOnlySql", "ok"), 2.0);
    assert_eq!(requests("rest", "BeginTransaction", "ok"), 1.0);
    assert_eq!(requests("grpc", "GetInfo", "ok"), 2.0);
    assert_eq!(
        value("shardlite_request_duration_seconds_count{transport=\"rest\"}"),
        8.0
    );
    assert_eq!(
        value("shardlite_request_duration_seconds_count{transport=\"grpc\"}"),
        2.0
    );
    assert_eq!(
        value("shardlite_request_duration_seconds_bucket{transport=\"rest\",le=\"+Inf\"}"),
        8.0
    );

    let sharded = daemon.state.sharded().expect("sharded").clone();
    let owner = |key: &str| sharded.resolve_route(&crate::support::route(key)).unwrap().shard_id;
    let mut routed_per_shard: BTreeMap<String, f64> = BTreeMap::new();
    *routed_per_shard.entry(owner("tenant-a")).or_default() += 5.0; // 3 inserts, the bad one, begin
    *routed_per_shard.entry(owner("tenant-b")).or_default() += 2.0;
    for (shard, count) in &routed_per_shard {
        assert_eq!(
            value(&format!("shardlite_shard_requests_total{{shard=\"{shard}\"}}")),
            *count
        );
    }
    assert_eq!(
        value(&format!(
            "shardlite_open_transactions{{shard=\"{}\"}}",
            owner("tenant-a")
        )),
        1.0
    );
    assert_eq!(value("shardlite_open_shards"), 2.0);
    assert_eq!(value("shardlite_map_version"), 1.0);
    assert_eq!(value("shardlite_route_fenced_total"), 0.0);
    assert_eq!(value("shardlite_migration_rows_copied_total"), 0.0);
    assert!(text.contains("# TYPE shardlite_engine_queue_depth gauge"), "{text}");
    for leaked in ["tenant-a", "tenant-b", "secret-sql", "SELECT", "INSERT"] {
        assert!(!text.contains(leaked), "a label carries {leaked:?}:\n{text}");
    }
    promtool_check(&text);
    daemon.stop().await.unwrap();
}

/// A daemon without metrics answers `/metrics` with 404 and counts nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_off_by_default() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    assert!(daemon.state.metrics().is_none());
    let metrics_url = start_metrics(&daemon.state).await;
    let scraped = http_client().get(&metrics_url).send().await.unwrap();
    assert_eq!(scraped.status(), StatusCode::NOT_FOUND);
    daemon.stop().await.unwrap();
}

/// Calls refused for a missing or wrong API key are counted on both transports, in the metrics
/// and in the totals the shutdown line prints, and the refusal says where the key goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_keys_are_counted_on_every_transport_and_say_where_the_key_goes() {
    let fixture = Fixture::new().await;
    let config = ServerConfig {
        metrics: true,
        api_key: Some(shardlite::map::Secret::new("the-key")),
        ..ServerConfig::default()
    };
    let daemon = fixture.start_with(config).await;
    let metrics_url = start_metrics(&daemon.state).await;

    let mut grpc = ShardliteClient::connect(daemon.base_url.clone()).await.unwrap();
    for _ in 0..2 {
        let refused = grpc.get_info(pb::Empty {}).await.expect_err("no key");
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        assert!(refused.message().contains("'X-CSharpDB-Api-Key' header"), "{refused:?}");
        assert!(refused.message().contains("Api Key=KEY"), "{refused:?}");
    }
    let mut wrong = tonic::Request::new(pb::Empty {});
    wrong
        .metadata_mut()
        .insert("x-csharpdb-api-key", "not-the-key".parse().unwrap());
    grpc.get_info(wrong).await.expect_err("a wrong key");

    // curl's habit, `Authorization: Bearer`, is told which header the key goes in.
    let http = http_client();
    let refused = http
        .get(daemon.url("/api/info"))
        .header("Authorization", "Bearer the-key")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let body: serde_json::Value = refused.json().await.unwrap();
    let detail = body["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("'X-CSharpDB-Api-Key' header"), "{body}");

    let text = http.get(&metrics_url).send().await.unwrap().text().await.unwrap();
    let got = samples(&text);
    let unauthenticated = |transport: &str, operation: &str| {
        let series = format!(
            "shardlite_requests_total{{transport=\"{transport}\",operation=\"{operation}\",code=\"unauthenticated\"}}"
        );
        got.get(&series)
            .copied()
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    assert_eq!(unauthenticated("grpc", "GetInfo"), 3.0);
    assert_eq!(unauthenticated("rest", "GetInfo"), 1.0);
    let counts = daemon.state.request_counts();
    assert_eq!((counts.rest, counts.grpc, counts.client_errors), (1, 3, 4), "{counts}");
    assert!(
        counts
            .to_string()
            .starts_with("4 request(s): 1 REST, 3 gRPC; 4 client error(s)"),
        "{counts}"
    );
    daemon.stop().await.unwrap();
}
