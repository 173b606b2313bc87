//! The phase machine of a data move: fence, copy, verify, write the pending map, activate,
//! delete the source rows; a checkpoint after each step, so a stopped run resumes where it was.

use super::{Context, Migrator, activate, admit, copy, online, settle, verify};
use crate::data::{ActivationRequest, Audit, MigrationResult, MigrationStatus};
use crate::engine::store::now_utc;
use crate::error::Result;
use crate::reshard::fence::{self, Fence};
use crate::reshard::manifest::issue;
use crate::reshard::target::Selection;

/// Records the run's state in the catalog, where status reads it and resume starts from it.
pub(super) async fn checkpoint(migrator: &Migrator, state: &mut MigrationResult) -> Result<()> {
    state.updated_utc = now_utc();
    migrator.catalog()?.save_migration_checkpoint(state).await
}

/// Runs the phases, then records how the run ended.
pub(super) async fn drive(
    migrator: &Migrator,
    mut state: MigrationResult,
    context: Context,
) -> Result<MigrationResult> {
    if let Err(err) = phases(migrator, &mut state, &context).await {
        state.status = MigrationStatus::Failed;
        state.phase = "failed".to_owned();
        state.message = if state.pending_map_version.is_some() {
            format!("the migration stopped after writing the new map: {err}")
        } else {
            format!("the migration stopped and the shard map was left unchanged: {err}")
        };
        state.issues.push(issue("migration-failed", err.to_string()));
    }
    activate::finish(migrator, &mut state).await;
    Ok(state)
}

