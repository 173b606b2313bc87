//! The route-bound client: every call resolves one route and runs on that shard.

use std::future::Future;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use async_trait::async_trait;

use super::forward::{Forward, ForwardDocuments, ForwardRows, ForwardStored};
use super::sharded::generation::{Generation, ShardSlot};
use super::{ShardedClient, ShardedTransaction};
use crate::data::{
    DataClient, DatabaseInfo, Params, RowRef, SqlData, SqlResult, TransactionData, TransactionInfo, TransactionOptions,
    every_row, first_row,
};
use crate::engine::{Database, Here};
use crate::error::Result;
use crate::map::ShardMap;
use crate::routing::{ResolvedRoute, RouteContext};

/// A [`DataClient`] bound to one route. Every call resolves the route and runs on that shard;
/// transaction calls also check that the id belongs to the route's shard.
///
/// The route's shard is resolved once per map version and remembered, so a call on an
/// unchanged map does not hash the route again.
#[derive(Clone, Debug)]
pub struct RoutedClient {
    pub(super) sharded: ShardedClient,
    pub(super) route: RouteContext,
    pub(super) resolved: ResolvedIndex,
}

/// The shard index a route resolved to, and under which map version: one word,
/// `VALID | version << 16 | index`, or 0 before the first call; and the route's bucket plus
/// one (0 before the first resolution), which no map version changes (activation refuses a
/// new bucket count).
#[derive(Debug, Default)]
pub(super) struct ResolvedIndex(AtomicU64, AtomicU32);

const VALID: u64 = 1 << 63;
/// Versions and indexes that fit the word beside the valid bit; larger ones are resolved on
/// every call.
const MAX_REMEMBERED_VERSION: u64 = (1 << 47) - 1;
const MAX_REMEMBERED_INDEX: u64 = (1 << 16) - 1;

impl Clone for ResolvedIndex {
    fn clone(&self) -> Self {
        Self(
            AtomicU64::new(self.0.load(Ordering::Relaxed)),
            AtomicU32::new(self.1.load(Ordering::Relaxed)),
        )
    }
}

impl ResolvedIndex {
    /// The index of `route`'s shard in `map`.
    pub(super) fn index(&self, map: &ShardMap, route: &RouteContext) -> Result<usize> {
        let version = map.version();
        let known = self.0.load(Ordering::Relaxed);
        if known & VALID != 0 && (known & !VALID) >> 16 == version {
            return Ok(usize::try_from(known & MAX_REMEMBERED_INDEX).unwrap_or(usize::MAX));
        }
        let resolution = map.resolve(route.keyspace(), route.key())?;
        let index = resolution.shard_index;
        self.1.store(resolution.bucket.saturating_add(1), Ordering::Relaxed);
        if let Ok(wide) = u64::try_from(index)
            && version <= MAX_REMEMBERED_VERSION
            && wide <= MAX_REMEMBERED_INDEX
        {
            self.0.store(VALID | version << 16 | wide, Ordering::Relaxed);
        }
        Ok(index)
    }

    /// The route's bucket, resolving it against `map` the first time; `None` when the route
    /// does not resolve.
    fn bucket(&self, map: &ShardMap, route: &RouteContext) -> Option<u32> {
        match self.1.load(Ordering::Relaxed) {
            0 => {
                let bucket = map.resolve(route.keyspace(), route.key()).ok()?.bucket;
                self.1.store(bucket.saturating_add(1), Ordering::Relaxed);
                Some(bucket)
            }
            known => Some(known - 1),
        }
    }
}

impl RoutedClient {
    /// The route this client is bound to.
    pub fn route(&self) -> &RouteContext {
        &self.route
    }

    /// The sharded client this route's client belongs to, serving every shard.
    pub fn sharded(&self) -> &ShardedClient {
        &self.sharded
    }

    /// Where the route resolves.
    pub fn resolve(&self) -> Result<ResolvedRoute> {
        self.sharded.resolve_route(&self.route)
    }

    /// Counts one call of this route in the heat, with the rows it returned or changed.
    pub(super) fn count_heat(&self, rows: u64) {
        let bucket = match self.resolved.1.load(Ordering::Relaxed) {
            0 => self.resolved.bucket(&self.sharded.map(), &self.route),
            known => Some(known - 1),
        };
        if let Some(bucket) = bucket {
            self.sharded.shared().heat().record(bucket, self.route.key(), rows);
        }
    }

    /// Counts a finished call in the heat: its rows when it succeeded, none when it failed.
    pub(super) fn counted<T>(&self, outcome: Result<T>, rows: impl FnOnce(&T) -> u64) -> Result<T> {
        self.count_heat(outcome.as_ref().map_or(0, rows));
        outcome
    }

