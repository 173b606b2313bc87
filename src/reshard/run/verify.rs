//! Verifying a data move: every target's rows counted and checksummed on the destination and
//! compared with what the copy read from the source.

use super::copy::on_shard;
use super::state::{Context, JOB_TIME, Runner};
use crate::data::{DataClient, ReshardResult, Value};
use crate::engine::Database;
use crate::engine::reshard::copy::PageCursor;
use crate::error::Result;
use crate::reshard::item_sql::{Checksum, ItemSql};
use std::sync::Arc;

/// Counts and checksums the moving rows on the destination; true when every receipt matches.
/// (Online migrations verify in two steps instead: see `settle`.)
pub(super) async fn verify(_migrator: &Runner, state: &mut ReshardResult, context: &Context) -> Result<bool> {
    let mut all = true;
    for (index, target) in context.targets.iter().enumerate() {
        let (rows_seen, checksum) = count_and_checksum(
            context.local_destination.as_ref(),
            &context.destination,
            target,
            &state.spec.destination_shard_id,
        )
        .await?;
        let receipt = &mut state.receipts[index];
        receipt.destination_rows = Some(rows_seen);
        receipt.destination_checksum = Some(checksum.to_hex());
        receipt.verified = rows_seen == receipt.source_rows && checksum.to_hex() == receipt.source_checksum;
        receipt.error = (!receipt.verified).then(|| {
            format!(
                "the destination holds {rows_seen} moving rows (checksum {}), the source {} (checksum {})",
                checksum.to_hex(),
                receipt.source_rows,
                receipt.source_checksum
            )
        });
        all &= receipt.verified;
    }
    Ok(all)
}

/// Counts and checksums the moving rows of `target` on one shard: inside SQLite when it is a
/// file of this process, else read as values through its client.
pub(super) async fn count_and_checksum(
    local: Option<&Database>,
    shard: &Arc<dyn DataClient>,
    target: &ItemSql,
    shard_id: &str,
) -> Result<(u64, Checksum)> {
    match local {
        Some(database) => {
            let query = Arc::new(target.paged_query());
            let mut cursor = PageCursor::start();
            while !cursor.finished {
                cursor = database
                    .moves()
                    .checksum_pages(Arc::clone(&query), cursor, JOB_TIME)
                    .await?;
            }
            Ok((cursor.rows, Checksum::from_link(cursor.checksum)))
        }
        None => checksum_through_client(shard, target)
            .await
            .map_err(|err| on_shard(shard_id, err)),
    }
}

/// Counts and checksums the moving rows of `target` on `shard` read as values, page by page.
pub(super) async fn checksum_through_client(shard: &Arc<dyn DataClient>, target: &ItemSql) -> Result<(u64, Checksum)> {
    let mut checksum = Checksum::empty();
    let mut rows_seen = 0u64;
    let mut after: Option<Value> = None;
    loop {
        let (sql, params) = target.page_query(after.as_ref());
        let rows = shard.execute_read_only_sql(&sql, params).await?.rows;
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
