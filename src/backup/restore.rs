//! Checking a backup set (every checksum, every file opens, the catalog validates) and bringing
//! it back: shard files and a master in an empty folder, then atomic recovery, so that no
//! transaction is left half applied.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::manifest::{BackupManifest, SETS_DIR, list_sets};
use super::objects::digest;
use crate::catalog::{Catalog, CatalogExport, CatalogLocation};
use crate::client::{AtomicResolution, ShardedClient, ShardedClientOptions};
use crate::engine::EngineConfig;
use crate::engine::backup::check_copy;
use crate::error::{Error, Result};
use crate::map::{ShardMap, ShardingOptions};
use crate::schema::DatabaseSchema;

/// What [`verify_backup`] found: a set every file of which is intact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifiedSet {
    /// The set.
    pub id: String,
    /// The map version it holds.
    pub map_version: u64,
    /// Shard files checked.
    pub shards: usize,
    /// Bytes checked.
    pub bytes: u64,
}

/// What [`restore_backup`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoredSet {
    /// The set.
    pub id: String,
    /// Where the catalog was written: the master file, or the etcd prefix's URL.
    pub master: String,
    /// Shard files written.
    pub shards: usize,
    /// What atomic recovery finished after the files were in place.
    pub recovery: AtomicResolution,
}

/// Where a restore puts a keyspace: its shard files in a folder, and its catalog either as
/// `master.db` in that folder or imported into an empty etcd prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreTarget {
    shard_dir: PathBuf,
    catalog: Option<CatalogLocation>,
}

impl RestoreTarget {
    /// Shard files and `master.db` in `dir`, an empty or missing folder.
    pub fn folder(dir: impl Into<PathBuf>) -> Self {
        Self {
            shard_dir: dir.into(),
            catalog: None,
        }
    }

    /// The catalog imported into `catalog`, an etcd prefix that must hold no key, and the shard
    /// files in `shard_dir`, an empty or missing folder, which the restored maps name by their
    /// absolute paths. A master file is refused here: that is [`folder`](Self::folder).
    pub fn catalog(catalog: CatalogLocation, shard_dir: impl Into<PathBuf>) -> Result<Self> {
        if let CatalogLocation::File(path) = &catalog {
            return Err(Error::invalid_argument(
                "restore target",
                format!(
                    "{} is a folder, not a catalog URL: restore into a folder alone, or name an etcd prefix \
                     (etcd://HOST:PORT/PREFIX) and a folder for the shard files",
                    path.display()
                ),
            ));
        }
        Ok(Self {
            shard_dir: shard_dir.into(),
            catalog: Some(catalog),
        })
    }

    /// The folder the shard files go into.
    pub fn shard_dir(&self) -> &Path {
        &self.shard_dir
    }

    /// Refuses a target that is not empty: the shard folder, and the etcd prefix when there is
    /// one (any key under it).
    pub(super) async fn refuse_non_empty(&self) -> Result<()> {
        refuse_non_empty(&self.shard_dir)?;
        if let Some(location) = &self.catalog
            && Catalog::open_location(location.clone()).await?.holds_anything().await?
        {
            return Err(Error::invalid_argument(
                "restore target",
                format!("{location} is not empty: restore into an etcd prefix that holds no key"),
            ));
        }
        Ok(())
    }

    /// What the restored maps name each shard's file by, from its file name in the shard
    /// folder: the name itself beside `master.db`, the absolute path for a catalog elsewhere.
    pub(super) fn data_sources(&self, names: &HashMap<String, String>) -> Result<HashMap<String, String>> {
        if self.catalog.is_none() {
            return Ok(names.clone());
        }
        let dir = std::fs::canonicalize(&self.shard_dir).map_err(|source| Error::Io {
            what: format!("the folder {}", self.shard_dir.display()),
            source,
        })?;
        Ok(names
            .iter()
            .map(|(id, name)| (id.clone(), dir.join(name).display().to_string()))
            .collect())
    }
}

/// The backup place and manifest `set` names: a manifest file, or a backup place (its newest
/// set).
pub fn locate_set(set: &Path) -> Result<(PathBuf, PathBuf)> {
    if set.is_dir() {
        let (manifest, _) = list_sets(set)?.pop().ok_or_else(|| Error::NotFound {
            what: "backup set",
            name: set.display().to_string().into(),
        })?;
        return Ok((set.to_owned(), manifest));
    }
    if !set.is_file() {
        return Err(Error::NotFound {
            what: "backup set",
            name: set.display().to_string().into(),
        });
    }
    let place = set
        .parent()
        .filter(|sets| sets.file_name().is_some_and(|n| n == SETS_DIR))
        .and_then(Path::parent)
        .ok_or_else(|| {
            Error::invalid_argument(
                "backup set",
                format!("{} is not in a backup place's sets/ folder", set.display()),
            )
        })?;
    Ok((place.to_owned(), set.to_owned()))
}

