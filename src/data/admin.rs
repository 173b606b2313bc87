//! What operator calls return: shard health, per-shard fan-out outcomes and the catalog state.

use serde::{Deserialize, Serialize};

use super::{DatabaseInfo, SqlResult};
use crate::error::Result;
use crate::map::{ReplicaInfo, ShardMapSnapshot, ShardRole};

/// One shard's health and metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardStatus {
    /// The shard.
    pub shard_id: String,
    /// Its file or endpoint (never a connection string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_source: Option<String>,
    /// Whether it is enabled in the map.
    pub enabled: bool,
    /// Whether the probe succeeded.
    pub healthy: bool,
    /// Primary or replica.
    pub role: ShardRole,
    /// Replica metadata (empty on a primary).
    #[serde(flatten)]
    pub replica: ReplicaInfo,
    /// A healthy, promotion-eligible replica.
    pub can_promote: bool,
    /// Why the shard is unhealthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The probe's counts, when healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<DatabaseInfo>,
}

/// One shard's outcome in a fan-out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardSqlResult {
    /// The shard.
    pub shard_id: String,
    /// Its result, on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<SqlResult>,
    /// Its error, on failure (the daemon reports internal errors generically).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The error's kind code (`ErrorKind::code`), on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
}

impl ShardSqlResult {
    /// The outcome of one shard's part of a fan-out, with the error's kind code on failure.
    pub fn from_outcome(shard_id: &str, outcome: Result<SqlResult>) -> Self {
        match outcome {
            Ok(result) => Self {
                shard_id: shard_id.to_owned(),
                result: Some(result),
                error: None,
                error_code: None,
            },
            Err(err) => Self {
                shard_id: shard_id.to_owned(),
                result: None,
                error_code: Some(err.kind().code().to_owned()),
                error: Some(err.to_string()),
            },
        }
    }
}

/// One row of catalog history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CatalogHistoryEntry {
    /// When the change was written (RFC 3339).
    pub applied_utc: String,
    /// The keyspace.
    pub keyspace: String,
    /// The map version written.
    pub map_version: u64,
    /// Who made the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Whether bucket or pin ownership changed without a data migration.
    pub metadata_only_ownership_change: bool,
}

/// The catalog as operators see it: active and pending maps (secret-free) and history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CatalogState {
    /// `"master-catalog"` when a catalog file backs the map, `"in-memory"` otherwise.
    pub source: String,
    /// Whether a catalog file backs the map.
    pub is_catalog_enabled: bool,
    /// The live map.
    pub active_map: ShardMapSnapshot,
    /// A stored map with another version than the live one, waiting for activation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_map: Option<ShardMapSnapshot>,
    /// Catalog history, newest first.
    pub history: Vec<CatalogHistoryEntry>,
}
