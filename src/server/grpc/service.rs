//! The `shardlite.v1.Shardlite` service: one handler per RPC, each a thin translation between
//! protobuf messages and the [`DataClient`](crate::client::DataClient) / [`ShardedClient`](crate::client::ShardedClient) call it stands for.

use tonic::Request;

use crate::data::CatalogUpdateRequest;
use crate::routing::RouteContext;
use crate::transport::grpc::convert::{document_from_json, params_from_pb, required_value, row_from_pb, row_to_pb};
use crate::wire::proto::{self as pb, shardlite_server::Shardlite};

use super::backup;
use super::call::{RpcResult, ShardliteService};
use super::directory::{self as dir, names as d};
use super::participants;
use super::reshard;
use super::transactions as tx;

#[tonic::async_trait]
impl Shardlite for ShardliteService {
    // ---------------------------------------------------------------- shard administration

    async fn get_shard_map(&self, request: Request<pb::Empty>) -> RpcResult<pb::ShardMapSnapshot> {
        self.run("GetShardMap", request, |call, _| async move {
            Ok(call.admin()?.map_snapshot().into())
        })
        .await
    }

    async fn resolve_shard_route(
        &self,
        request: Request<pb::ResolveShardRouteRequest>,
    ) -> RpcResult<pb::ShardResolution> {
        self.run("ResolveShardRoute", request, |call, req| async move {
            let sharded = call.admin()?;
            let route = RouteContext::new(&req.keyspace, &req.key)?;
            Ok(sharded.resolve_route(&route)?.into())
        })
        .await
    }

    async fn get_shard_status(&self, request: Request<pb::Empty>) -> RpcResult<pb::ShardStatusList> {
        self.run("GetShardStatus", request, |call, _| async move {
            let statuses = call.admin()?.shards().status().await;
            Ok(pb::ShardStatusList {
                items: statuses.into_iter().map(Into::into).collect(),
            })
        })
        .await
    }

    async fn get_shard_status_page(
        &self,
        request: Request<pb::ShardStatusPageRequest>,
    ) -> RpcResult<pb::ShardStatusPage> {
        self.run("GetShardStatusPage", request, |call, req| async move {
            Ok(call.admin()?.shards().status_page(&req.into()).await?.into())
        })
        .await
    }

    async fn get_shard_heat(&self, request: Request<pb::Empty>) -> RpcResult<pb::ShardHeat> {
        self.run("GetShardHeat", request, |call, _| async move {
            Ok(call.admin()?.shards().heat().into())
        })
        .await
    }

    async fn execute_sql_on_all_shards(
        &self,
        request: Request<pb::FanOutSqlRequest>,
    ) -> RpcResult<pb::ShardSqlResultList> {
        self.run("ExecuteSqlOnAllShards", request, |call, req| async move {
            let results = call.admin()?.query().execute_all(&req.sql).await?;
            Ok(pb::ShardSqlResultList {
                items: results.into_iter().map(Into::into).collect(),
            })
        })
        .await
    }

    async fn execute_read_only_sql_on_all_shards(
        &self,
        request: Request<pb::FanOutSqlRequest>,
    ) -> RpcResult<pb::ShardSqlResultList> {
        self.run("ExecuteReadOnlySqlOnAllShards", request, |call, req| async move {
            let results = call.admin()?.query().read_all(&req.sql).await?;
            Ok(pb::ShardSqlResultList {
                items: results.into_iter().map(Into::into).collect(),
            })
        })
        .await
    }

    async fn query_all_shards(&self, request: Request<pb::SqlRequest>) -> RpcResult<pb::SqlResult> {
        self.run("QueryAllShards", request, |call, req| async move {
            let params = params_from_pb(req.params)?;
            Ok(call.admin()?.query().merged(&req.sql, params).await?.into())
        })
        .await
    }

    async fn list_host_shards(&self, request: Request<pb::HostShardQuery>) -> RpcResult<pb::HostShardPage> {
        self.run("ListHostShards", request, |call, req| async move {
            Ok(call.host()?.list(&req.into()).await?.into())
        })
        .await
    }

    async fn create_host_shard(&self, request: Request<pb::CreateHostShardRequest>) -> RpcResult<pb::HostShardCreated> {
        self.run("CreateHostShard", request, |call, req| async move {
            Ok(call.host()?.create_shard(&req.shard_id).await?.into())
        })
        .await
    }

