//! [`DedicatedClient`]: a [`DataClient`] whose SQL and transactions run on one SQLite connection
//! of its own, for callers that expect connection-local state (sqlx connections).

use std::future::{Future, ready};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;

use super::forward::{Forward, ForwardDocuments, ForwardRows, ForwardStored};
use super::{LocalClient, ShardedClient};
use crate::data::{
    DataClient, DatabaseInfo, Params, SqlData, SqlResult, TransactionData, TransactionInfo, TransactionOptions,
};
use crate::engine::{BeginMode, DedicatedConnection};
use crate::error::{Error, ErrorKind, Result};
use crate::routing::RouteContext;
use crate::transaction::TransactionId;

/// A client that keeps one SQLite connection of its own (an engine
/// [`DedicatedConnection`]) for SQL and transactions, so `TEMP` tables, `last_insert_rowid()` and
/// `changes()` carry from one statement to the next, as on a connection of sqlx's SQLite driver.
///
/// Bound to a route, it opens its connection on the route's shard and, before every call, checks
/// the live map as a route-bound client does: a shard whose ownership changed since (an
/// activation) answers [`Error::StaleMapVersion`], a route that now resolves elsewhere
/// [`Error::TransactionRouteConflict`]. Its transactions carry `csdbshard:` ids naming the map
/// version and shard; only this client can use them. Row, collection, saved-query and procedure
/// calls, `info` and read-only SQL go to the shared connections of the file, outside any
/// transaction of this client.
pub struct DedicatedClient {
    bound: Mutex<Bound>,
    shared: Arc<dyn DataClient>,
    binding: Binding,
    transaction: Mutex<Option<String>>,
}

/// The connection in use, and the map version and shard it was opened under.
struct Bound {
    connection: Arc<DedicatedConnection>,
    map_version: u64,
    shard_id: String,
}

enum Binding {
    Local,
    Routed {
        sharded: ShardedClient,
        route: RouteContext,
        /// Whether to move to the route's new shard when an activation moves the route.
        follow: bool,
    },
}

impl std::fmt::Debug for DedicatedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("DedicatedClient");
        if let Binding::Routed { route, .. } = &self.binding {
            debug.field("route", route).field("shard_id", &self.bound().shard_id);
        }
        debug.field("transaction", &*self.current()).finish_non_exhaustive()
    }
}

impl DedicatedClient {
    /// A connection of its own on the shard `route` resolves to. When an activation later moves
    /// the route to another shard, the next call outside a transaction opens a connection there
    /// (connection-local state stays behind with the old one); a transaction open across the move
    /// fails instead.
    pub async fn for_route(sharded: &ShardedClient, route: RouteContext) -> Result<Self> {
        let (connection, map_version, shard_id) = sharded.shared().dedicated_for_route(&route).await?;
        let mut client = Self::on_shard(sharded, route, Arc::new(connection), map_version, shard_id);
        if let Binding::Routed { follow, .. } = &mut client.binding {
            *follow = true;
        }
        Ok(client)
    }

    /// `route`'s client over an open connection of shard `shard_id`, opened under map
    /// `map_version` (a pool hands its connections from route to route this way). Every call
    /// checks that the route still belongs to that shard, and fails when it does not.
    pub fn on_shard(
        sharded: &ShardedClient,
        route: RouteContext,
        connection: Arc<DedicatedConnection>,
        map_version: u64,
        shard_id: String,
    ) -> Self {
        Self {
            bound: Mutex::new(Bound {
                connection,
                map_version,
                shard_id,
            }),
            shared: Arc::new(sharded.for_route(route.clone())),
            binding: Binding::Routed {
                sharded: sharded.clone(),
                route,
                follow: false,
            },
            transaction: Mutex::new(None),
        }
    }

    /// A connection of its own on a plain database file.
    pub async fn for_local(local: &LocalClient) -> Result<Self> {
        Ok(Self {
            bound: Mutex::new(Bound {
                connection: Arc::new(local.database().dedicated().await?),
                map_version: 0,
                shard_id: String::new(),
            }),
            shared: Arc::new(local.clone()),
            binding: Binding::Local,
            transaction: Mutex::new(None),
        })
    }

    /// The route the connection is bound to, if any.
    pub fn route(&self) -> Option<&RouteContext> {
        match &self.binding {
            Binding::Routed { route, .. } => Some(route),
            Binding::Local => None,
        }
    }

    fn bound(&self) -> std::sync::MutexGuard<'_, Bound> {
        self.bound.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn connection(&self) -> Arc<DedicatedConnection> {
        Arc::clone(&self.bound().connection)
    }

