//! The daemon (feature `server`): REST and gRPC on one port of a real daemon on `127.0.0.1:0`,
//! its limits, the catalog and data moves through it, remote clients and shards served by
//! daemons, and hostile SQL on every surface. Modules that also need a remote client say so.

#[path = "../support/mod.rs"]
pub mod support;

// First by name, so that libtest starts its schemathesis runs (about a minute) before the rest.
mod api_contract;
mod atomic;
mod atomic_crash;
mod atomic_crash_host;
mod atomic_remote;
mod atomic_remote_crash;
mod atomic_stall;
mod backup;
mod backup_rest;
mod catalog_follow;
mod catalog_patch;
mod catalog_remote;
mod catalog_summary;
mod cross_shard_query_surfaces;
mod data_host;
mod directories;
mod directory_follow;
mod etcd_catalog;
mod etcd_records;
mod grpc;
mod heat;
mod hostile_sql;
mod limits;
mod lookup_binding;
mod metrics;
mod migration_online;
mod migration_remote;
mod migration_stall;
mod read_key_sql;
mod refusals;
mod remote_shards;
mod rest;
mod scopes;
mod status_pages;
mod storage_failures;
mod storage_permissions;
mod tls;
