//! The daemon: REST and gRPC on one port.
//!
//! [`run`] takes a bound listener, the shared [`ServerState`] and a shutdown future, so tests
//! start it on `127.0.0.1:0` and the CLI on the configured address.

pub mod grpc;
pub mod rest;
mod state;

pub use state::{Backend, KEYSPACE_HEADER, SHARD_KEY_HEADER, ServerConfig, ServerState};