    async fn get_shard_catalog(&self, request: Request<pb::Empty>) -> RpcResult<pb::ShardCatalogState> {
        self.run("GetShardCatalog", request, |call, _| async move {
            Ok(call.admin()?.catalog().state().await?.into())
        })
        .await
    }

    async fn validate_shard_catalog_update(
        &self,
        request: Request<pb::ShardCatalogUpdateRequest>,
    ) -> RpcResult<pb::ShardCatalogValidation> {
        self.run("ValidateShardCatalogUpdate", request, |call, req| async move {
            let sharded = call.admin()?;
            let update = CatalogUpdateRequest::try_from(req)?;
            Ok(sharded.catalog().validate(&update).await?.into())
        })
        .await
    }

    async fn apply_shard_catalog_update(
        &self,
        request: Request<pb::ShardCatalogUpdateRequest>,
    ) -> RpcResult<pb::ShardCatalogApplyResult> {
        // A map that validation refuses is an answer (`applied: false`), not an error, as in-process.
        self.run("ApplyShardCatalogUpdate", request, |call, req| async move {
            let sharded = call.admin()?;
            let update = CatalogUpdateRequest::try_from(req)?;
            Ok(sharded.catalog().apply(&update).await?.into())
        })
        .await
    }

    async fn activate_shard_catalog(
        &self,
        request: Request<pb::ActivateShardCatalogRequest>,
    ) -> RpcResult<pb::ShardCatalogActivation> {
        self.run("ActivateShardCatalog", request, |call, req| async move {
            let sharded = call.admin()?;
            Ok(sharded.catalog().activate(&req.into()).await?.into())
        })
        .await
    }

    async fn get_shard_schema_status(&self, request: Request<pb::Empty>) -> RpcResult<pb::ShardSchemaStatusReport> {
        self.run("GetShardSchemaStatus", request, |call, _| async move {
            let report = call.admin()?.schema().status().await?;
            Ok(crate::server::rest::schema::redact_status_errors(report).into())
        })
        .await
    }

    async fn migrate_shard_schema(
        &self,
        request: Request<pb::MigrateShardSchemaRequest>,
    ) -> RpcResult<pb::ShardSchemaMigrationReport> {
        self.run("MigrateShardSchema", request, |call, req| async move {
            let report = call.admin()?.schema().migrate(&req.into()).await?;
            Ok(crate::server::rest::schema::redact_migration_errors(report).into())
        })
        .await
    }

    async fn migrate_exact_route_key(
        &self,
        request: Request<pb::ShardMigrationRequest>,
    ) -> RpcResult<pb::ShardMigrationResult> {
        self.run("MigrateExactRouteKey", request, reshard::migrate_key).await
    }

    async fn migrate_bucket_range(
        &self,
        request: Request<pb::ShardMigrationRequest>,
    ) -> RpcResult<pb::ShardMigrationResult> {
        self.run("MigrateBucketRange", request, reshard::migrate_buckets).await
    }

    async fn get_shard_migration_progress(
        &self,
        request: Request<pb::ShardMigrationProgressRequest>,
    ) -> RpcResult<pb::ShardMigrationList> {
        self.run("GetShardMigrationProgress", request, reshard::progress).await
    }

    async fn get_shard_migration_history(&self, request: Request<pb::Empty>) -> RpcResult<pb::ShardMigrationList> {
        self.run("GetShardMigrationHistory", request, reshard::history).await
    }

    async fn resume_shard_migration(
        &self,
        request: Request<pb::ResumeShardMigrationRequest>,
    ) -> RpcResult<pb::ShardMigrationResult> {
        self.run("ResumeShardMigration", request, reshard::resume).await
    }

    async fn abandon_shard_migration(
        &self,
        request: Request<pb::ShardMigrationProgressRequest>,
    ) -> RpcResult<pb::ShardMigrationResult> {
        self.run("AbandonShardMigration", request, reshard::abandon).await
    }

    async fn create_backup(&self, request: Request<pb::Empty>) -> RpcResult<pb::BackupSet> {
        self.run("CreateBackup", request, backup::create).await
    }

    async fn list_backups(&self, request: Request<pb::Empty>) -> RpcResult<pb::BackupSetList> {
        self.run("ListBackups", request, backup::list).await
    }

    // ---------------------------------------------------------------- SQL

    async fn execute_sql(&self, request: Request<pb::SqlRequest>) -> RpcResult<pb::SqlResult> {
        self.run("ExecuteSql", request, |call, req| async move {
            let params = params_from_pb(req.params)?;
            Ok(call.execute_sql(&req.sql, params).await?.into())
        })
        .await
    }

