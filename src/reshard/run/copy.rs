//! The two copy strategies of a data move: inside SQLite between two files of this process, or
//! page by page through the shards' data clients; both checkpoint as they go and resume without
//! copying a page twice.

use super::state::{CHECKPOINT_INTERVAL, Context, CopyProgress, JOB_TIME, Runner, checkpoint};
use crate::data::{DataClient, Params, ReshardPhase, ReshardReceipt, ReshardResult, TransactionOptions, Value};
use crate::engine::Database;
use crate::engine::reshard::copy::{PageCursor, PagedCopy};
use crate::error::{Error, Result, ShardProblem};
use crate::reshard::item_sql::{Checksum, ItemSql};
use std::sync::Arc;

/// Copies the remaining pages of one target, checkpointing as it goes: inside SQLite when
/// both shards are files of this process (and the source's path can be attached), else
/// through the data clients.
pub(super) async fn copy(migrator: &Runner, state: &mut ReshardResult, context: &Context, index: usize) -> Result<()> {
    if state.receipts[index].copied {
        return Ok(());
    }
    match (&context.local_source, &context.local_destination) {
        (Some(source), Some(destination)) if source.path().to_str().is_some() => {
            let copy = Arc::new(context.targets[index].paged_copy(&state.migration_id));
            copy_inside(migrator, state, context, index, (source, destination), copy).await
        }
        _ => copy_through_clients(migrator, state, context, index).await,
    }
}

/// Copies between two files of this process inside SQLite: a reader of the source hashes
/// each page while the destination's writer, with the source attached, upserts the page
/// before by `INSERT ... SELECT` and records the cursor after it on the destination, both in
/// one transaction. The copy does not wait for the catalog: after each page it publishes its
/// cursor, and the newest cursor is checkpointed in the catalog at most every
/// [`CHECKPOINT_INTERVAL`] and when a job ends. The copy starts from the destination's
/// record when it is ahead of the catalog's receipt (pages committed after the last
/// checkpoint of a run that stopped), so no page is copied twice.
pub(super) async fn copy_inside(
    migrator: &Runner,
    state: &mut ReshardResult,
    context: &Context,
    index: usize,
    (source, destination): (&Database, &Database),
    copy: Arc<PagedCopy>,
) -> Result<()> {
    let receipt = &state.receipts[index];
    let mut cursor = PageCursor {
        after: receipt.last_key.clone(),
        checksum: Checksum::from_hex(&receipt.source_checksum)?.link(),
        rows: receipt.source_rows,
        pages: receipt.pages_copied,
        finished: false,
    };
    // The record is written with each page, the receipt after it: the record is never
    // behind, and ahead when a run stopped before checkpointing its last pages.
    if let Some(recorded) = destination.moves().copy_cursor(&copy.record).await?
        && recorded.pages > cursor.pages
    {
        copied(migrator, state, context, index, &recorded).await?;
        if recorded.finished {
            return Ok(());
        }
        cursor = recorded;
    }
    loop {
        let (published, mut pages) = tokio::sync::watch::channel(None::<PageCursor>);
        let job = destination
            .moves()
            .copy_pages(source, Arc::clone(&copy), cursor.clone(), JOB_TIME, move |page| {
                published.send_replace(Some(page.clone()));
            });
        tokio::pin!(job);
        let mut recorded: Option<PageCursor> = None;
        let done = loop {
            tokio::select! {
                biased;
                done = &mut job => break done?,
                Ok(()) = pages.changed() => {
                    let page = pages.borrow_and_update().clone();
                    if let Some(page) = page {
                        copied(migrator, state, context, index, &page).await?;
                        recorded = Some(page);
                    }
                    tokio::select! {
                        biased;
                        done = &mut job => break done?,
                        () = tokio::time::sleep(CHECKPOINT_INTERVAL) => {}
                    }
                }
            }
        };
        if recorded.as_ref() != Some(&done) {
            copied(migrator, state, context, index, &done).await?;
        }
        if done.finished {
            return Ok(());
        }
        cursor = done;
    }
}

/// Records that target `index` is copied up to `cursor`: the receipt, a checkpoint, progress.
pub(super) async fn copied(
    migrator: &Runner,
    state: &mut ReshardResult,
    context: &Context,
    index: usize,
    cursor: &PageCursor,
) -> Result<()> {
    let receipt = &mut state.receipts[index];
    receipt.source_rows = cursor.rows;
    receipt.pages_copied = cursor.pages;
    receipt.last_key.clone_from(&cursor.after);
    receipt.source_checksum = Checksum::from_link(cursor.checksum).to_hex();
    receipt.copied = cursor.finished;
    page_checkpoint(migrator, state, context, index).await
}

/// The checkpoint and progress report after a page of target `index`.
pub(super) async fn page_checkpoint(
    migrator: &Runner,
    state: &mut ReshardResult,
    context: &Context,
    index: usize,
) -> Result<()> {
    let target = &context.targets[index];
    state.phase = ReshardPhase::copying(target.label());
    checkpoint(migrator, state).await?;
    if let Some(observer) = &migrator.observer {
        let estimated = state
            .plan
            .as_ref()
            .and_then(|plan| plan.items.get(index))
            .map_or(0, |item| item.estimated_rows);
        observer(&CopyProgress {
            migration_id: state.migration_id.clone(),
            item: target.name.clone(),
            rows: state.receipts[index].source_rows,
            estimated_rows: estimated,
            phase: state.phase.clone(),
            remaining_changes: state.online.as_ref().map_or(0, |online| online.remaining_changes),
            cutover_ms: None,
        });
    }
    Ok(())
}

