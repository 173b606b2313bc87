//! Shard directories in the map: named lookup indexes from a lookup key (an order number) to a
//! route (`targetKeyspace`, `routeKey`) and the shard it resolves to.
//!
//! This file holds the JSON model and the checks that need no routing: names, states, versions,
//! unknown directories, keyspaces and duplicates. Whether each entry's route still resolves to its
//! `shardId` is checked by the `directory` module, which can resolve routes.

use std::fmt;
use std::hash::BuildHasher;

pub use compact_str::CompactString;
use serde::{Deserialize, Serialize};

use super::MapError;
use super::validate::{ShardIdProblem, normalize_shard_id};

/// A shard directory: a named lookup index into one keyspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirectoryDefinition {
    /// The directory's name, unique ignoring case.
    pub directory_name: String,
    /// The keyspace its entries route into.
    pub target_keyspace: String,
    /// What the directory is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A read-only directory refuses the directory mutations (catalog updates and data moves
    /// still change its entries). Default true.
    #[serde(default = "read_only_default")]
    pub read_only: bool,
}

fn read_only_default() -> bool {
    true
}

impl DirectoryDefinition {
    /// A writable directory named `name` into `keyspace`.
    pub fn writable(name: impl Into<String>, keyspace: impl Into<String>) -> Self {
        Self {
            directory_name: name.into(),
            target_keyspace: keyspace.into(),
            description: None,
            read_only: false,
        }
    }
}

/// The state of a directory entry. Only `Active` entries resolve unless inactive ones are asked
/// for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub enum EntryState {
    /// Set aside, not yet resolvable.
    Reserved,
    /// Resolvable.
    Active,
    /// Its route is being moved.
    Moving,
    /// Switched off by an operator.
    Disabled,
    /// Kept as a record of a deleted lookup key.
    Deleted,
    /// Known to be out of date.
    Stale,
}

impl EntryState {
    /// Every state, in declaration order.
    pub const ALL: [Self; 6] = [
        Self::Reserved,
        Self::Active,
        Self::Moving,
        Self::Disabled,
        Self::Deleted,
        Self::Stale,
    ];

    /// The state's exact name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reserved => "Reserved",
            Self::Active => "Active",
            Self::Moving => "Moving",
            Self::Disabled => "Disabled",
            Self::Deleted => "Deleted",
            Self::Stale => "Stale",
        }
    }

    /// The state of an exact name (case-sensitive, as stored).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == name)
    }
}

impl fmt::Display for EntryState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of a shard directory: a lookup key and where its route lives.
///
/// Its text fields are [`CompactString`]s: up to 24 bytes are held inline, so an entry of
/// usual names and keys is one block of memory (a map may hold a million of them). They
/// serialise as plain strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirectoryEntry {
    /// The directory it belongs to (ignoring case).
    #[cfg_attr(feature = "server", schema(value_type = String))]
    pub directory_name: CompactString,
    /// The lookup key (an order number, say); looked up exactly, unique ignoring case.
    #[cfg_attr(feature = "server", schema(value_type = String))]
    pub lookup_key: CompactString,
    /// The keyspace of the route (the directory's).
    #[cfg_attr(feature = "server", schema(value_type = String))]
    pub target_keyspace: CompactString,
    /// The route key the lookup key stands for.
    #[cfg_attr(feature = "server", schema(value_type = String))]
    pub route_key: CompactString,
    /// The shard the route resolves to.
    #[cfg_attr(feature = "server", schema(value_type = String))]
    pub shard_id: CompactString,
    /// The map version that last wrote the entry.
    pub map_version: i64,
    /// Its state.
    pub state: EntryState,
}

impl DirectoryEntry {
    /// `directory:lookupKey`, as messages name an entry.
    pub fn label(&self) -> String {
        format!("{}:{}", self.directory_name.trim(), self.lookup_key.trim())
    }

