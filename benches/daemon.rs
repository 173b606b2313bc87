//! A routed point query through the daemon, over REST and over gRPC, against the same query
//! in-process: `SELECT ... WHERE id = ?1` on a two-shard `tenants` map, the route sent as
//! headers (REST) or metadata (gRPC) on every call, one client reusing its connection.
//!
//! The difference between `in_process` and the remote rows is the wire: HTTP framing, JSON or
//! protobuf encoding, and the daemon's middleware (API key, route headers, tracing span).
//!
//! `cargo bench --features server --bench daemon`

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_main};
use serde_json::json;
use shardlite::RouteContext;
use shardlite::catalog::Catalog;
use shardlite::client::{DataClient, Params, ShardedClient, Value};
use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};
use shardlite::server::{KEYSPACE_HEADER, SHARD_KEY_HEADER, ServerConfig, ServerState};
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;

#[allow(dead_code)]
#[path = "../tests/common/daemon.rs"]
mod daemon;

const ROWS: i64 = 1_000;
const SQL: &str = "SELECT id, tenant, amount FROM orders WHERE id = ?1";
const KEY: &str = "tenant-a";

fn daemon_point_query(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let master = dir.path().join("master.db");
    let shard = |id: &str| ShardDefinition::local(id, dir.path().join(format!("{id}.db")).to_string_lossy());
    let options = ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 4,
        shards: vec![shard("s0"), shard("s1")],
        bucket_ranges: vec![BucketRange::new(0, 2, "s0"), BucketRange::new(2, 4, "s1")],
        exact_key_pins: Default::default(),
    };
    let route = RouteContext::new("tenants", KEY).expect("route");

    let (daemon, sharded) = runtime.block_on(async {
        Catalog::open(&master)
            .await
            .expect("catalog")
            .seed(options, false)
            .await
            .expect("seed");
        let state = ServerState::open(&master, ServerConfig::default())
            .await
            .expect("state");
        let sharded: ShardedClient = state.sharded().expect("sharded").clone();
        sharded
            .execute_sql_on_all_shards(
                "CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, amount REAL NOT NULL); \
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) \
                 INSERT INTO orders SELECT i, 'tenant-a', i * 1.5 FROM n;",
            )
            .await
            .expect("schema");
        (daemon::start_daemon(state).await, sharded)
    });

    let http = daemon::http_client();
    let sql_url = daemon.url("/api/sql/execute");
    let grpc = runtime.block_on(async {
        GrpcClient::connect(RemoteOptions::new(daemon.base_url.clone()).with_route(route.clone()))
            .await
            .expect("gRPC client")
    });
    let routed = sharded.for_route(route);

    let mut group = c.benchmark_group("daemon_point_query");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    let mut id = 0i64;
    group.bench_function("in_process", |b| {
        b.to_async(&runtime).iter(|| {
            id = id % ROWS + 1;
            let routed = &routed;
            async move {
                let result = routed
                    .execute_sql(SQL, Params::from(vec![Value::Integer(id)]))
                    .await
                    .expect("query");
                black_box(result.rows.len())
            }
        });
    });

    let mut id = 0i64;
    group.bench_function("rest_sql_execute", |b| {
        b.to_async(&runtime).iter(|| {
            id = id % ROWS + 1;
            let request = http
                .post(&sql_url)
                .header(KEYSPACE_HEADER, "tenants")
                .header(SHARD_KEY_HEADER, KEY)
                .json(&json!({ "sql": SQL, "parameters": [id] }));
            async move {
                let response = request.send().await.expect("send");
                assert!(response.status().is_success(), "{}", response.status());
                let body: serde_json::Value = response.json().await.expect("json");
                black_box(body["rows"].as_array().map(Vec::len))
            }
        });
    });

    let mut id = 0i64;
    group.bench_function("rest_get_row", |b| {
        b.to_async(&runtime).iter(|| {
            id = id % ROWS + 1;
            let request = http
                .get(daemon.url(&format!("/api/tables/orders/rows/{id}")))
                .header(KEYSPACE_HEADER, "tenants")
                .header(SHARD_KEY_HEADER, KEY);
            async move {
                let response = request.send().await.expect("send");
                assert!(response.status().is_success(), "{}", response.status());
                let body: serde_json::Value = response.json().await.expect("json");
                black_box(body["id"].as_i64())
            }
        });
    });

    let mut id = 0i64;
    group.bench_function("grpc_execute_sql", |b| {
        b.to_async(&runtime).iter(|| {
            id = id % ROWS + 1;
            let grpc = &grpc;
            async move {
                let result = grpc
                    .execute_sql(SQL, Params::from(vec![Value::Integer(id)]))
                    .await
                    .expect("query");
                black_box(result.rows.len())
            }
        });
    });
    group.finish();

    runtime.block_on(daemon.stop()).expect("daemon stopped");
}

/// `criterion_group!` defines a public, undocumented function; keep it out of the crate root.
mod harness {
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::daemon_point_query);
}

criterion_main!(harness::benches);
