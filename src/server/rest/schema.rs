//! Schema migrations and schema status across shards: `/api/sharding/schema...`.
//!
//! Like the other shard-admin endpoints they ignore the route headers and answer 404
//! `not_sharded` on a daemon serving an unsharded database. A shard that fails is reported in
//! the body (200); internal failures are logged and reported generically.

use axum::extract::State;

use super::error::{ApiError, Problem};
use super::extract::Json;
use crate::data::{SchemaMigrationReport, SchemaMigrationRequest, SchemaStatusReport};
use crate::error::{Error, ErrorKind};
use crate::server::ServerState;

/// What a shard's outcome says when it failed internally; the real error is logged.
const INTERNAL_SHARD_ERROR: &str = "the shard could not complete the request; the daemon log has the details";

/// Replaces internal errors with a generic text (after logging them) in a migration report.
pub(crate) fn redact_migration_errors(mut report: SchemaMigrationReport) -> SchemaMigrationReport {
    for shard in &mut report.shards {
        redact(&shard.shard_id, shard.error_code.as_deref(), &mut shard.error);
    }
    report
}

/// Replaces internal errors with a generic text (after logging them) in a status report.
pub(crate) fn redact_status_errors(mut report: SchemaStatusReport) -> SchemaStatusReport {
    for shard in &mut report.shards {
        redact(&shard.shard_id, shard.error_code.as_deref(), &mut shard.error);
    }
    report
}

fn redact(shard_id: &str, code: Option<&str>, error: &mut Option<String>) {
    if code == Some(ErrorKind::Internal.code()) {
        tracing::error!(
            shard = %shard_id,
            error = error.as_deref().unwrap_or_default(),
            "shard failed during a schema operation"
        );
        *error = Some(INTERNAL_SHARD_ERROR.to_owned());
    }
}

/// Every enabled shard's schema: the sqlx migration versions it recorded, a fingerprint of its
/// `sqlite_master` (internal tables left out), and whether it drifts from the majority, with the
/// versions and tables or indexes that differ.
#[utoipa::path(
    get,
    path = "/api/sharding/schema",
    tag = "sharding",
    operation_id = "getShardSchemaStatus",
    responses((status = 200, description = "Per-shard schema status, in definition order", body = SchemaStatusReport))
)]
pub async fn schema_status(State(state): State<ServerState>) -> Result<axum::Json<SchemaStatusReport>, ApiError> {
    let sharded = state.sharded().ok_or(ApiError::Data(Error::NotSharded))?;
    Ok(axum::Json(redact_status_errors(sharded.schema().status().await?)))
}

/// Applies sqlx-style migrations to every enabled shard (or the shards named), each recording
/// them in its own `_sqlx_migrations`. Shards at the target are skipped; a shard that fails is
/// reported in the body and the others finish; `dryRun` reports what would run and changes
/// nothing.
#[utoipa::path(
    post,
    path = "/api/sharding/schema/migrate",
    tag = "sharding",
    operation_id = "migrateShardSchema",
    request_body = SchemaMigrationRequest,
    responses(
        (status = 200, description = "Per-shard outcome, in definition order", body = SchemaMigrationReport),
        (status = 400, description = "The migration set is refused before any shard runs it (a version given \
            twice, a statement no shard accepts), or a named shard is unknown", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn migrate_schema(
    State(state): State<ServerState>,
    Json(request): Json<SchemaMigrationRequest>,
) -> Result<axum::Json<SchemaMigrationReport>, ApiError> {
    let sharded = state.sharded().ok_or(ApiError::Data(Error::NotSharded))?;
    let report = sharded.schema().migrate(&request).await?;
    Ok(axum::Json(redact_migration_errors(report)))
}