    /// Whether two entries say the same thing apart from state and version: same directory and
    /// keyspace (ignoring case), route key, and shard (ignoring case).
    pub fn same_route(&self, other: &DirectoryEntry) -> bool {
        text_eq(&self.directory_name, &other.directory_name)
            && self.lookup_key.trim() == other.lookup_key.trim()
            && text_eq(&self.target_keyspace, &other.target_keyspace)
            && self.route_key.trim() == other.route_key.trim()
            && self.shard_id.trim().eq_ignore_ascii_case(other.shard_id.trim())
    }
}

/// Compares names ignoring case (directory names, keyspaces).
pub(crate) fn text_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    a.eq_ignore_ascii_case(b) || a.to_lowercase() == b.to_lowercase()
}

/// The key of a directory name or lookup key in an index: trimmed, lower case.
pub(crate) fn folded(text: &str) -> String {
    text.trim().to_lowercase()
}

/// [`folded`], borrowed when the text is already folded (lower-case ASCII, trimmed).
fn folded_ref(text: &str) -> std::borrow::Cow<'_, str> {
    let text = trimmed(text);
    if text.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(text.to_lowercase())
    }
}

/// [`str::trim`], with a fast answer for text that starts and ends with a visible ASCII
/// character (names and keys nearly always do).
pub(crate) fn trimmed(text: &str) -> &str {
    match (text.as_bytes().first(), text.as_bytes().last()) {
        (Some(first), Some(last)) if first.is_ascii_graphic() && last.is_ascii_graphic() => text,
        _ => text.trim(),
    }
}

/// Up to how many directories a map's directory names are scanned rather than hashed.
const SCANNED_NAMES: usize = 8;

/// How long an ASCII lookup key may be to be folded on the stack.
const INLINE_KEY: usize = 64;

/// A lookup key folded for the index ([`folded`]): on the stack when it is ASCII and at most
/// [`INLINE_KEY`] bytes long (an order number), so a lookup allocates nothing.
pub(super) enum FoldedKey {
    /// ASCII, lower case, in the first `len` bytes.
    Inline { bytes: [u8; INLINE_KEY], len: usize },
    /// Any other key.
    Heap(String),
}

impl FoldedKey {
    /// Folds `text`: trimmed, lower case.
    pub(super) fn new(text: &str) -> Self {
        let text = trimmed(text);
        if text.len() > INLINE_KEY || !text.is_ascii() {
            return Self::Heap(text.to_lowercase());
        }
        let mut bytes = [0; INLINE_KEY];
        for (to, from) in bytes.iter_mut().zip(text.bytes()) {
            *to = from.to_ascii_lowercase();
        }
        Self::Inline { bytes, len: text.len() }
    }

    /// The folded key.
    pub(super) fn as_str(&self) -> &str {
        match self {
            // Lower-cased ASCII is ASCII, so this never falls back.
            Self::Inline { bytes, len } => std::str::from_utf8(&bytes[..*len]).unwrap_or_default(),
            Self::Heap(text) => text,
        }
    }
}

/// Whether `key` (a lookup key or a directory name) folds to `folded_key` (a [`FoldedKey`]),
/// without folding an ASCII key.
fn folds_to(key: &str, folded_key: &str) -> bool {
    let key = trimmed(key);
    if key.is_ascii() {
        return key.len() == folded_key.len()
            && key
                .bytes()
                .zip(folded_key.bytes())
                .all(|(a, b)| a.to_ascii_lowercase() == b);
    }
    key.to_lowercase() == folded_key
}

