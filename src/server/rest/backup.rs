//! Backup endpoints: `POST /api/sharding/backups` takes a backup set of the served keyspace into
//! the daemon's backup place (`serve --backup-dir`), `GET /api/sharding/backups` lists the sets
//! there (admin scope, both). The place is the daemon's own setting: a client never names a
//! folder on the daemon's disk.

use std::path::PathBuf;

use axum::extract::State;

use super::error::{ApiError, Problem};
use crate::backup::{create_backup, list_sets};
use crate::data::BackupManifest;
use crate::error::Error;
use crate::server::ServerState;

/// The daemon's backup place, or the error saying it has none.
pub(crate) fn backup_place(state: &ServerState) -> Result<PathBuf, Error> {
    state.config().backup_dir.clone().ok_or_else(|| {
        Error::invalid_argument(
            "backup",
            "this daemon takes no backup sets: start it with `serve --backup-dir DIR`",
        )
    })
}

/// Takes a backup set into `state`'s backup place; runs to its end even if the caller goes.
pub(crate) async fn take_backup(state: &ServerState) -> Result<BackupManifest, Error> {
    let place = backup_place(state)?;
    let sharded = state.sharded().ok_or(Error::NotSharded)?.clone();
    let task = tokio::spawn(async move { create_backup(&sharded, &place, &|_| {}).await });
    let (_, manifest) = task.await.map_err(|_| Error::Cancelled)??;
    Ok(manifest)
}

/// The complete sets in `state`'s backup place, oldest first.
pub(crate) async fn backup_sets(state: &ServerState) -> Result<Vec<BackupManifest>, Error> {
    let place = backup_place(state)?;
    let sets = tokio::task::spawn_blocking(move || list_sets(&place))
        .await
        .map_err(|_| Error::Cancelled)??;
    Ok(sets.into_iter().map(|(_, manifest)| manifest).collect())
}

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
