//! The shapes of catalog updates: validate, apply (compare-and-set) and activate a new shard map.

use serde::{Deserialize, Serialize};

use super::Audit;
use crate::map::{MapPatch, ShardMapSnapshot, ShardingOptions};

/// A proposed new shard map, as validated and applied.
///
/// ```
/// use shardlite::data::{Audit, CatalogUpdateRequest};
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
/// assert_eq!(request.audit, Audit::by("ada"));
///
/// let again = CatalogUpdateRequest::new(request.map.clone())
///     .expecting_version(1)
///     .audit(Audit::by("ada"));
/// assert_eq!(again, request);
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// Its JSON has `operator` and `comment` at the top level, beside `map` (or `patch`, an RFC
/// 7386 merge patch of the newest map: see [`MapPatch`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "CatalogUpdateForm", into = "CatalogUpdateForm")]
pub struct CatalogUpdateRequest {
    /// The proposed map, whole or as a patch of the newest map the catalog holds.
    pub map: MapProposal,
    /// The newest map version the catalog holds (the pending map's, if there is one, else the
    /// active map's). When given and different, the update is refused: someone else changed
    /// the catalog since the caller looked.
    pub expected_current_map_version: Option<u64>,
    /// Acknowledges that buckets or pins change owner without a data migration: keys move to
    /// shards that do not hold their data. Migrate the data first.
    pub allow_ownership_change: bool,
    /// Who makes the change and why, for the history.
    pub audit: Audit,
}

/// A proposed map: the whole map, or a patch of the newest map the catalog holds.
#[derive(Debug, Clone, PartialEq)]
pub enum MapProposal {
    /// The whole map, in the form a map file has (secrets included: it is stored as given).
    Map(ShardingOptions),
    /// An RFC 7386 JSON Merge Patch of the newest map (the pending map, else the active one).
    Patch(MapPatch),
}

impl MapProposal {
    /// The proposed map, given the newest map the catalog holds (which a patch applies to).
    pub fn resolve(&self, newest: &ShardingOptions) -> crate::Result<ShardingOptions> {
        match self {
            Self::Map(map) => Ok(map.clone()),
            Self::Patch(patch) => patch.apply(newest),
        }
    }

    /// The whole map, when this is one.
    pub fn as_map(&self) -> Option<&ShardingOptions> {
        match self {
            Self::Map(map) => Some(map),
            Self::Patch(_) => None,
        }
    }
}

impl From<ShardingOptions> for MapProposal {
    fn from(map: ShardingOptions) -> Self {
        Self::Map(map)
    }
}

impl From<MapPatch> for MapProposal {
    fn from(patch: MapPatch) -> Self {
        Self::Patch(patch)
    }
}

impl CatalogUpdateRequest {
    /// A request for `map` (a whole map or a [`MapPatch`]) with no expectations, no
    /// acknowledgement and no audit.
    pub fn new(map: impl Into<MapProposal>) -> Self {
        Self {
            map: map.into(),
            expected_current_map_version: None,
            allow_ownership_change: false,
            audit: Audit::default(),
        }
    }

    /// The same, refused unless the catalog's newest map version is still `version`.
    #[must_use]
    pub fn expecting_version(mut self, version: u64) -> Self {
        self.expected_current_map_version = Some(version);
        self
    }

    /// The same, acknowledging that buckets or pins change owner without a data migration.
    #[must_use]
    pub fn allowing_ownership_change(mut self) -> Self {
        self.allow_ownership_change = true;
        self
    }

    /// The same, recorded in the history as `audit` says.
    #[must_use]
    pub fn audit(mut self, audit: Audit) -> Self {
        self.audit = audit;
        self
    }
}

/// A proposed new shard map, as validated and applied.
///
/// (The JSON form of [`CatalogUpdateRequest`]: its OpenAPI schema and the REST body.)
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "server",
    schema(description = "A proposed new shard map, as validated and applied.")
)]
#[serde(
    expecting = "struct CatalogUpdateRequest",
    rename_all = "camelCase",
    deny_unknown_fields
)]
struct CatalogUpdateForm {
    /// The proposed map, in the form a map file has (secrets included: it is stored as given).
    /// Exactly one of `map` and `patch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(value_type = ShardingOptions))]
    map: Option<ShardingOptions>,
    /// An RFC 7386 JSON Merge Patch of the newest map the catalog holds (the pending map, else
    /// the active one), in place of `map`; `shards` may also be an object keyed by shard id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(value_type = Option<Object>))]
    patch: Option<MapPatch>,
    /// The newest map version the catalog holds (the pending map's, if there is one, else the
    /// active map's). When given and different, the update is refused: someone else changed
    /// the catalog since the caller looked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expected_current_map_version: Option<u64>,
    /// Acknowledges that buckets or pins change owner without a data migration: keys move to
    /// shards that do not hold their data. Migrate the data first.
    #[serde(default)]
    allow_ownership_change: bool,
    /// Who makes the change, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    operator: Option<String>,
    /// Why, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    comment: Option<String>,
}

impl TryFrom<CatalogUpdateForm> for CatalogUpdateRequest {
    type Error = &'static str;
    fn try_from(form: CatalogUpdateForm) -> Result<Self, Self::Error> {
        let map = match (form.map, form.patch) {
            (Some(map), None) => MapProposal::Map(map),
            (None, Some(patch)) if patch.as_json().is_object() => MapProposal::Patch(patch),
            (None, Some(_)) => return Err("`patch` must be a JSON object"),
            (Some(_), Some(_)) => return Err("give either `map` or `patch`, not both"),
            (None, None) => return Err("missing field `map` (or `patch`)"),
        };
        Ok(Self {
            map,
            expected_current_map_version: form.expected_current_map_version,
            allow_ownership_change: form.allow_ownership_change,
            audit: Audit::new(form.operator, form.comment),
        })
    }
}

