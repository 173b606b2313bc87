//! Property tests of route resolution over random valid shard maps.
//!
//! Each case builds a map from an independent model (shards, a random contiguous partition of
//! the buckets listed in random order, random pins on enabled primaries) and checks every
//! resolution against that model and against [`ShardMap::canonical_ranges`].

use std::collections::{BTreeMap, BTreeSet};

use crate::support::swap_ascii_case;
use proptest::prelude::*;
use proptest::sample::Index;
use shardlite::Error;
use shardlite::map::{BucketRange, ShardDefinition, ShardMap, ShardRole, ShardingOptions};
use shardlite::routing::{RouteSource, bucket_for_token, route_token};

/// The id of the optional disabled primary.
const DISABLED: &str = "off";

/// What the map should do, written down independently of `ShardMap`.
#[derive(Debug, Clone)]
struct Model {
    keyspace: String,
    bucket_count: u32,
    /// Shard ids; the first `primaries` are enabled, a trailing [`DISABLED`] one may follow.
    shard_ids: Vec<String>,
    /// Contiguous ranges `(start, end, shard index)`, in bucket order.
    ranges: Vec<(u32, u32, usize)>,
    /// Ranges are listed to the map rotated by this much (out of order).
    rotation: usize,
    /// Whether to omit `bucketRanges` (only when the map has one shard).
    omit_ranges: bool,
    /// Pinned key to enabled shard index.
    pins: BTreeMap<String, usize>,
}

impl Model {
    fn options(&self) -> ShardingOptions {
        let shards = self
            .shard_ids
            .iter()
            .map(|id| {
                let mut shard = ShardDefinition::local(id.clone(), format!("{id}.db"));
                shard.enabled = id != DISABLED;
                shard
            })
            .collect();
        let mut bucket_ranges: Vec<BucketRange> = self
            .ranges
            .iter()
            .map(|&(start, end, owner)| {
                BucketRange::new(i64::from(start), i64::from(end), self.shard_ids[owner].clone())
            })
            .collect();
        if !bucket_ranges.is_empty() {
            let by = self.rotation % bucket_ranges.len();
            bucket_ranges.rotate_left(by);
        }
        if self.omit_ranges {
            bucket_ranges.clear();
        }
        ShardingOptions {
            keyspace: self.keyspace.clone(),
            map_version: 42,
            virtual_bucket_count: i64::from(self.bucket_count),
            shards,
            bucket_ranges,
            exact_key_pins: self
                .pins
                .iter()
                .map(|(key, owner)| (key.clone(), self.shard_ids[*owner].clone()))
                .collect(),
            directories: Vec::new(),
            directory_entries: Vec::new(),
        }
    }

    /// The shard id owning `bucket` according to the model's partition.
    fn bucket_owner(&self, bucket: u32) -> &str {
        let &(_, _, owner) = self
            .ranges
            .iter()
            .find(|(start, end, _)| (*start..*end).contains(&bucket))
            .unwrap_or_else(|| panic!("bucket {bucket} outside the model's partition {:?}", self.ranges));
        &self.shard_ids[owner]
    }
}

fn model() -> impl Strategy<Value = Model> {
    (1usize..6, any::<bool>(), 1u32..=512)
        .prop_flat_map(|(primaries, with_disabled, bucket_count)| {
            let shard_count = primaries + usize::from(with_disabled);
            (
                Just(primaries),
                Just(with_disabled),
                Just(bucket_count),
                "[a-zA-Z_][a-zA-Z0-9_]{0,11}",
                // Cut points; 0 and duplicates are dropped, so any count of ranges 1..=17 occurs.
                proptest::collection::vec(0..bucket_count, 0..16),
                proptest::collection::vec(0..shard_count, 17),
                any::<usize>(),
                any::<bool>(),
                proptest::collection::btree_map("[a-z0-9-]{1,8}", 0..primaries, 0..6),
            )
        })
        .prop_map(
            |(primaries, with_disabled, bucket_count, keyspace, cuts, owners, rotation, omit, pins)| {
                let mut shard_ids: Vec<String> = (0..primaries).map(|i| format!("p{i}")).collect();
                if with_disabled {
                    shard_ids.push(DISABLED.to_owned());
                }
                let mut bounds: BTreeSet<u32> = cuts.into_iter().filter(|c| *c > 0).collect();
                bounds.insert(0);
                bounds.insert(bucket_count);
                let bounds: Vec<u32> = bounds.into_iter().collect();
                let ranges: Vec<(u32, u32, usize)> = bounds
                    .windows(2)
                    .zip(owners)
                    .map(|(pair, owner)| (pair[0], pair[1], owner))
                    .collect();
                let omit_ranges = omit && shard_ids.len() == 1;
                let ranges = if omit_ranges {
                    vec![(0, bucket_count, 0)]
                } else {
                    ranges
                };
                Model {
                    keyspace,
                    bucket_count,
                    shard_ids,
                    ranges,
                    rotation,
                    omit_ranges,
                    pins,
                }
            },
        )
}

