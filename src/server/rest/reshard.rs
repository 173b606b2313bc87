//! Resharding endpoints (data moves, named migrations on the wire): `/api/sharding/migrations/...`.
//!
//! A migration runs on a task of its own: a caller that goes away (or times out) does not stop
//! it half-way; it runs to its end and records its result, which `GET .../{id}` then shows.
//! A request rejected before anything moved is a 400 whose body carries the result
//! ([`ReshardRejected`]); a migration that was admitted answers 200 whatever its end
//! (verification or catalog failures too), with a `status` that says so.

use axum::extract::State;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, Problem, ReshardRejected};
use super::extract::{Json, Path};
use crate::data::{BucketReshardBody, KeyReshardBody, ReshardResult, ReshardStatus, ResumeRequest};
use crate::error::{Error, Result};
use crate::reshard::Resharder;
use crate::server::ServerState;

fn migrator(state: &ServerState) -> Result<Resharder, ApiError> {
    let sharded = state.sharded().ok_or(ApiError::Data(Error::NotSharded))?;
    Ok(Resharder::new(sharded.clone()))
}

/// Runs `work` to its end even if the request is dropped.
async fn detached<F>(work: F) -> Result<ReshardResult, ApiError>
where
    F: std::future::Future<Output = Result<ReshardResult>> + Send + 'static,
{
    match tokio::spawn(work).await {
        Ok(outcome) => Ok(outcome?),
        Err(err) => Err(ApiError::Data(Error::Catalog {
            reason: format!("the migration task stopped: {err}"),
        })),
    }
}

/// The answer for a migration that was started: a rejection is a 400 with the result in its body.
fn started(result: ReshardResult) -> Response {
    if result.status == ReshardStatus::Rejected {
        ReshardRejected::new(result).into_response()
    } else {
        axum::Json(result).into_response()
    }
}

/// Moves the data of one route key to another primary shard, verified, and pins the key there
/// (or, with `dryRun`, returns the plan and changes nothing).
#[utoipa::path(
    post,
    path = "/api/sharding/migrations/exact-route-key",
    tag = "sharding",
    operation_id = "migrateExactRouteKey",
    request_body = KeyReshardBody,
    responses(
        (status = 200, description = "The migration was admitted; `status` says how it ended", body = ReshardResult),
        (status = 400, description = "The request was rejected before anything moved (`invalid_input`, the \
            result as the member `migration`, its `issues` naming each problem: unknown keyspace or shard, a \
            manifest that does not match the shards, a key already fenced, a stale map version, ...), or a \
            malformed body (a plain problem without `migration`)", body = ReshardRejected,
            content_type = "application/problem+json"),
    )
)]
pub(crate) async fn migrate_exact_route_key(
    State(state): State<ServerState>,
    Json(request): Json<KeyReshardBody>,
) -> Result<Response, ApiError> {
    let migrator = migrator(&state)?;
    Ok(started(
        detached(async move { migrator.migrate(request.into()).await }).await?,
    ))
}

/// Moves the data of a bucket range to another primary shard, verified; pinned keys stay (or,
/// with `dryRun`, returns the plan and changes nothing).
#[utoipa::path(
    post,
    path = "/api/sharding/migrations/bucket-range",
    tag = "sharding",
    operation_id = "migrateBucketRange",
    request_body = BucketReshardBody,
    responses(
        (status = 200, description = "The migration was admitted; `status` says how it ended", body = ReshardResult),
        (status = 400, description = "The request was rejected before anything moved (`invalid_input`, the \
            result as the member `migration`, its `issues` naming each problem: a bucket range outside the \
            map or not owned by the source shard, a manifest that does not match the shards, a range already \
            fenced, a stale map version, ...), or a malformed body (a plain problem without `migration`)",
            body = ReshardRejected, content_type = "application/problem+json"),
    )
)]
pub(crate) async fn migrate_bucket_range(
    State(state): State<ServerState>,
    Json(request): Json<BucketReshardBody>,
) -> Result<Response, ApiError> {
    let migrator = migrator(&state)?;
    Ok(started(
        detached(async move { migrator.migrate(request.into()).await }).await?,
    ))
}

/// Every migration's latest state (its checkpoint), most recently updated first.
#[utoipa::path(
    get,
    path = "/api/sharding/migrations/checkpoints",
    tag = "sharding",
    operation_id = "getShardMigrations",
    responses((status = 200, description = "Every migration", body = Vec<ReshardResult>))
)]
pub async fn migrations(State(state): State<ServerState>) -> Result<axum::Json<Vec<ReshardResult>>, ApiError> {
    Ok(axum::Json(migrator(&state)?.migrations().await?))
}

/// The migration history: one entry per run that ended, newest first.
#[utoipa::path(
    get,
    path = "/api/sharding/migrations",
    tag = "sharding",
    operation_id = "getShardMigrationHistory",
    responses((status = 200, description = "The history", body = Vec<ReshardResult>))
)]
pub async fn history(State(state): State<ServerState>) -> Result<axum::Json<Vec<ReshardResult>>, ApiError> {
    Ok(axum::Json(migrator(&state)?.history().await?))
}

/// One migration's progress: its latest checkpoint.
#[utoipa::path(
    get,
    path = "/api/sharding/migrations/{id}",
    tag = "sharding",
    operation_id = "getShardMigrationProgress",
    params(("id" = String, Path, description = "The migration id")),
    responses(
        (status = 200, description = "The migration", body = ReshardResult),
        (status = 404, description = "No such migration", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn progress(
    State(state): State<ServerState>,
    Path(id): Path<String>,
) -> Result<axum::Json<ReshardResult>, ApiError> {
    let found = migrator(&state)?.status(&id).await?;
    Ok(axum::Json(found.ok_or(ApiError::Data(Error::NotFound {
        what: "migration",
        name: id.trim().into(),
    }))?))
}

/// Continues a stopped migration from its last checkpoint (harmless when it already ended). The
/// body may ask to activate and to delete the source in this run.
#[utoipa::path(
    post,
    path = "/api/sharding/migrations/{id}/resume",
    tag = "sharding",
    operation_id = "resumeShardMigration",
    params(("id" = String, Path, description = "The migration id")),
    request_body = ResumeRequest,
    responses(
        (status = 200, description = "The migration's result", body = ReshardResult),
        (status = 404, description = "No such migration", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn resume(
    State(state): State<ServerState>,
    Path(id): Path<String>,
    Json(request): Json<ResumeRequest>,
) -> Result<axum::Json<ReshardResult>, ApiError> {
    let migrator = migrator(&state)?;
    Ok(axum::Json(
        detached(async move { migrator.resume(&id, request).await }).await?,
    ))
}

/// Gives up a migration that has not written its new map: releases its fence (writes of its keys
/// on the source go on) and records it as abandoned. 400 `invalid_input` once its map is written.
#[utoipa::path(
    post,
    path = "/api/sharding/migrations/{id}/abandon",
    tag = "sharding",
    operation_id = "abandonShardMigration",
    params(("id" = String, Path, description = "The migration id")),
    responses(
        (status = 200, description = "The abandoned migration", body = ReshardResult),
        (status = 400, description = "Its new map is already written: resume it instead", body = Problem,
            content_type = "application/problem+json"),
        (status = 404, description = "No such migration", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn abandon(
    State(state): State<ServerState>,
    Path(id): Path<String>,
) -> Result<axum::Json<ReshardResult>, ApiError> {
    let migrator = migrator(&state)?;
    Ok(axum::Json(detached(async move { migrator.abandon(&id).await }).await?))
}
