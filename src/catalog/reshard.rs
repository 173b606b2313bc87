//! Resharding checkpoints and history in the catalog (one row per data move, which the
//! catalog's tables call a migration).
//!
//! A checkpoint is one row per migration id, rewritten after every page a migration copies and
//! at every phase; the history gets one row each time a migration run ends. Both hold the whole
//! [`ReshardResult`] as JSON.

use super::Catalog;
use super::store::ReshardRecord;
use crate::data::ReshardResult;
use crate::error::{Error, Result};

impl Catalog {
    /// Writes `state` as the checkpoint of its migration (replacing the previous one).
    pub async fn save_migration_checkpoint(&self, state: &ReshardResult) -> Result<()> {
        self.store().save_checkpoint(&record(state)?).await
    }

    /// Writes the final checkpoint of a run and appends it to the migration history, in one
    /// atomic write.
    pub async fn record_migration_end(&self, state: &ReshardResult) -> Result<()> {
        self.store().record_end(&record(state)?).await
    }

    /// The checkpoint of migration `id`, if there is one.
    pub async fn migration(&self, id: &str) -> Result<Option<ReshardResult>> {
        self.store().checkpoint(id).await?.map(|json| decode(&json)).transpose()
    }

    /// Every migration's checkpoint, most recently updated first.
    pub async fn migrations(&self) -> Result<Vec<ReshardResult>> {
        self.store()
            .checkpoints()
            .await?
            .iter()
            .map(|json| decode(json))
            .collect()
    }

    /// The migration history (one entry per run that ended), newest first.
    pub async fn migration_history(&self) -> Result<Vec<ReshardResult>> {
        self.store()
            .migration_history()
            .await?
            .iter()
            .map(|json| decode(json))
            .collect()
    }
}

fn record(state: &ReshardResult) -> Result<ReshardRecord<'_>> {
    Ok(ReshardRecord {
        id: &state.migration_id,
        keyspace: state.spec.keyspace(),
        status: status_text(state),
        updated_utc: &state.updated_utc,
        payload: encode(state)?,
    })
}

fn status_text(state: &ReshardResult) -> String {
    serde_json::to_value(state.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn encode(state: &ReshardResult) -> Result<String> {
    serde_json::to_string(state).map_err(|err| Error::Catalog {
        reason: format!("migration '{}' could not be encoded: {err}", state.migration_id),
    })
}

fn decode(json: &str) -> Result<ReshardResult> {
    serde_json::from_str(json).map_err(|err| Error::Catalog {
        reason: format!("a stored migration checkpoint does not parse: {err}"),
    })
}
