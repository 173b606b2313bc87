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
//! data client comes from [`for_route`](ShardedClient::for_route); the sharded client hands out
//! the rest as parts, one type each: [`Shards`] (health, counts summed over every shard, heat),
//! [`ShardedQuery`] (SQL on every shard), [`ShardedCatalog`] (catalog updates and activation),
//! [`ShardedSchema`] (schema migrations) and [`ShardedTransactions`] (transaction calls routed by
//! the id alone). It implements the operator contract, [`ShardAdmin`], in-process, as the HTTP
//! and gRPC clients do over the network.
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
pub use sharded::{
    AtomicRecovery, AtomicResolution, AtomicStep, AtomicStepHook, AtomicTransaction, ShardedCatalog, ShardedClient,
    ShardedClientOptions, ShardedDirectories, ShardedQuery, ShardedSchema, ShardedTransaction, ShardedTransactions,
    Shards, UnresolvedAtomic, UnresolvedState,
};

// The data model, re-exported so that code using a client needs one import path.
pub use crate::data::{
    CatalogAdmin, CatalogHistoryEntry, CatalogState, ColumnInfo, DataClient, DatabaseInfo, Document, DocumentData,
    DocumentPage, FanOut, FromValue, Params, ProcedureDefinition, ProcedureParameter, Row, RowData, RowPage, RowRef,
    SavedQuery, SchemaAdmin, ShardAdmin, ShardSqlResult, ShardStatus, SqlData, SqlResult, StoredData, TableSchema,
    Topology, TransactionData, TransactionInfo, TransactionOptions, Value, ValueRef,
};