    fn current(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.transaction.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn check(&self, naming: &str) -> Result<()> {
        match &self.binding {
            Binding::Local => Ok(()),
            Binding::Routed { sharded, route, .. } => {
                let (map_version, shard_id) = {
                    let bound = self.bound();
                    (bound.map_version, bound.shard_id.clone())
                };
                sharded
                    .shared()
                    .check_dedicated(route, map_version, &shard_id, naming)
                    .await
            }
        }
    }

    /// [`check`](Self::check) for a call outside a transaction: a route that moved is followed
    /// to its new shard when this client follows moves.
    async fn check_or_follow(&self) -> Result<()> {
        let Err(err) = self.check(&self.connection_name()).await else {
            return Ok(());
        };
        let moved = matches!(err.kind(), ErrorKind::StaleMapVersion | ErrorKind::Conflict);
        match &self.binding {
            Binding::Routed {
                sharded,
                route,
                follow: true,
            } if moved && self.current().is_none() => {
                let (connection, map_version, shard_id) = sharded.shared().dedicated_for_route(route).await?;
                *self.bound() = Bound {
                    connection: Arc::new(connection),
                    map_version,
                    shard_id,
                };
                Ok(())
            }
            _ => Err(err),
        }
    }

    fn connection_name(&self) -> String {
        match &self.binding {
            Binding::Local => "(dedicated connection)".to_owned(),
            Binding::Routed { route, .. } => format!(
                "(connection of route {}/{} on shard {})",
                route.keyspace(),
                route.key(),
                self.bound().shard_id
            ),
        }
    }

    /// Checks that `transaction_id` is this client's open transaction.
    fn owns(&self, transaction_id: &str) -> Result<()> {
        if self.current().as_deref() == Some(transaction_id) {
            Ok(())
        } else {
            Err(Error::TransactionNotFound {
                transaction_id: transaction_id.to_owned(),
            })
        }
    }
}

/// Errors from the connection speak of "this connection's transaction"; callers know its id.
fn named(err: Error, transaction_id: &str) -> Error {
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

// Rows, documents and stored SQL go to the file's shared connections, outside any transaction
// of this client.
impl Forward for DedicatedClient {
    type Target = dyn DataClient;
    type Handle<'a> = &'a (dyn DataClient + 'static);

    fn forward_to(&self) -> impl Future<Output = Result<&(dyn DataClient + 'static)>> + Send {
        ready(Ok(&*self.shared))
    }
}

impl ForwardRows for DedicatedClient {}
impl ForwardDocuments for DedicatedClient {}
impl ForwardStored for DedicatedClient {}

#[async_trait]
impl SqlData for DedicatedClient {
    async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.check_or_follow().await?;
        self.connection().execute(sql, params, false).await
    }
    async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.check(&self.connection_name()).await?;
        self.shared.execute_read_only_sql(sql, params).await
    }
    async fn info(&self) -> Result<DatabaseInfo> {
        self.shared.info().await
    }
}

#[async_trait]
impl TransactionData for DedicatedClient {
    async fn begin_transaction_with(&self, options: TransactionOptions) -> Result<TransactionInfo> {
        if options.maintenance {
            return Err(Error::invalid_argument(
                "transaction options",
                "a maintenance transaction runs on a connection of its own: begin it on the shard's client, \
                 not on a dedicated connection",
            ));
        }
        self.check_or_follow().await?;
        // IMMEDIATE: the write lock is taken now, so no statement of the transaction fails later
        // on upgrading it.
        self.connection().begin(BeginMode::Immediate).await?;
        let inner = uuid::Uuid::new_v4().simple().to_string();
        let transaction_id = match &self.binding {
            Binding::Local => inner,
            Binding::Routed { .. } => {
                let bound = self.bound();
                TransactionId::new(bound.map_version, bound.shard_id.clone(), inner).to_string()
            }
        };
        *self.current() = Some(transaction_id.clone());
        Ok(TransactionInfo {
            transaction_id,
            expires_at_utc: None,
        })
    }
    async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        self.owns(transaction_id)?;
        self.check(transaction_id).await?;
        self.connection()
            .execute(sql, params, true)
            .await
            .map_err(|err| named(err, transaction_id))
    }
    async fn commit_transaction(&self, transaction_id: &str) -> Result<()> {
        self.owns(transaction_id)?;
        if let Err(err) = self.check(transaction_id).await {
            // The shard changed owner under the transaction: nothing of it may land.
            self.current().take();
            let _ = self.connection().rollback().await;
            return Err(err);
        }
        self.current().take();
        self.connection()
            .commit()
            .await
            .map_err(|err| named(err, transaction_id))
    }
    async fn rollback_transaction(&self, transaction_id: &str) -> Result<()> {
        self.owns(transaction_id)?;
        self.current().take();
        self.connection()
            .rollback()
            .await
            .map_err(|err| named(err, transaction_id))
    }
}
