//! The sharded client: one map, one client per shard, and routing of every call.
//!
//! - this file: opening the map's shards, and which client serves a shard or a route;
//! - [`status`]: shard health, fan-out and catalog state;
//! - [`transactions`]: routed transactions and their RAII guard;
//! - [`remote`]: shards reached through another daemon or a connection string.

mod remote;
mod status;
mod transactions;

pub use transactions::ShardedTransaction;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::join_all;

use super::forward::impl_data_client;
use super::{LocalClient, RoutedClient};
use crate::catalog::{Catalog, check_shard_files};
use crate::data::{DataClient, DatabaseInfo, Params, SqlResult, TransactionInfo};
use crate::engine::EngineConfig;
use crate::error::{Error, Result};
use crate::map::{ShardMap, ShardMapSnapshot, ShardTarget, resolve_data_source};
use crate::routing::{ResolvedRoute, RouteContext};

/// How one shard is reached.
#[derive(Clone)]
enum ShardSlot {
    /// Disabled in the map: no client exists.
    Disabled,
    /// Reachable through `client`; `local` is set for in-process files.
    Ready {
        client: Arc<dyn DataClient>,
        local: Option<LocalClient>,
    },
    /// Enabled, but could not be opened; the reason is reported by status and on use.
    Unavailable(String),
}

struct Inner {
    map: ShardMap,
    shards: Vec<ShardSlot>,
    catalog: Option<Catalog>,
    data_source: String,
}

/// A client over every shard of one map.
///
/// Route-bound work goes through [`for_route`](Self::for_route); operators use
/// [`status`](Self::status), [`execute_sql_on_all_shards`](Self::execute_sql_on_all_shards) and
/// [`execute_read_only_sql_on_all_shards`](Self::execute_read_only_sql_on_all_shards).
/// Cloning is cheap and shares the shards.
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::client::{DataClient, Params, ShardedClient};
/// use shardlite::RouteContext;
///
/// let sharded = ShardedClient::open("data/master.db").await?;
/// let june = sharded.for_route(RouteContext::new("orders_by_month", "2026-06")?);
/// june.execute_sql("SELECT count(*) FROM orders WHERE order_month = ?1", Params::from(vec!["2026-06"])).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ShardedClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ShardedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedClient")
            .field("data_source", &self.inner.data_source)
            .finish_non_exhaustive()
    }
}

/// Settings for a [`ShardedClient`].
#[derive(Debug, Clone, Default)]
pub struct ShardedClientOptions {
    /// Settings applied to every local shard file.
    pub engine: EngineConfig,
}

impl ShardedClient {
    /// Opens the master catalog at `master` and every shard of its active map.
    ///
    /// A relative `dataSource` (or connection-string `Data Source`) is a file in the master's
    /// folder, whatever the working directory. Fails with [`Error::NoMap`] when the master holds
    /// no map (callers such as the daemon then serve the file as one plain database), and with
    /// [`Error::InvalidMap`] when a shard's file is the master itself or two shards share a file
    /// (see [`check_shard_files`]), before any shard file is opened.
    pub async fn open(master: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(master, ShardedClientOptions::default()).await
    }

    /// [`open`](Self::open) with explicit settings.
    pub async fn open_with(master: impl AsRef<Path>, options: ShardedClientOptions) -> Result<Self> {
        let catalog = Catalog::open(master).await?;
        let map = catalog.active_map().await?;
        check_shard_files(catalog.path(), &map).await?;
        Self::build(map, Some(catalog), options).await
    }

    /// A client over a map held in memory (no catalog). With no master to resolve them against,
    /// relative shard paths are relative to the working directory.
    pub async fn from_map(map: ShardMap) -> Result<Self> {
        Self::build(map, None, ShardedClientOptions::default()).await
    }

    /// [`from_map`](Self::from_map) with explicit settings.
    pub async fn from_map_with(map: ShardMap, options: ShardedClientOptions) -> Result<Self> {
        Self::build(map, None, options).await
    }

