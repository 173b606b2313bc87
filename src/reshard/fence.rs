//! Fences: persisted in the source shard's own file, enforced by SQLite in every process.
//!
//! A fence is a row in `_shardlite_route_fences` (what is fenced: one route key, or a bucket
//! range minus the pinned keys), the tables and collections it covers, and `BEFORE INSERT`,
//! `UPDATE` and `DELETE` triggers on those tables that raise `route_fenced` for a row whose route
//! value is fenced. Because the fence is in the file, every writer honours it: this process,
//! the daemon, in-process clients and driver connections in other processes, even a plain
//! `sqlite3` shell. Because the check is a trigger, SQLite re-reads it only when the schema
//! version changes, and a shard without fences runs nothing extra per write.
//!
//! The fence is written in one write transaction, so it is ordered with every other write: a
//! write that committed before it is seen by the copy, and a write after it is refused. Reads
//! are never fenced.
//!
//! States: `fenced` while the data moves; `moved` once the new map is active (this shard no
//! longer owns the data, so a writer still on the old map is refused rather than writing where
//! nobody will read); `open` only inside the transaction that deletes the moved rows.

use std::sync::Arc;

use super::item_sql::{COLLECTIONS_TABLE, ItemSql, quote_ident};
use crate::data::{DataClient, Params, TransactionOptions, Value};
use crate::engine::reshard::fence::{
    BUCKET_FUNCTION, FENCE_SCHEMA, FENCE_TABLES, FENCE_TRIGGERS_QUERY, FENCED_TARGETS_QUERY, FencedTarget,
    trigger_statements,
};
use crate::engine::reshard::moving::MovingRows;
use crate::error::Result;

/// What a migration fences on its source.
pub(super) struct Fence<'a> {
    pub(super) migration_id: &'a str,
    pub(super) moving: &'a MovingRows,
    pub(super) destination: &'a str,
    /// `(table, route column or property, collection name or "")`.
    pub(super) targets: Vec<(String, String, String)>,
}

/// The fence targets of `targets`.
pub(super) fn targets_of(targets: &[ItemSql], routes: &[String]) -> Vec<(String, String, String)> {
    targets
        .iter()
        .zip(routes)
        .map(|(target, route)| {
            if target.collection {
                (COLLECTIONS_TABLE.to_owned(), route.clone(), target.name.clone())
            } else {
                (target.name.clone(), route.clone(), String::new())
            }
        })
        .collect()
}

/// One maintenance transaction on a shard, through its data interface (in-process or remote
/// alike): only such a transaction may write the fence tables and create their triggers.
pub(super) struct Tx<'a> {
    client: &'a dyn DataClient,
    id: String,
}

impl<'a> Tx<'a> {
    pub(super) async fn begin(client: &'a dyn DataClient) -> Result<Self> {
        let info = client.begin_transaction_with(TransactionOptions::maintenance()).await?;
        Ok(Self {
            client,
            id: info.transaction_id,
        })
    }

    pub(super) async fn run(&self, sql: &str, params: Params) -> Result<crate::data::SqlResult> {
        self.client.execute_in_transaction(&self.id, sql, params).await
    }

    pub(super) async fn finish<T>(self, outcome: Result<T>) -> Result<T> {
        match outcome {
            Ok(value) => {
                self.client.commit_transaction(&self.id).await?;
                Ok(value)
            }
            Err(err) => {
                let _ = self.client.rollback_transaction(&self.id).await;
                Err(err)
            }
        }
    }
}

/// Installs `fence` on `source` unless another migration's fence overlaps it; returns that
/// migration's id when one does. Installing the same migration's fence again changes nothing.
pub(super) async fn install(source: &Arc<dyn DataClient>, fence: &Fence<'_>) -> Result<Option<String>> {
    let tx = Tx::begin(source.as_ref()).await?;
    let outcome = install_in(&tx, fence).await;
    tx.finish(outcome).await
}

async fn install_in(tx: &Tx<'_>, fence: &Fence<'_>) -> Result<Option<String>> {
    tx.run(FENCE_SCHEMA, Params::none()).await?;
    if let Some(other) = conflicting(tx, fence).await? {
        return Ok(Some(other));
    }
    let existing = tx
        .run(
            "SELECT count(*) FROM _shardlite_route_fences WHERE migration_id = ?1",
            Params::from(vec![fence.migration_id]),
        )
        .await?;
    if first_i64(&existing) > 0 {
        tx.run(
            "UPDATE _shardlite_route_fences SET state = 'fenced' WHERE migration_id = ?1 AND state <> 'moved'",
            Params::from(vec![fence.migration_id]),
        )
        .await?;
        return Ok(None);
    }
    insert_fence_rows(tx, fence).await?;
    refuse_intents(tx, fence).await?;
    rebuild_triggers(tx).await?;
    Ok(None)
}

