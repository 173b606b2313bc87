//! Shard directories: finding a route by another key (an order number), and changing the entries
//! that say where each key lives.
//!
//! The map holds the directories and their entries ([`DirectoryDefinition`],
//! [`DirectoryEntry`]) and checks what needs no routing; this module adds what does:
//! [`check_routes`] (every entry's route resolves to the shard it names, whatever its state),
//! [`resolve`] (a lookup on the live map) and [`plan`] (what a mutation writes, or why it
//! writes nothing). The catalog writes a planned change as a pending map, and the clients and the
//! daemon carry these calls.
//!
//! [`DirectoryDefinition`]: crate::map::DirectoryDefinition
//! [`DirectoryEntry`]: crate::map::DirectoryEntry

mod plan;

pub use plan::{Plan, WriteEntry, plan, rejected};

use crate::data::{DirectoryEntryPage, DirectoryEntryQuery, DirectoryLookup, DirectoryResolution, MAX_DIRECTORY_PAGE};
use crate::error::{DirectoryProblem, Error, MapError, Result};
use crate::map::{DirectoryEntry, EntryState, ShardMap, trimmed};
use crate::routing::ShardResolution;

/// Checks that every entry's route resolves, on `map`, to the shard the entry names (entries of
/// every state: a `Deleted` entry pointing elsewhere makes the map invalid too).
pub fn check_routes(map: &ShardMap) -> Result<(), MapError> {
    for entry in map.directory_entries() {
        check_route(map, entry)?;
    }
    Ok(())
}

/// [`check_routes`] for the entries whose (trimmed) route key `touched` names: what a change of
/// those keys' pins can break.
pub(crate) fn check_routes_of(map: &ShardMap, touched: impl Fn(&str) -> bool) -> Result<(), MapError> {
    for entry in map.directory_entries() {
        if touched(entry.route_key.trim()) {
            check_route(map, entry)?;
        }
    }
    Ok(())
}

/// Checks that `entry`'s route resolves, on `map`, to the shard it names.
pub(crate) fn check_route(map: &ShardMap, entry: &DirectoryEntry) -> Result<(), MapError> {
    let resolved =
        map.resolve(&entry.target_keyspace, &entry.route_key)
            .map_err(|err| MapError::EntryRouteUnresolved {
                entry: entry.label(),
                reason: err.to_string(),
            })?;
    if !resolved.shard_id.eq_ignore_ascii_case(entry.shard_id.trim()) {
        return Err(MapError::EntryShardMismatch {
            entry: entry.label(),
            shard_id: entry.shard_id.trim().into(),
            route_key: entry.route_key.trim().into(),
            resolved: resolved.shard_id.into(),
        });
    }
    Ok(())
}

/// A lookup key found on a map, borrowing from it: what routing by a lookup key needs, without
/// an allocation. [`resolve`] is its owned, serialisable form.
#[derive(Debug, Clone, Copy)]
pub struct Located<'m> {
    /// The entry.
    pub entry: &'m DirectoryEntry,
    /// Its route, resolved on the map.
    pub route: ShardResolution<'m>,
}

impl Located<'_> {
    /// The owned resolution, as the REST and gRPC answers carry it.
    pub fn to_resolution(&self) -> DirectoryResolution {
        DirectoryResolution {
            entry: self.entry.clone(),
            route_resolution: self.route.to_resolved(),
        }
    }
}

