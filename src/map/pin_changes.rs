//! The pins a map changed since the options its routing state was built from.
//!
//! A router that follows a change of a few pins keeps the routing state of the map it served
//! (shards, bucket owners, the sorted pins and their token index, all shared) and records the
//! changed pins here; a lookup asks these first. The map's own options are built from the shared
//! ones and these only when something asks for them.

use std::collections::BTreeMap;

use super::options::ShardingOptions;

/// Changes kept before a map is built again from its options: each one costs a lookup in a
/// small ordered map on every pinned resolve.
pub(super) const MAX_PIN_CHANGES: usize = 4096;

/// A map's header and pins where they differ from the options it shares.
#[derive(Debug, Default, Clone)]
pub(super) struct PinChanges {
    /// The keyspace and version as the change wrote them, when a change moved them.
    header: Option<(String, i64)>,
    /// Each changed pin (a trimmed key): its owner as written and its shard's index, or `None`
    /// when the change removed it.
    pins: BTreeMap<String, Option<(String, u32)>>,
}

impl PinChanges {
    /// Whether the map is the one of its shared options.
    pub(super) fn is_empty(&self) -> bool {
        self.header.is_none() && self.pins.is_empty()
    }

    /// How many pins are changed.
    pub(super) fn len(&self) -> usize {
        self.pins.len()
    }

    /// The owner of a changed pin (`Some(None)`: the change removed it), or `None` when the
    /// key is not changed here.
    pub(super) fn owner(&self, key: &str) -> Option<Option<usize>> {
        if self.pins.is_empty() {
            return None;
        }
        let changed = self.pins.get(key)?;
        Some(changed.as_ref().and_then(|(_, index)| usize::try_from(*index).ok()))
    }

    /// Records the header a change wrote.
    pub(super) fn set_header(&mut self, keyspace: String, map_version: i64) {
        self.header = Some((keyspace, map_version));
    }

    /// Records pin `key` as owned by `owner` (as written; `index` is its shard), or removed.
    pub(super) fn set_pin(&mut self, key: &str, owner: Option<(String, u32)>) {
        self.pins.insert(key.to_owned(), owner);
    }

    /// The changed pins' keys.
    pub(super) fn keys(&self) -> impl Iterator<Item = &str> {
        self.pins.keys().map(String::as_str)
    }

    /// Writes the changed header, if any, into `options`.
    pub(super) fn header_into(&self, options: &mut ShardingOptions) {
        if let Some((keyspace, map_version)) = &self.header {
            options.keyspace.clone_from(keyspace);
            options.map_version = *map_version;
        }
    }

    /// The options of the map: `base` with the header and the pins changed.
    pub(super) fn merged(&self, base: &ShardingOptions) -> ShardingOptions {
        let mut options = base.clone();
        self.header_into(&mut options);
        self.pins_into(&mut options.exact_key_pins);
        options
    }

    /// Writes the changed pins into `pins`.
    pub(super) fn pins_into(&self, pins: &mut BTreeMap<String, String>) {
        for (key, owner) in &self.pins {
            match owner {
                Some((shard, _)) => {
                    pins.insert(key.clone(), shard.clone());
                }
                None => {
                    pins.remove(key);
                }
            }
        }
    }

    /// How many pins the map has, given the pins of `base`.
    pub(super) fn count(&self, base: &ShardingOptions) -> usize {
        let mut count = base.exact_key_pins.len();
        for (key, owner) in &self.pins {
            match (base.exact_key_pins.contains_key(key), owner.is_some()) {
                (false, true) => count += 1,
                (true, false) => count -= 1,
                _ => {}
            }
        }
        count
    }
}
