//! Admitting a data move: the checks every request passes before anything changes (keyspace,
//! destination, catalog, map version, manifest), then the plan and, unless it is a dry run, the
//! phases.

use super::state::{Runner, checkpoint, first_error};
use super::{activate, drive, plan};
use crate::data::now_utc;
use crate::data::{
    CatalogIssue, IssueSeverity, ReshardPhase, ReshardPlan, ReshardResult, ReshardScope, ReshardSpec, ReshardStatus,
};
use crate::error::Result;
use crate::map::{ShardMap, ShardRole};
use crate::reshard::manifest::{self, issue};
use crate::routing::keyspace_eq;

/// The map's spelling of `keyspace`, or (with an issue) the request's when it is another keyspace.
fn keyspace_of(keyspace: &str, map: &ShardMap, issues: &mut Vec<CatalogIssue>) -> String {
    if keyspace_eq(keyspace.trim(), map.keyspace()) {
        map.keyspace().to_owned()
    } else {
        issues.push(issue(
            "keyspace-mismatch",
            format!(
                "keyspace '{}' is not the shard map's keyspace '{}'",
                keyspace.trim(),
                map.keyspace()
            ),
        ));
        keyspace.trim().to_owned()
    }
}

/// Checks a request's scope against the map: the scope as it is stored (the map's spelling of
/// the keyspace, the key and shard trimmed) and the source shard (where the key resolves, or the
/// range's source), with an issue for each problem.
pub(super) fn scope(scope: ReshardScope, map: &ShardMap, issues: &mut Vec<CatalogIssue>) -> (ReshardScope, String) {
    match scope {
        ReshardScope::RouteKey { keyspace, route_key } => {
            let keyspace = keyspace_of(&keyspace, map, issues);
            let key = route_key.trim().to_owned();
            if key.is_empty() {
                issues.push(issue("missing-route-key", "the route key is blank".to_owned()));
            }
            let mut source = String::new();
            if !key.is_empty() && issues.is_empty() {
                match map.resolve(&keyspace, &key) {
                    Ok(resolution) => source = resolution.shard_id.to_owned(),
                    Err(err) => issues.push(issue("source-shard-unavailable", err.to_string())),
                }
            }
            let scope = ReshardScope::RouteKey {
                keyspace,
                route_key: key,
            };
            (scope, source)
        }
        ReshardScope::BucketRange {
            keyspace,
            source_shard_id,
            start_bucket_inclusive: start,
            end_bucket_exclusive: end,
        } => {
            let keyspace = keyspace_of(&keyspace, map, issues);
            let source = source_shard_id.trim().to_owned();
            match map.shard(&source) {
                None => issues.push(issue(
                    "unknown-source-shard",
                    format!("source shard '{source}' is not defined in the shard map"),
                )),
                Some(shard) if !shard.enabled => issues.push(issue(
                    "source-shard-disabled",
                    format!("source shard '{source}' is disabled"),
                )),
                Some(_) => {}
            }
            if start >= end || end > map.bucket_count() {
                issues.push(issue(
                    "invalid-bucket-range",
                    format!(
                        "bucket range [{start}, {end}) is empty or outside the {} virtual buckets",
                        map.bucket_count()
                    ),
                ));
            } else if let Some(index) = map.shard_index(&source)
                && (start..end).any(|bucket| map.bucket_owner(bucket) != index)
            {
                issues.push(issue(
                    "source-does-not-own-bucket-range",
                    format!("source shard '{source}' does not own every bucket of [{start}, {end})"),
                ));
            }
            let scope = ReshardScope::BucketRange {
                keyspace,
                source_shard_id: source.clone(),
                start_bucket_inclusive: start,
                end_bucket_exclusive: end,
            };
            (scope, source)
        }
    }
}

/// Common checks, then the plan, then (unless a dry run) the phases.
pub(super) async fn start(
    migrator: &Runner,
    spec: ReshardSpec,
    id: Option<String>,
    expected_version: Option<u64>,
    dry_run: bool,
    issues: Vec<CatalogIssue>,
) -> Result<ReshardResult> {
    let id = match id.as_deref().map(str::trim) {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => new_migration_id(),
    };
    // Held until the run ends: two starts with one id cannot both run.
    let claim = match migrator.sharded.catalog().master() {
        Some(catalog) => Some(catalog.claim_migration(&id).await?),
        None => None,
    };
    let result = start_claimed(migrator, spec, id, expected_version, dry_run, issues).await;
    if let Some(claim) = claim {
        claim.release().await;
    }
    result
}

/// [`start`] once the run holds the migration's claim.
async fn start_claimed(
    migrator: &Runner,
    spec: ReshardSpec,
    id: String,
    expected_version: Option<u64>,
    dry_run: bool,
    mut issues: Vec<CatalogIssue>,
) -> Result<ReshardResult> {
    let map = migrator.sharded.map();
    check_run(migrator, &id, expected_version, &spec, &map, &mut issues).await?;
    let mut state = new_state(id, spec, map.version(), issues);
    let context = if state.issues.is_empty() {
        match plan::context(migrator, &state.spec, &map).await {
            Ok(context) => Some(context),
            Err(err) => {
                state.issues.push(issue("manifest-mismatch", err.to_string()));
                None
            }
        }
    } else {
        None
    };
    let Some(context) = context else {
        reject(migrator, &mut state, dry_run).await;
        return Ok(state);
    };
    let plan = plan::plan(migrator, &state.spec, &map, &context).await?;
    warn_unindexed(&mut state, &plan);
    state.plan = Some(plan);
    if dry_run {
        state.status = ReshardStatus::Planned;
        state.phase = ReshardPhase::Planned;
        state.message = "dry run: this is the plan; nothing was changed".to_owned();
        return Ok(state);
    }
    state.receipts = context
        .targets
        .iter()
        .map(|t| plan::fresh_receipt(&t.name, t.collection))
        .collect();
    // A record under this id can only be a leftover (the catalog knew no such migration):
    // the copy must not resume from it.
    if let Some(destination) = &context.local_destination {
        destination.moves().clear_copy_cursors(&state.migration_id).await?;
    }
    checkpoint(migrator, &mut state).await?;
    drive::drive(migrator, state, context).await
}

