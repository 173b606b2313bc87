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
//! For migrations, `copy` copies and checksums pages between two files inside SQLite, and
//! `checksum` is the canonical row encoding those checksums hash.

pub(crate) mod capture;
pub(crate) mod checksum;
mod config;
pub(crate) mod copy;
mod database;
mod dedicated;
pub(crate) mod fence;
mod fence_upkeep;
mod guard;
#[cfg(test)]
mod guard_tests;
mod hold;
mod identity;
mod image;
mod inline;
mod lane;
mod lifecycle;
pub mod merge;
mod open;
mod script;
mod session;
mod shelf;
mod sqlite_error;
pub(crate) mod store;
mod value;
mod workers;

pub use config::{
    DESCRIPTORS_PER_OPEN_SHARD, EngineConfig, MAX_INLINE_READ_BUDGET, default_max_open_shards, descriptor_limit,
    raise_descriptor_limit,
};
pub use database::Database;
pub(crate) use database::{Role, is_storage_failure};
pub(crate) use image::empty_shard_image;
pub(crate) use lifecycle::Pin;
pub use shelf::OpenShards;

pub use dedicated::{BeginMode, DedicatedConnection};
pub(crate) use fence_upkeep::unix_ms_now;
pub(crate) use inline::Here;
pub(crate) use script::require_single_statement;
pub use session::SessionInfo;
pub use store::{INTERNAL_PREFIX, MAX_PAGE_SIZE};
