//! [`ShardliteConnectOptions`]: how the driver opens connections, parsed from a connection string.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use log::LevelFilter;
use sqlx_core::Url;
use sqlx_core::connection::{ConnectOptions, LogSettings};
use sqlx_core::error::Error;
use sqlx_core::pool::PoolOptions;

use super::{Shardlite, ShardliteConnection};
use crate::connect::{ConnectedClient, ConnectionTarget, check_keyspace, connect_with};
use crate::engine::EngineConfig;
use crate::options::ConnectionOptions;

/// sqlx's default `max_connections`, used to size the engine when `Max Pool Size` is not given.
const SQLX_DEFAULT_POOL_SIZE: usize = 10;

/// Options for [`ShardliteConnection`]s: a [`ConnectionOptions`] (either string form), engine
/// settings and statement logging.
///
/// `FromStr` accepts both forms of SPEC section 8, so `ShardliteConnection::connect(..)` and
/// `ShardlitePool::connect(..)` take a connection string directly:
///
/// ```
/// use shardlite::driver::ShardliteConnectOptions;
///
/// let ado: ShardliteConnectOptions =
///     "Data Source=data/master.db;Shard Keyspace=orders_by_month;Shard Key=2026-06".parse()?;
/// let url: ShardliteConnectOptions =
///     "shardlite:data/master.db?shard_keyspace=orders_by_month&shard_key=2026-06".parse()?;
/// assert_eq!(ado.connection_options(), url.connection_options());
///
/// let err = "Data Source=m.db;Shard Kye=2026-06".parse::<ShardliteConnectOptions>().unwrap_err();
/// assert!(err.to_string().contains("Shard Kye"), "{err}");
/// # Ok::<(), sqlx_core::Error>(())
/// ```
///
/// # Sharing
///
/// The master catalog and its shard map are opened once per options value, on the first connect,
/// and shared by every connection made from it (and so by every connection of a pool). Each
/// in-process connection then opens a SQLite connection of its own on its shard's file (see
/// [`driver`](crate::driver)). The shard map is read at that moment and followed afterwards: a
/// map activated later (here or in another process) is picked up within the catalog's refresh
/// interval. Cloned options share the files; [`engine_config`](Self::engine_config) starts afresh.
///
/// # Connection-string keys
///
/// `Shard Keyspace` and `Shard Key` bind each connection to one route's shard; `Shard Keyspace`
/// alone binds it to the keyspace without a key, and its reads are answered across every shard
/// (see [`ShardliteConnection`]).
///
/// `Busy Timeout` (how long a write waits for another connection's lock), `Transaction Timeout`
/// (idle transactions are rolled back) and `Command Timeout` (the time one statement may run)
/// configure the engine, `Connect Timeout` bounds opening, and `Max Pool Size` sizes
/// [`pool_options`](Self::pool_options) (and a [`ShardedPool`](super::ShardedPool)'s connections per
/// shard). It also raises the engine's
/// [`max_open_transactions`](crate::engine::EngineConfig::max_open_transactions) to at least the
/// pool size, so that every pooled connection can hold a transaction at once.
#[derive(Clone)]
pub struct ShardliteConnectOptions {
    options: ConnectionOptions,
    engine: EngineConfig,
    pub(crate) log_settings: LogSettings,
    opened: Arc<tokio::sync::OnceCell<ConnectedClient>>,
}

impl fmt::Debug for ShardliteConnectOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `ConnectionOptions`' Display redacts the API key.
        f.debug_struct("ShardliteConnectOptions")
            .field("options", &self.options.to_string())
            .field("engine", &self.engine)
            .field("log_settings", &self.log_settings)
            .finish()
    }
}

impl ShardliteConnectOptions {
    /// Driver options for `options`, with engine settings sized for a pool.
    pub fn new(options: ConnectionOptions) -> Self {
        let base = EngineConfig::default();
        let pool_size = options.max_pool_size().map_or(SQLX_DEFAULT_POOL_SIZE, |size| {
            usize::try_from(size).unwrap_or(usize::MAX)
        });
        let engine = EngineConfig {
            max_open_transactions: base.max_open_transactions.max(pool_size),
            ..base
        };
        Self {
            options,
            engine,
            log_settings: LogSettings::default(),
            opened: Arc::new(tokio::sync::OnceCell::new()),
        }
    }

    /// The parsed connection string.
    pub fn connection_options(&self) -> &ConnectionOptions {
        &self.options
    }

    /// The engine settings of the files these options open.
    pub(crate) fn engine(&self) -> &EngineConfig {
        &self.engine
    }

    /// Replaces the engine settings of the files these options open (the connection string's
    /// `Busy Timeout` and `Transaction Timeout` still apply on top). Connections made afterwards
    /// open the files anew.
    pub fn engine_config(mut self, config: EngineConfig) -> Self {
        self.engine = config;
        self.opened = Arc::new(tokio::sync::OnceCell::new());
        self
    }