/// Checks the set `set` names (see [`locate_set`]): every file is there with its checksum and
/// size, every shard copy opens as SQLite, passes `PRAGMA quick_check` and has its recorded
/// schema fingerprint, and the catalog parses and its map validates. [`Error::BackupDamaged`]
/// names each file that is not.
pub async fn verify_backup(set: &Path) -> Result<VerifiedSet> {
    let set = set.to_owned();
    tokio::task::spawn_blocking(move || verify_blocking(&set).map(|(verified, _, _)| verified))
        .await
        .map_err(|_| Error::Cancelled)?
}

pub(super) fn verify_blocking(set: &Path) -> Result<(VerifiedSet, BackupManifest, CatalogExport)> {
    let (place, path) = locate_set(set)?;
    let manifest = BackupManifest::read(&path)?;
    let mut problems = Vec::new();
    let catalog = &manifest.catalog;
    let export = match intact(&place, "the catalog", &catalog.file, &catalog.sha256, catalog.bytes) {
        Ok(()) => read_export(&place.join(&catalog.file), &manifest, &mut problems),
        Err(problem) => {
            problems.push(problem);
            None
        }
    };
    let mut bytes = catalog.bytes;
    for copy in &manifest.shards {
        let what = format!("shard '{}'", copy.shard_id);
        if let Err(problem) = intact(&place, &what, &copy.file, &copy.sha256, copy.bytes) {
            problems.push(problem);
            continue;
        }
        bytes += copy.bytes;
        match check_copy(&place.join(&copy.file)) {
            Err(err) => problems.push(format!("{what}: {} does not open as SQLite: {err}", copy.file)),
            Ok(rows) => {
                if DatabaseSchema::from_master_rows(rows).fingerprint() != copy.schema_fingerprint {
                    problems.push(format!("{what}: {} has another schema than recorded", copy.file));
                }
            }
        }
    }
    match export {
        Some(export) if problems.is_empty() => Ok((
            VerifiedSet {
                id: manifest.id.clone(),
                map_version: manifest.map_version,
                shards: manifest.shards.len(),
                bytes,
            },
            manifest,
            export,
        )),
        _ => Err(Error::BackupDamaged {
            set: path.display().to_string().into(),
            problems: problems.into(),
        }),
    }
}

/// `Ok` when `file` under `place` is there with its recorded checksum and size; else what is
/// wrong, naming `what`.
fn intact(place: &Path, what: &str, file: &str, sha256: &str, bytes: u64) -> Result<(), String> {
    match digest(&place.join(file)) {
        Err(_) => Err(format!("{what}: {file} is missing")),
        Ok((found, size)) if found != sha256 || size != bytes => {
            Err(format!("{what}: {file} is damaged (its checksum does not match)"))
        }
        Ok(_) => Ok(()),
    }
}

fn read_export(path: &Path, manifest: &BackupManifest, problems: &mut Vec<String>) -> Option<CatalogExport> {
    let parsed = std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<CatalogExport>(&bytes).ok());
    let Some(export) = parsed else {
        problems.push("the catalog: it does not parse as a catalog export".to_owned());
        return None;
    };
    match export.active_map.clone().map(ShardMap::new) {
        Some(Ok(map)) if map.version() == manifest.map_version => Some(export),
        Some(Ok(map)) => {
            problems.push(format!(
                "the catalog: its map is version {}, the manifest says {}",
                map.version(),
                manifest.map_version
            ));
            None
        }
        Some(Err(err)) => {
            problems.push(format!("the catalog: its map does not validate: {err}"));
            None
        }
        None => {
            problems.push("the catalog: it holds no active map".to_owned());
            None
        }
    }
}

/// Restores the set `set` names into `target`, a folder that must be empty or missing: each
/// shard's file (under its original file name) and `master.db` holding the catalog, its maps
/// naming those files; then finishes every atomic transaction the cut caught half done (those
/// decided are applied, those undecided aborted). The set is verified first and refused, with
/// what is missing or damaged named, when it is not intact.
pub async fn restore_backup(set: &Path, target: &Path) -> Result<RestoredSet> {
    restore_backup_into(set, &RestoreTarget::folder(target)).await
}