impl From<CatalogUpdateRequest> for CatalogUpdateForm {
    fn from(request: CatalogUpdateRequest) -> Self {
        let (map, patch) = match request.map {
            MapProposal::Map(map) => (Some(map), None),
            MapProposal::Patch(patch) => (None, Some(patch)),
        };
        Self {
            map,
            patch,
            expected_current_map_version: request.expected_current_map_version,
            allow_ownership_change: request.allow_ownership_change,
            operator: request.audit.operator,
            comment: request.audit.comment,
        }
    }
}

schema_from_form!(CatalogUpdateRequest, CatalogUpdateForm);

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
///
/// ```
/// use shardlite::data::{ActivationRequest, Audit};
///
/// let request = ActivationRequest::new(3).audit(Audit::by("ada").because("s2 is ready"));
/// let json = serde_json::to_value(&request)?;
/// assert_eq!(
///     json,
///     serde_json::json!({ "expectedPendingMapVersion": 3, "operator": "ada", "comment": "s2 is ready" })
/// );
/// assert_eq!(serde_json::from_value::<ActivationRequest>(json)?, request);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ActivationForm", into = "ActivationForm")]
pub struct ActivationRequest {
    /// The version of the pending map to activate; anything else is refused.
    pub expected_pending_map_version: u64,
    /// Who activates it and why, for the history.
    pub audit: Audit,
}

impl ActivationRequest {
    /// A request to activate pending map version `expected_pending_map_version`, without audit.
    pub fn new(expected_pending_map_version: u64) -> Self {
        Self {
            expected_pending_map_version,
            audit: Audit::default(),
        }
    }

    /// The same, recorded in the history as `audit` says.
    #[must_use]
    pub fn audit(mut self, audit: Audit) -> Self {
        self.audit = audit;
        self
    }
}

/// A request to make the pending map active.
///
/// (The JSON form of [`ActivationRequest`]: its OpenAPI schema and the REST body.)
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "server",
    schema(description = "A request to make the pending map active.")
)]
#[serde(
    expecting = "struct ActivationRequest",
    rename_all = "camelCase",
    deny_unknown_fields
)]
struct ActivationForm {
    /// The version of the pending map to activate; anything else is refused.
    expected_pending_map_version: u64,
    /// Who activates it, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    operator: Option<String>,
    /// Why, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    comment: Option<String>,
}

impl From<ActivationForm> for ActivationRequest {
    fn from(form: ActivationForm) -> Self {
        Self {
            expected_pending_map_version: form.expected_pending_map_version,
            audit: Audit::new(form.operator, form.comment),
        }
    }
}

impl From<ActivationRequest> for ActivationForm {
    fn from(request: ActivationRequest) -> Self {
        Self {
            expected_pending_map_version: request.expected_pending_map_version,
            operator: request.audit.operator,
            comment: request.audit.comment,
        }
    }
}

schema_from_form!(ActivationRequest, ActivationForm);

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

#[cfg(test)]
mod tests {
    use super::*;

    const UPDATE: &str = r#"{"map":{"keyspace":"tenants","mapVersion":2,"virtualBucketCount":4,"shards":[{"shardId":"s0","dataSource":"s0.db"}],"bucketRanges":[{"startBucketInclusive":0,"endBucketExclusive":4,"shardId":"s0"}]},"expectedCurrentMapVersion":1,"allowOwnershipChange":true,"operator":"ada","comment":"add s2"}"#;

    #[test]
    fn an_update_request_keeps_operator_and_comment_at_the_top_level() {
        let request: CatalogUpdateRequest = serde_json::from_str(UPDATE).unwrap();
        assert_eq!(request.audit, Audit::by("ada").because("add s2"));
        assert_eq!(
            request,
            CatalogUpdateRequest::new(request.map.clone())
                .expecting_version(1)
                .allowing_ownership_change()
                .audit(Audit::by("ada").because("add s2"))
        );
        // Every member but the map (whose own JSON spells out its defaults) as it came.
        let mut written = serde_json::to_value(&request).unwrap();
        let mut given: serde_json::Value = serde_json::from_str(UPDATE).unwrap();
        assert_eq!(written["map"]["mapVersion"], 2);
        written.as_object_mut().unwrap().remove("map");
        given.as_object_mut().unwrap().remove("map");
        assert_eq!(written, given);
        let bare = serde_json::to_value(CatalogUpdateRequest::new(request.map)).unwrap();
        assert_eq!(bare.as_object().unwrap().len(), 2, "{bare}");
        assert_eq!(bare["allowOwnershipChange"], false);
    }

    #[test]
    fn update_and_activation_requests_refuse_unknown_members_by_name() {
        let typo = UPDATE.replace("\"operator\"", "\"operater\"");
        let err = serde_json::from_str::<CatalogUpdateRequest>(&typo)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `operater`"), "{err}");
        let err = serde_json::from_str::<CatalogUpdateRequest>("1")
            .unwrap_err()
            .to_string();
        assert!(err.contains("struct CatalogUpdateRequest"), "{err}");
        let err = serde_json::from_str::<ActivationRequest>(r#"{"expectedPendingMapVersion":2,"audit":{}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `audit`"), "{err}");
        let request: ActivationRequest = serde_json::from_str(r#"{"expectedPendingMapVersion":2}"#).unwrap();
        assert_eq!(request, ActivationRequest::new(2));
        assert_eq!(
            serde_json::to_string(&request).unwrap(),
            r#"{"expectedPendingMapVersion":2}"#
        );
    }
}
