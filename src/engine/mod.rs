//! The storage engine: the only module that calls rusqlite.
//!
//! A [`Database`] serves one SQLite file in WAL mode with `synchronous=NORMAL`, foreign keys
//! on and a busy timeout: one read-write connection runs the writes in order (so they are
//! serialised and never fight over the lock), read-only connections run the reads
//! (`SQLITE_OPEN_READ_ONLY` and `PRAGMA query_only`), both on the process's bounded pool of
//! worker threads, and each open transaction owns a connection on a thread of its own, as does
//! each [`DedicatedConnection`] (a connection one caller keeps for itself). Blocking SQLite calls
//! never run on the async runtime. Connections cache prepared statements.
//!
//! A file opens on first use and closes after an idle time; the files open at once are bounded
//! per [`OpenShards`] set ([`EngineConfig::max_open_shards`]), so a map of ten thousand shards
//! costs threads, descriptors and memory for the shards in use only.
//!
//! ## One home per type
//!
//! `impl Database` is in one file, `database.rs`: opening, life (open, idle, closed), SQL
//! execution, and accessors to its parts. Each part is a type of its own in a file of its own,
//! a cheap view of the `Database` it came from:
//!
//! - [`Tables`] (`store/tables.rs`): user tables row by row by primary key
//!   ([`Database::tables`]).
//! - [`Collections`] (`store/collections.rs`): JSON documents by key
//!   ([`Database::collections`]).
//! - [`SavedQueries`] (`store/saved_queries.rs`) and [`Procedures`] (`store/procedures.rs`):
//!   named SQL kept in the file ([`Database::saved_queries`], [`Database::procedures`]).
//! - [`Sessions`] (`session.rs`): explicit transactions, each on a connection of its own
//!   ([`Database::sessions`]); the file's session table is `session::SessionTable`.
//! - Inside the crate, the data-move half of the engine lives in `reshard/`: `reshard::copy::Moves`
//!   (`reshard/copy/moves.rs`), a data move's page copies, copy cursors and page checksums on the
//!   file (`Database::moves`), beside what those jobs read and write, `checksum` the canonical row
//!   encoding the checksums hash, `capture` the change-capture triggers, `fence` the route fences
//!   and `fence_upkeep` their tidying.
//!
//! What every handle of one file shares (path, settings, open state, sessions) is
//! `lifecycle::Shared`; SQLite's errors become the crate's in one file, `sqlite_error.rs`. The
//! merge of partial rows of a query across shards (`merge`) runs in a private in-memory
//! database here too: the `query` module plans it (the partial table, its columns and their
//! collations) and the sharded client asks for it. Quoting and the internal tables' names come
//! from `sql`, the settings and limits from `config.rs`.
//!
//! Everything but [`Database`], its parts and its settings is crate-private.

pub mod archive;
pub(crate) mod atomic;
#[cfg(test)]
mod atomic_open_tests;
pub mod backup;
mod checkpoint;
mod config;
pub mod cut;
mod database;
mod dedicated;
mod guard;
#[cfg(test)]
mod guard_tests;
mod hold;
mod identity;
mod image;
mod inline;
mod lane;
mod lifecycle;
pub(crate) mod merge;
mod open;
pub(crate) mod reshard;
mod script;
mod session;
mod shelf;
mod sqlite_error;
pub(crate) mod store;
mod value;
mod workers;

pub use atomic::{Atomic, AtomicIntent, Decision, DecisionState, Finished};
pub use config::{
    AtomicOpenHook, DESCRIPTORS_PER_OPEN_SHARD, EngineConfig, MAX_INLINE_READ_BUDGET, default_max_open_shards,
    descriptor_limit, raise_descriptor_limit,
};
pub use database::Database;
pub use dedicated::{BeginMode, DedicatedConnection};
pub use session::{SessionInfo, Sessions};
pub use shelf::OpenShards;
pub use store::{Collections, Procedures, SavedQueries, Tables};

pub(crate) use image::empty_shard_image;
pub(crate) use inline::Here;
pub(crate) use lifecycle::Pin;
pub(crate) use open::Role;
pub(crate) use reshard::fence_upkeep::unix_ms_now;
pub(crate) use script::require_single_statement;
pub(crate) use sqlite_error::catalog_unreadable;
