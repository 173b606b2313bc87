//! Shard directory shapes: lookups, entries, resolutions, changes and their results, and pages
//! of entries. States and statuses travel as their exact names.

use super::{missing, pb};
use crate::data::{
    DirectoryEntryPage, DirectoryEntryQuery, DirectoryImport, DirectoryImportEntry, DirectoryImportOutcome,
    DirectoryLookup, DirectoryMutation, DirectoryMutationResult, DirectoryResolution, MutationStatus,
};
use crate::error::{Error, Result};
use crate::map::{DirectoryEntry, DirectorySnapshot, EntryState};

convert_both_ways!(
    DirectorySnapshot,
    pb::ShardDirectorySnapshot {
        directory_name,
        target_keyspace,
        description,
        read_only,
        entry_count,
    }
);

convert_both_ways!(
    DirectoryLookup,
    pb::ShardDirectoryLookup {
        directory_name,
        lookup_key,
        include_inactive,
    }
);

convert_both_ways!(
    DirectoryMutation,
    pb::ShardDirectoryMutation {
        directory_name,
        lookup_key,
        target_keyspace,
        route_key,
        state,
        remove_entry,
        expected_current_map_version,
        activate,
        operator,
        comment,
    }
);

impl From<DirectoryEntry> for pb::ShardDirectoryEntry {
    fn from(entry: DirectoryEntry) -> Self {
        Self {
            directory_name: entry.directory_name.into(),
            lookup_key: entry.lookup_key.into(),
            target_keyspace: entry.target_keyspace.into(),
            route_key: entry.route_key.into(),
            shard_id: entry.shard_id.into(),
            map_version: entry.map_version,
            state: entry.state.as_str().to_owned(),
        }
    }
}

impl TryFrom<pb::ShardDirectoryEntry> for DirectoryEntry {
    type Error = Error;
    fn try_from(entry: pb::ShardDirectoryEntry) -> Result<Self> {
        let state = EntryState::parse(&entry.state)
            .ok_or_else(|| Error::invalid_argument("gRPC message", format!("unknown entry state '{}'", entry.state)))?;
        Ok(Self {
            directory_name: entry.directory_name.into(),
            lookup_key: entry.lookup_key.into(),
            target_keyspace: entry.target_keyspace.into(),
            route_key: entry.route_key.into(),
            shard_id: entry.shard_id.into(),
            map_version: entry.map_version,
            state,
        })
    }
}

impl From<DirectoryResolution> for pb::ShardDirectoryResolution {
    fn from(found: DirectoryResolution) -> Self {
        Self {
            entry: Some(found.entry.into()),
            route_resolution: Some(found.route_resolution.into()),
        }
    }
}

impl TryFrom<pb::ShardDirectoryResolution> for DirectoryResolution {
    type Error = Error;
    fn try_from(found: pb::ShardDirectoryResolution) -> Result<Self> {
        Ok(Self {
            entry: found.entry.ok_or_else(|| missing("entry"))?.try_into()?,
            route_resolution: found
                .route_resolution
                .ok_or_else(|| missing("route_resolution"))?
                .try_into()?,
        })
    }
}

/// A status's exact name, as the JSON result spells it.
fn status_name(status: MutationStatus) -> String {
    match serde_json::to_value(status) {
        Ok(serde_json::Value::String(name)) => name,
        _ => format!("{status:?}"),
    }
}

impl From<DirectoryMutationResult> for pb::ShardDirectoryMutationResult {
    fn from(result: DirectoryMutationResult) -> Self {
        Self {
            succeeded: result.succeeded,
            status: status_name(result.status),
            message: result.message,
            entry: result.entry.map(Into::into),
            pending_map_version: result.pending_map_version,
            requires_activation: result.requires_activation,
            issues: result.issues.into_iter().map(Into::into).collect(),
        }
    }
}

