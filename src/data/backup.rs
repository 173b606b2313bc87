//! A backup set's manifest as every layer sees it: what a set holds and where (see
//! [`backup`](crate::backup) for taking, verifying and restoring sets). The types sit here so
//! that the daemon's answers and the remote clients that read them share one definition.

use serde::{Deserialize, Serialize};

/// What a manifest says it is.
pub const MANIFEST_FORMAT: &str = "shardlite-backup";

/// One backup set: the catalog at one map version and a copy of each shard file, all as of one
/// cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
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
    /// The catalog export (see `CatalogExport` (the catalog's export format)) at the cut.
    pub catalog: StoredFile,
    /// Each shard whose file existed at the cut, in map order.
    pub shards: Vec<ShardCopy>,
}

/// A file stored in a backup place, named by its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
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
    /// The schema fingerprint of the copy (see `DatabaseSchema::fingerprint`).
    pub schema_fingerprint: String,
    /// Whether this set copied the file (`false`: the copy of an earlier set is referenced,
    /// the shard being unchanged since).
    pub copied: bool,
    /// The source file's stamp when its snapshot began, when it can tell a later set that the
    /// file is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(value_type = Option<Object>))]
    pub source: Option<FileStamp>,
}

/// What a shard file looked like when its snapshot began.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileStamp {
    /// The absolute path of the file.
    pub path: String,
    /// Device and inode: a file replaced under the same name has another.
    pub identity: (u64, u64),
    /// The file's size and modification time (ns since the Unix epoch).
    pub file: (u64, i128),
    /// The WAL's size and modification time; `(0, 0)` when it has no frames or does not exist.
    pub wal: (u64, i128),
    /// The WAL index header (hex), read while the WAL has frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_index: Option<String>,
}

/// The daemon's backups as its admin page shows them: the sets in its backup place and the
/// point-in-time archive's lag on each file being written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackupOverview {
    /// Whether the daemon has a backup place (`serve --backup-dir`).
    pub backup_place: bool,
    /// The complete sets in the backup place, oldest first (empty without one).
    pub sets: Vec<BackupSetSummary>,
    /// Whether the daemon keeps a point-in-time archive (`serve --archive-dir`).
    pub archiving: bool,
    /// The archive's lag on each file being written now, by shard (empty when nothing is being
    /// written, or without an archive).
    pub archive_lag: Vec<ArchiveLagEntry>,
}

/// One backup set, summed up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackupSetSummary {
    /// The set's name.
    pub id: String,
    /// The map version of its catalog.
    pub map_version: u64,
    /// When its cut was taken (RFC 3339, UTC).
    pub taken_at: String,
    /// The shards it holds a copy of.
    pub shards: u64,
    /// The shards it copied (the others reference an earlier set's copy).
    pub copied: u64,
    /// The size of every file it names: its shard copies and its catalog.
    pub bytes: u64,
    /// The bytes it copied itself.
    pub copied_bytes: u64,
    /// Whether every file it names is in the backup place at its recorded size (`backup verify`
    /// also reads every checksum).
    pub complete: bool,
    /// What is missing or has another size: shard ids, and `catalog` for the catalog export.
    pub missing: Vec<String>,
}

/// The point-in-time archive's lag on one file being written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ArchiveLagEntry {
    /// The shard whose file it is, or `(master)` for the master catalog.
    pub shard: String,
    /// How long its oldest transaction not yet in the archive has waited, in seconds (0 when
    /// the archive holds every one).
    pub lag_seconds: f64,
}
