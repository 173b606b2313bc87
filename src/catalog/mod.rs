//! The catalog: the versioned shard map and everything about its changes.
//!
//! It stores the active map, a pending map (written by catalog updates and migrations,
//! activated on restart or by an activation request), catalog history, migration checkpoints and
//! migration history. It lives in a store (`store`): a SQLite master file, the embedded
//! default, or a key prefix in etcd ([`CatalogLocation`]). A master file is never a data shard
//! and never part of fan-out. Reading never creates anything: a store without records simply
//! has "no map".

mod directory;
mod directory_import;
mod update;

pub(crate) use update::diff_of_changes;
pub use update::{MapDiff, diff, validate};

mod export;
mod files;
mod location;
mod maps;
mod new_files;
mod reshard;
mod runner;
mod store;

pub use export::{CatalogExport, EXPORT_FORMAT};
pub use files::{check_shard_files, shard_file};
pub use location::{CatalogLocation, EtcdAddress};
pub use runner::{LEASE_SECONDS, ReshardClaim};
pub use store::file::CATALOG_SCHEMA_VERSION;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::data::{Audit, CatalogHistoryEntry};
use crate::error::{Error, Result};
use crate::map::records::{MapRecords, RecordChange};
use crate::map::{ShardMap, ShardingOptions};
#[cfg(feature = "etcd")]
pub(crate) use store::MapStep;
use store::{CatalogStore, FileStore, HistoryRow, NewMap, StoredState};

/// A handle to a catalog: a master file or a prefix in etcd.
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::catalog::Catalog;
///
/// let catalog = Catalog::open("data/master.db").await?;
/// let map = catalog.active_map().await?;
/// println!("keyspace {} at version {}", map.keyspace(), map.version());
/// for entry in catalog.history().await? {
///     println!("{} v{} by {:?}", entry.applied_utc, entry.map_version, entry.audit.operator);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Catalog {
    store: Arc<dyn CatalogStore>,
    location: CatalogLocation,
    /// What relative shard paths resolve against: the master file, or for a catalog without a
    /// file, a name in the working directory.
    anchor: PathBuf,
    /// The maps as this handle last read them (shared by its clones).
    maps: Arc<maps::MapsCache>,
}

impl Catalog {
    /// Opens the catalog at `master`: a master file path (creating an empty file and its folder
    /// if missing), or an `etcd://HOST:PORT[,HOST:PORT…]/PREFIX` URL held in the path (see
    /// [`CatalogLocation`]). Any other `scheme://` is refused.
    pub async fn open(master: impl AsRef<Path>) -> Result<Self> {
        Self::open_location(CatalogLocation::of_path(master.as_ref())?).await
    }

    /// Opens the catalog at `location`.
    pub async fn open_location(location: CatalogLocation) -> Result<Self> {
        let anchor = location.anchor();
        match &location {
            CatalogLocation::File(path) => {
                let store = FileStore::open(path).await?;
                Ok(Self {
                    store: Arc::new(store),
                    anchor,
                    location,
                    maps: Arc::default(),
                })
            }
            #[cfg(feature = "etcd")]
            CatalogLocation::Etcd(address) => {
                let store = store::etcd::EtcdStore::open(address).await?;
                Ok(Self {
                    store: Arc::new(store),
                    anchor,
                    location,
                    maps: Arc::default(),
                })
            }
            #[cfg(not(feature = "etcd"))]
            CatalogLocation::Etcd(address) => Err(Error::Catalog {
                reason: format!(
                    "'{address}' is a catalog in etcd, and this build has no etcd support (feature `etcd`)"
                ),
            }),
        }
    }

    /// Where this catalog lives.
    pub fn location(&self) -> &CatalogLocation {
        &self.location
    }

    /// The master file; for a catalog in etcd, a name in the working directory that relative
    /// shard paths resolve against (no such file is ever created).
    pub fn path(&self) -> &Path {
        &self.anchor
    }

    /// Whether other processes' activations reach this handle's watchers without polling (a
    /// catalog in etcd).
    pub fn is_watched(&self) -> bool {
        self.store.is_watched()
    }

    pub(crate) fn store(&self) -> &dyn CatalogStore {
        self.store.as_ref()
    }

    pub(crate) async fn has_schema(&self) -> Result<bool> {
        self.store.has_schema().await
    }

