//! # shardlite
//!
//! Application-level sharding for SQLite. A **master catalog** (one SQLite file) holds a
//! versioned **shard map**; every data shard is an ordinary SQLite file. Applications name a
//! business route (keyspace `orders_by_month`, key `2026-06`) and shardlite resolves it,
//! through SHA-256 virtual buckets and operator pins, to exactly one shard.
//!
//! ```
//! use shardlite::map::ShardMap;
//!
//! let map = ShardMap::from_json(r#"{
//!     "keyspace": "orders_by_month",
//!     "virtualBucketCount": 16,
//!     "shards": [
//!         { "shardId": "shard-0", "dataSource": "shard-0.db" },
//!         { "shardId": "shard-1", "dataSource": "shard-1.db" }
//!     ],
//!     "bucketRanges": [
//!         { "startBucketInclusive": 0, "endBucketExclusive": 8, "shardId": "shard-0" },
//!         { "startBucketInclusive": 8, "endBucketExclusive": 16, "shardId": "shard-1" }
//!     ]
//! }"#)?;
//! let resolution = map.resolve("orders_by_month", "2026-06")?;
//! assert_eq!(resolution.bucket, 15);
//! assert_eq!(resolution.shard_id, "shard-1");
//! # Ok::<(), shardlite::Error>(())
//! ```
//!
//! ## Layout
//!
//! Lowest layer first: each module uses only modules listed before it, so a type lives on the
//! lowest rung that needs it.
//!
//! - [`error`]: the crate's [`Error`] (40 bytes: payloads of more than one string are boxed) and
//!   [`ErrorKind`], and [`MapError`](error::MapError).
//! - `sql` (crate-internal): reading SQL text without running it: where statements end and what
//!   each one is; and the one definition of SQL quoting and of the names shardlite reserves in a
//!   shard file (`_shardlite_*`). The engine, query, schema, driver and client all use it; it
//!   uses only `error`.
//! - [`wire`]: route header and metadata names, the default API-key header, error trailers, and
//!   (feature `grpc`) the protobuf types generated from `proto/shardlite.proto`.
//! - [`map`]: the shard-map JSON model, its validation and secret-free snapshots.
//! - [`routing`]: route normalisation, canonical text, token, bucket and resolution: the
//!   persisted-format contract.
//! - [`heat`]: decaying request and row counters per bucket and for the hottest route keys
//!   (bounded memory whatever the key count), the heat report, and the next map that evens the
//!   load (`shardlite stats suggest`).
//! - [`transaction`]: shard-prefixed transaction ids.
//! - [`options`]: connection strings (ADO.NET and URL forms).
//! - [`data`]: the value model, parameters, results, rows, documents, schema and status types, and
//!   the [`DataClient`](data::DataClient) contract (its parts [`SqlData`](data::SqlData),
//!   [`RowData`](data::RowData), [`DocumentData`](data::DocumentData),
//!   [`StoredData`](data::StoredData) and [`TransactionData`](data::TransactionData)) and the
//!   [`ShardAdmin`](data::ShardAdmin) contract, made the same way of four parts:
//!   [`Topology`](data::Topology), [`FanOut`](data::FanOut), [`CatalogAdmin`](data::CatalogAdmin)
//!   and [`SchemaAdmin`](data::SchemaAdmin).
//! - [`directory`]: shard directories: checking that every entry's route resolves to its shard,
//!   resolving a lookup key on a map, and planning an entry change (the catalog writes it).
//! - [`query`]: queries across shards: one `SELECT` read with `sqlparser`, run on every shard
//!   as partial results and merged by SQLite in memory. The merge's model (the partial table and
//!   its columns' collations) is planned here; the engine only executes it.
//! - `transport` (features `grpc`, `http`): the remote clients, `GrpcClient` and `HttpClient`,
//!   implementing the same interfaces over the network, plain or over TLS (`transport::tls`).
//! - [`engine`]: the only module that calls rusqlite. [`Database`](engine::Database) (one file,
//!   `engine/database.rs`) opens a file, runs its SQL on the writer, readers, caller's task or
//!   calling thread, and hands out its parts, one type and file each:
//!   [`Tables`](engine::Tables), [`Collections`](engine::Collections),
//!   [`SavedQueries`](engine::SavedQueries), [`Procedures`](engine::Procedures),
//!   [`Sessions`](engine::Sessions) (transactions), and inside the crate a data move's copies
//!   and checksums. Script execution is `engine/script.rs`; SQLite's errors become the crate's in
//!   one file, `engine/sqlite_error.rs`; the rest of the engine (the execution of a merge
//!   across shards among it) is crate-private.
//! - [`catalog`]: the master catalog that owns the active map, pending map and history, in a
//!   store behind one crate-private trait (`CatalogStore`: maps, history, data-move records,
//!   runner claims and watches), implemented by the SQLite master file and by etcd.
//! - [`schema`]: sqlx-style migration folders applied to a database through its client, schema
//!   fingerprints, and drift between shards.
//! - [`client`]: the in-process clients: [`LocalClient`](client::LocalClient), the
//!   [`ShardedClient`](client::ShardedClient) (one file, `client/sharded/mod.rs`) and the parts it
//!   hands out, one type and file each: [`Shards`](client::Shards),
//!   [`ShardedQuery`](client::ShardedQuery), [`ShardedCatalog`](client::ShardedCatalog),
//!   [`ShardedSchema`](client::ShardedSchema) and [`ShardedTransactions`](client::ShardedTransactions)
//!   (the blocking client hands out the same); its route-bound clients and transactions; the
//!   parts of the data contract a client hands to another (its engine handle, a route's shard)
//!   are forwarded by blanket impls (`client/forward.rs`), each call written once.
//! - [`connect`]: opening a connection string, in-process or through a daemon, into a
//!   [`ConnectedClient`](connect::ConnectedClient): an enum of what was opened.
//! - [`paging`]: page fill across route keys, bounded merge, month keys and signed cursors.
//! - [`demo`]: the order-history sample: its map, its orders and the walk-through that
//!   `shardlite demo` and `examples/order_history.rs` run.
//! - [`reshard`]: resharding, verified moves of a route key's or a bucket range's data to another
//!   shard (the wire and the `shardlite migrate` command call them migrations): fences persisted
//!   in the source shard's file, paged copy with checkpoints, verification, resume. The run is
//!   one file per phase (`reshard/run/`: admit, plan, drive, copy, verify, activate).
//! - [`backup`]: backup sets of a whole keyspace, consistent across shards (a short fence keeps
//!   map activations and atomic-commit decisions out while each shard's read snapshot begins),
//!   stored by content so that an unchanged shard is not copied again; verify and restore.
//! - `server` (feature `server`): the daemon: REST and gRPC on one port (plain or TLS,
//!   `server::tls`), one error-to-status function per protocol, `/openapi.json`, and the admin
//!   workspace at `/admin`.
//! - `driver` (feature `sqlx`): the sqlx-core driver, laid out like `sqlx-sqlite`.
//! - `cli` (feature `cli`): the `shardlite` command line; `src/bin/shardlite.rs` only dispatches.
//!
//! ## Features
//!
//! - `cli` (default): the `shardlite` binary.
//! - `server`: the daemon (`shardlite serve`), REST and gRPC on one port; implies `grpc`.
//! - `grpc`, `http`: the remote clients, remote shards and remote connection strings.
//! - `sqlx`: the sqlx driver (`Shardlite`, `ShardliteConnection`, `ShardlitePool`).
//! - `full`: everything.

#![warn(clippy::unwrap_used)]

pub mod backup;
pub mod catalog;
pub mod client;
pub mod connect;
pub mod data;
pub mod demo;
pub mod directory;
#[cfg(feature = "sqlx")]
pub mod driver;
pub mod engine;
pub mod error;
pub mod heat;
pub mod map;
pub mod options;
pub mod paging;
pub mod query;
pub mod reshard;
pub mod routing;
pub mod schema;
#[cfg(feature = "server")]
pub mod server;
pub(crate) mod sql;
pub mod transaction;
#[cfg(any(feature = "grpc", feature = "http"))]
pub mod transport;
pub mod wire;

#[cfg(feature = "cli")]
pub mod cli;

pub use error::{Error, ErrorKind, Result};

/// The SQL reader's entry points the fuzz targets under `fuzz/` exercise. Not part of the API:
/// it may change in any release.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::sql::{
        StatementKind, check_read_only_script, check_script, classify, is_single_statement, statements,
    };
}
pub use map::{ShardMap, ShardingOptions};
pub use routing::{RouteContext, RouteSource, ShardResolution};
