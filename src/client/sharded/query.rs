//! SQL on every shard: per-shard fan-out, and one read-only `SELECT` over every shard answered
//! as one result (see [`crate::query`]).

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;

use super::ShardedClient;
use crate::data::{DataClient, FanOut, Params, ShardSqlResult, SqlResult, Value};
use crate::engine::merge::{MergeLimits, merge_partial_rows};
use crate::error::{Error, Result};
use crate::query::PartialColumn;
use crate::query::QueryPlan;
use crate::sql;

/// SQL on every enabled shard of a [`ShardedClient`]: per-shard fan-out, and one `SELECT`
/// merged across shards. Handed out by [`ShardedClient::query`]; the in-process [`FanOut`].
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::client::{Params, ShardedClient};
///
/// let sharded = ShardedClient::open("data/master.db").await?;
/// for shard in sharded.query().execute_all("CREATE INDEX IF NOT EXISTS by_month ON orders (order_month)").await? {
///     println!("{}: {}", shard.shard_id, shard.error.as_deref().unwrap_or("ok"));
/// }
/// let total = sharded.query().merged("SELECT count(*) FROM orders", Params::none()).await?;
/// # let _ = total; Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ShardedQuery<'a> {
    sharded: &'a ShardedClient,
}

impl<'a> ShardedQuery<'a> {
    pub(super) fn new(sharded: &'a ShardedClient) -> Self {
        Self { sharded }
    }

    /// Runs SQL (typically schema setup) on every enabled shard in parallel. One shard failing
    /// does not stop the others; results are in definition order.
    ///
    /// A script holding a statement every shard would refuse (transaction control, `ATTACH`, an
    /// unsafe pragma) is refused before any shard runs it.
    pub async fn execute_all(self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        require_sql(sql)?;
        sql::check_script(sql)?;
        Ok(self
            .fan_out(|client| async move { client.execute_sql(sql, Params::none()).await })
            .await)
    }

    /// Runs read-only SQL on every enabled shard in parallel, on connections that cannot write.
    ///
    /// Fails with [`Error::ReadOnlyViolation`] (and nothing runs anywhere) when any statement
    /// is not a read-only query; other per-shard failures are reported per shard.
    pub async fn read_all(self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        require_sql(sql)?;
        sql::check_read_only_script(sql)?;
        let mut violation = None;
        let results = self
            .fan_out(|client| async move { client.execute_read_only_sql(sql, Params::none()).await })
            .await;
        for result in &results {
            if result.error_code.as_deref() == Some(crate::ErrorKind::ReadOnly.code()) {
                violation = result.error.clone();
            }
        }
        match violation {
            Some(reason) => Err(Error::ReadOnlyViolation {
                reason: reason
                    .split_once("rejected: ")
                    .map_or(reason.clone(), |(_, r)| r.to_owned()),
            }),
            None => Ok(results),
        }
    }

    async fn fan_out<F, Fut>(self, run: F) -> Vec<ShardSqlResult>
    where
        F: Fn(Arc<dyn DataClient>) -> Fut,
        Fut: std::future::Future<Output = Result<SqlResult>> + 'a,
    {
        let shared = &self.sharded.inner;
        let generation = shared.fresh().await;
        let map = &generation.map;
        shared
            .bounded(
                generation
                    .enabled_shards()
                    .map(|(index, client)| {
                        let run = &run;
                        async move {
                            let outcome = match client {
                                Ok(client) => run(client).await,
                                Err(err) => Err(err),
                            };
                            ShardSqlResult::from_outcome(&map.shards()[index].id, outcome)
                        }
                    })
                    .collect(),
            )
            .await
    }

    /// Runs one read-only `SELECT` on every enabled shard and returns the one result SQLite
    /// would give over one file holding every shard's rows.
    ///
    /// `ORDER BY` (the sort keys need not be selected), `LIMIT` / `OFFSET` (each shard returns
    /// at most `limit + offset` rows), `DISTINCT`, `count`, `sum`, `total`, `min`, `max`, `avg`,
    /// aggregates over `DISTINCT` values, `GROUP BY`, `HAVING` and `WHERE` with bound values are
    /// merged; joins and subqueries run on each shard over its own rows, which is exact for
    /// tables whose rows share a route. A query that cannot be answered exactly fails with
    /// [`Error::UnsupportedCrossShardQuery`] before any shard runs it. The statement time
    /// limit and the result's row and byte limits of the shards' engine apply to the whole.
    ///
    /// ```no_run
    /// # async fn demo() -> shardlite::Result<()> {
    /// use shardlite::client::{Params, ShardedClient};
    ///
    /// let sharded = ShardedClient::open("data/master.db").await?;
    /// let newest = sharded
    ///     .query()
    ///     .merged("SELECT id, placed_at FROM orders ORDER BY placed_at DESC LIMIT 20", Params::none())
    ///     .await?;
    /// let per_month = sharded
    ///     .query()
    ///     .merged(
    ///         "SELECT order_month, count(*), avg(amount) FROM orders WHERE amount > ?1 GROUP BY order_month",
    ///         Params::from(vec![10]),
    ///     )
    ///     .await?;
    /// # let _ = (newest, per_month); Ok(()) }
    /// ```
    pub async fn merged(self, sql: &str, params: Params) -> Result<SqlResult> {
        let started = Instant::now();
        let shared = &self.sharded.inner;
        let plan = shared.plans.plan(sql, params)?;
        let engine = &shared.options.engine;
        let limits = MergeLimits {
            max_rows: engine.max_result_rows,
            max_bytes: engine.max_result_bytes,
            deadline: engine.statement_timeout.map(|limit| started + limit),
            timeout: engine.statement_timeout,
        };
        let work = self.run_plan(&plan, limits);
        let mut result = match limits.timeout {
            Some(limit) => tokio::time::timeout(limit, work)
                .await
                .map_err(|_| Error::StatementTimeout {
                    limit_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                })??,
            None => work.await?,
        };
        result.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(result)
    }