    /// Begins an RAII transaction on this route's shard.
    pub async fn begin(&self) -> Result<ShardedTransaction> {
        self.sharded.transactions().begin(&self.route).await
    }

    /// Runs one statement on the route's shard and maps its first row with `f`, as rusqlite's
    /// `query_row` does; `None` when it returns no row. The row is lent in place, so nothing
    /// is copied that `f` does not read.
    ///
    /// A query on a local shard that finishes within the inline read budget runs on the
    /// calling task and never waits; anything else (a longer query, a statement that writes,
    /// such as `INSERT … RETURNING`, or a remote shard) runs as
    /// [`execute_sql`](SqlData::execute_sql) runs it, and `f` reads the first row of its
    /// result. The statement must be a single one; the hostile-SQL rules, the statement time
    /// limit and the result limits are those of `execute_sql`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(orders: &shardlite::client::RoutedClient) -> shardlite::Result<()> {
    /// use shardlite::client::Params;
    ///
    /// let total: Option<f64> = orders
    ///     .query_row(
    ///         "SELECT sum(amount) FROM orders WHERE month = ?1",
    ///         Params::from(vec!["2026-06"]),
    ///         |row| row.get(0),
    ///     )
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn query_row<T>(
        &self,
        sql: &str,
        params: Params,
        f: impl FnOnce(&RowRef<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut f = Some(f);
        let mut out = None;
        let here = self.query_here(Instant::now(), sql, &params, &mut first_row(&mut f, &mut out));
        let writes = match here {
            Here::Done(done) => return self.counted(done.map(|()| out), |out| u64::from(out.is_some())),
            Here::Writes => true,
            Here::Elsewhere => false,
        };
        // The query starts over below. `f` runs once: a query stopped by the budget stopped
        // before its first row, since the first row ends it.
        let outcome = async {
            let result = self.statement_result(sql, params, writes).await?;
            result.lend_rows(&mut first_row(&mut f, &mut out))?;
            Ok::<_, crate::Error>(out)
        }
        .await;
        self.counted(outcome, |out| u64::from(out.is_some()))
    }

    /// Runs one statement on the route's shard and maps every row it returns with `f`, as
    /// rusqlite's `query_map` does; see [`query_row`](Self::query_row) for where it runs.
    ///
    /// When a query outruns the inline read budget it starts over off the calling task: `f`
    /// then sees the rows again from the first, and the returned rows are those of the run
    /// that finished, each once.
    pub async fn query_map<T>(
        &self,
        sql: &str,
        params: Params,
        mut f: impl FnMut(&RowRef<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        let here = self.query_here(Instant::now(), sql, &params, &mut every_row(&mut f, &mut out));
        let writes = match here {
            Here::Done(done) => return self.counted(done.map(|()| out), |out| row_count(out.len())),
            Here::Writes => true,
            Here::Elsewhere => false,
        };
        out.clear();
        let outcome = async {
            let result = self.statement_result(sql, params, writes).await?;
            result.lend_rows(&mut every_row(&mut f, &mut out))?;
            Ok::<_, crate::Error>(out)
        }
        .await;
        self.counted(outcome, |out| row_count(out.len()))
    }

    /// Runs a query on the calling task when everything it needs is at hand: the current map
    /// (no catalog check due), a local shard, and a read that finishes within the inline
    /// budget. Anything else is for the path that may wait.
    fn query_here(
        &self,
        started: Instant,
        sql: &str,
        params: &Params,
        each: &mut dyn FnMut(&RowRef<'_>) -> Result<ControlFlow<()>>,
    ) -> Here<()> {
        self.on_local_shard_here(started, |database| database.query_inline(started, sql, params, each))
    }

    /// `execute_sql` on the calling task, when it needs no wait: see
    /// [`query_here`](Self::query_here).
    fn execute_here(&self, sql: &str, params: &Params) -> Here<SqlResult> {
        self.on_local_shard_here(Instant::now(), |database| database.execute_inline(sql, params))
    }

    /// Runs `run` on the route's shard's engine with the current map generation borrowed, when
    /// no catalog check is due at `now` and the shard is local; [`Here::Elsewhere`] otherwise.
    fn on_local_shard_here<T>(&self, now: Instant, run: impl FnOnce(&Database) -> Here<T>) -> Here<T> {
        let Some(generation) = self.sharded.shared().lend_unless_check_due(now) else {
            return Here::Elsewhere;
        };
        let index = match self.resolved.index(&generation.map, &self.route) {
            Ok(index) => index,
            Err(err) => return Here::Done(Err(err)),
        };
        match &generation.shards[index] {
            ShardSlot::Ready { local: Some(local), .. } => run(local.database()),
            _ => Here::Elsewhere,
        }
    }

    /// The whole result of one statement, run as `execute_sql` runs it past the calling task.
    async fn statement_result(&self, sql: &str, params: Params, writes: bool) -> Result<SqlResult> {
        crate::engine::require_single_statement(sql)?;
        self.execute_off_task(sql, params, writes).await
    }

    /// `execute_sql` for a call whose fast path ([`execute_here`](Self::execute_here) or
    /// [`query_here`](Self::query_here)) did not finish it: it checks the catalog when due,
    /// and a local shard runs the statement on its engine's threads (the writer's at once when
    /// it `writes`), so that a query over the inline budget is not tried inline again.
    async fn execute_off_task(&self, sql: &str, params: Params, writes: bool) -> Result<SqlResult> {
        let (generation, index) = self.target().await?;
        match &generation.shards[index] {
            // A local shard's engine directly: no client object in between.
            ShardSlot::Ready { local: Some(local), .. } => {
                local.database().execute_elsewhere(sql, params, writes).await
            }
            _ => generation.slot_client(index)?.execute_sql(sql, params).await,
        }
    }

    /// The route's shard's client, for calls that only hand over; the call counts in the heat
    /// without rows.
    async fn shard(&self) -> Result<Arc<dyn DataClient>> {
        let (generation, index) = self.target().await?;
        self.count_heat(0);
        generation.slot_client(index)
    }

    /// The generation serving this call and the index of the route's shard in it.
    async fn target(&self) -> Result<(Arc<Generation>, usize)> {
        let generation = self.sharded.shared().fresh().await;
        let index = self.resolved.index(&generation.map, &self.route)?;
        Ok((generation, index))
    }
}

/// Rows a call returned or changed, for the heat.
pub(super) fn result_rows(result: &SqlResult) -> u64 {
    row_count(result.rows.len()).saturating_add(result.rows_affected)
}

pub(super) fn row_count(rows: usize) -> u64 {
    u64::try_from(rows).unwrap_or(u64::MAX)
}

// Rows, documents and stored SQL go to the route's shard as they are.
impl Forward for RoutedClient {
    type Target = dyn DataClient;
    type Handle<'a> = Arc<dyn DataClient>;

    fn forward_to(&self) -> impl Future<Output = Result<Arc<dyn DataClient>>> + Send {
        self.shard()
    }
}

impl ForwardRows for RoutedClient {}
impl ForwardDocuments for RoutedClient {}
impl ForwardStored for RoutedClient {}

#[async_trait]
impl SqlData for RoutedClient {
    async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        let writes = match self.execute_here(sql, &params) {
            Here::Done(done) => return self.counted(done, result_rows),
            Here::Writes => true,
            Here::Elsewhere => false,
        };
        let outcome = self.execute_off_task(sql, params, writes).await;
        self.counted(outcome, result_rows)
    }
    async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        let (generation, index) = self.target().await?;
        let outcome = match &generation.shards[index] {
            ShardSlot::Ready { local: Some(local), .. } => local.database().execute_read_only(sql, params).await,
            _ => match generation.slot_client(index) {
                Ok(client) => client.execute_read_only_sql(sql, params).await,
                Err(err) => Err(err),
            },
        };
        self.counted(outcome, result_rows)
    }
    async fn info(&self) -> Result<DatabaseInfo> {
        self.shard().await?.info().await
    }
}

#[async_trait]
impl TransactionData for RoutedClient {
    async fn begin_transaction_with(&self, options: TransactionOptions) -> Result<TransactionInfo> {
        let outcome = self.sharded.transactions().begin_with(&self.route, options).await;
        self.counted(outcome, |_| 0)
    }
    async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        let outcome = self
            .sharded
            .transactions()
            .execute_on(transaction_id, Some(&self.route), sql, params)
            .await;
        self.counted(outcome, result_rows)
    }
    async fn commit_transaction(&self, transaction_id: &str) -> Result<()> {
        let outcome = self
            .sharded
            .transactions()
            .commit_on(transaction_id, Some(&self.route))
            .await;
        self.counted(outcome, |_| 0)
    }
    async fn rollback_transaction(&self, transaction_id: &str) -> Result<()> {
        let outcome = self
            .sharded
            .transactions()
            .rollback_on(transaction_id, Some(&self.route))
            .await;
        self.counted(outcome, |_| 0)
    }
}
