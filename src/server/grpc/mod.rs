//! The daemon's gRPC surface: the `shardlite.v1.Shardlite` service of `proto/shardlite.proto`,
//! mounted into the same axum router (and so the same port) as the REST API.
//!
//! Every call first passes one interceptor, which
//! - checks the API key, when one is configured, in the metadata entry named by the configured
//!   header, lower-cased (`x-csharpdb-api-key` by default), in constant time: missing or wrong is
//!   `UNAUTHENTICATED`, on every RPC;
//! - reads the route from `x-csharpdb-keyspace` and `x-csharpdb-shard-key` with the REST header
//!   rules: blank counts as absent, both select the route, exactly one is `INVALID_ARGUMENT`
//!   naming the missing entry. Text that is not printable ASCII may come UTF-8 encoded in the
//!   `-bin` twin of either key;
//! - reads the data-host shard from `x-shardlite-shard` (a blank value is `INVALID_ARGUMENT`).
//!
//! Data RPCs run on [`ServerState::data_client`] for that route (or, on a data host, that
//! shard); shard-admin RPCs ignore the route and, on a daemon serving one plain database, fail
//! with `FAILED_PRECONDITION` and error code `not_sharded`; `ListHostShards` and
//! `CreateHostShard` answer `NOT_FOUND` on a daemon that is not a data host; the participant
//! RPCs of atomic transactions (`BeginAtomicSession` and the rest) answer `INVALID_ARGUMENT` on
//! a daemon that serves a shard map, as REST does. Errors become statuses in one function,
//! [`status_from_error`], whose table is in [`status`]. Each call is logged (RPC, keyspace,
//! key, shard, error code, latency; never parameters, documents or keys) at `INFO`.

mod backup;
mod call;
mod directory;
mod gate;
mod participants;
mod reshard;
mod service;
pub mod status;
mod transactions;

pub use status::status_from_error;

use crate::server::ServerState;
use crate::wire::proto::shardlite_server::{SERVICE_NAME, ShardliteServer};

/// The gRPC service as an axum router, to merge into the REST router so both share one port.
///
/// The router serves only `/shardlite.v1.Shardlite/*` and has no fallback of its own, so merging
/// it leaves the REST router's 404 handling alone (tonic's `Routes` adds a catch-all fallback
/// that would answer every unknown REST path with a gRPC `UNIMPLEMENTED`). The largest accepted
/// request message is the configured body limit.
///
/// ```no_run
/// # async fn demo(state: shardlite::server::ServerState) -> std::io::Result<()> {
/// let app = axum::Router::new().merge(shardlite::server::grpc::routes(state));
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// axum::serve(listener, app).await
/// # }
/// ```
pub fn routes(state: ServerState) -> axum::Router {
    let body_limit = state.config().body_limit;
    let gate = gate::CallGate::new(state.clone());
    let server = ShardliteServer::new(call::ShardliteService::new(state)).max_decoding_message_size(body_limit);
    let service = tonic::service::interceptor::InterceptedService::new(server, gate);
    axum::Router::new().route_service(&format!("/{SERVICE_NAME}/{{*rpc}}"), service)
}
