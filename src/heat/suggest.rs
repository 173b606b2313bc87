//! A next map from a heat report: one move that lowers the hottest shard's load the most.
//!
//! Two kinds of move are weighed, each from the hottest shard to the coolest enabled primary:
//! a contiguous bucket range whose heat is as close as possible to half the gap between the
//! two (so that neither ends up hotter than the hottest was), and a pin of the hottest key
//! on the hottest shard, which is the only way to move a key that dominates its bucket. The
//! move that leaves the lower maximum wins; a tie goes to the bucket range, which adds no pin.

use std::collections::BTreeMap;

use super::report::HeatReport;
use crate::error::{Error, Result};
use crate::map::{BucketRange, ShardDefinition, ShardMapSnapshot, ShardRole, ShardingOptions, Transport};

/// A proposed next map and what it changes.
#[derive(Debug, Clone)]
pub struct Suggestion {
    /// The proposed map: the active map with one move, at the next map version. Give it to
    /// `catalog validate` and `catalog apply`, after migrating the data it moves.
    pub map: ShardingOptions,
    /// The move.
    pub kind: SuggestionKind,
    /// The hottest shard's share of requests now.
    pub hottest_share_before: f64,
    /// The largest share any shard would have after the move, for the same load.
    pub hottest_share_after: f64,
}

/// The move a [`Suggestion`] makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuggestionKind {
    /// The buckets `[start, end)` change owner.
    MoveBuckets {
        /// First bucket.
        start: u32,
        /// One past the last bucket.
        end: u32,
        /// The hottest shard, which owns them now.
        from: String,
        /// The coolest shard.
        to: String,
    },
    /// A hot route key is pinned to another shard.
    PinKey {
        /// The route key.
        key: String,
        /// The shard it resolves to now.
        from: String,
        /// The coolest shard.
        to: String,
    },
}

impl std::fmt::Display for SuggestionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::MoveBuckets { start, end, from, to } => {
                write!(f, "move buckets [{start}, {end}) from {from} to {to}")
            }
            Self::PinKey { key, from, to } => write!(f, "pin route key '{key}' to {to} (from {from})"),
        }
    }
}

/// Proposes the next map for `active` from `report`, the heat of that same map version.
///
/// `base` is the active map as stored, secrets included; without it the proposal is built from
/// the snapshot, which fails when a shard has a connection string or an API key (a snapshot
/// never shows them). Fails, naming the reason, when there is no heat yet, no other enabled
/// primary shard to take load, or no single move that lowers the hottest shard's load.
pub fn suggest_next_map(
    report: &HeatReport,
    active: &ShardMapSnapshot,
    base: Option<&ShardingOptions>,
) -> Result<Suggestion> {
    if report.map_version != active.map_version || !report.keyspace.eq_ignore_ascii_case(&active.keyspace) {
        return Err(Error::invalid_argument(
            "heat",
            format!(
                "the heat is for map version {} of '{}' but the active map is version {} of '{}'; ask again",
                report.map_version, report.keyspace, active.map_version, active.keyspace
            ),
        ));
    }
    let mut options = match base {
        Some(base) => checked_base(base, active)?,
        None => options_from_snapshot(active)?,
    };
    let load = |shard_id: &str| report.shard(shard_id).map_or(0.0, |shard| shard.requests);
    let total: f64 = active.shards.iter().map(|shard| load(&shard.shard_id)).sum();
    if total <= 0.0 {
        return Err(Error::invalid_argument(
            "heat",
            "no routed calls were counted lately: run the workload through the daemon first",
        ));
    }
    let primaries: Vec<&str> = active
        .shards
        .iter()
        .filter(|shard| shard.enabled && shard.role == ShardRole::Primary)
        .map(|shard| shard.shard_id.as_str())
        .collect();
    let hottest = active
        .shards
        .iter()
        .map(|shard| shard.shard_id.as_str())
        .max_by(|a, b| load(a).total_cmp(&load(b)))
        .unwrap_or_default();
    let Some(coolest) = primaries
        .iter()
        .copied()
        .filter(|id| !id.eq_ignore_ascii_case(hottest))
        .min_by(|a, b| load(a).total_cmp(&load(b)))
    else {
        return Err(Error::invalid_argument(
            "map",
            "the map has no other enabled primary shard to take load",
        ));
    };
    let (hot, cool) = (load(hottest), load(coolest));
    let others = active
        .shards
        .iter()
        .filter(|shard| !shard.shard_id.eq_ignore_ascii_case(hottest) && !shard.shard_id.eq_ignore_ascii_case(coolest))
        .map(|shard| load(&shard.shard_id))
        .fold(0.0f64, f64::max);
    let max_after = |moved: f64| (hot - moved).max(cool + moved).max(others);
    let target = (hot - cool) / 2.0;

    let mut owners = owners_of(active)?;
    let range = best_range(report, &owners, hottest, target);
    let key = report
        .keys
        .iter()
        .find(|key| key.shard_id.eq_ignore_ascii_case(hottest) && key.requests > 0.0);
    let range_after = range.map(|(_, _, moved)| max_after(moved));
    let key_after = key.map(|key| max_after(key.requests));
    let pin_wins = match (range_after, key_after) {
        (Some(by_range), Some(by_key)) => by_key < by_range,
        (None, Some(_)) => true,
        _ => false,
    };
    let after = if pin_wins { key_after } else { range_after }.unwrap_or(hot);
    if after >= hot - total * 1e-9 {
        return Err(Error::invalid_argument(
            "heat",
            format!(
                "no single bucket-range move or pin lowers the load of {hottest} (share {:.3}): the load is as even as \
                 one move makes it",
                hot / total
            ),
        ));
    }
    let (from, to) = (hottest.to_owned(), coolest.to_owned());
    let kind = match (pin_wins, key, range) {
        (true, Some(key), _) => {
            options.exact_key_pins.insert(key.key.clone(), to.clone());
            SuggestionKind::PinKey {
                key: key.key.clone(),
                from,
                to,
            }
        }
        (_, _, Some((start, end, _))) => {
            for owner in &mut owners[usize::try_from(start).unwrap_or(0)..usize::try_from(end).unwrap_or(0)] {
                owner.clone_from(&to);
            }
            options.bucket_ranges = coalesce(&owners);
            SuggestionKind::MoveBuckets { start, end, from, to }
        }
        _ => unreachable!("a move was found above"),
    };
    options.map_version = i64::try_from(active.map_version + 1).unwrap_or(i64::MAX);
    Ok(Suggestion {
        map: options,
        kind,
        hottest_share_before: hot / total,
        hottest_share_after: after / total,
    })
}

