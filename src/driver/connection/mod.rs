//! [`ShardliteConnection`]: one sqlx connection over a [`DataClient`], and how it runs SQL and
//! transactions (described on the type).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use futures_util::{FutureExt, StreamExt, TryFutureExt, stream};
use sqlx_core::Either;
use sqlx_core::connection::{Connection, LogSettings};
use sqlx_core::error::Error;
use sqlx_core::executor::{Execute, Executor};
use sqlx_core::logger::QueryLogger;
use sqlx_core::sql_str::SqlStr;
use sqlx_core::transaction::{Transaction, begin_ansi_transaction_sql, commit_ansi_transaction_sql};

use super::{
    Shardlite, ShardliteArguments, ShardliteConnectOptions, ShardliteQueryResult, ShardliteRow, ShardliteStatement,
    ShardliteTypeInfo,
};
use crate::ErrorKind;
use crate::client::DedicatedClient;
use crate::connect::{ConnectedClient, ConnectionTarget};
use crate::data::{DataClient, Params, ShardAdmin, SqlResult};

mod across_shards;
mod begin;

use begin::{begin_detached, check_begin_statement};

/// A connection bound to what its connection string names: one shard of a master catalog (the
/// route resolved in-process), a plain database file, or a keyspace without a key, whose reads
/// are answered across every shard (see below).
///
/// ```no_run
/// # async fn demo() -> sqlx_core::Result<()> {
/// use shardlite::driver::ShardliteConnection;
/// use sqlx_core::connection::Connection;
///
/// let mut conn = ShardliteConnection::connect(
///     "Data Source=data/master.db;Shard Keyspace=orders_by_month;Shard Key=2026-06",
/// )
/// .await?;
/// let mut tx = conn.begin().await?;
/// assert!(tx.transaction_id().is_some_and(|id| id.starts_with("csdbshard:")));
/// tx.commit().await?;
/// # Ok(()) }
/// ```
///
/// # Transactions
///
/// The outermost `begin` calls
/// [`begin_transaction`](crate::data::TransactionData::begin_transaction) (on a route-bound
/// connection the id is `csdbshard:{mapVersion}:{shardId}:{inner}`); every statement until commit
/// or rollback runs with
/// [`execute_in_transaction`](crate::data::TransactionData::execute_in_transaction) on that
/// session. Nested `begin`s are savepoints executed inside the session (`SAVEPOINT _sqlx_savepoint_N`, released by commit, rolled back
/// with `ROLLBACK TO` then released), named as sqlx's own drivers name them.
///
/// Dropping an `sqlx::Transaction` calls `TransactionManager::start_rollback`,
/// which cannot wait. It lowers the depth at once (as sqlx's PostgreSQL driver does) and queues
/// the rollback of that level; the queue starts running right away on the Tokio runtime, so a
/// dropped transaction does not hold its shard's write lock, and every later operation on the
/// connection (statements, `begin`, `commit`, `rollback`, `ping`, `close`) first waits for it. So an
/// outer commit after a dropped savepoint commits exactly the outer rows.
///
/// A level counts as open before its `begin` has finished: sqlx calls `start_rollback` when
/// `begin` fails or is cancelled, and that call must undo the failed level, never the one below it.
/// A cancelled outermost `begin` is finished on a task of its own, which rolls the new transaction
/// back when nobody is left to receive it.
///
/// A queued rollback that fails for any reason other than the transaction being gone already
/// (committed, expired) makes the connection unusable: every later operation, `ping` included,
/// reports it, so a pool discards the connection. Dropping or closing a connection rolls back
/// whatever transaction it still has open.
///
/// # Across shards
///
/// A connection bound to a keyspace without a key (`Shard Keyspace` alone in the connection
/// string, or [`ShardedPool::acquire_across_shards`](super::ShardedPool::acquire_across_shards))
/// answers each query (`SELECT`, `WITH … SELECT`) with
/// [`ShardedQuery::merged`](crate::client::ShardedQuery::merged): one result merged from
/// every shard, as SQLite would give it over one file holding every shard's rows. Any other
/// statement, and `begin`, fail with [`RouteRequired`](crate::Error::RouteRequired): a write
/// needs a route.
pub struct ShardliteConnection {
    target: ConnectionTarget,
    /// The shared client of the target (rows, collections and the like).
    shared: Option<Arc<dyn DataClient>>,
    /// What SQL and transactions run on: a connection of its own in-process, the remote client
    /// otherwise. Both are `None` on an in-process connection across shards, which has no route.
    client: Option<Arc<dyn DataClient>>,
    /// For a connection bound to a keyspace without a key: where queries are answered across shards.
    across_shards: Option<Arc<dyn ShardAdmin>>,
    log_settings: LogSettings,
    transaction: TransactionState,
}

