//! Catalog updates: validating a proposed map against the active one, applying it as the
//! pending map with compare-and-set, and activating the pending map.
//!
//! Versions: the *newest* version is the pending map's when there is one, else the active
//! map's. An update must name the newest version it saw (`expectedCurrentMapVersion`) and
//! propose a higher one, and both are checked inside the same SQLite transaction that writes
//! the pending map, so of two operators who saw the same catalog exactly one wins.

use std::collections::BTreeSet;

use super::Catalog;
use super::maps::Maps;
use super::store::HistoryRow;
use crate::data::{
    ActivationRequest, CatalogApplyResult, CatalogIssue, CatalogUpdateRequest, CatalogValidation, IssueSeverity,
    MapProposal, MovedBuckets, MovedPin, ShardChange, ShardChangeKind,
};
use crate::error::{Error, Result};
use crate::map::records::{MapRecords, RecordChange, RecordKind};
use crate::map::{ShardMap, ShardingOptions};
use crate::routing::keyspace_eq;

/// What changes between two maps of the same keyspace and bucket count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MapDiff {
    /// Bucket ranges whose owner changes.
    pub moved_buckets: Vec<MovedBuckets>,
    /// Pinned keys (in either map) whose owner changes.
    pub moved_pins: Vec<MovedPin>,
    /// Shards added, removed, disabled or enabled.
    pub shard_changes: Vec<ShardChange>,
}

impl MapDiff {
    /// Whether any bucket or pin changes owner.
    pub fn moves_data(&self) -> bool {
        !self.moved_buckets.is_empty() || !self.moved_pins.is_empty()
    }

    /// Every shard that gains or loses buckets or pins, or is removed or disabled: the shards
    /// whose open transactions an activation drains.
    pub fn affected_shards(&self) -> BTreeSet<String> {
        let mut shards = BTreeSet::new();
        for MovedBuckets(_, _, from, to) in &self.moved_buckets {
            shards.insert(from.to_ascii_lowercase());
            shards.insert(to.to_ascii_lowercase());
        }
        for MovedPin(_, from, to) in &self.moved_pins {
            shards.insert(from.to_ascii_lowercase());
            shards.insert(to.to_ascii_lowercase());
        }
        for change in &self.shard_changes {
            if matches!(change.change, ShardChangeKind::Removed | ShardChangeKind::Disabled) {
                shards.insert(change.shard_id.to_ascii_lowercase());
            }
        }
        shards
    }
}

/// What changes between two maps given the records written between them, when the records
/// are pins alone (besides the header and directory entries, which move no data) and the
/// keyspace, bucket count and shards stay: the changed pins are all that can move. `None`
/// otherwise ([`diff`] compares the whole maps).
pub(crate) fn diff_of_changes(current: &ShardMap, proposed: &ShardMap, records: &[RecordChange]) -> Option<MapDiff> {
    let same_routing = keyspace_eq(current.keyspace(), proposed.keyspace())
        && current.bucket_count() == proposed.bucket_count()
        && current.same_shards(proposed);
    let pins_only = records.iter().all(|record| {
        matches!(
            record.kind,
            RecordKind::Header | RecordKind::Pin | RecordKind::Directory
        )
    });
    if !same_routing || !pins_only {
        return None;
    }
    let id = |map: &ShardMap, key: &str| map.shards()[map.owner_of_key(key)].id.clone();
    let mut diff = MapDiff::default();
    // In key order, as `diff` lists them.
    let pins: BTreeSet<&str> = records
        .iter()
        .filter(|record| record.kind == RecordKind::Pin)
        .map(|record| record.key.as_str())
        .collect();
    for key in pins {
        let key = key.trim();
        let (from, to) = (id(current, key), id(proposed, key));
        if !from.eq_ignore_ascii_case(&to) {
            diff.moved_pins.push(MovedPin(key.to_owned(), from, to));
        }
    }
    Some(diff)
}