    /// Whether the catalog's place holds anything: a seeded catalog, or for a catalog in etcd,
    /// any key under its prefix.
    pub(crate) async fn holds_anything(&self) -> Result<bool> {
        self.store.holds_anything().await
    }

    pub(crate) async fn ensure_schema(&self) -> Result<()> {
        self.store.ensure_schema().await
    }

    /// The active map as stored, or `None` when the catalog has none.
    pub async fn active_options(&self) -> Result<Option<ShardingOptions>> {
        Ok(self.store.state().await?.active.map(|map| map.options))
    }

    /// The pending map (written by a catalog update, not yet active), if any.
    pub async fn pending_options(&self) -> Result<Option<ShardingOptions>> {
        Ok(self.store.state().await?.pending.map(|map| map.options))
    }

    /// The active map, validated. [`Error::NoMap`] when the catalog has none.
    pub async fn active_map(&self) -> Result<ShardMap> {
        let options = self.active_options().await?.ok_or(Error::NoMap)?;
        Ok(ShardMap::new(options)?)
    }

    /// Validates `options`, creates the folders and files of its local shards, and stores
    /// it as the active map.
    ///
    /// A relative `dataSource` is created in the master's folder. A map whose shard file is this
    /// master, or whose shards share a file, is refused before anything is written (see
    /// [`check_shard_files`]).
    ///
    /// Seeding the same map again is a no-op. Replacing a different active map requires
    /// `replace`, because it reroutes keys away from their data.
    pub async fn seed(&self, options: ShardingOptions, replace: bool) -> Result<ShardMap> {
        let map = ShardMap::new(options.clone())?;
        crate::directory::check_routes(&map)?;
        check_shard_files(self.path(), &map).await?;
        if let Some(existing) = self.active_options().await?
            && MapRecords::of(&existing) != MapRecords::of(&options)
            && !replace
        {
            return Err(Error::Catalog {
                reason: format!(
                    "it already holds an active map (keyspace '{}', version {}); replacing it reroutes keys, so ask for it explicitly",
                    existing.keyspace, existing.map_version
                ),
            });
        }
        new_files::create_shard_files(self.path(), &map).await?;
        let written = NewMap::of(&options);
        let history = HistoryRow {
            keyspace: map.keyspace().to_owned(),
            version: map.version(),
            audit: Audit::by("seed").because("seeded the active map"),
            metadata_only: false,
        };
        self.store.seed(&written, &history).await?;
        Ok(map)
    }

    /// The map of version `version` as the catalog holds it, rebuilt from the changes each
    /// version wrote (the catalog keeps changes, not copies); `None` when no version of that
    /// number is stored (for one in etcd, since the last seed or large change).
    pub async fn map_at_version(&self, version: u64) -> Result<Option<ShardingOptions>> {
        self.store
            .map_at(version)
            .await?
            .map(|records| records.to_options())
            .transpose()
    }

    /// Catalog history, newest first.
    pub async fn history(&self) -> Result<Vec<CatalogHistoryEntry>> {
        self.store.history().await
    }

    /// The active map as stored, and a watch of the map records reporting each change after
    /// it, on a catalog in etcd.
    #[cfg(feature = "etcd")]
    pub(crate) async fn watch_maps(&self) -> Result<(Option<ShardingOptions>, store::MapWatch)> {
        let (state, watch) = self.store.watch_maps().await?;
        Ok((state.active.map(|map| map.options), watch))
    }

    /// The records that turn map version `from` into the active version `to`, when the store
    /// can say without the whole map (see `CatalogStore::changes_between`).
    pub(crate) async fn changes_between(&self, from: u64, to: u64) -> Result<Option<Vec<RecordChange>>> {
        self.store.changes_between(from, to).await
    }

    /// The active and pending maps as stored, for a conditional write.
    pub(crate) async fn stored(&self) -> Result<StoredState> {
        self.maps.count_whole_read();
        self.store.state().await
    }
}

/// Refuses a catalog written by a newer release; `version` is the stored schema version.
pub(crate) fn check_schema_version(version: Option<i64>) -> Result<()> {
    match version {
        Some(v) if v > CATALOG_SCHEMA_VERSION => Err(Error::Catalog {
            reason: format!(
                "schema version {v} was written by a newer release (this release reads up to {CATALOG_SCHEMA_VERSION})"
            ),
        }),
        Some(_) => Ok(()),
        None => Err(Error::Catalog {
            reason: "the schema version record is missing or unreadable".to_owned(),
        }),
    }
}
