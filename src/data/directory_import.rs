//! The shapes of a bulk load of directory entries: one request carrying many upserts, written
//! as one pending map, and what it did.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Audit, DirectoryMutation, DirectoryMutationResult};

/// One entry of a [`DirectoryImport`]: an upsert of `lookupKey` in `directoryName` to the route
/// `targetKeyspace`/`routeKey`, with `state` (default `Active`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirectoryImportEntry {
    /// The directory (ignoring case).
    pub directory_name: String,
    /// The lookup key (trimmed, exact).
    pub lookup_key: String,
    /// The route's keyspace: the directory's.
    pub target_keyspace: String,
    /// The route key.
    pub route_key: String,
    /// The entry's state (default `Active`), one of the exact state names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

impl DirectoryImportEntry {
    /// The upsert this entry stands for.
    pub fn to_mutation(&self) -> DirectoryMutation {
        let mut mutation = DirectoryMutation::new(&self.directory_name, &self.lookup_key)
            .route(&self.target_keyspace, &self.route_key);
        mutation.state = self.state.clone();
        mutation
    }
}

/// A bulk load of directory entries: every entry is planned as an upsert against the newest
/// stored map, and those that change are written as one pending map, compare-and-set on that
/// map's version, with one history entry. A lookup key given twice, or an entry the upsert
/// refuses, refuses the whole load and writes nothing.
///
/// ```
/// use shardlite::data::{DirectoryImport, DirectoryImportEntry};
///
/// let import: DirectoryImport = serde_json::from_str(
///     r#"{"entries": [{"directoryName": "orders_by_id", "lookupKey": "SO-1",
///         "targetKeyspace": "orders", "routeKey": "tenant-a"}], "activate": true}"#,
/// )?;
/// assert_eq!(import.entries.len(), 1);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirectoryImport {
    /// The entries, each an upsert.
    pub entries: Vec<DirectoryImportEntry>,
    /// The newest map version the catalog holds (the pending map's, else the active map's); a
    /// different one refuses the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_current_map_version: Option<u64>,
    /// Activates the pending map the load writes, in the same call.
    #[serde(default)]
    pub activate: bool,
    /// Who makes the change, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Why, for the history (a default counts the entries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl DirectoryImport {
    /// A load of `entries`, compare-and-set on nothing, not activated.
    pub fn new(entries: Vec<DirectoryImportEntry>) -> Self {
        Self {
            entries,
            ..Self::default()
        }
    }

    /// The operator and comment, as an [`Audit`].
    pub fn audit(&self) -> Audit {
        Audit::new(self.operator.clone(), self.comment.clone())
    }
}

/// What a bulk load of directory entries did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DirectoryImportOutcome {
    /// How many entries ended with each status (`Upserted`, `Repaired`, `AlreadyUpToDate`);
    /// nothing when the load was refused.
    pub statuses: BTreeMap<String, u64>,
    /// The pending map version written, if any entry changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_map_version: Option<u64>,
    /// Whether that map was activated in the same call.
    #[serde(default)]
    pub activated: bool,
    /// The index (from 0) of the first entry refused; nothing was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_entry: Option<u64>,
    /// Why that entry was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<DirectoryMutationResult>,
}

impl DirectoryImportOutcome {
    /// A load refused at entry `index` for `result`.
    pub fn refused(index: usize, result: DirectoryMutationResult) -> Self {
        Self {
            refused_entry: Some(index as u64),
            refusal: Some(result),
            ..Self::default()
        }
    }

    /// Whether the load was written (or had nothing to write).
    pub fn succeeded(&self) -> bool {
        self.refusal.is_none()
    }
}