/// Compares two maps of the same keyspace and bucket count (callers check both first).
pub fn diff(current: &ShardMap, proposed: &ShardMap) -> MapDiff {
    let mut diff = MapDiff::default();
    let id = |map: &ShardMap, index: usize| map.shards().get(index).map_or_else(String::new, |s| s.id.clone());
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let buckets = if current.shares_bucket_owners(proposed) {
        0
    } else {
        current.bucket_count().min(proposed.bucket_count())
    };
    for bucket in 0..buckets {
        let from = id(current, current.bucket_owner(bucket));
        let to = id(proposed, proposed.bucket_owner(bucket));
        if same(&from, &to) {
            continue;
        }
        match diff.moved_buckets.last_mut() {
            Some(MovedBuckets(_, end, last_from, last_to))
                if *end == bucket && same(last_from, &from) && same(last_to, &to) =>
            {
                *end = bucket + 1;
            }
            _ => diff.moved_buckets.push(MovedBuckets(bucket, bucket + 1, from, to)),
        }
    }
    let keys: BTreeSet<&str> = match proposed.changed_pins_since(current) {
        Some(changed) => changed,
        None => current
            .options()
            .exact_key_pins
            .keys()
            .chain(proposed.options().exact_key_pins.keys())
            .map(String::as_str)
            .collect(),
    };
    for key in keys {
        let key = key.trim();
        let from = id(current, current.owner_of_key(key));
        let to = id(proposed, proposed.owner_of_key(key));
        if !same(&from, &to) {
            diff.moved_pins.push(MovedPin(key.to_owned(), from, to));
        }
    }
    if current.shares_shards(proposed) {
        return diff;
    }
    for shard in current.shards() {
        match proposed.shard(&shard.id) {
            None => diff.shard_changes.push(ShardChange {
                shard_id: shard.id.clone(),
                change: ShardChangeKind::Removed,
            }),
            Some(next) if shard.enabled && !next.enabled => diff.shard_changes.push(ShardChange {
                shard_id: shard.id.clone(),
                change: ShardChangeKind::Disabled,
            }),
            Some(next) if !shard.enabled && next.enabled => diff.shard_changes.push(ShardChange {
                shard_id: shard.id.clone(),
                change: ShardChangeKind::Enabled,
            }),
            Some(_) => {}
        }
    }
    for shard in proposed.shards() {
        if current.shard(&shard.id).is_none() {
            diff.shard_changes.push(ShardChange {
                shard_id: shard.id.clone(),
                change: ShardChangeKind::Added,
            });
        }
    }
    diff
}

fn issue(severity: IssueSeverity, code: &str, message: String) -> CatalogIssue {
    CatalogIssue {
        severity,
        code: code.to_owned(),
        message,
    }
}

/// Validates `request` against the active map and the newest version the catalog holds: the
/// whole proposed map is built and checked, and compared with the active one.
pub fn validate(active: &ShardMap, newest_version: u64, request: &CatalogUpdateRequest) -> CatalogValidation {
    let proposed = request.map.resolve(active.options()).and_then(|options| {
        let map = ShardMap::new(options)?;
        crate::directory::check_routes(&map)?;
        Ok(map)
    });
    let expected = request.expected_current_map_version;
    judge(
        active,
        newest_version,
        (expected, request.allow_ownership_change),
        proposed,
        |proposed| diff(active, proposed),
    )
}

/// Validates a change of pins alone (a patch of `mapVersion` and `exactKeyPins`, made against
/// the active map) by what it touches: the changed pins are checked against the active map as
/// [`ShardMap::new`] would check them, only the directory entries routed by a changed key are
/// checked, and only the changed pins are compared. It reports the same issues as [`validate`]
/// for those records. `None` for any other change, which [`validate`] checks whole; also
/// returns the proposed map when it is valid.
pub(crate) fn validate_pins(
    active: &ShardMap,
    newest_version: u64,
    request: &CatalogUpdateRequest,
) -> Option<(CatalogValidation, Option<ShardMap>)> {
    let MapProposal::Patch(patch) = &request.map else {
        return None;
    };
    let changes = patch.pin_changes(active)?;
    let keys: BTreeSet<&str> = changes
        .iter()
        .filter(|change| change.kind == RecordKind::Pin)
        .map(|change| change.key.trim())
        .collect();
    let proposed = active.follow_changes(&changes).and_then(|map| {
        crate::directory::check_routes_of(&map, |route_key| keys.contains(route_key))?;
        Ok(map)
    });
    let map = proposed.as_ref().ok().cloned();
    let asked = (request.expected_current_map_version, request.allow_ownership_change);
    let validation = judge(active, newest_version, asked, proposed, |proposed| {
        diff_of_changes(active, proposed, &changes).unwrap_or_else(|| diff(active, proposed))
    });
    let map = map.filter(|_| validation.valid);
    Some((validation, map))
}

