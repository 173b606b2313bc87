//! The data-operation interface and its in-process implementations.
//!
//! [`DataClient`] is the one interface every way of reaching data implements: the
//! [`LocalClient`] over one SQLite file, the route-bound [`RoutedClient`] returned by
//! [`ShardedClient::for_route`], and (with their features) the HTTP and gRPC clients. Code
//! written against `dyn DataClient` works unchanged in-process and over the network.
//!
//! Callers without an async runtime use [`blocking::ShardedClient`], which runs SQL on local
//! shards on the calling thread.

pub mod blocking;
mod dedicated;
mod forward;
mod local;
mod local_forward;
mod routed;
mod sharded;

pub use dedicated::DedicatedClient;
pub use local::LocalClient;
pub(crate) use local::engine_config_for;
pub use routed::RoutedClient;
pub use sharded::{ShardedClient, ShardedClientOptions, ShardedTransaction};

// The data model, re-exported so that code using a client needs one import path.
pub use crate::data::{
    CatalogHistoryEntry, CatalogState, ColumnInfo, DataClient, DatabaseInfo, Document, DocumentPage, FromValue, Params,
    ProcedureDefinition, ProcedureParameter, Row, RowPage, RowRef, SavedQuery, ShardAdmin, ShardSqlResult, ShardStatus,
    SqlResult, TableSchema, TransactionInfo, TransactionOptions, Value, ValueRef,
};
