//! The operator contract ([`ShardAdmin`](crate::data::ShardAdmin)) through a daemon's REST endpoints, one
//! implementation per part.

use async_trait::async_trait;
use serde_json::json;

use super::HttpClient;
use super::body::sql_body;
use crate::data::{
    ActivationRequest, ActivationResult, CatalogAdmin, CatalogApplyResult, CatalogState, CatalogUpdateRequest,
    CatalogValidation, FanOut, Params, SchemaAdmin, SchemaMigrationReport, SchemaMigrationRequest, SchemaStatusReport,
    ShardSqlResult, ShardStatus, ShardStatusPage, ShardStatusQuery, SqlResult, Topology,
};
use crate::error::Result;
use crate::heat::HeatReport;
use crate::map::ShardMapSnapshot;
use crate::routing::{ResolvedRoute, RouteContext};

#[async_trait]
impl Topology for HttpClient {
    async fn shard_map(&self) -> Result<ShardMapSnapshot> {
        self.json(self.get(&["sharding", "map"])).await
    }

    async fn resolve_route(&self, route: &RouteContext) -> Result<ResolvedRoute> {
        let body = json!({ "keyspace": route.keyspace(), "key": route.key() });
        self.json(self.post(&["sharding", "resolve"]).json(&body)).await
    }

    async fn shard_status(&self) -> Result<Vec<ShardStatus>> {
        self.json(self.get(&["sharding", "status"])).await
    }

    async fn shard_status_page(&self, query: &ShardStatusQuery) -> Result<ShardStatusPage> {
        query.check()?;
        self.json(self.get(&["sharding", "status", "page"]).query(query)).await
    }

    async fn shard_heat(&self) -> Result<HeatReport> {
        self.json(self.get(&["sharding", "stats", "heat"])).await
    }
}

#[async_trait]
impl FanOut for HttpClient {
    async fn execute_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        let request = self.post(&["sharding", "sql", "execute-all"]);
        self.json(request.json(&json!({ "sql": sql }))).await
    }

    async fn execute_read_only_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        let request = self.post(&["sharding", "sql", "read-all"]);
        self.json(request.json(&json!({ "sql": sql }))).await
    }

    async fn query_all_shards(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.json(self.post(&["sharding", "query"]).json(&sql_body(sql, params)))
            .await
    }
}

#[async_trait]
impl CatalogAdmin for HttpClient {
    async fn catalog_state(&self) -> Result<CatalogState> {
        self.json(self.get(&["sharding", "catalog"])).await
    }

    async fn validate_catalog_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogValidation> {
        self.json(self.post(&["sharding", "catalog", "validate"]).json(request))
            .await
    }

    async fn apply_catalog_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogApplyResult> {
        // The daemon answers an update that validation refused with 400 and the validation; in-process
        // that is a result, not an error.
        match self
            .call(self.post(&["sharding", "catalog", "apply"]).json(request))
            .await
        {
            Ok(response) => self.read_json(response).await,
            Err(failure) => Ok(CatalogApplyResult {
                applied: false,
                pending_map_version: None,
                validation: failure.into_refused_validation()?,
            }),
        }
    }

    async fn activate_pending_map(&self, request: &ActivationRequest) -> Result<ActivationResult> {
        self.json(self.post(&["sharding", "catalog", "activate"]).json(request))
            .await
    }
}

#[async_trait]
impl SchemaAdmin for HttpClient {
    async fn schema_status(&self) -> Result<SchemaStatusReport> {
        self.json(self.get(&["sharding", "schema"])).await
    }

    async fn migrate_schema(&self, request: &SchemaMigrationRequest) -> Result<SchemaMigrationReport> {
        self.json(self.post(&["sharding", "schema", "migrate"]).json(request))
            .await
    }
}