/// The phase machine: each phase runs only if the checkpointed state has not passed it, so a
/// resumed run picks up where the last one stopped.
pub(super) async fn phases(migrator: &Migrator, state: &mut MigrationResult, context: &Context) -> Result<()> {
    let online = state.spec.online;
    // When this run fenced the moving keys for an online migration's cutover.
    let mut fenced_at = None;
    if state.status != MigrationStatus::Activated {
        fence::clear_moved(&context.destination, &context.selection).await?;
        let migration_id = state.migration_id.clone();
        let destination = state.spec.destination_shard_id.clone();
        let fence = Fence {
            migration_id: &migration_id,
            selection: &context.selection,
            pins: &context.pins,
            destination: &destination,
            targets: fence::targets_of(&context.targets, &context.routes),
        };
        if online
            && state.pending_map_version.is_none()
            && !online::capture_copy_and_catch_up(migrator, state, context, &fence).await?
        {
            return Ok(());
        }
        let started = std::time::Instant::now();
        if let Some(other) = fence::install(&context.source, &fence).await? {
            if online {
                online::release_capture(migrator, state, context).await?;
            }
            reject_fenced(state, context, &other);
            return Ok(());
        }
        if state.phase == "validated" {
            state.phase = "fenced".to_owned();
            checkpoint(migrator, state).await?;
        }
        if online {
            fenced_at = Some(started);
            if state.pending_map_version.is_none() {
                online::last_delta(migrator, state, context).await?;
            }
        }
    }
    if state.pending_map_version.is_none() {
        for index in 0..context.targets.len() {
            copy::copy(migrator, state, context, index).await?;
        }
        let verified = if online {
            settle::verify_delta(state, context).await?
        } else {
            verify::verify(migrator, state, context).await?
        };
        if !verified {
            verification_failed(state);
            return Ok(());
        }
        state.phase = "verified".to_owned();
        checkpoint(migrator, state).await?;
        if !activate::write_pending(migrator, state).await? {
            state.status = MigrationStatus::CatalogApplyFailed;
            state.phase = "catalog-apply-failed".to_owned();
            state.message = format!(
                "the data was verified, but the pending map could not be written ({}); the shard map was left \
                 unchanged",
                admit::first_error(&state.issues)
            );
            return Ok(());
        }
        state.status = MigrationStatus::PendingActivation;
        state.phase = "pending-map-written".to_owned();
        checkpoint(migrator, state).await?;
    }
    let pending = state.pending_map_version.unwrap_or(0);
    if state.status != MigrationStatus::Activated {
        let active = migrator.catalog()?.active_version().await?;
        if active != Some(pending) {
            if !state.spec.activate {
                // The fence holds every write of the moving rows until activation: nothing
                // more can be captured.
                online::release_capture(migrator, state, context).await?;
                state.message = format!(
                    "verified; pending map version {pending} was written: activate it (shardlite catalog \
                     activate, or resume this migration with activation)"
                );
                return Ok(());
            }
            migrator
                .sharded
                .catalog()
                .activate(&ActivationRequest::new(pending).audit(Audit {
                    operator: state.spec.audit.operator.clone(),
                    comment: Some(format!("migration {}", state.migration_id)),
                }))
                .await?;
        }
        fence::mark_moved(&context.source, &state.migration_id).await?;
        state.status = MigrationStatus::Activated;
        state.phase = "activated".to_owned();
        if let Some(fenced_at) = fenced_at {
            let elapsed = u64::try_from(fenced_at.elapsed().as_millis()).unwrap_or(u64::MAX);
            online::progress(state).cutover_ms = Some(elapsed);
        }
        checkpoint(migrator, state).await?;
        online::report_phase(migrator, state);
    }
    // The capture of an online migration ends with it (also when a stopped run is resumed
    // after activation).
    online::release_capture(migrator, state, context).await?;
    if state.spec.delete_source && state.phase != "source-deleted" {
        for (index, target) in context.targets.iter().enumerate() {
            loop {
                let deleted = fence::delete_page(&context.source, &state.migration_id, target).await?;
                if deleted == 0 {
                    break;
                }
                state.receipts[index].source_rows_deleted += deleted;
                checkpoint(migrator, state).await?;
            }
        }
        state.phase = "source-deleted".to_owned();
    }
    let deleted: u64 = state.receipts.iter().map(|r| r.source_rows_deleted).sum();
    let cutover = state
        .online
        .as_ref()
        .and_then(|online| online.cutover_ms)
        .map_or_else(String::new, |ms| format!(" after a {ms} ms cutover"));
    state.message = if state.spec.delete_source {
        format!("verified and activated map version {pending}{cutover}; {deleted} source rows deleted")
    } else {
        format!(
            "verified and activated map version {pending}{cutover}; the source rows are still there (not asked to \
             delete them)"
        )
    };
    Ok(())
}

/// Rejects the migration because migration `other` already fences some of its moving rows.
pub(super) fn reject_fenced(state: &mut MigrationResult, context: &Context, other: &str) {
    let (code, what) = match context.selection {
        Selection::Key(ref key) => ("route-key-already-fenced", format!("route key '{key}'")),
        Selection::Buckets { start, end, .. } => {
            ("bucket-range-already-fenced", format!("bucket range [{start}, {end})"))
        }
    };
    let message = format!(
        "{what} is already fenced by migration '{other}' on shard '{}'",
        state.spec.source_shard_id
    );
    state.issues.push(issue(code, message.clone()));
    state.status = MigrationStatus::Rejected;
    state.phase = "rejected".to_owned();
    state.message = format!("the migration was rejected: {message}");
}

/// Records that the destination did not verify.
pub(super) fn verification_failed(state: &mut MigrationResult) {
    state.status = MigrationStatus::VerificationFailed;
    state.phase = "verification-failed".to_owned();
    let failed: Vec<String> = state
        .receipts
        .iter()
        .filter(|r| !r.verified)
        .map(|r| r.name.clone())
        .collect();
    let fence = if state.spec.online {
        "writes of the moving keys go on (the capture stays)"
    } else {
        "the fence stays"
    };
    state.message = format!(
        "the data was copied but {} did not verify; the shard map was left unchanged and {fence} until the \
         migration is resumed",
        failed.join(", ")
    );
}
