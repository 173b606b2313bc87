//! Catalog updates through a sharded client, and live activation: a new map goes live in this
//! process without a restart, and other processes on the same master follow it.
//!
//! Every call resolves against one map generation from start to end. Activation swaps in a new
//! generation; calls already running finish on the old one. Open transactions on shards whose
//! bucket or pin ownership changed are drained: they get a bounded time to finish, then are
//! rolled back, and their ids fail with `stale_map_version`. Transactions on other shards keep
//! working. Another process notices a new active version on a call after at most
//! [`ShardedClientOptions::refresh_interval`](super::ShardedClientOptions::refresh_interval):
//! a cheap version read, not a catalog read per call.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::ShardedClient;
use crate::catalog::{Catalog, diff};
use crate::data::{ActivationRequest, ActivationResult, CatalogApplyResult, CatalogUpdateRequest, CatalogValidation};
use crate::error::{Error, Result};
use crate::map::ShardMap;

impl ShardedClient {
    fn require_catalog(&self) -> Result<&Catalog> {
        self.catalog().ok_or_else(|| Error::Catalog {
            reason: "catalog updates need a client opened from a master catalog, not a map held in memory".to_owned(),
        })
    }

    /// Validates a proposed map against the catalog; changes nothing.
    pub async fn validate_catalog_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogValidation> {
        self.require_catalog()?.validate_update(request).await
    }

    /// Validates and writes a proposed map as the pending map (compare-and-set on the versions).
    pub async fn apply_catalog_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogApplyResult> {
        self.require_catalog()?.apply_update(request.clone()).await
    }

    /// Makes the pending map active in the catalog and in this client, without a restart, and
    /// drains open transactions on the shards whose ownership changed.
    pub async fn activate_pending_map(&self, request: &ActivationRequest) -> Result<ActivationResult> {
        let (previous, next) = self.require_catalog()?.activate_pending(request).await?;
        let previous_version = previous.version();
        let active_map_version = next.version();
        let affected = self.switch_to(previous, next).await?;
        let rolled_back = self.drain(&affected).await;
        Ok(ActivationResult {
            active_map_version,
            previous_map_version: previous_version,
            affected_shards: affected.into_iter().collect(),
            rolled_back_transactions: rolled_back,
        })
    }

    /// Swaps in `next` (whose predecessor is `previous`) unless this client already serves it.
    /// Returns the shards whose ownership changed.
    pub(super) async fn switch_to(&self, previous: ShardMap, next: ShardMap) -> Result<BTreeSet<String>> {
        let changes = if previous.keyspace().eq_ignore_ascii_case(next.keyspace())
            && previous.bucket_count() == next.bucket_count()
        {
            diff(&previous, &next).affected_shards()
        } else {
            // Every shard is affected when routing itself changed.
            previous
                .shards()
                .iter()
                .chain(next.shards())
                .map(|shard| shard.id.to_ascii_lowercase())
                .collect()
        };
        self.install(next, &changes).await?;
        Ok(changes)
    }

    /// Waits up to the drain timeout for open transactions on `affected` local shards to end,
    /// then rolls back the rest. Returns how many were rolled back.
    pub(super) async fn drain(&self, affected: &BTreeSet<String>) -> u64 {
        let locals = self.local_shards(affected);
        if locals.is_empty() {
            return 0;
        }
        let deadline = Instant::now() + self.drain_timeout();
        while Instant::now() < deadline
            && locals
                .iter()
                .any(|local| local.database().sessions().open_sessions() > 0)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        locals
            .iter()
            .map(|local| u64::try_from(local.database().sessions().abort_sessions()).unwrap_or(u64::MAX))
            .sum()
    }
}
