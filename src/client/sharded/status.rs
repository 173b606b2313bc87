//! Operator views of a sharded client: shard health, fan-out SQL and the catalog state.

use std::sync::Arc;

use async_trait::async_trait;

use super::ShardedClient;
use super::generation::Generation;
use crate::data::{
    ActivationRequest, ActivationResult, CatalogApplyResult, CatalogState, CatalogUpdateRequest, CatalogValidation,
    DataClient, DatabaseInfo, Params, SchemaMigrationReport, SchemaMigrationRequest, SchemaStatusReport, ShardAdmin,
    ShardSqlResult, ShardStatus, ShardStatusPage, ShardStatusQuery, SqlResult,
};
use crate::error::{Error, Result};
use crate::heat::HeatReport;
use crate::map::{ShardMap, ShardMapSnapshot, ShardRole, ShardTarget};
use crate::routing::{ResolvedRoute, RouteContext};
use crate::sql;

impl ShardedClient {
    /// The catalog state: live map, pending map (if a different version is stored) and history.
    pub async fn catalog_state(&self) -> Result<CatalogState> {
        let generation = self.fresh().await;
        let active_map = generation.map.snapshot();
        let Some(catalog) = &self.inner.catalog else {
            return Ok(CatalogState {
                source: "in-memory".to_owned(),
                is_catalog_enabled: false,
                active_map,
                pending_map: None,
                history: Vec::new(),
            });
        };
        let pending_map = match catalog.pending_options().await? {
            Some(options) if u64::try_from(options.map_version).ok() != Some(generation.map.version()) => {
                Some(ShardMap::new(options)?.snapshot())
            }
            _ => None,
        };
        Ok(CatalogState {
            source: "master-catalog".to_owned(),
            is_catalog_enabled: true,
            active_map,
            pending_map,
            history: catalog.history().await?,
        })
    }

    /// Probes every shard (in parallel) and reports them in definition order.
    pub async fn status(&self) -> Vec<ShardStatus> {
        let generation = self.fresh().await;
        let generation = &generation;
        self.bounded(
            (0..generation.map.shards().len())
                .map(|index| probe(generation, index))
                .collect(),
        )
        .await
    }

    /// One page of shard status with counts by state (see [`ShardStatusQuery`]): every shard is
    /// probed for the counts, except when the query names one shard, which alone is probed.
    ///
    /// A shard id the map does not define is [`Error::UnknownShard`].
    pub async fn status_page(&self, query: &ShardStatusQuery) -> Result<ShardStatusPage> {
        query.check()?;
        let Some(shard_id) = &query.shard_id else {
            return Ok(ShardStatusPage::select(self.status().await, query));
        };
        let generation = self.fresh().await;
        let index = generation
            .map
            .shard_index(shard_id)
            .ok_or_else(|| Error::UnknownShard {
                shard_id: shard_id.trim().to_owned(),
            })?;
        Ok(ShardStatusPage::select(vec![probe(&generation, index).await], query))
    }

    /// Runs SQL (typically schema setup) on every enabled shard in parallel. One shard failing
    /// does not stop the others; results are in definition order.
    ///
    /// A script holding a statement every shard would refuse (transaction control, `ATTACH`, an
    /// unsafe pragma) is refused before any shard runs it.
    pub async fn execute_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
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
    pub async fn execute_read_only_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
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

