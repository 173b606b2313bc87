//! Following a change: a map's next version built from the records the change wrote, without
//! reading or parsing the rest of the map.
//!
//! [`apply_changes`] turns a map's options into the next version's by applying record changes
//! (see [`records`](super::records)): a shard or range record carries its position, so the
//! order a store reads back is kept. [`ShardMap::with_changes`] does the same to a validated map:
//! a change of pins and directory entries alone (the header moves with every change) patches the
//! routing state and the directory index in place of building them again, checking only the pins
//! and entries it touches; any other change builds the map from the patched options.

use std::collections::HashMap;

use super::directory::{DirectoryEntry, check_entry, folded};
use super::entry_changes::{EntryChanges, MAX_ENTRY_CHANGES, directory_of, lookup_key_of};
use super::options::{BucketRange, ShardDefinition, ShardingOptions};
use super::pin_changes::MAX_PIN_CHANGES;
use super::records::{Header, Placed, RecordChange, RecordKind, directory_entry_key, parse, range_key, shard_key};
use super::{MapError, ShardMap, ShardRole};
use crate::error::Result;

/// The most pin changes of one change patched into a map in place; more build it again.
const MAX_PATCHED_PINS: usize = 1024;

/// Applies record `changes` to `options`, giving the map of the version that wrote them.
/// [`Error::Catalog`](crate::Error::Catalog) when a record does not parse.
pub fn apply_changes(options: &mut ShardingOptions, changes: &[RecordChange]) -> Result<()> {
    let mut shards: Option<Vec<(usize, ShardDefinition)>> = None;
    let mut ranges: Option<Vec<(usize, BucketRange)>> = None;
    let mut entries: Option<HashMap<String, DirectoryEntry>> = None;
    for change in changes {
        let value = change.value.as_deref();
        match change.kind {
            RecordKind::Header => {
                if let Some(text) = value {
                    let header: Header = parse(change.kind, &change.key, text)?;
                    options.keyspace = header.keyspace;
                    options.map_version = header.map_version;
                    options.virtual_bucket_count = header.virtual_bucket_count;
                    options.directories = header.directories;
                }
            }
            RecordKind::Shard => {
                let placed = shards.get_or_insert_with(|| placed(&options.shards));
                placed.retain(|(_, shard)| shard_key(&shard.shard_id) != change.key);
                if let Some(text) = value {
                    let shard: Placed<ShardDefinition> = parse(change.kind, &change.key, text)?;
                    placed.push((shard.position, shard.item));
                }
            }
            RecordKind::Range => {
                let placed = ranges.get_or_insert_with(|| placed(&options.bucket_ranges));
                placed.retain(|(_, range)| range_key(range) != change.key);
                if let Some(text) = value {
                    let range: Placed<BucketRange> = parse(change.kind, &change.key, text)?;
                    placed.push((range.position, range.item));
                }
            }
            RecordKind::Pin => match value {
                Some(text) => {
                    let shard: String = parse(change.kind, &change.key, text)?;
                    options.exact_key_pins.insert(change.key.clone(), shard);
                }
                None => {
                    options.exact_key_pins.remove(&change.key);
                }
            },
            RecordKind::Directory => {
                let keyed = entries.get_or_insert_with(|| {
                    std::mem::take(&mut options.directory_entries)
                        .into_iter()
                        .map(|entry| (directory_entry_key(&entry), entry))
                        .collect()
                });
                match value {
                    Some(text) => {
                        keyed.insert(change.key.clone(), parse(change.kind, &change.key, text)?);
                    }
                    None => {
                        keyed.remove(&change.key);
                    }
                }
            }
        }
    }
    if let Some(placed) = shards {
        options.shards = in_position_order(placed);
    }
    if let Some(placed) = ranges {
        options.bucket_ranges = in_position_order(placed);
    }
    if let Some(keyed) = entries {
        // As a store reads them back: in record key order.
        let mut keyed: Vec<(String, DirectoryEntry)> = keyed.into_iter().collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        options.directory_entries = keyed.into_iter().map(|(_, entry)| entry).collect();
    }
    Ok(())
}

