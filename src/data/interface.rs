//! The interfaces every way of reaching data implements: [`DataClient`] for data operations on
//! one database (or one route's shard) and [`ShardAdmin`] for operator operations on a sharded
//! deployment.
//!
//! `DataClient` is the whole data contract, made of five cohesive parts that code can ask for
//! one at a time: [`SqlData`] (SQL and info), [`RowData`] (tables and rows), [`DocumentData`]
//! (collections), [`StoredData`] (saved queries and procedures) and [`TransactionData`].
//! `ShardAdmin` is the whole operator contract, made the same way of four: [`Topology`] (map,
//! routes, health, heat), [`FanOut`] (SQL on every shard), [`CatalogAdmin`] (map updates and
//! activation) and [`SchemaAdmin`] (schema migrations).

use async_trait::async_trait;

use super::{
    ActivationRequest, ActivationResult, CatalogApplyResult, CatalogState, CatalogUpdateRequest, CatalogValidation,
    DatabaseInfo, DocumentPage, Params, ProcedureDefinition, Row, RowPage, SavedQuery, SchemaMigrationReport,
    SchemaMigrationRequest, SchemaStatusReport, ShardSqlResult, ShardStatus, ShardStatusPage, ShardStatusQuery,
    SqlResult, TableSchema, TransactionInfo, TransactionOptions, Value,
};
use crate::error::Result;
use crate::heat::HeatReport;
use crate::map::ShardMapSnapshot;
use crate::routing::{ResolvedRoute, RouteContext};

/// Where routes land and how the shards are: the map, route resolution, shard health and heat.
///
/// Part of the [`ShardAdmin`] contract; implemented in-process by `ShardedClient` and remotely
/// by the HTTP and gRPC clients.
///
/// ```no_run
/// # async fn demo(admin: &dyn shardlite::data::ShardAdmin) -> shardlite::Result<()> {
/// use shardlite::RouteContext;
/// use shardlite::data::Topology;
///
/// let june = admin.resolve_route(&RouteContext::new("orders_by_month", "2026-06")?).await?;
/// let unhealthy = admin.shard_status().await?.into_iter().filter(|shard| !shard.healthy).count();
/// println!("june lives on {}; {unhealthy} shards unhealthy", june.shard_id);
/// # Ok(()) }
/// ```
#[async_trait]
pub trait Topology: Send + Sync {
    /// A secret-free snapshot of the live map.
    async fn shard_map(&self) -> Result<ShardMapSnapshot>;
    /// Where a route resolves.
    async fn resolve_route(&self, route: &RouteContext) -> Result<ResolvedRoute>;
    /// Every shard's health, in definition order.
    async fn shard_status(&self) -> Result<Vec<ShardStatus>>;
    /// One page of shard health with counts by state over every shard probed, for maps too
    /// large to list at once: one shard, only problem shards, or a page of them. This default
    /// probes every shard through [`shard_status`](Self::shard_status) and pages the answer.
    async fn shard_status_page(&self, query: &ShardStatusQuery) -> Result<ShardStatusPage> {
        query.check()?;
        Ok(ShardStatusPage::select(self.shard_status().await?, query))
    }
    /// The heat of the routed calls this client (in-process) or daemon (remote) served lately:
    /// decayed request and row counts by shard, bucket and hottest route key.
    async fn shard_heat(&self) -> Result<HeatReport>;
}

/// SQL on every enabled shard at once: per-shard fan-out, and one `SELECT` merged across shards.
///
/// Part of the [`ShardAdmin`] contract.
///
/// ```no_run
/// # async fn demo(admin: &dyn shardlite::data::ShardAdmin) -> shardlite::Result<()> {
/// use shardlite::client::Params;
/// use shardlite::data::FanOut;
///
/// admin.execute_sql_on_all_shards("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY)").await?;
/// let total = admin.query_all_shards("SELECT count(*) FROM orders", Params::none()).await?;
/// # let _ = total; Ok(()) }
/// ```
#[async_trait]
pub trait FanOut: Send + Sync {
    /// SQL on every enabled shard (schema setup); per-shard results.
    async fn execute_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>>;
    /// Read-only SQL on every enabled shard, enforced by the engine.
    async fn execute_read_only_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>>;
    /// One read-only `SELECT` over every enabled shard, answered as one result, as SQLite would
    /// answer it over one file holding every shard's rows; what cannot be exact is refused
    /// ([`UnsupportedCrossShardQuery`](crate::ErrorKind::UnsupportedCrossShardQuery)).
    async fn query_all_shards(&self, sql: &str, params: Params) -> Result<SqlResult>;
}

