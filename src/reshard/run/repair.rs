//! Repairing an online data move's destination when it does not match the snapshot of the
//! source it is compared with (see [`settle`](super::settle)): the rows of both sides are read
//! in key order and merged, the keys whose rows differ are written again from the snapshot, and
//! the comparison is made again. The move goes on only when that second comparison matches, so
//! a repair never stands in for the verification; it turns a destination that fell behind
//! (a write it missed, whatever the cause) into one that verifies, and says which keys it
//! rewrote.
//!
//! A repair writes only what the move is answerable for: the keys the snapshot holds, and
//! destination rows the snapshot lacks only when the move captured a change of that key (a
//! row the source deleted). A moving row that was on the destination before the move and was
//! never on the source is left alone, and the comparison reports it.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::data::{DataClient, Params, Value};
use crate::engine::reshard::capture::CHANGES_TABLE;
use crate::error::Result;
use crate::reshard::capture;
use crate::reshard::item_sql::ItemSql;

/// The most differing keys named in a message.
const KEYS_NAMED: usize = 5;

/// The keys of item `index` (`target`) whose moving rows differ between the source's
/// transaction `snapshot` and the destination as it is now and that the move is answerable for
/// (see the module docs), found by reading both sides in key order.
pub(super) async fn differing_keys(
    (source, snapshot): (&Arc<dyn DataClient>, &str),
    destination: &Arc<dyn DataClient>,
    migration_id: &str,
    (index, target): (usize, &ItemSql),
) -> Result<Vec<Value>> {
    let (mut differing, only_destination) = merge(source, snapshot, destination, target).await?;
    for key in only_destination {
        if captured(source, snapshot, migration_id, index, &key).await? {
            differing.push(key);
        }
    }
    Ok(differing)
}

/// Whether the move captured a change of `key` of item `index` (read in `snapshot`).
async fn captured(
    source: &Arc<dyn DataClient>,
    snapshot: &str,
    migration_id: &str,
    index: usize,
    key: &Value,
) -> Result<bool> {
    let sql = format!("SELECT count(*) FROM {CHANGES_TABLE} WHERE migration_id = ?1 AND item = ?2 AND row_key = ?3");
    let params = Params::Positional(vec![
        Value::from(migration_id),
        Value::Integer(i64::try_from(index).unwrap_or(i64::MAX)),
        key.clone(),
    ]);
    let result = source.execute_in_transaction(snapshot, &sql, params).await?;
    Ok(result
        .rows
        .first()
        .and_then(|row| row.first())
        .and_then(Value::as_i64)
        .unwrap_or(0)
        > 0)
}

/// Both sides merged in key order: the keys whose rows differ or that only the snapshot holds,
/// and the keys only the destination holds.
async fn merge(
    source: &Arc<dyn DataClient>,
    snapshot: &str,
    destination: &Arc<dyn DataClient>,
    target: &ItemSql,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut differing = Vec::new();
    let mut only_destination = Vec::new();
    let mut sides = [Side::default(), Side::default()];
    loop {
        for (index, side) in sides.iter_mut().enumerate() {
            if side.rows.is_empty() && !side.finished {
                let (sql, params) = target.page_query(side.after.as_ref());
                let rows = if index == 0 {
                    source.execute_in_transaction(snapshot, &sql, params).await?.rows
                } else {
                    destination.execute_read_only_sql(&sql, params).await?.rows
                };
                side.finished = rows.len() < target.page_size;
                side.after = rows.last().and_then(|row| row.get(target.key_index)).cloned();
                side.rows = rows.into_iter().rev().collect();
            }
        }
        let key = |side: &Side| side.rows.last().and_then(|row| row.get(target.key_index)).cloned();
        let [source_side, destination_side] = &mut sides;
        match (key(source_side), key(destination_side)) {
            (None, None) => return Ok((differing, only_destination)),
            (Some(key), None) => {
                source_side.rows.pop();
                differing.push(key);
            }
            (None, Some(key)) => {
                destination_side.rows.pop();
                only_destination.push(key);
            }
            (Some(left), Some(right)) => match compare_keys(&left, &right) {
                Ordering::Less => {
                    source_side.rows.pop();
                    differing.push(left);
                }
                Ordering::Greater => {
                    destination_side.rows.pop();
                    only_destination.push(right);
                }
                Ordering::Equal => {
                    if source_side.rows.pop() != destination_side.rows.pop() {
                        differing.push(left);
                    }
                }
            },
        }
    }
}

/// Writes the moving rows of `keys` on the destination again, as the source's transaction
/// `snapshot` holds them, and logs which keys they were.
pub(super) async fn rewrite(
    source: &Arc<dyn DataClient>,
    snapshot: &str,
    destination: &Arc<dyn DataClient>,
    (migration_id, target): (&str, &ItemSql),
    keys: &[Value],
) -> Result<()> {
    tracing::warn!(
        migration = %migration_id,
        item = %target.label(),
        "the destination differed from a snapshot of the source at {} keys (first: {}); they are copied again \
         and compared once more",
        keys.len(),
        named(keys)
    );
    capture::apply(source, Some(snapshot), destination, target, keys).await
}

/// The first few of `keys`, for a message.
pub(super) fn named(keys: &[Value]) -> String {
    let mut names: Vec<String> = keys.iter().take(KEYS_NAMED).map(|key| format!("{key:?}")).collect();
    if keys.len() > KEYS_NAMED {
        names.push("…".to_owned());
    }
    names.join(", ")
}

/// One side of the merge: the rows of the page read last (in reverse, so the next is last),
/// the key to read after, and whether the last page was short.
#[derive(Default)]
struct Side {
    rows: Vec<Vec<Value>>,
    after: Option<Value>,
    finished: bool,
}

/// The order both sides' pages come in: SQLite's order of the key values (numbers before text
/// before blobs), which the page query sorts by.
fn compare_keys(left: &Value, right: &Value) -> Ordering {
    fn rank(value: &Value) -> u8 {
        match value {
            Value::Null => 0,
            Value::Integer(_) | Value::Real(_) => 1,
            Value::Text(_) => 2,
            Value::Blob(_) => 3,
        }
    }
    match (left, right) {
        (Value::Integer(a), Value::Integer(b)) => a.cmp(b),
        (Value::Text(a), Value::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
        (Value::Blob(a), Value::Blob(b)) => a.cmp(b),
        _ => match (left.as_f64(), right.as_f64()) {
            (Some(a), Some(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
            _ => rank(left).cmp(&rank(right)),
        },
    }
}
