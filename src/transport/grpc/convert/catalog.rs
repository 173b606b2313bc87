//! The catalog-update types: the proposed map (sent as JSON text), validations with their issues
//! and moves, apply results, and activations.

use super::{missing, pb};
use crate::data::{
    ActivationRequest, ActivationResult, Audit, CatalogApplyResult, CatalogIssue, CatalogUpdateRequest,
    CatalogValidation, IssueSeverity, MapProposal, MovedBuckets, MovedPin, ShardChange, ShardChangeKind,
};
use crate::error::{Error, Result};
use crate::map::{MapPatch, ShardingOptions};

fn unknown(what: &str, value: i32) -> Error {
    Error::invalid_argument("gRPC message", format!("unknown {what} {value}"))
}

fn severity_to_pb(severity: IssueSeverity) -> i32 {
    let severity = match severity {
        IssueSeverity::Error => pb::IssueSeverity::Error,
        IssueSeverity::Warning => pb::IssueSeverity::Warning,
        IssueSeverity::Info => pb::IssueSeverity::Info,
    };
    severity as i32
}

fn severity_from_pb(severity: i32) -> Result<IssueSeverity> {
    match pb::IssueSeverity::try_from(severity) {
        Ok(pb::IssueSeverity::Error) => Ok(IssueSeverity::Error),
        Ok(pb::IssueSeverity::Warning) => Ok(IssueSeverity::Warning),
        Ok(pb::IssueSeverity::Info) => Ok(IssueSeverity::Info),
        Ok(pb::IssueSeverity::Unspecified) | Err(_) => Err(unknown("issue severity", severity)),
    }
}

fn change_to_pb(change: ShardChangeKind) -> i32 {
    let change = match change {
        ShardChangeKind::Added => pb::ShardChangeKind::Added,
        ShardChangeKind::Removed => pb::ShardChangeKind::Removed,
        ShardChangeKind::Disabled => pb::ShardChangeKind::Disabled,
        ShardChangeKind::Enabled => pb::ShardChangeKind::Enabled,
    };
    change as i32
}

fn change_from_pb(change: i32) -> Result<ShardChangeKind> {
    match pb::ShardChangeKind::try_from(change) {
        Ok(pb::ShardChangeKind::Added) => Ok(ShardChangeKind::Added),
        Ok(pb::ShardChangeKind::Removed) => Ok(ShardChangeKind::Removed),
        Ok(pb::ShardChangeKind::Disabled) => Ok(ShardChangeKind::Disabled),
        Ok(pb::ShardChangeKind::Enabled) => Ok(ShardChangeKind::Enabled),
        Ok(pb::ShardChangeKind::Unspecified) | Err(_) => Err(unknown("shard change", change)),
    }
}

impl From<ActivationRequest> for pb::ActivateShardCatalogRequest {
    fn from(request: ActivationRequest) -> Self {
        Self {
            expected_pending_map_version: request.expected_pending_map_version,
            operator: request.audit.operator,
            comment: request.audit.comment,
        }
    }
}

impl From<pb::ActivateShardCatalogRequest> for ActivationRequest {
    fn from(request: pb::ActivateShardCatalogRequest) -> Self {
        Self {
            expected_pending_map_version: request.expected_pending_map_version,
            audit: Audit::new(request.operator, request.comment),
        }
    }
}

convert_both_ways!(
    ActivationResult,
    pb::ShardCatalogActivation {
        active_map_version,
        previous_map_version,
        affected_shards,
        rolled_back_transactions,
    }
);

impl From<&CatalogUpdateRequest> for pb::ShardCatalogUpdateRequest {
    fn from(request: &CatalogUpdateRequest) -> Self {
        Self {
            map_json: request.map.as_map().map(ShardingOptions::to_json).unwrap_or_default(),
            patch_json: match &request.map {
                MapProposal::Map(_) => String::new(),
                MapProposal::Patch(patch) => patch.as_json().to_string(),
            },
            expected_current_map_version: request.expected_current_map_version,
            allow_ownership_change: request.allow_ownership_change,
            operator: request.audit.operator.clone(),
            comment: request.audit.comment.clone(),
        }
    }
}

