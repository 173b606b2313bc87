//! A real daemon on `127.0.0.1:0` for integration tests (REST and gRPC share its port).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Once;

use shardlite::map::ShardDefinition;
use shardlite::server::{self, KEYSPACE_HEADER, SHARD_KEY_HEADER, ServerConfig, ServerState, ServerTls};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running daemon. Dropping it stops it; [`Daemon::stop`] stops it and waits until every
/// request finished and open transactions were rolled back.
pub struct Daemon {
    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub base_url: String,
    /// The bound address.
    pub addr: SocketAddr,
    /// The state it serves (to reload its keys, read its counters).
    pub state: ServerState,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<shardlite::Result<()>>>,
}

impl Daemon {
    /// `base_url` + `path` (`path` starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Stops accepting, lets requests in flight finish, rolls back open transactions, and
    /// returns what `server::run` returned.
    pub async fn stop(mut self) -> shardlite::Result<()> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        match self.task.take() {
            Some(task) => task.await.expect("daemon task panicked"),
            None => Ok(()),
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Starts `server::run` with `state` on `127.0.0.1:0`.
pub async fn start_daemon(state: ServerState) -> Daemon {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("bound address");
    let (shutdown, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server::run(listener, state.clone(), async move {
        let _ = stopped.await;
    }));
    Daemon {
        base_url: format!("http://{addr}"),
        addr,
        state,
        shutdown: Some(shutdown),
        task: Some(task),
    }
}

/// Starts `server::run_tls` with `state` and `tls` on `127.0.0.1:0`; `base_url` is
/// `https://127.0.0.1:PORT`.
pub async fn start_tls_daemon(state: ServerState, tls: ServerTls) -> Daemon {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("bound address");
    let (shutdown, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server::run_tls(listener, tls, state.clone(), async move {
        let _ = stopped.await;
    }));
    Daemon {
        base_url: format!("https://{addr}"),
        addr,
        state,
        shutdown: Some(shutdown),
        task: Some(task),
    }
}

/// Opens `master` (sharded when it has a map, plain otherwise) and starts a daemon on it.
pub async fn start_daemon_on(master: &Path, config: ServerConfig) -> Daemon {
    let state = ServerState::open(master, config).await.expect("open the master");
    start_daemon(state).await
}

/// An HTTP client for the daemon (plain HTTP on loopback; see `tls` for HTTPS).
pub fn http_client() -> reqwest::Client {
    install_crypto_provider();
    reqwest::Client::builder().no_proxy().build().expect("http client")
}

/// Installs rustls' ring provider for reqwest, once per process.
pub fn install_crypto_provider() {
    static PROVIDER: Once = Once::new();
    PROVIDER.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Sends both route headers for `key` in keyspace `tenants`.
pub fn routed(request: reqwest::RequestBuilder, key: &str) -> reqwest::RequestBuilder {
    request.header(KEYSPACE_HEADER, "tenants").header(SHARD_KEY_HEADER, key)
}

/// The URL of `action` on transaction `id` (percent-encoded: ids hold `:`).
pub fn tx_url(daemon: &Daemon, id: &str, action: &str) -> String {
    let encoded: String = id
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    daemon.url(&format!("/api/transactions/{encoded}/{action}"))
}

/// Shard `shard_id` of a map, served by `daemon` over `transport` (`Http` or `Grpc`).
pub fn remote_shard(shard_id: &str, daemon: &Daemon, transport: &str) -> ShardDefinition {
    let mut shard = ShardDefinition::local(shard_id, "");
    shard.data_source = None;
    shard.endpoint = Some(daemon.base_url.clone());
    shard.transport = Some(transport.to_owned());
    shard
}

/// Serves `state`'s `/metrics` on `127.0.0.1:0` (until the test's runtime ends) and returns its URL.
pub async fn start_metrics(state: &ServerState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("bound address");
    tokio::spawn(server::metrics::serve(listener, state.clone(), std::future::pending()));
    format!("http://{addr}/metrics")
}