    async fn fan_out<'a, F, Fut>(&'a self, run: F) -> Vec<ShardSqlResult>
    where
        F: Fn(Arc<dyn DataClient>) -> Fut,
        Fut: std::future::Future<Output = Result<SqlResult>> + 'a,
    {
        let generation = self.fresh().await;
        let map = &generation.map;
        self.bounded(
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

    /// Counts of tables, indexes, views, triggers, collections, saved queries and procedures,
    /// summed over every enabled shard; its data source is the sharded client's
    /// ([`data_source`](Self::data_source)). A route's own counts are its client's
    /// ([`for_route`](Self::for_route)).
    pub async fn info(&self) -> Result<DatabaseInfo> {
        let generation = self.fresh().await;
        let mut total = DatabaseInfo {
            data_source: generation.data_source.clone(),
            ..DatabaseInfo::default()
        };
        let infos = self
            .bounded(
                generation
                    .enabled_shards()
                    .map(|(_, client)| async move { client?.info().await })
                    .collect(),
            )
            .await;
        for info in infos {
            let info = info?;
            total.table_count += info.table_count;
            total.index_count += info.index_count;
            total.view_count += info.view_count;
            total.trigger_count += info.trigger_count;
            total.collection_count += info.collection_count;
            total.saved_query_count += info.saved_query_count;
            total.procedure_count += info.procedure_count;
        }
        Ok(total)
    }
}

/// Probes the shard at `index` of the generation's map (a disabled shard is not probed).
async fn probe(generation: &Generation, index: usize) -> ShardStatus {
    let shard = &generation.map.shards()[index];
    let data_source = match &shard.target {
        ShardTarget::DataSource(path) => Some(path.clone()),
        ShardTarget::Endpoint { endpoint, .. } => Some(endpoint.clone()),
        ShardTarget::ConnectionString(_) => None,
    };
    let probe = if shard.enabled {
        match generation.slot_client(index) {
            Ok(client) => client.info().await,
            Err(err) => Err(err),
        }
    } else {
        Err(Error::ShardIsDisabled {
            shard_id: shard.id.clone(),
        })
    };
    let healthy = probe.is_ok();
    ShardStatus {
        shard_id: shard.id.clone(),
        data_source,
        enabled: shard.enabled,
        healthy,
        role: shard.role,
        can_promote: healthy && shard.role == ShardRole::Replica && shard.replica.promotion_eligible,
        replica: shard.replica.clone(),
        error: probe.as_ref().err().map(ToString::to_string),
        info: probe.ok(),
    }
}

fn require_sql(sql: &str) -> Result<()> {
    if sql.trim().is_empty() {
        return Err(Error::invalid_argument("sql", "the SQL text is empty"));
    }
    Ok(())
}

#[async_trait]
impl ShardAdmin for ShardedClient {
    async fn shard_map(&self) -> Result<ShardMapSnapshot> {
        Ok(self.map_snapshot())
    }
    async fn resolve_route(&self, route: &RouteContext) -> Result<ResolvedRoute> {
        ShardedClient::resolve_route(self, route)
    }
    async fn shard_status(&self) -> Result<Vec<ShardStatus>> {
        Ok(self.status().await)
    }
    async fn shard_status_page(&self, query: &ShardStatusQuery) -> Result<ShardStatusPage> {
        ShardedClient::status_page(self, query).await
    }
    async fn execute_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        ShardedClient::execute_sql_on_all_shards(self, sql).await
    }
    async fn execute_read_only_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        ShardedClient::execute_read_only_sql_on_all_shards(self, sql).await
    }
    async fn query_all_shards(&self, sql: &str, params: Params) -> Result<SqlResult> {
        ShardedClient::query_all_shards(self, sql, params).await
    }
    async fn catalog_state(&self) -> Result<CatalogState> {
        ShardedClient::catalog_state(self).await
    }
    async fn validate_catalog_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogValidation> {
        ShardedClient::validate_catalog_update(self, request).await
    }
    async fn apply_catalog_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogApplyResult> {
        ShardedClient::apply_catalog_update(self, request).await
    }
    async fn activate_pending_map(&self, request: &ActivationRequest) -> Result<ActivationResult> {
        ShardedClient::activate_pending_map(self, request).await
    }
    async fn schema_status(&self) -> Result<SchemaStatusReport> {
        ShardedClient::schema_status(self).await
    }
    async fn migrate_schema(&self, request: &SchemaMigrationRequest) -> Result<SchemaMigrationReport> {
        ShardedClient::migrate_schema(self, request).await
    }
    async fn shard_heat(&self) -> Result<HeatReport> {
        Ok(self.heat_report())
    }
}
