//! Remote clients: the same [`DataClient`](crate::client::DataClient) and
//! [`ShardAdmin`](crate::client::ShardAdmin) interfaces as in-process, over the network to a
//! `shardlite serve` daemon.
//!
//! - [`grpc`] (feature `grpc`): [`GrpcClient`](grpc::GrpcClient), a tonic client of the
//!   `shardlite.v1.Shardlite` service in `proto/shardlite.proto`.
//! - [`http`] (feature `http`): [`HttpClient`](http::HttpClient), a REST client of the same daemon.
//!
//! Both take the same [`RemoteOptions`]: endpoint, route, API key and header, timeouts.
//!
//! The route of a route-bound client travels on every call as the headers (HTTP) or metadata
//! (gRPC, lower-cased) named below; errors the daemon reports come back as
//! [`Error::Remote`](crate::Error::Remote) carrying the daemon's [`ErrorKind`](crate::ErrorKind),
//! and a daemon that cannot be reached in time is [`Error::Transport`](crate::Error::Transport).
//! The wire names live here, in one place, so the daemon and the clients cannot drift apart.

#[cfg(feature = "grpc")]
pub mod grpc;
#[cfg(feature = "http")]
pub mod http;
mod options;

pub use options::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_MESSAGE_SIZE, DEFAULT_REQUEST_TIMEOUT, RemoteOptions};

/// HTTP header carrying the route keyspace (gRPC uses it lower-cased as metadata).
pub const KEYSPACE_HEADER: &str = "X-CSharpDB-Keyspace";
/// HTTP header carrying the route key (gRPC uses it lower-cased as metadata).
pub const SHARD_KEY_HEADER: &str = "X-CSharpDB-Shard-Key";
/// gRPC metadata key carrying the route keyspace (the `X-CSharpDB-Keyspace` header, lower-cased).
pub const KEYSPACE_METADATA: &str = "x-csharpdb-keyspace";
/// gRPC metadata key carrying the route key (the `X-CSharpDB-Shard-Key` header, lower-cased).
pub const SHARD_KEY_METADATA: &str = "x-csharpdb-shard-key";
/// Binary gRPC metadata key carrying a keyspace that is not printable ASCII, as UTF-8 bytes.
pub const KEYSPACE_METADATA_BIN: &str = "x-csharpdb-keyspace-bin";
/// Binary gRPC metadata key carrying a route key that is not printable ASCII, as UTF-8 bytes.
pub const SHARD_KEY_METADATA_BIN: &str = "x-csharpdb-shard-key-bin";
/// gRPC trailer carrying the [`ErrorKind::code`](crate::ErrorKind::code) of a failed call.
pub const ERROR_CODE_METADATA: &str = "shardlite-error-code";
/// gRPC trailer carrying the SQLite extended result code of a failed SQL call, in decimal.
pub const SQLITE_CODE_METADATA: &str = "shardlite-sqlite-code";

#[cfg(all(test, feature = "server"))]
mod tests {
    use super::*;
    use crate::server::{KEYSPACE_HEADER, SHARD_KEY_HEADER};

    #[test]
    fn metadata_keys_are_the_lower_cased_headers() {
        assert_eq!(KEYSPACE_METADATA, KEYSPACE_HEADER.to_ascii_lowercase());
        assert_eq!(SHARD_KEY_METADATA, SHARD_KEY_HEADER.to_ascii_lowercase());
    }
}
