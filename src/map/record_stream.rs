//! A map read from its stored rows one record at a time.
//!
//! [`MapAssembler`](super::records::MapAssembler) holds every stored row until it builds the
//! records of each version, and those records are parsed only then: reading a directory of a
//! million entries held their stored text two or three times over besides the entries. Rows in
//! record order (kind and key, as a store's primary key gives them) let [`MapStream`] parse
//! each record into the map of every version asked for as soon as its rows end, so the read
//! holds one record's text at a time.

use std::collections::BTreeMap;

use super::directory::DirectoryEntry;
use super::options::{BucketRange, ShardDefinition, ShardingOptions};
use super::records::{Header, Placed, RecordKind, assemble, parse, unreadable};
use crate::error::Result;

/// Builds the maps of a few versions from stored rows `(kind, key, version, value)` that come
/// grouped by record (the rows of one record together, in any order of versions): for each
/// version, every record's newest row at or below it, tombstones dropping the record.
#[derive(Debug)]
pub(crate) struct MapStream {
    versions: Vec<u64>,
    top: u64,
    /// The record whose rows are being read.
    current: Option<(RecordKind, String)>,
    /// For each version asked for: the newest row of the current record at or below it so far
    /// (its version, and its value when it is not a tombstone), the text buffer kept between
    /// records.
    slots: Vec<Slot>,
    maps: Vec<PartialMap>,
}

#[derive(Debug, Default)]
struct Slot {
    version: u64,
    present: bool,
    value: String,
}

/// The parts of one version's map read so far.
#[derive(Debug, Default)]
struct PartialMap {
    header: Option<Header>,
    shards: Vec<Placed<ShardDefinition>>,
    ranges: Vec<Placed<BucketRange>>,
    pins: BTreeMap<String, String>,
    entries: Vec<DirectoryEntry>,
}

impl MapStream {
    /// A stream building the maps of `versions`.
    pub(crate) fn new(versions: Vec<u64>) -> Self {
        Self {
            top: versions.iter().copied().max().unwrap_or(0),
            slots: versions.iter().map(|_| Slot::default()).collect(),
            maps: versions.iter().map(|_| PartialMap::default()).collect(),
            versions,
            current: None,
        }
    }

    /// Takes one stored row into account; a record whose value does not parse is
    /// [`Error::Catalog`](crate::Error::Catalog).
    pub(crate) fn add(&mut self, kind: RecordKind, key: &str, version: u64, value: Option<&str>) -> Result<()> {
        if version > self.top || self.versions.is_empty() {
            return Ok(());
        }
        let same = self
            .current
            .as_ref()
            .is_some_and(|(current, current_key)| *current == kind && current_key == key);
        if !same {
            self.flush()?;
            let (current, current_key) = self.current.get_or_insert_with(|| (kind, String::new()));
            *current = kind;
            current_key.clear();
            current_key.push_str(key);
        }
        for (slot, wanted) in self.slots.iter_mut().zip(&self.versions) {
            if version <= *wanted && version > slot.version {
                slot.version = version;
                slot.present = value.is_some();
                slot.value.clear();
                slot.value.push_str(value.unwrap_or_default());
            }
        }
        Ok(())
    }

    /// Parses the current record into the map of each version that holds it.
    fn flush(&mut self) -> Result<()> {
        let Some((kind, key)) = &self.current else {
            return Ok(());
        };
        for (slot, map) in self.slots.iter_mut().zip(&mut self.maps) {
            if slot.version > 0 && slot.present {
                map.add(*kind, key, &slot.value)?;
            }
            slot.version = 0;
            slot.present = false;
        }
        Ok(())
    }

    /// The map of each version asked for, in the order asked. [`Error::Catalog`](crate::Error::Catalog)
    /// when one has no header.
    pub(crate) fn finish(mut self) -> Result<Vec<ShardingOptions>> {
        self.flush()?;
        self.maps.into_iter().map(PartialMap::into_options).collect()
    }
}

