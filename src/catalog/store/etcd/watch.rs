//! A watch of a catalog's map records: how changes reach every router without polling, and
//! without reading the whole map again.
//!
//! The JSON gateway answers `POST /v3/watch` with a stream of JSON lines: first one saying the
//! watch was created, then one per batch of changes. A router's watch covers the version record
//! and the records of the generation it serves (`PREFIX/map/version` up to the end of
//! `PREFIX/records/{generation}/`), so each event carries a written record or the version record
//! itself. Records written for a pending map are kept until the version record makes that map
//! active; the router then applies them to the map it serves ([`MapStep::Activated`]). A version
//! record naming another generation (a seed, a large change) asks for the whole map again.
//!
//! When the stream ends (a member going away), the watch is opened again on any endpoint from
//! the revision after the last one seen, so nothing written meanwhile is missed; when that
//! history is gone (compacted), the owner reads the catalog again.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::EtcdStore;
use super::client::{WatchAnswer, prefix_end, watch_line};
use super::records::{VersionRecord, parse_record_key};
use crate::catalog::store::{CatalogStore as _, MapChanges, MapStep, StoredState};
use crate::error::{Error, Result};
use crate::map::records::{MapRecords, RecordChange, RecordId};

/// How many times a router reads the version record, watch and map again when a large change
/// moved the records to a new generation in between.
const ATTEMPTS: usize = 5;

/// An open watch stream.
#[derive(Debug)]
pub(crate) struct EtcdWatch {
    response: reqwest::Response,
    buffer: Vec<u8>,
    address: String,
}

impl EtcdWatch {
    /// Waits for etcd to confirm the watch; returns it and the revision it starts after.
    /// Changes made after this returns are reported.
    pub(super) async fn open(response: reqwest::Response, address: String) -> Result<(Self, i64)> {
        let mut watch = Self {
            response,
            buffer: Vec::new(),
            address,
        };
        // The first line confirms the watch; it carries no events.
        let created = watch.answer().await?;
        Ok((watch, created.revision))
    }

    /// The next answer line.
    async fn answer(&mut self) -> Result<WatchAnswer> {
        let line = self.next_line().await?;
        watch_line(&line).map_err(|reason| self.ended(&reason))
    }

    async fn next_line(&mut self) -> Result<Vec<u8>> {
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Ok(line);
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.buffer.extend_from_slice(&chunk),
                // A last line without a newline.
                Ok(None) if !self.buffer.iter().all(u8::is_ascii_whitespace) => {
                    return Ok(std::mem::take(&mut self.buffer));
                }
                Ok(None) => return Err(self.ended("the stream ended")),
                Err(err) => return Err(self.ended(&err.to_string())),
            }
        }
    }

    fn ended(&self, reason: &str) -> Error {
        Error::CatalogUnavailable {
            reason: format!("the watch of {} ended: {reason}", self.address),
        }
    }
}

/// A router's watch of the map records (see the module documentation).
#[derive(Debug)]
pub(crate) struct EtcdFeed {
    store: EtcdStore,
    watch: EtcdWatch,
    /// Whether the stream was just opened again and has not answered since.
    resumed: bool,
    followed: Followed,
}

/// What a router's watch has read: where the served map's records live and what was written
/// since.
#[derive(Debug, Default)]
struct Followed {
    version_key: Vec<u8>,
    /// The key prefix of the records of `generation`.
    records: Vec<u8>,
    generation: String,
    /// The active version the router serves.
    active: u64,
    /// The newest revision whose events were read.
    seen: i64,
    /// Records written by versions after `active`, by version.
    written: BTreeMap<u64, BTreeMap<RecordId, Option<String>>>,
}

impl EtcdStore {
    /// Opens a watch of the version record and the records of the generation they live in,
    /// then reads the maps: the state read and the watch that follows it.
    pub(super) async fn follow(&self) -> Result<(StoredState, EtcdFeed)> {
        for _ in 0..ATTEMPTS {
            let generation = self
                .version_record()
                .await?
                .map(|(record, _)| record.generation)
                .unwrap_or_default();
            let (watch, created) = self.open_watch(&generation, None).await?;
            let state = self.state().await?;
            if state.generation != generation {
                continue;
            }
            let feed = EtcdFeed::new(self.clone(), watch, &state, created);
            return Ok((state, feed));
        }
        Err(Error::CatalogUnavailable {
            reason: format!("the map records of {} kept moving while they were read", self.address()),
        })
    }

