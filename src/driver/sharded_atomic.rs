//! [`ShardedAtomic`]: an atomic transaction across shards begun from a [`ShardedPool`](super::ShardedPool).

use sqlx_core::error::Error;
use sqlx_core::executor::Execute;

use super::{Shardlite, ShardliteQueryResult, ShardliteRow};
use crate::client::AtomicTransaction;
use crate::data::{Params, SqlResult};
use crate::routing::RouteContext;

/// Who runs the transaction: this process, or a daemon.
pub(super) enum Coordinator {
    /// In-process: the pool's sharded client runs the protocol on the shard files.
    Local(AtomicTransaction),
    /// A daemon reached over gRPC.
    #[cfg(feature = "grpc")]
    Grpc(crate::transport::atomic::RemoteAtomicTransaction<crate::transport::grpc::GrpcClient>),
    /// A daemon reached over HTTP.
    #[cfg(feature = "http")]
    Http(crate::transport::atomic::RemoteAtomicTransaction<crate::transport::http::HttpClient>),
}

/// An atomic transaction across shards from a [`ShardedPool`](super::ShardedPool) (see
/// [`ShardedPool::begin_atomic`](super::ShardedPool::begin_atomic)): sqlx queries on any route, committed on every shard they
/// wrote or on none. Dropped without [`commit`](Self::commit) or [`rollback`](Self::rollback),
/// it rolls back.
///
/// It holds none of the pool's connections: in-process, each shard it writes runs its
/// statements on a session of its own until commit; through a daemon, the daemon holds them.
///
/// ```no_run
/// # async fn demo() -> sqlx_core::Result<()> {
/// use shardlite::RouteContext;
/// use shardlite::driver::ShardedPool;
/// use sqlx_core::query::query;
///
/// let pool = ShardedPool::connect("Data Source=data/master.db").await?;
/// let mut transfer = pool.begin_atomic().await?;
/// let (alice, bob) = (RouteContext::new("accounts", "alice")?, RouteContext::new("accounts", "bob")?);
/// transfer
///     .execute(&alice, query("UPDATE accounts SET balance = balance - ? WHERE owner = ?").bind(5).bind("alice"))
///     .await?;
/// transfer
///     .execute(&bob, query("UPDATE accounts SET balance = balance + ? WHERE owner = ?").bind(5).bind("bob"))
///     .await?;
/// transfer.commit().await?;
/// # Ok(()) }
/// ```
pub struct ShardedAtomic {
    coordinator: Coordinator,
}

impl std::fmt::Debug for ShardedAtomic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedAtomic").field("id", &self.id()).finish()
    }
}

impl ShardedAtomic {
    pub(super) fn new(coordinator: Coordinator) -> Self {
        Self { coordinator }
    }

    /// Its id (`csdbatomic:...`), as recovery and `shardlite tx list` show it.
    pub fn id(&self) -> String {
        match &self.coordinator {
            Coordinator::Local(tx) => tx.id(),
            #[cfg(feature = "grpc")]
            Coordinator::Grpc(tx) => tx.id().to_owned(),
            #[cfg(feature = "http")]
            Coordinator::Http(tx) => tx.id().to_owned(),
        }
    }

    /// Runs `query` (`sqlx::query(..)` with its binds) on the shard `route` resolves to, inside
    /// this transaction: what it changed.
    pub async fn execute<'q, E: Execute<'q, Shardlite>>(
        &mut self,
        route: &RouteContext,
        query: E,
    ) -> Result<ShardliteQueryResult, Error> {
        let result = self.run(route, query).await?;
        Ok(ShardliteQueryResult {
            rows_affected: result.rows_affected,
            last_insert_rowid: result.last_insert_rowid,
        })
    }

    /// Runs `query` on the shard `route` resolves to, inside this transaction: the rows it
    /// returns (a read sees the transaction's own writes on that shard).
    pub async fn fetch_all<'q, E: Execute<'q, Shardlite>>(
        &mut self,
        route: &RouteContext,
        query: E,
    ) -> Result<Vec<ShardliteRow>, Error> {
        Ok(ShardliteRow::from_result(self.run(route, query).await?))
    }

    async fn run<'q, E: Execute<'q, Shardlite>>(
        &mut self,
        route: &RouteContext,
        mut query: E,
    ) -> Result<SqlResult, Error> {
        // `sql()` consumes the query: take the arguments first.
        let arguments = query.take_arguments().map_err(Error::Encode)?;
        let sql = query.sql();
        let params = arguments.map_or_else(Params::none, |arguments| arguments.into_params_for(sql.as_str()));
        let sql = sql.as_str();
        Ok(match &mut self.coordinator {
            Coordinator::Local(tx) => tx.execute(route, sql, params).await?,
            #[cfg(feature = "grpc")]
            Coordinator::Grpc(tx) => tx.execute(route, sql, params).await?,
            #[cfg(feature = "http")]
            Coordinator::Http(tx) => tx.execute(route, sql, params).await?,
        })
    }

    /// Commits on every shard it wrote, or on none.
    pub async fn commit(self) -> Result<(), Error> {
        match self.coordinator {
            Coordinator::Local(tx) => tx.commit().await?,
            #[cfg(feature = "grpc")]
            Coordinator::Grpc(tx) => tx.commit().await?,
            #[cfg(feature = "http")]
            Coordinator::Http(tx) => tx.commit().await?,
        }
        Ok(())
    }

    /// Rolls back on every shard it touched.
    pub async fn rollback(self) -> Result<(), Error> {
        match self.coordinator {
            Coordinator::Local(tx) => tx.rollback().await?,
            #[cfg(feature = "grpc")]
            Coordinator::Grpc(tx) => tx.rollback().await?,
            #[cfg(feature = "http")]
            Coordinator::Http(tx) => tx.rollback().await?,
        }
        Ok(())
    }
}
