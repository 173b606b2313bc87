//! Replaying the changes an online data move captured on the source: on the destination, a
//! batch at a time, with the replay position checkpointed after each batch (resume starts from
//! it, and replaying a change again is harmless).

use super::copy::on_shard;
use super::state::{Context, Runner, checkpoint, progress};
use crate::data::ReshardResult;
use crate::error::Result;
use crate::reshard::capture;

/// Captured changes read and applied per batch (one checkpoint each).
const CHANGES_PER_BATCH: usize = 500;

/// Applies every change captured after the recorded position (and up to `through`), a batch at
/// a time, checkpointing the position after each; returns how many were applied. In the source's
/// transaction `snapshot` when given (the changes and the rows as that snapshot sees them), else
/// as the source is now.
pub(super) async fn replay(
    migrator: &Runner,
    state: &mut ReshardResult,
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
            checkpoint(migrator, state).await?;
            return Ok(applied);
        };
        let keys = capture::keys_by_item(&changes, context.targets.len());
        for (target, keys) in context.targets.iter().zip(&keys) {
            if !keys.is_empty() {
                capture::apply(&context.source, snapshot, &context.destination, target, keys)
                    .await
                    .map_err(|err| on_shard(&state.spec.destination_shard_id, err))?;
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
        checkpoint(migrator, state).await?;
        if remaining == 0 {
            return Ok(applied);
        }
    }
}
