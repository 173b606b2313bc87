//! The sharded client: one map, one client per shard, and routing of every call.
//!
//! [`ShardedClient`] (this file) opens a map, routes, and hands out its parts, one type and
//! file each, as [`Database`](crate::engine::Database) does:
//! - [`shards`]: [`Shards`], shard health, counts and heat (the in-process [`Topology`]);
//! - [`query`]: [`ShardedQuery`], SQL on every shard and one `SELECT` merged across them
//!   ([`FanOut`]);
//! - [`catalog`]: [`ShardedCatalog`], catalog state, updates and live activation
//!   ([`CatalogAdmin`]);
//! - [`directories`]: [`ShardedDirectories`], shard directories: lookups, entry changes, and
//!   clients bound by a lookup key ([`DirectoryAdmin`]);
//! - [`schema`]: [`ShardedSchema`], schema migrations and schema status on every shard
//!   ([`SchemaAdmin`]);
//! - [`transactions`]: [`ShardedTransactions`], routed transactions and their RAII guard;
//! - [`atomic`]: [`AtomicTransaction`], a transaction on several routes committed on all or none;
//! - [`atomic_recovery`]: [`AtomicRecovery`], finishing what a coordinator that died left.
//!
//! Behind them, crate-private:
//! - [`atomic_resolver`]: the resolver every client runs for its atomic transactions: a pass
//!   when a shard opens holding atomic state, and paced rounds over the open shard files;
//! - [`generation`]: the map served now and its shards' clients, swapped whole on activation;
//! - [`follow`]: following the catalog, so that a map activated elsewhere is served here;
//! - [`dedicated`]: connections of their own on a route's shard, for the sqlx driver;
//! - [`remote`]: shards reached through another daemon or a connection string.
//!
//! [`Topology`]: crate::data::Topology
//! [`FanOut`]: crate::data::FanOut
//! [`CatalogAdmin`]: crate::data::CatalogAdmin
//! [`SchemaAdmin`]: crate::data::SchemaAdmin
//! [`DirectoryAdmin`]: crate::data::DirectoryAdmin

mod atomic;
mod atomic_participant;
mod atomic_recovery;
mod atomic_resolver;
mod catalog;
mod dedicated;
mod directories;
mod follow;
pub(super) mod generation;
mod query;
mod remote;
mod schema;
mod shards;
mod transactions;

pub use atomic::{AtomicStep, AtomicStepHook, AtomicTransaction};
pub use atomic_recovery::{AtomicRecovery, AtomicResolution, UnresolvedAtomic, UnresolvedState};
pub use catalog::ShardedCatalog;
pub use directories::ShardedDirectories;
pub use query::ShardedQuery;
pub use schema::ShardedSchema;
pub use shards::Shards;
pub use transactions::{ShardedTransaction, ShardedTransactions};

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;

use self::generation::{Generation, data_source_of, open_slots};

use super::{LocalClient, RoutedClient};
use crate::catalog::{Catalog, check_shard_files};
use crate::data::DataClient;
use crate::engine::EngineConfig;
use crate::error::{Error, Result};
use crate::heat::{DEFAULT_HALF_LIFE, HeatRecorder};
use crate::map::{ShardMap, ShardMapSnapshot};
use crate::routing::{ResolvedRoute, RouteContext};

/// What every clone of a [`ShardedClient`] shares: the map served now, the catalog, the
/// settings, and the heat of routed calls.
pub(crate) struct Shared {
    catalog: Option<Catalog>,
    options: ShardedClientOptions,
    /// The generation calls use now; a call loads it without a lock.
    current: ArcSwap<Generation>,
    /// When the next catalog version check is due, in milliseconds since `epoch`.
    next_check_ms: AtomicU64,
    epoch: Instant,
    /// Held while a new map is being installed, so two callers do not both install it.
    switching: tokio::sync::Mutex<()>,
    /// Whether calls check the catalog's version (a master file); a catalog in etcd is watched.
    polls_catalog: bool,
    /// Ends the task following the catalog when the client goes away.
    _follower: std::sync::OnceLock<follow::FollowerStop>,
    /// Ends the background resolver of atomic transactions when the client goes away.
    _resolver: std::sync::OnceLock<atomic_resolver::ResolverStop>,
    /// The shards that opened holding atomic state, queued for the resolver's open pass.
    atomic_opened: Arc<atomic_resolver::OpenedShards>,
    /// Routed calls by bucket and hottest key, decaying; it outlives map activations.
    heat: HeatRecorder,
    /// Queries across shards already read, by their text.
    plans: crate::query::PlanCache,
}

