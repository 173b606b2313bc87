//! Backup sets taken by the daemon into its own backup place (`serve --backup-dir`), for the
//! REST and gRPC surfaces alike.

use std::path::PathBuf;

use crate::backup::{create_backup, list_sets};
use crate::data::BackupManifest;
use crate::error::Error;
use crate::server::ServerState;

/// The daemon's backup place, or the error saying it has none.
fn backup_place(state: &ServerState) -> Result<PathBuf, Error> {
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
