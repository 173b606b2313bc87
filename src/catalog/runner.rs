//! Claims on running a migration: two runners can never drive one migration at once.
//!
//! On a catalog in etcd the claim is a key attached to a lease that the runner keeps alive; a
//! runner killed without a chance to clean up (SIGKILL, a lost host) stops renewing it, and etcd
//! drops the claim when the lease expires ([`LEASE_SECONDS`]), after which `resume` can take it.
//! On a master file the claim is a row naming the runner's process (its id and start time): a
//! second process is refused while that process lives, and takes the claim over once it has
//! died, however it died. Within one process a registry does the same for two runs at once.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use super::Catalog;
use super::store::Store;
use crate::error::{Error, Result};

/// How long a claim in etcd outlives its runner: a killed runner's migration can be resumed
/// after at most this long.
pub const LEASE_SECONDS: u64 = 10;

/// A runner's claim on one migration, released when dropped.
#[derive(Debug)]
pub struct ReshardClaim {
    local_key: String,
    /// The master file and migration id whose runner row this claim holds.
    file: Option<(super::store::FileStore, String, String)>,
    #[cfg(feature = "etcd")]
    lease: Option<EtcdLease>,
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
        let mut claim = ReshardClaim {
            local_key,
            file: None,
            #[cfg(feature = "etcd")]
            lease: None,
        };
        match self.store() {
            Store::File(file) => {
                let since = crate::engine::store::now_utc();
                if let Some((runner, since)) = file.claim_runner(id, &since).await? {
                    return Err(Error::ReshardRunning {
                        migration_id: id.into(),
                        holder: format!("process {} on this host (since {since})", runner.pid).into(),
                    });
                }
                claim.file = Some((file.clone(), id.to_owned(), since));
            }
            #[cfg(feature = "etcd")]
            Store::Etcd(etcd) => claim.lease = Some(EtcdLease::claim(etcd, id).await?),
        }
        Ok(claim)
    }
}

impl ReshardClaim {
    /// Releases the claim now, waiting for the store to forget it: a command that ends right
    /// after a run must not leave its claim to expire (the release on drop runs in the
    /// background, which an ending process may never get to).
    pub async fn release(mut self) {
        if let Some((file, id, since)) = self.file.take() {
            let _ = file.release_runner(&id, &since).await;
        }
        #[cfg(feature = "etcd")]
        if let Some(lease) = self.lease.take() {
            lease.revoke().await;
        }
    }
}

impl Drop for ReshardClaim {
    fn drop(&mut self) {
        if let Ok(mut set) = claimed().lock() {
            set.remove(&self.local_key);
        }
        // A row left behind (no runtime to delete it on) names a process that has ended, which
        // the next claim takes over.
        if let Some((file, id, since)) = self.file.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = file.release_runner(&id, &since).await;
            });
        }
    }
}

#[cfg(feature = "etcd")]
pub(crate) use etcd_lease::EtcdLease;

#[cfg(feature = "etcd")]
mod etcd_lease {
    use std::time::Duration;

    use serde_json::json;

    use super::LEASE_SECONDS;
    use crate::catalog::store::etcd::EtcdStore;
    use crate::error::{Error, Result};

    /// A lease holding a migration's runner key, renewed in the background.
    #[derive(Debug)]
    pub(crate) struct EtcdLease {
        id: i64,
        store: EtcdStore,
        renewing: tokio::task::JoinHandle<()>,
    }

    impl EtcdLease {
        pub(crate) async fn claim(store: &EtcdStore, migration_id: &str) -> Result<Self> {
            let client = store.client();
            let id = client.grant(LEASE_SECONDS).await?;
            let key = store.runner_key(migration_id);
            let holder = json!({
                "holder": super::holder_name(),
                "sinceUtc": crate::engine::store::now_utc(),
            })
            .to_string();
            let won = client
                .txn(
                    vec![super::super::store::etcd::absent(&key)],
                    vec![super::super::store::etcd::put_leased(&key, holder.as_bytes(), id)],
                )
                .await;
            match won {
                Ok(true) => {}
                other => {
                    let _ = client.revoke(id).await;
                    other?;
                    let holder = store.runner_of(migration_id).await.unwrap_or_default();
                    return Err(Error::ReshardRunning {
                        migration_id: migration_id.into(),
                        holder: format!("{holder} (through {})", store.address()).into(),
                    });
                }
            }
            let renewer = client.clone();
            let renewing = tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(LEASE_SECONDS / 3)).await;
                    match renewer.keep_alive(id).await {
                        Ok(ttl) if ttl > 0 => {}
                        Ok(_) => {
                            tracing::error!(
                                lease = id,
                                "the migration runner's lease expired: another runner may take over"
                            );
                            return;
                        }
                        Err(err) => {
                            tracing::warn!(lease = id, error = %err, "renewing the migration runner's lease failed")
                        }
                    }
                }
            });
            Ok(Self {
                id,
                store: store.clone(),
                renewing,
            })
        }
    }

    impl EtcdLease {
        /// Ends the lease (deleting the claim) and waits for etcd to confirm.
        pub(crate) async fn revoke(mut self) {
            self.renewing.abort();
            let id = std::mem::replace(&mut self.id, 0);
            let _ = self.store.client().revoke(id).await;
        }
    }

    impl Drop for EtcdLease {
        fn drop(&mut self) {
            self.renewing.abort();
            if self.id == 0 {
                return;
            }
            let (client, id) = (self.store.client().clone(), self.id);
            // Revoking deletes the claim at once; if this cannot run, the lease expires.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = client.revoke(id).await;
                });
            }
        }
    }
}

/// Who holds a claim, for the message another runner gets.
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = host.trim();
    let host = if host.is_empty() { "this host" } else { host };
    format!("process {} on {host}", std::process::id())
}
