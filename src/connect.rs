//! Opening a connection string: which client a `Data Source` or an `Endpoint` gives.
//!
//! [`connect`] documents the rules; [`ConnectedClient`] is what it returns.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::catalog::CatalogLocation;
use crate::client::{LocalClient, RoutedClient, ShardedClient, ShardedClientOptions};
use crate::data::{DataClient, DirectoryAdmin, DirectoryLookup, ReshardAdmin, ShardAdmin};
use crate::engine::EngineConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::map::{ShardTarget, Transport, resolve_data_source};
use crate::options::ConnectionOptions;
use crate::routing::{ResolvedRoute, RouteContext};

/// What a connection string opened.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionTarget {
    /// A plain, unsharded SQLite file.
    Local {
        /// The `Data Source` as given.
        data_source: String,
    },
    /// One shard of a master catalog's map, chosen by resolving the connection's route in-process.
    Shard {
        /// The master catalog (`Data Source`) as given.
        master: String,
        /// Where the route resolved: shard id, bucket, token, map version, pin or bucket range.
        resolution: ResolvedRoute,
        /// The shard's file, when the map names one (`dataSource`), a relative path resolved
        /// against the master's folder; `None` for connection-string shards, whose text may hold
        /// secrets.
        shard_data_source: Option<String>,
    },
    /// A master catalog with an active map, opened without a route.
    Sharded {
        /// The master catalog (`Data Source`) as given.
        master: String,
        /// The map's keyspace.
        keyspace: String,
        /// The map's version.
        map_version: u64,
    },
    /// A daemon (`Endpoint`), which resolves the connection's route (sent on every call) itself.
    Remote {
        /// The daemon's endpoint.
        endpoint: String,
        /// `Http` or `Grpc`.
        transport: Transport,
    },
}

impl fmt::Display for ConnectionTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local { data_source } => write!(f, "plain database '{data_source}'"),
            Self::Shard { master, resolution, .. } => write!(
                f,
                "shard '{}' of master catalog '{master}' (route {}/{}, map version {})",
                resolution.shard_id, resolution.keyspace, resolution.key, resolution.map_version
            ),
            Self::Sharded {
                master,
                keyspace,
                map_version,
            } => write!(
                f,
                "master catalog '{master}' (keyspace '{keyspace}', map version {map_version}, no route)"
            ),
            Self::Remote { endpoint, transport } => write!(f, "daemon at {endpoint} over {}", transport.as_str()),
        }
    }
}

/// What a connection string opened, with a description of what it reaches
/// ([`target`](Self::target)): each variant holds the client it opened and offers the parts that
/// client can serve.
///
/// Cloning is cheap and shares the open files.
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::client::{Params, SqlData};
/// use shardlite::connect::{connect, ConnectedClient};
/// use shardlite::options::ConnectionOptions;
///
/// let options = ConnectionOptions::parse(
///     "Data Source=data/master.db;Shard Keyspace=orders_by_month;Shard Key=2026-06",
/// )?;
/// match connect(&options).await? {
///     ConnectedClient::Shard { client, .. } => {
///         println!("bound to shard {}", client.resolve()?.shard_id);
///         client.execute_sql("SELECT 1", Params::none()).await?;
///     }
///     ConnectedClient::Sharded { client, .. } => println!("every shard of map {}", client.map().version()),
///     other => println!("{}", other.target()),
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum ConnectedClient {
    /// A plain, unsharded SQLite file ([`ConnectionTarget::Local`]).
    Local {
        /// The file's client.
        client: LocalClient,
        /// What was opened.
        target: ConnectionTarget,
    },
    /// One route's shard of a master catalog's map, resolved in-process
    /// ([`ConnectionTarget::Shard`]).
    Shard {
        /// The route's client; [`RoutedClient::sharded`] reaches every shard.
        client: RoutedClient,
        /// What was opened.
        target: ConnectionTarget,
    },
    /// A master catalog's map, without a route ([`ConnectionTarget::Sharded`]).
    Sharded {
        /// The client over every shard (not a data client: it has no route).
        client: ShardedClient,
        /// What was opened.
        target: ConnectionTarget,
    },
    /// A daemon ([`ConnectionTarget::Remote`]).
    Remote {
        /// The daemon's client.
        client: RemoteClient,
        /// What was opened.
        target: ConnectionTarget,
    },
}

impl fmt::Debug for ConnectedClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectedClient")
            .field("target", self.target())
            .finish_non_exhaustive()
    }
}

