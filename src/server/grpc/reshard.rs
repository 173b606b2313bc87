//! The resharding RPCs (data moves, named migrations on the wire): JSON bodies in, JSON results out, each migration on a task of its own so
//! a caller that goes away does not stop it half-way.

use crate::client::ShardedClient;
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

pub(super) async fn migrate_key(
    sharded: ShardedClient,
    request: pb::ShardMigrationRequest,
) -> Result<pb::ShardMigrationResult> {
    let request: KeyReshardBody = decode(&request.request_json)?;
    let migrator = Resharder::new(sharded);
    detached(async move { migrator.migrate(request.into()).await }).await
}

pub(super) async fn migrate_buckets(
    sharded: ShardedClient,
    request: pb::ShardMigrationRequest,
) -> Result<pb::ShardMigrationResult> {
    let request: BucketReshardBody = decode(&request.request_json)?;
    let migrator = Resharder::new(sharded);
    detached(async move { migrator.migrate(request.into()).await }).await
}

pub(super) async fn resume(
    sharded: ShardedClient,
    request: pb::ResumeShardMigrationRequest,
) -> Result<pb::ShardMigrationResult> {
    let options = ResumeRequest {
        activate: request.activate,
        delete_source: request.delete_source,
    };
    let migrator = Resharder::new(sharded);
    detached(async move { migrator.resume(&request.migration_id, options).await }).await
}

pub(super) async fn progress(
    sharded: ShardedClient,
    request: pb::ShardMigrationProgressRequest,
) -> Result<pb::ShardMigrationList> {
    let migrator = Resharder::new(sharded);
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

pub(super) async fn history(sharded: ShardedClient) -> Result<pb::ShardMigrationList> {
    list(&Resharder::new(sharded).history().await?)
}

fn list(results: &[ReshardResult]) -> Result<pb::ShardMigrationList> {
    Ok(pb::ShardMigrationList {
        result_json: results.iter().map(encode).collect::<Result<_>>()?,
    })
}

pub(super) async fn abandon(
    sharded: ShardedClient,
    request: pb::ShardMigrationProgressRequest,
) -> Result<pb::ShardMigrationResult> {
    let migrator = Resharder::new(sharded);
    detached(async move { migrator.abandon(&request.migration_id).await }).await
}
