//! The blocking form of [`client::ShardedCatalog`](crate::client::ShardedCatalog).

use super::ShardedClient;
use crate::data::{
    ActivationRequest, ActivationResult, CatalogApplyResult, CatalogState, CatalogUpdateRequest, CatalogValidation,
};
use crate::error::Result;

/// Catalog state, map updates and live activation through a blocking [`ShardedClient`].
/// Handed out by [`ShardedClient::catalog`].
///
/// ```no_run
/// # fn demo(sharded: &shardlite::client::blocking::ShardedClient) -> shardlite::Result<()> {
/// if let Some(pending) = sharded.catalog().state()?.pending_map {
///     println!("map version {} waits for activation", pending.map_version);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ShardedCatalog<'a> {
    client: &'a ShardedClient,
}

impl<'a> ShardedCatalog<'a> {
    pub(super) fn new(client: &'a ShardedClient) -> Self {
        Self { client }
    }

    /// Active and pending maps and catalog history.
    pub fn state(self) -> Result<CatalogState> {
        self.client.wait(self.client.sharded.catalog().state())
    }

    /// Validates a proposed map against the catalog; changes nothing.
    pub fn validate(self, request: &CatalogUpdateRequest) -> Result<CatalogValidation> {
        self.client.wait(self.client.sharded.catalog().validate(request))
    }

    /// Validates and writes a proposed map as the pending map.
    pub fn apply(self, request: &CatalogUpdateRequest) -> Result<CatalogApplyResult> {
        self.client.wait(self.client.sharded.catalog().apply(request))
    }

    /// Makes the pending map active without a restart.
    pub fn activate(self, request: &ActivationRequest) -> Result<ActivationResult> {
        self.client.wait(self.client.sharded.catalog().activate(request))
    }
}
