//! Settings shared by the remote clients.

use std::path::Path;
use std::time::Duration;

use super::tls;
use crate::error::{Error, Result};
use crate::map::{Secret, Transport};
use crate::options::ConnectionOptions;
use crate::routing::RouteContext;
use crate::wire::DEFAULT_API_KEY_HEADER;

/// How long connecting may take by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one call (connecting included) may take by default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest message sent or accepted by default (64 MiB).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 64 * 1024 * 1024;

/// Settings of a remote client: the gRPC client (`transport::grpc::GrpcClient`, feature `grpc`) or
/// the REST client (`transport::http::HttpClient`, feature `http`).
///
/// ```
/// use std::time::Duration;
/// use shardlite::transport::RemoteOptions;
/// use shardlite::RouteContext;
///
/// let options = RemoteOptions::new("https://db.internal:61818")
///     .with_route(RouteContext::new("orders_by_month", "2026-06")?)
///     .with_api_key("c2VjcmV0==")
///     .with_request_timeout(Duration::from_secs(10));
/// assert_eq!(options.endpoint(), "https://db.internal:61818");
/// assert!(!format!("{options:?}").contains("c2VjcmV0"));
/// # Ok::<(), shardlite::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    pub(crate) endpoint: String,
    pub(crate) route: Option<RouteContext>,
    pub(crate) shard_id: Option<String>,
    pub(crate) api_key: Option<Secret>,
    pub(crate) api_key_header: String,
    pub(crate) connect_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) ca_certificate_pem: Option<Vec<u8>>,
    /// The client certificate chain and its private key, both PEM, for mTLS.
    pub(crate) client_identity_pem: Option<(Vec<u8>, Secret)>,
    pub(crate) tls_domain_name: Option<String>,
    pub(crate) max_message_size: usize,
}

impl RemoteOptions {
    /// Options for the daemon at `endpoint` (`http://host:port`, or `https://host:port` for
    /// TLS), with default timeouts, no route and no API key.
    ///
    /// A path on the endpoint is ignored: the daemon's REST and gRPC methods live at its root.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            route: None,
            shard_id: None,
            api_key: None,
            api_key_header: DEFAULT_API_KEY_HEADER.to_owned(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            ca_certificate_pem: None,
            client_identity_pem: None,
            tls_domain_name: None,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
        }
    }

    /// Options from a connection string with `Endpoint` and `Transport=Http|Grpc`: its route, API
    /// key (and header), `Connect Timeout` and `Command Timeout` (the request timeout; `0` = no limit),
    /// and the TLS files `Server CA`, `Client Certificate` and `Client Key`, which are read here: a file
    /// that cannot be read or holds no certificate (or key) is refused naming the key and the file.
    pub fn from_connection_options(options: &ConnectionOptions) -> Result<Self> {
        let Some(endpoint) = options.endpoint() else {
            return Err(Error::ConnectionString {
                reason: "a remote connection needs an Endpoint".to_owned(),
            });
        };
        if !matches!(options.transport(), Some(Transport::Grpc | Transport::Http)) {
            return Err(Error::ConnectionString {
                reason: "a remote connection needs Transport=Http or Transport=Grpc".to_owned(),
            });
        }
        let mut grpc = Self::new(endpoint).with_api_key_header(options.api_key_header_or_default());
        if let Some(route) = options.route() {
            grpc = grpc.with_route(route.clone());
        }
        if let Some(key) = options.api_key() {
            grpc = grpc.with_api_key(key.expose());
        }
        if let Some(shard_id) = options.shard_id() {
            grpc = grpc.with_shard_id(shard_id);
        }
        if let Some(timeout) = options.connect_timeout() {
            grpc = grpc.with_connect_timeout(timeout);
        }
        if let Some(timeout) = options.command_timeout() {
            grpc = grpc.with_request_timeout(timeout);
        }
        let tls_file = |key: &str, reason: String| Error::ConnectionString {
            reason: format!("'{key}': {reason}"),
        };
        if let Some(path) = options.server_ca() {
            let pem = tls::read_certificates(Path::new(path)).map_err(|reason| tls_file("Server CA", reason))?;
            grpc = grpc.with_ca_certificate_pem(pem);
        }
        if let (Some(certificate), Some(key)) = (options.client_certificate(), options.client_key()) {
            let certificate = tls::read_certificates(Path::new(certificate))
                .map_err(|reason| tls_file("Client Certificate", reason))?;
            let key = tls::read_private_key(Path::new(key)).map_err(|reason| tls_file("Client Key", reason))?;
            grpc.client_identity_pem = Some((certificate, key));
        }
        Ok(grpc)
    }

    /// Binds the client to a route, sent as header (HTTP) or metadata (gRPC) on every call.
    pub fn with_route(mut self, route: RouteContext) -> Self {
        self.route = Some(route);
        self
    }

    /// Addresses one shard of a data host (a daemon started with `serve --shard-dir`): the id is
    /// sent as the `X-Shardlite-Shard` header (gRPC: `x-shardlite-shard` metadata) on every call.
    pub fn with_shard_id(mut self, shard_id: impl Into<String>) -> Self {
        self.shard_id = Some(shard_id.into());
        self
    }

    /// The API key presented on every call.
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::new(api_key));
        self
    }

    /// The header (HTTP) or metadata key (gRPC, lower-cased) that carries the API key; default
    /// `X-CSharpDB-Api-Key`.
    pub fn with_api_key_header(mut self, header: impl Into<String>) -> Self {
        self.api_key_header = header.into();
        self
    }

    /// How long connecting (TCP and TLS) may take; zero means no separate limit.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long one call, connecting included, may take; zero means no limit.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Trusts the CA certificate(s) in `pem` for `https://` endpoints (for example a private CA).
    pub fn with_ca_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_certificate_pem = Some(pem.into());
        self
    }

    /// Presents a client certificate (for a daemon that requires one, mTLS): the certificate chain
    /// and its private key, both PEM. The key is kept out of `Debug` and of every message.
    pub fn with_client_identity_pem(mut self, certificate_pem: impl Into<Vec<u8>>, key_pem: impl Into<String>) -> Self {
        self.client_identity_pem = Some((certificate_pem.into(), Secret::new(key_pem)));
        self
    }

    /// Verifies the daemon's TLS certificate against `domain` instead of the endpoint's host.
    pub fn with_tls_domain_name(mut self, domain: impl Into<String>) -> Self {
        self.tls_domain_name = Some(domain.into());
        self
    }

    /// The largest gRPC message sent or accepted, in bytes (default 64 MiB).
    pub fn with_max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// The endpoint as given.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The bound route, if any.
    pub fn route(&self) -> Option<&RouteContext> {
        self.route.as_ref()
    }

    /// The data-host shard id sent with every call, if any.
    pub fn shard_id(&self) -> Option<&str> {
        self.shard_id.as_deref()
    }

    /// The connect timeout (zero = no separate limit).
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The request timeout (zero = no limit).
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }
}
