//! The SQLite master file: the embedded catalog store.
//!
//! One file holds the active map, a pending map, catalog history, migration checkpoints and
//! migration history, with a schema-version row so later releases can migrate it. Reading never
//! creates tables: a file without them simply has "no map".

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::{CatalogStore, HistoryRow, NewMap, ReshardRecord, RunnerClaim, StoredMap, StoredState};
use crate::data::now_utc;
use crate::data::{Audit, CatalogHistoryEntry, Params, SqlResult, Value};
use crate::engine::{Database, EngineConfig, Role};
use crate::error::{Error, Result};

/// The catalog schema version this release writes.
pub const CATALOG_SCHEMA_VERSION: i64 = 1;

/// Whether the catalog's tables exist.
const HAS_SCHEMA_SQL: &str =
    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'shardlite_catalog_meta'";

/// The active map's version, without reading the map.
const ACTIVE_VERSION_SQL: &str = "SELECT map_version FROM shardlite_active_map WHERE slot = 1";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS shardlite_catalog_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shardlite_active_map (
    slot INTEGER PRIMARY KEY CHECK (slot = 1),
    keyspace TEXT NOT NULL,
    map_version INTEGER NOT NULL,
    map_json TEXT NOT NULL,
    updated_utc TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shardlite_pending_map (
    slot INTEGER PRIMARY KEY CHECK (slot = 1),
    keyspace TEXT NOT NULL,
    map_version INTEGER NOT NULL,
    map_json TEXT NOT NULL,
    written_utc TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shardlite_catalog_history (
    entry_id INTEGER PRIMARY KEY AUTOINCREMENT,
    applied_utc TEXT NOT NULL,
    keyspace TEXT NOT NULL,
    map_version INTEGER NOT NULL,
    operator TEXT,
    comment TEXT,
    metadata_only_ownership_change INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS shardlite_migration_checkpoints (
    migration_id TEXT PRIMARY KEY,
    updated_utc TEXT NOT NULL,
    keyspace TEXT NOT NULL,
    status TEXT NOT NULL,
    payload_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shardlite_migration_runners (
    migration_id TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    process_start TEXT NOT NULL,
    since_utc TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shardlite_migration_history (
    entry_id INTEGER PRIMARY KEY AUTOINCREMENT,
    completed_utc TEXT NOT NULL,
    keyspace TEXT NOT NULL,
    migration_id TEXT NOT NULL,
    payload_json TEXT NOT NULL
);
";

/// A master catalog file.
#[derive(Debug, Clone)]
pub(crate) struct FileStore {
    pub(super) db: Database,
    path: PathBuf,
}

impl FileStore {
    /// Opens the master file at `path` (creating an empty file and its folder if missing), and
    /// refuses one SQLite finds damaged or one written by a newer release.
    pub async fn open(path: &Path) -> Result<Self> {
        let config = EngineConfig {
            readers: 1,
            ..EngineConfig::default()
        };
        let unreadable = |err: Error| crate::engine::catalog_unreadable(path, err);
        let db = Database::open_as(path, "master catalog".to_owned(), config, Role::Catalog)
            .await
            .map_err(unreadable)?;
        let store = Self {
            db,
            path: path.to_path_buf(),
        };
        store.check_intact().await.map_err(unreadable)?;
        store.check_schema_version().await.map_err(unreadable)?;
        Ok(store)
    }

    /// Refuses a master SQLite finds damaged (a truncated or partly overwritten file), which
    /// could otherwise open and serve a map with pages missing. The master is small, so SQLite's
    /// `quick_check` costs little at open.
    async fn check_intact(&self) -> Result<()> {
        let result = self
            .db
            .execute_read_only("SELECT quick_check FROM pragma_quick_check", Params::none())
            .await?;
        let verdict = first_text(&result).unwrap_or_default();
        if verdict == "ok" {
            return Ok(());
        }
        Err(Error::Catalog {
            reason: format!(
                "the master '{}' is damaged (SQLite's quick_check says: {verdict}): restore it from a backup",
                self.path.display()
            ),
        })
    }

    async fn check_schema_version(&self) -> Result<()> {
        if !self.has_schema().await? {
            return Ok(());
        }
        let result = self
            .db
            .execute_read_only(
                "SELECT value FROM shardlite_catalog_meta WHERE key = 'schema_version'",
                Params::none(),
            )
            .await?;
        super::super::check_schema_version(first_text(&result).and_then(|v| v.parse::<i64>().ok()))
    }

    async fn payloads(&self, sql: &str) -> Result<Vec<String>> {
        if !self.has_schema().await? {
            return Ok(Vec::new());
        }
        let result = self.db.execute_read_only(sql, Params::none()).await?;
        Ok(result.rows.iter().map(|row| text(row, 0).unwrap_or_default()).collect())
    }
}

#[async_trait]
impl CatalogStore for FileStore {
    async fn has_schema(&self) -> Result<bool> {
        let result = self.db.execute_read_only(HAS_SCHEMA_SQL, Params::none()).await?;
        Ok(first_i64(&result).unwrap_or(0) > 0)
    }

    async fn ensure_schema(&self) -> Result<()> {
        self.db
            .execute(
                &format!(
                    "{SCHEMA} INSERT INTO shardlite_catalog_meta (key, value) VALUES ('schema_version', '{CATALOG_SCHEMA_VERSION}') \
                     ON CONFLICT (key) DO NOTHING;"
                ),
                Params::none(),
            )
            .await?;
        Ok(())
    }

    async fn state(&self) -> Result<StoredState> {
        if !self.has_schema().await? {
            return Ok(StoredState::default());
        }
        let result = self
            .db
            .execute_read_only(
                "SELECT 'active', map_version, map_json FROM shardlite_active_map WHERE slot = 1 \
                 UNION ALL SELECT 'pending', map_version, map_json FROM shardlite_pending_map WHERE slot = 1",
                Params::none(),
            )
            .await?;
        let mut state = StoredState::default();
        for row in &result.rows {
            let map = StoredMap {
                json: text(row, 2).unwrap_or_default(),
                version: row
                    .get(1)
                    .and_then(Value::as_i64)
                    .and_then(|v| u64::try_from(v).ok())
                    .unwrap_or(0),
                revision: 0,
            };
            match row.first().and_then(Value::as_str) {
                Some("active") => state.active = Some(map),
                _ => state.pending = Some(map),
            }
        }
        Ok(state)
    }

    async fn active_version(&self) -> Result<Option<u64>> {
        if !self.has_schema().await? {
            return Ok(None);
        }
        let result = self.db.execute_read_only(ACTIVE_VERSION_SQL, Params::none()).await?;
        Ok(first_i64(&result).and_then(|v| u64::try_from(v).ok()))
    }

    /// [`active_version`](Self::active_version) on the calling thread, for blocking callers.
    fn active_version_blocking(&self) -> Result<Option<u64>> {
        let schema = self.db.execute_read_only_blocking(HAS_SCHEMA_SQL, &Params::none())?;
        if first_i64(&schema).unwrap_or(0) == 0 {
            return Ok(None);
        }
        let result = self
            .db
            .execute_read_only_blocking(ACTIVE_VERSION_SQL, &Params::none())?;
        Ok(first_i64(&result).and_then(|v| u64::try_from(v).ok()))
    }

    async fn seed(&self, map: &NewMap, history: &HistoryRow) -> Result<()> {
        self.ensure_schema().await?;
        self.db
            .execute_atomic(
                "INSERT INTO shardlite_active_map (slot, keyspace, map_version, map_json, updated_utc)
                     VALUES (1, :keyspace, :version, :json, :now)
                     ON CONFLICT (slot) DO UPDATE SET keyspace = excluded.keyspace,
                         map_version = excluded.map_version, map_json = excluded.map_json,
                         updated_utc = excluded.updated_utc;
                 DELETE FROM shardlite_pending_map;
                 INSERT INTO shardlite_catalog_history (applied_utc, keyspace, map_version, operator, comment)
                     VALUES (:now, :keyspace, :history_version, :operator, :comment);",
                Params::named([
                    ("keyspace", Value::from(map.keyspace.as_str())),
                    ("version", Value::Integer(stored_int(map.version))),
                    ("history_version", Value::Integer(stored_int(history.version))),
                    ("json", Value::from(map.json.as_str())),
                    ("now", Value::Text(now_utc())),
                    ("operator", Value::from(history.audit.operator.clone())),
                    ("comment", Value::from(history.audit.comment.clone())),
                ]),
            )
            .await?;
        Ok(())
    }

    async fn write_pending(&self, expected: &StoredState, map: &NewMap, history: &HistoryRow) -> Result<bool> {
        self.ensure_schema().await?;
        let written = self
            .db
            .execute_atomic(
                "INSERT INTO shardlite_pending_map (slot, keyspace, map_version, map_json, written_utc)
                     SELECT 1, :keyspace, :version, :json, :now
                     WHERE (SELECT map_version FROM shardlite_active_map WHERE slot = 1) = :active
                       AND coalesce((SELECT map_version FROM shardlite_pending_map WHERE slot = 1), -1) = :pending
                     ON CONFLICT (slot) DO UPDATE SET keyspace = excluded.keyspace,
                         map_version = excluded.map_version, map_json = excluded.map_json,
                         written_utc = excluded.written_utc;
                 INSERT INTO shardlite_catalog_history
                     (applied_utc, keyspace, map_version, operator, comment, metadata_only_ownership_change)
                     SELECT :now, :keyspace, :version, :operator, :comment, :metadata_only WHERE changes() > 0;",
                Params::named([
                    ("keyspace", Value::from(map.keyspace.as_str())),
                    ("version", Value::Integer(stored_int(map.version))),
                    ("json", Value::from(map.json.as_str())),
                    ("now", Value::Text(now_utc())),
                    (
                        "active",
                        Value::Integer(expected.active.as_ref().map_or(-1, |m| stored_int(m.version))),
                    ),
                    (
                        "pending",
                        Value::Integer(expected.pending.as_ref().map_or(-1, |m| stored_int(m.version))),
                    ),
                    ("operator", Value::from(history.audit.operator.clone())),
                    ("comment", Value::from(history.audit.comment.clone())),
                    ("metadata_only", Value::from(history.metadata_only)),
                ]),
            )
            .await?;
        Ok(written.rows_affected > 0)
    }

    async fn activate(&self, expected: &StoredState, history: &HistoryRow) -> Result<bool> {
        let Some(pending) = &expected.pending else {
            return Ok(false);
        };
        let moved = self
            .db
            .execute_atomic(
                "INSERT INTO shardlite_active_map (slot, keyspace, map_version, map_json, updated_utc)
                     SELECT 1, keyspace, map_version, map_json, :now FROM shardlite_pending_map
                     WHERE slot = 1 AND map_version = :expected
                     ON CONFLICT (slot) DO UPDATE SET keyspace = excluded.keyspace,
                         map_version = excluded.map_version, map_json = excluded.map_json,
                         updated_utc = excluded.updated_utc;
                 INSERT INTO shardlite_catalog_history (applied_utc, keyspace, map_version, operator, comment)
                     SELECT :now, :keyspace, :expected, :operator, :comment WHERE changes() > 0;
                 DELETE FROM shardlite_pending_map WHERE map_version = :expected;",
                Params::named([
                    ("now", Value::Text(now_utc())),
                    ("expected", Value::Integer(stored_int(pending.version))),
                    ("keyspace", Value::from(history.keyspace.as_str())),
                    ("operator", Value::from(history.audit.operator.clone())),
                    ("comment", Value::from(history.audit.comment.clone())),
                ]),
            )
            .await?;
        Ok(moved.rows_affected > 0)
    }

    async fn history(&self) -> Result<Vec<CatalogHistoryEntry>> {
        if !self.has_schema().await? {
            return Ok(Vec::new());
        }
        let result = self
            .db
            .execute_read_only(
                "SELECT applied_utc, keyspace, map_version, operator, comment, metadata_only_ownership_change \
                 FROM shardlite_catalog_history ORDER BY entry_id DESC",
                Params::none(),
            )
            .await?;
        Ok(result
            .rows
            .into_iter()
            .map(|row| CatalogHistoryEntry {
                applied_utc: text(&row, 0).unwrap_or_default(),
                keyspace: text(&row, 1).unwrap_or_default(),
                map_version: row
                    .get(2)
                    .and_then(Value::as_i64)
                    .and_then(|v| u64::try_from(v).ok())
                    .unwrap_or(0),
                audit: Audit::new(text(&row, 3), text(&row, 4)),
                metadata_only_ownership_change: row.get(5).and_then(Value::as_i64).unwrap_or(0) != 0,
            })
            .collect())
    }

    async fn save_checkpoint(&self, record: &ReshardRecord<'_>) -> Result<()> {
        self.ensure_schema().await?;
        self.db
            .execute(
                "INSERT INTO shardlite_migration_checkpoints (migration_id, updated_utc, keyspace, status, payload_json)
                     VALUES (:id, :updated, :keyspace, :status, :payload)
                 ON CONFLICT (migration_id) DO UPDATE SET updated_utc = excluded.updated_utc,
                     keyspace = excluded.keyspace, status = excluded.status, payload_json = excluded.payload_json",
                record_params(record),
            )
            .await?;
        Ok(())
    }

    async fn record_end(&self, record: &ReshardRecord<'_>) -> Result<()> {
        self.ensure_schema().await?;
        self.db
            .execute_atomic(
                "INSERT INTO shardlite_migration_checkpoints (migration_id, updated_utc, keyspace, status, payload_json)
                     VALUES (:id, :updated, :keyspace, :status, :payload)
                 ON CONFLICT (migration_id) DO UPDATE SET updated_utc = excluded.updated_utc,
                     keyspace = excluded.keyspace, status = excluded.status, payload_json = excluded.payload_json;
                 INSERT INTO shardlite_migration_history (completed_utc, keyspace, migration_id, payload_json)
                     VALUES (:updated, :keyspace, :id, :payload);",
                record_params(record),
            )
            .await?;
        Ok(())
    }

    async fn checkpoint(&self, id: &str) -> Result<Option<String>> {
        if !self.has_schema().await? {
            return Ok(None);
        }
        let result = self
            .db
            .execute_read_only(
                "SELECT payload_json FROM shardlite_migration_checkpoints WHERE migration_id = ?1",
                Params::from(vec![id]),
            )
            .await?;
        Ok(first_text(&result).map(str::to_owned))
    }

    async fn checkpoints(&self) -> Result<Vec<String>> {
        self.payloads(
            "SELECT payload_json FROM shardlite_migration_checkpoints ORDER BY updated_utc DESC, migration_id",
        )
        .await
    }

    async fn migration_history(&self) -> Result<Vec<String>> {
        self.payloads("SELECT payload_json FROM shardlite_migration_history ORDER BY entry_id DESC")
            .await
    }

    async fn append_history(&self, entries: &[CatalogHistoryEntry]) -> Result<()> {
        let json = serde_json::to_string(entries).unwrap_or_else(|_| "[]".to_owned());
        self.db
            .execute(
                "INSERT INTO shardlite_catalog_history
                     (applied_utc, keyspace, map_version, operator, comment, metadata_only_ownership_change)
                 SELECT json_extract(value, '$.appliedUtc'), json_extract(value, '$.keyspace'),
                        json_extract(value, '$.mapVersion'), json_extract(value, '$.operator'),
                        json_extract(value, '$.comment'), coalesce(json_extract(value, '$.metadataOnlyOwnershipChange'), 0)
                 FROM json_each(?1) ORDER BY CAST(key AS INTEGER) DESC",
                Params::from(vec![json]),
            )
            .await?;
        Ok(())
    }

    async fn append_migration_history(&self, payloads: &[String]) -> Result<()> {
        let json = serde_json::to_string(payloads).unwrap_or_else(|_| "[]".to_owned());
        self.db
            .execute(
                "INSERT INTO shardlite_migration_history (completed_utc, keyspace, migration_id, payload_json)
                 SELECT coalesce(json_extract(value, '$.completedUtc'), json_extract(value, '$.updatedUtc'), ''),
                        coalesce(json_extract(value, '$.spec.keyspace'), ''),
                        coalesce(json_extract(value, '$.migrationId'), ''), value
                 FROM (SELECT key, value AS value FROM json_each(?1)) ORDER BY CAST(key AS INTEGER) DESC",
                Params::from(vec![json]),
            )
            .await?;
        Ok(())
    }

    async fn import_maps(&self, active: &NewMap, pending: Option<&NewMap>, history: &HistoryRow) -> Result<()> {
        self.seed(active, history).await?;
        if let Some(pending) = pending {
            self.db
                .execute(
                    "INSERT INTO shardlite_pending_map (slot, keyspace, map_version, map_json, written_utc)
                         VALUES (1, :keyspace, :version, :json, :now)",
                    Params::named([
                        ("keyspace", Value::from(pending.keyspace.as_str())),
                        ("version", Value::Integer(stored_int(pending.version))),
                        ("json", Value::from(pending.json.as_str())),
                        ("now", Value::Text(now_utc())),
                    ]),
                )
                .await?;
        }
        Ok(())
    }

    async fn claim_runner(&self, id: &str) -> Result<Box<dyn RunnerClaim>> {
        super::file_runner::claim(self, id).await
    }
}

fn record_params(record: &ReshardRecord<'_>) -> Params {
    Params::named([
        ("id", Value::from(record.id)),
        ("updated", Value::from(record.updated_utc)),
        ("keyspace", Value::from(record.keyspace)),
        ("status", Value::from(record.status.as_str())),
        ("payload", Value::from(record.payload.as_str())),
    ])
}

fn stored_int(version: u64) -> i64 {
    i64::try_from(version).unwrap_or(i64::MAX)
}

fn first_i64(result: &SqlResult) -> Option<i64> {
    result.rows.first()?.first()?.as_i64()
}

fn first_text(result: &SqlResult) -> Option<&str> {
    result.rows.first()?.first()?.as_str()
}

pub(super) fn text(row: &[Value], index: usize) -> Option<String> {
    row.get(index).and_then(Value::as_str).map(str::to_owned)
}
