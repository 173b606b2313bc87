//! Directory mutations as catalog updates: the planned entry change is written as the pending
//! map, compare-and-set on the newest stored version, with operator and comment in the history.
//! The store writes the changed entry's record only.

use super::Catalog;
use crate::data::{
    Audit, CatalogUpdateRequest, DirectoryMutation, DirectoryMutationResult, DirectoryOperation, IssueSeverity,
};
use crate::directory::{Plan, plan};
use crate::error::{Error, Result};
use crate::map::ShardMap;

impl Catalog {
    /// Plans `operation` on the newest stored map (the pending map, else the active one) and
    /// writes the change as the pending map. A no-op or a refusal writes nothing; a change
    /// with a stale `expectedCurrentMapVersion` is a refusal with the issue
    /// `map-version-mismatch`.
    pub async fn mutate_directory(
        &self,
        operation: DirectoryOperation,
        request: &DirectoryMutation,
    ) -> Result<DirectoryMutationResult> {
        let state = self.stored().await?;
        let Some(newest) = state.pending.as_ref().or(state.active.as_ref()) else {
            return Err(Error::NoMap);
        };
        let working = ShardMap::new(newest.options.clone())?;
        // A no-op answers whatever version the caller saw, as it writes nothing.
        let write = match plan(operation, &working, request) {
            Plan::Done(result) => return Ok(result),
            Plan::Write(write) => write,
        };
        if let Some(expected) = request.expected_current_map_version
            && expected != newest.version
        {
            return Ok(version_mismatch(expected, newest.version));
        }
        let mut proposed = newest.options.clone();
        proposed.map_version = i64::try_from(newest.version + 1).unwrap_or(i64::MAX);
        let at = proposed
            .directory_entries
            .iter()
            .position(|entry| write.replaces(entry));
        match (&write.entry, at) {
            (Some(entry), Some(at)) => proposed.directory_entries[at] = entry.clone(),
            (Some(entry), None) => proposed.directory_entries.push(entry.clone()),
            (None, Some(at)) => {
                proposed.directory_entries.remove(at);
            }
            (None, None) => {}
        }
        let audit =
            Audit::new(request.operator.clone(), request.comment.clone()).or_because(|| write.default_comment.clone());
        let update = CatalogUpdateRequest::new(proposed)
            .expecting_version(newest.version)
            .audit(audit);
        let applied = match self.apply_update(update).await {
            Ok(applied) => applied,
            Err(Error::MapVersionConflict { expected, current }) => return Ok(version_mismatch(expected, current)),
            Err(err) => return Err(err),
        };
        let issues: Vec<_> = applied
            .validation
            .issues
            .into_iter()
            .filter(|issue| issue.severity != IssueSeverity::Info)
            .collect();
        if !applied.applied {
            let message = issues.first().map_or_else(
                || "the catalog update was rejected by validation".to_owned(),
                |issue| issue.message.clone(),
            );
            return Ok(DirectoryMutationResult {
                succeeded: false,
                status: crate::data::MutationStatus::Rejected,
                message,
                entry: write.entry,
                pending_map_version: None,
                requires_activation: false,
                issues,
            });
        }
        Ok(DirectoryMutationResult {
            succeeded: true,
            status: write.status,
            message: write.message,
            entry: write.entry,
            pending_map_version: applied.pending_map_version,
            requires_activation: true,
            issues,
        })
    }
}

fn version_mismatch(expected: u64, current: u64) -> DirectoryMutationResult {
    crate::directory::rejected(
        "map-version-mismatch",
        format!("expected map version {expected}, but the newest map version in the catalog is {current}"),
        None,
    )
}
