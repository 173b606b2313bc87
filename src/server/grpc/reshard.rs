//! The resharding RPCs (data moves, named migrations on the wire): JSON bodies in, JSON results
//! out, each migration on a task of its own so a caller that goes away does not stop it
//! half-way. Each needs the sharded client (`not_sharded` on a daemon serving one database).

use super::call::Call;
use crate::data::{BucketReshardBody, KeyReshardBody, ReshardResult, ResumeRequest};
use crate::error::{Error, Result};
use crate::reshard::Resharder;
use crate::wire::proto as pb;

fn decode<T: serde::de::DeserializeOwned>(json: &str) -> Result<T> {
    serde_json::from_str(json).map_err(|source| Error::Json {
        what: "the migration request",
        source,
    })
}

fn encode(result: &ReshardResult) -> Result<String> {
    serde_json::to_string(result).map_err(|err| Error::Catalog {
        reason: format!("migration '{}' could not be encoded: {err}", result.migration_id),
    })
}

async fn detached<F>(work: F) -> Result<pb::ShardMigrationResult>
where
    F: std::future::Future<Output = Result<ReshardResult>> + Send + 'static,
{
    let result = tokio::spawn(work).await.map_err(|err| Error::Catalog {
        reason: format!("the migration task stopped: {err}"),
    })??;
    Ok(pb::ShardMigrationResult {
        result_json: encode(&result)?,
    })
}

pub(super) async fn migrate_key(call: Call, request: pb::ShardMigrationRequest) -> Result<pb::ShardMigrationResult> {
    let migrator = Resharder::new(call.admin()?);
    let request: KeyReshardBody = decode(&request.request_json)?;
    detached(async move { migrator.migrate(request.into()).await }).await
}

pub(super) async fn migrate_buckets(
    call: Call,
    request: pb::ShardMigrationRequest,
) -> Result<pb::ShardMigrationResult> {
    let migrator = Resharder::new(call.admin()?);
    let request: BucketReshardBody = decode(&request.request_json)?;
    detached(async move { migrator.migrate(request.into()).await }).await
}

pub(super) async fn resume(call: Call, request: pb::ResumeShardMigrationRequest) -> Result<pb::ShardMigrationResult> {
    let options = ResumeRequest {
        activate: request.activate,
        delete_source: request.delete_source,
    };
    let migrator = Resharder::new(call.admin()?);
    detached(async move { migrator.resume(&request.migration_id, options).await }).await
}

pub(super) async fn progress(call: Call, request: pb::ShardMigrationProgressRequest) -> Result<pb::ShardMigrationList> {
    let migrator = Resharder::new(call.admin()?);
    let results = if request.migration_id.trim().is_empty() {
        migrator.migrations().await?
    } else {
        vec![
            migrator
                .status(&request.migration_id)
                .await?
                .ok_or_else(|| Error::NotFound {
                    what: "migration",
                    name: request.migration_id.trim().into(),
                })?,
        ]
    };
    list(&results)
}

pub(super) async fn history(call: Call, _: pb::Empty) -> Result<pb::ShardMigrationList> {
    list(&Resharder::new(call.admin()?).history().await?)
}

fn list(results: &[ReshardResult]) -> Result<pb::ShardMigrationList> {
    Ok(pb::ShardMigrationList {
        result_json: results.iter().map(encode).collect::<Result<_>>()?,
    })
}

pub(super) async fn abandon(
    call: Call,
    request: pb::ShardMigrationProgressRequest,
) -> Result<pb::ShardMigrationResult> {
    let migrator = Resharder::new(call.admin()?);
    detached(async move { migrator.abandon(&request.migration_id).await }).await
}
