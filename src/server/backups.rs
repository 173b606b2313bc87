//! Backup sets taken by the daemon into its own backup place (`serve --backup-dir`), for the
//! REST and gRPC surfaces alike, and what the admin page and the metrics show of them and of the
//! point-in-time archive.

use std::path::PathBuf;
use std::time::Duration;

use crate::backup::{create_backup, list_sets};
use crate::data::{ArchiveLagEntry, BackupManifest, BackupOverview};
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

/// The label of the master catalog's file among the archive's lags (a shard id cannot hold
/// parentheses).
pub(crate) const MASTER_LABEL: &str = "(master)";

/// The sets in the backup place, summed up, and the archive's lag by shard.
pub(crate) async fn overview(state: &ServerState) -> Result<BackupOverview, Error> {
    let place = state.config().backup_dir.clone();
    let sets = match place.clone() {
        Some(place) => tokio::task::spawn_blocking(move || list_sets(&place))
            .await
            .map_err(|_| Error::Cancelled)??,
        None => Vec::new(),
    };
    let sets = sets
        .iter()
        .map(|(path, manifest)| {
            // `PLACE/sets/ID.json`: the place is two folders up.
            let place = path.parent().and_then(std::path::Path::parent).unwrap_or(path);
            manifest.summary(place)
        })
        .collect();
    let archive_lag = archive_lags(state)
        .unwrap_or_default()
        .into_iter()
        .map(|(shard, lag)| ArchiveLagEntry {
            shard,
            lag_seconds: lag.as_secs_f64(),
        })
        .collect();
    Ok(BackupOverview {
        backup_place: place.is_some(),
        sets,
        archiving: crate::engine::archive::is_archiving(),
        archive_lag,
    })
}

/// The point-in-time archive's lag on each file being written, by the id of the shard of the
/// active map whose file it is ([`MASTER_LABEL`] for the master catalog), ordered by label; a
/// file no shard of the active map names is left out. `None` without an archive.
pub(crate) fn archive_lags(state: &ServerState) -> Option<Vec<(String, Duration)>> {
    if !crate::engine::archive::is_archiving() {
        return None;
    }
    let map = state.sharded().map(crate::client::ShardedClient::map);
    let host_dir = state.host().and_then(|host| std::fs::canonicalize(host.dir()).ok());
    let mut lags: Vec<(String, Duration)> = crate::engine::archive::archive_lag()
        .into_iter()
        .filter_map(|lag| {
            let label = if lag.catalog {
                Some(MASTER_LABEL.to_owned())
            } else if let Some(map) = &map {
                map.shard_of_file(&lag.path)
            } else if let Some(dir) = &host_dir {
                // A data host's shard `ID` is the file `ID.db` in its folder.
                (lag.path.parent() == Some(dir.as_path()))
                    .then(|| lag.path.file_stem().map(|stem| stem.to_string_lossy().into_owned()))
                    .flatten()
            } else {
                // A plain database's metrics name its one file `database`.
                Some("database".to_owned())
            };
            label.map(|label| (label, lag.lag))
        })
        .collect();
    lags.sort_by(|a, b| a.0.cmp(&b.0));
    Some(lags)
}