    /// Pool settings the connection string asks for: `max_connections` from `Max Pool Size` and
    /// `acquire_timeout` from `Connect Timeout` (when not zero); sqlx's defaults otherwise.
    ///
    /// ```no_run
    /// # async fn demo() -> sqlx_core::Result<()> {
    /// use shardlite::driver::ShardliteConnectOptions;
    ///
    /// let options: ShardliteConnectOptions =
    ///     "Data Source=master.db;Shard Keyspace=orders_by_month;Shard Key=2026-06;Max Pool Size=4".parse()?;
    /// let pool = options.pool_options().connect_with(options).await?;
    /// # Ok(()) }
    /// ```
    pub fn pool_options(&self) -> PoolOptions<Shardlite> {
        let mut pool = PoolOptions::new();
        if let Some(size) = self.options.max_pool_size() {
            pool = pool.max_connections(size);
        }
        if let Some(limit) = self.options.connect_timeout().filter(|limit| !limit.is_zero()) {
            pool = pool.acquire_timeout(limit);
        }
        pool
    }

    /// Opens the target once and hands every connection a handle to it.
    pub(crate) async fn open(&self) -> Result<ConnectedClient, Error> {
        let connected = self
            .opened
            .get_or_try_init(|| async {
                let connected = connect_with(&self.options, self.engine.clone()).await?;
                let across_shards = self.options.is_keyspace_without_key();
                match connected.target() {
                    ConnectionTarget::Sharded { master, keyspace, .. } if !across_shards => {
                        // Every data call would fail with "route required": refuse now, naming the fix.
                        return Err(crate::Error::ConnectionString {
                            reason: format!(
                                "'Data Source' '{master}' is a master catalog with a shard map (keyspace '{keyspace}'): \
                                 add 'Shard Keyspace' and 'Shard Key' to bind the connection to one route, or \
                                 'Shard Keyspace' alone to answer reads across every shard"
                            ),
                        });
                    }
                    ConnectionTarget::Remote { .. } if across_shards => {
                        if let (Some(admin), Some(keyspace)) = (connected.admin(), self.options.keyspace()) {
                            check_keyspace(keyspace, &admin.shard_map().await?.keyspace)?;
                        }
                    }
                    _ => {}
                }
                Ok(connected)
            })
            .await?;
        Ok(connected.clone())
    }
}

impl From<ConnectionOptions> for ShardliteConnectOptions {
    fn from(options: ConnectionOptions) -> Self {
        Self::new(options)
    }
}

impl FromStr for ShardliteConnectOptions {
    type Err = Error;

    /// Parses either connection-string form with [`ConnectionOptions::parse`]; errors are
    /// [`Error::Configuration`] and name the key.
    fn from_str(text: &str) -> Result<Self, Error> {
        Ok(Self::new(ConnectionOptions::parse(text)?))
    }
}

impl ConnectOptions for ShardliteConnectOptions {
    type Connection = ShardliteConnection;

    fn from_url(url: &Url) -> Result<Self, Error> {
        url.as_str().parse()
    }

    /// The URL form ([`ConnectionOptions::to_url`]), API key included so that it connects;
    /// engine and log settings are not part of it.
    fn to_url_lossy(&self) -> Url {
        match Url::parse(&self.options.to_url()) {
            Ok(url) => url,
            // The URL printer always writes a parsable URL; a constant stands in if it ever does not.
            #[allow(clippy::expect_used)]
            Err(_) => Url::parse("shardlite:").expect("a constant URL parses"),
        }
    }

    fn connect(&self) -> impl Future<Output = Result<ShardliteConnection, Error>> + Send + '_ {
        ShardliteConnection::establish(self)
    }

    fn log_statements(mut self, level: LevelFilter) -> Self {
        self.log_settings.log_statements(level);
        self
    }

    fn log_slow_statements(mut self, level: LevelFilter, duration: Duration) -> Self {
        self.log_settings.log_slow_statements(level, duration);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_round_trips_through_to_url_lossy() {
        let options: ShardliteConnectOptions =
            "Data Source=/srv/data/master.db;Shard Keyspace=orders_by_month;Shard Key=2026 05;Busy Timeout=250"
                .parse()
                .unwrap();
        let url = options.to_url_lossy();
        assert!(url.as_str().starts_with("shardlite:"), "{url}");
        let back = ShardliteConnectOptions::from_url(&url).unwrap();
        assert_eq!(back.connection_options(), options.connection_options());
    }

    #[test]
    fn bad_strings_are_configuration_errors_naming_the_key() {
        let err = "Data Source=m.db;Shard Key=2026-05"
            .parse::<ShardliteConnectOptions>()
            .unwrap_err();
        assert!(matches!(err, Error::Configuration(_)), "{err:?}");
        assert!(err.to_string().contains("Shard Keyspace"), "{err}");
    }

    #[test]
    fn pool_size_sizes_the_pool_and_the_transaction_limit() {
        let options: ShardliteConnectOptions = "Data Source=m.db;Max Pool Size=32".parse().unwrap();
        assert_eq!(options.pool_options().get_max_connections(), 32);
        assert_eq!(options.engine.max_open_transactions, 32);
        let small: ShardliteConnectOptions = "Data Source=m.db;Max Pool Size=2".parse().unwrap();
        assert_eq!(
            small.engine.max_open_transactions,
            EngineConfig::default().max_open_transactions
        );
        let debug = format!(
            "{:?}",
            "Endpoint=http://h;Transport=Http;Api Key=sekrit"
                .parse::<ShardliteConnectOptions>()
                .unwrap()
        );
        assert!(!debug.contains("sekrit"), "{debug}");
    }
}
