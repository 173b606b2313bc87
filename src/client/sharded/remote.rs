//! Shards that are not local files: a daemon named by `endpoint`, or a connection string.

use std::path::PathBuf;
use std::sync::Arc;

use super::generation::ShardSlot;
use crate::client::LocalClient;
use crate::engine::EngineConfig;

/// A shard served by another daemon (one plain database behind it).
pub(super) struct RemoteShard {
    endpoint: String,
    transport: crate::map::Transport,
    pub(super) api_key: Option<crate::map::Secret>,
    pub(super) api_key_header: Option<String>,
    connect_timeout: Option<std::time::Duration>,
    request_timeout: Option<std::time::Duration>,
}

impl RemoteShard {
    pub(super) fn new(endpoint: String, transport: crate::map::Transport) -> Self {
        Self {
            endpoint,
            transport,
            api_key: None,
            api_key_header: None,
            connect_timeout: None,
            request_timeout: None,
        }
    }

    /// A client for the shard's daemon. Remote clients connect lazily, so an unreachable daemon
    /// does not stop the others from opening: it shows as unhealthy in status and its routes fail
    /// with a transport error naming the endpoint.
    #[cfg(any(feature = "grpc", feature = "http"))]
    pub(super) fn open(self) -> ShardSlot {
        use crate::data::DataClient;
        use crate::error::{Error, Result};
        use crate::map::Transport;
        use crate::transport::RemoteOptions;

        let mut options = RemoteOptions::new(self.endpoint);
        if let Some(key) = self.api_key {
            options = options.with_api_key(key.expose());
        }
        if let Some(header) = self.api_key_header {
            options = options.with_api_key_header(header);
        }
        if let Some(timeout) = self.connect_timeout {
            options = options.with_connect_timeout(timeout);
        }
        if let Some(timeout) = self.request_timeout {
            options = options.with_request_timeout(timeout);
        }
        let client: Result<Arc<dyn DataClient>> = match self.transport {
            #[cfg(feature = "grpc")]
            Transport::Grpc => crate::transport::grpc::GrpcClient::new(options).map(|c| Arc::new(c) as _),
            #[cfg(feature = "http")]
            Transport::Http => crate::transport::http::HttpClient::new(options).map(|c| Arc::new(c) as _),
            other => Err(Error::invalid_argument(
                "transport",
                format!("remote shards over {} need a build with that feature", other.as_str()),
            )),
        };
        match client {
            Ok(client) => ShardSlot::Ready { client, local: None },
            Err(err) => ShardSlot::Unavailable(err.to_string()),
        }
    }

    #[cfg(not(any(feature = "grpc", feature = "http")))]
    pub(super) fn open(self) -> ShardSlot {
        ShardSlot::Unavailable(format!(
            "the shard at {} is reached over {}, which needs a build with the '{}' feature",
            self.endpoint,
            self.transport.as_str(),
            self.transport.as_str()
        ))
    }
}

/// Opens a shard defined by a connection string. A `Data Source` is opened in-process, at the
/// file `locate` gives for it (relative paths are relative to the master's folder); the string's
/// busy, command and transaction timeouts override the map-wide settings.
pub(super) async fn open_connection_string_shard(
    shard_id: &str,
    secret: &crate::map::Secret,
    engine: EngineConfig,
    locate: impl Fn(&str) -> PathBuf,
) -> ShardSlot {
    // Parse errors name the key but never echo the secret itself.
    let options = match crate::options::ConnectionOptions::parse(secret.expose()) {
        Ok(options) => options,
        Err(err) => return ShardSlot::Unavailable(err.to_string()),
    };
    if options.route().is_some() {
        return ShardSlot::Unavailable(
            "a shard's connection string must not carry Shard Keyspace/Shard Key: the map routes to it".to_owned(),
        );
    }
    let Some(path) = options.data_source() else {
        let (Some(endpoint), Some(transport)) = (options.endpoint(), options.transport()) else {
            return ShardSlot::Unavailable("the connection string names neither Data Source nor Endpoint".to_owned());
        };
        let mut remote = RemoteShard::new(endpoint.to_owned(), transport);
        remote.api_key = options.api_key().cloned();
        remote.api_key_header = options.api_key_header().map(str::to_owned);
        remote.connect_timeout = options.connect_timeout();
        remote.request_timeout = options.command_timeout();
        return remote.open();
    };
    let engine = crate::client::engine_config_for(&options, engine);
    match LocalClient::lazy(locate(path), shard_id.to_owned(), engine) {
        Ok(local) => ShardSlot::Ready {
            client: Arc::new(local.clone()),
            local: Some(local),
        },
        Err(err) => ShardSlot::Unavailable(err.to_string()),
    }
}
