//! Where a catalog's records live: the seam between what the catalog means (maps, versions,
//! compare-and-set, history, migration state) and how one store keeps it.
//!
//! [`CatalogStore`] is that seam. Two stores implement it: [`FileStore`], the SQLite master file
//! (the embedded default), and `EtcdStore` (feature `etcd`), a key prefix in an etcd cluster. Each write that the catalog
//! makes conditional on what it read (a pending map written over the versions it validated
//! against, an activation of the pending map it checked) is one atomic step in the store: one
//! SQLite transaction, or one etcd transaction comparing revisions. Either it all happens or
//! none of it does.

pub(super) mod file;
mod file_changes;
mod file_rows;
mod file_runner;
mod file_upgrade;

#[cfg(feature = "etcd")]
pub(crate) mod etcd;

pub(super) use file::FileStore;

use async_trait::async_trait;

use crate::data::{Audit, CatalogHistoryEntry};
use crate::error::{Error, Result};
use crate::map::ShardingOptions;
use crate::map::records::{MapRecords, RecordChange};

/// A map as a store holds it.
#[derive(Debug, Clone)]
pub(crate) struct StoredMap {
    /// The map, read back from its records.
    pub options: ShardingOptions,
    /// Its `mapVersion`.
    pub version: u64,
}

/// The active and pending maps, read together.
#[derive(Debug, Clone, Default)]
pub(crate) struct StoredState {
    /// The active map, if any.
    pub active: Option<StoredMap>,
    /// The pending map, if any.
    pub pending: Option<StoredMap>,
    /// The store's own revision of the version record (etcd's `mod_revision`; 0 in a file, or
    /// when there is none), which conditional writes compare.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub revision: i64,
    /// Where the records of these maps live (etcd's generation; empty in a file).
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub generation: String,
    /// What a seed or an import wrote last (a file; empty in etcd, whose revision says it).
    pub epoch: String,
}

impl StoredState {
    /// The versions these maps were read at.
    pub(crate) fn versions(&self) -> StoredVersions {
        StoredVersions {
            active: self.active.as_ref().map(|map| map.version),
            pending: self.pending.as_ref().map(|map| map.version),
            revision: self.revision,
            generation: self.generation.clone(),
            epoch: self.epoch.clone(),
        }
    }
}

/// Which maps a store holds, read without them: equal versions hold equal maps, and a
/// conditional write compares them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StoredVersions {
    /// The active map's version.
    pub active: Option<u64>,
    /// The pending map's version.
    pub pending: Option<u64>,
    /// The store's revision of the version record (etcd's `mod_revision`; 0 in a file).
    pub revision: i64,
    /// Where the records live (etcd's generation; empty in a file).
    pub generation: String,
    /// What the last seed or import wrote (a file; empty in etcd).
    pub epoch: String,
}

impl StoredVersions {
    /// The newest version: the pending map's, else the active map's.
    pub(crate) fn newest(&self) -> Option<u64> {
        self.pending.or(self.active)
    }
}

/// A map to write.
#[derive(Debug, Clone)]
pub(crate) struct NewMap {
    pub keyspace: String,
    pub version: u64,
    pub options: ShardingOptions,
}

impl NewMap {
    /// The map `options` as a store writes it.
    pub(crate) fn of(options: &ShardingOptions) -> Self {
        Self {
            keyspace: options.keyspace.trim().to_owned(),
            version: u64::try_from(options.map_version).unwrap_or(0),
            options: options.clone(),
        }
    }
}

/// A catalog history entry to append (its time is the store's write time).
#[derive(Debug, Clone)]
pub(crate) struct HistoryRow {
    pub keyspace: String,
    pub version: u64,
    /// Who made the change and why.
    pub audit: Audit,
    pub metadata_only: bool,
}

impl HistoryRow {
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn entry(&self, applied_utc: String) -> CatalogHistoryEntry {
        CatalogHistoryEntry {
            applied_utc,
            keyspace: self.keyspace.clone(),
            map_version: self.version,
            audit: self.audit.clone(),
            metadata_only_ownership_change: self.metadata_only,
        }
    }
}

/// A migration's state to write: its id, keyspace, status text, time and JSON payload.
#[derive(Debug, Clone)]
pub(crate) struct ReshardRecord<'a> {
    pub id: &'a str,
    pub keyspace: &'a str,
    pub status: String,
    pub updated_utc: &'a str,
    pub payload: String,
}

/// What a catalog store does, one read or one atomic write of the catalog's records each: the
/// maps, their history, data-move checkpoints and history, runner claims and, where the store
/// has one, a watch of the map records. [`FileStore`] and `EtcdStore` implement it; a store of
/// another kind implements these methods and nothing outside this folder changes.
#[async_trait]
pub(crate) trait CatalogStore: std::fmt::Debug + Send + Sync {
    /// Whether the catalog's records exist (a seeded catalog).
    async fn has_schema(&self) -> Result<bool>;

    /// Whether the store holds anything at all: the catalog's records, or for a store shared
    /// with others (an etcd prefix), any key under its prefix.
    async fn holds_anything(&self) -> Result<bool> {
        self.has_schema().await
    }

    /// Creates the catalog's records if missing.
    async fn ensure_schema(&self) -> Result<()>;

    /// The active and pending maps.
    async fn state(&self) -> Result<StoredState>;

    /// The active map's version, read cheaply.
    async fn active_version(&self) -> Result<Option<u64>>;

    /// The versions of the stored maps, read without the maps; `None` without a map.
    async fn versions(&self) -> Result<Option<StoredVersions>>;

