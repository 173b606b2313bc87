//! Dedicated connections on a route's shard, and the map checks they pass before every call.

use super::Shared;
use super::generation::ShardSlot;
use crate::engine::DedicatedConnection;
use crate::error::{Error, Result, StaleMapVersion, TransactionRouteConflict};
use crate::routing::RouteContext;

impl Shared {
    /// Opens a connection of its own on the shard `route` resolves to (an in-process file).
    /// Returns it with the map version and shard id it was opened under.
    pub(crate) async fn dedicated_for_route(
        self: &std::sync::Arc<Self>,
        route: &RouteContext,
    ) -> Result<(DedicatedConnection, u64, String)> {
        let generation = self.fresh().await;
        let resolution = generation.map.resolve(route.keyspace(), route.key())?;
        let index = resolution.shard_index;
        let shard_id = generation.map.shards()[index].id.clone();
        let local = match &generation.shards[index] {
            ShardSlot::Ready { local: Some(local), .. } => local.clone(),
            // Not a local file (a remote shard), or not open: the error says which.
            _ => {
                generation.slot_client(index)?;
                return Err(Error::shard_unavailable(
                    shard_id,
                    "the shard is not a local file, so it has no connection of its own to hand out".to_owned(),
                ));
            }
        };
        let connection = local.database().dedicated().await?;
        Ok((connection, generation.map.version(), shard_id))
    }

    /// Checks, before a dedicated connection opened under map `version` on `shard_id` runs a call,
    /// that `route` still belongs there: no activation since changed the shard's ownership, and
    /// the route resolves to the same shard. `naming` names the connection (or its transaction)
    /// in the error.
    pub(crate) async fn check_dedicated(
        self: &std::sync::Arc<Self>,
        route: &RouteContext,
        version: u64,
        shard_id: &str,
        naming: &str,
    ) -> Result<()> {
        let generation = self.fresh().await;
        let map = &generation.map;
        if !generation.admits(version, shard_id) {
            return Err(Error::from(StaleMapVersion {
                transaction_id: naming.to_owned(),
                transaction_version: version,
                active_version: map.version(),
            }));
        }
        let resolution = map.resolve(route.keyspace(), route.key())?;
        if !map.shards()[resolution.shard_index].id.eq_ignore_ascii_case(shard_id) {
            return Err(Error::from(TransactionRouteConflict {
                transaction_id: naming.to_owned(),
                transaction_shard_id: shard_id.to_owned(),
                route_shard_id: resolution.shard_id.to_owned(),
            }));
        }
        Ok(())
    }
}
