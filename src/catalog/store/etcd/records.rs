//! The map records in etcd, and the version record that makes them a map.
//!
//! Each record version is one key, `PREFIX/records/{generation}/{kind}/{key}/{mapVersion}`
//! (the key with `%` and `/` percent-encoded, the version in 20 digits), whose value is the
//! record's JSON, or empty for a deletion. `PREFIX/map/version` names the generation, the active
//! and the pending map versions; routers watch it.
//!
//! A change that fits one transaction (at most [`MAX_OPS`] operations, etcd allowing 128) writes
//! its records, the version record and its history entry in that transaction, comparing the
//! version record's revision. A larger one (a seed, an import, a change of many records) is
//! written in chunks to a new generation, which no reader looks at until a final transaction
//! points the version record at it and deletes every other generation: a write stopped half way
//! leaves an unread generation behind, removed by the next large write, and never half a map.

use std::collections::BTreeSet;

use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::EtcdStore;
use super::client::{delete_range, modified_at, prefix_end, put};
use crate::data::now_utc;
use crate::error::Result;
use crate::map::records::{MapAssembler, MapRecords, RecordChange, RecordKind};

/// The most operations one transaction carries (etcd's default `--max-txn-ops` is 128).
pub(super) const MAX_OPS: usize = 100;

/// The most record bytes one transaction carries: far below etcd's default request limit
/// (`--max-request-bytes`, 1.5 MiB), base64 and JSON included.
const MAX_BYTES: usize = 256 * 1024;

/// Keys read per range request.
const PAGE: usize = 5000;

/// Chunk transactions in flight at once during a large write.
const IN_FLIGHT: usize = 8;

/// `PREFIX/map/version`: which generation holds the maps, and which versions are active and
/// pending.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct VersionRecord {
    pub keyspace: String,
    pub generation: String,
    pub active_version: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_version: Option<u64>,
    #[serde(default)]
    pub written_utc: String,
}

/// One record version to write.
pub(super) type RecordRow = (u64, RecordChange);

/// What one write of map records does besides its records.
pub(super) struct Commit {
    /// The version record's revision the write is based on (0: none may exist); `None` writes
    /// whatever is stored.
    pub expected_revision: Option<i64>,
    /// The generation the records join; `None` starts a new one holding only `rows`.
    pub base_generation: Option<String>,
    /// The version record to write (its generation is set by the write).
    pub version: VersionRecord,
    /// Further comparisons of the final transaction.
    pub compare: Vec<Json>,
    /// Further operations of the final transaction (a history entry, ...).
    pub operations: Vec<Json>,
}

impl EtcdStore {
    pub(super) fn version_key(&self) -> Vec<u8> {
        self.key("map/version")
    }

    pub(super) fn records_prefix(&self, generation: &str) -> Vec<u8> {
        self.key(&format!("records/{generation}/"))
    }

    fn record_key(&self, generation: &str, kind: RecordKind, key: &str, version: u64) -> Vec<u8> {
        let escaped = key.replace('%', "%25").replace('/', "%2F");
        self.key(&format!(
            "records/{generation}/{}/{escaped}/{version:020}",
            kind.as_str()
        ))
    }

    /// The version record and its revision.
    pub(super) async fn version_record(&self) -> Result<Option<(VersionRecord, i64)>> {
        let Some(kv) = self.get("map/version").await? else {
            return Ok(None);
        };
        let record = serde_json::from_slice(&kv.value).map_err(|err| crate::error::Error::Catalog {
            reason: format!("the version record in {} does not parse: {err}", self.address),
        })?;
        Ok(Some((record, kv.mod_revision)))
    }

    /// Calls `each` with every key and value under `prefix`, page by page.
    async fn scan(&self, prefix: &[u8], mut each: impl FnMut(&[u8], Vec<u8>)) -> Result<()> {
        let end = prefix_end(prefix);
        let mut start = prefix.to_vec();
        loop {
            let (kvs, more) = self.client.range_page(&start, &end, PAGE).await?;
            let Some(last) = kvs.last().map(|kv| kv.key.clone()) else {
                return Ok(());
            };
            for kv in kvs {
                each(&kv.key, kv.value);
            }
            if !more {
                return Ok(());
            }
            start = last;
            start.push(0);
        }
    }

    /// The records of the maps at `versions` in `generation`, and every version that wrote
    /// records there.
    pub(super) async fn read_maps(
        &self,
        generation: &str,
        versions: Vec<u64>,
    ) -> Result<(Vec<MapRecords>, BTreeSet<u64>)> {
        let prefix = self.records_prefix(generation);
        let mut assembler = MapAssembler::new(versions);
        let mut seen = BTreeSet::new();
        self.scan(&prefix, |key, value| {
            if let Some((kind, record_key, version)) = parse_record_key(&key[prefix.len()..]) {
                seen.insert(version);
                let value = (!value.is_empty()).then(|| String::from_utf8_lossy(&value).into_owned());
                assembler.add(kind, record_key, version, value);
            }
        })
        .await?;
        Ok((assembler.finish(), seen))
    }