impl ConnectedClient {
    /// The data-operation client: route-bound, local, or a daemon's (which answers "route
    /// required" itself when it needs a route and was given none).
    ///
    /// Fails with [`Error::RouteRequired`] for a master catalog opened in-process without a
    /// route ([`Sharded`](Self::Sharded)): its client serves every shard, and data calls need a
    /// route's client ([`ShardedClient::for_route`]).
    pub fn client(&self) -> Result<Arc<dyn DataClient>> {
        match self {
            Self::Local { client, .. } => Ok(Arc::new(client.clone())),
            Self::Shard { client, .. } => Ok(Arc::new(client.clone())),
            Self::Sharded { .. } => Err(Error::RouteRequired),
            Self::Remote { client, .. } => Ok(Arc::clone(&client.data)),
        }
    }

    /// The data-operation client, by value; fails as [`client`](Self::client) does.
    pub fn into_client(self) -> Result<Arc<dyn DataClient>> {
        self.client()
    }

    /// What was opened.
    pub fn target(&self) -> &ConnectionTarget {
        match self {
            Self::Local { target, .. }
            | Self::Shard { target, .. }
            | Self::Sharded { target, .. }
            | Self::Remote { target, .. } => target,
        }
    }

    /// Shard-admin operations (map, status, fan-out, catalog, schema): in-process for a master
    /// catalog with a map, over the network for a daemon; `None` for a plain database.
    pub fn admin(&self) -> Option<Arc<dyn ShardAdmin>> {
        match self {
            Self::Local { .. } => None,
            Self::Shard { client, .. } => Some(Arc::new(client.sharded().clone())),
            Self::Sharded { client, .. } => Some(Arc::new(client.clone())),
            Self::Remote { client, .. } => Some(Arc::clone(&client.admin)),
        }
    }

    /// Shard directories: in-process for a master catalog with a map, over the network for a
    /// daemon; `None` for a plain database.
    pub fn directories(&self) -> Option<Arc<dyn DirectoryAdmin>> {
        match self {
            Self::Local { .. } => None,
            Self::Shard { client, .. } => Some(Arc::new(client.sharded().clone())),
            Self::Sharded { client, .. } => Some(Arc::new(client.clone())),
            Self::Remote { client, .. } => Some(Arc::clone(&client.directories)),
        }
    }

    /// The route the client is bound to, if any.
    pub fn route(&self) -> Option<&RouteContext> {
        match self {
            Self::Shard { client, .. } => Some(client.route()),
            Self::Remote { client, .. } => client.route.as_ref(),
            Self::Local { .. } | Self::Sharded { .. } => None,
        }
    }
}

/// A daemon's client as [`connect`] opened it: data calls on the connection's route, shard
/// admin and data moves on the daemon.
#[derive(Clone)]
pub struct RemoteClient {
    data: Arc<dyn DataClient>,
    admin: Arc<dyn ShardAdmin>,
    moves: Arc<dyn ReshardAdmin>,
    directories: Arc<dyn DirectoryAdmin>,
    route: Option<RouteContext>,
}

impl RemoteClient {
    /// Data calls, carrying the connection's route (if any) on every call.
    pub fn data(&self) -> &Arc<dyn DataClient> {
        &self.data
    }

    /// Shard-admin operations on the daemon.
    pub fn admin(&self) -> &Arc<dyn ShardAdmin> {
        &self.admin
    }

    /// Data moves run by the daemon.
    pub fn migrations(&self) -> &Arc<dyn ReshardAdmin> {
        &self.moves
    }

    /// The daemon's shard directories.
    pub fn directories(&self) -> &Arc<dyn DirectoryAdmin> {
        &self.directories
    }

    /// The route sent on every call, if the connection names one.
    pub fn route(&self) -> Option<&RouteContext> {
        self.route.as_ref()
    }
}