/// The catalog of maps: its state, and proposed maps validated, written as pending and activated.
///
/// Part of the [`ShardAdmin`] contract.
///
/// ```no_run
/// # async fn demo(admin: &dyn shardlite::data::ShardAdmin, proposal: shardlite::data::CatalogUpdateRequest)
/// # -> shardlite::Result<()> {
/// use shardlite::data::{ActivationRequest, CatalogAdmin};
///
/// let applied = admin.apply_catalog_update(&proposal).await?;
/// if let Some(version) = applied.pending_map_version {
///     admin.activate_pending_map(&ActivationRequest::new(version)).await?;
/// }
/// println!("{} maps in history", admin.catalog_state().await?.history.len());
/// # Ok(()) }
/// ```
#[async_trait]
pub trait CatalogAdmin: Send + Sync {
    /// Active and pending maps and catalog history.
    async fn catalog_state(&self) -> Result<CatalogState>;
    /// Validates a proposed map against the catalog; changes nothing. An invalid map is a
    /// validation with `valid: false`, not an error.
    async fn validate_catalog_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogValidation>;
    /// Validates and writes a proposed map as the pending map, compare-and-set on the versions:
    /// an invalid map is `applied: false` with the validation, a stale expected version is an
    /// error of kind [`MapVersionConflict`](crate::ErrorKind::MapVersionConflict).
    async fn apply_catalog_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogApplyResult>;
    /// Makes the pending map active without a restart; no pending map of the expected version is
    /// an error of kind [`Conflict`](crate::ErrorKind::Conflict)
    /// ([`Error::NoPendingMap`](crate::Error::NoPendingMap) in-process).
    async fn activate_pending_map(&self, request: &ActivationRequest) -> Result<ActivationResult>;
}

/// The schema of every shard: sqlx-style migrations applied everywhere, and drift between shards.
///
/// Part of the [`ShardAdmin`] contract.
///
/// ```no_run
/// # async fn demo(admin: &dyn shardlite::data::ShardAdmin, request: shardlite::data::SchemaMigrationRequest)
/// # -> shardlite::Result<()> {
/// use shardlite::data::SchemaAdmin;
///
/// let report = admin.migrate_schema(&request).await?;
/// println!("{report:?}\n{:?}", admin.schema_status().await?);
/// # Ok(()) }
/// ```
#[async_trait]
pub trait SchemaAdmin: Send + Sync {
    /// Every enabled shard's schema: applied sqlx migration versions, a fingerprint of its
    /// `sqlite_master`, and its drift from the majority.
    async fn schema_status(&self) -> Result<SchemaStatusReport>;
    /// Applies a set of sqlx-style migrations to every enabled shard (or the shards named),
    /// recording them in each shard's `_sqlx_migrations` as sqlx does. Shards already at the
    /// target are skipped; a shard that fails is reported and the others finish.
    async fn migrate_schema(&self, request: &SchemaMigrationRequest) -> Result<SchemaMigrationReport>;
}

/// The whole operator contract on a sharded deployment: [`Topology`], [`FanOut`],
/// [`CatalogAdmin`] and [`SchemaAdmin`].
///
/// Like [`DataClient`], it has no methods of its own: every type that implements the four
/// implements it, so `Arc<dyn ShardAdmin>` reaches `ShardedClient` in-process and a daemon
/// through the HTTP or gRPC client alike. Calling a method needs its trait in scope.
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use std::sync::Arc;
/// use shardlite::client::ShardedClient;
/// use shardlite::data::{ShardAdmin, Topology};
///
/// let admin: Arc<dyn ShardAdmin> = Arc::new(ShardedClient::open("data/master.db").await?);
/// println!("map version {}", admin.shard_map().await?.map_version);
/// # Ok(()) }
/// ```
pub trait ShardAdmin: Topology + FanOut + CatalogAdmin + SchemaAdmin {}

impl<T: Topology + FanOut + CatalogAdmin + SchemaAdmin + ?Sized> ShardAdmin for T {}

/// SQL on one database, and what the database holds.
///
/// Part of the [`DataClient`] contract; every client that reaches data implements it.
#[async_trait]
pub trait SqlData: Send + Sync {
    /// Executes SQL (one statement or a script) with bound parameters.
    async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult>;

    /// Executes SQL that must not write: every statement must be a query that SQLite reports as
    /// read-only, run on a connection that cannot write; otherwise nothing runs.
    async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult>;

    /// Counts of tables, collections, saved queries and procedures.
    async fn info(&self) -> Result<DatabaseInfo>;
}

/// Tables and their rows, addressed by primary key.
///
/// Part of the [`DataClient`] contract.
#[async_trait]
pub trait RowData: Send + Sync {
    /// User table names.
    async fn list_tables(&self) -> Result<Vec<String>>;
    /// A table's schema.
    async fn table_schema(&self, table: &str) -> Result<TableSchema>;
    /// Rows in a table.
    async fn count_rows(&self, table: &str) -> Result<u64>;
    /// One page of a table (pages start at 1).
    async fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> Result<RowPage>;
    /// A row by primary key.
    async fn get_row(&self, table: &str, key: Value) -> Result<Option<Row>>;
    /// Inserts a row; returns rows inserted.
    async fn insert_row(&self, table: &str, values: Row) -> Result<u64>;
    /// Updates a row by primary key; returns rows updated.
    async fn update_row(&self, table: &str, key: Value, values: Row) -> Result<u64>;
    /// Deletes a row by primary key; returns rows deleted.
    async fn delete_row(&self, table: &str, key: Value) -> Result<u64>;
}

