//! [`ShardedPool`]: one pool for many routes, with connections kept per shard.

use std::collections::HashMap;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sqlx_core::connection::LogSettings;
use sqlx_core::error::Error;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::sharded_atomic::{Coordinator, ShardedAtomic};
use super::{ShardliteConnectOptions, ShardliteConnection};
use crate::client::{DedicatedClient, ShardedClient};
use crate::connect::{ConnectedClient, ConnectionTarget, connect_with};
use crate::data::{DataClient, ShardAdmin};
use crate::engine::DedicatedConnection;
use crate::routing::RouteContext;

/// sqlx's default `max_connections`, the per-shard maximum when `Max Pool Size` is not given.
const DEFAULT_MAX_PER_SHARD: usize = 10;

/// sqlx's default `acquire_timeout`, used when `Connect Timeout` is not given.
const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// One pool for every route of a sharded deployment, as the Elastic Database client's
/// `OpenConnectionForKey` serves many keys from one shard map manager.
///
/// Open it on a master catalog without route keys (`Data Source=master.db`) or on a daemon
/// (`Endpoint=…;Transport=Grpc|Http`). Each [`acquire`](Self::acquire) hands out a
/// [`ShardliteConnection`] bound to one route: its statements run on that route's shard, its
/// transactions carry the route's `csdbshard:` ids, and before every call it checks the live map
/// as a route-bound connection does (a shard whose ownership changed since answers
/// `StaleMapVersion`, a route that moved answers a route conflict).
///
/// In-process, the pool keeps SQLite connections per shard, never more than
/// `max_connections_per_shard` open on one shard (`Max Pool Size`, default 10); an acquire waits for
/// one to come back, up to the acquire timeout (`Connect Timeout`, default 30 s). A returned
/// connection is rolled back to a clean state (any transaction still open is rolled back) and
/// serves whichever route of that shard comes next; like a connection of any sqlx pool it keeps its
/// connection-local state, TEMP tables included. Over a daemon, a connection is the remote client
/// bound to the route: the daemon holds the SQLite connections and its own limits.
///
/// ```no_run
/// # async fn demo() -> sqlx_core::Result<()> {
/// use shardlite::RouteContext;
/// use shardlite::driver::ShardedPool;
/// use sqlx_core::connection::Connection;
///
/// let pool = ShardedPool::connect("Data Source=data/master.db;Max Pool Size=4").await?;
/// for month in ["2026-05", "2026-06"] {
///     let mut conn = pool.acquire(RouteContext::new("orders_by_month", month)?).await?;
///     sqlx_core::query::query("INSERT INTO orders (order_month, total) VALUES (?, ?)")
///         .bind(month)
///         .bind(10.0)
///         .execute(&mut *conn)
///         .await?;
///     let tx = conn.begin().await?;
///     tx.commit().await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ShardedPool {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    log_settings: LogSettings,
    max_per_shard: usize,
    acquire_timeout: Duration,
    shards: Mutex<HashMap<String, ShardConnections>>,
    closed: AtomicBool,
}

enum Backend {
    Local {
        sharded: ShardedClient,
        master: String,
    },
    #[cfg(feature = "grpc")]
    Grpc(crate::transport::grpc::GrpcClient),
    #[cfg(feature = "http")]
    Http(crate::transport::http::HttpClient),
}

/// The connections of one shard.
struct ShardConnections {
    permits: Arc<Semaphore>,
    /// Connections not in use, with the map version they were opened under.
    idle: Vec<(u64, Arc<DedicatedConnection>)>,
    /// Connections open: idle plus in use.
    open: usize,
}

impl fmt::Debug for ShardedPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedPool")
            .field("max_connections_per_shard", &self.inner.max_per_shard)
            .field("open_connections", &self.open_connections())
            .finish_non_exhaustive()
    }
}

impl ShardedPool {
    /// Opens a pool from a connection string without route keys: a master catalog with a shard
    /// map, or a daemon's `Endpoint`. `Max Pool Size` caps the connections per shard and `Connect
    /// Timeout` bounds each acquire.
    pub async fn connect(text: &str) -> Result<Self, Error> {
        Self::connect_with(text.parse()?).await
    }