    /// [`active_version`](Self::active_version) on the calling thread, for blocking callers. A
    /// store whose changes reach clients through a watch answers `None`.
    fn active_version_blocking(&self) -> Result<Option<u64>>;

    /// Stores `map` as the active map, drops any pending map and appends `history`.
    async fn seed(&self, map: &NewMap, history: &HistoryRow) -> Result<()>;

    /// Writes the pending map of version `history.version`, the newest map with `changes`, and
    /// appends `history`, only if the stored maps are still those of `expected`. `false` when
    /// they are not (nothing written).
    async fn write_pending(
        &self,
        expected: &StoredVersions,
        changes: &[RecordChange],
        history: &HistoryRow,
    ) -> Result<bool>;

    /// Makes the pending map of `expected` active, drops it as pending and appends `history`,
    /// only if the stored maps are still those of `expected`. `false` when they are not.
    async fn activate(&self, expected: &StoredVersions, history: &HistoryRow) -> Result<bool>;

    /// The records of map version `version` as they were written (a stored version's map is
    /// rebuilt from the changes of each version up to it), or `None` when no record of it is
    /// stored.
    async fn map_at(&self, version: u64) -> Result<Option<MapRecords>>;

    /// What turns map version `from` into version `to`: for each record written by a version
    /// after `from` up to `to`, its newest value. `None` when the store cannot say (version
    /// `from` is no longer stored, as after a seed, or the store follows through its watch);
    /// the caller then reads the whole map.
    async fn changes_between(&self, _from: u64, _to: u64) -> Result<Option<Vec<RecordChange>>> {
        Ok(None)
    }

    /// What turns the newest map of `held` into the newest map of `now` (the same catalog read
    /// later): for each record written since, its newest value. `None` when the store cannot
    /// say; the caller then reads the maps whole.
    async fn changes_since(&self, held: &StoredVersions, now: &StoredVersions) -> Result<Option<Vec<RecordChange>>> {
        match (held.newest(), now.newest()) {
            (Some(from), Some(to)) => self.changes_between(from, to).await,
            _ => Ok(None),
        }
    }

    /// Catalog history, newest first.
    async fn history(&self) -> Result<Vec<CatalogHistoryEntry>>;

    /// Writes a migration's checkpoint (replacing the previous one).
    async fn save_checkpoint(&self, record: &ReshardRecord<'_>) -> Result<()>;

    /// Writes a migration's final checkpoint and appends it to the migration history, atomically.
    async fn record_end(&self, record: &ReshardRecord<'_>) -> Result<()>;

    /// The JSON checkpoint of migration `id`.
    async fn checkpoint(&self, id: &str) -> Result<Option<String>>;

    /// Every migration's JSON checkpoint, most recently updated first.
    async fn checkpoints(&self) -> Result<Vec<String>>;

    /// The migration history as JSON, newest first.
    async fn migration_history(&self) -> Result<Vec<String>>;

    /// Appends catalog history entries (given newest first) as they are, times included.
    async fn append_history(&self, entries: &[CatalogHistoryEntry]) -> Result<()>;

    /// Appends migration history records (given newest first).
    async fn append_migration_history(&self, payloads: &[String]) -> Result<()>;

    /// Writes the active map, the pending map if any, and `history`, in one atomic write.
    async fn import_maps(&self, active: &NewMap, pending: Option<&NewMap>, history: &HistoryRow) -> Result<()>;

    /// Claims migration `id` for this runner, or refuses with [`Error::ReshardRunning`]
    /// (naming the holder) while another runner holds it.
    ///
    /// [`Error::ReshardRunning`]: crate::Error::ReshardRunning
    async fn claim_runner(&self, id: &str) -> Result<Box<dyn RunnerClaim>>;

    /// Whether other processes' activations reach this store's watchers without polling.
    fn is_watched(&self) -> bool {
        false
    }

    /// The active and pending maps, and a watch of the map records that reports every change
    /// after them; a store without a watch refuses.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    async fn watch_maps(&self) -> Result<(StoredState, MapWatch)> {
        Err(Error::Catalog {
            reason: "a master file has no watch; its version is polled".to_owned(),
        })
    }
}

/// A runner's hold on one migration in a store, released when dropped (in the background, on
/// the current runtime) or by [`release`](Self::release).
#[async_trait]
pub(crate) trait RunnerClaim: std::fmt::Debug + Send + Sync {
    /// Releases the claim now, waiting for the store to forget it.
    async fn release(self: Box<Self>);
}

/// What a watch of the map records reports.
#[derive(Debug)]
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
pub(crate) enum MapStep {
    /// The active map is now version `version`; `changes` are the records that turn the map
    /// the watch last reported (or began with) into it.
    Activated { version: u64, changes: Vec<RecordChange> },
    /// The records moved where the watch does not follow them (a seed, a large change, a
    /// history compacted away): read the whole map again.
    Reload,
}

/// What a store's watch of the map records does.
#[async_trait]
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
pub(crate) trait MapChanges: std::fmt::Debug + Send {
    /// Waits for the next change of the active map. An error means the watch ended (the store
    /// went away or canceled it); open a new one.
    async fn changed(&mut self) -> Result<MapStep>;
}

/// An open watch of a store's map records (see [`CatalogStore::watch_maps`]).
#[derive(Debug)]
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
pub(crate) struct MapWatch(pub(super) Box<dyn MapChanges>);

#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
impl MapWatch {
    /// Waits for the next change of the active map. An error means the watch ended; open a new
    /// one.
    pub async fn changed(&mut self) -> Result<MapStep> {
        self.0.changed().await
    }
}