    async fn execute_read_only_sql(&self, request: Request<pb::SqlRequest>) -> RpcResult<pb::SqlResult> {
        self.run("ExecuteReadOnlySql", request, |call, req| async move {
            let params = params_from_pb(req.params)?;
            Ok(call.data()?.execute_read_only_sql(&req.sql, params).await?.into())
        })
        .await
    }

    // ---------------------------------------------------------------- transactions

    async fn begin_transaction(&self, request: Request<pb::BeginTransactionRequest>) -> RpcResult<pb::TransactionInfo> {
        self.run("BeginTransaction", request, tx::begin).await
    }

    async fn execute_in_transaction(&self, request: Request<pb::TransactionSqlRequest>) -> RpcResult<pb::SqlResult> {
        self.run("ExecuteInTransaction", request, tx::execute).await
    }

    async fn commit_transaction(&self, request: Request<pb::TransactionRequest>) -> RpcResult<pb::Empty> {
        self.run("CommitTransaction", request, tx::commit).await
    }

    async fn rollback_transaction(&self, request: Request<pb::TransactionRequest>) -> RpcResult<pb::Empty> {
        self.run("RollbackTransaction", request, tx::rollback).await
    }

    // ---------------------------------------------------------------- atomic participants

    async fn begin_atomic_session(&self, request: Request<pb::Empty>) -> RpcResult<pb::TransactionInfo> {
        self.run("BeginAtomicSession", request, participants::begin).await
    }

    async fn execute_in_atomic_session(
        &self,
        request: Request<pb::AtomicSessionSqlRequest>,
    ) -> RpcResult<pb::SqlResult> {
        self.run("ExecuteInAtomicSession", request, participants::execute).await
    }

    async fn prepare_atomic_session(
        &self,
        request: Request<pb::PrepareAtomicSessionRequest>,
    ) -> RpcResult<pb::AtomicPrepared> {
        self.run("PrepareAtomicSession", request, participants::prepare).await
    }

    async fn rollback_atomic_session(&self, request: Request<pb::AtomicSessionRequest>) -> RpcResult<pb::Empty> {
        self.run("RollbackAtomicSession", request, participants::rollback).await
    }

    async fn run_atomic_step(&self, request: Request<pb::AtomicStepRequest>) -> RpcResult<pb::AtomicStepOutcome> {
        self.run("RunAtomicStep", request, participants::step).await
    }

    async fn get_atomic_decision(
        &self,
        request: Request<pb::AtomicDecisionRequest>,
    ) -> RpcResult<pb::AtomicDecisionFound> {
        self.run("GetAtomicDecision", request, participants::decision).await
    }

    async fn get_atomic_state(&self, request: Request<pb::Empty>) -> RpcResult<pb::AtomicParticipantState> {
        self.run("GetAtomicState", request, participants::state).await
    }

    // ---------------------------------------------------------------- info, tables and rows

    async fn get_info(&self, request: Request<pb::Empty>) -> RpcResult<pb::DatabaseInfo> {
        self.run("GetInfo", request, |call, _| async move {
            Ok(call.state.info(&call.target).await?.into())
        })
        .await
    }

    async fn list_tables(&self, request: Request<pb::Empty>) -> RpcResult<pb::NameList> {
        self.run("ListTables", request, |call, _| async move {
            Ok(pb::NameList {
                names: call.data()?.list_tables().await?,
            })
        })
        .await
    }

    async fn get_table_schema(&self, request: Request<pb::TableRequest>) -> RpcResult<pb::TableSchema> {
        self.run("GetTableSchema", request, |call, req| async move {
            Ok(call.data()?.table_schema(&req.table).await?.into())
        })
        .await
    }

    async fn count_rows(&self, request: Request<pb::TableRequest>) -> RpcResult<pb::Count> {
        self.run("CountRows", request, |call, req| async move {
            Ok(pb::Count {
                count: call.data()?.count_rows(&req.table).await?,
            })
        })
        .await
    }

    async fn browse_rows(&self, request: Request<pb::BrowseRequest>) -> RpcResult<pb::RowPage> {
        self.run("BrowseRows", request, |call, req| async move {
            Ok(call
                .data()?
                .browse_rows(&req.name, req.page, req.page_size)
                .await?
                .into())
        })
        .await
    }

