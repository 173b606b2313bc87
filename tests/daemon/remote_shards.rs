//! A sharded client whose shards are served by daemons on loopback ports: routing, fan-out,
//! status and transactions across them, and what happens when one daemon stops.
#![cfg(all(feature = "server", feature = "http", feature = "grpc"))]

use std::time::{Duration, Instant};

use crate::support::daemon::{Daemon, remote_shard, start_daemon_on};
use crate::support::route;
use shardlite::ErrorKind;
use shardlite::client::{Params, RowData, ShardedClient, SqlData, Topology, TransactionData, Value};
use shardlite::map::{BucketRange, Secret, ShardMap, ShardingOptions};
use shardlite::server::ServerConfig;
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::http::HttpClient;

/// Three shards, each a plain database behind its own daemon: s0 over gRPC, s1 over REST,
/// s2 over gRPC with an API key. Pins put tenant-0/1/2 on s0/s1/s2.
async fn three_daemons(dir: &std::path::Path) -> (Vec<Daemon>, ShardedClient) {
    let keyed = ServerConfig {
        api_key: Some(Secret::new("shard-two-secret")),
        ..ServerConfig::default()
    };
    let d0 = start_daemon_on(&dir.join("plain-0.db"), ServerConfig::default()).await;
    let d1 = start_daemon_on(&dir.join("plain-1.db"), ServerConfig::default()).await;
    let d2 = start_daemon_on(&dir.join("plain-2.db"), keyed).await;
    let mut s2 = remote_shard("s2", &d2, "grpc");
    s2.api_key = Some(Secret::new("shard-two-secret"));
    let map = ShardMap::new(ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 3,
        shards: vec![remote_shard("s0", &d0, "grpc"), remote_shard("s1", &d1, "http"), s2],
        bucket_ranges: vec![
            BucketRange::new(0, 1, "s0"),
            BucketRange::new(1, 2, "s1"),
            BucketRange::new(2, 3, "s2"),
        ],
        exact_key_pins: (0..3).map(|i| (format!("tenant-{i}"), format!("s{i}"))).collect(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    })
    .unwrap();
    let sharded = ShardedClient::from_map(map).await.unwrap();
    (vec![d0, d1, d2], sharded)
}