/// A client over every shard of one map.
///
/// Route-bound work goes through [`for_route`](Self::for_route), whose client is a
/// [`DataClient`]; the sharded client is not one, having no route. The rest it hands out as
/// parts: [`shards`](Self::shards) (health, counts summed over every shard, heat),
/// [`query`](Self::query) (SQL on every shard, one `SELECT` merged across them),
/// [`catalog`](Self::catalog) (catalog state, updates, activation), [`schema`](Self::schema)
/// (schema migrations) and [`transactions`](Self::transactions) (routed transactions, and calls
/// routed by a transaction's id alone). It implements the operator contract,
/// [`ShardAdmin`](crate::data::ShardAdmin), in-process. Cloning is cheap and shares the shards.
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::client::{Params, ShardedClient, SqlData};
/// use shardlite::RouteContext;
///
/// let sharded = ShardedClient::open("data/master.db").await?;
/// let june = sharded.for_route(RouteContext::new("orders_by_month", "2026-06")?);
/// june.execute_sql("SELECT count(*) FROM orders WHERE order_month = ?1", Params::from(vec!["2026-06"])).await?;
/// # Ok(()) }
/// ```
///
/// Having no route, the sharded client is not a data client itself:
///
/// ```compile_fail
/// fn data_client(_: &dyn shardlite::client::DataClient) {}
/// # fn demo(sharded: shardlite::client::ShardedClient) {
/// data_client(&sharded); // a route's client is: `data_client(&sharded.for_route(route))`
/// # }
/// ```
#[derive(Clone)]
pub struct ShardedClient {
    inner: Arc<Shared>,
}

impl std::fmt::Debug for ShardedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedClient")
            .field("data_source", &self.inner.generation().data_source)
            .finish_non_exhaustive()
    }
}

/// Settings for a [`ShardedClient`].
#[derive(Debug, Clone)]
pub struct ShardedClientOptions {
    /// Settings applied to every local shard file.
    pub engine: EngineConfig,
    /// How often a client opened from a master checks whether another process activated a new
    /// map (a cheap version read on the next call after the interval). Default 250 ms.
    pub refresh_interval: Duration,
    /// How long an activation waits for open transactions on shards whose ownership changed
    /// before it rolls them back. Default 5 s.
    pub drain_timeout: Duration,
    /// How long the heat of routed calls takes to halve (see [`heat`](crate::heat)). Default
    /// 60 s.
    pub heat_half_life: Duration,
    /// Called after each step of an atomic commit with several participants (a test hook; see
    /// [`AtomicStepHook`]). Default none.
    pub atomic_step_hook: Option<AtomicStepHook>,
    /// How often the background resolver of atomic transactions visits the open shard files
    /// that may hold atomic state. A shard that opens holding some is resolved at once, whatever
    /// this is. Default none: a quarter of the abandon age, between 50 ms and 5 s.
    pub atomic_resolver_period: Option<Duration>,
    /// Whether a shard that opens holding atomic state (a prepared intent or a decision record)
    /// is resolved at once, on the resolver's task (see [`AtomicRecovery`]). `shardlite tx
    /// list` turns it off, so that listing changes nothing, and so does `tx resolve`, which
    /// resolves every shard itself. Default true.
    pub atomic_resolve_on_open: bool,
}

impl Default for ShardedClientOptions {
    fn default() -> Self {
        Self {
            engine: EngineConfig::default(),
            refresh_interval: Duration::from_millis(250),
            drain_timeout: Duration::from_secs(5),
            heat_half_life: DEFAULT_HALF_LIFE,
            atomic_step_hook: None,
            atomic_resolver_period: None,
            atomic_resolve_on_open: true,
        }
    }
}

impl ShardedClientOptions {
    /// The default settings with `engine` for the shard files.
    pub fn with_engine(engine: EngineConfig) -> Self {
        Self {
            engine,
            ..Self::default()
        }
    }
}