    /// Writes `rows` and the version record as [`Commit`] says. `false` when a comparison
    /// failed (nothing became visible).
    pub(super) async fn commit(&self, rows: Vec<RecordRow>, mut commit: Commit) -> Result<bool> {
        let mut compare = commit.compare;
        if let Some(revision) = commit.expected_revision {
            compare.push(modified_at(&self.version_key(), revision));
        }
        let bytes: usize = rows
            .iter()
            .map(|(_, c)| c.key.len() + c.value.as_ref().map_or(0, String::len))
            .sum();
        if let Some(generation) = &commit.base_generation
            && rows.len() + commit.operations.len() < MAX_OPS
            && bytes < MAX_BYTES
        {
            commit.version.generation = generation.clone();
            let mut operations = self.row_puts(generation, &rows);
            operations.push(self.version_put(&commit.version));
            operations.extend(commit.operations);
            return self.client.txn(compare, operations).await;
        }
        let generation = new_generation();
        if let Some(base) = &commit.base_generation {
            self.copy_generation(base, &generation).await?;
        }
        self.write_chunked(self.row_puts(&generation, &rows)).await?;
        commit.version.generation = generation.clone();
        let all = self.key("records/");
        let mine = self.records_prefix(&generation);
        let mut operations = vec![
            self.version_put(&commit.version),
            delete_range(&all, &mine),
            delete_range(&prefix_end(&mine), &prefix_end(&all)),
        ];
        operations.extend(commit.operations);
        let committed = self.client.txn(compare, operations).await?;
        if !committed {
            let _ = self
                .client
                .txn(Vec::new(), vec![delete_range(&mine, &prefix_end(&mine))])
                .await;
        }
        Ok(committed)
    }

    fn version_put(&self, version: &VersionRecord) -> Json {
        let mut version = version.clone();
        version.written_utc = now_utc();
        put(
            &self.version_key(),
            &serde_json::to_vec(&version).unwrap_or_default(),
            None,
        )
    }

    fn row_puts(&self, generation: &str, rows: &[RecordRow]) -> Vec<Json> {
        rows.iter()
            .map(|(version, change)| {
                let key = self.record_key(generation, change.kind, &change.key, *version);
                put(&key, change.value.as_deref().unwrap_or_default().as_bytes(), None)
            })
            .collect()
    }

    /// Copies every record version of generation `from` into `to`, page by page.
    async fn copy_generation(&self, from: &str, to: &str) -> Result<()> {
        let source = self.records_prefix(from);
        let target = self.records_prefix(to);
        let end = prefix_end(&source);
        let mut start = source.clone();
        loop {
            let (kvs, more) = self.client.range_page(&start, &end, PAGE).await?;
            let Some(last) = kvs.last().map(|kv| kv.key.clone()) else {
                return Ok(());
            };
            let puts = kvs
                .iter()
                .map(|kv| {
                    let mut key = target.clone();
                    key.extend_from_slice(&kv.key[source.len()..]);
                    put(&key, &kv.value, None)
                })
                .collect();
            self.write_chunked(puts).await?;
            if !more {
                return Ok(());
            }
            start = last;
            start.push(0);
        }
    }

    /// Writes `puts` in transactions of at most [`MAX_OPS`] operations and [`MAX_BYTES`] bytes,
    /// a few at a time.
    async fn write_chunked(&self, puts: Vec<Json>) -> Result<()> {
        let mut chunks: Vec<Vec<Json>> = Vec::new();
        let mut bytes = 0;
        for operation in puts {
            let size = operation.to_string().len();
            match chunks.last_mut() {
                Some(chunk) if chunk.len() < MAX_OPS && bytes + size < MAX_BYTES => {
                    bytes += size;
                    chunk.push(operation);
                }
                _ => {
                    bytes = size;
                    chunks.push(vec![operation]);
                }
            }
        }
        let mut written = futures_util::stream::iter(chunks)
            .map(|chunk| self.client.txn(Vec::new(), chunk))
            .buffer_unordered(IN_FLIGHT);
        while let Some(outcome) = written.next().await {
            outcome?;
        }
        Ok(())
    }
}

/// `(kind, key, version)` of a record key's part after the generation.
pub(super) fn parse_record_key(rest: &[u8]) -> Option<(RecordKind, String, u64)> {
    let rest = std::str::from_utf8(rest).ok()?;
    let (kind, rest) = rest.split_once('/')?;
    let (key, version) = rest.rsplit_once('/')?;
    let key = key.replace("%2F", "/").replace("%25", "%");
    Some((RecordKind::parse(kind)?, key, version.parse().ok()?))
}

/// A generation name: ordered by time, unique.
fn new_generation() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let unique = uuid::Uuid::new_v4().simple().to_string();
    format!("{nanos:024}-{}", &unique[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_keys_read_back_whatever_the_route_key_holds() {
        for key in ["tenant-1", "a/b", "100%/x%2F", ""] {
            let escaped = key.replace('%', "%25").replace('/', "%2F");
            let rest = format!("pin/{escaped}/{:020}", 7);
            assert_eq!(
                parse_record_key(rest.as_bytes()),
                Some((RecordKind::Pin, key.to_owned(), 7))
            );
        }
    }
}
