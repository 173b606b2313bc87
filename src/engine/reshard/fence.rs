//! What the engine knows of migration fences: the tables and triggers a fence is made of, the SQL
//! function bucket fences use to find a row's bucket, and the message those triggers raise,
//! turned back into [`Error::RouteFenced`](crate::Error::RouteFenced).
//!
//! A migration writes its fence into the source shard's own file (see the `migrate` module), so
//! every process that writes to the file honours it, and SQLite re-reads the triggers only when
//! the schema cookie (its version number) changes: a shard with no fence runs no extra
//! statement per write.
//!
//! Shard files stay ordinary SQLite files, readable by SQLite 3.31 and later (Debian's
//! `sqlite3`, Python's `sqlite3` module, backup tools). An older SQLite parses every trigger of
//! a file when it opens it, so the triggers use only what such a reader parses: each raises a
//! string literal (`RAISE(ABORT, expression)` needs SQLite 3.47), so there is one trigger per
//! fence, table and event, its message naming the fence. An exact-key fence's triggers call no
//! function of shardlite's, so a plain tool can write every row that did not move; a bucket-range
//! fence's triggers call [`BUCKET_FUNCTION`], which only shardlite registers, so while one is on
//! a table a plain tool can read that table but not write to it. Moved records are removed after
//! [`EngineConfig::moved_record_grace`](crate::engine::EngineConfig::moved_record_grace) (see
//! `fence_upkeep`).

use rusqlite::Connection;
use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::types::ValueRef;

use super::moving::MovingRows;
use crate::data::Value;
use crate::engine::sqlite_error::{FENCE_FIELD_SEPARATOR, FENCE_MESSAGE_PREFIX, sql_error};
use crate::error::Result;
use crate::routing::{bucket_for_token, route_token};
use crate::sql::{FENCE_TRIGGER_PREFIX, quote_ident, sql_literal};

pub(crate) use crate::sql::FENCES_TABLE;

