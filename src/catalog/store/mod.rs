//! Where a catalog's records live: the seam between what the catalog means (maps, versions,
//! compare-and-set, history, migration state) and how one store keeps it.
//!
//! Two stores implement it: [`FileStore`], the SQLite master file (the embedded default), and
//! `EtcdStore` (feature `etcd`), a key prefix in an etcd cluster. Each write that the catalog
//! makes conditional on what it read (a pending map written over the versions it validated
//! against, an activation of the pending map it checked) is one atomic step in the store: one
//! SQLite transaction, or one etcd transaction comparing revisions. Either it all happens or
//! none of it does.

pub(super) mod file;

#[cfg(feature = "etcd")]
pub(crate) mod etcd;

pub(super) use file::FileStore;

use crate::data::{Audit, CatalogHistoryEntry};
use crate::error::Result;

/// A map as a store holds it.
#[derive(Debug, Clone)]
pub(crate) struct StoredMap {
    /// The map's JSON, as written.
    pub json: String,
    /// Its `mapVersion`.
    pub version: u64,
    /// The store's own revision of the record (etcd's `mod_revision`; 0 in a file), which
    /// conditional writes compare.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub revision: i64,
}

/// The active and pending maps, read together.
#[derive(Debug, Clone, Default)]
pub(crate) struct StoredState {
    /// The active map, if any.
    pub active: Option<StoredMap>,
    /// The pending map, if any.
    pub pending: Option<StoredMap>,
}

/// A map to write.
#[derive(Debug, Clone)]
pub(crate) struct NewMap {
    pub keyspace: String,
    pub version: u64,
    pub json: String,
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

/// The store behind a [`Catalog`](super::Catalog).
#[derive(Debug, Clone)]
pub(crate) enum Store {
    File(FileStore),
    #[cfg(feature = "etcd")]
    Etcd(etcd::EtcdStore),
}

/// Calls the same method on whichever store this is.
macro_rules! each {
    ($self:expr, $store:ident => $call:expr) => {
        match $self {
            Store::File($store) => $call,
            #[cfg(feature = "etcd")]
            Store::Etcd($store) => $call,
        }
    };
}

impl Store {
    /// Whether the catalog's records exist (a seeded catalog).
    pub async fn has_schema(&self) -> Result<bool> {
        each!(self, store => store.has_schema().await)
    }

    /// Creates the catalog's records if missing.
    pub async fn ensure_schema(&self) -> Result<()> {
        each!(self, store => store.ensure_schema().await)
    }

    /// The active and pending maps.
    pub async fn state(&self) -> Result<StoredState> {
        each!(self, store => store.state().await)
    }

    /// The active map's version, read cheaply.
    pub async fn active_version(&self) -> Result<Option<u64>> {
        each!(self, store => store.active_version().await)
    }

    /// Stores `map` as the active map, drops any pending map and appends `history`.
    pub async fn seed(&self, map: &NewMap, history: &HistoryRow) -> Result<()> {
        each!(self, store => store.seed(map, history).await)
    }

    /// Writes `map` as the pending map and appends `history`, only if the stored maps are still
    /// those of `expected`. `false` when they are not (nothing written).
    pub async fn write_pending(&self, expected: &StoredState, map: &NewMap, history: &HistoryRow) -> Result<bool> {
        each!(self, store => store.write_pending(expected, map, history).await)
    }

    /// Makes the pending map of `expected` active, drops it as pending and appends `history`,
    /// only if the stored maps are still those of `expected`. `false` when they are not.
    pub async fn activate(&self, expected: &StoredState, history: &HistoryRow) -> Result<bool> {
        each!(self, store => store.activate(expected, history).await)
    }

    /// Catalog history, newest first.
    pub async fn history(&self) -> Result<Vec<CatalogHistoryEntry>> {
        each!(self, store => store.history().await)
    }

    /// Writes a migration's checkpoint (replacing the previous one).
    pub async fn save_checkpoint(&self, record: &ReshardRecord<'_>) -> Result<()> {
        each!(self, store => store.save_checkpoint(record).await)
    }

    /// Writes a migration's final checkpoint and appends it to the migration history, atomically.
    pub async fn record_end(&self, record: &ReshardRecord<'_>) -> Result<()> {
        each!(self, store => store.record_end(record).await)
    }

    /// The JSON checkpoint of migration `id`.
    pub async fn checkpoint(&self, id: &str) -> Result<Option<String>> {
        each!(self, store => store.checkpoint(id).await)
    }

    /// Every migration's JSON checkpoint, most recently updated first.
    pub async fn checkpoints(&self) -> Result<Vec<String>> {
        each!(self, store => store.checkpoints().await)
    }

    /// The migration history as JSON, newest first.
    pub async fn migration_history(&self) -> Result<Vec<String>> {
        each!(self, store => store.migration_history().await)
    }

    /// Appends catalog history entries (given newest first) as they are, times included.
    pub async fn append_history(&self, entries: &[CatalogHistoryEntry]) -> Result<()> {
        each!(self, store => store.append_history(entries).await)
    }

    /// Appends migration history records (given newest first).
    pub async fn append_migration_history(&self, payloads: &[String]) -> Result<()> {
        each!(self, store => store.append_migration_history(payloads).await)
    }

    /// Writes the active map, the pending map if any, and `history`, in one atomic write.
    pub async fn import_maps(&self, active: &NewMap, pending: Option<&NewMap>, history: &HistoryRow) -> Result<()> {
        each!(self, store => store.import_maps(active, pending, history).await)
    }
}
