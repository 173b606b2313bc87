//! The directory entries a map changed since the options its index was built from.
//!
//! A router (or the catalog) that follows a change of a few directory entries keeps the entries
//! and the index of the map it served, shared, and records the changed entries here; a lookup
//! asks these first. The map's own options (its whole list of entries) are built only when
//! something asks for them. See [`pin_changes`](super::pin_changes) for the same design for pins.

use std::collections::BTreeMap;

use super::delta::apply_changes;
use super::directory::{DirectoryEntry, folded};
use super::options::ShardingOptions;
use super::records::{RecordChange, RecordKind};

/// Changes kept before a map is built again from its options: each one is held in a small
/// ordered map that every lookup asks first.
pub(super) const MAX_ENTRY_CHANGES: usize = 4096;

/// One changed entry: its record key, and the entry, or `None` when the change removed it.
#[derive(Debug, Clone)]
pub(super) struct ChangedEntry {
    pub(super) record_key: String,
    pub(super) entry: Option<DirectoryEntry>,
}

/// A map's directory entries where they differ from the options it shares.
#[derive(Debug, Default, Clone)]
pub(super) struct EntryChanges {
    /// Each changed entry by its directory's position, then its folded lookup key.
    entries: BTreeMap<usize, BTreeMap<String, ChangedEntry>>,
    /// How many entries are changed, over all directories.
    len: usize,
    /// How many entries each changed directory (by position) gained (or lost, below 0).
    deltas: BTreeMap<usize, isize>,
}

impl EntryChanges {
    /// Whether no entry changed.
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many entries are changed.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The change of the entry of directory `at` whose folded lookup key is `folded_key`, or
    /// `None` when it is not changed here.
    pub(super) fn get(&self, at: usize, folded_key: &str) -> Option<&ChangedEntry> {
        if self.entries.is_empty() {
            return None;
        }
        self.entries.get(&at)?.get(folded_key)
    }

    /// Records the entry of directory `at` (whose record key is `record_key`) as `entry`, or
    /// removed; `existed` says whether the map held it before.
    pub(super) fn set(&mut self, at: usize, record_key: String, entry: Option<DirectoryEntry>, existed: bool) {
        let folded_key = entry
            .as_ref()
            .map_or_else(|| lookup_key_of(&record_key), |entry| folded(&entry.lookup_key));
        let delta = match (existed, entry.is_some()) {
            (false, true) => 1,
            (true, false) => -1,
            _ => 0,
        };
        *self.deltas.entry(at).or_default() += delta;
        let changed = ChangedEntry { record_key, entry };
        if self
            .entries
            .entry(at)
            .or_default()
            .insert(folded_key, changed)
            .is_none()
        {
            self.len += 1;
        }
    }

    /// How many entries directory `at` holds, given `base` entries before the changes.
    pub(super) fn count(&self, at: usize, base: usize) -> usize {
        let delta = self.deltas.get(&at).copied().unwrap_or(0);
        base.saturating_add_signed(delta)
    }

    /// Writes the changed entries into `options`, in the order a store reads them back.
    pub(super) fn merge_into(&self, options: &mut ShardingOptions) {
        if self.entries.is_empty() {
            return;
        }
        let changes: Vec<RecordChange> = self
            .entries
            .values()
            .flat_map(BTreeMap::values)
            .map(|changed| RecordChange {
                kind: RecordKind::Directory,
                key: changed.record_key.clone(),
                value: changed
                    .entry
                    .as_ref()
                    .map(|entry| serde_json::to_string(entry).unwrap_or_default()),
            })
            .collect();
        // The values were written from entries: they parse.
        let _ = apply_changes(options, &changes);
    }
}

/// The folded lookup key of a directory entry's record key (`{len}:{directory}|{lookupKey}`).
pub(super) fn lookup_key_of(record_key: &str) -> String {
    let Some((len, rest)) = record_key.split_once(':') else {
        return String::new();
    };
    let len: usize = len.parse().unwrap_or(0);
    rest.get(len..)
        .and_then(|rest| rest.strip_prefix('|'))
        .map(folded)
        .unwrap_or_default()
}

/// The folded directory name of a directory entry's record key.
pub(super) fn directory_of(record_key: &str) -> Option<&str> {
    let (len, rest) = record_key.split_once(':')?;
    rest.get(..len.parse().ok()?)
}