    /// [`connect`](Self::connect) with parsed options.
    pub async fn connect_with(options: ShardliteConnectOptions) -> Result<Self, Error> {
        let connection = options.connection_options();
        if connection.route().is_some() {
            return Err(configuration(
                "a ShardedPool serves every route and takes one on each acquire: remove 'Shard Keyspace' and \
                 'Shard Key' from the connection string (or use ShardlitePool for a single route)",
            ));
        }
        let backend = match connection.data_source() {
            Some(_) => {
                let connected = connect_with(connection, options.engine().clone()).await?;
                match connected {
                    ConnectedClient::Sharded {
                        client,
                        target: ConnectionTarget::Sharded { master, .. },
                    } => Backend::Local {
                        sharded: client,
                        master,
                    },
                    _ => {
                        return Err(configuration(
                            "a ShardedPool needs a master catalog with a shard map (or a daemon's 'Endpoint'); \
                             use ShardlitePool for a plain database",
                        ));
                    }
                }
            }
            None => remote_backend(&options).await?,
        };
        let max_per_shard = connection
            .max_pool_size()
            .map_or(DEFAULT_MAX_PER_SHARD, |size| {
                usize::try_from(size).unwrap_or(usize::MAX)
            })
            .max(1);
        let acquire_timeout = connection
            .connect_timeout()
            .filter(|limit| !limit.is_zero())
            .unwrap_or(DEFAULT_ACQUIRE_TIMEOUT);
        Ok(Self {
            inner: Arc::new(Inner {
                backend,
                log_settings: options.log_settings.clone(),
                max_per_shard,
                acquire_timeout,
                shards: Mutex::new(HashMap::new()),
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// The most connections open on one shard at once.
    pub fn max_connections_per_shard(&self) -> usize {
        self.inner.max_per_shard
    }

    /// Connections open per shard id (idle and in use), for the shards that have any.
    pub fn open_connections(&self) -> HashMap<String, usize> {
        self.inner
            .shards()
            .iter()
            .filter(|(_, shard)| shard.open > 0)
            .map(|(id, shard)| (id.clone(), shard.open))
            .collect()
    }

    /// A connection bound to the route of directory `directory`'s entry for `lookup_key` (an
    /// order number, say), resolved on the live map now (by the daemon, on a pool over one); it
    /// goes back to the pool when dropped. Like [`acquire`](Self::acquire)'s, the connection
    /// follows its route across moves.
    pub async fn acquire_by_lookup(&self, directory: &str, lookup_key: &str) -> Result<ShardedPoolConnection, Error> {
        let lookup = crate::data::DirectoryLookup::new(directory, lookup_key);
        let found = match &self.inner.backend {
            Backend::Local { sharded, .. } => sharded.directories().resolve(&lookup).await?,
            #[cfg(feature = "grpc")]
            Backend::Grpc(client) => crate::data::DirectoryAdmin::resolve_directory_entry(client, &lookup).await?,
            #[cfg(feature = "http")]
            Backend::Http(client) => crate::data::DirectoryAdmin::resolve_directory_entry(client, &lookup).await?,
        };
        let route = RouteContext::new(&found.entry.target_keyspace, &found.entry.route_key)?;
        self.acquire(route).await
    }

    /// A connection bound to `route`; it goes back to the pool when dropped.
    pub async fn acquire(&self, route: RouteContext) -> Result<ShardedPoolConnection, Error> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::PoolClosed);
        }
        let log_settings = self.inner.log_settings.clone();
        let (sharded, master) = match &self.inner.backend {
            Backend::Local { sharded, master } => (sharded, master),
            #[cfg(feature = "grpc")]
            Backend::Grpc(client) => {
                return Ok(remote_connection(
                    client.with_route(route),
                    client.endpoint(),
                    crate::map::Transport::Grpc,
                    log_settings,
                ));
            }
            #[cfg(feature = "http")]
            Backend::Http(client) => {
                return Ok(remote_connection(
                    client.with_route(route),
                    client.endpoint(),
                    crate::map::Transport::Http,
                    log_settings,
                ));
            }
        };
        let resolution = sharded.resolve_route(&route)?;
        let key = resolution.shard_id.to_ascii_lowercase();
        let permits = Arc::clone(&self.inner.shard(&key).permits);
        let permit = tokio::time::timeout(self.inner.acquire_timeout, permits.acquire_owned())
            .await
            .map_err(|_| Error::PoolTimedOut)?
            .map_err(|_| Error::PoolClosed)?;
        let reused = self.inner.take_idle(&key, resolution.map_version);
        let (connection, map_version, shard_id) = match reused {
            Some(connection) => (connection, resolution.map_version, resolution.shard_id.clone()),
            None => {
                // Counted before it opens, so concurrent acquires never see fewer than are open.
                self.inner.shard(&key).open += 1;
                match sharded.shared().dedicated_for_route(&route).await {
                    Ok((connection, version, shard_id)) => (Arc::new(connection), version, shard_id),
                    Err(err) => {
                        self.inner.shard(&key).open -= 1;
                        return Err(err.into());
                    }
                }
            }
        };
        let client = DedicatedClient::on_shard(sharded, route.clone(), Arc::clone(&connection), map_version, shard_id);
        let target = ConnectionTarget::Shard {
            master: master.clone(),
            resolution,
            shard_data_source: None,
        };
        let shared: Arc<dyn DataClient> = Arc::new(sharded.for_route(route));
        Ok(ShardedPoolConnection {
            connection: Some(ShardliteConnection::from_parts(
                target,
                Some(shared),
                Some(Arc::new(client)),
                log_settings,
            )),
            slot: Some(Slot {
                pool: Arc::clone(&self.inner),
                key,
                map_version,
                connection,
                _permit: permit,
            }),
        })
    }

    /// Begins an atomic transaction across shards: its queries run on any route, and it commits
    /// on every shard they wrote or on none (see [`ShardedAtomic`]). It takes none of the pool's
    /// connections. Over a daemon, the daemon runs it.
    pub async fn begin_atomic(&self) -> Result<ShardedAtomic, Error> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::PoolClosed);
        }
        let coordinator = match &self.inner.backend {
            Backend::Local { sharded, .. } => Coordinator::Local(sharded.begin_atomic()),
            #[cfg(feature = "grpc")]
            Backend::Grpc(client) => Coordinator::Grpc(client.begin_atomic().await?),
            #[cfg(feature = "http")]
            Backend::Http(client) => Coordinator::Http(client.begin_atomic().await?),
        };
        Ok(ShardedAtomic::new(coordinator))
    }

    /// A connection bound to the keyspace without a route: each query (`SELECT`) is answered across
    /// every shard as one merged result, as
    /// [`ShardedQuery::merged`](crate::client::ShardedQuery::merged) answers it; any other
    /// statement, and `begin`, fail with [`RouteRequired`](crate::Error::RouteRequired). It holds
    /// no connection of the pool: the shards' own readers answer.
    ///
    /// ```no_run
    /// # async fn demo() -> sqlx_core::Result<()> {
    /// use shardlite::driver::ShardedPool;
    ///
    /// let pool = ShardedPool::connect("Data Source=data/master.db").await?;
    /// let mut conn = pool.acquire_across_shards().await?;
    /// let newest = sqlx_core::query::query("SELECT id FROM orders ORDER BY placed_at DESC LIMIT 20")
    ///     .fetch_all(&mut conn)
    ///     .await?;
    /// # let _ = newest; Ok(()) }
    /// ```
    pub async fn acquire_across_shards(&self) -> Result<ShardliteConnection, Error> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::PoolClosed);
        }
        let log_settings = self.inner.log_settings.clone();
        // In-process, a connection across shards has no data client: a sharded client is not one.
        let (target, client, admin): (ConnectionTarget, Option<Arc<dyn DataClient>>, Arc<dyn ShardAdmin>) =
            match &self.inner.backend {
                Backend::Local { sharded, master } => (
                    ConnectionTarget::Sharded {
                        master: master.clone(),
                        keyspace: sharded.map().keyspace().to_owned(),
                        map_version: sharded.map().version(),
                    },
                    None,
                    Arc::new(sharded.clone()),
                ),
                #[cfg(feature = "grpc")]
                Backend::Grpc(client) => (
                    ConnectionTarget::Remote {
                        endpoint: client.endpoint().to_owned(),
                        transport: crate::map::Transport::Grpc,
                    },
                    Some(Arc::new(client.clone())),
                    Arc::new(client.clone()),
                ),
                #[cfg(feature = "http")]
                Backend::Http(client) => (
                    ConnectionTarget::Remote {
                        endpoint: client.endpoint().to_owned(),
                        transport: crate::map::Transport::Http,
                    },
                    Some(Arc::new(client.clone())),
                    Arc::new(client.clone()),
                ),
            };
        Ok(ShardliteConnection::from_parts(target, client.clone(), client, log_settings).across_shards(admin))
    }

    /// Stops handing out connections and closes the idle ones; connections in use close when
    /// they come back.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        let mut shards = self.inner.shards();
        for shard in shards.values_mut() {
            shard.open -= shard.idle.len();
            shard.idle.clear();
            shard.permits.close();
        }
    }
}

