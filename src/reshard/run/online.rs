//! The online phases of a data move: change capture installed on the source, the copy while
//! writes go on, catch-up rounds that replay the captured changes on the destination until the
//! remaining delta is small, and, once the cutover has fenced the moving keys, the last delta.
//!
//! The capture is installed (and checkpointed) before the first page is copied, so every change
//! a page may miss is captured; the copy's pages need not be a consistent snapshot, since replay
//! writes each captured row back as the source holds it at that moment. The replay position is
//! checkpointed after every batch; resume starts from it, and replaying a change again is
//! harmless.

use super::{Context, CopyProgress, Migrator, copy, drive, settle};
use crate::data::{MigrationResult, OnlineProgress};
use crate::error::Result;
use crate::reshard::capture;
use crate::reshard::fence::Fence;

/// Captured changes read and applied per batch (one checkpoint each).
const CHANGES_PER_BATCH: usize = 500;

/// Catch-up stops and the cutover begins once a round applied no more changes than this: the
/// last delta, applied while writes are fenced, is then about as small.
const CUTOVER_DELTA: u64 = 100;

/// The delta after which the last catch-up round (after the snapshot comparison) stops.
const FINAL_DELTA: u64 = 20;

/// A catch-up round this short leaves a delta about as short to apply in the cutover.
const SHORT_ROUND: std::time::Duration = std::time::Duration::from_millis(40);

/// The most catch-up rounds before the cutover goes ahead anyway (writes faster than replay).
const MAX_CATCH_UP_ROUNDS: u32 = 20;

/// The online progress of `state`, created on first use.
pub(super) fn progress(state: &mut MigrationResult) -> &mut OnlineProgress {
    state.online.get_or_insert_with(OnlineProgress::default)
}

/// Tells the observer (progress displays) that the run entered `state`'s phase.
pub(super) fn report_phase(migrator: &Migrator, state: &MigrationResult) {
    if let Some(observer) = &migrator.observer {
        let online = state.online.clone().unwrap_or_default();
        observer(&CopyProgress {
            migration_id: state.migration_id.clone(),
            item: String::new(),
            rows: 0,
            estimated_rows: 0,
            phase: state.phase.clone(),
            remaining_changes: online.remaining_changes,
            cutover_ms: online.cutover_ms,
        });
    }
}

/// Installs the capture (unless a checkpoint says it is in), copies every target, catches up
/// until the remaining delta is small, and verifies the destination against a snapshot of the
/// source. False when the run cannot go on to the cutover: another migration's fence overlaps
/// the moving rows (rejected), or the destination did not verify.
pub(super) async fn capture_copy_and_catch_up(
    migrator: &Migrator,
    state: &mut MigrationResult,
    context: &Context,
    fence: &Fence<'_>,
) -> Result<bool> {
    if !progress(state).capturing {
        if let Some(other) = capture::install(&context.source, fence, &context.targets).await? {
            drive::reject_fenced(state, context, &other);
            return Ok(false);
        }
        let online = progress(state);
        online.capturing = true;
        online.replayed_through = 0;
        state.phase = "capturing".to_owned();
        drive::checkpoint(migrator, state).await?;
        report_phase(migrator, state);
    }
    for index in 0..context.targets.len() {
        copy::copy(migrator, state, context, index).await?;
    }
    loop {
        let online = progress(state);
        online.catch_up_rounds += 1;
        let rounds = online.catch_up_rounds;
        state.phase = "catching-up".to_owned();
        report_phase(migrator, state);
        let applied = replay(migrator, state, context, None, i64::MAX).await?;
        if applied <= CUTOVER_DELTA || rounds >= MAX_CATCH_UP_ROUNDS {
            break;
        }
    }
    // The full comparison happens here, while writes go on; the cutover compares only what
    // changed since.
    if !settle::verify_snapshot(migrator, state, context).await? {
        drive::verification_failed(state);
        return Ok(false);
    }
    // What was written while the snapshot was compared is replayed now, so the cutover's last
    // delta holds only the writes of the last moments.
    for _ in 0..MAX_CATCH_UP_ROUNDS {
        progress(state).catch_up_rounds += 1;
        let round = std::time::Instant::now();
        let applied = replay(migrator, state, context, None, i64::MAX).await?;
        settle::verify_caught_up(state, context).await?;
        if applied <= FINAL_DELTA || round.elapsed() <= SHORT_ROUND {
            break;
        }
    }
    Ok(true)
}

/// Applies every change captured after the recorded position (and up to `through`), a batch at
/// a time, checkpointing the position after each; returns how many were applied. In the source's
/// transaction `snapshot` when given (the changes and the rows as that snapshot sees them), else
/// as the source is now.
pub(super) async fn replay(
    migrator: &Migrator,
    state: &mut MigrationResult,
    context: &Context,
    snapshot: Option<&str>,
    through: i64,
) -> Result<u64> {
    let mut applied = 0u64;
    loop {
        let after = progress(state).replayed_through;
        let changes = capture::changes_after(
            &context.source,
            snapshot,
            &state.migration_id,
            (after, through),
            CHANGES_PER_BATCH,
        )
        .await?;
        let Some(last) = changes.last().map(|change| change.seq) else {
            progress(state).remaining_changes = 0;
            drive::checkpoint(migrator, state).await?;
            return Ok(applied);
        };
        let keys = capture::keys_by_item(&changes, context.targets.len());
        for (target, keys) in context.targets.iter().zip(&keys) {
            if !keys.is_empty() {
                capture::apply(&context.source, snapshot, &context.destination, target, keys)
                    .await
                    .map_err(|err| super::copy::on_shard(&state.spec.destination_shard_id, err))?;
            }
        }
        let count = u64::try_from(changes.len()).unwrap_or(u64::MAX);
        applied += count;
        let remaining = if changes.len() < CHANGES_PER_BATCH {
            0
        } else {
            capture::remaining(&context.source, &state.migration_id, last).await?
        };
        let online = progress(state);
        online.replayed_through = last;
        online.changes_applied += count;
        online.remaining_changes = remaining;
        drive::checkpoint(migrator, state).await?;
        if remaining == 0 {
            return Ok(applied);
        }
    }
}

/// Once the cutover's fence is in: the cutover's start, then the last delta.
pub(super) async fn last_delta(migrator: &Migrator, state: &mut MigrationResult, context: &Context) -> Result<()> {
    progress(state).cutover_started_utc = Some(crate::data::now_utc());
    state.phase = "cutover".to_owned();
    drive::checkpoint(migrator, state).await?;
    report_phase(migrator, state);
    replay(migrator, state, context, None, i64::MAX).await?;
    Ok(())
}

/// Removes the capture from the source (the migration no longer needs it: its writes are
/// fenced or it ended). Nothing happens when there is none.
pub(super) async fn release_capture(migrator: &Migrator, state: &mut MigrationResult, context: &Context) -> Result<()> {
    capture::remove(&context.source, &state.migration_id, context.targets.len()).await?;
    if let Some(online) = state.online.as_mut()
        && online.capturing
    {
        online.capturing = false;
        drive::checkpoint(migrator, state).await?;
    }
    Ok(())
}
