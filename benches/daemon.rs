//! Routed point-query throughput of the daemon against a bare axum server and a bare tonic
//! server running the same SQLite query, measured in the same process (SPEC section 12: each
//! ratio at least 0.7×).
//!
//! The query is `SELECT id, tenant, amount FROM orders WHERE id = ?1` on the shard a two-shard
//! `tenants` map routes `tenant-a` to, with 16 requests in flight: 16 tasks, each sending its
//! next request when its last answer arrived and decoded.
//!
//! - **daemon REST x16**: the real daemon (`server::run` on `127.0.0.1:0`), `POST
//!   /api/sql/execute` with the route headers and the body `{"sql": ..., "parameters": [id]}`.
//! - **bare axum x16**: a plain `axum::Router` with one `POST /api/sql/execute` handler that
//!   decodes the same JSON, runs the statement with rusqlite on the same shard file and answers
//!   the same JSON (checked against the daemon's answer before measuring).
//! - **daemon gRPC x16**: the daemon's `ExecuteSql`, with the route as metadata.
//! - **bare tonic x16**: a plain `tonic::transport::Server` implementing the crate's generated
//!   `shardlite.v1.Shardlite` service with only `ExecuteSql` (over rusqlite), so requests and
//!   answers are the same protobuf messages (checked before measuring).
//!
//! The baselines share a small pool of rusqlite connections and run the statement inline on the
//! handler's thread with a cached prepared statement: for a point read that costs less than
//! `spawn_blocking`, so it is what a plain service tuned for such reads does (see `daemon/bare.rs`).
//! Every server sets `TCP_NODELAY` on its connections. Both REST servers are driven by the same `reqwest` client setup (HTTP/1.1 keep-alive, one
//! connection per request in flight), both gRPC servers by the generated tonic client over one
//! HTTP/2 channel, with the route metadata sent to both. Servers and load share one tokio
//! runtime with one worker per core.
//!
//! Subject and baseline are measured in interleaved rounds (daemon, bare, daemon, bare, ...) so
//! that a noisy moment hits both; the table gives the median throughput of the rounds and the
//! ratio against the target.
//!
//! `cargo bench --all-features --bench daemon`. `SHARDLITE_BENCH_ROUNDS` (default 7) and
//! `SHARDLITE_BENCH_OPS` (requests per round, default 20 000) tune the run;
//! `SHARDLITE_BENCH_ONLY=text` measures only the rows whose name contains `text` (to profile one
//! of them).

#[path = "../tests/support/mod.rs"]
pub mod support;

#[path = "daemon/bare.rs"]
mod bare;
#[path = "daemon/load.rs"]
mod load;

use crate::support::daemon;
use load::{Send, grpc_client, grpc_request, grpc_sender, rest_sender, run_load};

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use shardlite::RouteContext;
use shardlite::catalog::Catalog;
use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};
use shardlite::server::{KEYSPACE_HEADER, SHARD_KEY_HEADER, ServerConfig, ServerState};
use shardlite::transport::grpc::proto::shardlite_client::ShardliteClient;
use tokio::runtime::Runtime;
use tonic::transport::Channel;

const ROWS: i64 = 1_000;
const SQL: &str = "SELECT id, tenant, amount FROM orders WHERE id = ?1";
const KEYSPACE: &str = "tenants";
const KEY: &str = "tenant-a";
/// Requests in flight.
const IN_FLIGHT: u64 = 16;
/// What each ratio must reach (SPEC section 12).
const TARGET: f64 = 0.7;

fn row_id(i: u64) -> i64 {
    i64::try_from(i % ROWS.unsigned_abs()).unwrap_or(0) + 1
}

/// Checks that a baseline answers what the daemon answers (apart from the time it took).
async fn check_same_answers(
    daemon_url: &str,
    axum_url: &str,
    daemon_grpc: &mut ShardliteClient<Channel>,
    tonic_grpc: &mut ShardliteClient<Channel>,
) {
    let http = daemon::http_client();
    let mut bodies = Vec::new();
    for base in [daemon_url, axum_url] {
        let response = http
            .post(format!("{base}/api/sql/execute"))
            .header(KEYSPACE_HEADER, KEYSPACE)
            .header(SHARD_KEY_HEADER, KEY)
            .json(&json!({ "sql": SQL, "parameters": [7] }))
            .send()
            .await
            .expect("send");
        assert!(response.status().is_success(), "{base}: {}", response.status());
        let mut body: serde_json::Value = response.json().await.expect("json");
        body["elapsedMs"] = json!(0.0);
        bodies.push(body);
    }
    assert_eq!(bodies[0], bodies[1], "the bare axum answer differs from the daemon's");
    println!("REST answer of both: {}", bodies[0]);

    let mut answers = Vec::new();
    for client in [daemon_grpc, tonic_grpc] {
        let mut answer = client.execute_sql(grpc_request(7)).await.expect("rpc").into_inner();
        answer.elapsed_ms = 0.0;
        answers.push(answer);
    }
    assert_eq!(
        answers[0], answers[1],
        "the bare tonic answer differs from the daemon's"
    );
}

struct Row {
    name: &'static str,
    send: Send,
}

