//! Shards that are not local files: a daemon named by `endpoint`, or a connection string.

use std::path::PathBuf;
use std::sync::Arc;

use super::generation::ShardSlot;
use crate::client::LocalClient;
use crate::engine::EngineConfig;

/// A shard served by another daemon, named by an `endpoint` in the map: one plain database behind
/// it, or (with `remoteShardId`) one shard of a data host's folder. An `https://` endpoint is verified against the system's trusted CAs; a private CA or
/// a client certificate is given through a `connectionString` shard (`Server CA=…`).
pub(super) struct RemoteShard {
    endpoint: String,
    transport: crate::map::Transport,
    pub(super) api_key: Option<crate::map::Secret>,
    pub(super) api_key_header: Option<String>,
    /// The shard's id on a data host, sent with every call.
    pub(super) remote_shard_id: Option<String>,
}

impl RemoteShard {
    pub(super) fn new(endpoint: String, transport: crate::map::Transport) -> Self {
        Self {
            endpoint,
            transport,
            api_key: None,
            api_key_header: None,
            remote_shard_id: None,
        }
    }

    /// A client for the shard's daemon. Remote clients connect lazily, so an unreachable daemon
    /// does not stop the others from opening: it shows as unhealthy in status and its routes fail
    /// with a transport error naming the endpoint.
    #[cfg(any(feature = "grpc", feature = "http"))]
    pub(super) fn open(self) -> ShardSlot {
        use crate::transport::RemoteOptions;

        let mut options = RemoteOptions::new(self.endpoint);
        if let Some(key) = self.api_key {
            options = options.with_api_key(key.expose());
        }
        if let Some(header) = self.api_key_header {
            options = options.with_api_key_header(header);
        }
        if let Some(shard_id) = self.remote_shard_id {
            options = options.with_shard_id(shard_id);
        }
        open_remote(options, self.transport)
    }

    #[cfg(not(any(feature = "grpc", feature = "http")))]
    pub(super) fn open(self) -> ShardSlot {
        unavailable_without_feature(&self.endpoint, self.transport)
    }
}

/// A slot for the daemon `options` name, reached over `transport`.
#[cfg(any(feature = "grpc", feature = "http"))]
fn open_remote(options: crate::transport::RemoteOptions, transport: crate::map::Transport) -> ShardSlot {
    use crate::data::DataClient;
    use crate::error::{Error, Result};
    use crate::map::Transport;

    let client: Result<Arc<dyn DataClient>> = match transport {
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
fn unavailable_without_feature(endpoint: &str, transport: crate::map::Transport) -> ShardSlot {
    ShardSlot::Unavailable(format!(
        "the shard at {endpoint} is reached over {}, which needs a build with the '{}' feature",
        transport.as_str(),
        transport.as_str()
    ))
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
        let (Some(_), Some(transport)) = (options.endpoint(), options.transport()) else {
            return ShardSlot::Unavailable("the connection string names neither Data Source nor Endpoint".to_owned());
        };
        // The string's TLS files (Server CA, client certificate) are read here; a file that
        // cannot be read leaves the shard unavailable, naming the key and the file.
        #[cfg(any(feature = "grpc", feature = "http"))]
        return match crate::transport::RemoteOptions::from_connection_options(&options) {
            Ok(remote) => open_remote(remote, transport),
            Err(err) => ShardSlot::Unavailable(err.to_string()),
        };
        #[cfg(not(any(feature = "grpc", feature = "http")))]
        return unavailable_without_feature(options.endpoint().unwrap_or_default(), transport);
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