/// Shards one fan-out works on at once, at most: enough to keep the worker threads busy, and
/// never more than half the open-shard bound, so that routed calls keep finding a place.
const MAX_FAN_OUT_WIDTH: usize = 64;

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
        let map = match catalog.active_map().await {
            Err(Error::NoMap) if catalog.is_watched() => {
                let location = catalog.location();
                return Err(Error::Catalog {
                    reason: format!(
                        "'{location}' holds no catalog (no active map under its prefix): seed one with \
                         `shardlite seed --master {location} --map MAP.json`"
                    ),
                });
            }
            other => other?,
        };
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

    async fn build(map: ShardMap, catalog: Option<Catalog>, mut options: ShardedClientOptions) -> Result<Self> {
        crate::directory::check_routes(&map)?;
        let atomic_opened = Arc::<atomic_resolver::OpenedShards>::default();
        // Outside a runtime no resolver runs, so nothing would take the queue.
        if options.atomic_resolve_on_open && tokio::runtime::Handle::try_current().is_ok() {
            options.engine.atomic_open_hook = Some(atomic_resolver::hook(&atomic_opened));
        }
        let master = catalog.as_ref().map(Catalog::path);
        let shards = open_slots(&map, master, &options.engine, None).await;
        let generation = Generation {
            data_source: data_source_of(&map),
            map,
            shards,
            retired: Vec::new(),
        };
        let refresh = u64::try_from(options.refresh_interval.as_millis()).unwrap_or(u64::MAX);
        let interval = options.refresh_interval;
        let heat = HeatRecorder::new(generation.map.bucket_count(), options.heat_half_life);
        let client = Self {
            inner: Arc::new(Shared {
                polls_catalog: catalog.as_ref().is_some_and(|c| !c.is_watched()),
                catalog,
                options,
                current: ArcSwap::from_pointee(generation),
                next_check_ms: AtomicU64::new(refresh),
                epoch: Instant::now(),
                switching: tokio::sync::Mutex::new(()),
                _follower: std::sync::OnceLock::new(),
                _resolver: std::sync::OnceLock::new(),
                atomic_opened,
                heat,
                plans: crate::query::PlanCache::default(),
            }),
        };
        if let Some(catalog) = &client.inner.catalog
            && let Some(stop) = follow::start(catalog, Arc::downgrade(&client.inner), interval)
        {
            let _ = client.inner._follower.set(stop);
        }
        let options = &client.inner.options;
        let period = atomic_resolver::period(options.engine.atomic_abandon_age, options.atomic_resolver_period);
        if let Some(stop) = atomic_resolver::start(&Arc::downgrade(&client.inner), period, &client.inner.atomic_opened)
        {
            let _ = client.inner._resolver.set(stop);
        }
        Ok(client)
    }

    /// The map this client serves now (activation replaces it; a call that began before keeps
    /// the map it started with).
    pub fn map(&self) -> ActiveMap {
        ActiveMap(self.inner.generation())
    }

    /// A secret-free snapshot of the active map.
    pub fn map_snapshot(&self) -> ShardMapSnapshot {
        self.inner.generation().map.snapshot()
    }

    /// `sharded://{keyspace}?version={mapVersion}`.
    pub fn data_source(&self) -> String {
        self.inner.generation().data_source.clone()
    }

    /// Resolves a route against the active map.
    pub fn resolve_route(&self, route: &RouteContext) -> Result<ResolvedRoute> {
        Ok(self
            .inner
            .generation()
            .map
            .resolve(route.keyspace(), route.key())?
            .to_resolved())
    }

    /// A client bound to one route: every call runs on the shard the route resolves to.
    pub fn for_route(&self, route: RouteContext) -> RoutedClient {
        RoutedClient {
            sharded: self.clone(),
            route,
            resolved: Default::default(),
        }
    }

    /// The client of one shard, bypassing routing (for operators and diagnostics).
    pub fn for_shard_id(&self, shard_id: &str) -> Result<Arc<dyn DataClient>> {
        let generation = self.inner.generation();
        let index = generation
            .map
            .shard_index(shard_id)
            .ok_or_else(|| Error::UnknownShard {
                shard_id: shard_id.trim().to_owned(),
            })?;
        generation.slot_client(index)
    }

    /// The in-process file of shard `shard_id` in the current generation; `None` when the
    /// shard is remote, disabled, unavailable or unknown. Data moves use it to copy between
    /// two local files inside SQLite.
    pub(crate) fn local_shard(&self, shard_id: &str) -> Option<LocalClient> {
        self.inner.generation().local_of(shard_id)
    }

    /// Its shards: health, counts summed over every shard, heat.
    pub fn shards(&self) -> Shards<'_> {
        Shards::new(self)
    }

    /// SQL on every enabled shard, and one `SELECT` merged across them.
    pub fn query(&self) -> ShardedQuery<'_> {
        ShardedQuery::new(self)
    }

    /// Its catalog: the master catalog it was opened from, the catalog state, map updates and
    /// live activation.
    pub fn catalog(&self) -> ShardedCatalog<'_> {
        ShardedCatalog::new(self)
    }

    /// Its shard directories: lookups on the live map, entry changes, entry pages.
    pub fn directories(&self) -> ShardedDirectories<'_> {
        ShardedDirectories::new(self)
    }

    /// The client bound to the route a directory entry names (see
    /// [`ShardedDirectories::for_lookup`]).
    pub async fn for_lookup(&self, directory: &str, lookup_key: &str) -> Result<RoutedClient> {
        self.directories().for_lookup(directory, lookup_key).await
    }

    /// Schema migrations and schema status on every enabled shard.
    pub fn schema(&self) -> ShardedSchema<'_> {
        ShardedSchema::new(self)
    }

    /// Routed transactions, and transaction calls routed by the id alone.
    pub fn transactions(&self) -> ShardedTransactions<'_> {
        ShardedTransactions::new(self)
    }

    /// Begins an atomic transaction: its handle executes on any route, and its commit applies
    /// on every shard it wrote or on none (see [`AtomicTransaction`]). Dropped without a commit,
    /// it rolls back.
    pub fn begin_atomic(&self) -> AtomicTransaction {
        AtomicTransaction::new(self.clone())
    }

    /// Recovery of atomic transactions: what is unresolved, and finishing it.
    pub fn atomic_recovery(&self) -> AtomicRecovery<'_> {
        AtomicRecovery::new(self)
    }

    /// What every clone shares, for the crate's own clients (route-bound, blocking, dedicated).
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner
    }
}