/// The directories of a validated map, indexed: each directory by its folded name, and each
/// directory's entries by their folded lookup key (lookup keys are unique ignoring case, so the
/// folded key finds the one entry a lookup may match exactly).
///
/// An entry's index slot is its position in the entries alone (4 bytes), found by the hash of
/// its folded lookup key and compared against the entry itself: the keys are not held twice.
#[derive(Debug, Clone, Default)]
pub(super) struct DirectoryIndex {
    /// The folded directory names, in definition order: a map usually holds a handful, which a
    /// scan finds faster than a hash.
    names: Vec<String>,
    /// The same names to their position, for a map with more than [`SCANNED_NAMES`].
    by_name: hashbrown::HashMap<String, usize>,
    entries: Vec<hashbrown::HashTable<u32>>,
    /// Keyed per index, as std's is, and several times faster on short keys.
    hasher: hashbrown::DefaultHashBuilder,
    pub(super) counts: Vec<usize>,
}

impl DirectoryIndex {
    /// The position of directory `name` (ignoring case).
    pub(super) fn directory(&self, name: &str) -> Option<usize> {
        if self.names.len() <= SCANNED_NAMES {
            return self.names.iter().position(|folded_name| folds_to(name, folded_name));
        }
        self.by_name.get(folded_ref(name).as_ref()).copied()
    }

    /// Adds directory `name` at the next position; false when it is already there.
    fn add_directory(&mut self, name: &str) -> bool {
        if self.directory(name).is_some() {
            return false;
        }
        self.by_name.insert(folded(name), self.names.len());
        self.names.push(folded(name));
        self.counts.push(0);
        self.entries.push(hashbrown::HashTable::new());
        true
    }

    /// The position in `entries` (the entries the index was built from) of the entry of
    /// directory `at` whose folded lookup key is `folded_key`.
    pub(super) fn entry(&self, at: usize, folded_key: &str, entries: &[DirectoryEntry]) -> Option<usize> {
        let hash = self.hasher.hash_one(folded_key);
        let found = self.entries.get(at)?.find(hash, |&position| {
            position_of(position)
                .and_then(|position| entries.get(position))
                .is_some_and(|entry| folds_to(&entry.lookup_key, folded_key))
        })?;
        position_of(*found)
    }

    /// [`entry`](Self::entry) for a lookup, which matches its trimmed key exactly: the one entry
    /// whose folded key is `folded_key`, when its key is `key`, without folding it again.
    pub(super) fn exact_entry(
        &self,
        at: usize,
        folded_key: &str,
        key: &str,
        entries: &[DirectoryEntry],
    ) -> Option<usize> {
        let hash = self.hasher.hash_one(folded_key);
        let found = self.entries.get(at)?.find(hash, |&position| {
            position_of(position)
                .and_then(|position| entries.get(position))
                .is_some_and(|entry| trimmed(&entry.lookup_key) == key)
        })?;
        position_of(*found)
    }

    /// Indexes the entry at `position` of `entries` in directory `at`; false when the directory
    /// already holds its folded lookup key.
    fn insert(&mut self, at: usize, position: usize, entries: &[DirectoryEntry]) -> bool {
        let key = FoldedKey::new(&entries[position].lookup_key);
        if self.entry(at, key.as_str(), entries).is_some() {
            return false;
        }
        let hash = self.hasher.hash_one(key.as_str());
        let hasher = &self.hasher;
        let rehash = |&slot: &u32| {
            let entry = position_of(slot).and_then(|slot| entries.get(slot));
            hasher.hash_one(
                entry
                    .map_or(FoldedKey::Heap(String::new()), |entry| {
                        FoldedKey::new(&entry.lookup_key)
                    })
                    .as_str(),
            )
        };
        self.entries[at].insert_unique(hash, u32::try_from(position).unwrap_or(u32::MAX), rehash);
        true
    }
}

fn position_of(slot: u32) -> Option<usize> {
    usize::try_from(slot).ok()
}