    async fn build(map: ShardMap, catalog: Option<Catalog>, options: ShardedClientOptions) -> Result<Self> {
        let master = catalog.as_ref().map(Catalog::path);
        // Relative shard paths are relative to the master's folder; without a master, to the
        // working directory.
        let locate = |path: &str| master.map_or_else(|| PathBuf::from(path), |m| resolve_data_source(m, path));
        let opened = join_all(map.shards().iter().map(|shard| {
            let engine = options.engine.clone();
            async move {
                if !shard.enabled {
                    return ShardSlot::Disabled;
                }
                match &shard.target {
                    ShardTarget::DataSource(path) => {
                        match LocalClient::open_with(locate(path), shard.id.clone(), engine).await {
                            Ok(local) => ShardSlot::Ready {
                                client: Arc::new(local.clone()),
                                local: Some(local),
                            },
                            Err(err) => ShardSlot::Unavailable(err.to_string()),
                        }
                    }
                    ShardTarget::Endpoint { endpoint, transport } => {
                        let mut remote = remote::RemoteShard::new(endpoint.clone(), *transport);
                        remote.api_key = shard.api_key.clone();
                        remote.api_key_header = shard.api_key_header_name.clone();
                        remote.open()
                    }
                    ShardTarget::ConnectionString(secret) => {
                        remote::open_connection_string_shard(&shard.id, secret, engine, locate).await
                    }
                }
            }
        }))
        .await;
        Ok(Self {
            inner: Arc::new(Inner {
                data_source: format!("sharded://{}?version={}", map.keyspace(), map.version()),
                shards: opened,
                map,
                catalog,
            }),
        })
    }

    /// The active map.
    pub fn map(&self) -> &ShardMap {
        &self.inner.map
    }

    /// A secret-free snapshot of the active map.
    pub fn map_snapshot(&self) -> ShardMapSnapshot {
        self.inner.map.snapshot()
    }

    /// `sharded://{keyspace}?version={mapVersion}`.
    pub fn data_source(&self) -> &str {
        &self.inner.data_source
    }

    /// The master catalog, when opened from one.
    pub fn catalog(&self) -> Option<&Catalog> {
        self.inner.catalog.as_ref()
    }

    /// Resolves a route against the active map.
    pub fn resolve_route(&self, route: &RouteContext) -> Result<ResolvedRoute> {
        Ok(self.inner.map.resolve(route.keyspace(), route.key())?.to_resolved())
    }

    /// A client bound to one route: every call runs on the shard the route resolves to.
    pub fn for_route(&self, route: RouteContext) -> RoutedClient {
        RoutedClient {
            sharded: self.clone(),
            route,
        }
    }

    /// The client of one shard, bypassing routing (for operators and diagnostics).
    pub fn for_shard_id(&self, shard_id: &str) -> Result<Arc<dyn DataClient>> {
        let index = self
            .inner
            .map
            .shard_index(shard_id)
            .ok_or_else(|| Error::UnknownShard {
                shard_id: shard_id.trim().to_owned(),
            })?;
        self.slot_client(index)
    }

    pub(super) fn slot_client(&self, index: usize) -> Result<Arc<dyn DataClient>> {
        let shard_id = || self.inner.map.shards()[index].id.clone();
        match &self.inner.shards[index] {
            ShardSlot::Ready { client, .. } => Ok(Arc::clone(client)),
            ShardSlot::Disabled => Err(Error::ShardIsDisabled { shard_id: shard_id() }),
            ShardSlot::Unavailable(reason) => Err(Error::ShardUnavailable {
                shard_id: shard_id(),
                reason: reason.clone(),
            }),
        }
    }

    /// The shard index and client a route resolves to.
    pub(super) fn route_client(&self, route: &RouteContext) -> Result<(usize, Arc<dyn DataClient>)> {
        let resolution = self.inner.map.resolve(route.keyspace(), route.key())?;
        Ok((resolution.shard_index, self.slot_client(resolution.shard_index)?))
    }

    /// Each enabled shard's index and client, in definition order (unavailable ones as errors).
    pub(super) fn enabled_shards(&self) -> impl Iterator<Item = (usize, Result<Arc<dyn DataClient>>)> + '_ {
        self.inner
            .shards
            .iter()
            .enumerate()
            .filter(|(_, slot)| !matches!(slot, ShardSlot::Disabled))
            .map(|(index, _)| (index, self.slot_client(index)))
    }
}

// Without a route the sharded client can only aggregate info and route transactions by id;
// everything else fails with `Error::RouteRequired`.
impl_data_client!(
    ShardedClient,
    |_this| Err::<Arc<dyn DataClient>, _>(Error::RouteRequired),
    {
        async fn execute_sql(&self, _sql: &str, _params: Params) -> Result<SqlResult> {
            Err(Error::RouteRequired)
        }
        async fn execute_read_only_sql(&self, _sql: &str, _params: Params) -> Result<SqlResult> {
            Err(Error::RouteRequired)
        }
        async fn info(&self) -> Result<DatabaseInfo> {
            self.aggregate_info().await
        }
        async fn begin_transaction(&self) -> Result<TransactionInfo> {
            Err(Error::RouteRequired)
        }
        async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
            self.tx_execute(transaction_id, None, sql, params).await
        }
        async fn commit_transaction(&self, transaction_id: &str) -> Result<()> {
            self.tx_commit(transaction_id, None).await
        }
        async fn rollback_transaction(&self, transaction_id: &str) -> Result<()> {
            self.tx_rollback(transaction_id, None).await
        }
    }
);
