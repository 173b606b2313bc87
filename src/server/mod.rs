//! The daemon: REST and gRPC on one port.
//!
//! [`run`] takes a bound listener, the shared [`ServerState`] and a shutdown future, so tests
//! start it on `127.0.0.1:0` and the CLI on the configured address. [`router`] is the service it
//! serves: the [`rest`] router merged with the [`grpc`] routes, and one fallback that answers
//! gRPC requests for unknown methods with `UNIMPLEMENTED` and everything else with a 404 problem.
//! Every route, of either protocol, runs behind the daemon's request limits: at most
//! [`ServerConfig::max_concurrent_requests`] at once (more are answered `busy` at once) and each
//! within [`ServerConfig::request_timeout`] or a gRPC caller's shorter deadline (then
//! `request_timeout`, and the work is stopped). The [`admin`] workspace is served at `/admin`,
//! and the [`health`] probes at `/healthz` and `/readyz`, both without the API key.
//! A daemon serves a master catalog ([`ServerState::open`]: sharded, or one plain database) or,
//! as a data host, a folder of shard files addressed by id ([`ServerState::open_shard_dir`],
//! [`host`]).
//! [`run_tls`] serves the same over TLS ([`tls`]: one rustls acceptor, ALPN `h2` and `http/1.1`,
//! optional client certificates, reload without dropping connections).
//!
//! ```no_run
//! # async fn demo() -> shardlite::Result<()> {
//! use shardlite::server::{self, ServerConfig, ServerState};
//!
//! let state = ServerState::open("data/master.db", ServerConfig::default()).await?;
//! let bound = async {
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//!     let address = listener.local_addr()?;
//!     Ok((listener, address))
//! };
//! let (listener, address) = bound
//!     .await
//!     .map_err(|source| shardlite::Error::Io { what: "the listen address".into(), source })?;
//! println!("listening on http://{address}");
//! server::run(listener, state, async {
//!     let _ = tokio::signal::ctrl_c().await;
//! })
//! .await?;
//! # Ok(()) }
//! ```

pub mod admin;
mod atomic_participants;
mod atomic_transactions;
mod backups;
mod config;
mod counters;
pub mod grpc;
pub mod health;
pub mod host;
mod in_transaction;
pub mod keys;
mod limits;
pub mod lookup;
pub mod metrics;
pub mod operations;
mod reload;
mod remote_transactions;
pub mod rest;
pub mod sql_access;
mod state;
pub mod tls;
mod unread_body;

use std::future::Future;

use axum::extract::Request;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt as _;

pub use config::ServerConfig;
pub use counters::{RequestCounts, Surface};
pub use host::ShardHost;
pub use reload::reload_api_keys_on_sighup;
pub use state::{Backend, KEYSPACE_HEADER, SHARD_KEY_HEADER, ServerState, Target};
pub use tls::{ServerTls, TlsFiles};

use crate::error::{Error, Result};

/// Serves REST and gRPC on `listener` until `shutdown` completes.
///
/// Shutdown is graceful: the listener stops accepting, requests in flight finish, and then every
/// remote transaction still open is rolled back (see [`ServerState::close`]) before this returns.
pub async fn run(
    listener: tokio::net::TcpListener,
    state: ServerState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let address = listen_address(&listener)?;
    // gRPC multiplexes calls on one HTTP/2 connection; with Nagle's algorithm on, a small answer
    // waits until the peer acknowledged the previous one, which caps calls in flight at the
    // pace of delayed acknowledgements. tonic's own server turns it off too.
    let listener = listener.tap_io(|stream| {
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(error = %err, "could not set TCP_NODELAY on a connection");
        }
    });
    serve(listener, address, state, false, shutdown).await
}

/// Serves REST and gRPC over TLS on `listener` until `shutdown` completes, as [`run`] does in
/// plain text. Each connection's handshake uses the configuration `tls` holds at that moment, so
/// a [`ServerTls::reload`] applies to new connections only.
pub async fn run_tls(
    listener: tokio::net::TcpListener,
    tls: ServerTls,
    state: ServerState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let address = listen_address(&listener)?;
    let listener = tls::TlsListener::new(listener, tls).map_err(|source| Error::Io {
        what: "the daemon's listen address".to_owned(),
        source,
    })?;
    serve(listener, address, state, true, shutdown).await
}

fn listen_address(listener: &tokio::net::TcpListener) -> Result<std::net::SocketAddr> {
    listener.local_addr().map_err(|source| Error::Io {
        what: "the daemon's listen address".to_owned(),
        source,
    })
}

async fn serve<L>(
    listener: L,
    address: std::net::SocketAddr,
    state: ServerState,
    tls: bool,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    let app = router(&state)?;
    tracing::info!(
        %address,
        tls,
        sharded = state.sharded().is_some(),
        authenticated = state.config().requires_key(),
        "serving REST and gRPC"
    );
    let summaries = tokio::spawn(log_request_counts(state.clone()));
    let served = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
    summaries.abort();
    tracing::info!(%address, "stopped accepting; requests in flight have finished");
    tracing::info!("served {}", state.request_counts());
    state.close().await;
    served.map_err(|source| Error::Io {
        what: "the daemon's listener".to_owned(),
        source,
    })
}

/// How often the request totals are logged while they change.
const COUNTS_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

/// Logs the request totals at `info` every [`COUNTS_INTERVAL`] in which they changed: what an
/// operator sees instead of a line per request.
async fn log_request_counts(state: ServerState) {
    let mut ticks = tokio::time::interval(COUNTS_INTERVAL);
    ticks.tick().await;
    let mut last = state.request_counts();
    loop {
        ticks.tick().await;
        let now = state.request_counts();
        if now != last {
            tracing::info!("served {now}");
            last = now;
        }
    }
}

/// The service the daemon serves: REST and gRPC on one router, every route behind the request
/// limits ([`ServerConfig::max_concurrent_requests`] and [`ServerConfig::request_timeout`]).
///
/// Fails when the configuration is unusable (an invalid API-key header name, a blank API key, a
/// limit of zero).
pub fn router(state: &ServerState) -> Result<axum::Router> {
    state.config().validate()?;
    // Any fallback of the gRPC routes is dropped, so this one serves both protocols.
    let grpc = grpc::routes(state.clone()).reset_fallback();
    let fallback_state = state.clone();
    let drain_budget = unread_body::drain_budget(state.config().body_limit);
    Ok(rest::router(state)?
        // The admin page is served without the API key; the API calls it makes need it. So are
        // the health probes, which load balancers call.
        .merge(admin::routes())
        .merge(health::routes(state.clone()))
        .merge(grpc)
        .fallback(move |request: Request| fallback(fallback_state.clone(), request))
        .layer(limits::RequestLimitLayer::new(state.config()))
        // Outermost, so that a body dropped by any refusal, `busy` included, is still read.
        .layer(axum::middleware::map_request(move |request: Request| async move {
            unread_body::keep_unread_body(request, drain_budget)
        })))
}

async fn fallback(state: ServerState, request: Request) -> Response {
    let is_grpc = request
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/grpc"));
    if is_grpc {
        let status = tonic::Status::unimplemented(format!("no gRPC method at {}", request.uri().path()));
        return status.into_http::<axum::body::Body>().into_response();
    }
    rest::not_found(&state, &request)
}
