//! The shards of a sharded client as operators see them: health, counts summed over every
//! shard, and the heat of routed calls.

use async_trait::async_trait;

use super::ShardedClient;
use super::generation::Generation;
use crate::data::{DatabaseInfo, ShardStatus, ShardStatusPage, ShardStatusQuery, Topology};
use crate::error::{Error, Result};
use crate::heat::HeatReport;
use crate::map::{ShardMapSnapshot, ShardRole, ShardTarget};
use crate::routing::{ResolvedRoute, RouteContext};

/// The shards of a [`ShardedClient`]: their health, their counts summed, the heat of the calls
/// routed to them. Handed out by [`ShardedClient::shards`]; with the client's map and
/// [`resolve_route`](ShardedClient::resolve_route), the in-process [`Topology`].
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::client::ShardedClient;
///
/// let sharded = ShardedClient::open("data/master.db").await?;
/// for shard in sharded.shards().status().await {
///     println!("{}: healthy {}", shard.shard_id, shard.healthy);
/// }
/// println!("{} tables over every shard", sharded.shards().info().await?.table_count);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Shards<'a> {
    sharded: &'a ShardedClient,
}

impl<'a> Shards<'a> {
    pub(super) fn new(sharded: &'a ShardedClient) -> Self {
        Self { sharded }
    }

    /// Probes every shard (in parallel) and reports them in definition order.
    pub async fn status(self) -> Vec<ShardStatus> {
        let shared = &self.sharded.inner;
        let generation = shared.fresh().await;
        let generation = &generation;
        shared
            .bounded(
                (0..generation.map.shards().len())
                    .map(|index| probe(generation, index))
                    .collect(),
            )
            .await
    }

    /// One page of shard status with counts by state (see [`ShardStatusQuery`]): every shard is
    /// probed for the counts, except when the query names one shard, which alone is probed.
    ///
    /// A shard id the map does not define is [`Error::UnknownShard`].
    pub async fn status_page(self, query: &ShardStatusQuery) -> Result<ShardStatusPage> {
        query.check()?;
        let Some(shard_id) = &query.shard_id else {
            return Ok(ShardStatusPage::select(self.status().await, query));
        };
        let generation = self.sharded.inner.fresh().await;
        let index = generation
            .map
            .shard_index(shard_id)
            .ok_or_else(|| Error::UnknownShard {
                shard_id: shard_id.trim().to_owned(),
            })?;
        Ok(ShardStatusPage::select(vec![probe(&generation, index).await], query))
    }

    /// Counts of tables, indexes, views, triggers, collections, saved queries and procedures,
    /// summed over every enabled shard; its data source is the sharded client's
    /// ([`data_source`](ShardedClient::data_source)). A route's own counts are its client's
    /// ([`for_route`](ShardedClient::for_route)).
    pub async fn info(self) -> Result<DatabaseInfo> {
        let shared = &self.sharded.inner;
        let generation = shared.fresh().await;
        let mut total = DatabaseInfo {
            data_source: generation.data_source.clone(),
            ..DatabaseInfo::default()
        };
        let infos = shared
            .bounded(
                generation
                    .enabled_shards()
                    .map(|(_, client)| async move { client?.info().await })
                    .collect(),
            )
            .await;
        for info in infos {
            let info = info?;
            total.table_count += info.table_count;
            total.index_count += info.index_count;
            total.view_count += info.view_count;
            total.trigger_count += info.trigger_count;
            total.collection_count += info.collection_count;
            total.saved_query_count += info.saved_query_count;
            total.procedure_count += info.procedure_count;
        }
        Ok(total)
    }

    /// The heat of the calls routed through this client (and its route-bound clients) lately:
    /// decayed request and row counts by shard, bucket and hottest route key, shards credited
    /// as the active map routes.
    pub fn heat(self) -> HeatReport {
        let shared = &self.sharded.inner;
        shared.heat().report(&shared.generation().map)
    }

    /// In-process shard files open now (see
    /// [`EngineConfig::max_open_shards`](crate::engine::EngineConfig::max_open_shards)).
    pub fn open_count(self) -> usize {
        self.sharded.inner.options.engine.open_shards.len()
    }
}

#[async_trait]
impl Topology for ShardedClient {
    async fn shard_map(&self) -> Result<ShardMapSnapshot> {
        Ok(self.map_snapshot())
    }
    async fn resolve_route(&self, route: &RouteContext) -> Result<ResolvedRoute> {
        ShardedClient::resolve_route(self, route)
    }
    async fn shard_status(&self) -> Result<Vec<ShardStatus>> {
        Ok(self.shards().status().await)
    }
    async fn shard_status_page(&self, query: &ShardStatusQuery) -> Result<ShardStatusPage> {
        self.shards().status_page(query).await
    }
    async fn shard_heat(&self) -> Result<HeatReport> {
        Ok(self.shards().heat())
    }
}

/// Probes the shard at `index` of the generation's map (a disabled shard is not probed).
async fn probe(generation: &Generation, index: usize) -> ShardStatus {
    let shard = &generation.map.shards()[index];
    let data_source = match &shard.target {
        ShardTarget::DataSource(path) => Some(path.clone()),
        ShardTarget::Endpoint { endpoint, .. } => Some(endpoint.clone()),
        ShardTarget::ConnectionString(_) => None,
    };
    let probe = if shard.enabled {
        match generation.slot_client(index) {
            Ok(client) => client.info().await,
            Err(err) => Err(err),
        }
    } else {
        Err(Error::ShardIsDisabled {
            shard_id: shard.id.clone(),
        })
    };
    let healthy = probe.is_ok();
    ShardStatus {
        shard_id: shard.id.clone(),
        data_source,
        enabled: shard.enabled,
        healthy,
        role: shard.role,
        can_promote: healthy && shard.role == ShardRole::Replica && shard.replica.promotion_eligible,
        replica: shard.replica.clone(),
        error: probe.as_ref().err().map(ToString::to_string),
        info: probe.ok(),
    }
}
