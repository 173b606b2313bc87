//! A map as records: how catalog stores keep a map so that a change writes only what it changes.
//!
//! A map splits into one small record per part: a header (keyspace, version, bucket count), one
//! record per shard (keyed by its lowercased id), one per bucket range (keyed by its first
//! bucket), one per exact-key pin (keyed by the key) and one per shard directory entry (keyed by
//! its directory and lookup key, [`RecordKind::Directory`]); the few directory definitions travel
//! in the header. A directory of a million entries thus changes one record per changed entry. Each record's value is a small JSON
//! text; a shard or range record also carries its position, so a map reads back in the order it
//! was written.
//!
//! Stores keep every version of a record under the map version that wrote it (a deleted record
//! is stored as a tombstone, `None`), so the map of any version is, per record, the newest
//! stored value at or below that version ([`MapAssembler`]), and a change is the records whose
//! values differ ([`MapRecords::changes_to`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::directory::{DirectoryDefinition, DirectoryEntry, folded};
use super::options::{BucketRange, ShardDefinition, ShardingOptions};
use crate::error::{Error, Result};

/// What a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RecordKind {
    /// The map's keyspace, version and bucket count (one record, key `map`).
    Header,
    /// One shard, keyed by its lowercased id.
    Shard,
    /// One bucket range, keyed by its first bucket (ten digits).
    Range,
    /// One exact-key pin, keyed by the route key.
    Pin,
    /// One shard directory entry, keyed by its directory (folded) and lookup key
    /// ([`directory_entry_key`]).
    Directory,
}

impl RecordKind {
    /// The kind's stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Header => "header",
            Self::Shard => "shard",
            Self::Range => "range",
            Self::Pin => "pin",
            Self::Directory => "directory",
        }
    }

    /// The kind of a stored name.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Header, Self::Shard, Self::Range, Self::Pin, Self::Directory]
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }
}

/// A record's identity: its kind and key.
pub type RecordId = (RecordKind, String);

/// One record written by a change: its new value, or `None` when the change deletes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordChange {
    /// The record's kind.
    pub kind: RecordKind,
    /// The record's key within its kind.
    pub key: String,
    /// The new value (JSON text), or `None` for a deletion.
    pub value: Option<String>,
}

/// The records of one map version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapRecords(BTreeMap<RecordId, String>);

/// The header record's value.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Header {
    pub(super) keyspace: String,
    pub(super) map_version: i64,
    pub(super) virtual_bucket_count: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) directories: Vec<DirectoryDefinition>,
}

/// A shard or range record's value: the item and its position in the map.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Placed<T> {
    pub(super) position: usize,
    #[serde(flatten)]
    pub(super) item: T,
}

impl MapRecords {
    /// The records of `options`.
    pub fn of(options: &ShardingOptions) -> Self {
        let mut records = BTreeMap::new();
        let header = Header {
            keyspace: options.keyspace.clone(),
            map_version: options.map_version,
            virtual_bucket_count: options.virtual_bucket_count,
            directories: options.directories.clone(),
        };
        records.insert((RecordKind::Header, "map".to_owned()), to_text(&header));
        for (position, shard) in options.shards.iter().enumerate() {
            let placed = Placed {
                position,
                item: shard.clone(),
            };
            records.insert((RecordKind::Shard, shard_key(&shard.shard_id)), to_text(&placed));
        }
        for (position, range) in options.bucket_ranges.iter().enumerate() {
            let placed = Placed {
                position,
                item: range.clone(),
            };
            records.insert((RecordKind::Range, range_key(range)), to_text(&placed));
        }
        for (key, shard) in &options.exact_key_pins {
            records.insert((RecordKind::Pin, key.clone()), json!(shard).to_string());
        }
        // No position: removing one entry must not rewrite the others. Entries read back in
        // key order.
        for entry in &options.directory_entries {
            records.insert((RecordKind::Directory, directory_entry_key(entry)), to_text(entry));
        }
        Self(records)
    }

    /// Records read back from a store.
    pub fn from_records(records: BTreeMap<RecordId, String>) -> Self {
        Self(records)
    }

    /// How many records the map has.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no records at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every record, in kind and key order.
    pub fn iter(&self) -> impl Iterator<Item = (&RecordId, &String)> {
        self.0.iter()
    }

    /// What to write to turn this map's records into `next`'s: changed and added records with
    /// their values, removed ones as deletions.
    pub fn changes_to(&self, next: &MapRecords) -> Vec<RecordChange> {
        let mut changes = Vec::new();
        for (id, value) in &next.0 {
            if self.0.get(id) != Some(value) {
                changes.push(RecordChange {
                    kind: id.0,
                    key: id.1.clone(),
                    value: Some(value.clone()),
                });
            }
        }
        for id in self.0.keys() {
            if !next.0.contains_key(id) {
                changes.push(RecordChange {
                    kind: id.0,
                    key: id.1.clone(),
                    value: None,
                });
            }
        }
        changes
    }

