//! Programs run as processes (feature `cli`): the `shardlite` command, the examples, and the
//! walk-throughs of the README and of the guide in `docs/`, as written.

#[path = "../support/mod.rs"]
pub mod support;

mod backup;
mod backup_archive_many;
mod backup_etcd;
mod backup_many;
mod backup_point_in_time;
mod blocking_orders_example;
mod catalog;
mod data;
mod directory;
mod first_steps;
mod many_shards;
mod migrate;
mod order_history_example;
mod readme;
mod schema;
mod serve;
mod serve_config;
mod serve_keys;
mod serve_many_shards;
mod serve_shard_dir;
mod serve_tls;
mod sqlx_many_routes_example;
mod sqlx_remote_example;
#[cfg(feature = "server")]
mod stats;
mod token;
mod tx;