/// Route keys: pinned keys (padded with white space, so trimming matters), arbitrary text, and blanks.
fn route_keys(model: &Model, picks: &[Index], random: &[String]) -> Vec<String> {
    let pinned: Vec<&String> = model.pins.keys().collect();
    let mut keys: Vec<String> = random.to_vec();
    if !pinned.is_empty() {
        keys.extend(picks.iter().map(|i| format!(" {}\t", i.get(&pinned))));
    }
    keys
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn canonical_ranges_are_the_coalesced_partition(model in model()) {
        let map = ShardMap::new(model.options()).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let ranges = map.canonical_ranges();
        prop_assert!(!ranges.is_empty());
        prop_assert_eq!(ranges[0].start_bucket_inclusive, 0);
        prop_assert_eq!(ranges[ranges.len() - 1].end_bucket_exclusive, i64::from(model.bucket_count));
        for pair in ranges.windows(2) {
            prop_assert_eq!(pair[0].end_bucket_exclusive, pair[1].start_bucket_inclusive);
            prop_assert_ne!(&pair[0].shard_id, &pair[1].shard_id, "adjacent runs must be coalesced");
        }
        for range in &ranges {
            prop_assert!(range.start_bucket_inclusive < range.end_bucket_exclusive);
            for bucket in range.start_bucket_inclusive..range.end_bucket_exclusive {
                let bucket = u32::try_from(bucket).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(range.shard_id.as_str(), model.bucket_owner(bucket));
            }
        }
    }

    #[test]
    fn resolution_is_deterministic_and_follows_pins_then_ranges(
        model in model(),
        picks in proptest::collection::vec(any::<Index>(), 0..4),
        random in proptest::collection::vec("\\PC{0,12}", 1..8),
    ) {
        let map = ShardMap::new(model.options()).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let canonical = map.canonical_ranges();
        let route_keyspace = format!(" {} ", swap_ascii_case(&model.keyspace));
        for key in route_keys(&model, &picks, &random) {
            let first = map.resolve(&route_keyspace, &key);
            let second = map.resolve(&route_keyspace, &key);
            let trimmed = key.trim();
            if trimmed.is_empty() {
                prop_assert!(
                    matches!(first, Err(Error::BlankRoutePart { field: "key" })),
                    "blank key {:?}: {:?}", key, first
                );
                continue;
            }
            let token = route_token(&model.keyspace, trimmed).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let bucket = bucket_for_token(token.0, model.bucket_count);
            let pinned = model.pins.get(trimmed).map(|i| model.shard_ids[*i].as_str());
            let expected_shard = pinned.unwrap_or_else(|| model.bucket_owner(bucket));
            match (first, second) {
                (Ok(r), Ok(again)) => {
                    prop_assert_eq!(r, again, "resolution of {:?} is not deterministic", key);
                    prop_assert_eq!(r.token, token);
                    prop_assert_eq!(r.bucket, bucket, "bucket is token % count even when pinned");
                    prop_assert_eq!(r.keyspace, model.keyspace.as_str());
                    prop_assert_eq!(r.key, trimmed);
                    prop_assert_eq!(r.map_version, 42);
                    prop_assert_eq!(r.shard_id, expected_shard);
                    prop_assert_eq!(map.shards()[r.shard_index].id.as_str(), r.shard_id);
                    let shard = map.shard(r.shard_id).ok_or_else(|| TestCaseError::fail("shard vanished"))?;
                    prop_assert!(shard.enabled, "{:?} resolved to disabled {}", key, r.shard_id);
                    prop_assert_eq!(shard.role, ShardRole::Primary);
                    if let Some(pin) = pinned {
                        prop_assert_eq!(r.source, RouteSource::Pin);
                        prop_assert_eq!(r.shard_id, pin);
                        prop_assert!(map.is_pinned(trimmed));
                    } else {
                        prop_assert_eq!(r.source, RouteSource::BucketRange);
                        prop_assert!(!map.is_pinned(trimmed));
                        let owner = canonical.iter().find(|range| {
                            (range.start_bucket_inclusive..range.end_bucket_exclusive).contains(&i64::from(bucket))
                        });
                        prop_assert_eq!(owner.map(|range| range.shard_id.as_str()), Some(r.shard_id));
                    }
                }
                (Err(Error::ShardDisabled(first)), Err(Error::ShardDisabled(second))) => {
                    prop_assert!(pinned.is_none(), "pins name enabled primaries only");
                    prop_assert_eq!(expected_shard, DISABLED);
                    prop_assert_eq!(first.shard_id.as_str(), DISABLED);
                    prop_assert_eq!(first.key.as_str(), trimmed);
                    prop_assert_eq!(second, first);
                }
                (first, second) => {
                    return Err(TestCaseError::fail(format!("{key:?}: unexpected {first:?} / {second:?}")));
                }
            }
        }
    }

    #[test]
    fn a_keyspace_other_than_the_maps_is_refused(model in model(), suffix in "[a-z]{1,4}") {
        let map = ShardMap::new(model.options()).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let other = format!("{}{suffix}", model.keyspace);
        let result = map.resolve(&other, "key");
        prop_assert!(
            matches!(&result, Err(Error::UnknownKeyspace(unknown))
                if unknown.keyspace == other && unknown.expected == model.keyspace),
            "{:?}", result
        );
    }
}