    async fn get_row(&self, request: Request<pb::RowKeyRequest>) -> RpcResult<pb::OptionalRow> {
        self.run("GetRow", request, |call, req| async move {
            let key = required_value(req.key, "key")?;
            let row = call.data()?.get_row(&req.table, key).await?;
            Ok(pb::OptionalRow {
                row: row.map(|values| pb::ValueMap {
                    values: row_to_pb(values),
                }),
            })
        })
        .await
    }

    async fn insert_row(&self, request: Request<pb::InsertRowRequest>) -> RpcResult<pb::Count> {
        self.run("InsertRow", request, |call, req| async move {
            let count = call.data()?.insert_row(&req.table, row_from_pb(req.values)).await?;
            Ok(pb::Count { count })
        })
        .await
    }

    async fn update_row(&self, request: Request<pb::UpdateRowRequest>) -> RpcResult<pb::Count> {
        self.run("UpdateRow", request, |call, req| async move {
            let key = required_value(req.key, "key")?;
            let count = call
                .data()?
                .update_row(&req.table, key, row_from_pb(req.values))
                .await?;
            Ok(pb::Count { count })
        })
        .await
    }

    async fn delete_row(&self, request: Request<pb::RowKeyRequest>) -> RpcResult<pb::Count> {
        self.run("DeleteRow", request, |call, req| async move {
            let key = required_value(req.key, "key")?;
            let count = call.data()?.delete_row(&req.table, key).await?;
            Ok(pb::Count { count })
        })
        .await
    }

    // ---------------------------------------------------------------- collections

    async fn list_collections(&self, request: Request<pb::Empty>) -> RpcResult<pb::NameList> {
        self.run("ListCollections", request, |call, _| async move {
            Ok(pb::NameList {
                names: call.data()?.list_collections().await?,
            })
        })
        .await
    }

    async fn count_documents(&self, request: Request<pb::CollectionRequest>) -> RpcResult<pb::Count> {
        self.run("CountDocuments", request, |call, req| async move {
            Ok(pb::Count {
                count: call.data()?.count_documents(&req.collection).await?,
            })
        })
        .await
    }

    async fn browse_documents(&self, request: Request<pb::BrowseRequest>) -> RpcResult<pb::DocumentPage> {
        self.run("BrowseDocuments", request, |call, req| async move {
            let page = call
                .data()?
                .browse_documents(&req.name, req.page, req.page_size)
                .await?;
            Ok(page.into())
        })
        .await
    }

    async fn get_document(&self, request: Request<pb::DocumentKeyRequest>) -> RpcResult<pb::OptionalDocument> {
        self.run("GetDocument", request, |call, req| async move {
            let document = call.data()?.get_document(&req.collection, &req.key).await?;
            Ok(pb::OptionalDocument {
                json: document.map(|d| d.to_string()),
            })
        })
        .await
    }

    async fn put_document(&self, request: Request<pb::PutDocumentRequest>) -> RpcResult<pb::Empty> {
        self.run("PutDocument", request, |call, req| async move {
            let document = document_from_json(&req.json)?;
            call.data()?.put_document(&req.collection, &req.key, document).await?;
            Ok(pb::Empty {})
        })
        .await
    }

    async fn delete_document(&self, request: Request<pb::DocumentKeyRequest>) -> RpcResult<pb::Existed> {
        self.run("DeleteDocument", request, |call, req| async move {
            Ok(pb::Existed {
                existed: call.data()?.delete_document(&req.collection, &req.key).await?,
            })
        })
        .await
    }

    async fn drop_collection(&self, request: Request<pb::CollectionRequest>) -> RpcResult<pb::Existed> {
        self.run("DropCollection", request, |call, req| async move {
            Ok(pb::Existed {
                existed: call.data()?.drop_collection(&req.collection).await?,
            })
        })
        .await
    }

    // ---------------------------------------------------------------- saved queries

    async fn list_saved_queries(&self, request: Request<pb::Empty>) -> RpcResult<pb::SavedQueryList> {
        self.run("ListSavedQueries", request, |call, _| async move {
            let queries = call.data()?.list_saved_queries().await?;
            Ok(pb::SavedQueryList {
                items: queries.into_iter().map(Into::into).collect(),
            })
        })
        .await
    }

    async fn get_saved_query(&self, request: Request<pb::NameRequest>) -> RpcResult<pb::OptionalSavedQuery> {
        self.run("GetSavedQuery", request, |call, req| async move {
            let query = call.data()?.get_saved_query(&req.name).await?;
            Ok(pb::OptionalSavedQuery {
                saved_query: query.map(Into::into),
            })
        })
        .await
    }