/// The issues of `proposed` against the active map, given the version the caller expected and
/// whether it acknowledged a change of ownership (`asked`); `moves` says what changes owner.
pub(super) fn judge(
    active: &ShardMap,
    newest_version: u64,
    asked: (Option<u64>, bool),
    proposed: Result<ShardMap>,
    moves: impl FnOnce(&ShardMap) -> MapDiff,
) -> CatalogValidation {
    let mut result = CatalogValidation {
        valid: false,
        requires_data_migration: false,
        current_map_version: newest_version,
        issues: Vec::new(),
        preview: None,
        moved_buckets: Vec::new(),
        moved_pins: Vec::new(),
        shard_changes: Vec::new(),
    };
    let (expected, acknowledged) = asked;
    if let Some(expected) = expected
        && expected != newest_version
    {
        result.issues.push(issue(
            IssueSeverity::Error,
            "map-version-mismatch",
            format!("expected map version {expected}, but the newest map version in the catalog is {newest_version}"),
        ));
    }
    let proposed = match proposed {
        Ok(map) => map,
        Err(err) => {
            result.issues.push(issue(
                IssueSeverity::Error,
                "invalid-map",
                format!("the proposed map is invalid: {err}"),
            ));
            return result;
        }
    };
    result.preview = Some(proposed.snapshot_within(crate::map::SNAPSHOT_ECHO_LIMIT));
    if proposed.version() <= newest_version {
        result.issues.push(issue(
            IssueSeverity::Error,
            "map-version-not-incremented",
            format!(
                "the proposed map version {} must be greater than {newest_version}, the newest in the catalog",
                proposed.version()
            ),
        ));
    }
    if !keyspace_eq(proposed.keyspace(), active.keyspace()) {
        result.issues.push(issue(
            IssueSeverity::Error,
            "keyspace-changed",
            format!(
                "the proposed keyspace '{}' is not the active keyspace '{}': a new keyspace reroutes every key; \
                 seed it on a master of its own",
                proposed.keyspace(),
                active.keyspace()
            ),
        ));
    } else if proposed.bucket_count() != active.bucket_count() {
        result.issues.push(issue(
            IssueSeverity::Error,
            "bucket-count-changed",
            format!(
                "the proposed virtualBucketCount {} is not the active {}: it moves almost every key to another \
                 bucket; keep the bucket count and move bucket ranges instead",
                proposed.bucket_count(),
                active.bucket_count()
            ),
        ));
    } else {
        let changes = moves(&proposed);
        result.requires_data_migration = changes.moves_data();
        if changes.moves_data() {
            let listed = describe_moves(&changes);
            if acknowledged {
                result.issues.push(issue(
                    IssueSeverity::Warning,
                    "ownership-change-acknowledged",
                    format!(
                        "moving to another shard without a data migration (acknowledged): {listed}; their keys \
                         will resolve to shards that do not hold their data unless it was migrated first"
                    ),
                ));
            } else {
                result.issues.push(issue(
                    IssueSeverity::Error,
                    "ownership-change-requires-migration",
                    format!(
                        "moving to another shard: {listed}; migrate their data first (shardlite migrate), or \
                         acknowledge a metadata-only change (allowOwnershipChange, --ack-ownership-change)"
                    ),
                ));
            }
        } else {
            result.issues.push(issue(
                IssueSeverity::Info,
                "metadata-compatible",
                "the proposed map changes no bucket or pin ownership".to_owned(),
            ));
        }
        result.moved_buckets = changes.moved_buckets;
        result.moved_pins = changes.moved_pins;
        result.shard_changes = changes.shard_changes;
    }
    result.issues.sort_by_key(|i| match i.severity {
        IssueSeverity::Error => 0,
        IssueSeverity::Warning => 1,
        IssueSeverity::Info => 2,
    });
    result.valid = !result.issues.iter().any(|i| i.severity == IssueSeverity::Error);
    result
}