impl Inner {
    fn shards(&self) -> std::sync::MutexGuard<'_, HashMap<String, ShardConnections>> {
        self.shards.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn shard(&self, key: &str) -> MappedShard<'_> {
        let mut shards = self.shards();
        shards.entry(key.to_owned()).or_insert_with(|| ShardConnections {
            permits: Arc::new(Semaphore::new(self.max_per_shard)),
            idle: Vec::new(),
            open: 0,
        });
        MappedShard {
            guard: shards,
            key: key.to_owned(),
        }
    }

    /// An idle connection of shard `key` opened under `map_version`; idle ones of other versions
    /// are closed (the shard may have changed since).
    fn take_idle(&self, key: &str, map_version: u64) -> Option<Arc<DedicatedConnection>> {
        let mut shard = self.shard(key);
        let before = shard.idle.len();
        shard.idle.retain(|(version, _)| *version == map_version);
        let dropped = before - shard.idle.len();
        shard.open -= dropped;
        shard.idle.pop().map(|(_, connection)| connection)
    }
}

/// A locked view of one shard's connections.
struct MappedShard<'a> {
    guard: std::sync::MutexGuard<'a, HashMap<String, ShardConnections>>,
    key: String,
}

impl Deref for MappedShard<'_> {
    type Target = ShardConnections;

    #[allow(clippy::expect_used)]
    fn deref(&self) -> &ShardConnections {
        self.guard
            .get(&self.key)
            .expect("the entry was inserted when the view was made")
    }
}