/// Where the connection's transaction stands.
#[derive(Default)]
struct TransactionState {
    /// Levels open as sqlx counts them (1 = the transaction, 2.. = savepoints).
    depth: usize,
    /// The id of the open transaction, once its begin succeeded.
    session: Option<String>,
    /// Savepoints that exist in the session: `_sqlx_savepoint_1` ..= `_sqlx_savepoint_{savepoints}`.
    savepoints: usize,
    /// Rollbacks queued by `start_rollback` and not yet handed to a task.
    queued: VecDeque<Undo>,
    /// The task running earlier rollbacks; later operations wait for it.
    running: Option<tokio::task::JoinHandle<Result<(), String>>>,
    /// Why the connection can no longer be trusted (a queued rollback failed).
    broken: Option<String>,
}

/// One level to roll back.
#[derive(Debug, Clone)]
enum Undo {
    /// Roll back the whole transaction.
    Transaction { id: String },
    /// Roll back to and release savepoint `_sqlx_savepoint_{number}`.
    Savepoint { id: String, number: usize },
}

impl Undo {
    async fn run(&self, client: &dyn DataClient) -> crate::Result<()> {
        let outcome = match self {
            Self::Transaction { id } => client.rollback_transaction(id).await,
            Self::Savepoint { id, number } => client
                .execute_in_transaction(id, &rollback_savepoint_sql(*number), Params::none())
                .await
                .map(drop),
        };
        match outcome {
            // The transaction already ended (committed before a cancelled commit returned, expired,
            // or ended by SQLite): nothing is left to roll back, and a later use reports it.
            Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::Expired) => Ok(()),
            other => other,
        }
    }
}

/// `ROLLBACK TO` keeps the savepoint open; releasing it too keeps the session's savepoint stack
/// as deep as sqlx's count.
fn rollback_savepoint_sql(number: usize) -> String {
    format!("ROLLBACK TO SAVEPOINT _sqlx_savepoint_{number}; RELEASE SAVEPOINT _sqlx_savepoint_{number}")
}

async fn run_all(client: &dyn DataClient, undo: &[Undo]) -> Result<(), String> {
    let mut failure = None;
    for step in undo {
        if let Err(err) = step.run(client).await {
            tracing::warn!(error = %err, "a rollback queued by a dropped sqlx transaction failed");
            failure.get_or_insert_with(|| err.to_string());
        }
    }
    failure.map_or(Ok(()), Err)
}

impl fmt::Debug for ShardliteConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardliteConnection")
            .field("target", &self.target)
            .field("transaction_depth", &self.transaction.depth)
            .field("transaction_id", &self.transaction.session)
            .finish_non_exhaustive()
    }
}

impl ShardliteConnection {
    pub(crate) async fn establish(options: &ShardliteConnectOptions) -> Result<Self, Error> {
        let connected = options.open().await?;
        let client = own_connection(&connected).await?;
        let connection = Self::from_parts(
            connected.target().clone(),
            connected.client().ok(),
            client,
            options.log_settings.clone(),
        );
        Ok(match connected.admin() {
            Some(admin) if options.connection_options().is_keyspace_without_key() => connection.across_shards(admin),
            _ => connection,
        })
    }

    /// Makes this a connection bound to a keyspace without a key: queries are answered across
    /// every shard by `admin`, anything else needs a route.
    pub(crate) fn across_shards(mut self, admin: Arc<dyn ShardAdmin>) -> Self {
        self.across_shards = Some(admin);
        self
    }

    /// A connection over `client` (SQL and transactions) reaching `target`, with `shared` for the
    /// calls SQL does not cover.
    pub(crate) fn from_parts(
        target: ConnectionTarget,
        shared: Option<Arc<dyn DataClient>>,
        client: Option<Arc<dyn DataClient>>,
        log_settings: LogSettings,
    ) -> Self {
        Self {
            target,
            shared,
            client,
            across_shards: None,
            log_settings,
            transaction: TransactionState::default(),
        }
    }