impl TryFrom<pb::ShardDirectoryMutationResult> for DirectoryMutationResult {
    type Error = Error;
    fn try_from(result: pb::ShardDirectoryMutationResult) -> Result<Self> {
        let status = serde_json::from_value(serde_json::Value::String(result.status.clone())).map_err(|_| {
            Error::invalid_argument("gRPC message", format!("unknown mutation status '{}'", result.status))
        })?;
        Ok(Self {
            succeeded: result.succeeded,
            status,
            message: result.message,
            entry: result.entry.map(TryInto::try_into).transpose()?,
            pending_map_version: result.pending_map_version,
            requires_activation: result.requires_activation,
            issues: result
                .issues
                .into_iter()
                .map(TryInto::try_into)
                .collect::<Result<_>>()?,
        })
    }
}

convert_both_ways!(
    DirectoryImportEntry,
    pb::ShardDirectoryImportEntry {
        directory_name,
        lookup_key,
        target_keyspace,
        route_key,
        state,
    }
);

convert_both_ways!(
    DirectoryImport,
    pb::ShardDirectoryImport {
        entries: list,
        expected_current_map_version,
        activate,
        operator,
        comment,
    }
);

impl From<DirectoryImportOutcome> for pb::ShardDirectoryImportOutcome {
    fn from(outcome: DirectoryImportOutcome) -> Self {
        Self {
            statuses: outcome.statuses.into_iter().collect(),
            pending_map_version: outcome.pending_map_version,
            activated: outcome.activated,
            refused_entry: outcome.refused_entry,
            refusal: outcome.refusal.map(Into::into),
        }
    }
}

impl TryFrom<pb::ShardDirectoryImportOutcome> for DirectoryImportOutcome {
    type Error = Error;
    fn try_from(outcome: pb::ShardDirectoryImportOutcome) -> Result<Self> {
        Ok(Self {
            statuses: outcome.statuses.into_iter().collect(),
            pending_map_version: outcome.pending_map_version,
            activated: outcome.activated,
            refused_entry: outcome.refused_entry,
            refusal: outcome.refusal.map(TryInto::try_into).transpose()?,
        })
    }
}

impl From<pb::ShardDirectoryEntriesRequest> for DirectoryEntryQuery {
    fn from(request: pb::ShardDirectoryEntriesRequest) -> Self {
        Self {
            after: request.after,
            limit: request.limit,
        }
    }
}

impl From<DirectoryEntryPage> for pb::ShardDirectoryEntryPage {
    fn from(page: DirectoryEntryPage) -> Self {
        Self {
            directory_name: page.directory_name,
            entry_count: page.entry_count,
            entries: page.entries.into_iter().map(Into::into).collect(),
            next_after: page.next_after,
        }
    }
}

impl TryFrom<pb::ShardDirectoryEntryPage> for DirectoryEntryPage {
    type Error = Error;
    fn try_from(page: pb::ShardDirectoryEntryPage) -> Result<Self> {
        Ok(Self {
            directory_name: page.directory_name,
            entry_count: page.entry_count,
            entries: page.entries.into_iter().map(TryInto::try_into).collect::<Result<_>>()?,
            next_after: page.next_after,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CatalogIssue, IssueSeverity};

    #[test]
    fn a_result_round_trips_with_its_status_entry_and_issues() {
        let result = DirectoryMutationResult {
            succeeded: false,
            status: MutationStatus::AlreadyUpToDate,
            message: "up to date".to_owned(),
            entry: Some(DirectoryEntry {
                directory_name: "orders_by_id".into(),
                lookup_key: "SO-1".into(),
                target_keyspace: "tenants".into(),
                route_key: "tenant-a".into(),
                shard_id: "s0".into(),
                map_version: 3,
                state: EntryState::Stale,
            }),
            pending_map_version: Some(3),
            requires_activation: true,
            issues: vec![CatalogIssue {
                severity: IssueSeverity::Error,
                code: "directory-read-only".to_owned(),
                message: "read-only".to_owned(),
            }],
        };
        let wire = pb::ShardDirectoryMutationResult::from(result.clone());
        assert_eq!(wire.status, "AlreadyUpToDate");
        assert_eq!(DirectoryMutationResult::try_from(wire).unwrap(), result);

        let bad = pb::ShardDirectoryEntry {
            state: "active".to_owned(),
            ..Default::default()
        };
        let err = DirectoryEntry::try_from(bad).unwrap_err();
        assert!(err.to_string().contains("unknown entry state 'active'"), "{err}");
    }
}