fn placed<T: Clone>(items: &[T]) -> Vec<(usize, T)> {
    items.iter().cloned().enumerate().collect()
}

fn in_position_order<T>(mut placed: Vec<(usize, T)>) -> Vec<T> {
    placed.sort_by_key(|(position, _)| *position);
    placed.into_iter().map(|(_, item)| item).collect()
}

impl ShardMap {
    /// The map of the version that wrote record `changes` on top of this one. A change of pins
    /// and directory entries alone patches this map's routing state and directory index,
    /// checking only the pins and entries it touches and sharing everything else with this map;
    /// any other change builds the map from the patched options (no record of the rest is
    /// parsed).
    pub(crate) fn with_changes(&self, changes: &[RecordChange]) -> Result<ShardMap> {
        if let Some(next) = self.patched(changes)? {
            return Ok(next);
        }
        let mut options = self.options().clone();
        apply_changes(&mut options, changes)?;
        Ok(ShardMap::new(options)?)
    }

    /// This map with `changes` patched in, when they are pins and directory entries alone
    /// (trimmed pin keys, few of them) besides a header that keeps keyspace, bucket count and
    /// directories and does not lower the version; `None` otherwise.
    fn patched(&self, changes: &[RecordChange]) -> Result<Option<ShardMap>> {
        let mut header: Option<Header> = None;
        let (mut pins, mut entries) = (0, 0);
        for change in changes {
            match (change.kind, change.value.as_deref()) {
                (RecordKind::Pin, _) if change.key.trim() == change.key => pins += 1,
                (RecordKind::Directory, _) => entries += 1,
                (RecordKind::Header, Some(text)) => header = Some(parse(change.kind, &change.key, text)?),
                _ => return Ok(None),
            }
        }
        if pins > MAX_PATCHED_PINS
            || self.pin_changes.len() + pins > MAX_PIN_CHANGES
            || entries > MAX_PATCHED_PINS
            || self.entry_changes.len() + entries > MAX_ENTRY_CHANGES
        {
            return Ok(None);
        }
        let mut next = self.clone();
        next.merged = std::sync::OnceLock::new();
        let mut pin_changes = (*self.pin_changes).clone();
        if let Some(header) = header {
            if header.keyspace.trim() != self.keyspace
                || header.virtual_bucket_count != self.options.virtual_bucket_count
                || header.directories != self.options.directories
            {
                return Ok(None);
            }
            next.map_version = u64::try_from(header.map_version)
                .ok()
                .filter(|version| *version > 0)
                .ok_or(MapError::InvalidMapVersion {
                    value: header.map_version,
                })?;
            if next.map_version < self.map_version {
                return Ok(None);
            }
            pin_changes.set_header(header.keyspace, header.map_version);
        }
        for change in changes.iter().filter(|change| change.kind == RecordKind::Pin) {
            let owner = match change.value.as_deref() {
                Some(text) => {
                    let owner: String = parse(change.kind, &change.key, text)?;
                    let index = self.checked_pin(&change.key, &owner)?;
                    Some((owner, index))
                }
                None => None,
            };
            pin_changes.set_pin(&change.key, owner);
        }
        next.pin_changes = std::sync::Arc::new(pin_changes);
        if entries > 0 {
            let Some(entry_changes) = self.patched_entries(changes, next.map_version)? else {
                return Ok(None);
            };
            next.entry_changes = std::sync::Arc::new(entry_changes);
        }
        Ok(Some(next))
    }

