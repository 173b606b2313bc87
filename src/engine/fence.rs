//! What the engine knows of migration fences: the SQL function fence triggers use to find a
//! row's bucket, and the message those triggers raise, turned back into
//! [`Error::RouteFenced`].
//!
//! The fences themselves are triggers and rows that a migration writes into a shard file (see
//! the `migrate` module). They live in the file, so every process that writes to it honours
//! them, and SQLite re-reads them only when the schema cookie (its version number) changes: a
//! shard with no fence runs no extra statement per write.

use rusqlite::Connection;
use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::types::ValueRef;

use super::sqlite_error::sql_error;
use crate::error::{Error, Result};
use crate::routing::{bucket_for_token, route_token};

/// The start of the message a fence trigger raises; the fields that follow are separated by
/// [`FENCE_FIELD_SEPARATOR`]: moved (`0`/`1`), migration id, destination, table, route value.
pub const FENCE_MESSAGE_PREFIX: &str = "shardlite route_fenced";

/// The separator between the fields of a fence message (ASCII unit separator, `char(31)`).
pub const FENCE_FIELD_SEPARATOR: char = '\u{1f}';

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

/// The fence error a trigger's message describes, if it is one.
pub(crate) fn fenced_error(message: &str) -> Option<Error> {
    let rest = message
        .strip_prefix(FENCE_MESSAGE_PREFIX)?
        .strip_prefix(FENCE_FIELD_SEPARATOR)?;
    let mut fields = rest.splitn(5, FENCE_FIELD_SEPARATOR);
    let moved = fields.next()? == "1";
    let migration_id = fields.next()?.to_owned();
    let destination = fields.next()?.to_owned();
    let table = fields.next()?.to_owned();
    let route_value = fields.next()?.to_owned();
    Some(Error::from(crate::error::RouteFenced {
        table,
        route_value,
        migration_id,
        destination,
        moved,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

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
