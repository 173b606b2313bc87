//! A backup set's manifest: what the set holds and where, written last and atomically, so that
//! a manifest that can be read names a complete set.

use std::io::Write as _;
use std::path::{Path, PathBuf};

pub use crate::data::{BackupManifest, BackupSetSummary, MANIFEST_FORMAT, ShardCopy, StoredFile};
use crate::error::{Error, Result};

/// The folder of a backup place that holds the manifests, one file per set.
pub(super) const SETS_DIR: &str = "sets";

impl BackupManifest {
    /// Bytes this set copied (the copies it references from earlier sets left out).
    pub fn copied_bytes(&self) -> u64 {
        self.shards.iter().filter(|s| s.copied).map(|s| s.bytes).sum()
    }

    /// The set summed up, with whether every file it names is in `place` at its recorded size
    /// (sizes only: [`verify_backup`](super::verify_backup) reads the checksums).
    pub fn summary(&self, place: &Path) -> BackupSetSummary {
        let present = |file: &str, bytes: u64| std::fs::metadata(place.join(file)).is_ok_and(|m| m.len() == bytes);
        let mut missing: Vec<String> = self
            .shards
            .iter()
            .filter(|copy| !present(&copy.file, copy.bytes))
            .map(|copy| copy.shard_id.clone())
            .collect();
        if !present(&self.catalog.file, self.catalog.bytes) {
            missing.push("catalog".to_owned());
        }
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        BackupSetSummary {
            id: self.id.clone(),
            map_version: self.map_version,
            taken_at: self.taken_at.clone(),
            shards: count(self.shards.len()),
            copied: count(self.shards.iter().filter(|s| s.copied).count()),
            bytes: self.shards.iter().map(|s| s.bytes).sum::<u64>() + self.catalog.bytes,
            copied_bytes: self.copied_bytes(),
            complete: missing.is_empty(),
            missing,
        }
    }

    /// Reads the manifest at `path`.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            what: format!("the backup manifest {}", path.display()),
            source,
        })?;
        let manifest: Self = serde_json::from_str(&text).map_err(|err| {
            Error::invalid_argument("backup manifest", format!("{} does not parse: {err}", path.display()))
        })?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(Error::invalid_argument(
                "backup manifest",
                format!(
                    "{}: its format is '{}', not '{MANIFEST_FORMAT}'",
                    path.display(),
                    manifest.format
                ),
            ));
        }
        Ok(manifest)
    }

    /// Writes the manifest as `sets/ID.json` under `place`: to a temporary file first, flushed,
    /// then renamed into place and the folder flushed, so a reader never sees half a manifest.
    pub(super) fn publish(&self, place: &Path) -> Result<PathBuf> {
        let sets = place.join(SETS_DIR);
        let io = |what: String| move |source| Error::Io { what, source };
        std::fs::create_dir_all(&sets).map_err(io(format!("the folder {}", sets.display())))?;
        let path = sets.join(format!("{}.json", self.id));
        let temporary = sets.join(format!(".{}.json.partial", self.id));
        let text = serde_json::to_vec_pretty(self).map_err(|source| Error::Json {
            what: "a backup manifest",
            source,
        })?;
        let mut file = std::fs::File::create(&temporary).map_err(io(format!("{}", temporary.display())))?;
        file.write_all(&text)
            .and_then(|()| file.sync_all())
            .map_err(io(format!("{}", temporary.display())))?;
        std::fs::rename(&temporary, &path).map_err(io(format!("{}", path.display())))?;
        sync_dir(&sets)?;
        Ok(path)
    }
}

/// Flushes a folder's entries (a rename or a new file in it) to disk.
pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| Error::Io {
            what: format!("the folder {}", dir.display()),
            source,
        })
}

/// The complete sets in `place`, oldest first (partial manifests, being hidden files, are not
/// sets).
pub fn list_sets(place: &Path) -> Result<Vec<(PathBuf, BackupManifest)>> {
    let sets = place.join(SETS_DIR);
    let entries = match std::fs::read_dir(&sets) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(Error::Io {
                what: format!("the folder {}", sets.display()),
                source,
            });
        }
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        found.push((path.clone(), BackupManifest::read(&path)?));
    }
    found.sort_by(|a, b| (&a.1.taken_at, &a.1.id).cmp(&(&b.1.taken_at, &b.1.id)));
    Ok(found)
}

/// When the newest complete set in `place` was published (its manifest's modification time);
/// `None` when the place holds no set.
pub fn last_published(place: &Path) -> Result<Option<std::time::SystemTime>> {
    let sets = place.join(SETS_DIR);
    let entries = match std::fs::read_dir(&sets) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Io {
                what: format!("the folder {}", sets.display()),
                source,
            });
        }
    };
    Ok(entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            !name.starts_with('.') && name.ends_with(".json")
        })
        .filter_map(|entry| entry.metadata().and_then(|meta| meta.modified()).ok())
        .max())
}
