//! The online phases of a data move: change capture installed on the source, the copy while
//! writes go on, catch-up rounds that replay the captured changes on the destination until the
//! remaining delta is small, and, once the cutover has fenced the moving keys, the last delta.
//!
//! The capture is installed (and checkpointed) before the first page is copied, so every change
//! a page may miss is captured; the copy's pages need not be a consistent snapshot, since replay
//! writes each captured row back as the source holds it at that moment. The replay position is
//! checkpointed after every batch; resume starts from it, and replaying a change again is
//! harmless.

use super::replay::replay;
use super::state::{Context, Runner, checkpoint, progress, reject_fenced, report_phase, verification_failed};
use super::{copy, settle};
use crate::data::{ReshardPhase, ReshardResult};
use crate::error::Result;
use crate::reshard::capture;
use crate::reshard::fence::Fence;

/// Catch-up stops and the cutover begins once a round applied no more changes than this: the
/// last delta, applied while writes are fenced, is then about as small.
const CUTOVER_DELTA: u64 = 100;

/// The delta after which the last catch-up round (after the snapshot comparison) stops.
const FINAL_DELTA: u64 = 20;

/// A catch-up round this short leaves a delta about as short to apply in the cutover.
const SHORT_ROUND: std::time::Duration = std::time::Duration::from_millis(40);

/// The most catch-up rounds before the cutover goes ahead anyway (writes faster than replay).
const MAX_CATCH_UP_ROUNDS: u32 = 20;

/// Installs the capture (unless a checkpoint says it is in), copies every target, catches up
/// until the remaining delta is small, and verifies the destination against a snapshot of the
/// source. False when the run cannot go on to the cutover: another migration's fence overlaps
/// the moving rows (rejected), or the destination did not verify.
pub(super) async fn capture_copy_and_catch_up(
    migrator: &Runner,
    state: &mut ReshardResult,
    context: &Context,
    fence: &Fence<'_>,
) -> Result<bool> {
    if !progress(state).capturing {
        if let Some(other) = capture::install(&context.source, fence, &context.targets).await? {
            reject_fenced(state, context, &other);
            return Ok(false);
        }
        let online = progress(state);
        online.capturing = true;
        online.replayed_through = 0;
        state.phase = ReshardPhase::Capturing;
        checkpoint(migrator, state).await?;
        report_phase(migrator, state);
    }
    for index in 0..context.targets.len() {
        copy::copy(migrator, state, context, index).await?;
    }
    loop {
        let online = progress(state);
        online.catch_up_rounds += 1;
        let rounds = online.catch_up_rounds;
        state.phase = ReshardPhase::CatchingUp;
        report_phase(migrator, state);
        let applied = replay(migrator, state, context, None, i64::MAX).await?;
        if applied <= CUTOVER_DELTA || rounds >= MAX_CATCH_UP_ROUNDS {
            break;
        }
    }
    // The full comparison happens here, while writes go on; the cutover compares only what
    // changed since.
    if !settle::verify_snapshot(migrator, state, context).await? {
        verification_failed(state);
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

/// Once the cutover's fence is in: the cutover's start, then the last delta.
pub(super) async fn last_delta(migrator: &Runner, state: &mut ReshardResult, context: &Context) -> Result<()> {
    progress(state).cutover_started_utc = Some(crate::data::now_utc());
    state.phase = ReshardPhase::Cutover;
    checkpoint(migrator, state).await?;
    report_phase(migrator, state);
    replay(migrator, state, context, None, i64::MAX).await?;
    Ok(())
}

/// Removes the capture from the source (the migration no longer needs it: its writes are
/// fenced or it ended). Nothing happens when there is none.
pub(super) async fn release_capture(migrator: &Runner, state: &mut ReshardResult, context: &Context) -> Result<()> {
    capture::remove(&context.source, &state.migration_id, context.targets.len()).await?;
    if let Some(online) = state.online.as_mut()
        && online.capturing
    {
        online.capturing = false;
        checkpoint(migrator, state).await?;
    }
    Ok(())
}