/// The engine settings a connection string asks for, on top of `base`.
///
/// `Busy Timeout` replaces [`EngineConfig::busy_timeout`] (`0` means do not wait for locks);
/// `Command Timeout` replaces [`EngineConfig::statement_timeout`], the time one statement may run
/// before it is interrupted with [`ErrorKind::Timeout`] (`0` means no limit); `Transaction Timeout`
/// replaces [`EngineConfig::transaction_idle_timeout`] (`0` means never expire). Keys that are
/// absent leave `base` unchanged. Parsing has already refused values the engine cannot take.
///
/// ```
/// use std::time::Duration;
/// use shardlite::connect::engine_config_for;
/// use shardlite::engine::EngineConfig;
/// use shardlite::options::ConnectionOptions;
///
/// let options = ConnectionOptions::parse(
///     "Data Source=app.db;Busy Timeout=250;Command Timeout=5;Transaction Timeout=0",
/// )?;
/// let config = engine_config_for(&options, EngineConfig::default());
/// assert_eq!(config.busy_timeout, Duration::from_millis(250));
/// assert_eq!(config.statement_timeout, Some(Duration::from_secs(5)));
/// assert_eq!(config.transaction_idle_timeout, None);
///
/// let unlimited = ConnectionOptions::parse("Data Source=app.db;Command Timeout=0")?;
/// assert_eq!(engine_config_for(&unlimited, EngineConfig::default()).statement_timeout, None);
/// # Ok::<(), shardlite::Error>(())
/// ```
pub fn engine_config_for(options: &ConnectionOptions, base: EngineConfig) -> EngineConfig {
    crate::client::engine_config_for(options, base)
}

/// Opens what `options` names, with the default engine settings (adjusted by the options' timeouts).
///
/// Turns parsed [`ConnectionOptions`] into a [`ConnectedClient`]: a
/// [`DataClient`] plus a description of what was opened ([`ConnectionTarget`]). The rules
/// (SPEC section 8):
///
/// | connection string | opens | data calls |
/// |---|---|---|
/// | `Data Source` = a master catalog with an active map, plus `Shard Keyspace` and `Shard Key` | the sharded client, bound to the route with [`ShardedClient::for_route`]; the route is resolved in-process and the shard file is used directly | run on the route's shard; transactions get `csdbshard:` ids |
/// | `Data Source` = a master catalog with an active map, no route keys | the [`ShardedClient`] itself ([`ConnectedClient::Sharded`]) | fail with [`Error::RouteRequired`]; the sharded client's parts (id-routed transaction calls, counts, shard admin) work |
/// | `Data Source` = a master catalog with an active map, `Shard Keyspace` alone | the same, once the keyspace is checked against the map's ([`Error::UnknownKeyspace`] otherwise) | as without route keys; the sqlx driver answers reads across every shard |
/// | `Data Source` = a plain database (no map), no route keys | a [`LocalClient`], creating the file if it is missing, as SQLite does | run on that file |
/// | `Data Source` = a plain database or a missing file, plus route keys | nothing: [`Error::ConnectionString`] | |
/// | `Endpoint` + `Transport=Grpc` or `Http` (features `grpc`, `http`) | the gRPC or REST client, checked against the daemon now, carrying the route (if any; `Shard Directory` + `Lookup Key` are resolved to their entry's route by the daemon now) as metadata or headers on every call ([`ConnectionTarget::Remote`]) | run where the daemon routes them |
/// | `Endpoint` with a transport whose feature this build lacks, or without a transport | nothing: [`Error::ConnectionString`] naming the missing feature or key | |
///
/// Route keys on a file without a map are refused rather than ignored (the original ignores them):
/// a connection string that names a route promises that every call runs on that route's shard, and
/// silently running it on some other file would break the promise. For the same reason a route-bound
/// connection to a file that does not exist fails instead of creating an empty database.
///
/// A route-bound connection is checked when it opens: a keyspace the map does not serve, a route that
/// resolves to a disabled shard, or a shard that could not be opened fail here, not on the first query.
///
/// `Busy Timeout`, `Command Timeout` and `Transaction Timeout` flow into the [`EngineConfig`] of every
/// file opened (see [`engine_config_for`]); `Connect Timeout` bounds the whole opening.
pub async fn connect(options: &ConnectionOptions) -> Result<ConnectedClient> {
    connect_with(options, EngineConfig::default()).await
}

/// [`connect`] with explicit engine settings for the files it opens (the options' `Busy Timeout`,
/// `Command Timeout` and `Transaction Timeout` still apply on top).
pub async fn connect_with(options: &ConnectionOptions, engine: EngineConfig) -> Result<ConnectedClient> {
    options.validate()?;
    let engine = engine_config_for(options, engine);
    let opening = open(options, engine);
    match options.connect_timeout().filter(|limit| !limit.is_zero()) {
        Some(limit) => tokio::time::timeout(limit, opening).await.map_err(|_| Error::Io {
            what: describe_target(options),
            source: std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("'Connect Timeout' of {} s elapsed", limit.as_secs()),
            ),
        })?,
        None => opening.await,
    }
}

fn describe_target(options: &ConnectionOptions) -> String {
    match (options.data_source(), options.endpoint()) {
        (Some(path), _) => format!("data source '{path}'"),
        (None, Some(endpoint)) => format!("endpoint '{endpoint}'"),
        (None, None) => "the connection".to_owned(),
    }
}

