//! The storage engine: the only module that calls rusqlite.
//!
//! A [`Database`] serves one SQLite file in WAL mode with `synchronous=NORMAL`, foreign keys
//! on and a busy timeout: a writer thread owns the read-write connection (so writes are
//! serialised and never fight over the lock), reader threads own read-only connections
//! (`SQLITE_OPEN_READ_ONLY` and `PRAGMA query_only`), and each open transaction owns a
//! connection on a thread of its own, as does each [`DedicatedConnection`] (a connection one caller
//! keeps for itself). Async callers reach them over channels, so blocking
//! SQLite calls never run on the async runtime. Connections cache prepared statements.
//!
//! For migrations, `copy` copies and checksums pages between two files inside SQLite, and
//! `checksum` is the canonical row encoding those checksums hash.

pub(crate) mod checksum;
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
mod inline;
pub mod merge;
mod open;
mod script;
mod session;
mod sqlite_error;
pub(crate) mod store;
mod value;

pub use database::{Database, EngineConfig, MAX_INLINE_READ_BUDGET};
pub(crate) use database::{Role, is_storage_failure};
pub use dedicated::{BeginMode, DedicatedConnection};
pub(crate) use fence_upkeep::unix_ms_now;
pub(crate) use inline::Here;
pub(crate) use script::require_single_statement;
pub use session::SessionInfo;
pub use store::{INTERNAL_PREFIX, MAX_PAGE_SIZE};
