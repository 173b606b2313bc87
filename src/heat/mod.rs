//! Heat: which buckets and route keys are busy lately, and a next map that evens the load.
//!
//! A [`HeatRecorder`] counts every routed call, by bucket and by route key, as requests and as
//! the rows the call returned or changed. Counts decay exponentially with a configurable
//! half-life, applied lazily when a counter is touched, so no timer runs and old load fades.
//! Memory is bounded whatever the number of keys: one pair of atomic counters per bucket
//! (16 bytes each) and a fixed number of key slots ([`HeatRecorder::DEFAULT_KEY_SLOTS`]) kept by
//! the Space-Saving algorithm under a small lock. [`HeatRecorder::report`] reads them as a
//! [`HeatReport`], crediting shards as the active map routes, and [`suggest_next_map`] turns a
//! report into a proposed map: a bucket-range move or a pin for a hot key, whichever lowers the
//! hottest shard's load more.
//!
//! Route keys are business data: the report shows them to callers allowed to read, and nothing
//! here logs them or turns them into metric labels.

mod counter;
mod keys;
mod report;
mod suggest;

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use self::counter::{AtomicDecaying, Clock, Decay};
use self::keys::TopKeys;
use crate::map::ShardMap;

pub use report::{BucketHeat, HeatReport, KeyHeat, ShardHeat};
pub use suggest::{Suggestion, SuggestionKind, suggest_next_map};

/// The half-life counts decay with unless configured otherwise.
pub const DEFAULT_HALF_LIFE: Duration = Duration::from_secs(60);

/// A report lists at most this many buckets, the hottest.
pub const MAX_LISTED_BUCKETS: usize = 16_384;

/// Decaying request and row counters per bucket and for the hottest route keys of one keyspace.
pub struct HeatRecorder {
    clock: Clock,
    decay: Decay,
    buckets: Box<[BucketCounters]>,
    keys: Mutex<TopKeys>,
}

#[derive(Debug, Default)]
struct BucketCounters {
    requests: AtomicDecaying,
    rows: AtomicDecaying,
}

impl std::fmt::Debug for HeatRecorder {
    // Never the keys: they are business data.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeatRecorder")
            .field("half_life_seconds", &self.decay.half_life_seconds())
            .field("buckets", &self.buckets.len())
            .field("tracked_keys", &self.tracked_keys())
            .finish()
    }
}

impl HeatRecorder {
    /// Key slots unless configured otherwise.
    pub const DEFAULT_KEY_SLOTS: usize = 64;

    /// A recorder for a map of `bucket_count` buckets whose counts halve every `half_life`.
    pub fn new(bucket_count: u32, half_life: Duration) -> Self {
        Self::with_key_slots(bucket_count, half_life, Self::DEFAULT_KEY_SLOTS)
    }

    /// [`new`](Self::new) tracking at most `key_slots` route keys.
    pub fn with_key_slots(bucket_count: u32, half_life: Duration, key_slots: usize) -> Self {
        let buckets = usize::try_from(bucket_count).unwrap_or(0);
        Self {
            clock: Clock::new(),
            decay: Decay::new(half_life),
            buckets: (0..buckets).map(|_| BucketCounters::default()).collect(),
            keys: Mutex::new(TopKeys::new(key_slots)),
        }
    }

    /// How long a count takes to halve.
    pub fn half_life(&self) -> Duration {
        Duration::from_secs_f64(self.decay.half_life_seconds())
    }

    /// Counts one routed call of the (trimmed) route `key` in `bucket` that returned or changed
    /// `rows` rows. A bucket beyond the recorder's is ignored.
    pub fn record(&self, bucket: u32, key: &str, rows: u64) {
        self.record_at(bucket, key, rows, self.clock.now());
    }

    fn record_at(&self, bucket: u32, key: &str, rows: u64, now: u32) {
        let Some(counters) = usize::try_from(bucket).ok().and_then(|at| self.buckets.get(at)) else {
            return;
        };
        counters.requests.add(1.0, now, &self.decay);
        if rows > 0 {
            // Counts are estimates: a row count past 2^24 may round.
            #[allow(clippy::cast_precision_loss)]
            counters.rows.add(rows as f32, now, &self.decay);
        }
        #[allow(clippy::cast_precision_loss)]
        let rows = rows as f64;
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(key, bucket, rows, now, &self.decay);
    }