/// The map a [`ShardedClient`] serves, held for as long as the caller needs it.
#[derive(Clone)]
pub struct ActiveMap(Arc<Generation>);

impl std::ops::Deref for ActiveMap {
    type Target = ShardMap;

    fn deref(&self) -> &ShardMap {
        &self.0.map
    }
}

impl ActiveMap {
    /// Jobs waiting on each in-process shard file of this map (its writer's and readers'
    /// queues), by shard id; 0 for a closed file. Remote and disabled shards are left out.
    pub fn queued_jobs(&self) -> Vec<(String, usize)> {
        self.0
            .map
            .shards()
            .iter()
            .zip(&self.0.shards)
            .filter_map(|(shard, slot)| match slot {
                generation::ShardSlot::Ready { local: Some(local), .. } => {
                    Some((shard.id.clone(), local.database().queued_jobs()))
                }
                _ => None,
            })
            .collect()
    }

    /// The id of the in-process shard of this map whose file is `file` (an absolute, canonical
    /// path, as the point-in-time archive names files); `None` when no enabled shard's is.
    pub fn shard_of_file(&self, file: &Path) -> Option<String> {
        self.0
            .map
            .shards()
            .iter()
            .zip(&self.0.shards)
            .find_map(|(shard, slot)| match slot {
                generation::ShardSlot::Ready { local: Some(local), .. } => {
                    let path = local.database().path();
                    let same = path.file_name() == file.file_name()
                        && std::fs::canonicalize(path).is_ok_and(|path| path == file);
                    same.then(|| shard.id.clone())
                }
                _ => None,
            })
    }
}

impl std::fmt::Debug for ActiveMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.map.fmt(f)
    }
}

impl Shared {
    /// Runs `work` (one future per shard) a bounded number at a time, answering in order: a
    /// fan-out over ten thousand shards holds a few open at once, not all of them.
    pub(super) async fn bounded<F: Future>(&self, work: Vec<F>) -> Vec<F::Output> {
        use futures_util::StreamExt as _;
        let width = (self.options.engine.max_open_shards / 2).clamp(1, MAX_FAN_OUT_WIDTH);
        futures_util::stream::iter(work).buffered(width).collect().await
    }

    /// The recorder route-bound clients count their calls in.
    pub(crate) fn heat(&self) -> &HeatRecorder {
        &self.heat
    }
}
