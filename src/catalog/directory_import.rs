//! A bulk load of directory entries as one catalog change: every entry is planned as an upsert
//! against the newest stored map, and the entries that change are written as one pending map,
//! compare-and-set on that map's version, with one history entry. A refused entry refuses the
//! whole load and writes nothing.

use std::collections::{HashMap, HashSet};

use super::Catalog;
use crate::data::{
    Audit, CatalogUpdateRequest, DirectoryImportOutcome, DirectoryMutation, DirectoryMutationResult, DirectoryOperation,
};
use crate::directory::{Plan, plan};
use crate::error::{Error, Result};
use crate::map::{DirectoryEntry, ShardMap};

impl Catalog {
    /// Upserts `entries` (each a [`DirectoryMutation`] naming its directory, lookup key and
    /// route) as one pending map on the newest stored map, compare-and-set on `expected` when
    /// given. A lookup key given twice, or an entry the upsert refuses, refuses the load.
    pub async fn import_directory(
        &self,
        entries: &[DirectoryMutation],
        expected: Option<u64>,
        audit: Audit,
    ) -> Result<DirectoryImportOutcome> {
        let state = self.stored().await?;
        let Some(newest) = state.pending.as_ref().or(state.active.as_ref()) else {
            return Err(Error::NoMap);
        };
        if let Some(expected) = expected
            && expected != newest.version
        {
            return Err(Error::MapVersionConflict {
                expected,
                current: newest.version,
            });
        }
        let working = ShardMap::new(newest.options.clone())?;
        let mut outcome = DirectoryImportOutcome::default();
        let mut seen = HashSet::with_capacity(entries.len());
        let mut written: Vec<DirectoryEntry> = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            let key = (
                entry.directory_name.trim().to_ascii_lowercase(),
                entry.lookup_key.trim().to_owned(),
            );
            if !seen.insert(key) {
                let refusal = crate::directory::rejected(
                    "duplicate-lookup-key",
                    format!("lookup key '{}' is given twice in one import", entry.lookup_key.trim()),
                    None,
                );
                return Ok(refused(index, refusal));
            }
            let result = match plan(DirectoryOperation::Upsert, &working, entry) {
                Plan::Done(result) if !result.succeeded => return Ok(refused(index, result)),
                Plan::Done(result) => result.status,
                Plan::Write(write) => {
                    written.extend(write.entry);
                    write.status
                }
            };
            *outcome.statuses.entry(format!("{result:?}")).or_default() += 1;
        }
        if written.is_empty() {
            return Ok(outcome);
        }
        let mut proposed = newest.options.clone();
        proposed.map_version = i64::try_from(newest.version + 1).unwrap_or(i64::MAX);
        let at: HashMap<(String, String), usize> = proposed
            .directory_entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                (
                    (
                        e.directory_name.trim().to_ascii_lowercase(),
                        e.lookup_key.trim().to_owned(),
                    ),
                    i,
                )
            })
            .collect();
        for entry in written {
            let key = (
                entry.directory_name.trim().to_ascii_lowercase(),
                entry.lookup_key.trim().to_owned(),
            );
            match at.get(&key) {
                Some(&i) => proposed.directory_entries[i] = entry,
                None => proposed.directory_entries.push(entry),
            }
        }
        let count = written_count(&outcome);
        let audit = audit.or_because(|| format!("imported {count} shard directory entries"));
        let update = CatalogUpdateRequest::new(proposed)
            .expecting_version(newest.version)
            .audit(audit);
        let applied = self.apply_update(update).await?;
        if !applied.applied {
            let reason = applied.validation.issues.first().map_or_else(
                || "the imported entries make a map that does not validate".to_owned(),
                |issue| {
                    format!(
                        "the imported entries make a map that does not validate: {}",
                        issue.message
                    )
                },
            );
            return Err(Error::invalid_argument("shard directory import", reason));
        }
        outcome.pending_map_version = applied.pending_map_version;
        Ok(outcome)
    }
}

/// How many entries the load writes (those not already up to date).
fn written_count(outcome: &DirectoryImportOutcome) -> u64 {
    outcome
        .statuses
        .iter()
        .filter(|(status, _)| status.as_str() != "AlreadyUpToDate")
        .map(|(_, n)| n)
        .sum()
}

fn refused(index: usize, result: DirectoryMutationResult) -> DirectoryImportOutcome {
    DirectoryImportOutcome::refused(index, result)
}
