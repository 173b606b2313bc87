//! A client over one local SQLite file.

use std::future::{Future, ready};
use std::path::Path;
use std::time::SystemTime;

use async_trait::async_trait;

use super::forward::{Forward, ForwardDocuments, ForwardRows, ForwardStored};
use crate::data::{DatabaseInfo, Params, SqlData, SqlResult, TransactionData, TransactionInfo, TransactionOptions};
use crate::engine::{Database, EngineConfig};
use crate::error::Result;
use crate::options::ConnectionOptions;

/// A [`DataClient`](crate::data::DataClient) over one SQLite file (a shard, or a plain unsharded database).
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::client::{LocalClient, Params, SqlData};
///
/// let db = LocalClient::open("app.db").await?;
/// db.execute_sql("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT)", Params::none()).await?;
/// db.execute_sql("INSERT INTO t (v) VALUES (?1)", Params::from(vec!["hello"])).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LocalClient {
    db: Database,
}

impl LocalClient {
    /// Opens (creating if needed) a database file with default settings.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let label = path
            .file_name()
            .map_or_else(|| "database".to_owned(), |n| n.to_string_lossy().into_owned());
        Self::open_with(path, label, EngineConfig::default()).await
    }

    /// Opens a database file with a label for errors and explicit settings.
    pub async fn open_with(path: impl AsRef<Path>, label: impl Into<String>, config: EngineConfig) -> Result<Self> {
        Ok(Self {
            db: Database::open(path, label, config).await?,
        })
    }

    /// A client over a database file that opens on first use rather than now (see
    /// [`Database::lazy`]): how a sharded client holds the shards of its map.
    pub fn lazy(path: impl AsRef<Path>, label: impl Into<String>, config: EngineConfig) -> Result<Self> {
        Ok(Self {
            db: Database::lazy(path, label, config)?,
        })
    }

    /// The engine handle.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// A health probe.
    pub async fn probe(&self) -> Result<()> {
        self.db.probe().await
    }

    /// Rolls back a transaction without waiting (for guards being dropped).
    pub fn abandon_transaction(&self, transaction_id: &str) {
        self.db.sessions().session_abandon(transaction_id);
    }

    /// When a transaction expires if left idle from now.
    pub fn transaction_expires_at(&self, transaction_id: &str) -> Option<SystemTime> {
        self.db.sessions().session_expires_at(transaction_id)
    }
}

/// The engine settings a connection string asks for, on top of `base`: `Busy Timeout`,
/// `Command Timeout` (the per-statement time limit), `Transaction Timeout` (idle expiry) and
/// `Max Open Shards`, each only when given, `0` meaning no limit for the timeouts. Public as
/// [`connect::engine_config_for`](crate::connect::engine_config_for); the sharded client applies it
/// to shards defined by a connection string.
pub(crate) fn engine_config_for(options: &ConnectionOptions, base: EngineConfig) -> EngineConfig {
    let mut config = base;
    if let Some(busy) = options.busy_timeout() {
        config.busy_timeout = busy;
    }
    if let Some(command) = options.command_timeout() {
        config.statement_timeout = (!command.is_zero()).then_some(command);
    }
    if let Some(idle) = options.idle_transaction_timeout() {
        config.transaction_idle_timeout = (!idle.is_zero()).then_some(idle);
    }
    if let Some(shards) = options.max_open_shards() {
        config.max_open_shards = usize::try_from(shards).unwrap_or(usize::MAX);
    }
    config
}

pub(crate) fn format_utc(at: SystemTime) -> String {
    time::OffsetDateTime::from(at)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

// Rows, documents and stored SQL are the engine handle's own (see `client/engine.rs`).
impl Forward for LocalClient {
    type Target = Database;
    type Handle<'a> = &'a Database;

    fn forward_to(&self) -> impl Future<Output = Result<&Database>> + Send {
        ready(Ok(&self.db))
    }
}

impl ForwardRows for LocalClient {}
impl ForwardDocuments for LocalClient {}
impl ForwardStored for LocalClient {}

#[async_trait]
impl SqlData for LocalClient {
    async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.db.execute(sql, params).await
    }
    async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.db.execute_read_only(sql, params).await
    }
    async fn info(&self) -> Result<DatabaseInfo> {
        self.db.info().await
    }
}

#[async_trait]
impl TransactionData for LocalClient {
    async fn begin_transaction_with(&self, options: TransactionOptions) -> Result<TransactionInfo> {
        let session = self.db.sessions().begin_with(options).await?;
        Ok(TransactionInfo {
            transaction_id: session.id,
            expires_at_utc: session.expires_at.map(format_utc),
        })
    }
    async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        self.db.sessions().session_execute(transaction_id, sql, params).await
    }
    async fn commit_transaction(&self, transaction_id: &str) -> Result<()> {
        self.db.sessions().session_commit(transaction_id).await
    }
    async fn rollback_transaction(&self, transaction_id: &str) -> Result<()> {
        self.db.sessions().session_rollback(transaction_id).await
    }
}