    /// Every record as a change from an empty map.
    pub fn all_changes(&self) -> Vec<RecordChange> {
        MapRecords::default().changes_to(self)
    }

    /// The map these records describe. [`Error::Catalog`] when a record does not parse or the
    /// header is missing.
    pub fn to_options(&self) -> Result<ShardingOptions> {
        let header_text = self
            .0
            .get(&(RecordKind::Header, "map".to_owned()))
            .ok_or_else(|| unreadable("header", "map", "the header record is missing"))?;
        let header: Header = parse(RecordKind::Header, "map", header_text)?;
        let mut shards: Vec<Placed<ShardDefinition>> = Vec::new();
        let mut ranges: Vec<Placed<BucketRange>> = Vec::new();
        let mut pins = BTreeMap::new();
        let mut entries: Vec<DirectoryEntry> = Vec::new();
        for ((kind, key), value) in &self.0 {
            match kind {
                RecordKind::Shard => shards.push(parse(*kind, key, value)?),
                RecordKind::Range => ranges.push(parse(*kind, key, value)?),
                RecordKind::Pin => {
                    pins.insert(key.clone(), parse::<String>(*kind, key, value)?);
                }
                RecordKind::Directory => entries.push(parse(*kind, key, value)?),
                RecordKind::Header => {}
            }
        }
        Ok(assemble(header, shards, ranges, pins, entries))
    }
}

/// The map of `header` and the other records' items: shards and ranges in any order, each with
/// its position in the map.
pub(super) fn assemble(
    header: Header,
    mut shards: Vec<Placed<ShardDefinition>>,
    mut ranges: Vec<Placed<BucketRange>>,
    pins: BTreeMap<String, String>,
    entries: Vec<DirectoryEntry>,
) -> ShardingOptions {
    shards.sort_by_key(|placed| placed.position);
    ranges.sort_by_key(|placed| placed.position);
    ShardingOptions {
        keyspace: header.keyspace,
        map_version: header.map_version,
        virtual_bucket_count: header.virtual_bucket_count,
        shards: shards.into_iter().map(|placed| placed.item).collect(),
        bucket_ranges: ranges.into_iter().map(|placed| placed.item).collect(),
        exact_key_pins: pins,
        directories: header.directories,
        directory_entries: entries,
    }
}

/// The key of a shard's record.
pub fn shard_key(shard_id: &str) -> String {
    shard_id.trim().to_ascii_lowercase()
}

/// The key of a directory entry's record: `{len}:{directory}|{lookupKey}`, the directory name
/// trimmed and folded to lower case (its length in bytes), the lookup key trimmed and exact.
pub fn directory_entry_key(entry: &DirectoryEntry) -> String {
    let directory = folded(&entry.directory_name);
    format!("{}:{directory}|{}", directory.len(), entry.lookup_key.trim())
}

pub(super) fn range_key(range: &BucketRange) -> String {
    format!("{:010}", range.start_bucket_inclusive)
}

fn to_text<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

pub(super) fn parse<T: for<'de> Deserialize<'de>>(kind: RecordKind, key: &str, value: &str) -> Result<T> {
    serde_json::from_str(value).map_err(|err| unreadable(kind.as_str(), key, &err.to_string()))
}

pub(super) fn unreadable(kind: &str, key: &str, problem: &str) -> Error {
    Error::Catalog {
        reason: format!("the stored {kind} record '{key}' does not parse: {problem}"),
    }
}

/// Builds the maps of a few versions from stored rows `(kind, key, version, value)`: for each
/// version asked for, every record's newest row at or below it, tombstones dropping the record.
#[derive(Debug)]
pub struct MapAssembler {
    versions: Vec<u64>,
    newest: BTreeMap<RecordId, Vec<(u64, Option<String>)>>,
}

impl MapAssembler {
    /// An assembler of the maps at `versions`.
    pub fn new(versions: Vec<u64>) -> Self {
        Self {
            versions,
            newest: BTreeMap::new(),
        }
    }

    /// Takes one stored row into account (rows may come in any order; versions start at 1).
    pub fn add(&mut self, kind: RecordKind, key: String, version: u64, value: Option<String>) {
        let Some(top) = self.versions.iter().copied().max() else {
            return;
        };
        if version > top {
            return;
        }
        let slots = self
            .newest
            .entry((kind, key))
            .or_insert_with(|| vec![(0, None); self.versions.len()]);
        for (slot, wanted) in slots.iter_mut().zip(&self.versions) {
            if version <= *wanted && version > slot.0 {
                *slot = (version, value.clone());
            }
        }
    }

