//! Backup endpoints: `POST /api/sharding/backups` takes a backup set of the served keyspace into
//! the daemon's backup place (`serve --backup-dir`), `GET /api/sharding/backups` lists the sets
//! there and `GET /api/sharding/backups/overview` sums them up beside the point-in-time
//! archive's lag, for the admin page (admin scope, all three). The place is the daemon's own setting: a client never names a
//! folder on the daemon's disk.

use axum::extract::State;

use super::error::{ApiError, Problem};
use crate::data::{BackupManifest, BackupOverview};
use crate::server::ServerState;
use crate::server::backups::{backup_sets, overview, take_backup};

/// Takes a backup set of the keyspace, consistent across shards, into the daemon's backup place
/// (`serve --backup-dir`): shards unchanged since its newest set are referenced, not copied.
#[utoipa::path(
    post,
    path = "/api/sharding/backups",
    tag = "sharding",
    operation_id = "createBackup",
    responses(
        (status = 200, description = "The set's manifest", body = BackupManifest),
        (status = 400, description = "The daemon has no `--backup-dir`, or its map names a data host's \
            shard (`invalid_input`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub(crate) async fn create(State(state): State<ServerState>) -> Result<axum::Json<BackupManifest>, ApiError> {
    Ok(axum::Json(take_backup(&state).await?))
}

/// The complete backup sets in the daemon's backup place, oldest first.
#[utoipa::path(
    get,
    path = "/api/sharding/backups",
    tag = "sharding",
    operation_id = "listBackups",
    responses(
        (status = 200, description = "Each set's manifest, oldest first", body = Vec<BackupManifest>),
        (status = 400, description = "The daemon has no `--backup-dir` (`invalid_input`)", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub(crate) async fn list(State(state): State<ServerState>) -> Result<axum::Json<Vec<BackupManifest>>, ApiError> {
    Ok(axum::Json(backup_sets(&state).await?))
}

/// The backups as the admin page shows them: each complete set in the daemon's backup place
/// summed up (shards, bytes, whether every file it names is there), and the point-in-time
/// archive's lag on each shard being written. Answers on a daemon without `--backup-dir` or
/// `--archive-dir` too, saying so.
#[utoipa::path(
    get,
    path = "/api/sharding/backups/overview",
    tag = "sharding",
    operation_id = "getBackupOverview",
    responses(
        (status = 200, description = "The sets and the archive's lag", body = BackupOverview),
    )
)]
pub(crate) async fn get_overview(State(state): State<ServerState>) -> Result<axum::Json<BackupOverview>, ApiError> {
    Ok(axum::Json(overview(&state).await?))
}
