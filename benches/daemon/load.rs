//! The routed point-query load of the daemon benchmarks, shared by `benches/daemon.rs` and the
//! performance guard: a sender per server (the daemon, or a bare server) for REST and gRPC, and
//! the loop that keeps [`IN_FLIGHT`](super::IN_FLIGHT) requests in flight. The including crate
//! names the query and its route: `SQL`, `KEYSPACE`, `KEY`, `IN_FLIGHT` and `row_id`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;
use shardlite::server::{KEYSPACE_HEADER, SHARD_KEY_HEADER};
use shardlite::transport::grpc::proto::{self as pb, shardlite_client::ShardliteClient};
use shardlite::wire::{DEFAULT_API_KEY_HEADER, KEYSPACE_METADATA, SHARD_KEY_METADATA};
use tokio::runtime::Runtime;
use tonic::metadata::AsciiMetadataValue;
use tonic::transport::Channel;

use super::{IN_FLIGHT, KEY, KEYSPACE, SQL, row_id};

/// The API key every request carries when the daemon is run with one (the guard's
/// `SHARDLITE_GUARD_OPERATOR`); the bare servers ignore it, so both sides receive the same bytes.
pub static API_KEY: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// `request` with the API key header, when there is one.
pub fn with_key(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    match API_KEY.get() {
        Some(key) => request.header(DEFAULT_API_KEY_HEADER, *key),
        None => request,
    }
}

/// Sends the request for one row id and checks its answer.
pub type Send = Arc<dyn Fn(i64) -> Pin<Box<dyn Future<Output = ()> + std::marker::Send>> + std::marker::Send + Sync>;

/// Wall time of `ops` requests with [`IN_FLIGHT`] of them in flight.
pub fn run_load(runtime: &Runtime, ops: u64, send: &Send) -> Duration {
    runtime.block_on(async {
        let started = Instant::now();
        let tasks: Vec<_> = (0..IN_FLIGHT)
            .map(|first| {
                let send = Arc::clone(send);
                tokio::spawn(async move {
                    let mut i = first;
                    while i < ops {
                        send(row_id(i)).await;
                        i += IN_FLIGHT;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("load task");
        }
        started.elapsed()
    })
}

/// What the REST clients decode: the rows, typed.
#[derive(Deserialize)]
pub struct RestAnswer {
    rows: Vec<(i64, String, f64)>,
}

pub fn rest_sender(http: &reqwest::Client, base_url: &str) -> Send {
    let http = http.clone();
    let url = format!("{base_url}/api/sql/execute");
    Arc::new(move |id| {
        let request = with_key(
            http.post(&url)
                .header(KEYSPACE_HEADER, KEYSPACE)
                .header(SHARD_KEY_HEADER, KEY)
                .json(&json!({ "sql": SQL, "parameters": [id] })),
        );
        Box::pin(async move {
            let response = request.send().await.expect("send");
            assert!(response.status().is_success(), "{}", response.status());
            let body = response.bytes().await.expect("body");
            let answer: RestAnswer = serde_json::from_slice(&body).expect("json");
            assert_eq!(answer.rows.first().map(|row| row.0), Some(id));
        })
    })
}

pub fn grpc_request(id: i64) -> tonic::Request<pb::SqlRequest> {
    let mut request = tonic::Request::new(pb::SqlRequest {
        sql: SQL.to_owned(),
        params: Some(pb::Params {
            kind: Some(pb::params::Kind::Positional(pb::ValueList {
                values: vec![pb::Value {
                    kind: Some(pb::value::Kind::Integer(id)),
                }],
            })),
        }),
    });
    let metadata = request.metadata_mut();
    metadata.insert(KEYSPACE_METADATA, AsciiMetadataValue::from_static(KEYSPACE));
    metadata.insert(SHARD_KEY_METADATA, AsciiMetadataValue::from_static(KEY));
    if let Some(key) = API_KEY.get() {
        let name = tonic::metadata::AsciiMetadataKey::from_static("x-csharpdb-api-key");
        metadata.insert(name, AsciiMetadataValue::from_static(key));
    }
    request
}

pub async fn grpc_client(base_url: &str) -> ShardliteClient<Channel> {
    let channel = tonic::transport::Endpoint::from_shared(base_url.to_owned())
        .expect("endpoint")
        .tcp_nodelay(true)
        .connect()
        .await
        .expect("gRPC channel");
    ShardliteClient::new(channel)
}

pub fn grpc_sender(client: ShardliteClient<Channel>) -> Send {
    Arc::new(move |id| {
        let mut client = client.clone();
        Box::pin(async move {
            let answer = client.execute_sql(grpc_request(id)).await.expect("rpc").into_inner();
            let first = answer.rows.first().and_then(|row| row.values.first());
            assert_eq!(
                first.and_then(|value| value.kind.clone()),
                Some(pb::value::Kind::Integer(id))
            );
        })
    })
}
