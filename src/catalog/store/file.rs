//! The SQLite master file: the embedded catalog store.
//!
//! One file holds the maps as records (see [`crate::map::records`]): `shardlite_map_records`
//! keeps each record under the map version that wrote it (a deletion as a `NULL` value), and
//! `shardlite_map_versions` names the active and pending versions. A change inserts the records
//! it changes and updates the version row, in one SQLite transaction; activation only updates
//! the version row. Routers follow a change by reading the rows written since the version they
//! serve (`shardlite_map_records_by_version`). The file also holds catalog history, migration checkpoints and migration
//! history, with a schema-version row: a file of schema version 1 (the map as one JSON text per
//! slot) is migrated to records when opened. Reading never creates tables: a file without them
//! simply has "no map".

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::file_rows::new_epoch;
pub(super) use super::file_rows::{ReadVersions, records_json};
use super::{CatalogStore, HistoryRow, NewMap, ReshardRecord, RunnerClaim, StoredState, StoredVersions};
use crate::data::now_utc;
use crate::data::{Audit, CatalogHistoryEntry, Params, SqlResult, Value};
use crate::engine::{Database, Role};
use crate::error::{Error, Result};
use crate::map::records::{MapAssembler, MapRecords, RecordChange, RecordKind};

/// The catalog schema version this release writes (1: one JSON text per map; 2: records).
pub const CATALOG_SCHEMA_VERSION: i64 = 2;

/// Whether the catalog's tables exist.
const HAS_SCHEMA_SQL: &str =
    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'shardlite_catalog_meta'";

/// The active map's version, without reading the map.
const ACTIVE_VERSION_SQL: &str = "SELECT active_version FROM shardlite_map_versions WHERE slot = 1";

/// The version row and every record row up to the newest version, in one statement (one
/// snapshot): the first row carries the active and pending versions, the record rows follow
/// in record order (the primary key's), so the maps are built one record at a time.
const STATE_SQL: &str = "WITH v AS (SELECT active_version, pending_version FROM shardlite_map_versions WHERE slot = 1)
    SELECT NULL, (SELECT value FROM shardlite_catalog_meta WHERE key = 'epoch'), active_version, pending_version FROM v
    UNION ALL
    SELECT kind, key, map_version, value FROM shardlite_map_records
    WHERE map_version <= (SELECT max(active_version, coalesce(pending_version, 0)) FROM v)
    ORDER BY 1, 2, 3";

/// The active and pending versions and the epoch, without the maps.
const VERSIONS_SQL: &str = "SELECT NULL, (SELECT value FROM shardlite_catalog_meta WHERE key = 'epoch'),
    active_version, pending_version FROM shardlite_map_versions WHERE slot = 1";

/// Records a new epoch (`:epoch`): a seed or an import replaced the maps.
const EPOCH_SQL: &str = "INSERT INTO shardlite_catalog_meta (key, value) VALUES ('epoch', :epoch)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value";