    /// Rolls back whatever the connection still has open and waits for it, leaving it ready for
    /// another user; an error means it must not be reused.
    pub(crate) async fn reset(&mut self) -> Result<(), Error> {
        while self.transaction.depth > 0 {
            self.start_rollback();
        }
        self.settle().await
    }

    /// What the connection reaches: the shard its route resolved to, or a plain database.
    pub fn target(&self) -> &ConnectionTarget {
        &self.target
    }

    /// The data-operation client under the connection, for what SQL does not cover (rows by key,
    /// collections, saved queries, procedures). Calls through it run outside the connection's
    /// transaction.
    ///
    /// Fails with [`RouteRequired`](crate::Error::RouteRequired) on an in-process connection
    /// across shards (bound to a keyspace without a key), which has no route's client.
    pub fn data_client(&self) -> crate::Result<&Arc<dyn DataClient>> {
        self.shared.as_ref().ok_or(crate::Error::RouteRequired)
    }

    /// The id of the open transaction (`csdbshard:…` on a route-bound connection), if any.
    pub fn transaction_id(&self) -> Option<&str> {
        self.transaction.session.as_deref()
    }

    fn client(&self) -> crate::Result<&dyn DataClient> {
        self.client.as_deref().ok_or(crate::Error::RouteRequired)
    }

    /// Hands queued rollbacks to a task that runs them after the ones already running, so they
    /// start now and in order. Without a Tokio runtime they wait for [`settle`](Self::settle).
    fn launch_queued(&mut self) {
        if self.transaction.queued.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        // Rollbacks are queued only for a transaction that began, on a client.
        let Some(client) = self.client.clone() else {
            return;
        };
        let undo: Vec<Undo> = self.transaction.queued.drain(..).collect();
        let earlier = self.transaction.running.take();
        self.transaction.running = Some(runtime.spawn(async move {
            let earlier = match earlier {
                Some(task) => task.await.unwrap_or_else(|err| Err(err.to_string())),
                None => Ok(()),
            };
            let now = run_all(&*client, &undo).await;
            earlier.and(now)
        }));
    }

    /// Waits for every queued rollback. Called first by every operation.
    async fn settle(&mut self) -> Result<(), Error> {
        self.launch_queued();
        if let Some(task) = self.transaction.running.as_mut() {
            let outcome = task.await.unwrap_or_else(|err| Err(err.to_string()));
            self.transaction.running = None;
            if let Err(reason) = outcome {
                self.transaction.broken.get_or_insert(reason);
            }
        }
        // No runtime to spawn on: run them here, dropping each only once it has run.
        while let Some(step) = self.transaction.queued.front().cloned() {
            let outcome = match self.client() {
                Ok(client) => run_all(client, std::slice::from_ref(&step)).await,
                Err(err) => Err(err.to_string()),
            };
            self.transaction.queued.pop_front();
            if let Err(reason) = outcome {
                self.transaction.broken.get_or_insert(reason);
            }
        }
        match &self.transaction.broken {
            Some(reason) => Err(Error::Protocol(format!(
                "the connection is unusable: rolling back a dropped transaction failed ({reason})"
            ))),
            None => Ok(()),
        }
    }

    /// Runs one statement or script, in the open transaction if there is one.
    pub(super) async fn run(&mut self, sql: SqlStr, arguments: Option<ShardliteArguments>) -> Result<SqlResult, Error> {
        self.settle().await?;
        let params = arguments.map_or_else(Params::none, |arguments| arguments.into_params_for(sql.as_str()));
        let mut logger = QueryLogger::new(sql.clone(), self.log_settings.clone());
        let result = match (self.transaction.depth, self.transaction.session.as_deref()) {
            (0, _) => match &self.across_shards {
                Some(admin) => across_shards::run(&**admin, sql.as_str(), params).await,
                None => self.client()?.execute_sql(sql.as_str(), params).await,
            },
            (_, Some(id)) => self.client()?.execute_in_transaction(id, sql.as_str(), params).await,
            (_, None) => {
                return Err(Error::Protocol(
                    "the transaction on this connection failed to begin; roll it back first".to_owned(),
                ));
            }
        }?;
        logger.increase_rows_affected(result.rows_affected);
        for _ in &result.rows {
            logger.increment_rows_returned();
        }
        Ok(result)
    }