    /// This map's entry changes with the directory records of `changes` added, each entry
    /// checked as [`ShardMap::new`] checks it against a map of version `map_version`; `None`
    /// when a record is not one this map can patch in (the map is then built whole).
    fn patched_entries(&self, changes: &[RecordChange], map_version: u64) -> Result<Option<EntryChanges>> {
        let mut patched = (*self.entry_changes).clone();
        let records = changes.iter().filter(|change| change.kind == RecordKind::Directory);
        // Removals first, so that an entry replaced by one spelled in another case applies.
        let (removals, writes): (Vec<_>, Vec<_>) = records.partition(|change| change.value.is_none());
        for change in removals {
            let Some(at) = directory_of(&change.key).and_then(|name| self.directories.directory(name)) else {
                return Ok(None);
            };
            let folded_key = lookup_key_of(&change.key);
            let held = self.held_entry(&patched, at, &folded_key);
            if held.is_some_and(|entry| directory_entry_key(entry) == change.key) {
                patched.set(at, change.key.clone(), None, true);
            }
        }
        for change in writes {
            let entry: DirectoryEntry = parse(change.kind, &change.key, change.value.as_deref().unwrap_or_default())?;
            if directory_entry_key(&entry) != change.key {
                return Ok(None);
            }
            let at = check_entry(&self.options.directories, &self.directories, &entry, map_version)?;
            let existed = match self.held_entry(&patched, at, &folded(&entry.lookup_key)) {
                Some(held) if held.lookup_key.trim() == entry.lookup_key.trim() => true,
                Some(_) => return Err(MapError::DuplicateDirectoryEntry { entry: entry.label() }.into()),
                None => false,
            };
            patched.set(at, change.key.clone(), Some(entry), existed);
        }
        Ok(Some(patched))
    }