/// The fence tables: one row per migration (`moved_unix_ms` is when its fence became a moved
/// record), the pins a bucket-range fence leaves out, and the tables and collections it covers.
pub(crate) const FENCE_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS _shardlite_route_fences (
    migration_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('key', 'buckets')),
    keyspace TEXT NOT NULL,
    route_key TEXT,
    bucket_count INTEGER,
    start_bucket INTEGER,
    end_bucket INTEGER,
    destination TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('fenced', 'moved', 'open')),
    created_utc TEXT NOT NULL,
    moved_unix_ms INTEGER
);
CREATE TABLE IF NOT EXISTS _shardlite_route_fence_pins (
    migration_id TEXT NOT NULL,
    route_key TEXT NOT NULL,
    PRIMARY KEY (migration_id, route_key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _shardlite_route_fence_targets (
    migration_id TEXT NOT NULL,
    table_name TEXT NOT NULL,
    route_column TEXT NOT NULL,
    collection TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (migration_id, table_name, route_column, collection)
) WITHOUT ROWID;";

/// The fence tables, in the order they can be emptied or dropped.
pub(crate) const FENCE_TABLES: [&str; 3] = [
    "_shardlite_route_fence_targets",
    "_shardlite_route_fence_pins",
    FENCES_TABLE,
];

/// The fence triggers in a file.
pub(crate) const FENCE_TRIGGERS_QUERY: &str =
    "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name GLOB '_shardlite_fence_*' ORDER BY name";

/// Every table or collection a fence covers, one row each, read by [`FencedTarget::from_row`].
pub(crate) const FENCED_TARGETS_QUERY: &str = "SELECT f.migration_id, f.kind, f.route_key, f.start_bucket, \
     f.end_bucket, f.destination, f.state, g.table_name, g.route_column, g.collection, f.keyspace, f.bucket_count \
     FROM _shardlite_route_fences f JOIN _shardlite_route_fence_targets g ON g.migration_id = f.migration_id \
     ORDER BY f.migration_id, g.table_name, g.route_column, g.collection";

/// One table or collection one fence covers: a row of [`FENCED_TARGETS_QUERY`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FencedTarget {
    pub migration_id: String,
    /// What the fence holds back.
    pub route: MovingRows,
    pub destination: String,
    /// Whether the fence is a moved record (its data now lives on `destination`).
    pub moved: bool,
    pub table: String,
    /// The route column, or the route property of a collection.
    pub route_column: String,
    /// The collection (`""` for a table).
    pub collection: String,
}

impl FencedTarget {
    /// Reads a row of [`FENCED_TARGETS_QUERY`]; `None` for a row that is not one.
    pub(crate) fn from_row(row: &[Value]) -> Option<Self> {
        let text = |i: usize| row.get(i).and_then(Value::as_str).map(str::to_owned);
        let bucket = |i: usize| row.get(i)?.as_i64().and_then(|n| u32::try_from(n).ok());
        let route = match text(1)?.as_str() {
            "key" => MovingRows::Key(text(2)?),
            "buckets" => MovingRows::Buckets {
                keyspace: text(10)?,
                bucket_count: bucket(11)?,
                start: bucket(3)?,
                end: bucket(4)?,
                pins: Vec::new(),
            },
            _ => return None,
        };
        Some(Self {
            migration_id: text(0)?,
            route,
            destination: text(5)?,
            moved: text(6)? == "moved",
            table: text(7)?,
            route_column: text(8)?,
            collection: text(9)?,
        })
    }

    /// The message this fence's triggers raise, as an SQL string literal: fixed text, because a
    /// trigger that raises an expression does not parse in SQLite before 3.47.
    fn message_literal(&self) -> String {
        let label = if self.collection.is_empty() {
            format!("table '{}'", self.table)
        } else {
            format!("collection '{}'", self.collection)
        };
        let route = self.route.describe();
        let sep = FENCE_FIELD_SEPARATOR;
        sql_literal(&format!(
            "{FENCE_MESSAGE_PREFIX}{sep}{}{sep}{}{sep}{}{sep}{label}{sep}{route}",
            u8::from(self.moved),
            self.migration_id,
            self.destination,
        ))
    }

    /// One trigger statement: raises the fence's message when the row `alias` (`NEW` or `OLD`)
    /// has a fenced route value. The fence's row is read again, so a fence opened inside a
    /// transaction (to delete moved rows) lets that transaction through.
    fn check_statement(&self, alias: &str) -> String {
        let (value, scope) = row_route(alias, &self.route_column, &self.collection);
        let matches = match self.route {
            MovingRows::Key(_) => format!("f.route_key = {value}"),
            MovingRows::Buckets { .. } => format!(
                "{BUCKET_FUNCTION}(f.keyspace, {value}, f.bucket_count) >= f.start_bucket \
                 AND {BUCKET_FUNCTION}(f.keyspace, {value}, f.bucket_count) < f.end_bucket \
                 AND NOT EXISTS (SELECT 1 FROM _shardlite_route_fence_pins p WHERE p.migration_id = f.migration_id \
                 AND p.route_key = trim(CAST({value} AS TEXT)))"
            ),
        };
        format!(
            "SELECT RAISE(ABORT, {message}) FROM {FENCES_TABLE} f WHERE f.migration_id = {id} \
             AND f.state IN ('fenced', 'moved'){scope} AND {matches}; ",
            message = self.message_literal(),
            id = sql_literal(&self.migration_id),
        )
    }
}

/// The route value of the row `alias` (`NEW` or `OLD`) in a trigger of a manifest item, and
/// the clause (`""` for a table, else ` AND alias.collection = '...'`) that scopes the row to
/// its collection: how fences and change capture both recognise a moving row.
pub(crate) fn row_route(alias: &str, route_column: &str, collection: &str) -> (String, String) {
    if collection.is_empty() {
        (format!("{alias}.{}", quote_ident(route_column)), String::new())
    } else {
        (
            format!(
                "json_extract({alias}.document, {})",
                sql_literal(&property_path(route_column))
            ),
            format!(" AND {alias}.collection = {}", sql_literal(collection)),
        )
    }
}

/// The JSON path of a top-level property (migration manifests refuse names with `"` or `\`).
pub(crate) fn property_path(property: &str) -> String {
    format!("$.\"{property}\"")
}

/// The `CREATE TRIGGER` statements for `targets` (rows of [`FENCED_TARGETS_QUERY`], in its
/// order): for each fence and table, one `BEFORE` trigger per event.
pub(crate) fn trigger_statements(targets: &[FencedTarget]) -> Vec<String> {
    let mut statements = Vec::new();
    let groups = targets.chunk_by(|a, b| a.migration_id == b.migration_id && a.table == b.table);
    for (index, group) in groups.enumerate() {
        for (event, aliases) in [
            ("INSERT", &["NEW"][..]),
            ("UPDATE", &["OLD", "NEW"][..]),
            ("DELETE", &["OLD"][..]),
        ] {
            let body: String = group
                .iter()
                .flat_map(|target| aliases.iter().map(|alias| target.check_statement(alias)))
                .collect();
            statements.push(format!(
                "CREATE TRIGGER {} BEFORE {event} ON {} BEGIN {body}END",
                quote_ident(&format!("{FENCE_TRIGGER_PREFIX}{index}_{}", event.to_ascii_lowercase())),
                quote_ident(&group[0].table),
            ));
        }
    }
    statements
}

/// The SQL function `shardlite_bucket(keyspace, value, bucket_count)`: the virtual bucket of a
/// route value, or NULL for NULL, blob or blank values.
pub const BUCKET_FUNCTION: &str = "shardlite_bucket";

/// The route text of a stored value, as migrations compare it: text trimmed, integers and
/// floats in decimal; NULL, blobs and blank text have none.
pub fn route_text_of(value: ValueRef<'_>) -> Option<String> {
    let text = match value {
        ValueRef::Text(bytes) => String::from_utf8_lossy(bytes).trim().to_owned(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Null | ValueRef::Blob(_) => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// Registers the engine's SQL functions on `conn`.
pub(crate) fn register_functions(conn: &Connection) -> Result<()> {
    conn.create_scalar_function(
        BUCKET_FUNCTION,
        3,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC | FunctionFlags::SQLITE_INNOCUOUS,
        bucket_of,
    )
    .map_err(sql_error)
}

fn bucket_of(ctx: &Context<'_>) -> rusqlite::Result<Option<i64>> {
    let keyspace = match ctx.get_raw(0) {
        ValueRef::Text(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        _ => return Ok(None),
    };
    let Some(key) = route_text_of(ctx.get_raw(1)) else {
        return Ok(None);
    };
    let Some(count) = ctx
        .get_raw(2)
        .as_i64()
        .ok()
        .and_then(|c| u32::try_from(c).ok())
        .filter(|c| *c > 0)
    else {
        return Ok(None);
    };
    Ok(route_token(&keyspace, &key)
        .ok()
        .map(|token| i64::from(bucket_for_token(token.0, count))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn bucket_function_matches_routing() {
        let conn = Connection::open_in_memory().expect("memory db");
        register_functions(&conn).expect("register");
        let bucket: i64 = conn
            .query_row("SELECT shardlite_bucket('orders_by_month', ' 2026-06 ', 16)", [], |r| {
                r.get(0)
            })
            .expect("bucket");
        assert_eq!(bucket, 15);
        let none: Option<i64> = conn
            .query_row("SELECT shardlite_bucket('k', '  ', 16)", [], |r| r.get(0))
            .expect("blank");
        assert_eq!(none, None);
    }

    fn target(route: MovingRows, moved: bool) -> FencedTarget {
        FencedTarget {
            migration_id: "m1".into(),
            route,
            destination: "s1".into(),
            moved,
            table: "t".into(),
            route_column: "k".into(),
            collection: String::new(),
        }
    }

    #[test]
    fn trigger_statements_raise_fixed_text_that_maps_back_to_the_fence() {
        let conn = Connection::open_in_memory().expect("memory db");
        register_functions(&conn).expect("register");
        conn.execute_batch(FENCE_SCHEMA).expect("fence tables");
        conn.execute_batch(
            "CREATE TABLE t (k TEXT);
             INSERT INTO _shardlite_route_fences (migration_id, kind, keyspace, route_key, destination, state, created_utc)
             VALUES ('m1', 'key', '', 'it''s', 's1', 'moved', '');",
        )
        .expect("a fence");
        let key = target(MovingRows::Key("it's".into()), true);
        let statements = trigger_statements(std::slice::from_ref(&key));
        assert_eq!(statements.len(), 3);
        for statement in &statements {
            // What SQLite before 3.47 cannot parse, and what a plain tool lacks.
            assert!(
                !statement.contains("||") && !statement.contains(BUCKET_FUNCTION),
                "{statement}"
            );
            conn.execute_batch(statement).expect("trigger");
        }
        conn.execute("INSERT INTO t VALUES ('other')", []).expect("another key");
        let err = sql_error(conn.execute("INSERT INTO t VALUES ('it''s')", []).expect_err("fenced"));
        match err {
            Error::RouteFenced(fenced) => assert_eq!(
                (
                    fenced.table.as_str(),
                    fenced.route_value.as_str(),
                    fenced.migration_id.as_str(),
                    fenced.destination.as_str(),
                    fenced.moved
                ),
                ("table 't'", "it's", "m1", "s1", true)
            ),
            other => panic!("expected a fence error, got {other:?}"),
        }
        let buckets = trigger_statements(&[target(
            MovingRows::Buckets {
                keyspace: "k".into(),
                bucket_count: 16,
                start: 0,
                end: 8,
                pins: Vec::new(),
            },
            false,
        )]);
        assert!(
            buckets
                .iter()
                .all(|s| s.contains(BUCKET_FUNCTION) && s.contains("buckets [0, 8)"))
        );
    }

    #[test]
    fn trigger_messages_become_fence_errors() {
        let conn = Connection::open_in_memory().expect("memory db");
        conn.execute_batch(
            "CREATE TABLE t (k TEXT);
             CREATE TRIGGER f BEFORE INSERT ON t BEGIN
               SELECT RAISE(ABORT, 'shardlite route_fenced' || char(31) || '0' || char(31) || 'm1' || char(31)
                   || 's1' || char(31) || 'table ''t''' || char(31) || NEW.k);
             END;",
        )
        .expect("schema");
        let err = sql_error(conn.execute("INSERT INTO t VALUES ('a|b')", []).expect_err("fenced"));
        match err {
            Error::RouteFenced(fenced) => {
                assert_eq!(fenced.route_value, "a|b");
                assert_eq!(fenced.migration_id, "m1");
                assert!(!fenced.moved);
            }
            other => panic!("expected a fence error, got {other:?}"),
        }
    }
}
