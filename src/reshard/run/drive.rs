//! The phase machine of a data move: fence, copy, verify, write the pending map, activate,
//! delete the source rows; a checkpoint after each step, so a stopped run resumes where it was.

use std::ops::ControlFlow;
use std::time::Instant;

use super::state::{
    Context, Runner, checkpoint, first_error, progress, reject_fenced, report_phase, verification_failed,
};
use super::{activate, copy, online, settle, verify};
use crate::data::{ActivationRequest, Audit, ReshardPhase, ReshardResult, ReshardStatus};
use crate::error::Result;
use crate::reshard::fence::{self, Fence};
use crate::reshard::manifest::issue;

/// Runs the phases, then records how the run ended.
pub(super) async fn drive(migrator: &Runner, mut state: ReshardResult, context: Context) -> Result<ReshardResult> {
    if let Err(err) = phases(migrator, &mut state, &context).await {
        state.status = ReshardStatus::Failed;
        state.phase = ReshardPhase::Failed;
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
async fn phases(migrator: &Runner, state: &mut ReshardResult, context: &Context) -> Result<()> {
    // When this run fenced the moving keys for an online migration's cutover.
    let mut fenced_at = None;
    if state.status != ReshardStatus::Activated {
        match fence_source(migrator, state, context).await? {
            ControlFlow::Continue(at) => fenced_at = at,
            ControlFlow::Break(()) => return Ok(()),
        }
    }
    if state.pending_map_version.is_none() && copy_and_verify(migrator, state, context).await?.is_break() {
        return Ok(());
    }
    let pending = state.pending_map_version.unwrap_or(0);
    if state.status != ReshardStatus::Activated
        && activate_map(migrator, state, context, pending, fenced_at)
            .await?
            .is_break()
    {
        return Ok(());
    }
    // The capture of an online migration ends with it (also when a stopped run is resumed
    // after activation).
    online::release_capture(migrator, state, context).await?;
    if state.spec.delete_source && state.phase != ReshardPhase::SourceDeleted {
        delete_source(migrator, state, context).await?;
    }
    state.message = summary(state, pending);
    Ok(())
}

/// Fences the moving rows on the source (after an online migration's copy and catch-up, for
/// its cutover): goes on with the moment the cutover's fence went in, if it did now.
async fn fence_source(
    migrator: &Runner,
    state: &mut ReshardResult,
    context: &Context,
) -> Result<ControlFlow<(), Option<Instant>>> {
    let online = state.spec.online;
    fence::clear_moved(&context.destination, &context.moving).await?;
    let migration_id = state.migration_id.clone();
    let destination = state.spec.destination_shard_id.clone();
    let fence = Fence {
        migration_id: &migration_id,
        moving: &context.moving,
        destination: &destination,
        targets: fence::targets_of(&context.targets, &context.routes),
    };
    if online
        && state.pending_map_version.is_none()
        && !online::capture_copy_and_catch_up(migrator, state, context, &fence).await?
    {
        return Ok(ControlFlow::Break(()));
    }
    let started = Instant::now();
    if let Some(other) = fence::install(&context.source, &fence).await? {
        if online {
            online::release_capture(migrator, state, context).await?;
        }
        reject_fenced(state, context, &other);
        return Ok(ControlFlow::Break(()));
    }
    if state.phase == ReshardPhase::Validated {
        state.phase = ReshardPhase::Fenced;
        checkpoint(migrator, state).await?;
    }
    if !online {
        return Ok(ControlFlow::Continue(None));
    }
    if state.pending_map_version.is_none() {
        online::last_delta(migrator, state, context).await?;
    }
    Ok(ControlFlow::Continue(Some(started)))
}

/// Copies every item, verifies the destination and writes the pending map.
async fn copy_and_verify(migrator: &Runner, state: &mut ReshardResult, context: &Context) -> Result<ControlFlow<()>> {
    for index in 0..context.targets.len() {
        copy::copy(migrator, state, context, index).await?;
    }
    let verified = if state.spec.online {
        settle::verify_delta(state, context).await?
    } else {
        verify::verify(migrator, state, context).await?
    };
    if !verified {
        verification_failed(state);
        return Ok(ControlFlow::Break(()));
    }
    state.phase = ReshardPhase::Verified;
    checkpoint(migrator, state).await?;
    if !activate::write_pending(migrator, state).await? {
        state.status = ReshardStatus::CatalogApplyFailed;
        state.phase = ReshardPhase::CatalogApplyFailed;
        state.message = format!(
            "the data was verified, but the pending map could not be written ({}); the shard map was left \
             unchanged",
            first_error(&state.issues)
        );
        return Ok(ControlFlow::Break(()));
    }
    state.status = ReshardStatus::PendingActivation;
    state.phase = ReshardPhase::PendingMapWritten;
    checkpoint(migrator, state).await?;
    Ok(ControlFlow::Continue(()))
}

/// Activates pending map version `pending` (unless it is active already, or the run was not
/// asked to) and marks the source's fence moved.
async fn activate_map(
    migrator: &Runner,
    state: &mut ReshardResult,
    context: &Context,
    pending: u64,
    fenced_at: Option<Instant>,
) -> Result<ControlFlow<()>> {
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
            return Ok(ControlFlow::Break(()));
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
    state.status = ReshardStatus::Activated;
    state.phase = ReshardPhase::Activated;
    if let Some(fenced_at) = fenced_at {
        let elapsed = u64::try_from(fenced_at.elapsed().as_millis()).unwrap_or(u64::MAX);
        progress(state).cutover_ms = Some(elapsed);
    }
    checkpoint(migrator, state).await?;
    report_phase(migrator, state);
    Ok(ControlFlow::Continue(()))
}

/// Deletes the moved rows from the source, a page at a time, checkpointing the count.
async fn delete_source(migrator: &Runner, state: &mut ReshardResult, context: &Context) -> Result<()> {
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
    state.phase = ReshardPhase::SourceDeleted;
    Ok(())
}

/// The message of a run that activated map version `pending`.
fn summary(state: &ReshardResult, pending: u64) -> String {
    let deleted: u64 = state.receipts.iter().map(|r| r.source_rows_deleted).sum();
    let cutover = state
        .online
        .as_ref()
        .and_then(|online| online.cutover_ms)
        .map_or_else(String::new, |ms| format!(" after a {ms} ms cutover"));
    if state.spec.delete_source {
        format!("verified and activated map version {pending}{cutover}; {deleted} source rows deleted")
    } else {
        format!(
            "verified and activated map version {pending}{cutover}; the source rows are still there (not asked to \
             delete them)"
        )
    }
}