    pub(crate) async fn begin_level(&mut self, statement: Option<SqlStr>) -> Result<(), Error> {
        self.settle().await?;
        let depth = self.transaction.depth;
        // Counted before anything can fail: sqlx answers a failed begin with `start_rollback`,
        // which must undo this level, not the one below.
        self.transaction.depth = depth + 1;
        if depth == 0 {
            if self.across_shards.is_some() {
                return Err(crate::Error::RouteRequired.into());
            }
            if let Some(statement) = statement {
                check_begin_statement(statement.as_str())?;
            }
            let client = self.client.as_ref().ok_or(crate::Error::RouteRequired)?;
            let info = begin_detached(client).await?;
            self.transaction.session = Some(info.transaction_id);
            self.transaction.savepoints = 0;
            return Ok(());
        }
        if statement.is_some() {
            return Err(Error::InvalidSavePointStatement);
        }
        let id = self.open_session()?;
        self.client()?
            .execute_in_transaction(&id, begin_ansi_transaction_sql(depth).as_str(), Params::none())
            .await?;
        self.transaction.savepoints = depth;
        Ok(())
    }

    pub(crate) async fn commit_level(&mut self) -> Result<(), Error> {
        self.settle().await?;
        match self.transaction.depth {
            0 => Ok(()),
            1 => {
                if let Some(id) = self.transaction.session.clone() {
                    // On failure the level stays open; the dropped sqlx transaction rolls it back.
                    self.client()?.commit_transaction(&id).await?;
                }
                self.end_transaction();
                Ok(())
            }
            depth => {
                let number = depth - 1;
                if self.transaction.savepoints >= number {
                    let id = self.open_session()?;
                    self.client()?
                        .execute_in_transaction(&id, commit_ansi_transaction_sql(depth).as_str(), Params::none())
                        .await?;
                    self.transaction.savepoints = number - 1;
                }
                self.transaction.depth = depth - 1;
                Ok(())
            }
        }
    }

    pub(crate) async fn rollback_level(&mut self) -> Result<(), Error> {
        self.settle().await?;
        match self.transaction.depth {
            0 => Ok(()),
            1 => {
                if let Some(id) = self.transaction.session.clone() {
                    Undo::Transaction { id }.run(self.client()?).await?;
                }
                self.end_transaction();
                Ok(())
            }
            depth => {
                let number = depth - 1;
                if self.transaction.savepoints >= number {
                    let id = self.open_session()?;
                    Undo::Savepoint { id, number }.run(self.client()?).await?;
                    self.transaction.savepoints = number - 1;
                }
                self.transaction.depth = depth - 1;
                Ok(())
            }
        }
    }

    /// Marks the innermost level rolled back and queues its rollback (it cannot wait here).
    pub(crate) fn start_rollback(&mut self) {
        let depth = self.transaction.depth;
        if depth == 0 {
            return;
        }
        if depth == 1 {
            if let Some(id) = self.transaction.session.take() {
                self.transaction.queued.push_back(Undo::Transaction { id });
            }
            self.end_transaction();
        } else {
            let number = depth - 1;
            if self.transaction.savepoints >= number {
                if let Some(id) = self.transaction.session.clone() {
                    self.transaction.queued.push_back(Undo::Savepoint { id, number });
                }
                self.transaction.savepoints = number - 1;
            }
            self.transaction.depth = depth - 1;
        }
        self.launch_queued();
    }

    pub(crate) fn transaction_depth(&self) -> usize {
        self.transaction.depth
    }

    fn end_transaction(&mut self) {
        self.transaction.depth = 0;
        self.transaction.session = None;
        self.transaction.savepoints = 0;
    }

    fn open_session(&self) -> Result<String, Error> {
        self.transaction
            .session
            .clone()
            .ok_or_else(|| Error::Protocol("the transaction on this connection failed to begin".to_owned()))
    }
}

/// The client a new connection runs SQL on: a SQLite connection of its own for an in-process
/// target (a route's shard or a plain file), so connection-local state lasts as long as the
/// connection; the shared remote client for a daemon, where each call is a request.
async fn own_connection(connected: &ConnectedClient) -> Result<Option<Arc<dyn DataClient>>, Error> {
    Ok(match connected {
        ConnectedClient::Shard { client, .. } => Some(Arc::new(
            DedicatedClient::for_route(client.sharded(), client.route().clone()).await?,
        )),
        ConnectedClient::Local { client, .. } => Some(Arc::new(DedicatedClient::for_local(client).await?)),
        other => other.client().ok(),
    })
}

