//! The hottest route keys in a fixed number of slots, whatever the number of keys seen.
//!
//! Space-Saving (Metwally, Agrawal and El Abbadi, 2005) over decaying counts: a key already
//! tracked adds to its slot; a new key takes a free slot, or else the slot of the least counted
//! key, inheriting that count as its possible overestimate. A key whose true (decayed) count
//! exceeds what the table can miss is always tracked, and each slot knows how much of its
//! count may be borrowed, so the report gives counts the key certainly reached.
//!
//! Counts decay forward (Cormode, Shkapenyuk, Srivastava and Xu, 2009): a call at tick `t` adds
//! `2^((t - landmark) / half-life)` rather than every count shrinking as time passes, so all
//! slots share one scale, finding the least counted slot is plain comparisons, and reading a
//! count divides by the same factor. When the weights grow large the landmark moves forward and
//! every slot is scaled down once.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::counter::Decay;

/// Half-lives past the landmark after which the landmark moves: weights stay below 2^64.
const RESCALE_AFTER: f64 = 64.0;

/// One tracked key, its counts in landmark units.
#[derive(Debug, Clone)]
struct KeySlot {
    key: Box<str>,
    bucket: u32,
    requests: f64,
    rows: f64,
    /// How much of `requests` the key may have inherited from the key it replaced.
    overestimate: f64,
}

/// A tracked key's decayed counts at one moment.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TrackedKey {
    /// The trimmed route key.
    pub(super) key: Box<str>,
    /// Its bucket.
    pub(super) bucket: u32,
    /// Requests the key certainly made (decayed): its count less what it may have inherited.
    pub(super) requests: f64,
    /// Rows the key's requests returned or changed since it took the slot (decayed).
    pub(super) rows: f64,
}

/// FNV-1a, for the key index: it holds at most `capacity` keys, so keys made to collide cost a
/// scan of those few at worst, and SipHash's resistance to floods would only cost every call.
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// At most `capacity` keys with their decaying counts.
#[derive(Debug)]
pub(super) struct TopKeys {
    capacity: usize,
    slots: Vec<KeySlot>,
    by_key: HashMap<Box<str>, usize, BuildHasherDefault<Fnv>>,
    /// The tick weights are relative to.
    landmark: u32,
    /// The last tick a weight was computed for, and that weight: calls within one tick (1/64 s)
    /// share it.
    last_weight: (u32, f64),
}

impl TopKeys {
    /// A table of `capacity` slots (at least one).
    pub(super) fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            capacity,
            slots: Vec::with_capacity(capacity),
            by_key: HashMap::with_capacity_and_hasher(capacity, BuildHasherDefault::default()),
            landmark: 0,
            // A call at tick 0 weighs 2^0 against the first landmark, tick 0.
            last_weight: (0, 1.0),
        }
    }

    /// The weight of one call at `now`, moving the landmark first when weights grew too large.
    fn weight(&mut self, now: u32, decay: &Decay) -> f64 {
        if self.last_weight.0 == now {
            return self.last_weight.1;
        }
        let half_lives = decay.half_lives(self.landmark, now);
        if half_lives <= RESCALE_AFTER {
            let weight = half_lives.exp2();
            self.last_weight = (now, weight);
            return weight;
        }
        let shrink = (-half_lives).exp2();
        for slot in &mut self.slots {
            slot.requests *= shrink;
            slot.rows *= shrink;
            slot.overestimate *= shrink;
        }
        self.landmark = now;
        self.last_weight = (now, 1.0);
        1.0
    }

    /// Counts one request of `key` (in `bucket`) that returned or changed `rows` rows.
    pub(super) fn record(&mut self, key: &str, bucket: u32, rows: f64, now: u32, decay: &Decay) {
        let weight = self.weight(now, decay);
        if let Some(&at) = self.by_key.get(key) {
            let slot = &mut self.slots[at];
            slot.requests += weight;
            slot.rows += rows * weight;
            return;
        }
        let mut slot = KeySlot {
            key: key.into(),
            bucket,
            requests: weight,
            rows: rows * weight,
            overestimate: 0.0,
        };
        if self.slots.len() < self.capacity {
            self.by_key.insert(key.into(), self.slots.len());
            self.slots.push(slot);
            return;
        }
        let Some((at, least)) = self
            .slots
            .iter()
            .map(|slot| slot.requests)
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return;
        };
        slot.requests += least;
        slot.overestimate = least;
        self.by_key.remove(&self.slots[at].key);
        self.by_key.insert(key.into(), at);
        self.slots[at] = slot;
    }

    /// The tracked keys with their counts at `now`, in no particular order.
    pub(super) fn tracked(&self, now: u32, decay: &Decay) -> Vec<TrackedKey> {
        let scale = (-decay.half_lives(self.landmark, now)).exp2();
        self.slots
            .iter()
            .map(|slot| TrackedKey {
                key: slot.key.clone(),
                bucket: slot.bucket,
                requests: ((slot.requests - slot.overestimate) * scale).max(0.0),
                rows: slot.rows * scale,
            })
            .collect()
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

    const MINUTE: u32 = 60 * 64;

    fn find<'a>(tracked: &'a [TrackedKey], key: &str) -> Option<&'a TrackedKey> {
        tracked.iter().find(|tracked| &*tracked.key == key)
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
        let tracked = keys.tracked(0, &decay);
        let hot = find(&tracked, "hot").expect("the hot key is tracked");
        // It made 10,000 requests; the table may not claim more than that for certain.
        assert!(hot.requests <= 10_000.0 + 1e-6 && hot.requests > 9_000.0, "{hot:?}");
        assert_eq!(hot.bucket, 7);
        for other in tracked.iter().filter(|tracked| &*tracked.key != "hot") {
            assert!(other.requests < hot.requests / 100.0, "{other:?}");
        }
    }

    #[test]
    fn counts_decay_so_a_new_hot_key_replaces_an_old_one() {
        let decay = decay();
        let mut keys = TopKeys::new(2);
        for _ in 0..1000 {
            keys.record("yesterday", 1, 0.0, 0, &decay);
        }
        for _ in 0..100 {
            keys.record("today", 2, 1.0, 20 * MINUTE, &decay);
        }
        keys.record("passer-by", 3, 0.0, 20 * MINUTE, &decay);
        let tracked = keys.tracked(20 * MINUTE, &decay);
        assert!(find(&tracked, "yesterday").is_none(), "{tracked:?}");
        let today = find(&tracked, "today").unwrap();
        assert!((today.rows - 100.0).abs() < 1e-9 && (today.requests - 100.0).abs() < 1e-9);
        // A minute later everything counts half.
        let later = keys.tracked(21 * MINUTE, &decay);
        assert!((find(&later, "today").unwrap().requests - 50.0).abs() < 1e-9);
    }

    #[test]
    fn the_landmark_moves_before_weights_overflow() {
        let decay = decay();
        let mut keys = TopKeys::new(4);
        keys.record("early", 1, 1.0, 0, &decay);
        // Three hundred half-lives later: a weight of 2^300 without a rescale.
        let late = 300 * MINUTE;
        for _ in 0..10 {
            keys.record("late", 2, 1.0, late, &decay);
        }
        assert_eq!(keys.landmark, late);
        let tracked = keys.tracked(late, &decay);
        assert!((find(&tracked, "late").unwrap().requests - 10.0).abs() < 1e-9);
        assert!(find(&tracked, "early").unwrap().requests < 1e-60);
        assert!(keys.slots.iter().all(|slot| slot.requests.is_finite()));
    }
}