#[tokio::test]
async fn a_sharded_client_over_three_daemons_routes_fans_out_and_reports_status() {
    let dir = crate::support::temp_dir();
    let (daemons, sharded) = three_daemons(dir.path()).await;

    let created = sharded
        .query()
        .execute_all("CREATE TABLE t (id INTEGER PRIMARY KEY, tenant TEXT)")
        .await
        .unwrap();
    assert!(created.iter().all(|r| r.error.is_none()), "{created:?}");
    for i in 0..3 {
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
    // Each daemon's own file holds exactly its tenant's row.
    for (i, daemon) in daemons.iter().enumerate() {
        let direct =
            GrpcClient::new(RemoteOptions::new(daemon.base_url.clone()).with_api_key("shard-two-secret")).unwrap();
        let rows = direct
            .execute_sql("SELECT tenant FROM t", Params::none())
            .await
            .unwrap();
        assert_eq!(rows.rows, vec![vec![Value::Text(format!("tenant-{i}"))]]);
    }
    // Row closures reach remote shards too, over both transports.
    for i in 0..3 {
        let routed = sharded.for_route(route(&format!("tenant-{i}")));
        let tenant = routed
            .query_row("SELECT tenant FROM t", Params::none(), |row| row.get::<String>(0))
            .await
            .unwrap();
        assert_eq!(tenant, Some(format!("tenant-{i}")));
        let ids = routed
            .query_map("SELECT id FROM t", Params::none(), |row| row.get::<i64>(0))
            .await
            .unwrap();
        assert_eq!(ids, vec![i]);
    }
    let counts = sharded.query().read_all("SELECT count(*) FROM t").await.unwrap();
    assert_eq!(counts.len(), 3);
    assert!(
        counts
            .iter()
            .all(|r| r.result.as_ref().unwrap().rows == vec![vec![Value::Integer(1)]])
    );
    let err = sharded.query().read_all("DELETE FROM t").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ReadOnly);

    // Transactions route by id to the remote shard, and a conflicting route is refused.
    let tx = sharded.for_route(route("tenant-1")).begin().await.unwrap();
    assert!(tx.id().to_string().starts_with("csdbshard:1:s1:"));
    tx.execute("INSERT INTO t VALUES (10, 'tenant-1')", Params::none())
        .await
        .unwrap();
    let err = sharded
        .for_route(route("tenant-0"))
        .execute_in_transaction(&tx.id().to_string(), "SELECT 1", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    tx.commit().await.unwrap();
    assert_eq!(sharded.for_route(route("tenant-1")).count_rows("t").await.unwrap(), 2);

    let status = sharded.shards().status().await;
    assert!(status.iter().all(|s| s.healthy), "{status:?}");
    assert_eq!(status[1].data_source.as_deref(), Some(daemons[1].base_url.as_str()));
    assert!(
        !serde_json::to_string(&sharded.map_snapshot())
            .unwrap()
            .contains("shard-two-secret")
    );

    // Stop s1's daemon: it turns unhealthy with an error naming it; the other routes still work.
    let mut daemons = daemons;
    let stopped = daemons.remove(1);
    let stopped_url = stopped.base_url.clone();
    stopped.stop().await.unwrap();
    let status = sharded.shards().status().await;
    assert!(status[0].healthy && status[2].healthy, "{status:?}");
    assert!(!status[1].healthy);
    let error = status[1].error.as_deref().unwrap();
    assert!(error.contains(&stopped_url), "{error}");
    let err = sharded
        .for_route(route("tenant-1"))
        .execute_sql("SELECT 1", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    for key in ["tenant-0", "tenant-2"] {
        assert_eq!(sharded.for_route(route(key)).count_rows("t").await.unwrap(), 1);
    }
    let fan_out = sharded.query().read_all("SELECT count(*) FROM t").await.unwrap();
    assert!(fan_out[0].error.is_none() && fan_out[2].error.is_none());
    assert!(fan_out[1].error.as_deref().unwrap().contains(&stopped_url));
}

#[tokio::test]
async fn bad_endpoints_wrong_keys_and_unreachable_daemons_fail_clearly_and_in_time() {
    let dir = crate::support::temp_dir();
    let keyed = start_daemon_on(
        &dir.path().join("keyed.db"),
        ServerConfig {
            api_key: Some(Secret::new("right-key")),
            ..ServerConfig::default()
        },
    )
    .await;

    // Wrong and missing API keys: the same kind over both transports.
    for key in [None, Some("wrong-key")] {
        let mut options = RemoteOptions::new(keyed.base_url.clone());
        if let Some(key) = key {
            options = options.with_api_key(key);
        }
        let over_http = HttpClient::new(options.clone()).unwrap().info().await.unwrap_err();
        let over_grpc = GrpcClient::new(options).unwrap().info().await.unwrap_err();
        assert_eq!(over_http.kind(), ErrorKind::Unauthenticated, "{over_http}");
        assert_eq!(over_grpc.kind(), ErrorKind::Unauthenticated, "{over_grpc}");
        assert!(!over_http.to_string().contains("wrong-key") && !over_grpc.to_string().contains("wrong-key"));
    }
    let ok = HttpClient::new(RemoteOptions::new(keyed.base_url.clone()).with_api_key("right-key")).unwrap();
    ok.info().await.unwrap();

    // Malformed endpoints are refused up front.
    for endpoint in ["not a url", "ftp://127.0.0.1:1", "http://user:pw@127.0.0.1:1"] {
        let err = HttpClient::new(RemoteOptions::new(endpoint)).unwrap_err();
        assert!(err.to_string().contains("Endpoint"), "{endpoint}: {err}");
    }

    // Nothing listening: a transport error naming the endpoint, well within the timeout.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gone = format!("http://127.0.0.1:{port}");
    let limit = Duration::from_secs(3);
    let options = RemoteOptions::new(gone.clone())
        .with_connect_timeout(limit)
        .with_request_timeout(limit);
    let started = Instant::now();
    let over_http = HttpClient::new(options.clone()).unwrap().info().await.unwrap_err();
    let over_grpc = GrpcClient::new(options).unwrap().info().await.unwrap_err();
    assert!(started.elapsed() < limit * 2);
    for err in [&over_http, &over_grpc] {
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
        assert!(err.to_string().contains(&gone), "{err}");
    }

    // A listener that accepts but never answers: the request timeout ends the wait.
    let stalled = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let stalled_url = format!("http://{}", stalled.local_addr().unwrap());
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = stalled.accept().await {
            held.push(socket);
        }
    });
    let short = Duration::from_millis(500);
    let options = RemoteOptions::new(stalled_url.clone()).with_request_timeout(short);
    let started = Instant::now();
    let over_http = HttpClient::new(options.clone()).unwrap().info().await.unwrap_err();
    let over_grpc = GrpcClient::new(options).unwrap().info().await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    for err in [&over_http, &over_grpc] {
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
        assert!(err.to_string().contains(&stalled_url), "{err}");
    }
    holder.abort();
}

#[tokio::test]
async fn shard_admin_over_http_matches_in_process() {
    let dir = crate::support::temp_dir();
    let master = crate::support::seeded_master(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let http = HttpClient::new(RemoteOptions::new(daemon.base_url.clone())).unwrap();
    let local = ShardedClient::open(&master).await.unwrap();
    assert_eq!(http.shard_map().await.unwrap(), local.map_snapshot());
    assert_eq!(
        http.resolve_route(&route("tenant-a")).await.unwrap(),
        local.resolve_route(&route("tenant-a")).unwrap()
    );
}