    /// The shard index pin `key` to shard `owner` gets, checking the pin as [`ShardMap::new`]
    /// does.
    fn checked_pin(&self, key: &str, owner: &str) -> Result<u32, MapError> {
        if key.is_empty() {
            return Err(MapError::BlankPinKey {
                shard_id: owner.trim().to_owned(),
            });
        }
        let Some(index) = self.shard_index(owner) else {
            return Err(MapError::PinUnknownShard {
                key: key.to_owned(),
                shard_id: owner.trim().to_owned(),
            });
        };
        if self.shards[index].role != ShardRole::Primary {
            return Err(MapError::PinOwnedByReplica {
                key: key.to_owned(),
                shard_id: self.shards[index].id.clone(),
            });
        }
        Ok(u32::try_from(index).unwrap_or(u32::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::records::MapRecords;

    fn options(pins: &[(&str, &str)], version: i64) -> ShardingOptions {
        let mut options = ShardingOptions::from_json(
            r#"{"keyspace":"k","mapVersion":1,"virtualBucketCount":8,
                "shards":[{"shardId":"B","dataSource":"b.db"},{"shardId":"a","dataSource":"a.db"},
                          {"shardId":"r","dataSource":"r.db","role":"Replica","primaryShardId":"a"}],
                "bucketRanges":[{"startBucketInclusive":4,"endBucketExclusive":8,"shardId":"a"},
                                {"startBucketInclusive":0,"endBucketExclusive":4,"shardId":"B"}]}"#,
        )
        .unwrap();
        options.map_version = version;
        for (key, shard) in pins {
            options.exact_key_pins.insert((*key).to_owned(), (*shard).to_owned());
        }
        options
    }

    fn token(key: &str) -> u64 {
        key.bytes()
            .fold(7, |hash, byte| hash.wrapping_mul(31).wrapping_add(u64::from(byte)))
    }

    /// The next map, built from the changes, and the same map built whole, agree.
    fn follows(before: &ShardingOptions, after: &ShardingOptions) -> ShardMap {
        let changes = MapRecords::of(before).changes_to(&MapRecords::of(after));
        let map = ShardMap::new(before.clone()).unwrap();
        // With the pin-token index built, as on a router that has resolved a pin.
        let _ = map.pinned_shard_by_token("t1", token("t1"), token);
        let next = map.with_changes(&changes).unwrap();
        let whole = ShardMap::new(after.clone()).unwrap();
        assert_eq!(MapRecords::of(next.options()), MapRecords::of(after));
        assert_eq!(next.version(), whole.version());
        assert_eq!(next.pin_count(), whole.pin_count());
        assert_eq!(next.owners, whole.owners);
        for key in before
            .exact_key_pins
            .keys()
            .chain(after.exact_key_pins.keys())
            .map(String::as_str)
            .chain(["t1", "t2", "t3", "zz"])
        {
            assert_eq!(
                next.pinned_shard_by_token(key, token(key), token),
                whole.pinned_shard(key),
                "{key}"
            );
        }
        next
    }

    #[test]
    fn pins_added_changed_and_removed_are_patched_in() {
        let before = options(&[("t1", "a"), ("t2", "B"), ("t4", "a")], 1);
        let after = options(&[("t0", "B"), ("t1", "B"), ("t3", "a"), ("t4", "a")], 2);
        follows(&before, &after);
    }

    #[test]
    fn shards_ranges_and_directories_follow_in_stored_order() {
        use crate::map::EntryState;
        let before = with_entries(5);
        let mut after = before.clone();
        after.map_version = 2;
        after.shards.remove(0);
        after.shards.insert(1, ShardDefinition::local("c", "c.db"));
        after.bucket_ranges = vec![BucketRange::new(0, 2, "c"), BucketRange::new(2, 8, "a")];
        after.directory_entries.remove(2);
        after.directory_entries[0].state = EntryState::Stale;
        let next = follows(&before, &after);
        assert_eq!(next.options().shards, after.shards);
        assert_eq!(next.options().bucket_ranges, after.bucket_ranges);
        assert_eq!(next.options().directory_entries, after.directory_entries);
    }

    #[test]
    fn a_patched_pin_is_checked_as_a_whole_map_would_be() {
        let before = ShardMap::new(options(&[("t1", "a")], 1)).unwrap();
        for (owner, expected) in [("nowhere", "PinUnknownShard"), ("r", "PinOwnedByReplica")] {
            let after = options(&[("t1", "a"), ("t9", owner)], 2);
            let changes = MapRecords::of(before.options()).changes_to(&MapRecords::of(&after));
            let patched = before.with_changes(&changes).unwrap_err().to_string();
            let whole = ShardMap::new(after).unwrap_err();
            assert_eq!(patched, crate::Error::from(whole).to_string(), "{expected}");
        }
    }

    #[test]
    fn a_followed_change_of_pins_shares_the_rest_of_the_map() {
        let before = ShardMap::new(options(&[("t1", "a"), ("t2", "B")], 1)).unwrap();
        let after = options(&[("t1", "B"), ("t3", "a")], 2);
        let changes = MapRecords::of(before.options()).changes_to(&MapRecords::of(&after));
        let next = before.with_changes(&changes).unwrap();
        assert!(std::sync::Arc::ptr_eq(&next.options, &before.options));
        assert!(std::sync::Arc::ptr_eq(&next.pins, &before.pins));
        assert!(std::sync::Arc::ptr_eq(&next.shards, &before.shards));
        assert!(std::sync::Arc::ptr_eq(&next.owners, &before.owners));
        assert_eq!(next.pin_count(), 2);
        assert_eq!(next.version(), 2);
        // Its own options are built only when asked for, and match the map built whole.
        assert_eq!(next.options(), &after);
        // A second change follows the first without building the map again.
        let later = options(&[("t3", "a")], 3);
        let changes = MapRecords::of(&after).changes_to(&MapRecords::of(&later));
        let last = next.with_changes(&changes).unwrap();
        assert!(std::sync::Arc::ptr_eq(&last.pins, &before.pins));
        assert_eq!(last.options(), &later);
        assert_eq!(last.pinned_shard("t1"), None);
        assert_eq!(last.pinned_shard("t3"), before.shard_index("a"));
    }

    fn with_entries(count: usize) -> ShardingOptions {
        use crate::map::{DirectoryDefinition, EntryState};
        let mut options = options(&[("t1", "a")], 1);
        options.directories = vec![DirectoryDefinition::writable("Orders", "k")];
        options.directory_entries = (0..count)
            .map(|n| DirectoryEntry {
                directory_name: "Orders".into(),
                lookup_key: format!("SO-{n}").into(),
                target_keyspace: "k".into(),
                route_key: "t1".into(),
                shard_id: "a".into(),
                map_version: 1,
                state: EntryState::Active,
            })
            .collect();
        options
    }

    #[test]
    fn a_followed_change_of_entries_shares_the_rest_of_the_map() {
        use crate::map::EntryState;
        let before = with_entries(50);
        let mut after = before.clone();
        after.map_version = 2;
        after.directory_entries[7].state = EntryState::Stale;
        after.directory_entries[7].map_version = 2;
        after.directory_entries.remove(3);
        let mut added = after.directory_entries[0].clone();
        added.lookup_key = "NEW-1".into();
        added.map_version = 2;
        after.directory_entries.push(added);
        let map = ShardMap::new(before.clone()).unwrap();
        let changes = MapRecords::of(&before).changes_to(&MapRecords::of(&after));
        let next = map.with_changes(&changes).unwrap();
        // Nothing of the other 48 entries was copied, parsed or indexed again.
        assert!(std::sync::Arc::ptr_eq(&next.options, &map.options));
        assert!(std::sync::Arc::ptr_eq(&next.directories, &map.directories));
        let whole = ShardMap::new(after.clone()).unwrap();
        for key in ["SO-0", "SO-3", "SO-7", "NEW-1", "new-1", "SO-49", "SO-50"] {
            assert_eq!(
                next.directory_entry("orders", key),
                whole.directory_entry("Orders", key),
                "{key}"
            );
        }
        assert_eq!(next.directory_entry_count("ORDERS"), 50);
        assert_eq!(next.directory_entry_total(), 50);
        assert_eq!(next.version(), 2);
        // Its own options are built only when asked for, and say what the map built whole says.
        assert_eq!(MapRecords::of(next.options()), MapRecords::of(&after));
        // The map it followed is unchanged.
        assert_eq!(
            map.directory_entry("Orders", "SO-3").map(|e| e.state),
            Some(EntryState::Active)
        );
        assert_eq!(map.directory_entry("Orders", "NEW-1"), None);
        // A second change follows the first, and a removed key may come back in another case.
        let mut later = after.clone();
        later.map_version = 3;
        later.directory_entries.retain(|entry| entry.lookup_key != "NEW-1");
        let mut again = later.directory_entries[0].clone();
        again.lookup_key = "new-1".into();
        later.directory_entries.push(again);
        let changes = MapRecords::of(&after).changes_to(&MapRecords::of(&later));
        let last = next.with_changes(&changes).unwrap();
        assert!(std::sync::Arc::ptr_eq(&last.directories, &map.directories));
        assert_eq!(last.directory_entry("Orders", "NEW-1"), None);
        assert!(last.directory_entry("Orders", "new-1").is_some());
        assert_eq!(last.directory_entry_count("Orders"), 50);
        assert_eq!(MapRecords::of(last.options()), MapRecords::of(&later));
    }

    #[test]
    fn a_patched_entry_is_checked_as_a_whole_map_would_be() {
        let before = with_entries(5);
        let map = ShardMap::new(before.clone()).unwrap();
        type Spoil = fn(&mut DirectoryEntry);
        let cases: [(&str, Spoil); 5] = [
            ("duplicate ignoring case", |e| e.lookup_key = "so-1".into()),
            ("unknown directory", |e| e.directory_name = "Invoices".into()),
            ("keyspace", |e| e.target_keyspace = "other".into()),
            ("future version", |e| e.map_version = 9),
            ("blank route key", |e| e.route_key = " ".into()),
        ];
        for (problem, spoil) in cases {
            let mut after = before.clone();
            after.map_version = 2;
            let mut entry = after.directory_entries[0].clone();
            entry.lookup_key = "SO-new".into();
            spoil(&mut entry);
            after.directory_entries.push(entry);
            let changes = MapRecords::of(&before).changes_to(&MapRecords::of(&after));
            let patched = map.with_changes(&changes).unwrap_err().to_string();
            let whole = crate::Error::from(ShardMap::new(after).unwrap_err()).to_string();
            assert_eq!(patched, whole, "{problem}");
        }
    }
}