    /// The records of `generation` written by versions `from + 1 ..= to` (newest per record)
    /// in revisions `after + 1 ..= upto`, replayed from etcd's history by a watch: what a
    /// catalog handle follows instead of reading the maps whole. `None` when that history is
    /// gone (compacted), the watch fails, or it takes longer than a second.
    pub(super) async fn replay(
        &self,
        generation: &str,
        (after, upto): (i64, i64),
        (from, to): (u64, u64),
    ) -> Option<Vec<RecordChange>> {
        let prefix = self.records_prefix(generation);
        let work = async {
            let (mut watch, _) = self.open_watch(generation, Some(after + 1)).await?;
            let mut newest: BTreeMap<RecordId, (u64, Option<String>)> = BTreeMap::new();
            loop {
                let answer = watch.answer().await?;
                for event in &answer.events {
                    if let Some(rest) = event.kv.key.strip_prefix(prefix.as_slice())
                        && let Some((kind, key, version)) = parse_record_key(rest)
                        && (from + 1..=to).contains(&version)
                        && event.kv.mod_revision <= upto
                        && !event.deleted
                    {
                        let value =
                            (!event.kv.value.is_empty()).then(|| String::from_utf8_lossy(&event.kv.value).into_owned());
                        let slot = newest.entry((kind, key)).or_insert((version, None));
                        if version >= slot.0 {
                            *slot = (version, value);
                        }
                    }
                }
                if answer.events.iter().any(|event| event.kv.mod_revision >= upto) {
                    break;
                }
            }
            Ok::<_, Error>(newest)
        };
        let newest = tokio::time::timeout(std::time::Duration::from_secs(1), work)
            .await
            .ok()?
            .ok()?;
        Some(
            newest
                .into_iter()
                .map(|((kind, key), (_, value))| RecordChange { kind, key, value })
                .collect(),
        )
    }

    async fn open_watch(&self, generation: &str, from: Option<i64>) -> Result<(EtcdWatch, i64)> {
        let start = self.version_key();
        let end = prefix_end(&self.records_prefix(generation));
        let response = self.client().watch(&start, &end, from).await?;
        EtcdWatch::open(response, self.address().to_owned()).await
    }
}

impl EtcdFeed {
    fn new(store: EtcdStore, watch: EtcdWatch, state: &StoredState, created: i64) -> Self {
        let followed = Followed::new(
            store.version_key(),
            store.records_prefix(&state.generation),
            state,
            created,
        );
        Self {
            store,
            watch,
            resumed: false,
            followed,
        }
    }

    /// The next answer, opening the stream again from the revision after the last one seen
    /// when it ended. An error when that fails too.
    async fn answer(&mut self) -> Result<WatchAnswer> {
        loop {
            match self.watch.answer().await {
                Ok(answer) => {
                    self.resumed = false;
                    return Ok(answer);
                }
                Err(err) if self.resumed => return Err(err),
                Err(err) => {
                    let from = self.followed.seen + 1;
                    tracing::debug!(error = %err, "catalog watch ended; resuming from revision {from}");
                    let (watch, _) = self.store.open_watch(&self.followed.generation, Some(from)).await?;
                    self.watch = watch;
                    self.resumed = true;
                }
            }
        }
    }
}

impl Followed {
    fn new(version_key: Vec<u8>, records: Vec<u8>, state: &StoredState, created: i64) -> Self {
        let mut written = BTreeMap::new();
        // The pending map's records were read with the state: they become active later.
        if let (Some(active), Some(pending)) = (&state.active, &state.pending) {
            let changes = MapRecords::of(&active.options).changes_to(&MapRecords::of(&pending.options));
            let records: BTreeMap<RecordId, Option<String>> = changes
                .into_iter()
                .map(|change| ((change.kind, change.key), change.value))
                .collect();
            written.insert(pending.version, records);
        }
        Self {
            version_key,
            records,
            generation: state.generation.clone(),
            active: state.active.as_ref().map_or(0, |map| map.version),
            seen: created,
            written,
        }
    }

    /// Takes in one answer's events: a step when the active version moved.
    fn take_in(&mut self, answer: WatchAnswer) -> Option<MapStep> {
        let mut active = self.active;
        for event in answer.events {
            self.seen = self.seen.max(event.kv.mod_revision);
            if event.kv.key == self.version_key {
                let Ok(record) = serde_json::from_slice::<VersionRecord>(&event.kv.value) else {
                    return Some(MapStep::Reload);
                };
                if event.deleted || record.generation != self.generation || record.active_version < active {
                    return Some(MapStep::Reload);
                }
                active = record.active_version;
            } else if let Some(rest) = event.kv.key.strip_prefix(self.records.as_slice())
                && let Some((kind, key, version)) = parse_record_key(rest)
                && version > self.active
                && !event.deleted
            {
                let value = (!event.kv.value.is_empty()).then(|| String::from_utf8_lossy(&event.kv.value).into_owned());
                self.written.entry(version).or_default().insert((kind, key), value);
            }
        }
        (active > self.active).then(|| {
            let changes = self.changes_up_to(active);
            self.active = active;
            MapStep::Activated {
                version: active,
                changes,
            }
        })
    }

