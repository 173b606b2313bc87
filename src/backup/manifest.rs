//! A backup set's manifest: what the set holds and where, written last and atomically, so that
//! a manifest that can be read names a complete set.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::stamp::FileStamp;
use crate::error::{Error, Result};

/// What a manifest says it is.
pub const MANIFEST_FORMAT: &str = "shardlite-backup";

/// The folder of a backup place that holds the manifests, one file per set.
pub(super) const SETS_DIR: &str = "sets";

/// One backup set: the catalog at one map version and a copy of each shard file, all as of one
/// cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackupManifest {
    /// Always [`MANIFEST_FORMAT`].
    pub format: String,
    /// The set's name, unique in its place (its manifest is `sets/ID.json`).
    pub id: String,
    /// The keyspace of the map.
    pub keyspace: String,
    /// The active map version at the cut.
    pub map_version: u64,
    /// When the cut was taken (RFC 3339, UTC).
    pub taken_at: String,
    /// How long the cut's fences held activations and atomic-commit decisions back, summed over
    /// its batches, in microseconds.
    pub fence_micros: u64,
    /// The longest single fence of the cut, in microseconds (0 in sets written before it was
    /// recorded).
    #[serde(default)]
    pub longest_fence_micros: u64,
    /// The catalog export (see [`CatalogExport`](crate::catalog::CatalogExport)) at the cut.
    pub catalog: StoredFile,
    /// Each shard whose file existed at the cut, in map order.
    pub shards: Vec<ShardCopy>,
}

/// A file stored in a backup place, named by its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoredFile {
    /// Its path under the backup place (`objects/ab/abcd…`).
    pub file: String,
    /// Its size.
    pub bytes: u64,
    /// SHA-256 of its content (hex).
    pub sha256: String,
}

/// One shard's copy in a set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShardCopy {
    /// The shard.
    pub shard_id: String,
    /// The copy's path under the backup place (`objects/ab/abcd…`).
    pub file: String,
    /// The copy's size.
    pub bytes: u64,
    /// SHA-256 of the copy (hex).
    pub sha256: String,
    /// The schema fingerprint of the copy (see [`DatabaseSchema::fingerprint`](crate::schema::DatabaseSchema::fingerprint)).
    pub schema_fingerprint: String,
    /// Whether this set copied the file (`false`: the copy of an earlier set is referenced,
    /// the shard being unchanged since).
    pub copied: bool,
    /// The source file's stamp when its snapshot began, when it can tell a later set that the
    /// file is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<FileStamp>,
}

impl BackupManifest {
    /// Bytes this set copied (the copies it references from earlier sets left out).
    pub fn copied_bytes(&self) -> u64 {
        self.shards.iter().filter(|s| s.copied).map(|s| s.bytes).sum()
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