/// The checks of the directories and their entries that need no routing, in the reference's
/// order; the index of the result serves lookups.
pub(super) fn validate_directories(
    directories: &[DirectoryDefinition],
    entries: &[DirectoryEntry],
    map_version: u64,
) -> Result<DirectoryIndex, MapError> {
    let mut index = DirectoryIndex::default();
    for directory in directories {
        let name = required("directoryName", &directory.directory_name, "")?;
        required("targetKeyspace", &directory.target_keyspace, name)?;
        if !index.add_directory(name) {
            return Err(MapError::DuplicateDirectory { name: name.to_owned() });
        }
    }
    if let [only] = index.entries.as_mut_slice() {
        only.reserve(entries.len(), |_| 0);
    }
    for (at, entry) in entries.iter().enumerate() {
        let position = check_entry(directories, &index, entry, map_version)?;
        if !index.insert(position, at, entries) {
            return Err(MapError::DuplicateDirectoryEntry { entry: entry.label() });
        }
        index.counts[position] += 1;
    }
    Ok(index)
}

/// The checks of one entry that need no routing and no other entry, in the reference's order;
/// the position of its directory.
pub(super) fn check_entry(
    directories: &[DirectoryDefinition],
    index: &DirectoryIndex,
    entry: &DirectoryEntry,
    map_version: u64,
) -> Result<usize, MapError> {
    let entry_label = entry.label();
    let label = entry_label.as_str();
    let directory_name = required("directoryName", &entry.directory_name, label)?;
    required("lookupKey", &entry.lookup_key, label)?;
    required("targetKeyspace", &entry.target_keyspace, label)?;
    required("routeKey", &entry.route_key, label)?;
    normalize_shard_id(&entry.shard_id).map_err(|problem| match problem {
        ShardIdProblem::Blank => MapError::BlankDirectoryField {
            field: "shardId",
            entry: label.to_owned(),
        },
        other => other.into_error(&entry.shard_id),
    })?;
    let Some(position) = index.directory(directory_name) else {
        return Err(MapError::EntryUnknownDirectory {
            entry: label.to_owned(),
            directory: directory_name.to_owned(),
        });
    };
    let directory = &directories[position];
    if !text_eq(&entry.target_keyspace, &directory.target_keyspace) {
        return Err(MapError::EntryKeyspaceMismatch {
            entry: label.to_owned(),
            keyspace: entry.target_keyspace.trim().to_owned(),
            expected: directory.target_keyspace.trim().to_owned(),
        });
    }
    if entry.map_version <= 0 {
        return Err(MapError::EntryMapVersionNotPositive {
            entry: label.to_owned(),
            value: entry.map_version,
        });
    }
    if u64::try_from(entry.map_version).unwrap_or(u64::MAX) > map_version {
        return Err(MapError::EntryFutureMapVersion {
            entry: label.to_owned(),
            value: entry.map_version,
            map_version,
        });
    }
    Ok(position)
}