/// Finds a lookup key on `map` (the live map) and resolves its entry's route, borrowing both
/// from the map. The errors are [`resolve`]'s.
///
/// ```
/// use shardlite::data::DirectoryLookup;
/// use shardlite::map::{ShardMap, ShardingOptions};
///
/// let map = ShardMap::new(ShardingOptions::from_json(r#"{"keyspace": "orders_by_month", "mapVersion": 1,
///     "virtualBucketCount": 4, "shards": [{"shardId": "s0", "dataSource": "s0.db"}],
///     "bucketRanges": [{"startBucketInclusive": 0, "endBucketExclusive": 4, "shardId": "s0"}],
///     "directories": [{"directoryName": "orders_by_id", "targetKeyspace": "orders_by_month"}],
///     "directoryEntries": [{"directoryName": "orders_by_id", "lookupKey": "SO-1",
///         "targetKeyspace": "orders_by_month", "routeKey": "2026-06", "shardId": "s0",
///         "mapVersion": 1, "state": "Active"}]}"#)?)?;
/// let found = shardlite::directory::locate(&map, &DirectoryLookup::new("orders_by_id", "SO-1"))?;
/// assert_eq!((found.entry.route_key.as_str(), found.route.shard_id), ("2026-06", "s0"));
/// # Ok::<(), shardlite::Error>(())
/// ```
pub fn locate<'m>(map: &'m ShardMap, lookup: &DirectoryLookup) -> Result<Located<'m>> {
    let (directory, key) = names(&lookup.directory_name, &lookup.lookup_key)?;
    let label = || format!("{directory}:{key}");
    let Some(entry) = map.directory_entry(directory, key) else {
        if map.directory(directory).is_none() {
            return Err(DirectoryProblem::UnknownDirectory {
                directory: directory.to_owned(),
            }
            .into());
        }
        return Err(DirectoryProblem::EntryNotFound { entry: label() }.into());
    };
    if u64::try_from(entry.map_version).unwrap_or(u64::MAX) > map.version() {
        return Err(DirectoryProblem::FutureMapVersion {
            entry: label(),
            version: entry.map_version,
            live: map.version(),
        }
        .into());
    }
    if entry.state != EntryState::Active && !lookup.include_inactive {
        return Err(DirectoryProblem::EntryNotActive {
            entry: label(),
            state: entry.state.as_str(),
        }
        .into());
    }
    let route = map.resolve(&entry.target_keyspace, &entry.route_key)?;
    if !route.shard_id.eq_ignore_ascii_case(trimmed(&entry.shard_id)) {
        return Err(DirectoryProblem::ShardMismatch {
            entry: label(),
            shard_id: entry.shard_id.trim().to_owned(),
            route_key: entry.route_key.trim().to_owned(),
            resolved: route.shard_id.to_owned(),
        }
        .into());
    }
    Ok(Located { entry, route })
}

/// Resolves a lookup key on `map` (the live map): [`locate`], owned.
///
/// Blank names are [`Error::InvalidArgument`]; the rest is [`Error::Directory`] naming the
/// problem, or the route's own error (another keyspace, a disabled shard).
pub fn resolve(map: &ShardMap, lookup: &DirectoryLookup) -> Result<DirectoryResolution> {
    locate(map, lookup).map(|found| found.to_resolution())
}

/// One page of directory `directory`'s entries on `map`, ordered by lookup key.
pub fn entries(map: &ShardMap, directory: &str, query: &DirectoryEntryQuery) -> Result<DirectoryEntryPage> {
    let name = directory.trim();
    if name.is_empty() {
        return Err(Error::invalid_argument("directoryName", "it is blank"));
    }
    let Some(definition) = map.directory(name) else {
        return Err(DirectoryProblem::UnknownDirectory {
            directory: name.to_owned(),
        }
        .into());
    };
    query.check()?;
    let limit = usize::try_from(query.limit.unwrap_or(MAX_DIRECTORY_PAGE)).unwrap_or(usize::MAX);
    let after = query.after.as_deref().map(str::trim);
    let mut page: Vec<&DirectoryEntry> = map
        .options()
        .directory_entries
        .iter()
        .filter(|entry| crate::map::directory_name_eq(&entry.directory_name, name))
        .filter(|entry| after.is_none_or(|after| entry.lookup_key.trim() > after))
        .collect();
    page.sort_by(|a, b| a.lookup_key.trim().cmp(b.lookup_key.trim()));
    let more = page.len() > limit;
    page.truncate(limit);
    let next_after = more
        .then(|| page.last().map(|entry| entry.lookup_key.trim().to_owned()))
        .flatten();
    Ok(DirectoryEntryPage {
        directory_name: definition.directory_name.trim().to_owned(),
        entry_count: u64::try_from(map.directory_entry_count(name)).unwrap_or(u64::MAX),
        entries: page.into_iter().cloned().collect(),
        next_after,
    })
}

/// The trimmed directory name and lookup key, or which one is blank.
pub(crate) fn names<'a>(directory: &'a str, key: &'a str) -> Result<(&'a str, &'a str)> {
    let (directory, key) = (trimmed(directory), trimmed(key));
    if directory.is_empty() {
        return Err(Error::invalid_argument("directoryName", "it is blank"));
    }
    if key.is_empty() {
        return Err(Error::invalid_argument("lookupKey", "it is blank"));
    }
    Ok((directory, key))
}
