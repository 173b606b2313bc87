//! The sqlx driver (feature `sqlx`) through the `sqlx` facade: route-bound connections and
//! pools, connection state, `ShardedPool`, sqlx's `Migrator`, and every transport, TLS included.

#[path = "../support/mod.rs"]
pub mod support;

mod across_shards;
mod connection_state;
mod driver;
mod migrate;
mod sharded_pool;
mod tls;
mod transports;

/// Installs shardlite's `Any` driver. sqlx takes the list of drivers once per process, and the
/// tests of this binary share the process.
fn install_any_driver() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| sqlx::any::install_drivers(&[shardlite::driver::any::DRIVER]).expect("install the driver"));
}
