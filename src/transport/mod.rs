//! Remote clients: the same [`DataClient`](crate::data::DataClient) and
//! [`ShardAdmin`](crate::data::ShardAdmin) interfaces as in-process, over the network to a
//! `shardlite serve` daemon.
//!
//! - [`grpc`] (feature `grpc`): [`GrpcClient`](grpc::GrpcClient), a tonic client of the
//!   `shardlite.v1.Shardlite` service in `proto/shardlite.proto`.
//! - [`http`] (feature `http`): [`HttpClient`](http::HttpClient), a REST client of the same daemon.
//!
//! Both begin atomic transactions across a daemon's shards ([`atomic`]).
//!
//! Both take the same [`RemoteOptions`]: endpoint, route, API key and header, timeouts, and for
//! `https://` endpoints the CA to trust and a client certificate ([`tls`] reads and checks the
//! PEM files and names the cause of a failed handshake).
//!
//! The route of a route-bound client travels on every call as the headers (HTTP) or metadata
//! (gRPC, lower-cased) named below; errors the daemon reports come back as
//! [`Error::Remote`](crate::Error::Remote) carrying the daemon's [`ErrorKind`](crate::ErrorKind),
//! and a daemon that cannot be reached in time is [`Error::Transport`](crate::Error::Transport).
//! The wire names are in [`crate::wire`], shared with the daemon.

#[cfg(any(feature = "http", feature = "grpc"))]
pub mod atomic;
#[cfg(feature = "grpc")]
pub mod grpc;
#[cfg(feature = "http")]
pub mod http;
mod options;
#[cfg(any(feature = "http", feature = "grpc"))]
mod probe;
pub mod tls;

#[cfg(any(feature = "http", feature = "grpc"))]
pub use atomic::{RemoteAtomicTransaction, RoutedCalls};
pub use options::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_MESSAGE_SIZE, DEFAULT_REQUEST_TIMEOUT, RemoteOptions};

/// Refuses a read-only transaction on another daemon: the wire has no way to ask for one (a
/// daemon begins one for a key holding `read` alone), and beginning an ordinary one instead would
/// let it write.
#[cfg(any(feature = "http", feature = "grpc"))]
fn check_transaction_options(options: crate::data::TransactionOptions) -> crate::Result<()> {
    if options.read_only {
        return Err(crate::Error::invalid_argument(
            "transaction options",
            "a read-only transaction cannot be begun on a shard that another daemon serves",
        ));
    }
    Ok(())
}
