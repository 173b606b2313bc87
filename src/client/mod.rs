//! The data-operation interface and its in-process implementations.
//!
//! [`DataClient`] is the one data contract every way of reaching data implements: the
//! [`LocalClient`] over one SQLite file, the route-bound [`RoutedClient`] returned by
//! [`ShardedClient::for_route`], the [`DedicatedClient`], and (with their features) the HTTP and
//! gRPC clients. Code written against `dyn DataClient` works unchanged in-process and over the
//! network. The contract is made of five parts, each a trait to bring into scope for its methods
//! and to ask for alone where that is all a function needs: [`SqlData`], [`RowData`],
//! [`DocumentData`], [`StoredData`] and [`TransactionData`].
//!
//! A [`ShardedClient`] is not a data client: it serves many shards and has no route. A route's
//! data client comes from [`for_route`](ShardedClient::for_route); the sharded client itself sums
//! counts over every shard with [`info`](ShardedClient::info) and runs transaction calls routed by
//! the id alone ([`commit_transaction`](ShardedClient::commit_transaction) and its siblings).
//!
//! Callers without an async runtime use [`blocking::ShardedClient`], which runs SQL on local
//! shards on the calling thread.

pub mod blocking;
mod dedicated;
mod engine;
mod forward;
mod local;
mod routed;
mod sharded;

pub use dedicated::DedicatedClient;
pub use local::LocalClient;
pub(crate) use local::engine_config_for;
pub use routed::RoutedClient;
pub use sharded::{ShardedClient, ShardedClientOptions, ShardedTransaction};

// The data model, re-exported so that code using a client needs one import path.
pub use crate::data::{
    CatalogHistoryEntry, CatalogState, ColumnInfo, DataClient, DatabaseInfo, Document, DocumentData, DocumentPage,
    FromValue, Params, ProcedureDefinition, ProcedureParameter, Row, RowData, RowPage, RowRef, SavedQuery, ShardAdmin,
    ShardSqlResult, ShardStatus, SqlData, SqlResult, StoredData, TableSchema, TransactionData, TransactionInfo,
    TransactionOptions, Value, ValueRef,
};
