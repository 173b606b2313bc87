//! The operator contract ([`ShardAdmin`](crate::data::ShardAdmin)) through a daemon's gRPC service, one
//! implementation per part.

use async_trait::async_trait;

use super::{GrpcClient, pb, sql_request};
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
impl Topology for GrpcClient {
    async fn shard_map(&self) -> Result<ShardMapSnapshot> {
        rpc!(self, get_shard_map, pb::Empty {})?.try_into()
    }

    async fn resolve_route(&self, route: &RouteContext) -> Result<ResolvedRoute> {
        let request = pb::ResolveShardRouteRequest {
            keyspace: route.keyspace().to_owned(),
            key: route.key().to_owned(),
        };
        rpc!(self, resolve_shard_route, request)?.try_into()
    }

    async fn shard_status(&self) -> Result<Vec<ShardStatus>> {
        let list = rpc!(self, get_shard_status, pb::Empty {})?;
        list.items.into_iter().map(TryInto::try_into).collect()
    }

    async fn shard_status_page(&self, query: &ShardStatusQuery) -> Result<ShardStatusPage> {
        query.check()?;
        rpc!(
            self,
            get_shard_status_page,
            pb::ShardStatusPageRequest::from(query.clone())
        )?
        .try_into()
    }

    async fn shard_heat(&self) -> Result<HeatReport> {
        rpc!(self, get_shard_heat, pb::Empty {})?.try_into()
    }
}

#[async_trait]
impl FanOut for GrpcClient {
    async fn execute_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        let request = pb::FanOutSqlRequest { sql: sql.to_owned() };
        let list = rpc!(self, execute_sql_on_all_shards, request)?;
        Ok(list.items.into_iter().map(Into::into).collect())
    }

    async fn execute_read_only_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        let request = pb::FanOutSqlRequest { sql: sql.to_owned() };
        let list = rpc!(self, execute_read_only_sql_on_all_shards, request)?;
        Ok(list.items.into_iter().map(Into::into).collect())
    }

    async fn query_all_shards(&self, sql: &str, params: Params) -> Result<SqlResult> {
        Ok(rpc!(self, query_all_shards, sql_request(sql, params))?.into())
    }
}

#[async_trait]
impl CatalogAdmin for GrpcClient {
    async fn catalog_state(&self) -> Result<CatalogState> {
        rpc!(self, get_shard_catalog, pb::Empty {})?.try_into()
    }

    async fn validate_catalog_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogValidation> {
        let request = pb::ShardCatalogUpdateRequest::from(request);
        rpc!(self, validate_shard_catalog_update, request)?.try_into()
    }

    async fn apply_catalog_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogApplyResult> {
        let request = pb::ShardCatalogUpdateRequest::from(request);
        rpc!(self, apply_shard_catalog_update, request)?.try_into()
    }

    async fn activate_pending_map(&self, request: &ActivationRequest) -> Result<ActivationResult> {
        let request = pb::ActivateShardCatalogRequest::from(request.clone());
        Ok(rpc!(self, activate_shard_catalog, request)?.into())
    }
}

#[async_trait]
impl SchemaAdmin for GrpcClient {
    async fn schema_status(&self) -> Result<SchemaStatusReport> {
        rpc!(self, get_shard_schema_status, pb::Empty {})?.try_into()
    }

    async fn migrate_schema(&self, request: &SchemaMigrationRequest) -> Result<SchemaMigrationReport> {
        let request = pb::MigrateShardSchemaRequest::from(request.clone());
        rpc!(self, migrate_shard_schema, request)?.try_into()
    }
}
