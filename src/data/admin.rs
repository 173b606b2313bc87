//! What operator calls return: shard health, per-shard fan-out outcomes and the catalog state.

use serde::{Deserialize, Serialize};

use super::{Audit, DatabaseInfo, SqlResult};
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
#[serde(from = "CatalogHistoryForm", into = "CatalogHistoryForm")]
pub struct CatalogHistoryEntry {
    /// When the change was written (RFC 3339).
    pub applied_utc: String,
    /// The keyspace.
    pub keyspace: String,
    /// The map version written.
    pub map_version: u64,
    /// Who made the change and why.
    pub audit: Audit,
    /// Whether bucket or pin ownership changed without a data migration.
    pub metadata_only_ownership_change: bool,
}

/// One row of catalog history.
///
/// (The JSON form of [`CatalogHistoryEntry`], as served and as stored in etcd and exports.)
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "server", schema(description = "One row of catalog history."))]
#[serde(expecting = "struct CatalogHistoryEntry", rename_all = "camelCase")]
struct CatalogHistoryForm {
    /// When the change was written (RFC 3339).
    applied_utc: String,
    /// The keyspace.
    keyspace: String,
    /// The map version written.
    map_version: u64,
    /// Who made the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    operator: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    comment: Option<String>,
    /// Whether bucket or pin ownership changed without a data migration.
    metadata_only_ownership_change: bool,
}

impl From<CatalogHistoryForm> for CatalogHistoryEntry {
    fn from(form: CatalogHistoryForm) -> Self {
        Self {
            applied_utc: form.applied_utc,
            keyspace: form.keyspace,
            map_version: form.map_version,
            audit: Audit::new(form.operator, form.comment),
            metadata_only_ownership_change: form.metadata_only_ownership_change,
        }
    }
}

impl From<CatalogHistoryEntry> for CatalogHistoryForm {
    fn from(entry: CatalogHistoryEntry) -> Self {
        Self {
            applied_utc: entry.applied_utc,
            keyspace: entry.keyspace,
            map_version: entry.map_version,
            operator: entry.audit.operator,
            comment: entry.audit.comment,
            metadata_only_ownership_change: entry.metadata_only_ownership_change,
        }
    }
}

schema_from_form!(CatalogHistoryEntry, CatalogHistoryForm);

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_history_entry_reads_and_writes_the_json_of_before() {
        // As etcd and catalog exports hold it.
        let stored = r#"{"appliedUtc":"2025-01-01T00:00:00Z","keyspace":"tenants","mapVersion":2,"operator":"ada","comment":"add s2","metadataOnlyOwnershipChange":false}"#;
        let entry: CatalogHistoryEntry = serde_json::from_str(stored).unwrap();
        assert_eq!(entry.audit, Audit::by("ada").because("add s2"));
        assert_eq!(entry.map_version, 2);
        assert_eq!(serde_json::to_string(&entry).unwrap(), stored);
        let anonymous = r#"{"appliedUtc":"2025-01-01T00:00:00Z","keyspace":"tenants","mapVersion":1,"metadataOnlyOwnershipChange":true}"#;
        let entry: CatalogHistoryEntry = serde_json::from_str(anonymous).unwrap();
        assert!(entry.audit.is_empty() && entry.metadata_only_ownership_change);
        assert_eq!(serde_json::to_string(&entry).unwrap(), anonymous);
    }
}
