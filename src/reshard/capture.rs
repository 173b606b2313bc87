//! Change capture on a migration's source, through its data interface (so in-process and remote
//! shards alike): installing the capture triggers and change table, reading captured changes in
//! order, applying them to the destination, and removing the capture when the migration ends.
//!
//! Replay is idempotent and order-insensitive per row: for each captured key it deletes the
//! destination's moving row with that key and writes back the source's row as it is *now*, if
//! it is still a moving row. Applying a change twice, or a later state before an earlier
//! change's turn, converges to the source's state; so a runner that stops anywhere resumes from
//! its recorded position (or before it) without harm.

use std::sync::Arc;

use super::fence::{Fence, Tx, conflicting_in, first_i64};
use super::item_sql::{ItemSql, quote_ident};
use crate::data::{DataClient, Params, Value};
use crate::engine::reshard::capture::{
    CHANGES_SCHEMA, CHANGES_TABLE, capture_trigger_names, capture_trigger_statements,
};
use crate::error::Result;

/// Keys read back from the source and rewritten on the destination per statement.
const KEYS_PER_STATEMENT: usize = 250;

/// One captured write of a moving row.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Change {
    /// Its position in the change table.
    pub(super) seq: i64,
    /// The manifest item (index into the migration's targets).
    pub(super) item: usize,
    /// The row's primary key.
    pub(super) key: Value,
}

/// Installs `fence`'s migration's capture on `source` for `targets`, in one write transaction:
/// the change table and, per target, its three triggers. Every write that commits after it is
/// captured. Returns another migration's overlapping fence instead, when there is one.
/// Installing it again replaces the triggers and keeps the changes already captured.
pub(super) async fn install(
    source: &Arc<dyn DataClient>,
    fence: &Fence<'_>,
    targets: &[ItemSql],
) -> Result<Option<String>> {
    let tx = Tx::begin(source.as_ref()).await?;
    let outcome = async {
        if let Some(other) = conflicting_in(&tx, fence).await? {
            return Ok(Some(other));
        }
        tx.run(CHANGES_SCHEMA, Params::none()).await?;
        for (index, target) in targets.iter().enumerate() {
            drop_triggers(&tx, fence.migration_id, index).await?;
            for statement in capture_trigger_statements(fence.migration_id, index, &target.captured, fence.moving) {
                tx.run(&statement, Params::none()).await?;
            }
        }
        Ok(None)
    }
    .await;
    tx.finish(outcome).await
}

async fn drop_triggers(tx: &Tx<'_>, migration_id: &str, index: usize) -> Result<()> {
    for name in capture_trigger_names(migration_id, index) {
        tx.run(
            &format!("DROP TRIGGER IF EXISTS {}", quote_ident(&name)),
            Params::none(),
        )
        .await?;
    }
    Ok(())
}

/// Removes `migration_id`'s capture from `shard` (its `items` triggers and its changes), and
/// the change table once no capture uses it: nothing of the migration stays in the file.
/// Nothing happens when there is none.
pub(super) async fn remove(shard: &Arc<dyn DataClient>, migration_id: &str, items: usize) -> Result<()> {
    let names: Vec<String> = (0..items)
        .flat_map(|i| capture_trigger_names(migration_id, i))
        .collect();
    let found = shard
        .execute_read_only_sql(
            "SELECT count(*) FROM sqlite_master WHERE (type = 'table' AND name = ?1)
                 OR (type = 'trigger' AND name IN (SELECT value FROM json_each(?2)))",
            Params::Positional(vec![
                Value::from(CHANGES_TABLE),
                Value::from(serde_json::Value::from(names).to_string()),
            ]),
        )
        .await?;
    if first_i64(&found) == 0 {
        return Ok(());
    }
    let tx = Tx::begin(shard.as_ref()).await?;
    let outcome = async {
        for index in 0..items {
            drop_triggers(&tx, migration_id, index).await?;
        }
        let table = tx
            .run(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                Params::from(vec![CHANGES_TABLE]),
            )
            .await?;
        if first_i64(&table) > 0 {
            tx.run(
                &format!("DELETE FROM {CHANGES_TABLE} WHERE migration_id = ?1"),
                Params::from(vec![migration_id]),
            )
            .await?;
            let left = tx
                .run(&format!("SELECT count(*) FROM {CHANGES_TABLE}"), Params::none())
                .await?;
            if first_i64(&left) == 0 {
                tx.run(&format!("DROP TABLE {CHANGES_TABLE}"), Params::none()).await?;
            }
        }
        Ok(())
    }
    .await;
    tx.finish(outcome).await
}