/// The contiguous range of `hottest`'s buckets whose movable heat is closest to `target`:
/// `(start, end, heat)`. Pinned keys stay where they are pinned, so their calls are not part
/// of a bucket's movable heat.
fn best_range(report: &HeatReport, owners: &[String], hottest: &str, target: f64) -> Option<(u32, u32, f64)> {
    let mut movable = vec![0.0f64; owners.len()];
    // A bucket's row on its owner holds its calls but those of keys pinned elsewhere; keys
    // pinned to the owner itself are in it too, and stay.
    let owner_of = |bucket: u32| usize::try_from(bucket).ok().filter(|at| *at < owners.len());
    for bucket in &report.buckets {
        if let Some(at) = owner_of(bucket.bucket).filter(|at| owners[*at].eq_ignore_ascii_case(&bucket.shard_id)) {
            movable[at] += bucket.requests;
        }
    }
    for key in report.keys.iter().filter(|key| key.pinned) {
        if let Some(at) = owner_of(key.bucket).filter(|at| owners[*at].eq_ignore_ascii_case(&key.shard_id)) {
            movable[at] = (movable[at] - key.requests).max(0.0);
        }
    }
    let owned = |at: usize| owners[at].eq_ignore_ascii_case(hottest);
    // (start, end, heat), best first by distance to the target, then by fewer buckets.
    let mut best: Option<(usize, usize, f64)> = None;
    let mut consider = |start: usize, end: usize, heat: f64| {
        if heat <= 0.0 {
            return;
        }
        let better = best.is_none_or(|(s, e, h)| {
            let (distance, best_distance) = ((heat - target).abs(), (h - target).abs());
            distance < best_distance || (distance == best_distance && end - start < e - s)
        });
        if better {
            best = Some((start, end, heat));
        }
    };
    let mut run_start = 0;
    while run_start < owners.len() {
        if !owned(run_start) {
            run_start += 1;
            continue;
        }
        let mut run_end = run_start;
        while run_end < owners.len() && owned(run_end) {
            run_end += 1;
        }
        // Two pointers over the run: for each start, the shortest window reaching the target,
        // and the one just short of it.
        let (mut end, mut sum) = (run_start, 0.0);
        for start in run_start..run_end {
            if end < start {
                end = start;
                sum = 0.0;
            }
            while end < run_end && sum < target {
                sum += movable[end];
                end += 1;
            }
            consider(start, end, sum);
            if end > start + 1 {
                consider(start, end - 1, sum - movable[end - 1]);
            }
            sum -= movable[start];
        }
        run_start = run_end;
    }
    let (start, end, heat) = best?;
    Some((u32::try_from(start).ok()?, u32::try_from(end).ok()?, heat))
}