    async fn run_plan(self, plan: &QueryPlan, limits: MergeLimits) -> Result<SqlResult> {
        let limit_values = match plan.limit_statement() {
            Some(statement) => {
                let (sql, params) = statement?;
                Some(merge(Vec::new(), Vec::new(), sql, params, limits).await?)
            }
            None => None,
        };
        let (sql, params) = plan.shard_statement(limit_values.as_ref())?;
        let shared = &self.sharded.inner;
        let generation = shared.fresh().await;
        let clients: Vec<Arc<dyn DataClient>> = generation
            .enabled_shards()
            .map(|(_, client)| client)
            .collect::<Result<_>>()?;
        let Some(first) = clients.first() else {
            return Err(Error::invalid_argument("shard map", "no shard is enabled"));
        };
        let probe = async {
            match plan.probe_statement() {
                Some(statement) => {
                    let (sql, params) = statement?;
                    first.execute_read_only_sql(&sql, params).await.map(Some)
                }
                None => Ok(None),
            }
        };
        let shards = async {
            shared
                .bounded(
                    clients
                        .iter()
                        .map(|client| client.execute_read_only_sql(&sql, params.clone()))
                        .collect(),
                )
                .await
                .into_iter()
                .collect::<Result<Vec<_>>>()
        };
        let (partials, probe) = tokio::try_join!(shards, probe)?;
        let rows = check_size(&partials, limits)?;
        let mut names = partials.first().map(|p| p.column_names.clone()).unwrap_or_default();
        let mut shards: Vec<Vec<Vec<Value>>> = partials.into_iter().map(|p| p.rows).collect();
        if let Some(sorted) = plan.row_merge(&names, probe.as_ref(), limit_values.as_ref()) {
            let merged = if rows <= MERGED_ON_THE_TASK {
                sorted.run(shards)
            } else {
                let sorted = sorted.clone();
                tokio::task::spawn_blocking(move || sorted.run(shards))
                    .await
                    .map_err(|err| merge_failed(&err))?
            };
            match merged {
                Ok(rows) => {
                    names.truncate(sorted.outputs());
                    return Ok(SqlResult {
                        is_query: true,
                        column_names: names,
                        rows,
                        ..SqlResult::default()
                    });
                }
                // Not in the order compared by: SQLite sorts them.
                Err(unmerged) => shards = unmerged,
            }
        }
        let statement = plan.merge_statement(&names, probe.as_ref())?;
        merge(statement.columns, shards, statement.sql, statement.params, limits).await
    }
}

#[async_trait]
impl FanOut for ShardedClient {
    async fn execute_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        self.query().execute_all(sql).await
    }
    async fn execute_read_only_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        self.query().read_all(sql).await
    }
    async fn query_all_shards(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.query().merged(sql, params).await
    }
}

fn require_sql(sql: &str) -> Result<()> {
    if sql.trim().is_empty() {
        return Err(Error::invalid_argument("sql", "the SQL text is empty"));
    }
    Ok(())
}

/// The partial results' row count, once their rows and bytes are checked against the limits.
fn check_size(partials: &[SqlResult], limits: MergeLimits) -> Result<usize> {
    let mut rows = 0usize;
    let mut bytes = 0usize;
    for partial in partials {
        rows = rows.saturating_add(partial.rows.len());
        bytes = partial.rows.iter().flatten().fold(bytes, |sum, value| {
            sum.saturating_add(match value {
                Value::Text(text) => text.len(),
                Value::Blob(blob) => blob.len(),
                _ => 8,
            })
        });
    }
    if rows > limits.max_rows {
        return Err(Error::ResultTooLarge {
            limit: u64::try_from(limits.max_rows).unwrap_or(u64::MAX),
            unit: "rows",
        });
    }
    if bytes > limits.max_bytes {
        return Err(Error::ResultTooLarge {
            limit: u64::try_from(limits.max_bytes).unwrap_or(u64::MAX),
            unit: "bytes",
        });
    }
    Ok(rows)
}

/// Partial rows few enough to merge on the caller's task; more are merged on a thread that may
/// block, as SQLite's merge is.
const MERGED_ON_THE_TASK: usize = 4096;

fn merge_failed(err: &tokio::task::JoinError) -> Error {
    Error::Io {
        what: "the merge of a query across shards".to_owned(),
        source: std::io::Error::other(err.to_string()),
    }
}

/// Runs the merge on a thread that may block. Each shard's rows are freed once loaded, so they
/// are never held twice.
async fn merge(
    columns: Vec<PartialColumn>,
    shards: Vec<Vec<Vec<Value>>>,
    sql: String,
    params: Params,
    limits: MergeLimits,
) -> Result<SqlResult> {
    tokio::task::spawn_blocking(move || {
        merge_partial_rows(&columns, shards.into_iter().flatten(), &sql, &params, limits)
    })
    .await
    .map_err(|err| merge_failed(&err))?
}