    /// How many route keys are tracked now (never more than the slot count).
    pub fn tracked_keys(&self) -> usize {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// The heat now, shards credited as `map` routes.
    pub fn report(&self, map: &ShardMap) -> HeatReport {
        self.report_at(map, self.clock.now())
    }

    fn report_at(&self, map: &ShardMap, now: u32) -> HeatReport {
        let shard_count = map.shards().len();
        let mut shard_requests = vec![0.0f64; shard_count];
        let mut shard_rows = vec![0.0f64; shard_count];
        // (bucket, shard index) -> (requests, rows): a bucket's calls are its owner's, except
        // those of a tracked key pinned elsewhere, which are its pin's.
        let mut bucket_heat: Vec<(u32, usize, f64, f64)> = Vec::new();
        let mut bucket_row: std::collections::HashMap<(u32, usize), usize> = std::collections::HashMap::new();
        for (bucket, counters) in (0..map.bucket_count()).zip(self.buckets.iter()) {
            let requests = counters.requests.value(now, &self.decay);
            let rows = counters.rows.value(now, &self.decay);
            if requests <= 0.0 && rows <= 0.0 {
                continue;
            }
            let owner = map.bucket_owner(bucket);
            shard_requests[owner] += requests;
            shard_rows[owner] += rows;
            bucket_row.insert((bucket, owner), bucket_heat.len());
            bucket_heat.push((bucket, owner, requests, rows));
        }
        let tracked = self
            .keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .tracked(now, &self.decay);
        let mut keys = Vec::with_capacity(tracked.len());
        for slot in &tracked {
            let (requests, rows) = (slot.requests, slot.rows);
            if requests <= 0.0 || slot.bucket >= map.bucket_count() {
                continue;
            }
            let owner = map.bucket_owner(slot.bucket);
            let pin = map.pinned_shard(&slot.key);
            // A pinned key's calls were counted in its bucket; credit them to its pin instead,
            // in the shard totals and in the bucket rows.
            if let Some(pinned) = pin.filter(|pinned| *pinned != owner) {
                shard_requests[owner] = (shard_requests[owner] - requests).max(0.0);
                shard_rows[owner] = (shard_rows[owner] - rows).max(0.0);
                shard_requests[pinned] += requests;
                shard_rows[pinned] += rows;
                if let Some(&at) = bucket_row.get(&(slot.bucket, owner)) {
                    let row = &mut bucket_heat[at];
                    row.2 = (row.2 - requests).max(0.0);
                    row.3 = (row.3 - rows).max(0.0);
                }
                let at = *bucket_row.entry((slot.bucket, pinned)).or_insert_with(|| {
                    bucket_heat.push((slot.bucket, pinned, 0.0, 0.0));
                    bucket_heat.len() - 1
                });
                bucket_heat[at].2 += requests;
                bucket_heat[at].3 += rows;
            }
            keys.push(KeyHeat {
                keyspace: map.keyspace().to_owned(),
                key: slot.key.to_string(),
                bucket: slot.bucket,
                shard_id: map.shards()[pin.unwrap_or(owner)].id.clone(),
                pinned: pin.is_some(),
                requests: rounded(requests),
                rows: rounded(rows),
            });
        }
        let mut buckets: Vec<BucketHeat> = bucket_heat
            .into_iter()
            .map(|(bucket, shard, requests, rows)| BucketHeat {
                bucket,
                shard_id: map.shards()[shard].id.clone(),
                requests: rounded(requests),
                rows: rounded(rows),
            })
            .filter(|row| row.requests > 0.0 || row.rows > 0.0)
            .collect();
        let total_requests: f64 = shard_requests.iter().sum();
        let total_rows: f64 = shard_rows.iter().sum();
        let mut shards: Vec<ShardHeat> = map
            .shards()
            .iter()
            .enumerate()
            .map(|(index, shard)| ShardHeat {
                shard_id: shard.id.clone(),
                requests: rounded(shard_requests[index]),
                rows: rounded(shard_rows[index]),
                share: if total_requests > 0.0 {
                    rounded(shard_requests[index] / total_requests)
                } else {
                    0.0
                },
            })
            .collect();
        shards.sort_by(|a, b| b.requests.total_cmp(&a.requests));
        buckets.sort_by(|a, b| {
            b.requests
                .total_cmp(&a.requests)
                .then(a.bucket.cmp(&b.bucket))
                .then_with(|| a.shard_id.cmp(&b.shard_id))
        });
        buckets.truncate(MAX_LISTED_BUCKETS);
        keys.sort_by(|a, b| b.requests.total_cmp(&a.requests).then_with(|| a.key.cmp(&b.key)));
        HeatReport {
            keyspace: map.keyspace().to_owned(),
            map_version: map.version(),
            virtual_bucket_count: map.bucket_count(),
            half_life_seconds: self.decay.half_life_seconds(),
            total_requests: rounded(total_requests),
            total_rows: rounded(total_rows),
            shards,
            buckets,
            keys,
        }
    }
}

/// Three decimals: the counts are estimates, and more digits only show `f32` noise.
fn rounded(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::{BucketRange, ShardDefinition, ShardingOptions};

    fn map(pins: &[(&str, &str)]) -> ShardMap {
        ShardMap::new(ShardingOptions {
            keyspace: "tenants".into(),
            map_version: 3,
            virtual_bucket_count: 16,
            shards: vec![
                ShardDefinition::local("s0", "s0.db"),
                ShardDefinition::local("s1", "s1.db"),
            ],
            bucket_ranges: vec![BucketRange::new(0, 8, "s0"), BucketRange::new(8, 16, "s1")],
            exact_key_pins: pins.iter().map(|(k, s)| ((*k).to_owned(), (*s).to_owned())).collect(),
            directories: Vec::new(),
            directory_entries: Vec::new(),
        })
        .unwrap()
    }

    #[test]
    fn the_report_ranks_hot_buckets_keys_and_shards_first() {
        let recorder = HeatRecorder::new(16, DEFAULT_HALF_LIFE);
        for i in 0..300u32 {
            recorder.record_at(3, "hot", 2, 0);
            recorder.record_at(9 + i % 2, &format!("warm-{i}"), 1, 0);
        }
        recorder.record_at(12, "cold", 0, 0);
        let report = recorder.report_at(&map(&[]), 0);
        assert_eq!(report.buckets[0].bucket, 3);
        assert_eq!(report.buckets[0].shard_id, "s0");
        assert_eq!(report.keys[0].key, "hot");
        assert!((report.keys[0].requests - 300.0).abs() < 1e-9);
        assert!((report.keys[0].rows - 600.0).abs() < 1e-9);
        assert_eq!(report.shards[0].shard_id, "s1");
        assert!((report.shards[0].share - 301.0 / 601.0).abs() < 1e-3);
        assert!((report.total_requests - 601.0).abs() < 1e-3);
        assert_eq!(report.map_version, 3);
    }

    #[test]
    fn a_pinned_key_heats_its_pin_not_its_bucket_owner() {
        let recorder = HeatRecorder::new(16, DEFAULT_HALF_LIFE);
        for _ in 0..100 {
            recorder.record_at(3, "hot", 0, 0);
        }
        let report = recorder.report_at(&map(&[("hot", "s1")]), 0);
        assert_eq!(report.shards[0].shard_id, "s1");
        assert!((report.shards[0].share - 1.0).abs() < 1e-9);
        assert!(report.keys[0].pinned);
        assert_eq!(report.keys[0].shard_id, "s1");
        // The bucket's row names the shard that served its calls: the pin, not the owner.
        assert_eq!(report.buckets.len(), 1, "{:?}", report.buckets);
        assert_eq!(report.buckets[0].bucket, 3);
        assert_eq!(report.buckets[0].shard_id, "s1");
        assert!((report.buckets[0].requests - 100.0).abs() < 1e-9);
    }

    #[test]
    fn a_bucket_with_a_pinned_key_shows_a_row_per_serving_shard() {
        let recorder = HeatRecorder::new(16, DEFAULT_HALF_LIFE);
        for _ in 0..150 {
            recorder.record_at(3, "pinned", 0, 0);
        }
        for _ in 0..10 {
            recorder.record_at(3, "other", 0, 0);
        }
        let report = recorder.report_at(&map(&[("pinned", "s1")]), 0);
        let row = |shard: &str| {
            report
                .buckets
                .iter()
                .find(|row| row.bucket == 3 && row.shard_id == shard)
                .map(|row| row.requests)
        };
        assert_eq!(row("s1"), Some(150.0), "{:?}", report.buckets);
        assert_eq!(row("s0"), Some(10.0), "{:?}", report.buckets);
        assert_eq!(report.buckets[0].shard_id, "s1");
    }

    #[test]
    fn memory_stays_bounded_whatever_the_number_of_keys() {
        let recorder = HeatRecorder::with_key_slots(16, DEFAULT_HALF_LIFE, 32);
        for i in 0..100_000u32 {
            recorder.record_at(i % 16, &format!("key-{i}"), 1, i / 64);
        }
        assert_eq!(recorder.tracked_keys(), 32);
        let report = recorder.report_at(&map(&[]), 100_000 / 64);
        assert!(report.keys.len() <= 32);
        assert_eq!(report.buckets.len(), 16);
    }

    #[test]
    fn heat_fades_with_the_half_life() {
        let recorder = HeatRecorder::new(16, Duration::from_secs(10));
        for _ in 0..64 {
            recorder.record_at(1, "k", 1, 0);
        }
        let later = recorder.report_at(&map(&[]), 10 * 64);
        assert!((later.total_requests - 32.0).abs() < 1e-3, "{}", later.total_requests);
        assert!((later.keys[0].requests - 32.0).abs() < 1e-3);
        assert!((later.half_life_seconds - 10.0).abs() < 1e-9);
        let much_later = recorder.report_at(&map(&[]), 200 * 64);
        assert!(much_later.total_requests < 0.001);
    }

    #[test]
    fn buckets_beyond_the_recorder_are_ignored() {
        let recorder = HeatRecorder::new(4, DEFAULT_HALF_LIFE);
        recorder.record_at(9, "k", 1, 0);
        assert_eq!(recorder.tracked_keys(), 0);
        assert!(!format!("{recorder:?}").contains("\"k\""));
    }
}
