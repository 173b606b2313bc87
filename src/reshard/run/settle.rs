//! Verifying an online data move in two steps, so that the cutover (while writes of the moving
//! keys are refused) does not have to read every moving row again.
//!
//! 1. Before the cutover, while writes go on: in one read transaction on the source (a
//!    consistent snapshot), the changes captured up to that snapshot are replayed with the rows
//!    as the snapshot holds them; the destination then holds exactly the snapshot's moving rows.
//!    Both sides are counted and checksummed, at the same time (the snapshot's rows read in its
//!    transaction; inside SQLite, on the transaction's connection, when the source is a file of
//!    this process), and must match: the receipts' counts and checksums. When they do not, the
//!    keys that differ are written again from the snapshot once and both sides compared again
//!    ([`repair`](super::repair)); only a match lets the move go on.
//! 2. After each catch-up round that follows, the rows of the keys changed since the last
//!    comparison are compared on both sides; a key written again meanwhile may differ, and is
//!    compared again later.
//! 3. In the cutover, once the fence holds the source still and the last delta is applied: the
//!    rows of the keys changed since the last comparison, and of those that differed, are
//!    compared one by one, and both sides' moving rows are counted again. Every other row is as
//!    the last comparison found it on both sides, so together the steps compare every row.

use std::sync::Arc;

use super::repair;
use super::replay::replay;
use super::state::{Context, JOB_TIME, Runner, checkpoint, progress};
use super::verify::count_and_checksum;
use crate::data::{DataClient, Params, ReshardPhase, ReshardResult, Value};
use crate::engine::reshard::copy::PageCursor;
use crate::error::Result;
use crate::reshard::capture;
use crate::reshard::item_sql::{Checksum, ItemSql};

/// Changes read per query when collecting the keys changed after the snapshot.
const CHANGES_PER_READ: usize = 5000;

/// Step 1: the destination compared with a consistent snapshot of the source (see the module
/// docs). Fills the receipts; true when every one matches.
pub(super) async fn verify_snapshot(migrator: &Runner, state: &mut ReshardResult, context: &Context) -> Result<bool> {
    state.phase = ReshardPhase::Verifying;
    checkpoint(migrator, state).await?;
    let tx = context.source.begin_transaction().await?;
    let snapshot = tx.transaction_id.as_str();
    let outcome = async {
        let through = capture::last_position(&context.source, snapshot).await?;
        replay(migrator, state, context, Some(snapshot), through).await?;
        // The destination now holds the snapshot's moving rows, and nothing else writes them
        // before the cutover: both sides are read at once (on their own connections).
        let mut compared = Vec::new();
        for target in &context.targets {
            compared.push(compare(state, context, snapshot, target).await?);
        }
        // A destination that does not match has the keys that differ written again from the
        // snapshot, once, and is compared again: only a match lets the move go on.
        for (index, (target, sides)) in context.targets.iter().zip(compared.iter_mut()).enumerate() {
            if sides.0 == sides.1 {
                continue;
            }
            let keys = repair::differing_keys(
                (&context.source, snapshot),
                &context.destination,
                &state.migration_id,
                (index, target),
            )
            .await?;
            if keys.is_empty() {
                continue;
            }
            repair::rewrite(
                &context.source,
                snapshot,
                &context.destination,
                (&state.migration_id, target),
                &keys,
            )
            .await?;
            let again = compare(state, context, snapshot, target).await?;
            *sides = again;
        }
        Ok::<_, crate::Error>((through, compared))
    }
    .await;
    // Only read: nothing to keep.
    let _ = context.source.rollback_transaction(snapshot).await;
    let (through, compared) = outcome?;
    let online = progress(state);
    online.replayed_through = online.replayed_through.max(through);
    online.verified_through = through;
    for keys in context
        .recheck
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter_mut()
    {
        keys.clear();
    }
    let mut all = true;
    for (index, ((rows, checksum), (rows_seen, seen))) in compared.into_iter().enumerate() {
        let receipt = &mut state.receipts[index];
        receipt.source_rows = rows;
        receipt.source_checksum = checksum.to_hex();
        receipt.destination_rows = Some(rows_seen);
        receipt.destination_checksum = Some(seen.to_hex());
        receipt.verified = rows_seen == rows && seen == checksum;
        receipt.error = (!receipt.verified).then(|| {
            format!(
                "the destination holds {rows_seen} moving rows (checksum {}), a snapshot of the source {rows} \
                 (checksum {})",
                seen.to_hex(),
                checksum.to_hex()
            )
        });
        all &= receipt.verified;
    }
    checkpoint(migrator, state).await?;
    Ok(all)
}

/// The count and checksum of `target`'s moving rows in the source's transaction `snapshot` and
/// on the destination now, read at the same time.
async fn compare(
    state: &ReshardResult,
    context: &Context,
    snapshot: &str,
    target: &ItemSql,
) -> Result<((u64, Checksum), (u64, Checksum))> {
    tokio::try_join!(
        checksum_in(context, snapshot, target),
        count_and_checksum(
            context.local_destination.as_ref(),
            &context.destination,
            target,
            &state.spec.destination_shard_id,
        )
    )
}

/// Counts and checksums the moving rows of `target` as the source's transaction `tx` sees them:
/// inside SQLite, on the transaction's own connection, when the source is a file of this process
/// (the transaction is then one of its sessions), else read as values through its client.
async fn checksum_in(context: &Context, tx: &str, target: &ItemSql) -> Result<(u64, Checksum)> {
    if let Some(database) = &context.local_source {
        let query = Arc::new(target.paged_query());
        let mut cursor = PageCursor::start();
        while !cursor.finished {
            match database
                .moves()
                .session_checksum_pages(tx, Arc::clone(&query), cursor.clone(), JOB_TIME)
                .await
            {
                Ok(next) => cursor = next,
                // Not a session of this file's database after all (its client is another
                // handle): the rows are read through the client, in the same transaction.
                Err(crate::Error::TransactionNotFound { .. }) if cursor.pages == 0 => {
                    return checksum_through_transaction(&context.source, tx, target).await;
                }
                Err(err) => return Err(err),
            }
        }
        return Ok((cursor.rows, Checksum::from_link(cursor.checksum)));
    }
    checksum_through_transaction(&context.source, tx, target).await
}

