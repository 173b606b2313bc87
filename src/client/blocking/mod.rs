//! A blocking client, for callers that do not run an async runtime.
//!
//! [`ShardedClient`] here serves the same map, the same shard files and the same routing as the
//! async [`client::ShardedClient`](super::ShardedClient) (it wraps one), with blocking methods:
//! `for_route`, SQL, rows, collections, saved queries, procedures, transactions with the same
//! `csdbshard:` ids, and the same parts: [`shards`](ShardedClient::shards) (status),
//! [`query`](ShardedClient::query) (fan-out), [`catalog`](ShardedClient::catalog) (catalog
//! updates), [`schema`](ShardedClient::schema) and [`transactions`](ShardedClient::transactions).
//!
//! **Where the work runs.** On a local shard, SQL runs on the calling thread: a query on a
//! read-only connection borrowed for the call, a write on the shard's writer connection,
//! locked for the call so that writes stay serialised with every other writer of the process.
//! Routing is resolved once per route and map version and then reused. The statement time
//! limit, result limits and hostile-SQL rules are the engine's, as on the async client. The
//! rest (transactions, whose connection lives on a thread of its own; remote shards; fan-out;
//! loading a map another process activated) runs on a small runtime the client owns, and the
//! call waits for it.
//!
//! ```no_run
//! # fn demo() -> shardlite::Result<()> {
//! use shardlite::RouteContext;
//! use shardlite::client::Params;
//! use shardlite::client::blocking::ShardedClient;
//!
//! let sharded = ShardedClient::open("data/master.db")?;
//! let june = sharded.for_route(RouteContext::new("orders_by_month", "2026-06")?);
//! let count = june.execute_sql("SELECT count(*) FROM orders WHERE order_month = ?1", Params::from(vec!["2026-06"]))?;
//!
//! let tx = june.begin()?;
//! tx.execute("INSERT INTO orders (order_month, amount) VALUES (?1, ?2)", Params::from(vec!["2026-06", "19.50"]))?;
//! tx.commit()?;
//! # let _ = count; Ok(()) }
//! ```
//!
//! Use it from plain threads. Inside an async task, prefer the async client: a blocking call
//! holds the task's worker thread for as long as it runs.

use std::future::Future;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arc_swap::Guard;

use tokio::runtime::Runtime;

mod catalog;
mod query;
mod schema;
mod shards;
mod transactions;

pub use catalog::ShardedCatalog;
pub use query::ShardedQuery;
pub use schema::ShardedSchema;
pub use shards::Shards;
pub use transactions::ShardedTransactions;

use super::routed::{result_rows, row_count};
use super::sharded::generation::{Generation, ShardSlot};
use super::{ShardedClientOptions, ShardedTransaction};
use crate::data::{
    DatabaseInfo, DocumentData, DocumentPage, Params, ProcedureDefinition, Row, RowData, RowPage, RowRef, SavedQuery,
    SqlData, SqlResult, StoredData, TableSchema, TransactionData, TransactionInfo, TransactionOptions, Value,
};
use crate::data::{every_row, first_row};
use crate::error::{Error, Result};
use crate::map::{ShardMap, ShardMapSnapshot};
use crate::routing::{ResolvedRoute, RouteContext};
use crate::transaction::TransactionId;

/// The runtime a blocking client waits on, and how it waits.
#[derive(Clone)]
struct Waiter(Arc<OwnedRuntime>);

/// A runtime that shuts down without waiting when the last client goes, so that a blocking
/// client may be dropped anywhere, an async task included.
struct OwnedRuntime(Option<Runtime>);

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl OwnedRuntime {
    fn get(&self) -> &Runtime {
        // Taken only by `drop`.
        self.0
            .as_ref()
            .unwrap_or_else(|| unreachable!("the runtime lives until the last client drops"))
    }
}

