//! Directory mutations as catalog updates: the planned entry change is written as the pending
//! map, compare-and-set on the newest stored version, with operator and comment in the history.
//! The change is planned and checked on the maps the catalog handle holds (followed by the
//! records written since it read them), and the store writes the changed entry's record and the
//! version's header only.

use super::Catalog;
use super::store::HistoryRow;
use super::update::{diff, judge};
use crate::data::{Audit, DirectoryMutation, DirectoryMutationResult, DirectoryOperation, IssueSeverity};
use crate::directory::{Plan, WriteEntry, plan};
use crate::error::{Error, Result};
use crate::map::ShardMap;
use crate::map::records::{MapRecords, RecordChange, RecordKind, directory_entry_key};

impl Catalog {
    /// Plans `operation` on the newest stored map (the pending map, else the active one) and
    /// writes the change as the pending map. A no-op or a refusal writes nothing; a change
    /// with a stale `expectedCurrentMapVersion` is a refusal with the issue
    /// `map-version-mismatch`.
    ///
    /// It costs what it changes, not the size of the directory: the maps this handle holds
    /// follow the records written since it last read them, the change is checked as a change
    /// (the written entry, and the map's other rules as they stand), and the store writes the
    /// entry's record and the version's header.
    pub async fn mutate_directory(
        &self,
        operation: DirectoryOperation,
        request: &DirectoryMutation,
    ) -> Result<DirectoryMutationResult> {
        let maps = self.maps().await?;
        let newest_version = maps.newest_version();
        let Some(newest) = maps.newest() else {
            return Err(self.invalid_pending().await);
        };
        // A no-op answers whatever version the caller saw, as it writes nothing.
        let write = match plan(operation, newest, request) {
            Plan::Done(result) => return Ok(result),
            Plan::Write(write) => write,
        };
        if let Some(expected) = request.expected_current_map_version
            && expected != newest_version
        {
            return Ok(version_mismatch(expected, newest_version));
        }
        let changes = written_records(newest, &write);
        let proposed = newest.with_changes(&changes).and_then(|map| {
            if let Some(entry) = &write.entry {
                crate::directory::check_route(&map, entry)?;
            }
            Ok(map)
        });
        let validation = judge(&maps.active, newest_version, (None, false), proposed, |proposed| {
            diff(&maps.active, proposed)
        });
        let issues: Vec<_> = validation
            .issues
            .into_iter()
            .filter(|issue| issue.severity != IssueSeverity::Info)
            .collect();
        if !validation.valid {
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
        let version = newest_version + 1;
        let history = HistoryRow {
            keyspace: newest.keyspace().to_owned(),
            version,
            audit: Audit::new(request.operator.clone(), request.comment.clone())
                .or_because(|| write.default_comment.clone()),
            metadata_only: false,
        };
        if !self.store().write_pending(&maps.versions, &changes, &history).await? {
            let current = self.newest_version().await?.unwrap_or(newest_version);
            return Ok(version_mismatch(newest_version, current));
        }
        Ok(DirectoryMutationResult {
            succeeded: true,
            status: write.status,
            message: write.message,
            entry: write.entry,
            pending_map_version: Some(version),
            requires_activation: true,
            issues,
        })
    }

    /// Why the newest stored map (a pending map) does not validate.
    async fn invalid_pending(&self) -> Error {
        match self.stored().await {
            Ok(state) => match state.pending.or(state.active) {
                Some(newest) => match ShardMap::new(newest.options) {
                    Err(err) => err.into(),
                    Ok(_) => Error::Catalog {
                        reason: "the pending map changed while it was read; try again".to_owned(),
                    },
                },
                None => Error::NoMap,
            },
            Err(err) => err,
        }
    }
}

/// The records `write` changes on `newest`: the header of the next version and the entry's
/// record (its new value, or its removal).
fn written_records(newest: &ShardMap, write: &WriteEntry) -> Vec<RecordChange> {
    let mut header = newest.header_options();
    header.map_version = i64::try_from(newest.version() + 1).unwrap_or(i64::MAX);
    let mut changes = MapRecords::of(&header).all_changes();
    let entry = match &write.entry {
        Some(entry) => Some((entry, true)),
        None => newest
            .directory_entry(&write.directory, &write.lookup_key)
            .map(|existing| (existing, false)),
    };
    if let Some((entry, kept)) = entry {
        changes.push(RecordChange {
            kind: RecordKind::Directory,
            key: directory_entry_key(entry),
            value: kept.then(|| serde_json::to_string(entry).unwrap_or_default()),
        });
    }
    changes
}

fn version_mismatch(expected: u64, current: u64) -> DirectoryMutationResult {
    crate::directory::rejected(
        "map-version-mismatch",
        format!("expected map version {expected}, but the newest map version in the catalog is {current}"),
        None,
    )
}