    /// The records that turn the served map into version `to`, newest per record.
    fn changes_up_to(&mut self, to: u64) -> Vec<RecordChange> {
        let later = self.written.split_off(&(to + 1));
        let mut newest: BTreeMap<RecordId, Option<String>> = BTreeMap::new();
        for (_, records) in std::mem::replace(&mut self.written, later) {
            newest.extend(records);
        }
        newest
            .into_iter()
            .map(|((kind, key), value)| RecordChange { kind, key, value })
            .collect()
    }
}

#[async_trait]
impl MapChanges for EtcdFeed {
    async fn changed(&mut self) -> Result<MapStep> {
        loop {
            let answer = self.answer().await?;
            if let Some(step) = self.followed.take_in(answer) {
                return Ok(step);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::client::{Kv, WatchEvent};
    use super::*;
    use crate::catalog::store::StoredMap;
    use crate::map::records::RecordKind;
    use crate::map::{BucketRange, ShardDefinition, ShardingOptions};

    fn map(version: i64, pins: &[(&str, &str)]) -> StoredMap {
        let options = ShardingOptions {
            keyspace: "k".into(),
            map_version: version,
            virtual_bucket_count: 4,
            shards: vec![
                ShardDefinition::local("s0", "s0.db"),
                ShardDefinition::local("s1", "s1.db"),
            ],
            bucket_ranges: vec![BucketRange::new(0, 4, "s0")],
            exact_key_pins: pins.iter().map(|(k, s)| ((*k).to_owned(), (*s).to_owned())).collect(),
            directories: vec![],
            directory_entries: vec![],
        };
        StoredMap {
            options,
            version: u64::try_from(version).unwrap(),
        }
    }

    fn put(key: &str, value: &str, revision: i64) -> WatchEvent {
        WatchEvent {
            kv: Kv {
                key: key.as_bytes().to_vec(),
                value: value.as_bytes().to_vec(),
                mod_revision: revision,
            },
            deleted: false,
        }
    }

    fn version(generation: &str, active: u64, pending: Option<u64>, revision: i64) -> WatchEvent {
        let record = VersionRecord {
            keyspace: "k".into(),
            generation: generation.into(),
            active_version: active,
            pending_version: pending,
            written_utc: String::new(),
        };
        put("/p/map/version", &serde_json::to_string(&record).unwrap(), revision)
    }

    fn answer(events: Vec<WatchEvent>) -> WatchAnswer {
        WatchAnswer { revision: 0, events }
    }

    fn ids(step: Option<MapStep>) -> (u64, Vec<(RecordKind, String, Option<String>)>) {
        match step {
            Some(MapStep::Activated { version, changes }) => {
                (version, changes.into_iter().map(|c| (c.kind, c.key, c.value)).collect())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_activation_carries_the_records_written_since_the_served_version() {
        // Served: version 1; read with it, a pending version 2 that pins t2.
        let state = StoredState {
            active: Some(map(1, &[("t1", "s0")])),
            pending: Some(map(2, &[("t1", "s0"), ("t2", "s1")])),
            revision: 10,
            generation: "g".into(),
            epoch: String::new(),
        };
        let mut followed = Followed::new(b"/p/map/version".to_vec(), b"/p/records/g/".to_vec(), &state, 10);
        // Version 2 becomes active: the records read with the pending map.
        let (v, changes) = ids(followed.take_in(answer(vec![version("g", 2, None, 11)])));
        assert_eq!(v, 2);
        assert_eq!(changes.len(), 2);
        assert_eq!((changes[1].0, changes[1].1.as_str()), (RecordKind::Pin, "t2"));
        // Version 3 written as pending (records and version record in one revision), then
        // activated; a record of another generation and one of an older version are ignored.
        let written = vec![
            put("/p/records/g/header/map/00000000000000000003", "{}", 12),
            put("/p/records/g/pin/t%2F3/00000000000000000003", "\"s1\"", 12),
            put("/p/records/g/pin/t1/00000000000000000003", "", 12),
            put("/p/records/g/pin/old/00000000000000000002", "\"s0\"", 12),
            put("/p/records/h/pin/x/00000000000000000003", "\"s0\"", 12),
            version("g", 2, Some(3), 12),
        ];
        assert!(followed.take_in(answer(written)).is_none());
        let (v, changes) = ids(followed.take_in(answer(vec![version("g", 3, None, 13)])));
        assert_eq!(v, 3);
        assert_eq!(
            changes,
            vec![
                (RecordKind::Header, "map".to_owned(), Some("{}".to_owned())),
                (RecordKind::Pin, "t/3".to_owned(), Some("\"s1\"".to_owned())),
                (RecordKind::Pin, "t1".to_owned(), None),
            ]
        );
        assert_eq!(followed.seen, 13);
        // A seed or a large change moves the records to another generation.
        assert!(matches!(
            followed.take_in(answer(vec![version("h", 4, None, 20)])),
            Some(MapStep::Reload)
        ));
    }
}
