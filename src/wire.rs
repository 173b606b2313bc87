//! The names both ends of the network agree on: route headers and gRPC metadata keys, the
//! default API-key header, error trailers, and (feature `grpc`) the protobuf messages and
//! service stubs generated from `proto/shardlite.proto`.
//!
//! They live here, below the daemon that reads them and the clients that send them, so the two
//! cannot drift apart.

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
/// HTTP header naming the shard a request addresses on a data host (a daemon started with
/// `serve --shard-dir`); gRPC sends it lower-cased as metadata ([`SHARD_METADATA`]).
pub const SHARD_HEADER: &str = "X-Shardlite-Shard";
/// gRPC metadata key naming the shard a call addresses on a data host (the `X-Shardlite-Shard`
/// header, lower-cased).
pub const SHARD_METADATA: &str = "x-shardlite-shard";
/// gRPC trailer carrying the [`ErrorKind::code`](crate::ErrorKind::code) of a failed call.
pub const ERROR_CODE_METADATA: &str = "shardlite-error-code";
/// gRPC trailer carrying the SQLite extended result code of a failed SQL call, in decimal.
pub const SQLITE_CODE_METADATA: &str = "shardlite-sqlite-code";
/// The header (gRPC: lower-cased metadata key) carrying the API key, unless configured otherwise.
pub const DEFAULT_API_KEY_HEADER: &str = "X-CSharpDB-Api-Key";

/// The messages and the client and server stubs generated from `proto/shardlite.proto`.
#[cfg(feature = "grpc")]
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("shardlite.v1");

    /// The encoded `FileDescriptorSet` of `proto/shardlite.proto`: the service's methods and
    /// messages, for reflection and for tests that must cover every method.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/shardlite_descriptor.bin"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_keys_are_the_lower_cased_headers() {
        assert_eq!(KEYSPACE_METADATA, KEYSPACE_HEADER.to_ascii_lowercase());
        assert_eq!(SHARD_KEY_METADATA, SHARD_KEY_HEADER.to_ascii_lowercase());
        assert_eq!(KEYSPACE_METADATA_BIN, format!("{KEYSPACE_METADATA}-bin"));
        assert_eq!(SHARD_KEY_METADATA_BIN, format!("{SHARD_KEY_METADATA}-bin"));
        assert_eq!(SHARD_METADATA, SHARD_HEADER.to_ascii_lowercase());
    }
}
