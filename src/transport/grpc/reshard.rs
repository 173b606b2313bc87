//! Resharding (data moves, named migrations on the wire) through a daemon's gRPC service: JSON bodies, as the REST endpoints take them.

use async_trait::async_trait;

use super::{GrpcClient, pb};
use crate::data::{ReshardAdmin, ReshardBody, ReshardRequest, ReshardResult, ResumeRequest};
use crate::error::{Error, Result};

fn request_json<T: serde::Serialize>(request: &T) -> Result<pb::ShardMigrationRequest> {
    Ok(pb::ShardMigrationRequest {
        request_json: serde_json::to_string(request).map_err(|source| Error::Json {
            what: "the migration request",
            source,
        })?,
    })
}

fn result_of(json: &str) -> Result<ReshardResult> {
    serde_json::from_str(json).map_err(|source| Error::Json {
        what: "the daemon's migration result",
        source,
    })
}

#[async_trait]
impl ReshardAdmin for GrpcClient {
    async fn start_migration(&self, request: &ReshardRequest) -> Result<ReshardResult> {
        let reply = match ReshardBody::from(request.clone()) {
            ReshardBody::RouteKey(body) => {
                let request = request_json(&body)?;
                rpc!(self, migrate_exact_route_key, request)?
            }
            ReshardBody::BucketRange(body) => {
                let request = request_json(&body)?;
                rpc!(self, migrate_bucket_range, request)?
            }
        };
        result_of(&reply.result_json)
    }

    async fn resume_migration(&self, migration_id: &str, options: &ResumeRequest) -> Result<ReshardResult> {
        let request = pb::ResumeShardMigrationRequest {
            migration_id: migration_id.to_owned(),
            activate: options.activate,
            delete_source: options.delete_source,
        };
        result_of(&rpc!(self, resume_shard_migration, request)?.result_json)
    }

    async fn migration_progress(&self, migration_id: &str) -> Result<ReshardResult> {
        if migration_id.trim().is_empty() {
            return Err(Error::invalid_argument("migration id", "it is blank"));
        }
        let request = pb::ShardMigrationProgressRequest {
            migration_id: migration_id.to_owned(),
        };
        let list = rpc!(self, get_shard_migration_progress, request)?;
        let first = list.result_json.first().ok_or_else(|| Error::NotFound {
            what: "migration",
            name: migration_id.trim().into(),
        })?;
        result_of(first)
    }

    async fn migrations(&self) -> Result<Vec<ReshardResult>> {
        let request = pb::ShardMigrationProgressRequest::default();
        let list = rpc!(self, get_shard_migration_progress, request)?;
        list.result_json.iter().map(|json| result_of(json)).collect()
    }

    async fn abandon_migration(&self, migration_id: &str) -> Result<ReshardResult> {
        let request = pb::ShardMigrationProgressRequest {
            migration_id: migration_id.to_owned(),
        };
        result_of(&rpc!(self, abandon_shard_migration, request)?.result_json)
    }

    async fn migration_history(&self) -> Result<Vec<ReshardResult>> {
        let list = rpc!(self, get_shard_migration_history, pb::Empty {})?;
        list.result_json.iter().map(|json| result_of(json)).collect()
    }
}