    async fn put_saved_query(&self, request: Request<pb::PutSavedQueryRequest>) -> RpcResult<pb::SavedQuery> {
        self.run("PutSavedQuery", request, |call, req| async move {
            Ok(call.data()?.put_saved_query(&req.name, &req.sql_text).await?.into())
        })
        .await
    }

    async fn delete_saved_query(&self, request: Request<pb::NameRequest>) -> RpcResult<pb::Existed> {
        self.run("DeleteSavedQuery", request, |call, req| async move {
            Ok(pb::Existed {
                existed: call.data()?.delete_saved_query(&req.name).await?,
            })
        })
        .await
    }

    // ---------------------------------------------------------------- procedures

    async fn list_procedures(&self, request: Request<pb::Empty>) -> RpcResult<pb::ProcedureList> {
        self.run("ListProcedures", request, |call, _| async move {
            let procedures = call.data()?.list_procedures().await?;
            Ok(pb::ProcedureList {
                items: procedures.into_iter().map(Into::into).collect(),
            })
        })
        .await
    }

    async fn get_procedure(&self, request: Request<pb::NameRequest>) -> RpcResult<pb::OptionalProcedure> {
        self.run("GetProcedure", request, |call, req| async move {
            let procedure = call.data()?.get_procedure(&req.name).await?;
            Ok(pb::OptionalProcedure {
                procedure: procedure.map(Into::into),
            })
        })
        .await
    }

    async fn put_procedure(&self, request: Request<pb::ProcedureDefinition>) -> RpcResult<pb::ProcedureDefinition> {
        self.run("PutProcedure", request, |call, req| async move {
            Ok(call.data()?.put_procedure(req.into()).await?.into())
        })
        .await
    }

    async fn delete_procedure(&self, request: Request<pb::NameRequest>) -> RpcResult<pb::Existed> {
        self.run("DeleteProcedure", request, |call, req| async move {
            Ok(pb::Existed {
                existed: call.data()?.delete_procedure(&req.name).await?,
            })
        })
        .await
    }

    async fn execute_procedure(&self, request: Request<pb::ExecuteProcedureRequest>) -> RpcResult<pb::SqlResult> {
        self.run("ExecuteProcedure", request, |call, req| async move {
            let args = params_from_pb(req.args)?;
            let data = call.data()?;
            Ok(call
                .sql_access
                .execute_procedure(data.as_ref(), &req.name, args)
                .await?
                .into())
        })
        .await
    }

    // ---------------------------------------------------------------- shard directories

    async fn resolve_shard_directory_entry(&self, request: Request<d::Lookup>) -> RpcResult<d::Resolution> {
        self.run("ResolveShardDirectoryEntry", request, dir::resolve).await
    }

    async fn list_shard_directory_entries(&self, request: Request<d::EntriesRequest>) -> RpcResult<d::Page> {
        self.run("ListShardDirectoryEntries", request, dir::entries).await
    }

    async fn reserve_shard_directory_entry(&self, request: Request<d::Mutation>) -> RpcResult<d::Result> {
        self.run("ReserveShardDirectoryEntry", request, dir::reserve).await
    }

    async fn activate_shard_directory_entry(&self, request: Request<d::Mutation>) -> RpcResult<d::Result> {
        self.run("ActivateShardDirectoryEntry", request, dir::activate).await
    }

    async fn upsert_shard_directory_entry(&self, request: Request<d::Mutation>) -> RpcResult<d::Result> {
        self.run("UpsertShardDirectoryEntry", request, dir::upsert).await
    }

    async fn disable_shard_directory_entry(&self, request: Request<d::Mutation>) -> RpcResult<d::Result> {
        self.run("DisableShardDirectoryEntry", request, dir::disable).await
    }

    async fn delete_shard_directory_entry(&self, request: Request<d::Mutation>) -> RpcResult<d::Result> {
        self.run("DeleteShardDirectoryEntry", request, dir::delete).await
    }

    async fn mark_shard_directory_entry_stale(&self, request: Request<d::Mutation>) -> RpcResult<d::Result> {
        self.run("MarkShardDirectoryEntryStale", request, dir::mark_stale).await
    }

    async fn import_shard_directory_entries(&self, request: Request<d::Import>) -> RpcResult<d::Outcome> {
        self.run("ImportShardDirectoryEntries", request, dir::import).await
    }
}