impl DerefMut for MappedShard<'_> {
    #[allow(clippy::expect_used)]
    fn deref_mut(&mut self) -> &mut ShardConnections {
        self.guard
            .get_mut(&self.key)
            .expect("the entry was inserted when the view was made")
    }
}

/// What an in-process pooled connection gives back when it is dropped.
struct Slot {
    pool: Arc<Inner>,
    key: String,
    map_version: u64,
    connection: Arc<DedicatedConnection>,
    _permit: OwnedSemaphorePermit,
}

impl Slot {
    /// Puts the connection back (when it is clean and the pool open) or closes it; the permit is
    /// released last, so a waiting acquire finds the connection idle.
    fn release(self, reusable: bool) {
        let mut shard = self.pool.shard(&self.key);
        if reusable && !self.pool.closed.load(Ordering::Acquire) {
            shard.idle.push((self.map_version, self.connection));
        } else {
            shard.open -= 1;
        }
    }
}

/// A [`ShardliteConnection`] from a [`ShardedPool`], bound to the route it was acquired for.
/// Derefs to the connection (`sqlx::query(..).execute(&mut *conn)`, `conn.begin()`); dropping it
/// rolls back what it left open and returns it to the pool.
pub struct ShardedPoolConnection {
    connection: Option<ShardliteConnection>,
    slot: Option<Slot>,
}

impl fmt::Debug for ShardedPoolConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ShardedPoolConnection").field(&self.connection).finish()
    }
}

impl Deref for ShardedPoolConnection {
    type Target = ShardliteConnection;

    #[allow(clippy::expect_used)]
    fn deref(&self) -> &ShardliteConnection {
        self.connection.as_ref().expect("present until dropped")
    }
}

impl DerefMut for ShardedPoolConnection {
    #[allow(clippy::expect_used)]
    fn deref_mut(&mut self) -> &mut ShardliteConnection {
        self.connection.as_mut().expect("present until dropped")
    }
}

impl Drop for ShardedPoolConnection {
    fn drop(&mut self) {
        let (Some(mut connection), Some(slot)) = (self.connection.take(), self.slot.take()) else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let clean = connection.reset().await.is_ok();
                    drop(connection);
                    slot.release(clean);
                });
            }
            // No runtime to finish on: close it (dropping rolls back what is open).
            Err(_) => {
                drop(connection);
                slot.release(false);
            }
        }
    }
}

fn configuration(reason: &str) -> Error {
    Error::Configuration(reason.into())
}

#[cfg(any(feature = "grpc", feature = "http"))]
fn remote_connection<C: DataClient + Clone + 'static>(
    client: C,
    endpoint: &str,
    transport: crate::map::Transport,
    log_settings: LogSettings,
) -> ShardedPoolConnection {
    let client: Arc<dyn DataClient> = Arc::new(client);
    let target = ConnectionTarget::Remote {
        endpoint: endpoint.to_owned(),
        transport,
    };
    ShardedPoolConnection {
        connection: Some(ShardliteConnection::from_parts(
            target,
            Some(Arc::clone(&client)),
            Some(client),
            log_settings,
        )),
        slot: None,
    }
}

/// The remote client of an `Endpoint`, connected and checked now.
async fn remote_backend(options: &ShardliteConnectOptions) -> Result<Backend, Error> {
    #[allow(unused_imports)]
    use crate::map::Transport;
    let connection = options.connection_options();
    match connection.transport() {
        #[cfg(feature = "grpc")]
        Some(Transport::Grpc) => {
            let remote = crate::transport::RemoteOptions::from_connection_options(connection)?;
            Ok(Backend::Grpc(
                crate::transport::grpc::GrpcClient::connect(remote).await?,
            ))
        }
        #[cfg(feature = "http")]
        Some(Transport::Http) => {
            let remote = crate::transport::RemoteOptions::from_connection_options(connection)?;
            let client = crate::transport::http::HttpClient::new(remote)?;
            crate::data::SqlData::info(&client).await?;
            Ok(Backend::Http(client))
        }
        _ => Err(configuration(
            "a ShardedPool over a daemon needs 'Endpoint' with 'Transport=Grpc' or 'Transport=Http' (and the \
             matching feature)",
        )),
    }
}