type Step = Result<Either<ShardliteQueryResult, ShardliteRow>, Error>;

/// The engine answers with a whole result: its rows, then what the statements changed.
fn steps(result: SqlResult) -> Vec<Step> {
    let summary = ShardliteQueryResult {
        rows_affected: result.rows_affected,
        last_insert_rowid: result.last_insert_rowid,
    };
    let mut steps: Vec<Step> = ShardliteRow::from_result(result)
        .into_iter()
        .map(|row| Ok(Either::Right(row)))
        .collect();
    steps.push(Ok(Either::Left(summary)));
    steps
}

impl<'c> Executor<'c> for &'c mut ShardliteConnection {
    type Database = Shardlite;

    fn fetch_many<'e, 'q, E>(self, mut query: E) -> BoxStream<'e, Step>
    where
        'c: 'e,
        E: Execute<'q, Shardlite>,
        'q: 'e,
        E: 'q,
    {
        // `sql()` consumes the query: take the arguments first.
        let arguments = match query.take_arguments().map_err(Error::Encode) {
            Ok(arguments) => arguments,
            Err(err) => return stream::once(std::future::ready(Err(err))).boxed(),
        };
        let sql = query.sql();
        self.run(sql, arguments)
            .map_ok(|result| stream::iter(steps(result)))
            .try_flatten_stream()
            .boxed()
    }

    fn fetch_optional<'e, 'q, E>(self, mut query: E) -> BoxFuture<'e, Result<Option<ShardliteRow>, Error>>
    where
        'c: 'e,
        E: Execute<'q, Shardlite>,
        'q: 'e,
        E: 'q,
    {
        let arguments = match query.take_arguments().map_err(Error::Encode) {
            Ok(arguments) => arguments,
            Err(err) => return std::future::ready(Err(err)).boxed(),
        };
        let sql = query.sql();
        async move {
            let result = self.run(sql, arguments).await?;
            Ok(ShardliteRow::from_result(result).into_iter().next())
        }
        .boxed()
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        _parameters: &'e [ShardliteTypeInfo],
    ) -> BoxFuture<'e, Result<ShardliteStatement, Error>>
    where
        'c: 'e,
    {
        std::future::ready(Ok(ShardliteStatement::new(sql))).boxed()
    }

    fn describe<'e>(self, _sql: SqlStr) -> BoxFuture<'e, Result<sqlx_core::describe::Describe<Shardlite>, Error>>
    where
        'c: 'e,
    {
        std::future::ready(Err(Error::Protocol(
            "the shardlite driver does not describe statements (the query! macros are not supported)".to_owned(),
        )))
        .boxed()
    }
}

impl Connection for ShardliteConnection {
    type Database = Shardlite;

    type Options = ShardliteConnectOptions;

    /// Rolls back whatever transaction is still open, then releases the connection. The shard
    /// files stay open while other connections from the same options use them.
    async fn close(mut self) -> Result<(), Error> {
        while self.transaction.depth > 0 {
            self.start_rollback();
        }
        self.settle().await
    }

    fn close_hard(self) -> impl Future<Output = Result<(), Error>> + Send + 'static {
        // Drop queues the rollback of anything still open.
        drop(self);
        std::future::ready(Ok(()))
    }

    /// Runs queued rollbacks (the pool pings a connection when it comes back) and reports a
    /// connection that cannot be used.
    fn ping(&mut self) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        self.settle()
    }

    fn begin(&mut self) -> impl Future<Output = Result<Transaction<'_, Shardlite>, Error>> + Send + '_ {
        Transaction::begin(self, None)
    }

    fn shrink_buffers(&mut self) {}

    fn flush(&mut self) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        self.settle()
    }

    fn should_flush(&self) -> bool {
        !self.transaction.queued.is_empty() || self.transaction.running.is_some()
    }
}

impl Drop for ShardliteConnection {
    fn drop(&mut self) {
        // The shard files may outlive this connection (other connections share them): roll back
        // what it leaves open rather than wait for the engine's idle timeout.
        while self.transaction.depth > 0 {
            self.start_rollback();
        }
    }
}

#[cfg(test)]
mod tests;