/// Writes a new fence: its row, the pins a bucket range carries along, and its target tables.
async fn insert_fence_rows(tx: &Tx<'_>, fence: &Fence<'_>) -> Result<()> {
    let (kind, key, count, start, end) = match fence.moving {
        MovingRows::Key(key) => ("key", Value::from(key.as_str()), Value::Null, Value::Null, Value::Null),
        MovingRows::Buckets {
            bucket_count,
            start,
            end,
            ..
        } => (
            "buckets",
            Value::Null,
            Value::Integer(i64::from(*bucket_count)),
            Value::Integer(i64::from(*start)),
            Value::Integer(i64::from(*end)),
        ),
    };
    let keyspace = match fence.moving {
        MovingRows::Buckets { keyspace, .. } => keyspace.clone(),
        MovingRows::Key(_) => String::new(),
    };
    tx.run(
        "INSERT INTO _shardlite_route_fences
             (migration_id, kind, keyspace, route_key, bucket_count, start_bucket, end_bucket, destination, state, created_utc)
         VALUES (:id, :kind, :keyspace, :key, :count, :start, :end, :destination, 'fenced', :now)",
        Params::named([
            ("id", Value::from(fence.migration_id)),
            ("kind", Value::from(kind)),
            ("keyspace", Value::from(keyspace)),
            ("key", key),
            ("count", count),
            ("start", start),
            ("end", end),
            ("destination", Value::from(fence.destination)),
            ("now", Value::from(crate::data::now_utc())),
        ]),
    )
    .await?;
    if matches!(fence.moving, MovingRows::Buckets { .. }) {
        for pin in fence.moving.pins() {
            tx.run(
                "INSERT OR IGNORE INTO _shardlite_route_fence_pins (migration_id, route_key) VALUES (?1, ?2)",
                Params::from(vec![fence.migration_id, pin.as_str()]),
            )
            .await?;
        }
    }
    for (table, route, collection) in &fence.targets {
        tx.run(
            "INSERT OR IGNORE INTO _shardlite_route_fence_targets (migration_id, table_name, route_column, collection)
             VALUES (?1, ?2, ?3, ?4)",
            Params::from(vec![
                fence.migration_id,
                table.as_str(),
                route.as_str(),
                collection.as_str(),
            ]),
        )
        .await?;
    }
    Ok(())
}

/// Refuses the fence (and so the move, its transaction rolling back) while a prepared atomic
/// transaction holds a moving row, by its current or its prepared values: its commit would
/// write where the fence refuses. The move can be retried once the transaction is finished.
async fn refuse_intents(tx: &Tx<'_>, fence: &Fence<'_>) -> Result<()> {
    let tables = tx
        .run(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_shardlite_atomic_locks'",
            Params::none(),
        )
        .await?;
    if first_i64(&tables) == 0 {
        return Ok(());
    }
    for (table, route, collection) in &fence.targets {
        if !collection.is_empty() {
            continue; // An atomic transaction writes tables only.
        }
        let matches = |value: &str| match fence.moving {
            MovingRows::Key(_) => format!("trim(CAST({value} AS TEXT)) = :key"),
            MovingRows::Buckets { .. } => format!(
                "{BUCKET_FUNCTION}(:keyspace, {value}, :count) >= :start AND {BUCKET_FUNCTION}(:keyspace, {value}, :count) < :end"
            ),
        };
        let sql = format!(
            "SELECT (SELECT count(*) FROM _shardlite_atomic_locks l JOIN {t} r ON r.rowid = l.row_id
                     WHERE l.table_name = :table AND {current})
                  + (SELECT count(*) FROM _shardlite_atomic_rows p JOIN _shardlite_atomic_values v
                     ON v.transaction_id = p.transaction_id AND v.seq = p.seq
                     WHERE p.table_name = :table AND v.column_name = :route AND {prepared})",
            t = quote_ident(table),
            current = matches(&format!("r.{}", quote_ident(route))),
            prepared = matches("v.value"),
        );
        let (keyspace, count, start, end, key) = match fence.moving {
            MovingRows::Key(key) => (String::new(), 0, 0, 0, key.clone()),
            MovingRows::Buckets {
                keyspace,
                bucket_count,
                start,
                end,
                ..
            } => (keyspace.clone(), *bucket_count, *start, *end, String::new()),
        };
        let mut params = vec![
            ("table", Value::from(table.as_str())),
            ("route", Value::from(route.as_str())),
        ];
        if matches!(fence.moving, MovingRows::Key(_)) {
            params.push(("key", Value::from(key)));
        } else {
            params.extend([
                ("keyspace", Value::from(keyspace)),
                ("count", Value::Integer(i64::from(count))),
                ("start", Value::Integer(i64::from(start))),
                ("end", Value::Integer(i64::from(end))),
            ]);
        }
        if first_i64(&tx.run(&sql, Params::named(params)).await?) > 0 {
            return Err(crate::Error::RowLocked {
                table: table.as_str().into(),
            });
        }
    }
    Ok(())
}

