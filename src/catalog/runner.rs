//! Claims on running a migration: two runners can never drive one migration at once.
//!
//! The store keeps the claim (`CatalogStore::claim_runner`): on a catalog in etcd a key attached
//! to a lease that the runner keeps alive, which etcd drops when the lease expires
//! ([`LEASE_SECONDS`]) after a runner was killed; on a master file a row naming the runner's
//! process, which a second process takes over once that process has died. Within one process a
//! registry does the same for two runs at once.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use super::Catalog;
use super::store::RunnerClaim;
use crate::error::{Error, Result};

/// How long a claim in etcd outlives its runner: a killed runner's migration can be resumed
/// after at most this long.
pub const LEASE_SECONDS: u64 = 10;

/// A runner's claim on one migration, released when dropped.
#[derive(Debug)]
pub struct ReshardClaim {
    local_key: String,
    /// The store's record of the claim (a runner row, a leased key).
    held: Option<Box<dyn RunnerClaim>>,
}

fn claimed() -> &'static Mutex<HashSet<String>> {
    static CLAIMED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    CLAIMED.get_or_init(Default::default)
}

impl Catalog {
    /// Claims migration `id` for this runner, or refuses with [`Error::ReshardRunning`] while
    /// another runner holds it.
    pub async fn claim_migration(&self, id: &str) -> Result<ReshardClaim> {
        let local_key = format!("{}\u{0}{id}", self.location());
        let inserted = claimed()
            .lock()
            .map(|mut set| set.insert(local_key.clone()))
            .unwrap_or(false);
        if !inserted {
            return Err(Error::ReshardRunning {
                migration_id: id.into(),
                holder: "another run in this process".into(),
            });
        }
        // Dropped on refusal, which forgets the claim in this process.
        let mut claim = ReshardClaim { local_key, held: None };
        claim.held = Some(self.store().claim_runner(id).await?);
        Ok(claim)
    }
}

impl ReshardClaim {
    /// Releases the claim now, waiting for the store to forget it: a command that ends right
    /// after a run must not leave its claim to expire (the release on drop runs in the
    /// background, which an ending process may never get to).
    pub async fn release(mut self) {
        if let Some(held) = self.held.take() {
            held.release().await;
        }
    }
}

impl Drop for ReshardClaim {
    fn drop(&mut self) {
        if let Ok(mut set) = claimed().lock() {
            set.remove(&self.local_key);
        }
    }
}