impl PartialMap {
    fn add(&mut self, kind: RecordKind, key: &str, value: &str) -> Result<()> {
        match kind {
            RecordKind::Header => self.header = Some(parse(kind, key, value)?),
            RecordKind::Shard => self.shards.push(parse(kind, key, value)?),
            RecordKind::Range => self.ranges.push(parse(kind, key, value)?),
            RecordKind::Pin => {
                self.pins.insert(key.to_owned(), parse::<String>(kind, key, value)?);
            }
            RecordKind::Directory => self.entries.push(parse(kind, key, value)?),
        }
        Ok(())
    }

    fn into_options(self) -> Result<ShardingOptions> {
        let header = self
            .header
            .ok_or_else(|| unreadable("header", "map", "the header record is missing"))?;
        let mut entries = self.entries;
        // Grown by doubling while read: give back what it did not fill.
        entries.shrink_to_fit();
        Ok(assemble(header, self.shards, self.ranges, self.pins, entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::records::MapRecords;
    use crate::map::{DirectoryDefinition, EntryState};

    fn options(version: i64, entries: &[(&str, EntryState)]) -> ShardingOptions {
        let mut options = ShardingOptions::from_json(
            r#"{"keyspace":"k","mapVersion":1,"virtualBucketCount":8,
                "shards":[{"shardId":"B","dataSource":"b.db"},{"shardId":"a","dataSource":"a.db"}],
                "bucketRanges":[{"startBucketInclusive":4,"endBucketExclusive":8,"shardId":"a"},
                                {"startBucketInclusive":0,"endBucketExclusive":4,"shardId":"B"}],
                "exactKeyPins":{"t1":"a"}}"#,
        )
        .unwrap();
        options.map_version = version;
        options.directories = vec![DirectoryDefinition::writable("Orders", "k")];
        options.directory_entries = entries
            .iter()
            .map(|(key, state)| DirectoryEntry {
                directory_name: "Orders".into(),
                lookup_key: (*key).into(),
                target_keyspace: "k".into(),
                route_key: "t1".into(),
                shard_id: "a".into(),
                map_version: 1,
                state: *state,
            })
            .collect();
        options
    }

    /// Stored rows of `versions` in record order (as the master's primary key gives them).
    fn rows(versions: &[&ShardingOptions]) -> Vec<(RecordKind, String, u64, Option<String>)> {
        let mut rows = Vec::new();
        let mut before = MapRecords::default();
        for options in versions {
            let records = MapRecords::of(options);
            let version = u64::try_from(options.map_version).unwrap();
            for change in before.changes_to(&records) {
                rows.push((change.kind, change.key, version, change.value));
            }
            before = records;
        }
        rows.sort_by(|a, b| (a.0.as_str(), &a.1, a.2).cmp(&(b.0.as_str(), &b.1, b.2)));
        rows
    }

    #[test]
    fn each_version_reads_back_as_the_assembler_builds_it() {
        let v1 = options(1, &[("SO-1", EntryState::Active), ("SO-2", EntryState::Active)]);
        let v2 = options(2, &[("SO-1", EntryState::Stale), ("SO-3", EntryState::Active)]);
        let v3 = options(3, &[("SO-3", EntryState::Active)]);
        let mut stream = MapStream::new(vec![3, 1, 2]);
        for (kind, key, version, value) in rows(&[&v1, &v2, &v3]) {
            stream.add(kind, &key, version, value.as_deref()).unwrap();
        }
        let maps = stream.finish().unwrap();
        assert_eq!(maps, vec![v3, v1, v2]);
    }

    #[test]
    fn a_version_without_a_header_or_a_record_that_does_not_parse_is_refused() {
        let mut stream = MapStream::new(vec![1]);
        stream.add(RecordKind::Pin, "t1", 1, Some("\"a\"")).unwrap();
        assert!(
            stream
                .finish()
                .unwrap_err()
                .to_string()
                .contains("header record is missing")
        );
        let mut stream = MapStream::new(vec![1]);
        stream
            .add(RecordKind::Directory, "6:orders|SO-1", 1, Some("{"))
            .unwrap();
        let err = stream.finish().unwrap_err().to_string();
        assert!(err.contains("'6:orders|SO-1' does not parse"), "{err}");
    }
}
