//! The rows a master file reads and writes: record rows, the versions row, and the epoch a
//! seed or an import writes.

use super::{StoredMap, StoredState};
use crate::data::{Params, RowRef, ValueRef};
use crate::engine::{Database, EngineConfig};
use crate::error::Result;
use crate::map::record_stream::MapStream;
use crate::map::records::{RecordChange, RecordKind};

/// How a master file is opened: one reader, and no bound on the rows or bytes one read buffers,
/// since reading a map whole (a directory of 1,000,000 entries is 1,000,000 records) is bounded
/// by the catalog itself, not by what a client asked for.
pub(in crate::catalog::store) fn catalog_config() -> EngineConfig {
    EngineConfig {
        readers: 1,
        max_result_rows: usize::MAX,
        max_result_bytes: usize::MAX,
        ..EngineConfig::default()
    }
}

/// A stored record row: kind, key, map version, value (`None`: deleted at that version).
pub(in crate::catalog::store) type StoredRow = (RecordKind, String, u64, Option<String>);

/// The versions row, read with the records after it.
pub(in crate::catalog::store) struct ReadVersions {
    pub(in crate::catalog::store) active: u64,
    pub(in crate::catalog::store) pending: Option<u64>,
    /// What the last seed or import wrote (empty before the first).
    pub(in crate::catalog::store) epoch: String,
    pub(in crate::catalog::store) records: Vec<StoredRow>,
}

/// A value no other seed or import writes: the time, the process and a counter.
pub(in crate::catalog::store) fn new_epoch() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let count = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{nanos}-{}-{count}", std::process::id())
}

/// `changes` as the JSON array `INSERT_RECORDS` reads: `[[kind, key, value], ...]`.
pub(in crate::catalog::store) fn records_json(changes: &[RecordChange]) -> String {
    let rows: Vec<serde_json::Value> = changes
        .iter()
        .map(|change| serde_json::json!([change.kind.as_str(), change.key, change.value]))
        .collect();
    serde_json::Value::Array(rows).to_string()
}

/// The active and pending maps read by `sql` (the versions row first, then the record rows in
/// record order), built while the rows are read: the read holds the maps and one record's
/// stored text, never every row.
pub(in crate::catalog::store) async fn read_state(db: &Database, sql: &str) -> Result<StoredState> {
    let read = db
        .fold_read_only(sql, Params::none(), StateRows::default(), StateRows::add)
        .await?;
    let (Some((active, pending, epoch)), Some(maps)) = (read.versions, read.maps) else {
        return Ok(StoredState::default());
    };
    let mut maps = maps.finish()?.into_iter();
    let mut stored = |version: u64| maps.next().map(|options| StoredMap { options, version });
    Ok(StoredState {
        active: stored(active),
        pending: pending.and_then(&mut stored),
        revision: 0,
        generation: String::new(),
        epoch,
    })
}

/// The versions row and the maps of the versions it names, as the rows come.
#[derive(Default)]
struct StateRows {
    versions: Option<(u64, Option<u64>, String)>,
    maps: Option<MapStream>,
}

impl StateRows {
    fn add(&mut self, row: &RowRef<'_>) -> Result<()> {
        let Some(maps) = self.maps.as_mut() else {
            let active = version_at(row, 2).unwrap_or(0);
            let pending = version_at(row, 3);
            let epoch = text_at(row, 1).unwrap_or_default().to_owned();
            let mut versions = vec![active];
            versions.extend(pending);
            self.maps = Some(MapStream::new(versions));
            self.versions = Some((active, pending, epoch));
            return Ok(());
        };
        let kind = text_at(row, 0).and_then(RecordKind::parse);
        let (Some(kind), Some(key), Some(version)) = (kind, text_at(row, 1), version_at(row, 2)) else {
            return Ok(());
        };
        maps.add(kind, key, version, text_at(row, 3))
    }
}

fn text_at<'a>(row: &RowRef<'a>, index: usize) -> Option<&'a str> {
    match row.get_ref(index) {
        Ok(ValueRef::Text(text)) => Some(text),
        _ => None,
    }
}

fn version_at(row: &RowRef<'_>, index: usize) -> Option<u64> {
    match row.get_ref(index) {
        Ok(ValueRef::Integer(value)) => u64::try_from(value).ok(),
        _ => None,
    }
}