async fn open(options: &ConnectionOptions, engine: EngineConfig) -> Result<ConnectedClient> {
    let Some(path) = options.data_source() else {
        return open_remote(options).await;
    };
    match (options.route(), options.lookup()) {
        (Some(route), _) => open_routed(path, Binding::Route(route), engine).await,
        (None, Some(lookup)) => open_routed(path, Binding::Lookup(lookup), engine).await,
        (None, None) => open_unrouted(path, options.keyspace(), engine).await,
    }
}

/// What binds a connection to one route: the route, or a directory entry resolved when it opens.
#[derive(Clone, Copy)]
enum Binding<'a> {
    Route(&'a RouteContext),
    Lookup(&'a DirectoryLookup),
}

impl Binding<'_> {
    /// The connection-string keys that gave the binding, for messages.
    fn keys(self) -> &'static str {
        match self {
            Self::Route(_) => "a route ('Shard Keyspace', 'Shard Key')",
            Self::Lookup(_) => "a directory entry ('Shard Directory', 'Lookup Key')",
        }
    }
}

async fn open_routed(path: &str, binding: Binding<'_>, engine: EngineConfig) -> Result<ConnectedClient> {
    // Checked first so that a typo in the path fails without leaving an empty file behind (a
    // catalog URL names no file: opening it says what is wrong).
    let exists = CatalogLocation::is_url(path)
        || tokio::fs::try_exists(path).await.map_err(|source| Error::Io {
            what: format!("data source '{path}'"),
            source,
        })?;
    if !exists {
        return Err(Error::ConnectionString {
            reason: format!(
                "'Data Source' '{path}' does not exist: a connection bound to {} needs a master catalog with a \
                 shard map",
                binding.keys()
            ),
        });
    }
    let sharded = match ShardedClient::open_with(path, ShardedClientOptions::with_engine(engine)).await {
        Ok(sharded) => sharded,
        Err(err) if err.kind() == ErrorKind::NoMap => {
            return Err(Error::ConnectionString {
                reason: format!(
                    "the connection is bound to {}, but 'Data Source' '{path}' holds no shard map: remove \
                     those keys to use it as a plain database, or point 'Data Source' at a master catalog",
                    binding.keys()
                ),
            });
        }
        Err(err) => return Err(err),
    };
    let route = match binding {
        Binding::Route(route) => route.clone(),
        Binding::Lookup(lookup) => {
            let found = sharded.directories().resolve(lookup).await?;
            RouteContext::new(&found.entry.target_keyspace, &found.entry.route_key)?
        }
    };
    let routed = sharded.for_route(route);
    let resolution = routed.resolve()?;
    // A disabled or unopenable shard fails now, not on the first query.
    sharded.for_shard_id(&resolution.shard_id)?;
    let shard_data_source = sharded
        .map()
        .shard(&resolution.shard_id)
        .and_then(|shard| match &shard.target {
            ShardTarget::DataSource(file) => Some(
                resolve_data_source(sharded.catalog().master().map_or(Path::new(path), |c| c.path()), file)
                    .display()
                    .to_string(),
            ),
            _ => None,
        });
    Ok(ConnectedClient::Shard {
        client: routed,
        target: ConnectionTarget::Shard {
            master: path.to_owned(),
            resolution,
            shard_data_source,
        },
    })
}

async fn open_unrouted(path: &str, keyspace: Option<&str>, engine: EngineConfig) -> Result<ConnectedClient> {
    if keyspace.is_some() && !CatalogLocation::is_url(path) && !tokio::fs::try_exists(path).await.unwrap_or(false) {
        return Err(Error::ConnectionString {
            reason: format!(
                "'Data Source' '{path}' does not exist: a connection bound to a keyspace ('Shard Keyspace') needs \
                 a master catalog with a shard map"
            ),
        });
    }
    match ShardedClient::open_with(path, ShardedClientOptions::with_engine(engine.clone())).await {
        Ok(sharded) => {
            if let Some(keyspace) = keyspace {
                check_keyspace(keyspace, sharded.map().keyspace())?;
            }
            Ok(ConnectedClient::Sharded {
                target: ConnectionTarget::Sharded {
                    master: path.to_owned(),
                    keyspace: sharded.map().keyspace().to_owned(),
                    map_version: sharded.map().version(),
                },
                client: sharded,
            })
        }
        Err(err) if err.kind() == ErrorKind::NoMap && keyspace.is_some() => Err(Error::ConnectionString {
            reason: format!(
                "'Shard Keyspace' binds a connection to a sharded keyspace, but 'Data Source' '{path}' holds no \
                 shard map: remove it to use the file as a plain database, or point 'Data Source' at a master catalog"
            ),
        }),
        Err(err) if err.kind() == ErrorKind::NoMap => {
            let label = Path::new(path)
                .file_name()
                .map_or_else(|| "database".to_owned(), |name| name.to_string_lossy().into_owned());
            let local = LocalClient::open_with(path, label, engine).await?;
            Ok(ConnectedClient::Local {
                client: local,
                target: ConnectionTarget::Local {
                    data_source: path.to_owned(),
                },
            })
        }
        Err(err) => Err(err),
    }
}