impl TryFrom<pb::ShardCatalogUpdateRequest> for CatalogUpdateRequest {
    type Error = Error;
    /// Fails when `map_json` is not a map file's JSON (or `patch_json`, given instead, not a JSON
    /// object), naming the unknown field or bad value.
    fn try_from(request: pb::ShardCatalogUpdateRequest) -> Result<Self> {
        Ok(Self {
            map: if !request.patch_json.is_empty() && request.map_json.is_empty() {
                MapProposal::Patch(MapPatch::from_json(&request.patch_json)?)
            } else {
                MapProposal::Map(ShardingOptions::from_json(&request.map_json)?)
            },
            expected_current_map_version: request.expected_current_map_version,
            allow_ownership_change: request.allow_ownership_change,
            audit: Audit::new(request.operator, request.comment),
        })
    }
}

impl From<CatalogIssue> for pb::CatalogIssue {
    fn from(issue: CatalogIssue) -> Self {
        Self {
            severity: severity_to_pb(issue.severity),
            code: issue.code,
            message: issue.message,
        }
    }
}

impl TryFrom<pb::CatalogIssue> for CatalogIssue {
    type Error = Error;
    fn try_from(issue: pb::CatalogIssue) -> Result<Self> {
        Ok(Self {
            severity: severity_from_pb(issue.severity)?,
            code: issue.code,
            message: issue.message,
        })
    }
}

impl From<MovedBuckets> for pb::MovedBuckets {
    fn from(MovedBuckets(start, end, from, to): MovedBuckets) -> Self {
        Self { start, end, from, to }
    }
}

impl From<pb::MovedBuckets> for MovedBuckets {
    fn from(moved: pb::MovedBuckets) -> Self {
        Self(moved.start, moved.end, moved.from, moved.to)
    }
}

impl From<MovedPin> for pb::MovedPin {
    fn from(MovedPin(key, from, to): MovedPin) -> Self {
        Self { key, from, to }
    }
}

impl From<pb::MovedPin> for MovedPin {
    fn from(moved: pb::MovedPin) -> Self {
        Self(moved.key, moved.from, moved.to)
    }
}

impl From<ShardChange> for pb::ShardChange {
    fn from(change: ShardChange) -> Self {
        Self {
            shard_id: change.shard_id,
            change: change_to_pb(change.change),
        }
    }
}

impl TryFrom<pb::ShardChange> for ShardChange {
    type Error = Error;
    fn try_from(change: pb::ShardChange) -> Result<Self> {
        Ok(Self {
            change: change_from_pb(change.change)?,
            shard_id: change.shard_id,
        })
    }
}

impl From<CatalogValidation> for pb::ShardCatalogValidation {
    fn from(validation: CatalogValidation) -> Self {
        Self {
            valid: validation.valid,
            requires_data_migration: validation.requires_data_migration,
            current_map_version: validation.current_map_version,
            issues: validation.issues.into_iter().map(Into::into).collect(),
            preview: validation.preview.map(Into::into),
            moved_buckets: validation.moved_buckets.into_iter().map(Into::into).collect(),
            moved_pins: validation.moved_pins.into_iter().map(Into::into).collect(),
            shard_changes: validation.shard_changes.into_iter().map(Into::into).collect(),
        }
    }
}

impl TryFrom<pb::ShardCatalogValidation> for CatalogValidation {
    type Error = Error;
    fn try_from(validation: pb::ShardCatalogValidation) -> Result<Self> {
        Ok(Self {
            valid: validation.valid,
            requires_data_migration: validation.requires_data_migration,
            current_map_version: validation.current_map_version,
            issues: validation
                .issues
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_>>()?,
            preview: validation.preview.map(TryInto::try_into).transpose()?,
            moved_buckets: validation.moved_buckets.into_iter().map(Into::into).collect(),
            moved_pins: validation.moved_pins.into_iter().map(Into::into).collect(),
            shard_changes: validation
                .shard_changes
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_>>()?,
        })
    }
}