/// Each bucket's owner, from the snapshot's ranges.
fn owners_of(active: &ShardMapSnapshot) -> Result<Vec<String>> {
    let count = usize::try_from(active.virtual_bucket_count).unwrap_or(0);
    let mut owners = vec![String::new(); count];
    for range in &active.bucket_ranges {
        let start = usize::try_from(range.start_bucket_inclusive).unwrap_or(0);
        let end = usize::try_from(range.end_bucket_exclusive).unwrap_or(0).min(count);
        for owner in owners.iter_mut().take(end).skip(start) {
            owner.clone_from(&range.shard_id);
        }
    }
    if owners.iter().any(String::is_empty) {
        return Err(Error::invalid_argument(
            "map",
            "the active map's bucket ranges do not cover every bucket",
        ));
    }
    Ok(owners)
}

/// Bucket owners as ranges, adjacent buckets of one owner coalesced.
fn coalesce(owners: &[String]) -> Vec<BucketRange> {
    let mut ranges: Vec<BucketRange> = Vec::new();
    for (bucket, owner) in owners.iter().enumerate() {
        let bucket = i64::try_from(bucket).unwrap_or(i64::MAX);
        match ranges.last_mut() {
            Some(last) if last.shard_id == *owner => last.end_bucket_exclusive = bucket + 1,
            _ => ranges.push(BucketRange::new(bucket, bucket + 1, owner.clone())),
        }
    }
    ranges
}

/// The stored map given with `--map`, checked to be the active one.
fn checked_base(base: &ShardingOptions, active: &ShardMapSnapshot) -> Result<ShardingOptions> {
    let version = u64::try_from(base.map_version).unwrap_or(0);
    if version != active.map_version || !base.keyspace.trim().eq_ignore_ascii_case(&active.keyspace) {
        return Err(Error::invalid_argument(
            "map",
            format!(
                "the map file is version {} of '{}' but the active map is version {} of '{}'",
                base.map_version, base.keyspace, active.map_version, active.keyspace
            ),
        ));
    }
    Ok(base.clone())
}