/// Refuses a connection whose `Shard Keyspace` is not the map's, as a route of that keyspace is.
pub(crate) fn check_keyspace(keyspace: &str, expected: &str) -> Result<()> {
    if crate::routing::keyspace_eq(keyspace, expected) {
        return Ok(());
    }
    Err(Error::from(crate::error::UnknownKeyspace {
        keyspace: keyspace.to_owned(),
        expected: expected.to_owned(),
    }))
}

async fn open_remote(options: &ConnectionOptions) -> Result<ConnectedClient> {
    match options.transport() {
        #[cfg(feature = "grpc")]
        Some(Transport::Grpc) => open_grpc(options).await,
        #[cfg(feature = "http")]
        Some(Transport::Http) => open_http(options).await,
        other => {
            let (name, why) = match other {
                Some(Transport::Grpc) => ("grpc", "this build was made without the 'grpc' feature"),
                Some(Transport::Http) => ("http", "this build was made without the 'http' feature"),
                _ => ("direct", "'Endpoint' needs 'Transport=Http' or 'Grpc'"),
            };
            Err(Error::ConnectionString {
                reason: format!(
                    "'Transport={name}' connections are not available: {why}; use 'Data Source' for a local file"
                ),
            })
        }
    }
}

/// A remote client as a connected client: data calls on its route, shard admin on the daemon.
#[cfg(any(feature = "grpc", feature = "http"))]
async fn remote<C: DataClient + ShardAdmin + ReshardAdmin + DirectoryAdmin + crate::transport::atomic::RoutedCalls>(
    mut client: C,
    endpoint: &str,
    transport: Transport,
    options: &ConnectionOptions,
) -> Result<ConnectedClient> {
    let route = match options.lookup() {
        Some(lookup) => {
            let route = lookup_route(&client, lookup).await?;
            client = client.routed(&route);
            Some(route)
        }
        None => options.route().cloned(),
    };
    Ok(ConnectedClient::Remote {
        target: ConnectionTarget::Remote {
            endpoint: endpoint.to_owned(),
            transport,
        },
        client: RemoteClient {
            admin: Arc::new(client.clone()),
            moves: Arc::new(client.clone()),
            directories: Arc::new(client.clone()),
            data: Arc::new(client),
            route,
        },
    })
}

/// The route of a directory entry, resolved by the daemon on its live map. The connection is
/// bound to that route, which the daemon resolves to a shard on every call, so it follows the
/// entry across data moves as a route-bound connection does.
#[cfg(any(feature = "grpc", feature = "http"))]
async fn lookup_route(directories: &dyn DirectoryAdmin, lookup: &DirectoryLookup) -> Result<RouteContext> {
    let found = directories.resolve_directory_entry(lookup).await?;
    RouteContext::new(&found.entry.target_keyspace, &found.entry.route_key)
}

#[cfg(feature = "grpc")]
async fn open_grpc(options: &ConnectionOptions) -> Result<ConnectedClient> {
    use crate::transport::RemoteOptions;
    use crate::transport::grpc::GrpcClient;

    let grpc = GrpcClient::connect(RemoteOptions::from_connection_options(options)?).await?;
    let endpoint = grpc.endpoint().to_owned();
    remote(grpc, &endpoint, Transport::Grpc, options).await
}

#[cfg(feature = "http")]
async fn open_http(options: &ConnectionOptions) -> Result<ConnectedClient> {
    use crate::transport::RemoteOptions;
    use crate::transport::http::HttpClient;

    let http = HttpClient::new(RemoteOptions::from_connection_options(options)?)?;
    // Like the gRPC client, check the daemon answers (and accepts the route) before use.
    crate::data::SqlData::info(&http).await?;
    let endpoint = http.endpoint().to_owned();
    remote(http, &endpoint, Transport::Http, options).await
}

#[cfg(test)]
mod tests;
