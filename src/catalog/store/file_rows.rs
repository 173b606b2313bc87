//! The rows a master file reads and writes: record rows, the versions row, and the epoch a
//! seed or an import writes.

use crate::engine::EngineConfig;
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