/// Another migration's fence (not yet moved) on the shard of `tx` that overlaps `fence`; none
/// when the shard has no fence tables (which this does not create).
pub(super) async fn conflicting_in(tx: &Tx<'_>, fence: &Fence<'_>) -> Result<Option<String>> {
    let tables = tx
        .run(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_shardlite_route_fences'",
            Params::none(),
        )
        .await?;
    if first_i64(&tables) == 0 {
        return Ok(None);
    }
    conflicting(tx, fence).await
}

/// Another migration's fence (not yet moved) that overlaps `fence`.
async fn conflicting(tx: &Tx<'_>, fence: &Fence<'_>) -> Result<Option<String>> {
    let (sql, params) = match fence.moving {
        MovingRows::Key(key) => (
            format!(
                "SELECT migration_id FROM _shardlite_route_fences f
                 WHERE f.state <> 'moved' AND f.migration_id <> :id AND (
                    (f.kind = 'key' AND f.route_key = :key)
                    OR (f.kind = 'buckets'
                        AND {BUCKET_FUNCTION}(f.keyspace, :key, f.bucket_count) >= f.start_bucket
                        AND {BUCKET_FUNCTION}(f.keyspace, :key, f.bucket_count) < f.end_bucket
                        AND NOT EXISTS (SELECT 1 FROM _shardlite_route_fence_pins p
                                        WHERE p.migration_id = f.migration_id AND p.route_key = :key)))
                 LIMIT 1"
            ),
            Params::named([
                ("id", Value::from(fence.migration_id)),
                ("key", Value::from(key.as_str())),
            ]),
        ),
        MovingRows::Buckets {
            keyspace,
            bucket_count,
            start,
            end,
            ..
        } => (
            format!(
                "SELECT migration_id FROM _shardlite_route_fences f
                 WHERE f.state <> 'moved' AND f.migration_id <> :id AND (
                    (f.kind = 'buckets' AND f.start_bucket < :end AND :start < f.end_bucket)
                    OR (f.kind = 'key'
                        AND {BUCKET_FUNCTION}(:keyspace, f.route_key, :count) >= :start
                        AND {BUCKET_FUNCTION}(:keyspace, f.route_key, :count) < :end))
                 LIMIT 1"
            ),
            Params::named([
                ("id", Value::from(fence.migration_id)),
                ("keyspace", Value::from(keyspace.as_str())),
                ("count", Value::Integer(i64::from(*bucket_count))),
                ("start", Value::Integer(i64::from(*start))),
                ("end", Value::Integer(i64::from(*end))),
            ]),
        ),
    };
    let result = tx.run(&sql, params).await?;
    Ok(result
        .rows
        .first()
        .and_then(|row| row.first())
        .and_then(Value::as_str)
        .map(str::to_owned))
}

/// Drops every fence trigger and creates the ones the remaining fences need (their SQL is the
/// engine's, so that it parses in every SQLite a shard file may meet).
async fn rebuild_triggers(tx: &Tx<'_>) -> Result<()> {
    let existing = tx.run(FENCE_TRIGGERS_QUERY, Params::none()).await?;
    for row in &existing.rows {
        if let Some(name) = row.first().and_then(Value::as_str) {
            tx.run(&format!("DROP TRIGGER IF EXISTS {}", quote_ident(name)), Params::none())
                .await?;
        }
    }
    let targets: Vec<FencedTarget> = tx
        .run(FENCED_TARGETS_QUERY, Params::none())
        .await?
        .rows
        .iter()
        .filter_map(|row| FencedTarget::from_row(row))
        .collect();
    for statement in trigger_statements(&targets) {
        tx.run(&statement, Params::none()).await?;
    }
    Ok(())
}

/// Marks `migration_id`'s fence on `shard` as `moved`: the new map is active. Its triggers are
/// written again, since their message says whether the data has moved; the engine removes the
/// moved record after its grace period. No fence: nothing happens.
pub(super) async fn mark_moved(shard: &Arc<dyn DataClient>, migration_id: &str) -> Result<()> {
    if !has_fence_tables(shard).await? {
        return Ok(());
    }
    let tx = Tx::begin(shard.as_ref()).await?;
    let outcome = async {
        let changed = tx
            .run(
                "UPDATE _shardlite_route_fences SET state = 'moved', moved_unix_ms = ?2
                 WHERE migration_id = ?1 AND state <> 'moved'",
                Params::Positional(vec![
                    Value::from(migration_id),
                    Value::Integer(crate::engine::unix_ms_now()),
                ]),
            )
            .await?
            .rows_affected;
        if changed > 0 {
            rebuild_triggers(&tx).await?;
        }
        Ok(())
    }
    .await;
    tx.finish(outcome).await
}