fn describe_moves(diff: &MapDiff) -> String {
    let mut parts: Vec<String> = diff
        .moved_buckets
        .iter()
        .map(|MovedBuckets(start, end, from, to)| format!("buckets [{start}, {end}) from {from} to {to}"))
        .collect();
    parts.extend(
        diff.moved_pins
            .iter()
            .map(|MovedPin(key, from, to)| format!("pin '{key}' from {from} to {to}")),
    );
    if parts.len() > 8 {
        let more = parts.len() - 8;
        parts.truncate(8);
        parts.push(format!("{more} more"));
    }
    parts.join(", ")
}

impl Catalog {
    /// `request` with a patch applied to the newest stored map (the pending map, else the
    /// active one). A patch that does not apply stays a patch, which validation then applies to
    /// the active map and reports as an invalid map.
    async fn resolved(&self, request: &CatalogUpdateRequest, maps: &Maps) -> Result<CatalogUpdateRequest> {
        let mut request = request.clone();
        if let MapProposal::Patch(patch) = &request.map
            && let Ok(map) = patch.apply(&self.newest_options(maps).await?)
        {
            request.map = MapProposal::Map(map);
        }
        Ok(request)
    }

    /// The newest stored map's options (the pending map, else the active one), read again when
    /// the pending map does not validate.
    async fn newest_options(&self, maps: &Maps) -> Result<ShardingOptions> {
        if let Some(map) = maps.newest() {
            return Ok(map.options().clone());
        }
        let state = self.stored().await?;
        state
            .pending
            .or(state.active)
            .map(|stored| stored.options)
            .ok_or(Error::NoMap)
    }

    /// Validates `request` against the stored active map and the newest stored version.
    /// Changes nothing.
    ///
    /// A change of pins alone made against the active map (a patch of `mapVersion` and
    /// `exactKeyPins`, no pending map) is checked by what it touches; any other change, or
    /// `full`, checks the whole proposed map.
    pub async fn validate_update(&self, request: &CatalogUpdateRequest) -> Result<CatalogValidation> {
        self.validate_update_with(request, false).await
    }

    /// [`validate_update`](Self::validate_update) checking the whole proposed map, whatever
    /// the change touches (`catalog validate --full`).
    pub async fn validate_update_full(&self, request: &CatalogUpdateRequest) -> Result<CatalogValidation> {
        self.validate_update_with(request, true).await
    }

    async fn validate_update_with(&self, request: &CatalogUpdateRequest, full: bool) -> Result<CatalogValidation> {
        let maps = self.maps().await?;
        let newest = maps.newest_version();
        if !full
            && maps.pending.is_none()
            && let Some((validation, _)) = validate_pins(&maps.active, newest, request)
        {
            return Ok(validation);
        }
        let request = self.resolved(request, &maps).await?;
        let mut validation = validate(&maps.active, newest, &request);
        self.check_files(&request, &mut validation).await;
        Ok(validation)
    }

    /// Adds an `invalid-map` error when a shard of the proposed map would use the master's own
    /// file, or two shards one file once their paths are resolved beside the master.
    async fn check_files(&self, request: &CatalogUpdateRequest, validation: &mut CatalogValidation) {
        let Some(Ok(proposed)) = request.map.as_map().map(|map| ShardMap::new(map.clone())) else {
            return;
        };
        if let Err(err) = super::check_shard_files(self.path(), &proposed).await {
            validation.issues.insert(
                0,
                issue(
                    IssueSeverity::Error,
                    "invalid-map",
                    format!("the proposed map is invalid: {err}"),
                ),
            );
            validation.valid = false;
        }
    }

    /// The newest map version stored: the pending map's, else the active map's.
    pub async fn newest_version(&self) -> Result<Option<u64>> {
        Ok(self.store().versions().await?.and_then(|versions| versions.newest()))
    }

    /// The active map's version, read cheaply (no map parse), or `None` without a map.
    pub async fn active_version(&self) -> Result<Option<u64>> {
        self.store().active_version().await
    }

    /// [`active_version`](Self::active_version) on the calling thread, for blocking callers.
    /// A catalog in etcd answers `None`: its changes reach clients through a watch instead.
    pub fn active_version_blocking(&self) -> Result<Option<u64>> {
        self.store().active_version_blocking()
    }