impl Waiter {
    fn new() -> Result<Self> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("shardlite-blocking")
            .enable_all()
            .build()
            .map(|runtime| Self(Arc::new(OwnedRuntime(Some(runtime)))))
            .map_err(|source| Error::Io {
                what: "the blocking client's runtime".to_owned(),
                source,
            })
    }

    /// Runs `future` to its end on the client's runtime. Called from inside another runtime
    /// (where blocking on this one is not allowed), it waits on a scoped thread instead.
    fn block_on<F: Future + Send>(&self, future: F) -> F::Output
    where
        F::Output: Send,
    {
        if tokio::runtime::Handle::try_current().is_err() {
            return self.0.get().block_on(future);
        }
        std::thread::scope(|scope| {
            scope
                .spawn(|| self.0.get().block_on(future))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

/// A blocking client over every shard of one map. Cloning is cheap and shares the shards.
#[derive(Clone)]
pub struct ShardedClient {
    sharded: super::ShardedClient,
    waiter: Waiter,
}

impl std::fmt::Debug for ShardedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("blocking::ShardedClient")
            .field("data_source", &self.sharded.data_source())
            .finish_non_exhaustive()
    }
}

impl ShardedClient {
    /// Opens the master catalog at `master` and every shard of its active map (see
    /// [`client::ShardedClient::open`](super::ShardedClient::open)).
    pub fn open(master: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(master, ShardedClientOptions::default())
    }

    /// [`open`](Self::open) with explicit settings.
    pub fn open_with(master: impl AsRef<Path>, options: ShardedClientOptions) -> Result<Self> {
        let waiter = Waiter::new()?;
        let master = master.as_ref().to_path_buf();
        let sharded = waiter.block_on(super::ShardedClient::open_with(master, options))?;
        Ok(Self { sharded, waiter })
    }

    /// A client over a map held in memory (no catalog).
    pub fn from_map(map: ShardMap) -> Result<Self> {
        Self::from_map_with(map, ShardedClientOptions::default())
    }

    /// [`from_map`](Self::from_map) with explicit settings.
    pub fn from_map_with(map: ShardMap, options: ShardedClientOptions) -> Result<Self> {
        let waiter = Waiter::new()?;
        let sharded = waiter.block_on(super::ShardedClient::from_map_with(map, options))?;
        Ok(Self { sharded, waiter })
    }

    /// The async client this one wraps, serving the same shards.
    pub fn as_async(&self) -> &super::ShardedClient {
        &self.sharded
    }

    /// A client bound to one route: every call runs on the shard the route resolves to.
    pub fn for_route(&self, route: RouteContext) -> RoutedClient {
        RoutedClient {
            routed: self.sharded.for_route(route),
            waiter: self.waiter.clone(),
        }
    }

    /// Resolves a route against the active map.
    pub fn resolve_route(&self, route: &RouteContext) -> Result<ResolvedRoute> {
        self.sharded.resolve_route(route)
    }

    /// A secret-free snapshot of the active map.
    pub fn map_snapshot(&self) -> ShardMapSnapshot {
        self.sharded.map_snapshot()
    }

    /// `sharded://{keyspace}?version={mapVersion}`.
    pub fn data_source(&self) -> String {
        self.sharded.data_source()
    }

    /// Its shards: health, counts summed over every shard, heat (as
    /// [`client::ShardedClient::shards`](super::ShardedClient::shards)).
    pub fn shards(&self) -> Shards<'_> {
        Shards::new(self)
    }

    /// SQL on every enabled shard, and one `SELECT` merged across them (as
    /// [`client::ShardedClient::query`](super::ShardedClient::query)).
    pub fn query(&self) -> ShardedQuery<'_> {
        ShardedQuery::new(self)
    }

    /// Catalog state, map updates and live activation (as
    /// [`client::ShardedClient::catalog`](super::ShardedClient::catalog)).
    pub fn catalog(&self) -> ShardedCatalog<'_> {
        ShardedCatalog::new(self)
    }

    /// Schema migrations and schema status on every enabled shard (as
    /// [`client::ShardedClient::schema`](super::ShardedClient::schema)).
    pub fn schema(&self) -> ShardedSchema<'_> {
        ShardedSchema::new(self)
    }

    /// Transaction calls routed by the id alone (as
    /// [`client::ShardedClient::transactions`](super::ShardedClient::transactions)); a route's
    /// transactions begin on its client ([`RoutedClient::begin`]).
    pub fn transactions(&self) -> ShardedTransactions<'_> {
        ShardedTransactions::new(self)
    }

    /// Runs `future` to its end on the client's runtime.
    fn wait<F: Future + Send>(&self, future: F) -> F::Output
    where
        F::Output: Send,
    {
        self.waiter.block_on(future)
    }
}