/// Removes `migration_id`'s fence from `shard`, and the triggers nothing needs any more.
pub(super) async fn release(shard: &Arc<dyn DataClient>, migration_id: &str) -> Result<()> {
    if !has_fence_tables(shard).await? {
        return Ok(());
    }
    let tx = Tx::begin(shard.as_ref()).await?;
    let outcome = async {
        for table in FENCE_TABLES {
            tx.run(
                &format!("DELETE FROM {table} WHERE migration_id = ?1"),
                Params::from(vec![migration_id]),
            )
            .await?;
        }
        rebuild_triggers(&tx).await?;
        // The last fence gone, its tables go too: the file is as it was before any migration.
        let remaining = tx
            .run("SELECT count(*) FROM _shardlite_route_fences", Params::none())
            .await?;
        if first_i64(&remaining) == 0 {
            for table in FENCE_TABLES {
                tx.run(&format!("DROP TABLE IF EXISTS {table}"), Params::none()).await?;
            }
        }
        Ok(())
    }
    .await;
    tx.finish(outcome).await
}

/// Removes `moved` fences on `shard` that the data now moving back to it would trip over:
/// those of the same key, or of buckets overlapping the range.
pub(super) async fn clear_moved(shard: &Arc<dyn DataClient>, moving: &MovingRows) -> Result<()> {
    if !has_fence_tables(shard).await? {
        return Ok(());
    }
    let (sql, params) = match moving {
        MovingRows::Key(key) => (
            "SELECT migration_id FROM _shardlite_route_fences WHERE state = 'moved' AND kind = 'key' AND route_key = ?1",
            Params::from(vec![key.as_str()]),
        ),
        MovingRows::Buckets { start, end, .. } => (
            "SELECT migration_id FROM _shardlite_route_fences WHERE state = 'moved' AND kind = 'buckets' \
             AND start_bucket < ?2 AND ?1 < end_bucket",
            Params::Positional(vec![Value::Integer(i64::from(*start)), Value::Integer(i64::from(*end))]),
        ),
    };
    let found = shard.execute_read_only_sql(sql, params).await?;
    for row in &found.rows {
        if let Some(id) = row.first().and_then(Value::as_str) {
            release(shard, id).await?;
        }
    }
    Ok(())
}

/// Deletes up to one page of moved rows of `target` from the source, past its own fence (the
/// fence is opened and closed again inside the same transaction, so no other writer sees it
/// open). Returns the rows deleted.
pub(super) async fn delete_page(source: &Arc<dyn DataClient>, migration_id: &str, target: &ItemSql) -> Result<u64> {
    let tx = Tx::begin(source.as_ref()).await?;
    let outcome = async {
        tx.run(
            "UPDATE _shardlite_route_fences SET state = 'open' WHERE migration_id = ?1",
            Params::from(vec![migration_id]),
        )
        .await?;
        let (sql, params) = target.delete_page();
        let deleted = tx.run(&sql, params).await?.rows_affected;
        tx.run(
            "UPDATE _shardlite_route_fences SET state = 'moved' WHERE migration_id = ?1",
            Params::from(vec![migration_id]),
        )
        .await?;
        Ok(deleted)
    }
    .await;
    tx.finish(outcome).await
}

/// The migrations holding a fence on `shard`, with each fence's state.
pub async fn fences_on(shard: &Arc<dyn DataClient>) -> Result<Vec<(String, String)>> {
    if !has_fence_tables(shard).await? {
        return Ok(Vec::new());
    }
    let result = shard
        .execute_read_only_sql(
            "SELECT migration_id, state FROM _shardlite_route_fences ORDER BY migration_id",
            Params::none(),
        )
        .await?;
    Ok(result
        .rows
        .iter()
        .map(|row| {
            let text = |i: usize| row.get(i).and_then(Value::as_str).unwrap_or_default().to_owned();
            (text(0), text(1))
        })
        .collect())
}

async fn has_fence_tables(shard: &Arc<dyn DataClient>) -> Result<bool> {
    let result = shard
        .execute_read_only_sql(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_shardlite_route_fences'",
            Params::none(),
        )
        .await?;
    Ok(first_i64(&result) > 0)
}

pub(super) fn first_i64(result: &crate::data::SqlResult) -> i64 {
    result
        .rows
        .first()
        .and_then(|row| row.first())
        .and_then(Value::as_i64)
        .unwrap_or(0)
}