/// Median throughput (requests per second) of each row over `rounds` interleaved rounds of
/// `ops` requests, after a shorter warm-up round.
fn measure(runtime: &Runtime, rounds: usize, ops: u64, rows: &[Row]) -> Vec<Option<f64>> {
    let only = std::env::var("SHARDLITE_BENCH_ONLY").ok();
    let chosen: Vec<bool> = rows
        .iter()
        .map(|row| only.as_deref().is_none_or(|only| row.name.contains(only)))
        .collect();
    for (row, _) in rows.iter().zip(&chosen).filter(|(_, chosen)| **chosen) {
        run_load(runtime, ops / 4 + IN_FLIGHT, &row.send);
    }
    let mut samples = vec![Vec::new(); rows.len()];
    for _ in 0..rounds {
        for (i, row) in rows.iter().enumerate() {
            if chosen[i] {
                let took = run_load(runtime, ops, &row.send);
                samples[i].push(ops as f64 / took.as_secs_f64());
            }
        }
    }
    samples
        .into_iter()
        .map(|mut values| {
            values.sort_by(f64::total_cmp);
            values.get(values.len() / 2).copied()
        })
        .collect()
}

fn settings() -> (usize, u64) {
    let number = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let rounds = number("SHARDLITE_BENCH_ROUNDS").map_or(7, |r| usize::try_from(r.max(1)).unwrap_or(7));
    let ops = number("SHARDLITE_BENCH_OPS").unwrap_or(20_000).max(IN_FLIGHT);
    (rounds, ops)
}

fn main() {
    let (rounds, ops) = settings();
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let master = dir.path().join("master.db");
    let shard_file = |id: &str| dir.path().join(format!("{id}.db"));
    let shard = |id: &str| ShardDefinition::local(id, shard_file(id).to_string_lossy());
    let options = ShardingOptions {
        keyspace: KEYSPACE.into(),
        map_version: 1,
        virtual_bucket_count: 4,
        shards: vec![shard("s0"), shard("s1")],
        bucket_ranges: vec![BucketRange::new(0, 2, "s0"), BucketRange::new(2, 4, "s1")],
        exact_key_pins: Default::default(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    };
    let route = RouteContext::new(KEYSPACE, KEY).expect("route");

    let (daemon, shard_id) = runtime.block_on(async {
        Catalog::open(&master)
            .await
            .expect("catalog")
            .seed(options, false)
            .await
            .expect("seed");
        let state = ServerState::open(&master, ServerConfig::default())
            .await
            .expect("state");
        let sharded = state.sharded().expect("sharded").clone();
        sharded
            .query()
            .execute_all(&format!(
                "CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, amount REAL NOT NULL); \
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {ROWS}) \
                 INSERT INTO orders SELECT i, '{KEY}', i * 1.5 FROM n;"
            ))
            .await
            .expect("schema");
        let shard_id = sharded.resolve_route(&route).expect("resolve").shard_id;
        (daemon::start_daemon(state).await, shard_id)
    });

    // The baselines open the file the daemon routes `tenant-a` to.
    let connections = bare::Connections::open(&shard_file(&shard_id), 2 * cores);
    let (axum_url, tonic_url, mut daemon_grpc, mut tonic_grpc) = runtime.block_on(async {
        let axum_url = bare::serve_axum(Arc::clone(&connections)).await;
        let tonic_url = bare::serve_tonic(Arc::clone(&connections));
        let daemon_grpc = grpc_client(&daemon.base_url).await;
        let tonic_grpc = grpc_client(&tonic_url).await;
        (axum_url, tonic_url, daemon_grpc, tonic_grpc)
    });
    runtime.block_on(check_same_answers(
        &daemon.base_url,
        &axum_url,
        &mut daemon_grpc,
        &mut tonic_grpc,
    ));
    println!("daemon at {}, bare tonic at {tonic_url}", daemon.base_url);

    let rows = [
        Row {
            name: "daemon REST x16",
            send: rest_sender(&daemon::http_client(), &daemon.base_url),
        },
        Row {
            name: "bare axum x16",
            send: rest_sender(&daemon::http_client(), &axum_url),
        },
        Row {
            name: "daemon gRPC x16",
            send: grpc_sender(daemon_grpc),
        },
        Row {
            name: "bare tonic x16",
            send: grpc_sender(tonic_grpc),
        },
    ];
    let started = Instant::now();
    let medians = measure(&runtime, rounds, ops, &rows);

    println!();
    println!(
        "daemon routed point query, {IN_FLIGHT} in flight (throughput; median of {rounds} rounds of {ops} requests, {cores} cores)"
    );
    println!(
        "  {:<20} {:>10}   {:<20} {:>10}   {:>6}   {:<8}",
        "subject", "ops/s", "baseline", "ops/s", "ratio", "target"
    );
    for pair in rows.chunks(2).zip(medians.chunks(2)) {
        let ([subject, baseline], [s, b]) = pair else {
            continue;
        };
        let shown = |v: &Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.0}"));
        let (ratio, verdict) = match (s, b) {
            (Some(s), Some(b)) => {
                let ratio = s / b;
                (format!("{ratio:.2}x"), if ratio >= TARGET { "met" } else { "NOT met" })
            }
            _ => ("-".to_owned(), ""),
        };
        println!(
            "  {:<20} {:>10}   {:<20} {:>10}   {:>6}   {:<8} {}",
            subject.name,
            shown(s),
            baseline.name,
            shown(b),
            ratio,
            format!(">= {TARGET}x"),
            verdict
        );
    }
    println!("(measured in {:.0?})", started.elapsed());

    runtime.block_on(daemon.stop()).expect("daemon stopped");
}
