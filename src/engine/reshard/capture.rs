//! Change capture for online data migrations: triggers in the source shard's own file that
//! record, in the internal table [`CHANGES_TABLE`], the primary key of every moving row that is
//! inserted, updated or deleted, by whichever process writes it (as fences are enforced by
//! every writer, see [`fence`](super::fence)).
//!
//! A capture trigger recognises a moving row exactly as a fence trigger does (the route value of
//! `NEW` or `OLD`, scoped to its collection), compared with the migration's route key or bucket
//! range written into the trigger as literals. A bucket range's triggers leave its pinned keys
//! in: capturing more rows than move is harmless, since replay reads each captured row back from
//! the source and applies it only if it moves. An update records the old key and, when the
//! key itself changed, the new one; so a write that moves a row's route value into or out of the
//! moving set is captured too.
//!
//! The triggers are `AFTER` triggers whose bodies are one plain `INSERT` each: they parse in
//! SQLite 3.31 and later (no `RETURNING`, no upsert, no expression in `RAISE`). A key range's
//! triggers call no function of shardlite's; a bucket range's call
//! [`BUCKET_FUNCTION`](super::fence::BUCKET_FUNCTION), so (as with a bucket-range fence) a plain
//! tool can read such a table but not write to it while the capture is on.
//!
//! Client SQL may not write internal tables, not even through its own triggers; the authorizer
//! lets only shardlite's own (internal) triggers insert into [`CHANGES_TABLE`].

use super::fence::BUCKET_FUNCTION;
use super::fence::row_route;
use super::moving::MovingRows;
use crate::sql::{CAPTURE_TRIGGER_PREFIX, quote_ident, sql_literal};

pub(crate) use crate::sql::CHANGES_TABLE;

/// Creates [`CHANGES_TABLE`]. `row_key` has no declared type, so a key keeps its storage class.
/// Without `AUTOINCREMENT` (which would leave `sqlite_sequence`
/// behind in the file): a new change takes the largest `seq` plus one, and a running migration's
/// own changes are never deleted, so its changes always number after its replay position.
pub(crate) const CHANGES_SCHEMA: &str = "CREATE TABLE IF NOT EXISTS _shardlite_captured_changes (
    seq INTEGER PRIMARY KEY,
    migration_id TEXT NOT NULL,
    item INTEGER NOT NULL,
    row_key
)";

/// One table or collection a capture covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CapturedItem {
    /// The table (the internal collections table for a collection).
    pub table: String,
    /// The primary key column (`key` for a collection).
    pub key_column: String,
    /// The route column, or the route property of a collection.
    pub route_column: String,
    /// The collection (`""` for a table).
    pub collection: String,
}

/// The names of the three triggers of `migration_id`'s capture of item `index`.
pub(crate) fn capture_trigger_names(migration_id: &str, index: usize) -> [String; 3] {
    ["insert", "update", "delete"].map(|event| format!("{CAPTURE_TRIGGER_PREFIX}{migration_id}_{index}_{event}"))
}

/// Whether the row `alias` of `item` is one `route` captures, as an SQL condition.
fn captured(alias: &str, item: &CapturedItem, route: &MovingRows) -> String {
    let (value, scope) = row_route(alias, &item.route_column, &item.collection);
    let matches = match route {
        MovingRows::Key(key) => format!("{value} = {}", sql_literal(key)),
        MovingRows::Buckets {
            keyspace,
            bucket_count,
            start,
            end,
            ..
        } => {
            let bucket = format!("{BUCKET_FUNCTION}({}, {value}, {bucket_count})", sql_literal(keyspace));
            format!("{bucket} >= {start} AND {bucket} < {end}")
        }
    };
    format!("({matches}{scope})")
}

