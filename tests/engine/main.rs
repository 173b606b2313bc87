//! The library in process, against real SQLite files in a temp dir per test: shard maps and
//! routing (with the golden vectors), connection strings, the catalog, the async and blocking
//! clients, data moves and schema migrations. The `shardlite seed` checks and the driver
//! connection in a child process run built binaries; the rest stays in this process.

#[path = "../support/mod.rs"]
pub mod support;

mod atomic_forget;
mod atomic_open;
mod atomic_participant;
mod atomic_transactions;
mod backup_batches;
mod backup_cut;
mod blocking_client;
mod catalog;
mod catalog_activation;
mod catalog_records;
mod catalog_updates;
mod connect;
mod connection_strings;
mod cross_shard_queries;
mod directories;
mod directory_moves;
mod directory_scale;
mod inline_writes;
mod lookup_connections;
mod many_shards;
mod map_validation;
mod migration_repair;
mod migration_writers;
mod migrations;
mod paging;
mod parity;
mod routing_properties;
mod routing_vectors;
mod schema_migrations;
mod shard_files_compat;
mod sharded_client;
