//! Runner claims in etcd: a key attached to a lease that the runner keeps alive. A runner killed
//! without a chance to clean up (SIGKILL, a lost host) stops renewing it, and etcd drops the
//! claim when the lease expires ([`LEASE_SECONDS`]), after which `resume` can take it.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use super::{EtcdStore, absent, put_leased};
use crate::catalog::LEASE_SECONDS;
use crate::catalog::store::RunnerClaim;
use crate::data::now_utc;
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
            "holder": holder_name(),
            "sinceUtc": now_utc(),
        })
        .to_string();
        let won = client
            .txn(vec![absent(&key)], vec![put_leased(&key, holder.as_bytes(), id)])
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

#[async_trait]
impl RunnerClaim for EtcdLease {
    /// Ends the lease (deleting the claim) and waits for etcd to confirm.
    async fn release(mut self: Box<Self>) {
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

/// Who holds a claim, for the message another runner gets.
fn holder_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = host.trim();
    let host = if host.is_empty() { "this host" } else { host };
    format!("process {} on {host}", std::process::id())
}
