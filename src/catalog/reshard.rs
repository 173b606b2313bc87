//! Resharding checkpoints and history in the master catalog (one row per data move, which the
//! catalog's tables call a migration).
//!
//! A checkpoint is one row per migration id, rewritten after every page a migration copies and
//! at every phase; the history gets one row each time a migration run ends. Both hold the whole
//! [`MigrationResult`] as JSON.

use super::Catalog;
use crate::data::{MigrationResult, Params, Value};
use crate::error::{Error, Result};

impl Catalog {
    /// Writes `state` as the checkpoint of its migration (replacing the previous one).
    pub async fn save_migration_checkpoint(&self, state: &MigrationResult) -> Result<()> {
        self.ensure_schema().await?;
        let payload = encode(state)?;
        self.db
            .execute(
                "INSERT INTO shardlite_migration_checkpoints (migration_id, updated_utc, keyspace, status, payload_json)
                     VALUES (:id, :updated, :keyspace, :status, :payload)
                 ON CONFLICT (migration_id) DO UPDATE SET updated_utc = excluded.updated_utc,
                     keyspace = excluded.keyspace, status = excluded.status, payload_json = excluded.payload_json",
                Params::named([
                    ("id", Value::from(state.migration_id.as_str())),
                    ("updated", Value::from(state.updated_utc.as_str())),
                    ("keyspace", Value::from(state.spec.keyspace.as_str())),
                    ("status", Value::Text(status_text(state))),
                    ("payload", Value::Text(payload)),
                ]),
            )
            .await?;
        Ok(())
    }

    /// Writes the final checkpoint of a run and appends it to the migration history, in one
    /// transaction.
    pub async fn record_migration_end(&self, state: &MigrationResult) -> Result<()> {
        self.ensure_schema().await?;
        let payload = encode(state)?;
        self.db
            .execute_atomic(
                "INSERT INTO shardlite_migration_checkpoints (migration_id, updated_utc, keyspace, status, payload_json)
                     VALUES (:id, :updated, :keyspace, :status, :payload)
                 ON CONFLICT (migration_id) DO UPDATE SET updated_utc = excluded.updated_utc,
                     keyspace = excluded.keyspace, status = excluded.status, payload_json = excluded.payload_json;
                 INSERT INTO shardlite_migration_history (completed_utc, keyspace, migration_id, payload_json)
                     VALUES (:updated, :keyspace, :id, :payload);",
                Params::named([
                    ("id", Value::from(state.migration_id.as_str())),
                    ("updated", Value::from(state.updated_utc.as_str())),
                    ("keyspace", Value::from(state.spec.keyspace.as_str())),
                    ("status", Value::Text(status_text(state))),
                    ("payload", Value::Text(payload)),
                ]),
            )
            .await?;
        Ok(())
    }

    /// The checkpoint of migration `id`, if there is one.
    pub async fn migration(&self, id: &str) -> Result<Option<MigrationResult>> {
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
        result.rows.first().map(|row| decode(row)).transpose()
    }

    /// Every migration's checkpoint, most recently updated first.
    pub async fn migrations(&self) -> Result<Vec<MigrationResult>> {
        self.read_states(
            "SELECT payload_json FROM shardlite_migration_checkpoints ORDER BY updated_utc DESC, migration_id",
        )
        .await
    }

    /// The migration history (one entry per run that ended), newest first.
    pub async fn migration_history(&self) -> Result<Vec<MigrationResult>> {
        self.read_states("SELECT payload_json FROM shardlite_migration_history ORDER BY entry_id DESC")
            .await
    }

    async fn read_states(&self, sql: &str) -> Result<Vec<MigrationResult>> {
        if !self.has_schema().await? {
            return Ok(Vec::new());
        }
        let result = self.db.execute_read_only(sql, Params::none()).await?;
        result.rows.iter().map(|row| decode(row)).collect()
    }
}

fn status_text(state: &MigrationResult) -> String {
    serde_json::to_value(state.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn encode(state: &MigrationResult) -> Result<String> {
    serde_json::to_string(state).map_err(|err| Error::Catalog {
        reason: format!("migration '{}' could not be encoded: {err}", state.migration_id),
    })
}

fn decode(row: &[Value]) -> Result<MigrationResult> {
    let json = row.first().and_then(Value::as_str).unwrap_or_default();
    serde_json::from_str(json).map_err(|err| Error::Catalog {
        reason: format!("a stored migration checkpoint does not parse: {err}"),
    })
}