/// Counts and checksums the moving rows of `target` as `shard`'s transaction `tx` sees them,
/// read as values page by page.
async fn checksum_through_transaction(
    shard: &Arc<dyn DataClient>,
    tx: &str,
    target: &ItemSql,
) -> Result<(u64, Checksum)> {
    let mut checksum = Checksum::empty();
    let mut rows_seen = 0u64;
    let mut after: Option<Value> = None;
    loop {
        let (sql, params) = target.page_query(after.as_ref());
        let rows = shard.execute_in_transaction(tx, &sql, params).await?.rows;
        if rows.is_empty() {
            break;
        }
        rows_seen += u64::try_from(rows.len()).unwrap_or(u64::MAX);
        checksum.add_page(&rows);
        after = rows.last().and_then(|row| row.get(target.key_index)).cloned();
        if rows.len() < target.page_size {
            break;
        }
    }
    Ok((rows_seen, checksum))
}

/// Between the snapshot and the cutover, after a catch-up round: the rows of the keys changed
/// since the last comparison (`verified_through`, up to the position replay reached) and of the
/// keys that differed last time are compared on both sides, and `verified_through` moves up.
/// A key still written meanwhile may differ; it is kept in `context`'s recheck list and
/// compared again in the cutover, when nothing writes it.
pub(super) async fn verify_caught_up(state: &mut ReshardResult, context: &Context) -> Result<()> {
    let (from, through) = {
        let online = progress(state);
        (online.verified_through, online.replayed_through)
    };
    let keys = changed_keys(state, context, from, through).await?;
    let differing = compare_keys(context, &keys).await?;
    *context
        .recheck
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = differing;
    progress(state).verified_through = through;
    Ok(())
}

/// The keys changed in `(from, through]`, per item, with those left to recheck.
async fn changed_keys(state: &ReshardResult, context: &Context, from: i64, through: i64) -> Result<Vec<Vec<Value>>> {
    let mut changes = Vec::new();
    let mut after = from;
    loop {
        let read = capture::changes_after(
            &context.source,
            None,
            &state.migration_id,
            (after, through),
            CHANGES_PER_READ,
        )
        .await?;
        let Some(last) = read.last().map(|change| change.seq) else {
            break;
        };
        after = last;
        let full = read.len() == CHANGES_PER_READ;
        changes.extend(read);
        if !full {
            break;
        }
    }
    let mut keys = capture::keys_by_item(&changes, context.targets.len());
    let recheck = context
        .recheck
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    for (keys, more) in keys.iter_mut().zip(recheck) {
        for key in more {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    Ok(keys)
}

/// The keys (per item) whose moving rows differ between source and destination now.
async fn compare_keys(context: &Context, keys: &[Vec<Value>]) -> Result<Vec<Vec<Value>>> {
    let mut differing = Vec::new();
    for (target, keys) in context.targets.iter().zip(keys) {
        let (source, destination) = tokio::try_join!(
            capture::rows_for_keys(&context.source, None, target, keys),
            capture::rows_for_keys(&context.destination, None, target, keys)
        )?;
        let row_of =
            |rows: &[Vec<Value>], key: &Value| rows.iter().find(|row| row.get(target.key_index) == Some(key)).cloned();
        differing.push(
            keys.iter()
                .filter(|key| row_of(&source, key) != row_of(&destination, key))
                .cloned()
                .collect(),
        );
    }
    Ok(differing)
}

/// Step 2, in the cutover: the rows of every key changed after the last comparison (and of
/// those that differed then) compared on both sides, and both sides' moving rows counted. True
/// when everything matches.
pub(super) async fn verify_delta(state: &mut ReshardResult, context: &Context) -> Result<bool> {
    let from = progress(state).verified_through;
    let keys = changed_keys(state, context, from, i64::MAX).await?;
    let differing = compare_keys(context, &keys).await?;
    let mut all = true;
    for (index, (target, differing)) in context.targets.iter().zip(&differing).enumerate() {
        let (source_rows, destination_rows) =
            tokio::try_join!(count(&context.source, target), count(&context.destination, target))?;
        let receipt = &mut state.receipts[index];
        receipt.source_rows = source_rows;
        receipt.destination_rows = Some(destination_rows);
        receipt.verified &= source_rows == destination_rows && differing.is_empty();
        if !receipt.verified && receipt.error.is_none() {
            receipt.error = Some(if differing.is_empty() {
                format!("the destination holds {destination_rows} moving rows, the source {source_rows}")
            } else {
                format!(
                    "the destination's rows of {} keys changed after the snapshot differ from the source's",
                    differing.len()
                )
            });
        }
        all &= receipt.verified;
    }
    Ok(all)
}

/// How many moving rows of `target` `shard` holds now.
async fn count(shard: &Arc<dyn DataClient>, target: &ItemSql) -> Result<u64> {
    let (sql, params): (String, Params) = target.count_query();
    let result = shard.execute_read_only_sql(&sql, params).await?;
    let rows = result
        .rows
        .first()
        .and_then(|row| row.first())
        .and_then(Value::as_i64)
        .unwrap_or(0);
    Ok(u64::try_from(rows).unwrap_or(0))
}