fn required<'a>(field: &'static str, value: &'a str, entry: &str) -> Result<&'a str, MapError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(MapError::BlankDirectoryField {
            field,
            entry: entry.to_owned(),
        });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(directory: &str, key: &str, version: i64) -> DirectoryEntry {
        DirectoryEntry {
            directory_name: directory.into(),
            lookup_key: key.into(),
            target_keyspace: "tenants".into(),
            route_key: "tenant-a".into(),
            shard_id: "s0".into(),
            map_version: version,
            state: EntryState::Active,
        }
    }

    #[test]
    fn each_rule_names_its_problem() {
        let dirs = vec![DirectoryDefinition::writable("orders", "tenants")];
        let check = |entries: Vec<DirectoryEntry>| validate_directories(&dirs, &entries, 2).unwrap_err().to_string();
        assert!(check(vec![entry("other", "SO-1", 1)]).contains("unknown directory 'other'"));
        let mut wrong_keyspace = entry("orders", "SO-1", 1);
        wrong_keyspace.target_keyspace = "users".into();
        assert!(check(vec![wrong_keyspace]).contains("does not match"));
        assert!(check(vec![entry("orders", "SO-1", 0)]).contains("greater than 0"));
        assert!(check(vec![entry("orders", "SO-1", 3)]).contains("future map version 3"));
        assert!(check(vec![entry("orders", "SO-1", 1), entry("ORDERS", "so-1", 1)]).contains("more than once"));
        assert!(check(vec![entry("orders", " ", 1)]).contains("lookupKey"));
        let twice = vec![
            DirectoryDefinition::writable("orders", "tenants"),
            DirectoryDefinition::writable("Orders", "tenants"),
        ];
        assert!(validate_directories(&twice, &[], 1).is_err());
    }

    #[test]
    fn the_index_finds_a_key_ignoring_case_without_holding_it_twice() {
        let dirs = vec![DirectoryDefinition::writable("orders", "tenants")];
        let entries = vec![
            entry("orders", " SO-1 ", 1),
            entry("orders", "Ärger-7", 1),
            entry("orders", "\u{212A}elvin", 1),
        ];
        let index = validate_directories(&dirs, &entries, 1).unwrap();
        let find = |key: &str| index.entry(0, FoldedKey::new(key).as_str(), &entries);
        assert_eq!(find("so-1"), Some(0));
        assert_eq!(find("  So-1"), Some(0));
        assert_eq!(find("ärger-7"), Some(1));
        assert_eq!(find("ÄRGER-7"), Some(1));
        // The Kelvin sign folds to an ASCII `k`, as `str::to_lowercase` folds it.
        assert_eq!(find("kelvin"), Some(2));
        assert_eq!(find("SO-2"), None);
        // A lookup matches the trimmed key exactly.
        let exact = |key: &str| index.exact_entry(0, FoldedKey::new(key).as_str(), key, &entries);
        assert_eq!(exact("SO-1"), Some(0));
        assert_eq!(exact("so-1"), None);
        assert_eq!(exact("Ärger-7"), Some(1));
        assert_eq!(exact("ärger-7"), None);
        assert_eq!(FoldedKey::new("  Ab-1 ").as_str(), folded("  Ab-1 "));
        assert_eq!(FoldedKey::new(" ÄB ").as_str(), folded(" ÄB "));
        let long = "K".repeat(INLINE_KEY + 1);
        assert_eq!(FoldedKey::new(&long).as_str(), folded(&long));
        assert_eq!(trimmed(" a "), "a");
        assert_eq!(trimmed("a\u{a0}"), "a");
        assert_eq!(trimmed(""), "");
        let twice = vec![entry("orders", "kelvin", 1), entry("orders", "\u{212A}ELVIN", 1)];
        assert!(
            validate_directories(&dirs, &twice, 1)
                .unwrap_err()
                .to_string()
                .contains("more than once")
        );
    }

    #[test]
    fn many_directories_are_found_by_hash_as_a_few_are_by_scan() {
        for count in [1, SCANNED_NAMES, SCANNED_NAMES + 1, 40] {
            let dirs: Vec<_> = (0..count)
                .map(|n| DirectoryDefinition::writable(format!("Dir-{n}"), "tenants"))
                .collect();
            let index = validate_directories(&dirs, &[entry(" DIR-0 ", "SO-1", 1)], 1).unwrap();
            assert_eq!(
                index.directory(&format!(" dir-{} ", count - 1)),
                Some(count - 1),
                "{count}"
            );
            assert_eq!(index.directory("dir-x"), None, "{count}");
            assert_eq!(index.counts[0], 1, "{count}");
            let mut twice = dirs.clone();
            twice.push(DirectoryDefinition::writable(format!("DIR-{}", count - 1), "tenants"));
            assert!(validate_directories(&twice, &[], 1).is_err(), "{count}");
        }
    }

    #[test]
    fn states_are_exact_names() {
        assert_eq!(EntryState::parse("Stale"), Some(EntryState::Stale));
        assert_eq!(EntryState::parse("stale"), None);
        let json = r#"{"directoryName":"d","lookupKey":"k","targetKeyspace":"t","routeKey":"r","shardId":"s","mapVersion":1,"state":"Bogus"}"#;
        assert!(serde_json::from_str::<DirectoryEntry>(json).is_err());
    }
}