impl From<CatalogApplyResult> for pb::ShardCatalogApplyResult {
    fn from(result: CatalogApplyResult) -> Self {
        Self {
            applied: result.applied,
            pending_map_version: result.pending_map_version,
            validation: Some(result.validation.into()),
        }
    }
}

impl TryFrom<pb::ShardCatalogApplyResult> for CatalogApplyResult {
    type Error = Error;
    fn try_from(result: pb::ShardCatalogApplyResult) -> Result<Self> {
        Ok(Self {
            applied: result.applied,
            pending_map_version: result.pending_map_version,
            validation: result.validation.ok_or_else(|| missing("validation"))?.try_into()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::map::{BucketRange, ShardDefinition};

    fn through_bytes<M: Message + Default>(message: M) -> M {
        M::decode(message.encode_to_vec().as_slice()).expect("decodes")
    }

    #[test]
    fn an_update_request_carries_the_map_as_json_and_round_trips() {
        let mut map = ShardingOptions {
            keyspace: "tenants".into(),
            map_version: 2,
            virtual_bucket_count: 4,
            shards: vec![ShardDefinition::local("s0", "s0.db")],
            bucket_ranges: vec![BucketRange::new(0, 4, "s0")],
            exact_key_pins: [("k".to_owned(), "s0".to_owned())].into(),
            directories: Vec::new(),
            directory_entries: Vec::new(),
        };
        map.shards[0].api_key = Some(crate::map::Secret::new("kept as given"));
        let request = CatalogUpdateRequest {
            map: map.into(),
            expected_current_map_version: Some(1),
            allow_ownership_change: true,
            audit: Audit::by("ada"),
        };
        let wire = through_bytes(pb::ShardCatalogUpdateRequest::from(&request));
        assert!(wire.map_json.contains("\"mapVersion\": 2"), "{}", wire.map_json);
        assert_eq!(CatalogUpdateRequest::try_from(wire).expect("decodes"), request);

        let typo = pb::ShardCatalogUpdateRequest {
            map_json: r#"{"shards": [], "mapVersoin": 2}"#.into(),
            ..Default::default()
        };
        let err = CatalogUpdateRequest::try_from(typo).expect_err("unknown field");
        assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("mapVersoin"), "{err}");
    }

    #[test]
    fn an_apply_result_round_trips_with_its_validation() {
        let result = CatalogApplyResult {
            applied: false,
            pending_map_version: None,
            validation: CatalogValidation {
                valid: false,
                requires_data_migration: true,
                current_map_version: 1,
                issues: vec![CatalogIssue {
                    severity: IssueSeverity::Error,
                    code: "ownership-change-requires-migration".into(),
                    message: "buckets [1, 2) move".into(),
                }],
                preview: None,
                moved_buckets: vec![MovedBuckets(1, 2, "s0".into(), "s2".into())],
                moved_pins: vec![MovedPin("tenant-b".into(), "s1".into(), "s0".into())],
                shard_changes: vec![ShardChange {
                    shard_id: "s2".into(),
                    change: ShardChangeKind::Added,
                }],
            },
        };
        let wire = through_bytes(pb::ShardCatalogApplyResult::from(result.clone()));
        assert_eq!(CatalogApplyResult::try_from(wire).expect("decodes"), result);

        let without = pb::ShardCatalogApplyResult {
            applied: true,
            pending_map_version: Some(2),
            validation: None,
        };
        assert!(CatalogApplyResult::try_from(without).is_err());
    }

    #[test]
    fn unspecified_enums_are_refused() {
        let issue = pb::CatalogIssue::default();
        assert!(CatalogIssue::try_from(issue).is_err());
        let change = pb::ShardChange {
            shard_id: "s0".into(),
            change: 99,
        };
        assert!(ShardChange::try_from(change).is_err());
    }
}
