//! Shard status a page at a time over every surface: the same queries give the same pages
//! in-process, over REST and over gRPC; bad input is refused by name, and the old status call
//! still lists every shard.
#![cfg(all(feature = "server", feature = "http"))]

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::Value;
use shardlite::ErrorKind;
use shardlite::client::{ShardAdmin, ShardedClient};
use shardlite::data::{ShardStatusPage, ShardStatusQuery};
use shardlite::server::ServerConfig;
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::http::HttpClient;

use crate::support::daemon::{http_client, start_daemon_on};
use crate::support::many::many_shards;

/// Shard ids and health of a page, with its counts: what must agree across surfaces.
fn outline(page: &ShardStatusPage) -> (String, u64, u64, Vec<(String, bool)>) {
    let counts = page.summary;
    (
        format!(
            "{} shards, {} enabled, {} healthy, {} unavailable, {} disabled",
            counts.shards, counts.enabled, counts.healthy, counts.unavailable, counts.disabled
        ),
        page.total,
        page.offset,
        page.shards.iter().map(|s| (s.shard_id.clone(), s.healthy)).collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_pages_agree_in_process_over_rest_and_over_grpc() {
    let dir = crate::support::temp_dir();
    let master = crate::support::seed_master(dir.path(), many_shards(30, |i| i % 10 == 9)).await;
    std::fs::write(dir.path().join("shards/s4.db"), vec![7u8; 4096]).unwrap();
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let local: Arc<dyn ShardAdmin> = Arc::new(ShardedClient::open(&master).await.unwrap());
    let rest: Arc<dyn ShardAdmin> = Arc::new(HttpClient::new(RemoteOptions::new(&daemon.base_url)).unwrap());
    let grpc: Arc<dyn ShardAdmin> = Arc::new(GrpcClient::new(RemoteOptions::new(&daemon.base_url)).unwrap());

    let queries = [
        ShardStatusQuery::default(),
        ShardStatusQuery {
            offset: 10,
            limit: Some(5),
            ..Default::default()
        },
        ShardStatusQuery {
            unhealthy_only: true,
            ..Default::default()
        },
        ShardStatusQuery {
            shard_id: Some("S4".into()),
            ..Default::default()
        },
    ];
    for query in &queries {
        let expected = outline(&local.shard_status_page(query).await.unwrap());
        for (surface, admin) in [("rest", &rest), ("grpc", &grpc)] {
            let page = admin.shard_status_page(query).await.unwrap();
            assert_eq!(outline(&page), expected, "{surface} {query:?}");
        }
    }
    let page = local.shard_status_page(&queries[1]).await.unwrap();
    let ids: Vec<&str> = page.shards.iter().map(|s| s.shard_id.as_str()).collect();
    assert_eq!(ids, ["s10", "s11", "s12", "s13", "s14"]);
    assert_eq!(
        outline(&page).0,
        "30 shards, 27 enabled, 26 healthy, 1 unavailable, 3 disabled"
    );
    let problems = local.shard_status_page(&queries[2]).await.unwrap();
    assert_eq!(outline(&problems).3, [("s4".to_owned(), false)]);

    for (surface, admin) in [("in-process", &local), ("rest", &rest), ("grpc", &grpc)] {
        let unknown = ShardStatusQuery {
            shard_id: Some("s99".into()),
            ..Default::default()
        };
        let err = admin.shard_status_page(&unknown).await.unwrap_err();
        assert!(err.to_string().contains("s99"), "{surface}: {err}");
        let zero = ShardStatusQuery {
            limit: Some(0),
            ..Default::default()
        };
        let err = admin.shard_status_page(&zero).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{surface}: {err}");
        assert!(err.to_string().contains("limit"), "{surface}: {err}");
        // The call that lists every shard is unchanged.
        assert_eq!(admin.shard_status().await.unwrap().len(), 30, "{surface}");
    }

    // Over plain HTTP, a bad limit and an unknown parameter are refused by name; a client that
    // skips the checks above reaches the daemon's own.
    let http = http_client();
    for (query, needle) in [
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("pageSize=3", "pageSize"),
    ] {
        let response = http
            .get(daemon.url(&format!("/api/sharding/status/page?{query}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}");
        let body: Value = response.json().await.unwrap();
        assert!(body.to_string().contains(needle), "{query}: {body}");
    }
    daemon.stop().await.unwrap();
}