/// The `CREATE TRIGGER` statements of `migration_id`'s capture of item `index`: one `AFTER`
/// trigger per event, each recording the keys of the moving rows it touches.
pub(crate) fn capture_trigger_statements(
    migration_id: &str,
    index: usize,
    item: &CapturedItem,
    route: &MovingRows,
) -> [String; 3] {
    let key = quote_ident(&item.key_column);
    let record = |alias: &str| {
        format!(
            "INSERT INTO {CHANGES_TABLE} (migration_id, item, row_key) VALUES ({}, {index}, {alias}.{key}); ",
            sql_literal(migration_id)
        )
    };
    let [insert, update, delete] = capture_trigger_names(migration_id, index);
    let table = quote_ident(&item.table);
    let (new, old) = (captured("NEW", item, route), captured("OLD", item, route));
    [
        format!(
            "CREATE TRIGGER {} AFTER INSERT ON {table} WHEN {new} BEGIN {}END",
            quote_ident(&insert),
            record("NEW")
        ),
        format!(
            "CREATE TRIGGER {} AFTER UPDATE ON {table} WHEN {old} OR {new} BEGIN {}INSERT INTO {CHANGES_TABLE} \
             (migration_id, item, row_key) SELECT {}, {index}, NEW.{key} WHERE NEW.{key} IS NOT OLD.{key}; END",
            quote_ident(&update),
            record("OLD"),
            sql_literal(migration_id)
        ),
        format!(
            "CREATE TRIGGER {} AFTER DELETE ON {table} WHEN {old} BEGIN {}END",
            quote_ident(&delete),
            record("OLD")
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::COLLECTIONS_TABLE;
    use rusqlite::Connection;

    fn changes(conn: &Connection) -> Vec<(i64, String)> {
        let mut select = conn
            .prepare("SELECT item, row_key FROM _shardlite_captured_changes ORDER BY seq")
            .expect("prepare");
        select
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .expect("query")
            .map(|row| row.expect("row"))
            .collect()
    }

    #[test]
    fn triggers_record_moving_rows_including_those_that_enter_or_leave_the_key() {
        let conn = Connection::open_in_memory().expect("memory db");
        super::super::fence::register_functions(&conn).expect("functions");
        conn.execute_batch(CHANGES_SCHEMA).expect("changes");
        conn.execute_batch("CREATE TABLE t (id TEXT PRIMARY KEY, k TEXT, n INTEGER)")
            .expect("table");
        let item = CapturedItem {
            table: "t".into(),
            key_column: "id".into(),
            route_column: "k".into(),
            collection: String::new(),
        };
        for statement in capture_trigger_statements("m'1", 2, &item, &MovingRows::Key("it's".into())) {
            assert!(!statement.contains(BUCKET_FUNCTION) && !statement.contains("RETURNING"));
            conn.execute_batch(&statement).expect("trigger");
        }
        conn.execute_batch(
            "INSERT INTO t VALUES ('a', 'it''s', 1), ('b', 'other', 1);
             UPDATE t SET n = 2 WHERE id = 'b';
             UPDATE t SET k = 'it''s' WHERE id = 'b';
             UPDATE t SET id = 'c' WHERE id = 'a';
             UPDATE t SET k = 'gone' WHERE id = 'c';
             DELETE FROM t WHERE id = 'b';",
        )
        .expect("writes");
        let keys: Vec<String> = changes(&conn).into_iter().map(|(_, key)| key).collect();
        assert_eq!(keys, ["a", "b", "a", "c", "c", "b"]);
        assert!(changes(&conn).iter().all(|(item, _)| *item == 2));
    }

    #[test]
    fn bucket_triggers_scope_collections_and_use_the_bucket_function() {
        let item = CapturedItem {
            table: COLLECTIONS_TABLE.into(),
            key_column: "key".into(),
            route_column: "tenant".into(),
            collection: "profiles".into(),
        };
        let route = MovingRows::Buckets {
            keyspace: "ks".into(),
            bucket_count: 16,
            start: 0,
            end: 8,
            pins: Vec::new(),
        };
        let [insert, ..] = capture_trigger_statements("m", 0, &item, &route);
        assert!(insert.contains("shardlite_bucket('ks', json_extract(NEW.document, '$.\"tenant\"'), 16) >= 0"));
        assert!(insert.contains("NEW.collection = 'profiles'"));
    }
}
