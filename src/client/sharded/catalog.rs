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

use async_trait::async_trait;

use super::ShardedClient;
use crate::catalog::Catalog;
use crate::data::{
    ActivationRequest, ActivationResult, CatalogAdmin, CatalogApplyResult, CatalogState, CatalogUpdateRequest,
    CatalogValidation,
};
use crate::error::{Error, Result};
use crate::map::{SNAPSHOT_ECHO_LIMIT, ShardMap};

/// The catalog of a [`ShardedClient`]: the master catalog it was opened from, its state, map
/// updates and live activation. Handed out by [`ShardedClient::catalog`]; the in-process
/// [`CatalogAdmin`].
///
/// ```no_run
/// # async fn demo(proposal: shardlite::data::CatalogUpdateRequest) -> shardlite::Result<()> {
/// use shardlite::client::ShardedClient;
/// use shardlite::data::ActivationRequest;
///
/// let sharded = ShardedClient::open("data/master.db").await?;
/// let catalog = sharded.catalog();
/// let applied = catalog.apply(&proposal).await?;
/// if let Some(version) = applied.pending_map_version {
///     let activated = catalog.activate(&ActivationRequest::new(version)).await?;
///     println!("shards whose ownership changed: {:?}", activated.affected_shards);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ShardedCatalog<'a> {
    sharded: &'a ShardedClient,
}

impl<'a> ShardedCatalog<'a> {
    pub(super) fn new(sharded: &'a ShardedClient) -> Self {
        Self { sharded }
    }

    /// The master catalog, when the client was opened from one (`None` for a map held in
    /// memory).
    pub fn master(self) -> Option<&'a Catalog> {
        self.sharded.inner.catalog.as_ref()
    }

    fn require_master(self) -> Result<&'a Catalog> {
        self.master().ok_or_else(|| Error::Catalog {
            reason: "catalog updates need a client opened from a master catalog, not a map held in memory".to_owned(),
        })
    }

    /// The catalog state: live map, pending map (if a different version is stored) and history.
    pub async fn state(self) -> Result<CatalogState> {
        let generation = self.sharded.inner.fresh().await;
        let active_map = generation.map.snapshot_within(SNAPSHOT_ECHO_LIMIT);
        let Some(catalog) = self.master() else {
            return Ok(CatalogState {
                source: "in-memory".to_owned(),
                is_catalog_enabled: false,
                active_map,
                pending_map: None,
                history: Vec::new(),
            });
        };
        let pending_map = match catalog.pending_options().await? {
            Some(options) if u64::try_from(options.map_version).ok() != Some(generation.map.version()) => {
                Some(ShardMap::new(options)?.snapshot_within(SNAPSHOT_ECHO_LIMIT))
            }
            _ => None,
        };
        Ok(CatalogState {
            source: "master-catalog".to_owned(),
            is_catalog_enabled: true,
            active_map,
            pending_map,
            history: catalog.history().await?,
        })
    }

    /// Validates a proposed map against the catalog; changes nothing.
    pub async fn validate(self, request: &CatalogUpdateRequest) -> Result<CatalogValidation> {
        self.require_master()?.validate_update(request).await
    }

    /// Validates and writes a proposed map as the pending map (compare-and-set on the versions).
    pub async fn apply(self, request: &CatalogUpdateRequest) -> Result<CatalogApplyResult> {
        self.require_master()?.apply_update(request.clone()).await
    }

    /// Makes the pending map active in the catalog and in this client, without a restart, and
    /// drains open transactions on the shards whose ownership changed.
    pub async fn activate(self, request: &ActivationRequest) -> Result<ActivationResult> {
        let (previous, next) = self.require_master()?.activate_pending(request).await?;
        let previous_version = previous.version();
        let active_map_version = next.version();
        let shared = &self.sharded.inner;
        let affected = shared.switch_to(previous, next).await?;
        let rolled_back = shared.drain(&affected).await;
        Ok(ActivationResult {
            active_map_version,
            previous_map_version: previous_version,
            affected_shards: affected.into_iter().collect(),
            rolled_back_transactions: rolled_back,
        })
    }
}

#[async_trait]
impl CatalogAdmin for ShardedClient {
    async fn catalog_state(&self) -> Result<CatalogState> {
        self.catalog().state().await
    }
    async fn validate_catalog_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogValidation> {
        self.catalog().validate(request).await
    }
    async fn apply_catalog_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogApplyResult> {
        self.catalog().apply(request).await
    }
    async fn activate_pending_map(&self, request: &ActivationRequest) -> Result<ActivationResult> {
        self.catalog().activate(request).await
    }
}