    /// Validates and writes `request` as the pending map, with a history entry, in one atomic
    /// write that happens only if the stored maps are still the ones validated against
    /// (compare-and-set).
    ///
    /// An invalid update is not an error: the result says `applied: false` and carries the
    /// validation. A stale `expectedCurrentMapVersion`, or a catalog changed by someone else
    /// between validation and write, is [`Error::MapVersionConflict`].
    pub async fn apply_update(&self, request: CatalogUpdateRequest) -> Result<CatalogApplyResult> {
        self.ensure_schema().await?;
        let maps = self.maps().await?;
        let newest = maps.newest_version();
        if let Some(expected) = request.expected_current_map_version
            && expected != newest
        {
            return Err(Error::MapVersionConflict {
                expected,
                current: newest,
            });
        }
        let incremental = validate_pins(&maps.active, newest, &request).filter(|_| maps.pending.is_none());
        let (validation, proposed) = match incremental {
            Some((validation, proposed)) => {
                let changes = match &request.map {
                    MapProposal::Patch(patch) => patch.pin_changes(&maps.active),
                    MapProposal::Map(_) => None,
                };
                let proposed = proposed.map(|map| (map.version(), map.keyspace().to_owned()));
                (validation, proposed.zip(changes))
            }
            None => {
                let request = self.resolved(&request, &maps).await?;
                let mut validation = validate(&maps.active, newest, &request);
                self.check_files(&request, &mut validation).await;
                let proposed = match request.map.as_map().filter(|_| validation.valid) {
                    Some(proposed) => {
                        let base = MapRecords::of(&self.newest_options(&maps).await?);
                        let changes = base.changes_to(&MapRecords::of(proposed));
                        let version = u64::try_from(proposed.map_version).unwrap_or(0);
                        Some(((version, proposed.keyspace.trim().to_owned()), changes))
                    }
                    None => None,
                };
                (validation, proposed)
            }
        };
        let Some(proposed) = proposed.filter(|_| validation.valid) else {
            return Ok(CatalogApplyResult {
                applied: false,
                pending_map_version: None,
                validation,
            });
        };
        let ((version, keyspace), changes) = proposed;
        let history = HistoryRow {
            keyspace,
            version,
            audit: request
                .audit
                .clone()
                .or_because(|| "applied as the pending map".to_owned()),
            metadata_only: validation.requires_data_migration && request.allow_ownership_change,
        };
        if !self.store().write_pending(&maps.versions, &changes, &history).await? {
            let current = self.newest_version().await?.unwrap_or(newest);
            return Err(Error::MapVersionConflict {
                expected: request.expected_current_map_version.unwrap_or(newest),
                current,
            });
        }
        Ok(CatalogApplyResult {
            applied: true,
            pending_map_version: Some(version),
            validation,
        })
    }

    /// Makes the pending map the active one, with a history entry, in one atomic write. Returns
    /// the map that was active and the one that now is.
    ///
    /// [`Error::NoPendingMap`] when there is no pending map of the expected version.
    pub async fn activate_pending(&self, request: &ActivationRequest) -> Result<(ShardMap, ShardMap)> {
        let expected = request.expected_pending_map_version;
        let no_pending = |pending| Error::NoPendingMap { expected, pending };
        if !self.has_schema().await? {
            return Err(no_pending(None));
        }
        let maps = self.maps().await?;
        let previous = maps.active.clone();
        let pending_version = maps.pending.as_ref().map(|(version, _)| *version);
        if pending_version != Some(expected) {
            return Err(no_pending(pending_version));
        }
        let next = match maps.pending.as_ref().and_then(|(_, map)| map.clone()) {
            Some(next) => next,
            // It does not validate: say why.
            None => ShardMap::new(self.newest_options(&maps).await?)?,
        };
        let history = HistoryRow {
            keyspace: next.keyspace().to_owned(),
            version: expected,
            audit: request
                .audit
                .clone()
                .or_because(|| format!("activated (was version {})", previous.version())),
            metadata_only: false,
        };
        // No activation inside a backup's cut (see `engine::cut`).
        let pass = crate::engine::cut::pass().await;
        let activated = self.store().activate(&maps.versions, &history).await?;
        drop(pass);
        if !activated {
            return Err(no_pending(
                self.newest_version().await?.filter(|v| *v != previous.version()),
            ));
        }
        Ok((previous, next))
    }
}

#[cfg(test)]
#[path = "update_pins_tests.rs"]
mod pins_tests;