/// Copies through the shards' data clients (either side may be a remote daemon): each page
/// is read as values and upserted by one multi-row statement, and checkpointed in the
/// catalog once the destination committed it, before the next page is written. So at most
/// one page can be on the destination beyond the checkpoint: on resume the first page is
/// read back from the destination first, and not written again when it is already there.
pub(super) async fn copy_through_clients(
    migrator: &Runner,
    state: &mut ReshardResult,
    context: &Context,
    index: usize,
) -> Result<()> {
    let target = &context.targets[index];
    let mut checksum = Checksum::from_hex(&state.receipts[index].source_checksum)?;
    let (source_id, destination_id) = (
        state.spec.source_shard_id.clone(),
        state.spec.destination_shard_id.clone(),
    );
    let read = |shard: &Arc<dyn DataClient>, shard_id: &str, after: Option<Value>| {
        let (sql, params) = target.page_query(after.as_ref());
        let shard = Arc::clone(shard);
        let shard_id = shard_id.to_owned();
        async move {
            Ok::<_, Error>(
                shard
                    .execute_read_only_sql(&sql, params)
                    .await
                    .map_err(|err| on_shard(&shard_id, err))?
                    .rows,
            )
        }
    };
    let mut after = state.receipts[index].last_key.clone();
    let mut rows = read(&context.source, &source_id, after.clone()).await?;
    let mut check_destination = state.attempt > 1;
    loop {
        let count = rows.len();
        let mut next = Vec::new();
        if count > 0 {
            let last = last_key(target, &rows)?;
            checksum.add_page(&rows);
            // A run that stopped between the destination's commit and the checkpoint left
            // this page there already, exactly as the source has it.
            let landed = check_destination && read(&context.destination, &destination_id, after.clone()).await? == rows;
            check_destination = false;
            let write = async {
                if !landed {
                    let (sql, params) = target.upsert(rows);
                    write_page(context.destination.as_ref(), target.collection, &sql, params)
                        .await
                        .map_err(|err| on_shard(&destination_id, err))?;
                }
                Ok::<_, Error>(())
            };
            if count < target.page_size {
                write.await?;
            } else {
                // The next page is read from the source while this one is written to the
                // destination (two files, two threads); it is checkpointed only after the
                // write commits, as before.
                let (written, following) = tokio::join!(write, read(&context.source, &source_id, Some(last.clone())));
                written?;
                next = following?;
            }
            record_page(&mut state.receipts[index], count, last.clone(), &checksum);
            after = Some(last);
        }
        state.receipts[index].copied = count < target.page_size;
        page_checkpoint(migrator, state, context, index).await?;
        if state.receipts[index].copied {
            return Ok(());
        }
        rows = next;
    }
}

/// Writes one page of moved rows to `destination`: a collection's documents live in an internal
/// table, which only a maintenance transaction writes; a table's rows are one plain statement.
async fn write_page(destination: &dyn DataClient, collection: bool, sql: &str, params: Params) -> Result<()> {
    if !collection {
        destination.execute_sql(sql, params).await?;
        return Ok(());
    }
    let tx = destination
        .begin_transaction_with(TransactionOptions::maintenance())
        .await?;
    match destination
        .execute_in_transaction(&tx.transaction_id, sql, params)
        .await
    {
        Ok(_) => destination.commit_transaction(&tx.transaction_id).await,
        Err(err) => {
            let _ = destination.rollback_transaction(&tx.transaction_id).await;
            Err(err)
        }
    }
}

/// `err`, naming shard `shard_id` when it is a failure to reach the shard (a remote shard whose
/// daemon is down or does not answer in time), whose message names only the daemon's endpoint.
pub(super) fn on_shard(shard_id: &str, err: Error) -> Error {
    match err {
        Error::Transport(_) => Error::ShardUnavailable(Box::new(ShardProblem::new(shard_id, err.to_string()))),
        other => other,
    }
}

/// The primary key of the last row of a page of `target`, by which the next page is read.
fn last_key(target: &ItemSql, rows: &[Vec<Value>]) -> Result<Value> {
    let last = rows
        .last()
        .and_then(|row| row.get(target.key_index))
        .cloned()
        .unwrap_or(Value::Null);
    if last == Value::Null {
        return Err(Error::invalid_argument(
            "manifest",
            format!(
                "{} has a row with a NULL primary key; it cannot be paged",
                target.label()
            ),
        ));
    }
    Ok(last)
}

/// Adds a page of `count` rows ending at `last` to `receipt`, with the checksum so far.
fn record_page(receipt: &mut ReshardReceipt, count: usize, last: Value, checksum: &Checksum) {
    receipt.source_rows += u64::try_from(count).unwrap_or(u64::MAX);
    receipt.pages_copied += 1;
    receipt.last_key = Some(last);
    receipt.source_checksum = checksum.to_hex();
}
