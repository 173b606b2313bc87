//! The shapes of catalog updates: validate, apply (compare-and-set) and activate a new shard map.

use serde::{Deserialize, Serialize};

use crate::map::{ShardMapSnapshot, ShardingOptions};

/// A proposed new shard map, as validated and applied.
///
/// ```
/// use shardlite::data::CatalogUpdateRequest;
///
/// let request: CatalogUpdateRequest = serde_json::from_str(r#"{
///     "map": { "keyspace": "tenants", "mapVersion": 2, "virtualBucketCount": 4,
///              "shards": [{ "shardId": "s0", "dataSource": "s0.db" }],
///              "bucketRanges": [{ "startBucketInclusive": 0, "endBucketExclusive": 4, "shardId": "s0" }] },
///     "expectedCurrentMapVersion": 1,
///     "operator": "ada"
/// }"#)?;
/// assert_eq!(request.expected_current_map_version, Some(1));
/// assert!(!request.allow_ownership_change);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "server",
    schema(description = "A proposed new shard map, as validated and applied.")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CatalogUpdateRequest {
    /// The proposed map, in the form a map file has (secrets included: it is stored as given).
    pub map: ShardingOptions,
    /// The newest map version the catalog holds (the pending map's, if there is one, else the
    /// active map's). When given and different, the update is refused: someone else changed
    /// the catalog since the caller looked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_current_map_version: Option<u64>,
    /// Acknowledges that buckets or pins change owner without a data migration: keys move to
    /// shards that do not hold their data. Migrate the data first.
    #[serde(default)]
    pub allow_ownership_change: bool,
    /// Who makes the change, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Why, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl CatalogUpdateRequest {
    /// A request for `map` with no expectations and no acknowledgement.
    pub fn new(map: ShardingOptions) -> Self {
        Self {
            map,
            expected_current_map_version: None,
            allow_ownership_change: false,
            operator: None,
            comment: None,
        }
    }
}

/// How serious a validation issue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum IssueSeverity {
    /// The update cannot be applied.
    Error,
    /// The update can be applied, but look first.
    Warning,
    /// For information.
    Info,
}

/// One finding of a validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CatalogIssue {
    /// Error, warning or info.
    pub severity: IssueSeverity,
    /// A stable kebab-case code: `map-version-mismatch`, `invalid-map`,
    /// `map-version-not-incremented`, `keyspace-changed`, `bucket-count-changed`,
    /// `ownership-change-requires-migration`, `ownership-change-acknowledged`,
    /// `metadata-compatible`.
    pub code: String,
    /// What was found, naming the items.
    pub message: String,
}

/// A bucket range that changes owner: `[start, end, from, to]`, end exclusive. (Its OpenAPI
/// schema, a four-item array, is written out in `data::openapi`.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovedBuckets(
    /// First bucket.
    pub u32,
    /// One past the last bucket.
    pub u32,
    /// The owner in the current map.
    pub String,
    /// The owner in the proposed map.
    pub String,
);

/// A pinned key that changes owner: `[key, from, to]`. (Its OpenAPI schema, a three-item array,
/// is written out in `data::openapi`.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovedPin(
    /// The route key.
    pub String,
    /// Where it resolves in the current map.
    pub String,
    /// Where it resolves in the proposed map.
    pub String,
);

/// What happens to a shard definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum ShardChangeKind {
    /// Defined in the proposed map only.
    Added,
    /// Defined in the current map only.
    Removed,
    /// Disabled in the proposed map.
    Disabled,
    /// Enabled in the proposed map.
    Enabled,
}

/// A shard added, removed, disabled or enabled by an update.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardChange {
    /// The shard.
    pub shard_id: String,
    /// What happens to it.
    pub change: ShardChangeKind,
}

/// The outcome of validating a catalog update. Validation never changes anything.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CatalogValidation {
    /// Whether no issue is an error.
    pub valid: bool,
    /// Whether buckets or pins change owner (their data must move first).
    pub requires_data_migration: bool,
    /// The newest map version the catalog holds (what `expectedCurrentMapVersion` is compared with).
    pub current_map_version: u64,
    /// The findings, errors first.
    pub issues: Vec<CatalogIssue>,
    /// The proposed map as a secret-free snapshot, when it is a valid map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<ShardMapSnapshot>,
    /// Bucket ranges whose owner changes, against the active map.
    pub moved_buckets: Vec<MovedBuckets>,
    /// Pinned keys whose owner changes, against the active map.
    pub moved_pins: Vec<MovedPin>,
    /// Shards added, removed, disabled or enabled.
    pub shard_changes: Vec<ShardChange>,
}

impl CatalogValidation {
    /// The error issues, one per line, for messages.
    pub fn error_summary(&self) -> String {
        self.issues
            .iter()
            .filter(|issue| issue.severity == IssueSeverity::Error)
            .map(|issue| format!("{}: {}", issue.code, issue.message))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The outcome of applying a catalog update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CatalogApplyResult {
    /// Whether the map was written as the pending map (false when validation refused it).
    pub applied: bool,
    /// The pending map's version, when applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_map_version: Option<u64>,
    /// The validation the apply ran, in the same transaction.
    pub validation: CatalogValidation,
}

/// A request to make the pending map active.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActivationRequest {
    /// The version of the pending map to activate; anything else is refused.
    pub expected_pending_map_version: u64,
    /// Who activates it, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Why, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The outcome of an activation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ActivationResult {
    /// The map version now active.
    pub active_map_version: u64,
    /// The map version that was active before.
    pub previous_map_version: u64,
    /// Shards whose bucket or pin ownership changed: their open transactions were drained.
    pub affected_shards: Vec<String>,
    /// Transactions on affected shards that did not finish within the drain window and were
    /// rolled back (in this process).
    pub rolled_back_transactions: u64,
}