/// Blocking forms of async methods: each waits for the method of the same name on `$target`.
macro_rules! blocking_methods {
    ($target:ident via $trait:ident: $( $(#[$doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $out:ty; )*) => {
        $(
            $(#[$doc])*
            pub fn $name(&self $(, $arg: $ty)*) -> $out {
                self.waiter.block_on($trait::$name(&self.$target $(, $arg)*))
            }
        )*
    };
}

/// A blocking client bound to one route. Every call runs on the shard the route resolves to;
/// transaction calls also check that the id belongs to the route's shard.
#[derive(Clone)]
pub struct RoutedClient {
    routed: super::RoutedClient,
    waiter: Waiter,
}

impl std::fmt::Debug for RoutedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("blocking::RoutedClient")
            .field("route", self.routed.route())
            .finish_non_exhaustive()
    }
}

impl RoutedClient {
    /// The route this client is bound to.
    pub fn route(&self) -> &RouteContext {
        self.routed.route()
    }

    /// Where the route resolves.
    pub fn resolve(&self) -> Result<ResolvedRoute> {
        self.routed.resolve()
    }

    /// The async form of this client, on the same shards.
    pub fn as_async(&self) -> &super::RoutedClient {
        &self.routed
    }

    /// Executes SQL (one statement or a script) with bound parameters on the route's shard.
    pub fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        let generation = self.generation();
        let index = self.shard_index(&generation)?;
        let outcome = match &generation.shards[index] {
            ShardSlot::Ready { local: Some(local), .. } => local.database().execute_blocking(sql, &params),
            _ => match generation.slot_client(index) {
                Ok(client) => self.waiter.block_on(client.execute_sql(sql, params)),
                Err(err) => Err(err),
            },
        };
        self.routed.counted(outcome, result_rows)
    }

    /// Runs one statement on the route's shard and maps its first row with `f`, as
    /// rusqlite's `query_row` does; `None` when it returns no row. On a local shard the row is
    /// read in place on the calling thread: nothing of it is copied unless `f` copies it.
    ///
    /// ```no_run
    /// # fn demo(june: &shardlite::client::blocking::RoutedClient) -> shardlite::Result<()> {
    /// use shardlite::client::Params;
    ///
    /// let order: Option<(i64, String)> = june.query_row(
    ///     "SELECT id, customer FROM orders WHERE id = ?1",
    ///     Params::from(vec![42]),
    ///     |row| Ok((row.get(0)?, row.get(1)?)),
    /// )?;
    /// # let _ = order; Ok(()) }
    /// ```
    ///
    /// The same rules apply as to [`execute_sql`](Self::execute_sql) (one statement here; a
    /// statement that writes runs on the writer). `f` may query this client again, but a
    /// long-running `f` holds a read snapshot of the shard open for as long as it runs.
    pub fn query_row<T>(
        &self,
        sql: &str,
        params: Params,
        f: impl FnOnce(&RowRef<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut f = Some(f);
        let mut out = None;
        let outcome = self.query_each(sql, params, &mut first_row(&mut f, &mut out));
        self.routed
            .counted(outcome.map(|()| out), |out| u64::from(out.is_some()))
    }

    /// Runs one statement on the route's shard and maps every row it returns with `f`, as
    /// rusqlite's `query_map` does; see [`query_row`](Self::query_row).
    pub fn query_map<T>(
        &self,
        sql: &str,
        params: Params,
        mut f: impl FnMut(&RowRef<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        let outcome = self.query_each(sql, params, &mut every_row(&mut f, &mut out));
        self.routed.counted(outcome.map(|()| out), |out| row_count(out.len()))
    }

    /// Lends each row of one statement to `each`, on the route's shard.
    fn query_each(
        &self,
        sql: &str,
        params: Params,
        each: &mut dyn FnMut(&RowRef<'_>) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        // One clock read serves the map's refresh check and the statement's time limit.
        let started = Instant::now();
        let generation = self.generation_at(started);
        let index = self.shard_index(&generation)?;
        if let ShardSlot::Ready { local: Some(local), .. } = &generation.shards[index] {
            return local.database().query_blocking_from(started, sql, &params, each);
        }
        crate::engine::require_single_statement(sql)?;
        let client = generation.slot_client(index)?;
        let result = self.waiter.block_on(client.execute_sql(sql, params))?;
        result.lend_rows(each)
    }

    /// Executes SQL that must not write, on the route's shard (see
    /// [`SqlData::execute_read_only_sql`]).
    pub fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        let generation = self.generation();
        let index = self.shard_index(&generation)?;
        let outcome = match &generation.shards[index] {
            ShardSlot::Ready { local: Some(local), .. } => local.database().execute_read_only_blocking(sql, &params),
            _ => match generation.slot_client(index) {
                Ok(client) => self.waiter.block_on(client.execute_read_only_sql(sql, params)),
                Err(err) => Err(err),
            },
        };
        self.routed.counted(outcome, result_rows)
    }

    /// Begins a transaction on the route's shard. The guard rolls back when dropped without
    /// [`commit`](Transaction::commit).
    pub fn begin(&self) -> Result<Transaction> {
        let inner = self.waiter.block_on(self.routed.begin())?;
        Ok(Transaction {
            inner: Some(inner),
            waiter: self.waiter.clone(),
        })
    }

    /// The generation to serve this call with, after noticing a map another process activated.
    fn generation(&self) -> Guard<Arc<Generation>> {
        self.generation_at(Instant::now())
    }

    /// [`generation`](Self::generation) for a call that started at `now`.
    fn generation_at(&self, now: Instant) -> Guard<Arc<Generation>> {
        self.routed
            .sharded
            .shared()
            .fresh_blocking(now, |load| self.waiter.block_on(load))
    }

    /// The index of the route's shard in `generation`'s map, resolved once per map version.
    fn shard_index(&self, generation: &Generation) -> Result<usize> {
        self.routed.resolved.index(&generation.map, self.routed.route())
    }

    blocking_methods! { routed via SqlData:
        /// Counts of tables, collections, saved queries and procedures on the route's shard.
        fn info(&self) -> Result<DatabaseInfo>;
    }

    blocking_methods! { routed via RowData:
        /// User table names.
        fn list_tables(&self) -> Result<Vec<String>>;
        /// A table's schema.
        fn table_schema(&self, table: &str) -> Result<TableSchema>;
        /// Rows in a table.
        fn count_rows(&self, table: &str) -> Result<u64>;
        /// One page of a table (pages start at 1).
        fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> Result<RowPage>;
        /// A row by primary key.
        fn get_row(&self, table: &str, key: Value) -> Result<Option<Row>>;
        /// Inserts a row; returns rows inserted.
        fn insert_row(&self, table: &str, values: Row) -> Result<u64>;
        /// Updates a row by primary key; returns rows updated.
        fn update_row(&self, table: &str, key: Value, values: Row) -> Result<u64>;
        /// Deletes a row by primary key; returns rows deleted.
        fn delete_row(&self, table: &str, key: Value) -> Result<u64>;
    }

    blocking_methods! { routed via DocumentData:
        /// Collection names.
        fn list_collections(&self) -> Result<Vec<String>>;
        /// Documents in a collection.
        fn count_documents(&self, collection: &str) -> Result<u64>;
        /// One page of a collection.
        fn browse_documents(&self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage>;
        /// A document by key.
        fn get_document(&self, collection: &str, key: &str) -> Result<Option<serde_json::Value>>;
        /// Stores a document.
        fn put_document(&self, collection: &str, key: &str, document: serde_json::Value) -> Result<()>;
        /// Deletes a document; returns whether it existed.
        fn delete_document(&self, collection: &str, key: &str) -> Result<bool>;
        /// Deletes a collection; returns whether it had documents.
        fn drop_collection(&self, collection: &str) -> Result<bool>;
    }

    blocking_methods! { routed via StoredData:
        /// Saved queries.
        fn list_saved_queries(&self) -> Result<Vec<SavedQuery>>;
        /// A saved query by name.
        fn get_saved_query(&self, name: &str) -> Result<Option<SavedQuery>>;
        /// Creates or replaces a saved query.
        fn put_saved_query(&self, name: &str, sql_text: &str) -> Result<SavedQuery>;
        /// Deletes a saved query; returns whether it existed.
        fn delete_saved_query(&self, name: &str) -> Result<bool>;
        /// Procedures.
        fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>>;
        /// A procedure by name.
        fn get_procedure(&self, name: &str) -> Result<Option<ProcedureDefinition>>;
        /// Creates or replaces a procedure.
        fn put_procedure(&self, definition: ProcedureDefinition) -> Result<ProcedureDefinition>;
        /// Deletes a procedure; returns whether it existed.
        fn delete_procedure(&self, name: &str) -> Result<bool>;
        /// Executes a procedure atomically with arguments.
        fn execute_procedure(&self, name: &str, args: Params) -> Result<SqlResult>;
    }

    blocking_methods! { routed via TransactionData:
        /// Begins a transaction on the route's shard; the returned id routes later calls.
        fn begin_transaction(&self) -> Result<TransactionInfo>;
        /// Begins a transaction with `options` (a maintenance transaction, say).
        fn begin_transaction_with(&self, options: TransactionOptions) -> Result<TransactionInfo>;
        /// Executes SQL inside a transaction of the route's shard.
        fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult>;
        /// Commits a transaction of the route's shard.
        fn commit_transaction(&self, transaction_id: &str) -> Result<()>;
        /// Rolls back a transaction of the route's shard.
        fn rollback_transaction(&self, transaction_id: &str) -> Result<()>;
    }
}

/// An open routed transaction of the blocking client. Dropping it without
/// [`commit`](Self::commit) rolls it back.
#[must_use = "a transaction rolls back when dropped; call commit to keep its changes"]
pub struct Transaction {
    /// `None` once committed or rolled back.
    inner: Option<ShardedTransaction>,
    waiter: Waiter,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("blocking::Transaction")
            .field("id", &self.inner.as_ref().map(ShardedTransaction::id))
            .finish_non_exhaustive()
    }
}

impl Transaction {
    fn open(&self) -> &ShardedTransaction {
        // `inner` is taken only by `commit` and `rollback`, which consume the transaction.
        self.inner
            .as_ref()
            .unwrap_or_else(|| unreachable!("a finished transaction is consumed"))
    }

    /// The shard-prefixed id (`csdbshard:{mapVersion}:{shardId}:{inner}`).
    pub fn id(&self) -> &TransactionId {
        self.open().id()
    }

    /// When the transaction expires if left idle, as reported at begin.
    pub fn expires_at_utc(&self) -> Option<&str> {
        self.open().expires_at_utc()
    }

    /// Executes SQL inside the transaction.
    pub fn execute(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.waiter.block_on(self.open().execute(sql, params))
    }

    /// Commits.
    pub fn commit(mut self) -> Result<()> {
        match self.inner.take() {
            Some(inner) => self.waiter.block_on(inner.commit()),
            None => Ok(()),
        }
    }

    /// Rolls back.
    pub fn rollback(mut self) -> Result<()> {
        match self.inner.take() {
            Some(inner) => self.waiter.block_on(inner.rollback()),
            None => Ok(()),
        }
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            // The async guard's rollback of a remote shard's transaction is a task on the
            // current runtime: give it this client's.
            let _entered = self.waiter.0.get().enter();
            drop(inner);
        }
    }
}