/// Collections of JSON documents, addressed by key.
///
/// Part of the [`DataClient`] contract.
#[async_trait]
pub trait DocumentData: Send + Sync {
    /// Collection names.
    async fn list_collections(&self) -> Result<Vec<String>>;
    /// Documents in a collection.
    async fn count_documents(&self, collection: &str) -> Result<u64>;
    /// One page of a collection.
    async fn browse_documents(&self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage>;
    /// A document by key.
    async fn get_document(&self, collection: &str, key: &str) -> Result<Option<serde_json::Value>>;
    /// Stores a document.
    async fn put_document(&self, collection: &str, key: &str, document: serde_json::Value) -> Result<()>;
    /// Deletes a document; returns whether it existed.
    async fn delete_document(&self, collection: &str, key: &str) -> Result<bool>;
    /// Deletes a collection; returns whether it had documents.
    async fn drop_collection(&self, collection: &str) -> Result<bool>;
}

/// SQL stored in the database under a name: saved queries, and procedures (which run it).
///
/// Part of the [`DataClient`] contract.
#[async_trait]
pub trait StoredData: Send + Sync {
    /// Saved queries.
    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>>;
    /// A saved query by name.
    async fn get_saved_query(&self, name: &str) -> Result<Option<SavedQuery>>;
    /// Creates or replaces a saved query.
    async fn put_saved_query(&self, name: &str, sql_text: &str) -> Result<SavedQuery>;
    /// Deletes a saved query; returns whether it existed.
    async fn delete_saved_query(&self, name: &str) -> Result<bool>;

    /// Procedures.
    async fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>>;
    /// A procedure by name.
    async fn get_procedure(&self, name: &str) -> Result<Option<ProcedureDefinition>>;
    /// Creates or replaces a procedure.
    async fn put_procedure(&self, definition: ProcedureDefinition) -> Result<ProcedureDefinition>;
    /// Deletes a procedure; returns whether it existed.
    async fn delete_procedure(&self, name: &str) -> Result<bool>;
    /// Executes a procedure atomically with arguments (named, or positional in declaration order).
    async fn execute_procedure(&self, name: &str, args: Params) -> Result<SqlResult>;
}

/// Explicit transactions: begin one, run SQL in it by its id, then commit or roll back.
///
/// Part of the [`DataClient`] contract.
#[async_trait]
pub trait TransactionData: Send + Sync {
    /// Begins a transaction; the returned id routes later calls.
    async fn begin_transaction(&self) -> Result<TransactionInfo> {
        self.begin_transaction_with(TransactionOptions::default()).await
    }
    /// Begins a transaction with `options` (a maintenance transaction, say).
    async fn begin_transaction_with(&self, options: TransactionOptions) -> Result<TransactionInfo>;
    /// Executes SQL inside a transaction.
    async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult>;
    /// Commits a transaction.
    async fn commit_transaction(&self, transaction_id: &str) -> Result<()>;
    /// Rolls back a transaction.
    async fn rollback_transaction(&self, transaction_id: &str) -> Result<()>;
    /// The participant calls of an atomic transaction on the database this client reaches
    /// through another daemon (REST and gRPC carry them); `None` for in-process clients, whose
    /// coordinator works on the file itself.
    fn atomic_participant(&self) -> Option<super::SharedParticipant> {
        None
    }
}

/// The whole data contract on one database (or one route's shard): [`SqlData`], [`RowData`],
/// [`DocumentData`], [`StoredData`] and [`TransactionData`].
///
/// Every type that implements the five implements `DataClient` (it has no methods of its own),
/// so `Arc<dyn DataClient>` reaches all of them. Implemented by `LocalClient`, `RoutedClient`,
/// `DedicatedClient` and the remote clients; a `ShardedClient` is not one (it has no route: get
/// a route's client with `for_route`). Calling a method needs its trait in scope:
/// `use shardlite::client::{DataClient, RowData, SqlData};`, say.
///
/// Code that needs only part of the contract can ask for only that part: a function generic
/// over `T: RowData + ?Sized` takes any client, `dyn DataClient` included.
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use std::sync::Arc;
/// use shardlite::client::{DataClient, LocalClient, Params, RowData, SqlData};
///
/// async fn tables<T: RowData + ?Sized>(client: &T) -> shardlite::Result<Vec<String>> {
///     client.list_tables().await
/// }
///
/// let client: Arc<dyn DataClient> = Arc::new(LocalClient::open("data/app.db").await?);
/// client.execute_sql("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, body TEXT)", Params::none()).await?;
/// assert!(tables(&*client).await?.contains(&"notes".to_owned()));
/// # Ok(()) }
/// ```
pub trait DataClient: SqlData + RowData + DocumentData + StoredData + TransactionData {}

impl<T: SqlData + RowData + DocumentData + StoredData + TransactionData + ?Sized> DataClient for T {}