/// Inserts the records of `:records` (`[[kind, key, value], ...]`) under `:version`.
pub(super) const INSERT_RECORDS: &str = "INSERT OR REPLACE INTO shardlite_map_records (kind, key, map_version, value)
    SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), :version, json_extract(value, '$[2]')
    FROM json_each(:records)";

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS shardlite_catalog_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shardlite_map_versions (
    slot INTEGER PRIMARY KEY CHECK (slot = 1),
    keyspace TEXT NOT NULL,
    active_version INTEGER NOT NULL,
    pending_version INTEGER,
    updated_utc TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shardlite_map_records (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    map_version INTEGER NOT NULL,
    value TEXT,
    PRIMARY KEY (kind, key, map_version)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS shardlite_map_records_by_version ON shardlite_map_records (map_version);
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
        let config = super::file_rows::catalog_config();
        let unreadable = |err: Error| crate::engine::catalog_unreadable(path, err);
        let db = Database::open_as(path, "master catalog".to_owned(), config, Role::Catalog)
            .await
            .map_err(unreadable)?;
        let store = Self {
            db,
            path: path.to_path_buf(),
        };
        store.check_intact().await.map_err(unreadable)?;
        if store.check_schema_version().await.map_err(unreadable)? == Some(1) {
            super::file_upgrade::from_documents(&store).await.map_err(unreadable)?;
        }
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

    /// Refuses a file written by a newer release; returns the stored schema version.
    async fn check_schema_version(&self) -> Result<Option<i64>> {
        if !self.has_schema().await? {
            return Ok(None);
        }
        let result = self
            .db
            .execute_read_only(
                "SELECT value FROM shardlite_catalog_meta WHERE key = 'schema_version'",
                Params::none(),
            )
            .await?;
        let version = first_text(&result).and_then(|v| v.parse::<i64>().ok());
        super::super::check_schema_version(version)?;
        Ok(version)
    }

    /// Reads the version row and the record rows; `None` without a version row.
    pub(super) async fn read_versions(&self, sql: &str, params: Params) -> Result<Option<ReadVersions>> {
        let result = self.db.execute_read_only(sql, params).await?;
        let mut rows = result.rows.into_iter();
        let Some(first) = rows.next() else {
            return Ok(None);
        };
        let active = first
            .get(2)
            .and_then(Value::as_i64)
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(0);
        let pending = first.get(3).and_then(Value::as_i64).and_then(|v| u64::try_from(v).ok());
        let epoch = text(&first, 1).unwrap_or_default();
        let records = rows
            .filter_map(|row| {
                let kind = RecordKind::parse(row.first()?.as_str()?)?;
                let version = u64::try_from(row.get(2)?.as_i64()?).ok()?;
                Some((kind, text(&row, 1)?, version, text(&row, 3)))
            })
            .collect();
        Ok(Some(ReadVersions {
            active,
            pending,
            epoch,
            records,
        }))
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
        super::file_rows::read_state(&self.db, STATE_SQL).await
    }

    async fn versions(&self) -> Result<Option<StoredVersions>> {
        if !self.has_schema().await? {
            return Ok(None);
        }
        let Some(read) = self.read_versions(VERSIONS_SQL, Params::none()).await? else {
            return Ok(None);
        };
        Ok(Some(StoredVersions {
            active: Some(read.active),
            pending: read.pending,
            revision: 0,
            generation: String::new(),
            epoch: read.epoch,
        }))
    }

    async fn map_at(&self, version: u64) -> Result<Option<MapRecords>> {
        if !self.has_schema().await? {
            return Ok(None);
        }
        let sql = "SELECT NULL, NULL, 0, NULL UNION ALL \
                   SELECT kind, key, map_version, value FROM shardlite_map_records WHERE map_version <= :version";
        let params = Params::named([("version", Value::Integer(stored_int(version)))]);
        let Some(ReadVersions { records: rows, .. }) = self.read_versions(sql, params).await? else {
            return Ok(None);
        };
        if !rows.iter().any(|row| row.2 == version) {
            return Ok(None);
        }
        let mut assembler = MapAssembler::new(vec![version]);
        for (kind, key, at, value) in rows {
            assembler.add(kind, key, at, value);
        }
        Ok(assembler.finish().pop())
    }

    async fn changes_between(&self, from: u64, to: u64) -> Result<Option<Vec<RecordChange>>> {
        super::file_changes::changes_between(self, from, to).await
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
        let records = records_json(&MapRecords::of(&map.options).all_changes());
        self.db
            .execute_atomic(
                &format!(
                    "DELETE FROM shardlite_map_records;
                     {INSERT_RECORDS};
                     INSERT INTO shardlite_map_versions (slot, keyspace, active_version, pending_version, updated_utc)
                         VALUES (1, :keyspace, :version, NULL, :now)
                         ON CONFLICT (slot) DO UPDATE SET keyspace = excluded.keyspace,
                             active_version = excluded.active_version, pending_version = NULL,
                             updated_utc = excluded.updated_utc;
                     INSERT INTO shardlite_catalog_history (applied_utc, keyspace, map_version, operator, comment)
                         VALUES (:now, :keyspace, :history_version, :operator, :comment);
                     {EPOCH_SQL};"
                ),
                Params::named([
                    ("epoch", Value::Text(new_epoch())),
                    ("keyspace", Value::from(map.keyspace.as_str())),
                    ("version", Value::Integer(stored_int(map.version))),
                    ("history_version", Value::Integer(stored_int(history.version))),
                    ("records", Value::Text(records)),
                    ("now", Value::Text(now_utc())),
                    ("operator", Value::from(history.audit.operator.clone())),
                    ("comment", Value::from(history.audit.comment.clone())),
                ]),
            )
            .await?;
        Ok(())
    }

    /// Every statement is conditional on the version row still naming the versions of
    /// `expected`, checked inside the transaction; the last one moves the version row, so
    /// nothing is written when the condition fails.
    async fn write_pending(
        &self,
        expected: &StoredVersions,
        changes: &[RecordChange],
        history: &HistoryRow,
    ) -> Result<bool> {
        self.ensure_schema().await?;
        let records = records_json(changes);
        let unchanged = "(SELECT count(*) FROM shardlite_map_versions WHERE slot = 1 AND active_version = :active \
                         AND coalesce(pending_version, -1) = :pending) = 1";
        let written = self
            .db
            .execute_atomic(
                &format!(
                    "{INSERT_RECORDS} WHERE {unchanged};
                     INSERT INTO shardlite_catalog_history
                         (applied_utc, keyspace, map_version, operator, comment, metadata_only_ownership_change)
                         SELECT :now, :keyspace, :version, :operator, :comment, :metadata_only WHERE {unchanged};
                     UPDATE shardlite_map_versions SET pending_version = :version, updated_utc = :now
                         WHERE slot = 1 AND active_version = :active AND coalesce(pending_version, -1) = :pending;"
                ),
                Params::named([
                    ("keyspace", Value::from(history.keyspace.as_str())),
                    ("version", Value::Integer(stored_int(history.version))),
                    ("records", Value::Text(records)),
                    ("now", Value::Text(now_utc())),
                    ("active", Value::Integer(expected.active.map_or(-1, stored_int))),
                    ("pending", Value::Integer(expected.pending.map_or(-1, stored_int))),
                    ("operator", Value::from(history.audit.operator.clone())),
                    ("comment", Value::from(history.audit.comment.clone())),
                    ("metadata_only", Value::from(history.metadata_only)),
                ]),
            )
            .await?;
        Ok(written.rows_affected > 0)
    }

    async fn activate(&self, expected: &StoredVersions, history: &HistoryRow) -> Result<bool> {
        let (Some(pending), Some(active)) = (expected.pending, expected.active) else {
            return Ok(false);
        };
        let moved = self
            .db
            .execute_atomic(
                "INSERT INTO shardlite_catalog_history (applied_utc, keyspace, map_version, operator, comment)
                     SELECT :now, :keyspace, :expected, :operator, :comment FROM shardlite_map_versions
                     WHERE slot = 1 AND pending_version = :expected AND active_version = :active;
                 UPDATE shardlite_map_versions SET active_version = pending_version, pending_version = NULL,
                     updated_utc = :now
                     WHERE slot = 1 AND pending_version = :expected AND active_version = :active;",
                Params::named([
                    ("now", Value::Text(now_utc())),
                    ("expected", Value::Integer(stored_int(pending))),
                    ("active", Value::Integer(stored_int(active))),
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
            let records = MapRecords::of(&active.options).changes_to(&MapRecords::of(&pending.options));
            self.db
                .execute_atomic(
                    &format!(
                        "{INSERT_RECORDS};
                         UPDATE shardlite_map_versions SET pending_version = :version, updated_utc = :now WHERE slot = 1;"
                    ),
                    Params::named([
                        ("version", Value::Integer(stored_int(pending.version))),
                        ("records", Value::Text(records_json(&records))),
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

pub(super) fn stored_int(version: u64) -> i64 {
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
