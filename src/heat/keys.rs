//! The hottest route keys in a fixed number of slots, whatever the number of keys seen.
//!
//! Space-Saving (Metwally, Agrawal and El Abbadi, 2005) over decaying counts: a key already
//! tracked adds to its slot; a new key takes a free slot, or else the slot of the least counted
//! key, inheriting that count as its possible overestimate. A key whose true (decayed) count
//! exceeds what the table can miss is always tracked, and each slot knows how much of its
//! count may be borrowed, so the report gives counts the key certainly reached.

use std::collections::HashMap;

use super::counter::{Decay, Decaying};

/// One tracked key.
#[derive(Debug, Clone)]
pub(super) struct KeySlot {
    /// The trimmed route key.
    pub(super) key: Box<str>,
    /// Its bucket.
    pub(super) bucket: u32,
    requests: Decaying,
    rows: Decaying,
    /// How much of `requests` the key may have inherited from the key it replaced.
    overestimate: Decaying,
}

impl KeySlot {
    /// Requests the key certainly made (decayed): its count less what it may have inherited.
    pub(super) fn requests(&self, now: u32, decay: &Decay) -> f64 {
        (self.requests.value(now, decay) - self.overestimate.value(now, decay)).max(0.0)
    }

    /// Rows the key's requests returned or changed since it took the slot (decayed).
    pub(super) fn rows(&self, now: u32, decay: &Decay) -> f64 {
        self.rows.value(now, decay)
    }
}

/// At most `capacity` keys with their decaying counts.
#[derive(Debug)]
pub(super) struct TopKeys {
    capacity: usize,
    slots: Vec<KeySlot>,
    by_key: HashMap<Box<str>, usize>,
}

impl TopKeys {
    /// A table of `capacity` slots (at least one).
    pub(super) fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            capacity,
            slots: Vec::with_capacity(capacity),
            by_key: HashMap::with_capacity(capacity),
        }
    }

    /// Counts one request of `key` (in `bucket`) that returned or changed `rows` rows.
    pub(super) fn record(&mut self, key: &str, bucket: u32, rows: f64, now: u32, decay: &Decay) {
        if let Some(&at) = self.by_key.get(key) {
            let slot = &mut self.slots[at];
            slot.requests.add(1.0, now, decay);
            slot.rows.add(rows, now, decay);
            return;
        }
        if self.slots.len() < self.capacity {
            self.by_key.insert(key.into(), self.slots.len());
            self.slots.push(KeySlot {
                key: key.into(),
                bucket,
                requests: Decaying::new(1.0, now),
                rows: Decaying::new(rows, now),
                overestimate: Decaying::new(0.0, now),
            });
            return;
        }
        let Some((at, least)) = self
            .slots
            .iter()
            .map(|slot| slot.requests.value(now, decay))
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return;
        };
        let slot = &mut self.slots[at];
        self.by_key.remove(&slot.key);
        self.by_key.insert(key.into(), at);
        *slot = KeySlot {
            key: key.into(),
            bucket,
            requests: Decaying::new(least + 1.0, now),
            rows: Decaying::new(rows, now),
            overestimate: Decaying::new(least, now),
        };
    }

    /// The tracked keys, in no particular order.
    pub(super) fn slots(&self) -> &[KeySlot] {
        &self.slots
    }

    /// How many keys are tracked (never more than the capacity).
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn decay() -> Decay {
        Decay::new(Duration::from_secs(60))
    }

    #[test]
    fn a_hot_key_stays_tracked_among_a_flood_of_distinct_keys() {
        let decay = decay();
        let mut keys = TopKeys::new(16);
        for i in 0..100_000u32 {
            keys.record(&format!("cold-{i}"), i % 64, 1.0, 0, &decay);
            if i % 10 == 0 {
                keys.record("hot", 7, 2.0, 0, &decay);
            }
        }
        assert_eq!(keys.len(), 16);
        assert_eq!(keys.by_key.len(), 16);
        let hot = keys
            .slots()
            .iter()
            .find(|slot| &*slot.key == "hot")
            .expect("the hot key is tracked");
        // It made 10,000 requests; the table may not claim more than that for certain.
        let certain = hot.requests(0, &decay);
        assert!(certain <= 10_000.0 + 1e-6 && certain > 9_000.0, "{certain}");
        assert_eq!(hot.bucket, 7);
        for slot in keys.slots().iter().filter(|slot| &*slot.key != "hot") {
            assert!(slot.requests(0, &decay) < certain / 100.0);
        }
    }

    #[test]
    fn counts_decay_so_a_new_hot_key_replaces_an_old_one() {
        let decay = decay();
        let minute = 60 * 64;
        let mut keys = TopKeys::new(2);
        for _ in 0..1000 {
            keys.record("yesterday", 1, 0.0, 0, &decay);
        }
        for _ in 0..100 {
            keys.record("today", 2, 1.0, 20 * minute, &decay);
        }
        keys.record("passer-by", 3, 0.0, 20 * minute, &decay);
        let tracked: Vec<&str> = keys.slots().iter().map(|slot| &*slot.key).collect();
        assert!(
            tracked.contains(&"today") && tracked.contains(&"passer-by"),
            "{tracked:?}"
        );
        let today = keys.slots().iter().find(|slot| &*slot.key == "today").unwrap();
        assert!((today.rows(20 * minute, &decay) - 100.0).abs() < 1e-9);
    }
}
