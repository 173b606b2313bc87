//! The end of a data move: the new map written as the pending map (and recognised when a crashed
//! run already wrote it), and the final checkpoint and history row of every run.

use super::plan;
use super::state::Runner;
use crate::data::now_utc;
use crate::data::{
    Audit, CatalogIssue, CatalogUpdateRequest, IssueSeverity, ReshardPhase, ReshardResult, ReshardScope, ReshardSpec,
};
use crate::error::{ErrorKind, Result};
use crate::map::ShardMap;
use crate::reshard::manifest::issue;

/// Writes the new map as the pending map. False (with an issue) when the catalog refuses.
/// A map this migration already wrote (before a crash) is recognised and kept.
pub(super) async fn write_pending(migrator: &Runner, state: &mut ReshardResult) -> Result<bool> {
    let catalog = migrator.catalog()?;
    let active = catalog.active_map().await?;
    let next = state.map_version + 1;
    if active.version() == next && routes_to_destination(&active, &state.spec) {
        state.pending_map_version = Some(next);
        return Ok(true);
    }
    if let Some(pending) = catalog.pending_options().await?
        && u64::try_from(pending.map_version).ok() == Some(next)
        && ShardMap::new(pending).is_ok_and(|map| routes_to_destination(&map, &state.spec))
    {
        state.pending_map_version = Some(next);
        return Ok(true);
    }
    if active.version() != state.map_version {
        state.issues.push(issue(
            "map-version-mismatch",
            format!(
                "the active map changed from version {} to {} while the migration ran",
                state.map_version,
                active.version()
            ),
        ));
        return Ok(false);
    }
    let newest = catalog.newest_version().await?.unwrap_or(active.version());
    let request = CatalogUpdateRequest {
        map: plan::proposed_options(&active, &state.spec),
        expected_current_map_version: Some(newest),
        allow_ownership_change: true,
        audit: Audit {
            operator: state.spec.audit.operator.clone(),
            comment: Some(match &state.spec.audit.comment {
                Some(comment) => format!("{comment} (migration {})", state.migration_id),
                None => format!("migration {}", state.migration_id),
            }),
        },
    };
    match migrator.sharded.catalog().apply(&request).await {
        Ok(applied) if applied.applied => {
            state.pending_map_version = applied.pending_map_version;
            Ok(true)
        }
        Ok(refused) => {
            state.issues.extend(
                refused
                    .validation
                    .issues
                    .into_iter()
                    .filter(|i| i.severity == IssueSeverity::Error),
            );
            Ok(false)
        }
        Err(err) if err.kind() == ErrorKind::MapVersionConflict => {
            state.issues.push(issue("map-version-conflict", err.to_string()));
            Ok(false)
        }
        Err(err) => Err(err),
    }
}

/// Sets the recovery fields, then writes the final checkpoint and a history row. A failure
/// to record is reported as a warning: the data is where the status says.
pub(super) async fn finish(migrator: &Runner, state: &mut ReshardResult) {
    let abandoned = state.phase == ReshardPhase::Abandoned;
    state.requires_operator_recovery = !abandoned && state.status.requires_operator_recovery();
    state.recovery_action = if abandoned {
        None
    } else {
        state.status.recovery_action().map(str::to_owned)
    };
    let now = now_utc();
    state.updated_utc = now.clone();
    state.completed_utc = Some(now);
    let recorded = match migrator.catalog() {
        Ok(catalog) => catalog.record_migration_end(state).await,
        Err(err) => Err(err),
    };
    // The destination's copy cursors matter only while some item is still to be copied.
    let copy_over = abandoned || (!state.receipts.is_empty() && state.receipts.iter().all(|r| r.copied));
    if copy_over && let Some(destination) = migrator.sharded.local_shard(&state.spec.destination_shard_id) {
        // A record left behind misleads nobody: it is keyed by this migration's id, which a
        // later migration can only take after clearing its records (see `start`).
        if let Err(err) = destination
            .database()
            .moves()
            .clear_copy_cursors(&state.migration_id)
            .await
        {
            tracing::warn!(migration = %state.migration_id, "the copy cursors could not be removed: {err}");
        }
    }
    if let Err(err) = recorded {
        state.issues.push(CatalogIssue {
            severity: IssueSeverity::Warning,
            code: "migration-history-write-failed".to_owned(),
            message: format!("the migration ended {:?}, but recording it failed: {err}", state.status),
        });
    }
}

/// Whether `map` sends the migration's data to its destination.
pub(super) fn routes_to_destination(map: &ShardMap, spec: &ReshardSpec) -> bool {
    let Some(destination) = map.shard_index(&spec.destination_shard_id) else {
        return false;
    };
    match &spec.scope {
        ReshardScope::RouteKey { route_key, .. } => map.owner_of_key(route_key) == destination,
        ReshardScope::BucketRange {
            start_bucket_inclusive: start,
            end_bucket_exclusive: end,
            ..
        } => (*start..*end).all(|bucket| map.bucket_owner(bucket) == destination),
    }
}
