//! The catalog's maps as this handle last read them, followed by what changed since.
//!
//! Catalog updates and activations need the active map validated and the pending map. Reading
//! and validating them whole on every call costs the whole map, however small the change, so a
//! handle keeps the maps it read with the versions they were read at ([`StoredVersions`]). Each
//! call reads only the versions; when they moved, it reads the records written since the newest
//! map it holds and follows them ([`ShardMap::with_changes`](crate::map::ShardMap)); a seed, an
//! import, a new etcd generation, or a store that cannot say what changed reads the maps whole.

use super::Catalog;
use super::store::StoredVersions;
use crate::error::{Error, Result};
use crate::map::ShardMap;

/// The active and pending maps at `versions`.
#[derive(Debug, Clone)]
pub(crate) struct Maps {
    /// The versions they were read at.
    pub versions: StoredVersions,
    /// The active map, validated.
    pub active: ShardMap,
    /// The pending map's version and the map, when it validates.
    pub pending: Option<(u64, Option<ShardMap>)>,
}

impl Maps {
    /// The newest version: the pending map's, else the active map's.
    pub fn newest_version(&self) -> u64 {
        self.pending
            .as_ref()
            .map_or(self.active.version(), |(version, _)| *version)
    }

    /// The newest map, when it validates.
    pub fn newest(&self) -> Option<&ShardMap> {
        match &self.pending {
            Some((_, map)) => map.as_ref(),
            None => Some(&self.active),
        }
    }

    /// The map of `version` among these, if held.
    fn held(&self, version: u64) -> Option<Option<ShardMap>> {
        if version == self.active.version() {
            return Some(Some(self.active.clone()));
        }
        match &self.pending {
            Some((pending, map)) if *pending == version => Some(map.clone()),
            _ => None,
        }
    }
}

/// A handle's maps as last read, and how many times it read them whole.
#[derive(Debug, Default)]
pub(crate) struct MapsCache(tokio::sync::Mutex<Option<Maps>>, std::sync::atomic::AtomicU64);

impl MapsCache {
    /// Counts one read of the stored maps whole.
    pub(super) fn count_whole_read(&self) {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Catalog {
    /// The active and pending maps, read at most as far as they changed since this handle
    /// last read them. [`Error::NoMap`] without an active map.
    pub(crate) async fn maps(&self) -> Result<Maps> {
        let mut cached = self.maps.0.lock().await;
        let Some(versions) = self.store().versions().await? else {
            *cached = None;
            return Err(Error::NoMap);
        };
        if let Some(held) = cached.as_ref() {
            if held.versions == versions {
                return Ok(held.clone());
            }
            if let Some(next) = self.follow(held, versions).await? {
                *cached = Some(next.clone());
                return Ok(next);
            }
        }
        let maps = self.read_maps().await?;
        *cached = Some(maps.clone());
        Ok(maps)
    }

    /// `held` moved to `versions` by the records written since its newest map, or `None` when
    /// the store cannot say what changed (read the maps whole).
    async fn follow(&self, held: &Maps, versions: StoredVersions) -> Result<Option<Maps>> {
        let (Some(active), Some(newest)) = (versions.active, versions.newest()) else {
            return Ok(None);
        };
        let from = held.newest_version();
        if versions.epoch != held.versions.epoch || versions.generation != held.versions.generation || newest < from {
            return Ok(None);
        }
        let newest_map = if newest == from {
            held.newest().cloned()
        } else {
            let Some(base) = held.newest() else {
                return Ok(None);
            };
            let Some(changes) = self.store().changes_since(&held.versions, &versions).await? else {
                return Ok(None);
            };
            match base.with_changes(&changes) {
                Ok(map) if map.version() == newest => Some(map),
                _ => return Ok(None),
            }
        };
        let pick = |version: u64| {
            if version == newest {
                Some(newest_map.clone())
            } else {
                held.held(version)
            }
        };
        let Some(Some(active_map)) = pick(active) else {
            return Ok(None);
        };
        let pending = match versions.pending {
            Some(version) => match pick(version) {
                Some(map) => Some((version, map)),
                None => return Ok(None),
            },
            None => None,
        };
        Ok(Some(Maps {
            versions,
            active: active_map,
            pending,
        }))
    }

    /// How many times this handle (and its clones) read the stored maps whole for a catalog
    /// update, a directory change or an activation, rather than following the records written
    /// since it last read them.
    #[doc(hidden)]
    pub fn maps_read_whole(&self) -> u64 {
        self.maps.1.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The maps read whole.
    async fn read_maps(&self) -> Result<Maps> {
        let state = self.stored().await?;
        let versions = state.versions();
        let active = state.active.ok_or(Error::NoMap)?;
        let pending = state
            .pending
            .map(|pending| (pending.version, ShardMap::new(pending.options).ok()));
        Ok(Maps {
            versions,
            active: ShardMap::new(active.options)?,
            pending,
        })
    }
}