/// The active map as a map file, from its snapshot; refused when a secret would be lost.
fn options_from_snapshot(active: &ShardMapSnapshot) -> Result<ShardingOptions> {
    let hidden: Vec<&str> = active
        .shards
        .iter()
        .filter(|shard| shard.has_connection_string || shard.has_api_key)
        .map(|shard| shard.shard_id.as_str())
        .collect();
    if !hidden.is_empty() {
        return Err(Error::invalid_argument(
            "map",
            format!(
                "shard(s) {} have a connection string or an API key, which a map snapshot never shows; pass the \
                 active map's file (--map) so that the proposal keeps them",
                hidden.join(", ")
            ),
        ));
    }
    let shards = active
        .shards
        .iter()
        .map(|shard| ShardDefinition {
            shard_id: shard.shard_id.clone(),
            enabled: shard.enabled,
            role: (shard.role == ShardRole::Replica).then(|| shard.role.as_str().to_owned()),
            replica: shard.replica.clone(),
            data_source: shard.data_source.clone(),
            endpoint: shard.endpoint.clone(),
            transport: shard
                .endpoint
                .as_ref()
                .filter(|_| shard.transport != Transport::Direct)
                .map(|_| shard.transport.as_str().to_owned()),
            remote_shard_id: shard.remote_shard_id.clone(),
            connection_string: None,
            api_key: None,
            api_key_header_name: shard.api_key_header_name.clone(),
        })
        .collect();
    Ok(ShardingOptions {
        keyspace: active.keyspace.clone(),
        map_version: i64::try_from(active.map_version).unwrap_or(i64::MAX),
        virtual_bucket_count: i64::from(active.virtual_bucket_count),
        shards,
        bucket_ranges: active.bucket_ranges.clone(),
        exact_key_pins: active.exact_key_pins.clone().into_iter().collect::<BTreeMap<_, _>>(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heat::{DEFAULT_HALF_LIFE, HeatRecorder};
    use crate::map::ShardMap;

    fn map(shards: usize) -> ShardMap {
        let ids: Vec<String> = (0..shards).map(|i| format!("s{i}")).collect();
        let width = 64 / i64::try_from(shards).unwrap();
        ShardMap::new(ShardingOptions {
            keyspace: "tenants".into(),
            map_version: 1,
            virtual_bucket_count: 64,
            shards: ids
                .iter()
                .map(|id| ShardDefinition::local(id, format!("{id}.db")))
                .collect(),
            bucket_ranges: ids
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let i = i64::try_from(i).unwrap();
                    BucketRange::new(i * width, (i + 1) * width, id)
                })
                .collect(),
            exact_key_pins: BTreeMap::new(),
            directories: Vec::new(),
            directory_entries: Vec::new(),
        })
        .unwrap()
    }

    fn suggest(map: &ShardMap, recorder: &HeatRecorder) -> Result<Suggestion> {
        suggest_next_map(&recorder.report(map), &map.snapshot(), None)
    }

    /// The share the hottest shard would have, replaying the calls against `next`.
    fn replayed_max_share(next: &ShardingOptions, calls: &[(u32, String)]) -> f64 {
        let next = ShardMap::new(next.clone()).unwrap();
        let replay = HeatRecorder::new(64, DEFAULT_HALF_LIFE);
        for (bucket, key) in calls {
            replay.record(*bucket, key, 0);
        }
        replay.report(&next).hottest_shard().unwrap().share
    }

    #[test]
    fn a_hot_bucket_range_moves_to_the_coolest_shard() {
        let map = map(2);
        let recorder = HeatRecorder::new(64, DEFAULT_HALF_LIFE);
        let mut calls = Vec::new();
        for i in 0..2000u32 {
            // Buckets 0..8 of s0 are hot, the rest of the map is warm.
            let bucket = if i % 4 == 3 { i % 64 } else { i % 8 };
            calls.push((bucket, format!("k{i}")));
        }
        for (bucket, key) in &calls {
            recorder.record(*bucket, key, 0);
        }
        let suggestion = suggest(&map, &recorder).unwrap();
        let SuggestionKind::MoveBuckets {
            start,
            end,
            ref from,
            ref to,
        } = suggestion.kind
        else {
            panic!("{:?}", suggestion.kind);
        };
        assert_eq!((from.as_str(), to.as_str()), ("s0", "s1"));
        assert!(start < end && end <= 8, "[{start}, {end})");
        assert_eq!(suggestion.map.map_version, 2);
        assert!(suggestion.hottest_share_after < suggestion.hottest_share_before);
        let share = replayed_max_share(&suggestion.map, &calls);
        assert!((share - suggestion.hottest_share_after).abs() < 1e-3, "{share}");
        assert!(share < 0.6, "{share}");
    }

    #[test]
    fn a_dominant_key_is_pinned() {
        let map = map(2);
        let recorder = HeatRecorder::new(64, DEFAULT_HALF_LIFE);
        let mut calls = Vec::new();
        // Two hot keys share bucket 5 of s0: no bucket range can split them, a pin can.
        for i in 0..1000u32 {
            calls.push((5, "whale".to_owned()));
            if i < 900 {
                calls.push((5, "orca".to_owned()));
            }
            calls.push((i % 64, format!("k{i}")));
        }
        for (bucket, key) in &calls {
            recorder.record(*bucket, key, 0);
        }
        let suggestion = suggest(&map, &recorder).unwrap();
        assert_eq!(
            suggestion.kind,
            SuggestionKind::PinKey {
                key: "whale".into(),
                from: "s0".into(),
                to: "s1".into()
            }
        );
        assert_eq!(
            suggestion.map.exact_key_pins.get("whale").map(String::as_str),
            Some("s1")
        );
        assert_eq!(suggestion.map.bucket_ranges, map.canonical_ranges());
        ShardMap::new(suggestion.map.clone()).expect("the proposal is a valid map");
        assert!(replayed_max_share(&suggestion.map, &calls) < suggestion.hottest_share_before);
    }

    #[test]
    fn refusals_name_their_reason() {
        let recorder = HeatRecorder::new(64, DEFAULT_HALF_LIFE);
        let err = suggest(&map(2), &recorder).unwrap_err().to_string();
        assert!(err.contains("no routed calls"), "{err}");
        recorder.record(3, "k", 0);
        let err = suggest(&map(1), &recorder).unwrap_err().to_string();
        assert!(err.contains("no other enabled primary"), "{err}");
        // One key on one bucket: moving it only moves the problem.
        let err = suggest(&map(2), &recorder).unwrap_err().to_string();
        assert!(err.contains("as even as"), "{err}");
        let mut older = map(2).snapshot();
        older.map_version = 7;
        let err = suggest_next_map(&recorder.report(&map(2)), &older, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("ask again"), "{err}");
    }

    #[test]
    fn secrets_need_the_map_file() {
        let mut options = map(2).options().clone();
        options.shards[1].api_key = Some(crate::map::Secret::new("hunter2"));
        let map = ShardMap::new(options.clone()).unwrap();
        let recorder = HeatRecorder::new(64, DEFAULT_HALF_LIFE);
        for i in 0..100u32 {
            recorder.record(i % 8, &format!("k{i}"), 0);
        }
        let err = suggest(&map, &recorder).unwrap_err().to_string();
        assert!(
            err.contains("s1") && err.contains("--map") && !err.contains("hunter2"),
            "{err}"
        );
        let suggestion = suggest_next_map(&recorder.report(&map), &map.snapshot(), Some(&options)).unwrap();
        assert_eq!(suggestion.map.shards[1].api_key, options.shards[1].api_key);
    }
}
