//! The sharded client: one map, one client per shard, and routing of every call.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::future::join_all;

use super::LocalClient;
use crate::catalog::Catalog;
use crate::data::{
    CatalogState, DataClient, DatabaseInfo, DocumentPage, Params, ProcedureDefinition, Row, RowPage, SavedQuery,
    ShardSqlResult, ShardStatus, SqlResult, TableSchema, TransactionInfo, Value,
};
use crate::engine::EngineConfig;
use crate::error::{Error, Result};
use crate::map::{ShardMap, ShardMapSnapshot, ShardRole, ShardTarget};
use crate::routing::{ResolvedRoute, RouteContext};
use crate::transaction::TransactionId;

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
    /// Fails with [`Error::NoMap`] when the master holds no map (callers such as the daemon
    /// then serve the file as one plain database).
    pub async fn open(master: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(master, ShardedClientOptions::default()).await
    }

    /// [`open`](Self::open) with explicit settings.
    pub async fn open_with(master: impl AsRef<Path>, options: ShardedClientOptions) -> Result<Self> {
        let catalog = Catalog::open(master).await?;
        let map = catalog.active_map().await?;
        Self::build(map, Some(catalog), options).await
    }

    /// A client over a map held in memory (no catalog).
    pub async fn from_map(map: ShardMap) -> Result<Self> {
        Self::build(map, None, ShardedClientOptions::default()).await
    }

    /// [`from_map`](Self::from_map) with explicit settings.
    pub async fn from_map_with(map: ShardMap, options: ShardedClientOptions) -> Result<Self> {
        Self::build(map, None, options).await
    }

    async fn build(map: ShardMap, catalog: Option<Catalog>, options: ShardedClientOptions) -> Result<Self> {
        let opened = join_all(map.shards().iter().map(|shard| {
            let engine = options.engine.clone();
            async move {
                if !shard.enabled {
                    return ShardSlot::Disabled;
                }
                match &shard.target {
                    ShardTarget::DataSource(path) => {
                        match LocalClient::open_with(path, shard.id.clone(), engine).await {
                            Ok(local) => ShardSlot::Ready {
                                client: Arc::new(local.clone()),
                                local: Some(local),
                            },
                            Err(err) => ShardSlot::Unavailable(err.to_string()),
                        }
                    }
                    ShardTarget::Endpoint { endpoint, transport } => {
                        let mut remote = RemoteShard::new(endpoint.clone(), *transport);
                        remote.api_key = shard.api_key.clone();
                        remote.api_key_header = shard.api_key_header_name.clone();
                        remote.open()
                    }
                    ShardTarget::ConnectionString(secret) => {
                        open_connection_string_shard(&shard.id, secret, engine).await
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

    /// The catalog state: live map, pending map (if a different version is stored) and history.
    pub async fn catalog_state(&self) -> Result<CatalogState> {
        let active_map = self.map_snapshot();
        let Some(catalog) = &self.inner.catalog else {
            return Ok(CatalogState {
                source: "in-memory".to_owned(),
                is_catalog_enabled: false,
                active_map,
                pending_map: None,
                history: Vec::new(),
            });
        };
        let pending_map = match catalog.pending_options().await? {
            Some(options) if u64::try_from(options.map_version).ok() != Some(self.map().version()) => {
                Some(ShardMap::new(options)?.snapshot())
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

    fn slot_client(&self, index: usize) -> Result<Arc<dyn DataClient>> {
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
    fn route_client(&self, route: &RouteContext) -> Result<(usize, Arc<dyn DataClient>)> {
        let resolution = self.inner.map.resolve(route.keyspace(), route.key())?;
        Ok((resolution.shard_index, self.slot_client(resolution.shard_index)?))
    }

    /// Each enabled shard's index and client, in definition order (unavailable ones as errors).
    fn enabled_shards(&self) -> impl Iterator<Item = (usize, Result<Arc<dyn DataClient>>)> + '_ {
        self.inner
            .shards
            .iter()
            .enumerate()
            .filter(|(_, slot)| !matches!(slot, ShardSlot::Disabled))
            .map(|(index, _)| (index, self.slot_client(index)))
    }

    /// Probes every shard (in parallel) and reports them in definition order.
    pub async fn status(&self) -> Vec<ShardStatus> {
        let map = &self.inner.map;
        join_all(map.shards().iter().enumerate().map(|(index, shard)| async move {
            let data_source = match &shard.target {
                ShardTarget::DataSource(path) => Some(path.clone()),
                ShardTarget::Endpoint { endpoint, .. } => Some(endpoint.clone()),
                ShardTarget::ConnectionString(_) => None,
            };
            let probe = if shard.enabled {
                match self.slot_client(index) {
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
                primary_shard_id: shard.primary_shard_id.clone(),
                promotion_eligible: shard.promotion_eligible,
                can_promote: healthy && shard.role == ShardRole::Replica && shard.promotion_eligible,
                replication_lag_bytes: shard.replication_lag_bytes,
                last_replicated_utc: shard.last_replicated_utc.clone(),
                error: probe.as_ref().err().map(ToString::to_string),
                info: probe.ok(),
            }
        }))
        .await
    }

    /// Runs SQL (typically schema setup) on every enabled shard in parallel. One shard failing
    /// does not stop the others; results are in definition order.
    pub async fn execute_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        require_sql(sql)?;
        Ok(self
            .fan_out(|client| async move { client.execute_sql(sql, Params::none()).await })
            .await)
    }

    /// Runs read-only SQL on every enabled shard in parallel, on connections that cannot write.
    ///
    /// Fails with [`Error::ReadOnlyViolation`] (and nothing runs anywhere) when any statement
    /// is not a read-only query; other per-shard failures are reported per shard.
    pub async fn execute_read_only_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        require_sql(sql)?;
        let mut violation = None;
        let results = self
            .fan_out(|client| async move { client.execute_read_only_sql(sql, Params::none()).await })
            .await;
        for result in &results {
            if result.error_code.as_deref() == Some(crate::ErrorKind::ReadOnly.code()) {
                violation = result.error.clone();
            }
        }
        match violation {
            Some(reason) => Err(Error::ReadOnlyViolation {
                reason: reason
                    .split_once("rejected: ")
                    .map_or(reason.clone(), |(_, r)| r.to_owned()),
            }),
            None => Ok(results),
        }
    }

    async fn fan_out<'a, F, Fut>(&'a self, run: F) -> Vec<ShardSqlResult>
    where
        F: Fn(Arc<dyn DataClient>) -> Fut,
        Fut: std::future::Future<Output = Result<SqlResult>> + 'a,
    {
        let map = &self.inner.map;
        join_all(self.enabled_shards().map(|(index, client)| {
            let run = &run;
            async move {
                let outcome = match client {
                    Ok(client) => run(client).await,
                    Err(err) => Err(err),
                };
                ShardSqlResult::from_outcome(&map.shards()[index].id, outcome)
            }
        }))
        .await
    }

    /// Begins a transaction on the shard `route` resolves to. The guard rolls back when
    /// dropped without [`commit`](ShardedTransaction::commit).
    pub async fn begin(&self, route: &RouteContext) -> Result<ShardedTransaction> {
        let info = self.begin_on(route).await?;
        Ok(ShardedTransaction {
            sharded: self.clone(),
            id: TransactionId::parse(&info.transaction_id)?,
            expires_at_utc: info.expires_at_utc,
            finished: false,
        })
    }

    async fn begin_on(&self, route: &RouteContext) -> Result<TransactionInfo> {
        let (index, client) = self.route_client(route)?;
        let inner = client.begin_transaction().await?;
        let id = TransactionId::new(
            self.inner.map.version(),
            self.inner.map.shards()[index].id.clone(),
            inner.transaction_id,
        );
        Ok(TransactionInfo {
            transaction_id: id.to_string(),
            expires_at_utc: inner.expires_at_utc,
        })
    }

    /// Checks a transaction id against the live map and an optional route; returns the id and
    /// the shard's client.
    fn transaction_target(
        &self,
        transaction_id: &str,
        route: Option<&RouteContext>,
    ) -> Result<(TransactionId, usize, Arc<dyn DataClient>)> {
        let id = TransactionId::parse(transaction_id)?;
        let map = &self.inner.map;
        if id.map_version() != map.version() {
            return Err(Error::StaleMapVersion {
                transaction_id: transaction_id.to_owned(),
                transaction_version: id.map_version(),
                active_version: map.version(),
            });
        }
        let index = map.shard_index(id.shard_id()).ok_or_else(|| Error::UnknownShard {
            shard_id: id.shard_id().to_owned(),
        })?;
        if let Some(route) = route {
            let resolution = map.resolve(route.keyspace(), route.key())?;
            if resolution.shard_index != index {
                return Err(Error::TransactionRouteConflict {
                    transaction_id: transaction_id.to_owned(),
                    transaction_shard_id: map.shards()[index].id.clone(),
                    route_shard_id: resolution.shard_id.to_owned(),
                });
            }
        }
        Ok((id, index, self.slot_client(index)?))
    }

    async fn tx_execute(
        &self,
        transaction_id: &str,
        route: Option<&RouteContext>,
        sql: &str,
        params: Params,
    ) -> Result<SqlResult> {
        let (id, _, client) = self.transaction_target(transaction_id, route)?;
        client
            .execute_in_transaction(id.inner_id(), sql, params)
            .await
            .map_err(|err| outer_id(err, transaction_id))
    }

    async fn tx_commit(&self, transaction_id: &str, route: Option<&RouteContext>) -> Result<()> {
        let (id, _, client) = self.transaction_target(transaction_id, route)?;
        client
            .commit_transaction(id.inner_id())
            .await
            .map_err(|err| outer_id(err, transaction_id))
    }

    async fn tx_rollback(&self, transaction_id: &str, route: Option<&RouteContext>) -> Result<()> {
        let (id, _, client) = self.transaction_target(transaction_id, route)?;
        client
            .rollback_transaction(id.inner_id())
            .await
            .map_err(|err| outer_id(err, transaction_id))
    }

    fn abandon(&self, id: &TransactionId) {
        let Some(index) = self.inner.map.shard_index(id.shard_id()) else {
            return;
        };
        match &self.inner.shards[index] {
            ShardSlot::Ready { local: Some(local), .. } => local.abandon_transaction(id.inner_id()),
            ShardSlot::Ready { client, .. } => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    let client = Arc::clone(client);
                    let inner = id.inner_id().to_owned();
                    runtime.spawn(async move {
                        let _ = client.rollback_transaction(&inner).await;
                    });
                }
            }
            _ => {}
        }
    }

    async fn aggregate_info(&self) -> Result<DatabaseInfo> {
        let mut total = DatabaseInfo {
            data_source: self.inner.data_source.clone(),
            ..DatabaseInfo::default()
        };
        let infos = join_all(
            self.enabled_shards()
                .map(|(_, client)| async move { client?.info().await }),
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
}

/// A shard served by another daemon (one plain database behind it).
struct RemoteShard {
    endpoint: String,
    transport: crate::map::Transport,
    api_key: Option<crate::map::Secret>,
    api_key_header: Option<String>,
    connect_timeout: Option<std::time::Duration>,
    request_timeout: Option<std::time::Duration>,
}

impl RemoteShard {
    fn new(endpoint: String, transport: crate::map::Transport) -> Self {
        Self {
            endpoint,
            transport,
            api_key: None,
            api_key_header: None,
            connect_timeout: None,
            request_timeout: None,
        }
    }

    /// A client for the shard's daemon. Remote clients connect lazily, so an unreachable daemon
    /// does not stop the others from opening: it shows as unhealthy in status and its routes fail
    /// with a transport error naming the endpoint.
    #[cfg(any(feature = "grpc", feature = "http"))]
    fn open(self) -> ShardSlot {
        use crate::map::Transport;
        use crate::transport::RemoteOptions;

        let mut options = RemoteOptions::new(self.endpoint);
        if let Some(key) = self.api_key {
            options = options.with_api_key(key.expose());
        }
        if let Some(header) = self.api_key_header {
            options = options.with_api_key_header(header);
        }
        if let Some(timeout) = self.connect_timeout {
            options = options.with_connect_timeout(timeout);
        }
        if let Some(timeout) = self.request_timeout {
            options = options.with_request_timeout(timeout);
        }
        let client: Result<Arc<dyn DataClient>> = match self.transport {
            #[cfg(feature = "grpc")]
            Transport::Grpc => crate::transport::grpc::GrpcClient::new(options).map(|c| Arc::new(c) as _),
            #[cfg(feature = "http")]
            Transport::Http => crate::transport::http::HttpClient::new(options).map(|c| Arc::new(c) as _),
            other => Err(Error::invalid_argument(
                "transport",
                format!("remote shards over {} need a build with that feature", other.as_str()),
            )),
        };
        match client {
            Ok(client) => ShardSlot::Ready { client, local: None },
            Err(err) => ShardSlot::Unavailable(err.to_string()),
        }
    }

    #[cfg(not(any(feature = "grpc", feature = "http")))]
    fn open(self) -> ShardSlot {
        ShardSlot::Unavailable(format!(
            "the shard at {} is reached over {}, which needs a build with the '{}' feature",
            self.endpoint,
            self.transport.as_str(),
            self.transport.as_str()
        ))
    }
}

/// Opens a shard defined by a connection string. A `Data Source` is opened in-process; the
/// string's busy and transaction timeouts override the map-wide settings.
async fn open_connection_string_shard(
    shard_id: &str,
    secret: &crate::map::Secret,
    mut engine: EngineConfig,
) -> ShardSlot {
    // Parse errors name the key but never echo the secret itself.
    let options = match crate::options::ConnectionOptions::parse(secret.expose()) {
        Ok(options) => options,
        Err(err) => return ShardSlot::Unavailable(err.to_string()),
    };
    if options.route().is_some() {
        return ShardSlot::Unavailable(
            "a shard's connection string must not carry Shard Keyspace/Shard Key: the map routes to it".to_owned(),
        );
    }
    let Some(path) = options.data_source() else {
        let (Some(endpoint), Some(transport)) = (options.endpoint(), options.transport()) else {
            return ShardSlot::Unavailable("the connection string names neither Data Source nor Endpoint".to_owned());
        };
        let mut remote = RemoteShard::new(endpoint.to_owned(), transport);
        remote.api_key = options.api_key().cloned();
        remote.api_key_header = options.api_key_header().map(str::to_owned);
        remote.connect_timeout = options.connect_timeout();
        remote.request_timeout = options.command_timeout();
        return remote.open();
    };
    if let Some(busy) = options.busy_timeout() {
        engine.busy_timeout = busy;
    }
    if let Some(idle) = options.idle_transaction_timeout() {
        engine.transaction_idle_timeout = (!idle.is_zero()).then_some(idle);
    }
    match LocalClient::open_with(path, shard_id.to_owned(), engine).await {
        Ok(local) => ShardSlot::Ready {
            client: Arc::new(local.clone()),
            local: Some(local),
        },
        Err(err) => ShardSlot::Unavailable(err.to_string()),
    }
}

/// Errors from a shard name the shard's inner id; callers know the sharded id.
fn outer_id(err: Error, transaction_id: &str) -> Error {
    match err {
        Error::TransactionNotFound { .. } => Error::TransactionNotFound {
            transaction_id: transaction_id.to_owned(),
        },
        Error::TransactionExpired { .. } => Error::TransactionExpired {
            transaction_id: transaction_id.to_owned(),
        },
        other => other,
    }
}

fn require_sql(sql: &str) -> Result<()> {
    if sql.trim().is_empty() {
        return Err(Error::invalid_argument("sql", "the SQL text is empty"));
    }
    Ok(())
}

/// An open routed transaction. Dropping it without [`commit`](Self::commit) rolls it back.
///
/// ```no_run
/// # async fn demo(sharded: shardlite::client::ShardedClient) -> shardlite::Result<()> {
/// use shardlite::client::Params;
/// use shardlite::RouteContext;
///
/// let tx = sharded.begin(&RouteContext::new("orders_by_month", "2026-06")?).await?;
/// tx.execute("INSERT INTO orders (order_month) VALUES (?1)", Params::from(vec!["2026-06"])).await?;
/// tx.commit().await?;
/// # Ok(()) }
/// ```
#[must_use = "a transaction rolls back when dropped; call commit to keep its changes"]
pub struct ShardedTransaction {
    sharded: ShardedClient,
    id: TransactionId,
    expires_at_utc: Option<String>,
    finished: bool,
}

impl std::fmt::Debug for ShardedTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedTransaction")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ShardedTransaction {
    /// The shard-prefixed id (`csdbshard:{mapVersion}:{shardId}:{inner}`).
    pub fn id(&self) -> &TransactionId {
        &self.id
    }

    /// When the transaction expires if left idle, as reported at begin.
    pub fn expires_at_utc(&self) -> Option<&str> {
        self.expires_at_utc.as_deref()
    }

    /// Executes SQL inside the transaction.
    pub async fn execute(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.sharded.tx_execute(&self.id.to_string(), None, sql, params).await
    }

    /// Commits.
    pub async fn commit(mut self) -> Result<()> {
        self.finished = true;
        self.sharded.tx_commit(&self.id.to_string(), None).await
    }

    /// Rolls back.
    pub async fn rollback(mut self) -> Result<()> {
        self.finished = true;
        self.sharded.tx_rollback(&self.id.to_string(), None).await
    }
}

impl Drop for ShardedTransaction {
    fn drop(&mut self) {
        if !self.finished {
            self.sharded.abandon(&self.id);
        }
    }
}

/// A [`DataClient`] bound to one route. Every call resolves the route and runs on that shard;
/// transaction calls also check that the id belongs to the route's shard.
#[derive(Clone, Debug)]
pub struct RoutedClient {
    sharded: ShardedClient,
    route: RouteContext,
}

impl RoutedClient {
    /// The route this client is bound to.
    pub fn route(&self) -> &RouteContext {
        &self.route
    }

    /// Where the route resolves.
    pub fn resolve(&self) -> Result<ResolvedRoute> {
        self.sharded.resolve_route(&self.route)
    }

    /// Begins an RAII transaction on this route's shard.
    pub async fn begin(&self) -> Result<ShardedTransaction> {
        self.sharded.begin(&self.route).await
    }

    fn shard(&self) -> Result<Arc<dyn DataClient>> {
        Ok(self.sharded.route_client(&self.route)?.1)
    }
}

macro_rules! routed {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {
        $self.shard()?.$method($($arg),*).await
    };
}

#[async_trait]
impl DataClient for RoutedClient {
    async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        routed!(self.execute_sql(sql, params))
    }
    async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        routed!(self.execute_read_only_sql(sql, params))
    }
    async fn info(&self) -> Result<DatabaseInfo> {
        routed!(self.info())
    }
    async fn list_tables(&self) -> Result<Vec<String>> {
        routed!(self.list_tables())
    }
    async fn table_schema(&self, table: &str) -> Result<TableSchema> {
        routed!(self.table_schema(table))
    }
    async fn count_rows(&self, table: &str) -> Result<u64> {
        routed!(self.count_rows(table))
    }
    async fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> Result<RowPage> {
        routed!(self.browse_rows(table, page, page_size))
    }
    async fn get_row(&self, table: &str, key: Value) -> Result<Option<Row>> {
        routed!(self.get_row(table, key))
    }
    async fn insert_row(&self, table: &str, values: Row) -> Result<u64> {
        routed!(self.insert_row(table, values))
    }
    async fn update_row(&self, table: &str, key: Value, values: Row) -> Result<u64> {
        routed!(self.update_row(table, key, values))
    }
    async fn delete_row(&self, table: &str, key: Value) -> Result<u64> {
        routed!(self.delete_row(table, key))
    }
    async fn list_collections(&self) -> Result<Vec<String>> {
        routed!(self.list_collections())
    }
    async fn count_documents(&self, collection: &str) -> Result<u64> {
        routed!(self.count_documents(collection))
    }
    async fn browse_documents(&self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage> {
        routed!(self.browse_documents(collection, page, page_size))
    }
    async fn get_document(&self, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
        routed!(self.get_document(collection, key))
    }
    async fn put_document(&self, collection: &str, key: &str, document: serde_json::Value) -> Result<()> {
        routed!(self.put_document(collection, key, document))
    }
    async fn delete_document(&self, collection: &str, key: &str) -> Result<bool> {
        routed!(self.delete_document(collection, key))
    }
    async fn drop_collection(&self, collection: &str) -> Result<bool> {
        routed!(self.drop_collection(collection))
    }
    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>> {
        routed!(self.list_saved_queries())
    }
    async fn get_saved_query(&self, name: &str) -> Result<Option<SavedQuery>> {
        routed!(self.get_saved_query(name))
    }
    async fn put_saved_query(&self, name: &str, sql_text: &str) -> Result<SavedQuery> {
        routed!(self.put_saved_query(name, sql_text))
    }
    async fn delete_saved_query(&self, name: &str) -> Result<bool> {
        routed!(self.delete_saved_query(name))
    }
    async fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>> {
        routed!(self.list_procedures())
    }
    async fn get_procedure(&self, name: &str) -> Result<Option<ProcedureDefinition>> {
        routed!(self.get_procedure(name))
    }
    async fn put_procedure(&self, definition: ProcedureDefinition) -> Result<ProcedureDefinition> {
        routed!(self.put_procedure(definition))
    }
    async fn delete_procedure(&self, name: &str) -> Result<bool> {
        routed!(self.delete_procedure(name))
    }
    async fn execute_procedure(&self, name: &str, args: Params) -> Result<SqlResult> {
        routed!(self.execute_procedure(name, args))
    }
    async fn begin_transaction(&self) -> Result<TransactionInfo> {
        self.sharded.begin_on(&self.route).await
    }
    async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        self.sharded
            .tx_execute(transaction_id, Some(&self.route), sql, params)
            .await
    }
    async fn commit_transaction(&self, transaction_id: &str) -> Result<()> {
        self.sharded.tx_commit(transaction_id, Some(&self.route)).await
    }
    async fn rollback_transaction(&self, transaction_id: &str) -> Result<()> {
        self.sharded.tx_rollback(transaction_id, Some(&self.route)).await
    }
}

#[async_trait]
impl super::ShardAdmin for ShardedClient {
    async fn shard_map(&self) -> Result<ShardMapSnapshot> {
        Ok(self.map_snapshot())
    }
    async fn resolve_route(&self, route: &RouteContext) -> Result<ResolvedRoute> {
        ShardedClient::resolve_route(self, route)
    }
    async fn shard_status(&self) -> Result<Vec<ShardStatus>> {
        Ok(self.status().await)
    }
    async fn execute_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        ShardedClient::execute_sql_on_all_shards(self, sql).await
    }
    async fn execute_read_only_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        ShardedClient::execute_read_only_sql_on_all_shards(self, sql).await
    }
    async fn catalog_state(&self) -> Result<CatalogState> {
        ShardedClient::catalog_state(self).await
    }
}

/// Without a route the sharded client can only aggregate info and route transactions by id;
/// everything else fails with [`Error::RouteRequired`].
#[async_trait]
impl DataClient for ShardedClient {
    async fn execute_sql(&self, _sql: &str, _params: Params) -> Result<SqlResult> {
        Err(Error::RouteRequired)
    }
    async fn execute_read_only_sql(&self, _sql: &str, _params: Params) -> Result<SqlResult> {
        Err(Error::RouteRequired)
    }
    async fn info(&self) -> Result<DatabaseInfo> {
        self.aggregate_info().await
    }
    async fn list_tables(&self) -> Result<Vec<String>> {
        Err(Error::RouteRequired)
    }
    async fn table_schema(&self, _table: &str) -> Result<TableSchema> {
        Err(Error::RouteRequired)
    }
    async fn count_rows(&self, _table: &str) -> Result<u64> {
        Err(Error::RouteRequired)
    }
    async fn browse_rows(&self, _table: &str, _page: u32, _page_size: u32) -> Result<RowPage> {
        Err(Error::RouteRequired)
    }
    async fn get_row(&self, _table: &str, _key: Value) -> Result<Option<Row>> {
        Err(Error::RouteRequired)
    }
    async fn insert_row(&self, _table: &str, _values: Row) -> Result<u64> {
        Err(Error::RouteRequired)
    }
    async fn update_row(&self, _table: &str, _key: Value, _values: Row) -> Result<u64> {
        Err(Error::RouteRequired)
    }
    async fn delete_row(&self, _table: &str, _key: Value) -> Result<u64> {
        Err(Error::RouteRequired)
    }
    async fn list_collections(&self) -> Result<Vec<String>> {
        Err(Error::RouteRequired)
    }
    async fn count_documents(&self, _collection: &str) -> Result<u64> {
        Err(Error::RouteRequired)
    }
    async fn browse_documents(&self, _collection: &str, _page: u32, _page_size: u32) -> Result<DocumentPage> {
        Err(Error::RouteRequired)
    }
    async fn get_document(&self, _collection: &str, _key: &str) -> Result<Option<serde_json::Value>> {
        Err(Error::RouteRequired)
    }
    async fn put_document(&self, _collection: &str, _key: &str, _document: serde_json::Value) -> Result<()> {
        Err(Error::RouteRequired)
    }
    async fn delete_document(&self, _collection: &str, _key: &str) -> Result<bool> {
        Err(Error::RouteRequired)
    }
    async fn drop_collection(&self, _collection: &str) -> Result<bool> {
        Err(Error::RouteRequired)
    }
    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>> {
        Err(Error::RouteRequired)
    }
    async fn get_saved_query(&self, _name: &str) -> Result<Option<SavedQuery>> {
        Err(Error::RouteRequired)
    }
    async fn put_saved_query(&self, _name: &str, _sql_text: &str) -> Result<SavedQuery> {
        Err(Error::RouteRequired)
    }
    async fn delete_saved_query(&self, _name: &str) -> Result<bool> {
        Err(Error::RouteRequired)
    }
    async fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>> {
        Err(Error::RouteRequired)
    }
    async fn get_procedure(&self, _name: &str) -> Result<Option<ProcedureDefinition>> {
        Err(Error::RouteRequired)
    }
    async fn put_procedure(&self, _definition: ProcedureDefinition) -> Result<ProcedureDefinition> {
        Err(Error::RouteRequired)
    }
    async fn delete_procedure(&self, _name: &str) -> Result<bool> {
        Err(Error::RouteRequired)
    }
    async fn execute_procedure(&self, _name: &str, _args: Params) -> Result<SqlResult> {
        Err(Error::RouteRequired)
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