    /// The records of each version asked for, in the order asked.
    pub fn finish(self) -> Vec<MapRecords> {
        let mut maps: Vec<BTreeMap<RecordId, String>> = vec![BTreeMap::new(); self.versions.len()];
        for (id, slots) in self.newest {
            for (map, (_, value)) in maps.iter_mut().zip(slots) {
                if let Some(value) = value {
                    map.insert(id.clone(), value);
                }
            }
        }
        maps.into_iter().map(MapRecords).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pins: &[(&str, &str)], version: i64) -> ShardingOptions {
        let mut options = ShardingOptions::from_json(
            r#"{"keyspace":"k","mapVersion":1,"virtualBucketCount":8,
                "shards":[{"shardId":"B","dataSource":"b.db"},{"shardId":"a","dataSource":"a.db"}],
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

    #[test]
    fn a_map_reads_back_from_its_records_in_the_order_written() {
        let map = options(&[("t/1", "a"), ("t%2", "B")], 3);
        let records = MapRecords::of(&map);
        assert_eq!(records.len(), 1 + 2 + 2 + 2);
        assert_eq!(records.to_options().unwrap(), map);
    }

    #[test]
    fn a_change_writes_only_the_records_it_changes() {
        let before = MapRecords::of(&options(&[("t1", "a"), ("t2", "B")], 1));
        let after = MapRecords::of(&options(&[("t1", "a"), ("t3", "a")], 2));
        let changes = before.changes_to(&after);
        let ids: Vec<(RecordKind, &str, bool)> = changes
            .iter()
            .map(|c| (c.kind, c.key.as_str(), c.value.is_some()))
            .collect();
        assert_eq!(
            ids,
            vec![
                (RecordKind::Header, "map", true),
                (RecordKind::Pin, "t3", true),
                (RecordKind::Pin, "t2", false)
            ]
        );
    }

    #[test]
    fn the_assembler_gives_each_version_its_newest_rows() {
        let v1 = options(&[("t1", "a"), ("t2", "B")], 1);
        let v2 = options(&[("t1", "a"), ("t3", "a")], 2);
        let v5 = options(&[("t3", "B")], 5);
        let r1 = MapRecords::of(&v1);
        let r2 = MapRecords::of(&v2);
        let r5 = MapRecords::of(&v5);
        let mut rows = Vec::new();
        for change in r1.all_changes() {
            rows.push((change.kind, change.key, 1, change.value));
        }
        for change in r1.changes_to(&r2) {
            rows.push((change.kind, change.key, 2, change.value));
        }
        for change in r2.changes_to(&r5) {
            rows.push((change.kind, change.key, 5, change.value));
        }
        rows.reverse();
        let mut assembler = MapAssembler::new(vec![2, 1, 5, 4]);
        for (kind, key, version, value) in rows {
            assembler.add(kind, key, version, value);
        }
        let maps = assembler.finish();
        assert_eq!(maps[0].to_options().unwrap(), v2);
        assert_eq!(maps[1].to_options().unwrap(), v1);
        assert_eq!(maps[2].to_options().unwrap(), v5);
        assert_eq!(maps[3].to_options().unwrap(), v2);
    }

    #[test]
    fn a_directory_change_writes_only_the_entries_it_changes() {
        use crate::map::{DirectoryDefinition, DirectoryEntry, EntryState};
        let entry = |key: &str, state: EntryState| DirectoryEntry {
            directory_name: "Orders".into(),
            lookup_key: key.into(),
            target_keyspace: "k".into(),
            route_key: "t1".into(),
            shard_id: "a".into(),
            map_version: 1,
            state,
        };
        let mut before = options(&[], 1);
        before.directories = vec![DirectoryDefinition::writable("Orders", "k")];
        before.directory_entries = (0..100)
            .map(|n| entry(&format!("SO-{n}"), EntryState::Active))
            .collect();
        let mut after = before.clone();
        after.map_version = 2;
        after.directory_entries[7].state = EntryState::Stale;
        after.directory_entries.remove(3);
        let records = MapRecords::of(&before);
        let changes = records.changes_to(&MapRecords::of(&after));
        let ids: Vec<(RecordKind, &str, bool)> = changes
            .iter()
            .map(|c| (c.kind, c.key.as_str(), c.value.is_some()))
            .collect();
        assert_eq!(
            ids,
            vec![
                (RecordKind::Header, "map", true),
                (RecordKind::Directory, "6:orders|SO-7", true),
                (RecordKind::Directory, "6:orders|SO-3", false)
            ]
        );
        let back = MapRecords::of(&after).to_options().unwrap();
        assert_eq!(back.directories, after.directories);
        assert_eq!(back.directory_entries.len(), 99);
        assert_eq!(MapRecords::of(&back), MapRecords::of(&after));
    }
}
