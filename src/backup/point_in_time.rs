//! Restoring a keyspace as it was at a moment: a backup set taken before it, and the
//! point-in-time archive (see [`engine::archive`](crate::engine::archive)) for every file
//! written since, the master catalog included.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::manifest::BackupManifest;
use super::restore::{RestoreTarget, RestoredSet, file_names, finish, locate_set, rename_files, verify_blocking};
use crate::catalog::{Catalog, CatalogExport};
use crate::engine::archive::{archived_files, rebuild_as_at};
use crate::error::{Error, Result};
use crate::map::resolve_data_source;

/// Parses a moment given as RFC 3339 (`2026-12-03T12:00:00.250Z`) into milliseconds since the
/// Unix epoch.
pub fn parse_moment(text: &str) -> Result<u64> {
    let moment = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).map_err(|err| {
        Error::invalid_argument(
            "restore time",
            format!("'{text}' is not an RFC 3339 time such as 2026-12-03T12:00:00.250Z: {err}"),
        )
    })?;
    u64::try_from(moment.unix_timestamp_nanos() / 1_000_000)
        .map_err(|_| Error::invalid_argument("restore time", format!("'{text}' is before 1970")))
}

/// Restores the keyspace as it was at `at_ms` (milliseconds since the Unix epoch) into
/// `target`, an empty or missing folder: from the set `set` names (taken at or before that
/// moment, verified first) and the archive in `archive`. Each file the archive began to follow
/// by then (shards and master catalog) is rebuilt from it as at that moment; every other shard
/// comes from the set, having had no write since. Atomic recovery runs last, as after
/// [`restore_backup`](super::restore_backup).
pub async fn restore_backup_as_at(set: &Path, archive: &Path, at_ms: u64, target: &Path) -> Result<RestoredSet> {
    restore_backup_as_at_into(set, archive, at_ms, &RestoreTarget::folder(target)).await
}

/// [`restore_backup_as_at`] into any [`RestoreTarget`] (an etcd prefix for the catalog, say).
pub async fn restore_backup_as_at_into(
    set: &Path,
    archive: &Path,
    at_ms: u64,
    target: &RestoreTarget,
) -> Result<RestoredSet> {
    target.refuse_non_empty().await?;
    let (set_path, archive_dir) = (set.to_owned(), archive.to_owned());
    let target_path = target.shard_dir().to_owned();
    let (manifest, export, files, master) = tokio::task::spawn_blocking(move || -> Result<_> {
        let (_, manifest, export) = verify_blocking(&set_path)?;
        let taken = parse_moment(&manifest.taken_at)?;
        if taken > at_ms {
            return Err(Error::invalid_argument(
                "backup set",
                format!(
                    "set {} was taken at {}, after the time asked for: restore from an older set",
                    manifest.id, manifest.taken_at
                ),
            ));
        }
        let files = archived_files(&archive_dir)?;
        std::fs::create_dir_all(&target_path).map_err(|source| Error::Io {
            what: target_path.display().to_string(),
            source,
        })?;
        let master = rebuild_catalog(&files, at_ms, &target_path)?;
        Ok((manifest, export, files, master))
    })
    .await
    .map_err(|_| Error::Cancelled)??;
    let (rebuilt, master_path) = master;
    let export = match &rebuilt {
        Some(rebuilt) => {
            let export = Catalog::open(rebuilt).await?.export().await?;
            let _ = std::fs::remove_file(rebuilt);
            export
        }
        None => export,
    };
    let place = locate_set(set)?.0;
    let (restore, archive_files) = (target.clone(), files);
    let (export, shards) = tokio::task::spawn_blocking(move || {
        let written = write_shards(
            &place,
            &manifest,
            &archive_files,
            master_path.as_deref(),
            at_ms,
            export,
            &restore,
        )?;
        Ok::<_, Error>((written, manifest))
    })
    .await
    .map_err(|_| Error::Cancelled)??;
    let (export, count) = export;
    let (master, recovery) = finish(target, &export).await?;
    Ok(RestoredSet {
        id: shards.id,
        master,
        shards: count,
        recovery,
    })
}

/// Rebuilds the archived master catalog as at `at_ms` beside the target; returns the rebuilt
/// file (`None` when the master had no write archived by then) and the original master's path
/// (`None` when the archive never saw it).
fn rebuild_catalog(
    files: &[(PathBuf, crate::engine::archive::ArchivedFile)],
    at_ms: u64,
    target: &Path,
) -> Result<(Option<PathBuf>, Option<PathBuf>)> {
    let catalogs: Vec<_> = files.iter().filter(|(_, file)| file.catalog).collect();
    if catalogs.len() > 1 {
        return Err(Error::invalid_argument(
            "archive",
            "it holds more than one master catalog: give each keyspace's daemon an archive folder of its own",
        ));
    }
    let Some((folder, file)) = catalogs.first() else {
        return Ok((None, None));
    };
    let rebuilt = target.join(".master-as-at.db");
    let rebuilt = rebuild_as_at(folder, at_ms, &rebuilt)?.then_some(rebuilt);
    Ok((rebuilt, Some(PathBuf::from(&file.path))))
}

/// Writes each shard file of `export`'s maps into `target`: rebuilt from the archive when it
/// followed the file by `at_ms`, else copied from the set. Returns the export with its maps
/// naming the restored files, and the number of files written.
fn write_shards(
    place: &Path,
    manifest: &BackupManifest,
    files: &[(PathBuf, crate::engine::archive::ArchivedFile)],
    master: Option<&Path>,
    at_ms: u64,
    mut export: CatalogExport,
    restore: &RestoreTarget,
) -> Result<(CatalogExport, usize)> {
    let target = restore.shard_dir();
    let by_path: HashMap<&str, &PathBuf> = files.iter().map(|(folder, f)| (f.path.as_str(), folder)).collect();
    let copies: HashMap<&str, _> = manifest.shards.iter().map(|c| (c.shard_id.as_str(), c)).collect();
    let names = file_names(&export);
    let io = |what: String| move |source| Error::Io { what, source };
    let mut written = 0;
    let maps = export.active_map.iter().chain(export.pending_map.iter());
    let mut seen = std::collections::HashSet::new();
    for shard in maps.flat_map(|m| m.shards.iter()) {
        let (Some(source), Some(name)) = (&shard.data_source, names.get(&shard.shard_id)) else {
            continue;
        };
        if !seen.insert(shard.shard_id.clone()) {
            continue;
        }
        let copy = copies.get(shard.shard_id.as_str());
        let mut candidates: Vec<PathBuf> = copy
            .and_then(|c| c.source.as_ref())
            .map(|s| PathBuf::from(&s.path))
            .into_iter()
            .collect();
        if let Some(master) = master {
            candidates.push(resolve_data_source(master, source));
        }
        let to = target.join(name);
        let folder = candidates.iter().find_map(|p| {
            let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            by_path.get(p.to_string_lossy().as_ref()).copied()
        });
        if let Some(folder) = folder
            && rebuild_as_at(folder, at_ms, &to)?
        {
            written += 1;
            continue;
        }
        if let Some(copy) = copy {
            std::fs::copy(place.join(&copy.file), &to)
                .and_then(|_| std::fs::File::open(&to)?.sync_all())
                .map_err(io(to.display().to_string()))?;
            written += 1;
        }
    }
    rename_files(&mut export, &restore.data_sources(&names)?);
    super::manifest::sync_dir(target)?;
    Ok((export, written))
}
