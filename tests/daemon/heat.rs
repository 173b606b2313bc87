//! Heat through the daemon: a skewed workload (one hot key, one hot bucket range), then the
//! heat view over REST and gRPC ranks the hot key, the hot buckets and their shard first.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::support::daemon::{http_client, start_daemon_on};
use crate::support::heat::{HOT_BUCKETS, SkewedWorkload, skewed_master, skewed_options};
use reqwest::StatusCode;
use shardlite::client::{Params, SqlData, Topology};
use shardlite::heat::HeatReport;
use shardlite::map::ShardMap;
use shardlite::server::ServerConfig;
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;

async fn rest_heat(daemon: &crate::support::daemon::Daemon) -> HeatReport {
    let response = http_client()
        .get(daemon.url("/api/sharding/stats/heat"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

/// What both surfaces must show for the skewed workload.
fn assert_ranks_the_skew_first(heat: &HeatReport, workload: &SkewedWorkload, calls: f64) {
    let whale = &heat.keys[0];
    assert_eq!(whale.key, workload.whale, "{:?}", heat.keys);
    assert_eq!(
        (whale.shard_id.as_str(), whale.bucket, whale.pinned),
        ("s0", workload.whale_bucket, false)
    );
    // A long half-life: the counts are the calls, to a hair.
    let whale_calls = f64::from(u32::try_from(SkewedWorkload::WHALE_CALLS).unwrap());
    assert!((whale.requests - whale_calls).abs() < 1.0, "{whale:?}");
    assert!(
        (whale.rows - whale_calls).abs() < 1.0,
        "one row inserted per call: {whale:?}"
    );
    assert_eq!(heat.buckets[0].bucket, workload.whale_bucket);
    let next: BTreeSet<u32> = heat.buckets[1..=HOT_BUCKETS.len()].iter().map(|b| b.bucket).collect();
    assert_eq!(next, HOT_BUCKETS.collect(), "{:?}", &heat.buckets[..12]);
    assert_eq!(heat.shards[0].shard_id, "s0");
    assert!(heat.shards[0].share > 0.8, "{:?}", heat.shards);
    assert!(
        (heat.total_requests - calls).abs() < 1.0,
        "{} vs {calls}",
        heat.total_requests
    );
    assert!((heat.total_rows - calls).abs() < 1.0);
    assert!((heat.half_life_seconds - 600.0).abs() < 1e-9);
    assert_eq!(
        (heat.keyspace.as_str(), heat.map_version, heat.virtual_bucket_count),
        ("tenants", 1, 64)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_heat_view_ranks_a_hot_key_and_a_hot_bucket_range_first() {
    let dir = crate::support::temp_dir();
    let master = skewed_master(dir.path()).await;
    let config = ServerConfig {
        heat_half_life: Duration::from_secs(600),
        ..ServerConfig::default()
    };
    let daemon = start_daemon_on(&master, config).await;
    let map = ShardMap::new(skewed_options(dir.path())).unwrap();
    let workload = SkewedWorkload::new(&map);
    let before = rest_heat(&daemon).await;
    assert!(before.keys.is_empty() && before.buckets.is_empty() && before.total_requests == 0.0);
    workload.run(&daemon).await;
    let calls = f64::from(u32::try_from(workload.calls().len()).unwrap());

    let over_rest = rest_heat(&daemon).await;
    assert_ranks_the_skew_first(&over_rest, &workload, calls);

    let grpc = GrpcClient::new(RemoteOptions::new(&daemon.base_url)).unwrap();
    let over_grpc = grpc.shard_heat().await.unwrap();
    assert_ranks_the_skew_first(&over_grpc, &workload, calls);

    // Calls over gRPC count as well, with the rows they return.
    let routed = grpc.with_route(crate::support::route_in("tenants", &workload.whale));
    for _ in 0..5 {
        routed
            .execute_sql("SELECT id FROM notes LIMIT 2", Params::default())
            .await
            .unwrap();
    }
    let after = grpc.shard_heat().await.unwrap();
    assert!(
        (after.total_requests - calls - 5.0).abs() < 1.0,
        "{}",
        after.total_requests
    );
    assert!((after.keys[0].rows - over_rest.keys[0].rows - 10.0).abs() < 1.0);
}