/// [`restore_backup`] into any [`RestoreTarget`]: with an etcd prefix, the catalog is imported
/// there (the prefix must hold no key) and the shard files written into the target's folder.
pub async fn restore_backup_into(set: &Path, target: &RestoreTarget) -> Result<RestoredSet> {
    target.refuse_non_empty().await?;
    let (set_path, target_owned) = (set.to_owned(), target.clone());
    let (manifest, export) = tokio::task::spawn_blocking(move || -> Result<_> {
        let (_, manifest, export) = verify_blocking(&set_path)?;
        let (place, _) = locate_set(&set_path)?;
        let export = write_files(&place, &manifest, export, &target_owned)?;
        Ok((manifest, export))
    })
    .await
    .map_err(|_| Error::Cancelled)??;
    let (master, recovery) = finish(target, &export).await?;
    Ok(RestoredSet {
        id: manifest.id,
        master,
        shards: manifest.shards.len(),
        recovery,
    })
}

/// Writes the catalog holding `export` where `target` says (`master.db` in its folder, or its
/// etcd prefix) and runs atomic recovery over the restored keyspace; returns where the catalog
/// is and what recovery finished.
pub(super) async fn finish(target: &RestoreTarget, export: &CatalogExport) -> Result<(String, AtomicResolution)> {
    let location = target
        .catalog
        .clone()
        .unwrap_or_else(|| CatalogLocation::File(target.shard_dir.join("master.db")));
    Catalog::open_location(location.clone()).await?.import(export).await?;
    // Nobody will come back to finish what was undecided at the cut: abort it now.
    let options = ShardedClientOptions::with_engine(EngineConfig {
        atomic_abandon_age: std::time::Duration::ZERO,
        ..EngineConfig::default()
    });
    let master = location.to_string();
    let restored = ShardedClient::open_with(Path::new(&master), options).await?;
    let recovery = restored.atomic_recovery().resolve().await?;
    drop(restored);
    Ok((master, recovery))
}

fn refuse_non_empty(target: &Path) -> Result<()> {
    let first = match std::fs::read_dir(target) {
        Ok(mut entries) => entries.next(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(Error::Io {
                what: format!("the restore target {}", target.display()),
                source,
            });
        }
    };
    match first {
        Some(_) => Err(Error::invalid_argument(
            "restore target",
            format!("{} is not empty: restore into an empty or new folder", target.display()),
        )),
        None => Ok(()),
    }
}

/// Copies each shard file into `target`'s folder and returns the export with its maps naming
/// them.
fn write_files(
    place: &Path,
    manifest: &BackupManifest,
    mut export: CatalogExport,
    restore: &RestoreTarget,
) -> Result<CatalogExport> {
    let target = restore.shard_dir();
    let io = |what: String| move |source| Error::Io { what, source };
    std::fs::create_dir_all(target).map_err(io(target.display().to_string()))?;
    let names = file_names(&export);
    for copy in &manifest.shards {
        let name = names
            .get(&copy.shard_id)
            .cloned()
            .unwrap_or_else(|| format!("{}.db", copy.shard_id));
        let to = target.join(&name);
        std::fs::copy(place.join(&copy.file), &to)
            .and_then(|_| std::fs::File::open(&to)?.sync_all())
            .map_err(io(to.display().to_string()))?;
    }
    rename_files(&mut export, &restore.data_sources(&names)?);
    super::manifest::sync_dir(target)?;
    Ok(export)
}

/// Points the maps of `export` at the restored files' `names`.
pub(super) fn rename_files(export: &mut CatalogExport, names: &HashMap<String, String>) {
    let rename = |map: &mut ShardingOptions| {
        for shard in &mut map.shards {
            if shard.data_source.is_some() {
                shard.data_source = names.get(&shard.shard_id).cloned();
            }
        }
    };
    if let Some(map) = export.active_map.as_mut() {
        rename(map);
    }
    if let Some(map) = export.pending_map.as_mut() {
        rename(map);
    }
}

/// Each file shard's name in the restored folder: its original file name, or `ID.db` when two
/// shards' files share a name.
pub(super) fn file_names(export: &CatalogExport) -> HashMap<String, String> {
    let mut names = HashMap::new();
    let mut taken = HashSet::from(["master.db".to_owned()]);
    let maps = export.active_map.iter().chain(export.pending_map.iter());
    for shard in maps.flat_map(|m| m.shards.iter()) {
        let Some(source) = &shard.data_source else { continue };
        if names.contains_key(&shard.shard_id) {
            continue;
        }
        let original = Path::new(source)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = if !original.is_empty() && taken.insert(original.clone()) {
            original
        } else {
            let fallback = format!("{}.db", shard.shard_id);
            taken.insert(fallback.clone());
            fallback
        };
        names.insert(shard.shard_id.clone(), name);
    }
    names
}
