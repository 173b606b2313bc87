//! Following a change: a map's next version built from the records the change wrote, without
//! reading or parsing the rest of the map.
//!
//! [`apply_changes`] turns a map's options into the next version's by applying record changes
//! (see [`records`](super::records)): a shard or range record carries its position, so the
//! order a store reads back is kept. [`ShardMap::with_changes`] does the same to a validated map:
//! a change of pins alone (the header moves with every change) patches the routing state in
//! place of building it again, checking only the pins it touches; any other change builds the
//! map from the patched options.

use std::collections::HashMap;

use super::directory::DirectoryEntry;
use super::options::{BucketRange, ShardDefinition, ShardingOptions};
use super::records::{Header, Placed, RecordChange, RecordKind, directory_entry_key, parse, range_key, shard_key};
use super::{MapError, ShardMap, ShardRole};
use crate::error::Result;

/// The most pin changes patched into a map in place; more build it again (each patched pin
/// shifts the pin index once).
const MAX_PATCHED_PINS: usize = 64;

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
    /// alone patches this map's routing state, checking only the pins it touches; any other
    /// change builds the map from the patched options (no record of the rest is parsed).
    /// `token_of` computes a pinned key's route token under this map.
    pub(crate) fn with_changes(&self, changes: &[RecordChange], token_of: impl Fn(&str) -> u64) -> Result<ShardMap> {
        let mut options = self.options.clone();
        apply_changes(&mut options, changes)?;
        if !self.patchable(&options, changes) {
            return Ok(ShardMap::new(options)?);
        }
        let mut next = self.clone();
        next.map_version = u64::try_from(options.map_version)
            .ok()
            .filter(|version| *version > 0)
            .ok_or(MapError::InvalidMapVersion {
                value: options.map_version,
            })?;
        for change in changes.iter().filter(|change| change.kind == RecordKind::Pin) {
            let owner = options.exact_key_pins.get(&change.key);
            next.patch_pin(&change.key, owner.map(String::as_str), &token_of)?;
        }
        next.options = options;
        Ok(next)
    }

    /// Whether `changes` (already applied to `options`) can be patched in: pins only (trimmed
    /// keys, few of them) besides a header that keeps keyspace, bucket count and directories.
    fn patchable(&self, options: &ShardingOptions, changes: &[RecordChange]) -> bool {
        let pins = changes.iter().filter(|change| change.kind == RecordKind::Pin);
        changes
            .iter()
            .all(|change| matches!(change.kind, RecordKind::Header | RecordKind::Pin))
            && pins.clone().count() <= MAX_PATCHED_PINS
            && pins.clone().all(|change| change.key.trim() == change.key)
            && options.keyspace.trim() == self.keyspace
            && options.virtual_bucket_count == self.options.virtual_bucket_count
            && options.directories == self.options.directories
    }

    /// Pins `key` to shard `owner` (unpins it for `None`), checking the pin as
    /// [`ShardMap::new`] does.
    fn patch_pin(&mut self, key: &str, owner: Option<&str>, token_of: &impl Fn(&str) -> u64) -> Result<(), MapError> {
        let found = self.pins.binary_search_by(|(pinned, _)| pinned.as_str().cmp(key));
        let Some(owner) = owner else {
            if let Ok(at) = found {
                self.pins.remove(at);
                self.shift_pin_tokens(key, at, false, token_of);
            }
            return Ok(());
        };
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
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        match found {
            Ok(at) => self.pins[at].1 = index,
            Err(at) => {
                self.pins.insert(at, (key.to_owned(), index));
                self.shift_pin_tokens(key, at, true, token_of);
            }
        }
        Ok(())
    }

    /// Keeps the pin-token index (when built) in step with pin `key` inserted at, or removed
    /// from, position `at` of the pins.
    fn shift_pin_tokens(&mut self, key: &str, at: usize, inserted: bool, token_of: &impl Fn(&str) -> u64) {
        let Some(tokens) = self.pin_tokens.get_mut() else {
            return;
        };
        let at = u32::try_from(at).unwrap_or(u32::MAX);
        let token = token_of(key);
        if !inserted && tokens.get(&token) == Some(&at) {
            tokens.remove(&token);
        }
        for position in tokens.values_mut() {
            if inserted && *position >= at {
                *position += 1;
            } else if !inserted && *position > at {
                *position -= 1;
            }
        }
        if inserted {
            tokens.entry(token).or_insert(at);
        }
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
        let next = map.with_changes(&changes, token).unwrap();
        let whole = ShardMap::new(after.clone()).unwrap();
        assert_eq!(MapRecords::of(next.options()), MapRecords::of(after));
        assert_eq!(next.version(), whole.version());
        assert_eq!(next.pins, whole.pins);
        assert_eq!(next.owners, whole.owners);
        for key in next
            .pins
            .iter()
            .map(|(key, _)| key.as_str())
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
        use crate::map::{DirectoryDefinition, EntryState};
        let mut before = options(&[("t1", "a")], 1);
        before.directories = vec![DirectoryDefinition::writable("Orders", "k")];
        before.directory_entries = (0..5)
            .map(|n| DirectoryEntry {
                directory_name: "Orders".to_owned(),
                lookup_key: format!("SO-{n}"),
                target_keyspace: "k".to_owned(),
                route_key: "t1".to_owned(),
                shard_id: "a".to_owned(),
                map_version: 1,
                state: EntryState::Active,
            })
            .collect();
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
            let patched = before.with_changes(&changes, token).unwrap_err().to_string();
            let whole = ShardMap::new(after).unwrap_err();
            assert_eq!(patched, crate::Error::from(whole).to_string(), "{expected}");
        }
    }
}