/// The checks of a run as a whole, with an issue for each problem: a catalog to record it in,
/// an unused id, no pending map, the expected map version, and the manifest.
async fn check_run(
    migrator: &Runner,
    id: &str,
    expected_version: Option<u64>,
    spec: &ReshardSpec,
    map: &ShardMap,
    issues: &mut Vec<CatalogIssue>,
) -> Result<()> {
    match migrator.sharded.catalog().master() {
        None => issues.push(issue(
            "catalog-required",
            "migrations need a client opened from a master catalog".to_owned(),
        )),
        Some(catalog) => {
            if catalog.migration(id).await?.is_some() {
                issues.push(issue(
                    "migration-id-exists",
                    format!("migration '{id}' already exists: resume it, or choose another id"),
                ));
            }
            if let Some(pending) = catalog.pending_options().await? {
                issues.push(issue(
                    "pending-map-exists",
                    format!(
                        "the catalog holds a pending map (version {}): activate it first, so the migration \
                         builds on the map that will be active",
                        pending.map_version
                    ),
                ));
            }
        }
    }
    if let Some(expected) = expected_version
        && expected != map.version()
    {
        issues.push(issue(
            "map-version-mismatch",
            format!(
                "expected active map version {expected}, but the active version is {}",
                map.version()
            ),
        ));
    }
    if spec.delete_source && !spec.activate {
        issues.push(issue(
            "delete-source-requires-activation",
            "deleting the source rows needs activation in the same run: until the new map is active the \
             source still owns them"
                .to_owned(),
        ));
    }
    issues.extend(manifest::check(&spec.manifest));
    Ok(())
}

/// A new run's first state: validated, unless `issues` holds errors (then it is rejected).
fn new_state(id: String, spec: ReshardSpec, map_version: u64, issues: Vec<CatalogIssue>) -> ReshardResult {
    let now = now_utc();
    ReshardResult {
        migration_id: id,
        status: ReshardStatus::Running,
        phase: ReshardPhase::Validated,
        message: String::new(),
        spec,
        plan: None,
        map_version,
        pending_map_version: None,
        requires_operator_recovery: false,
        recovery_action: None,
        receipts: Vec::new(),
        issues,
        attempt: 1,
        started_utc: now.clone(),
        updated_utc: now,
        completed_utc: None,
        online: None,
    }
}

/// Rejects the run for its issues; the rejection is recorded under its id, unless it is a dry
/// run or the id belongs to another migration.
async fn reject(migrator: &Runner, state: &mut ReshardResult, dry_run: bool) {
    state.status = ReshardStatus::Rejected;
    state.phase = ReshardPhase::Rejected;
    state.message = format!("the migration was rejected: {}", first_error(&state.issues));
    let id_taken = state.issues.iter().any(|i| i.code == "migration-id-exists");
    if !dry_run && !id_taken && migrator.sharded.catalog().master().is_some() {
        activate::finish(migrator, state).await;
    }
}

/// A warning for each table a route-key move would scan whole for want of an index.
fn warn_unindexed(state: &mut ReshardResult, plan: &ReshardPlan) {
    if !matches!(state.spec.scope, ReshardScope::RouteKey { .. }) {
        return;
    }
    for item in plan
        .items
        .iter()
        .filter(|item| !item.route_index && item.estimated_rows > 0)
    {
        state.issues.push(CatalogIssue {
            severity: IssueSeverity::Warning,
            code: "no-route-index".to_owned(),
            message: format!(
                "no index covers the route filter of {} '{}': every page scans it; create an index on its route \
                 column",
                if item.collection { "collection" } else { "table" },
                item.name
            ),
        });
    }
}

/// Checks the destination: defined, enabled, primary, not the source.
pub(super) fn check_destination(
    map: &ShardMap,
    source: &str,
    destination: &str,
    issues: &mut Vec<CatalogIssue>,
    same: impl FnOnce() -> String,
) {
    match map.shard(destination) {
        None => issues.push(issue(
            "unknown-destination-shard",
            format!("destination shard '{destination}' is not defined in the shard map"),
        )),
        Some(shard) if !shard.enabled => issues.push(issue(
            "destination-shard-disabled",
            format!("destination shard '{destination}' is disabled"),
        )),
        Some(shard) if shard.role == ShardRole::Replica => issues.push(issue(
            "destination-shard-not-primary",
            format!("destination shard '{destination}' is a replica: data can move only to primary shards"),
        )),
        Some(shard) if !source.is_empty() && shard.id.eq_ignore_ascii_case(source) => {
            issues.push(issue("destination-is-source", same()));
        }
        Some(_) => {}
    }
}

/// `mig-{yyyymmddhhmmss}-{32 hex}`.
pub(super) fn new_migration_id() -> String {
    let stamp = time::OffsetDateTime::now_utc()
        .format(time::macros::format_description!(
            "[year][month][day][hour][minute][second]"
        ))
        .unwrap_or_default();
    format!("mig-{stamp}-{}", uuid::Uuid::new_v4().simple())
}