/// Up to `limit` of `migration_id`'s changes captured after position `after` and up to
/// `through`, in order (read in transaction `snapshot` when given).
pub(super) async fn changes_after(
    source: &Arc<dyn DataClient>,
    snapshot: Option<&str>,
    migration_id: &str,
    (after, through): (i64, i64),
    limit: usize,
) -> Result<Vec<Change>> {
    let sql = format!(
        "SELECT seq, item, row_key FROM {CHANGES_TABLE} WHERE migration_id = ?1 AND seq > ?2 AND seq <= ?3 \
         ORDER BY seq LIMIT ?4"
    );
    let params = Params::Positional(vec![
        Value::from(migration_id),
        Value::Integer(after),
        Value::Integer(through),
        Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX)),
    ]);
    let result = match snapshot {
        Some(tx) => source.execute_in_transaction(tx, &sql, params).await?,
        None => source.execute_read_only_sql(&sql, params).await?,
    };
    Ok(result
        .rows
        .into_iter()
        .filter_map(|row| {
            let mut row = row.into_iter();
            let seq = row.next()?.as_i64()?;
            let item = usize::try_from(row.next()?.as_i64()?).ok()?;
            Some(Change {
                seq,
                item,
                key: row.next()?,
            })
        })
        .collect())
}

/// The position of the last change captured so far (read in transaction `snapshot`).
pub(super) async fn last_position(source: &Arc<dyn DataClient>, snapshot: &str) -> Result<i64> {
    let result = source
        .execute_in_transaction(
            snapshot,
            &format!("SELECT coalesce(max(seq), 0) FROM {CHANGES_TABLE}"),
            Params::none(),
        )
        .await?;
    Ok(first_i64(&result))
}

/// How many of `migration_id`'s changes were captured after position `after`.
pub(super) async fn remaining(source: &Arc<dyn DataClient>, migration_id: &str, after: i64) -> Result<u64> {
    let result = source
        .execute_read_only_sql(
            &format!("SELECT count(*) FROM {CHANGES_TABLE} WHERE migration_id = ?1 AND seq > ?2"),
            Params::Positional(vec![Value::from(migration_id), Value::Integer(after)]),
        )
        .await?;
    Ok(u64::try_from(first_i64(&result)).unwrap_or(0))
}

/// The moving rows of `target` with the keys `keys` on `shard`, in key order: read in its
/// transaction `snapshot` when given (a consistent snapshot), else as it is now.
pub(super) async fn rows_for_keys(
    shard: &Arc<dyn DataClient>,
    snapshot: Option<&str>,
    target: &ItemSql,
    keys: &[Value],
) -> Result<Vec<Vec<Value>>> {
    let mut rows = Vec::new();
    for keys in keys.chunks(KEYS_PER_STATEMENT) {
        let (sql, params) = target.rows_for_keys(keys);
        rows.extend(match snapshot {
            Some(tx) => shard.execute_in_transaction(tx, &sql, params).await?.rows,
            None => shard.execute_read_only_sql(&sql, params).await?.rows,
        });
    }
    Ok(rows)
}

/// Makes the destination's moving rows of `target` with the keys `keys` what the source holds
/// (in `snapshot`, or now): each key's moving row deleted, then the source's moving rows of
/// those keys written.
pub(super) async fn apply(
    source: &Arc<dyn DataClient>,
    snapshot: Option<&str>,
    destination: &Arc<dyn DataClient>,
    target: &ItemSql,
    keys: &[Value],
) -> Result<()> {
    for keys in keys.chunks(KEYS_PER_STATEMENT) {
        let rows = rows_for_keys(source, snapshot, target, keys).await?;
        if !target.collection {
            // Two plain statements: nobody reads the moving rows on the destination before the
            // new map is active, and a replay stopped between them is simply replayed again.
            let (sql, params) = target.delete_keys(keys);
            destination.execute_sql(&sql, params).await?;
            if !rows.is_empty() {
                let (sql, params) = target.upsert(rows);
                destination.execute_sql(&sql, params).await?;
            }
            continue;
        }
        // A collection's documents live in an internal table, which only a maintenance
        // transaction writes.
        let tx = Tx::begin(destination.as_ref()).await?;
        let outcome = async {
            let (sql, params) = target.delete_keys(keys);
            tx.run(&sql, params).await?;
            if !rows.is_empty() {
                let (sql, params) = target.upsert(rows);
                tx.run(&sql, params).await?;
            }
            Ok(())
        }
        .await;
        tx.finish(outcome).await?;
    }
    Ok(())
}

/// The distinct keys of `changes` per item, in the order first captured.
pub(super) fn keys_by_item(changes: &[Change], items: usize) -> Vec<Vec<Value>> {
    let mut keys: Vec<Vec<Value>> = vec![Vec::new(); items];
    for change in changes {
        if let Some(item) = keys.get_mut(change.item)
            && !item.contains(&change.key)
        {
            item.push(change.key.clone());
        }
    }
    keys
}
