//! One table or collection of a migration, as SQL: the page query, the upsert, the delete and
//! the count, all filtered to the rows that move, and the checksum over those rows.
//!
//! Identifiers from the manifest are always quoted; values are always bound.

use crate::data::{Params, Value};
use crate::engine::reshard::capture::CapturedItem;
use crate::engine::reshard::checksum::PageDigest;
use crate::engine::reshard::copy::{COPY_SOURCE_SCHEMA, CopyRecord, PagedCopy, PagedQuery};
use crate::engine::reshard::fence::BUCKET_FUNCTION;
use crate::engine::reshard::moving::MovingRows;
use crate::error::Result;

/// SQLite's limit on bound values in one statement (`SQLITE_MAX_VARIABLE_NUMBER`).
const MAX_BOUND_VALUES: usize = 32_766;

pub(super) use crate::sql::COLLECTIONS_TABLE;

/// The SQL of one manifest item.
#[derive(Debug, Clone)]
pub(super) struct ItemSql {
    /// The table or collection name, for receipts and messages.
    pub(super) name: String,
    pub(super) collection: bool,
    /// The quoted table the rows live in.
    from: String,
    /// Quoted columns, in the order rows are read and written.
    columns: Vec<String>,
    /// Index of the primary key among `columns`.
    pub(super) key_index: usize,
    key: String,
    /// The conflict target of the upsert.
    conflict: String,
    /// The SQL expression of a row's route value.
    route: String,
    /// The same expression for the row an upsert would overwrite, and for the incoming row.
    route_existing: String,
    route_incoming: String,
    /// The collection name, bound as `:collection`.
    collection_name: Option<String>,
    /// Which rows move.
    moving: MovingRows,
    /// The pins of a bucket range as a JSON array, bound as `:pins`.
    pins_json: String,
    /// Rows per page.
    pub(super) page_size: usize,
    /// The table, key and route as change capture names them (unquoted).
    pub(super) captured: CapturedItem,
}

/// The pins of a bucket range as the JSON array the page queries bind.
fn pins_json(moving: &MovingRows) -> String {
    serde_json::Value::from(moving.pins().to_vec()).to_string()
}

pub(super) use crate::engine::reshard::fence::property_path;
pub(super) use crate::sql::{quote_ident, sql_literal};

impl ItemSql {
    /// A table whose columns are `column_names` (in schema order).
    pub(super) fn table(
        name: &str,
        column_names: &[String],
        key_column: &str,
        route_column: &str,
        moving: MovingRows,
        page_size: usize,
    ) -> Option<Self> {
        let key_index = column_names.iter().position(|c| c.eq_ignore_ascii_case(key_column))?;
        let route = column_names.iter().find(|c| c.eq_ignore_ascii_case(route_column))?;
        let columns: Vec<String> = column_names.iter().map(|c| quote_ident(c)).collect();
        let key = columns[key_index].clone();
        let from = quote_ident(name);
        let captured = CapturedItem {
            table: name.to_owned(),
            key_column: column_names[key_index].clone(),
            route_column: route.clone(),
            collection: String::new(),
        };
        Some(Self {
            captured,
            route_existing: format!("{from}.{}", quote_ident(route)),
            route_incoming: format!("excluded.{}", quote_ident(route)),
            name: name.to_owned(),
            collection: false,
            from,
            page_size: page_size.min(MAX_BOUND_VALUES / columns.len().max(1)).max(1),
            conflict: key.clone(),
            key,
            key_index,
            columns,
            route: quote_ident(route),
            collection_name: None,
            pins_json: pins_json(&moving),
            moving,
        })
    }

    /// A collection whose documents carry their route key in `property`.
    pub(super) fn collection(name: &str, property: &str, moving: MovingRows, page_size: usize) -> Self {
        let path = sql_literal(&property_path(property));
        Self {
            captured: CapturedItem {
                table: COLLECTIONS_TABLE.to_owned(),
                key_column: "key".to_owned(),
                route_column: property.to_owned(),
                collection: name.to_owned(),
            },
            route_existing: format!("json_extract({COLLECTIONS_TABLE}.document, {path})"),
            route_incoming: format!("json_extract(excluded.document, {path})"),
            name: name.to_owned(),
            collection: true,
            from: COLLECTIONS_TABLE.to_owned(),
            columns: vec!["collection".into(), "key".into(), "document".into()],
            key_index: 1,
            key: "key".into(),
            conflict: "collection, key".into(),
            route: format!("json_extract(document, {path})"),
            collection_name: Some(name.to_owned()),
            pins_json: pins_json(&moving),
            moving,
            page_size: page_size.min(MAX_BOUND_VALUES / 3),
        }
    }

    /// `name` as messages show it: `table 'orders'` or `collection 'profiles'`.
    pub(super) fn label(&self) -> String {
        if self.collection {
            format!("collection '{}'", self.name)
        } else {
            format!("table '{}'", self.name)
        }
    }

    /// The WHERE clause that selects moving rows, and its parameters.
    fn filter(&self) -> (String, Vec<(&'static str, Value)>) {
        let mut clauses = Vec::new();
        let mut params: Vec<(&'static str, Value)> = Vec::new();
        if let Some(collection) = &self.collection_name {
            clauses.push("collection = :collection".to_owned());
            params.push(("collection", Value::from(collection.as_str())));
        }
        match &self.moving {
            MovingRows::Key(key) => {
                clauses.push(format!("{} = :route_key", self.route));
                params.push(("route_key", Value::from(key.as_str())));
            }
            MovingRows::Buckets {
                keyspace,
                bucket_count,
                start,
                end,
                ..
            } => {
                let bucket = format!("{BUCKET_FUNCTION}(:keyspace, {}, :bucket_count)", self.route);
                clauses.push(format!("{bucket} >= :start_bucket AND {bucket} < :end_bucket"));
                clauses.push(format!(
                    "trim(CAST({} AS TEXT)) NOT IN (SELECT value FROM json_each(:pins))",
                    self.route
                ));
                params.extend([
                    ("keyspace", Value::from(keyspace.as_str())),
                    ("bucket_count", Value::Integer(i64::from(*bucket_count))),
                    ("start_bucket", Value::Integer(i64::from(*start))),
                    ("end_bucket", Value::Integer(i64::from(*end))),
                    ("pins", Value::from(self.pins_json.as_str())),
                ]);
            }
        }
        (clauses.join(" AND "), params)
    }

    /// The page query's text: moving rows of the table in `schema` (the connection's own
    /// file when `None`), after `:after` when `after`, in key order, `:limit` of them.
    fn select_sql(&self, schema: Option<&str>, after: bool) -> String {
        let (filter, _) = self.filter();
        let from = match schema {
            Some(schema) => format!("{}.{}", quote_ident(schema), self.from),
            None => self.from.clone(),
        };
        let mut sql = format!("SELECT {} FROM {from} WHERE {filter}", self.columns.join(", "));
        if after {
            sql.push_str(&format!(" AND {} > :after", self.key));
        }
        sql.push_str(&format!(" ORDER BY {} LIMIT :limit", self.key));
        sql
    }

    /// The next page of moving rows after `after` (from the start when `None`), in key order.
    pub(super) fn page_query(&self, after: Option<&Value>) -> (String, Params) {
        let (_, mut params) = self.filter();
        let sql = self.select_sql(None, after.is_some());
        if let Some(after) = after {
            params.push(("after", after.clone()));
        }
        params.push((
            "limit",
            Value::Integer(i64::try_from(self.page_size).unwrap_or(i64::MAX)),
        ));
        (sql, Params::named(params))
    }

    /// The pages of moving rows for the engine to read and checksum inside SQLite: the same
    /// pages, rows and columns as [`page_query`](Self::page_query).
    pub(super) fn paged_query(&self) -> PagedQuery {
        PagedQuery {
            select: [self.select_sql(None, false), self.select_sql(None, true)],
            params: self.filter().1,
            key_index: self.key_index,
            page_size: self.page_size,
            label: self.label(),
        }
    }

    /// The copy of moving rows from the source's file into the destination's inside SQLite:
    /// each page read as [`paged_query`](Self::paged_query) reads it, upserted by `INSERT ...
    /// SELECT` of that same page from the source attached to the destination, with
    /// [`upsert`](Self::upsert)'s rule for keys that collide with another route value's row.
    /// Each page's transaction records the cursor after it under `migration_id` and this
    /// item's [`label`](Self::label).
    pub(super) fn paged_copy(&self, migration_id: &str) -> PagedCopy {
        let insert = |after: bool| {
            format!(
                "INSERT INTO main.{} ({}) {} ON CONFLICT ({}) {}",
                self.from,
                self.columns.join(", "),
                self.select_sql(Some(COPY_SOURCE_SCHEMA), after),
                self.conflict,
                self.conflict_action()
            )
        };
        PagedCopy {
            query: self.paged_query(),
            insert: [insert(false), insert(true)],
            record: CopyRecord {
                migration_id: migration_id.to_owned(),
                item: self.label(),
            },
        }
    }

    /// How many rows move.
    pub(super) fn count_query(&self) -> (String, Params) {
        let (filter, params) = self.filter();
        (
            format!("SELECT count(*) FROM {} WHERE {filter}", self.from),
            Params::named(params),
        )
    }

    /// SQLite's plan for the first page query.
    pub(super) fn explain_query(&self) -> (String, Params) {
        let (sql, params) = self.page_query(None);
        (format!("EXPLAIN QUERY PLAN {sql}"), params)
    }

    /// One statement that inserts `rows`, or updates the rows with the same key (one implicit
    /// transaction: a page lands whole or not at all). A destination row with the same key but
    /// another route value is left alone: the key collides with another key's row, and
    /// verification reports the rows that did not land rather than overwrite someone else's.
    pub(super) fn upsert(&self, rows: Vec<Vec<Value>>) -> (String, Params) {
        let placeholders = format!("({})", vec!["?"; self.columns.len()].join(", "));
        let values = vec![placeholders; rows.len()].join(", ");
        let sql = format!(
            "INSERT INTO {} ({}) VALUES {values} ON CONFLICT ({}) {}",
            self.from,
            self.columns.join(", "),
            self.conflict,
            self.conflict_action()
        );
        (sql, Params::Positional(rows.into_iter().flatten().collect()))
    }

    /// What an upsert does with a row whose key is already there: update it when its route
    /// value is the incoming row's, else nothing.
    fn conflict_action(&self) -> String {
        let updates: Vec<String> = self
            .columns
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != self.key_index && !(self.collection && *i == 0))
            .map(|(_, c)| format!("{c} = excluded.{c}"))
            .collect();
        if updates.is_empty() {
            "DO NOTHING".to_owned()
        } else {
            format!(
                "DO UPDATE SET {} WHERE {} IS {}",
                updates.join(", "),
                self.route_existing,
                self.route_incoming
            )
        }
    }

    /// The moving rows among those whose key is one of `keys` (at most a page of them), as the
    /// source holds them now: replay of captured changes reads them back.
    pub(super) fn rows_for_keys(&self, keys: &[Value]) -> (String, Params) {
        let (filter, params) = self.filter();
        let (list, keys) = self.key_list(keys);
        let sql = format!(
            "SELECT {} FROM {} WHERE {filter} AND {} IN ({list}) ORDER BY {}",
            self.columns.join(", "),
            self.from,
            self.key,
            self.key
        );
        (
            sql,
            Params::named(params.into_iter().map(|(n, v)| (n.to_owned(), v)).chain(keys)),
        )
    }

    /// Deletes the moving rows whose key is one of `keys` (rows of other route values with the
    /// same key are left alone): replay clears them before writing the source's state back.
    pub(super) fn delete_keys(&self, keys: &[Value]) -> (String, Params) {
        let (filter, params) = self.filter();
        let (list, keys) = self.key_list(keys);
        let sql = format!("DELETE FROM {} WHERE {filter} AND {} IN ({list})", self.from, self.key);
        (
            sql,
            Params::named(params.into_iter().map(|(n, v)| (n.to_owned(), v)).chain(keys)),
        )
    }

    /// `:k0, :k1, ...` and their values.
    fn key_list(&self, keys: &[Value]) -> (String, Vec<(String, Value)>) {
        let names: Vec<String> = (0..keys.len()).map(|i| format!("k{i}")).collect();
        let list = names.iter().map(|n| format!(":{n}")).collect::<Vec<_>>().join(", ");
        (list, names.into_iter().zip(keys.iter().cloned()).collect())
    }

    /// Deletes up to one page of moving rows.
    pub(super) fn delete_page(&self) -> (String, Params) {
        let (filter, mut params) = self.filter();
        let scope = if self.collection {
            "collection = :collection AND "
        } else {
            ""
        };
        let sql = format!(
            "DELETE FROM {from} WHERE {scope}{key} IN (SELECT {key} FROM {from} WHERE {filter} LIMIT :limit)",
            from = self.from,
            key = self.key
        );
        params.push((
            "limit",
            Value::Integer(i64::try_from(self.page_size).unwrap_or(i64::MAX)),
        ));
        (sql, Params::named(params))
    }
}

/// The checksum of a row set read page by page in key order: a SHA-256 chain, each link the
/// hash of the previous link and the page's rows in a canonical encoding (type tag, length,
/// bytes; see [`engine::reshard::checksum`](crate::engine::reshard::checksum)). Both sides read pages of the same
/// size in the same order, so equal row sets give equal chains, and a chain can be resumed
/// from its last link. Pages hashed inside the engine (local shards) and pages read as values
/// through a client (remote shards) give the same links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Checksum([u8; 32]);

impl Checksum {
    pub(super) fn empty() -> Self {
        Self([0; 32])
    }

    /// The checksum whose last link is `link`.
    pub(super) fn from_link(link: [u8; 32]) -> Self {
        Self(link)
    }

    /// The last link.
    pub(super) fn link(&self) -> [u8; 32] {
        self.0
    }

    pub(super) fn from_hex(hex: &str) -> Result<Self> {
        let mut bytes = [0u8; 32];
        if hex.len() != 64 {
            return Err(crate::error::Error::invalid_argument(
                "checkpoint",
                "the running checksum is not 64 hex digits",
            ));
        }
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[i * 2..i * 2 + 2], 16)
                .map_err(|_| crate::error::Error::invalid_argument("checkpoint", "the running checksum is not hex"))?;
        }
        Ok(Self(bytes))
    }

    pub(super) fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Adds one page of rows.
    pub(super) fn add_page(&mut self, rows: &[Vec<Value>]) {
        let mut digest = PageDigest::new(&self.0);
        for row in rows {
            digest.add_row(row);
        }
        self.0 = digest.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_depend_on_every_value_and_round_trip_as_hex() {
        let rows = vec![
            vec![Value::Integer(1), Value::from("a")],
            vec![Value::Integer(2), Value::Null],
        ];
        let mut a = Checksum::empty();
        a.add_page(&rows);
        let mut b = Checksum::empty();
        b.add_page(&[
            vec![Value::Integer(1), Value::from("a")],
            vec![Value::Integer(2), Value::from("")],
        ]);
        assert_ne!(a, b);
        assert_eq!(Checksum::from_hex(&a.to_hex()).expect("hex"), a);
        assert!(Checksum::from_hex("zz").is_err());
    }

    #[test]
    fn identifiers_are_quoted_and_values_bound() {
        let target = ItemSql::table(
            "my \"orders\"",
            &["id".into(), "tenant".into(), "note".into()],
            "ID",
            "tenant",
            MovingRows::Key("x'); DROP TABLE t; --".into()),
            500,
        )
        .expect("columns exist");
        let (sql, params) = target.page_query(Some(&Value::Integer(7)));
        assert_eq!(
            sql,
            "SELECT \"id\", \"tenant\", \"note\" FROM \"my \"\"orders\"\"\" WHERE \"tenant\" = :route_key \
             AND \"id\" > :after ORDER BY \"id\" LIMIT :limit"
        );
        assert!(matches!(params, Params::Named(ref m) if m.len() == 3));
        let (upsert, values) = target.upsert(vec![vec![Value::Integer(1), Value::from("k"), Value::Null]]);
        assert!(upsert.ends_with(
            "ON CONFLICT (\"id\") DO UPDATE SET \"tenant\" = excluded.\"tenant\", \"note\" = excluded.\"note\" \
             WHERE \"my \"\"orders\"\"\".\"tenant\" IS excluded.\"tenant\""
        ));
        assert!(matches!(values, Params::Positional(ref v) if v.len() == 3));
        // The copy inside SQLite reads the same page from the attached source, with the same
        // conflict rule, and binds every value.
        let copy = target.paged_copy("m-1");
        assert_eq!(copy.query.select[1], sql);
        assert_eq!(
            copy.insert[1],
            format!(
                "INSERT INTO main.\"my \"\"orders\"\"\" (\"id\", \"tenant\", \"note\") SELECT \"id\", \"tenant\", \"note\" \
                 FROM \"{COPY_SOURCE_SCHEMA}\".\"my \"\"orders\"\"\" WHERE \"tenant\" = :route_key AND \"id\" > :after \
                 ORDER BY \"id\" LIMIT :limit ON CONFLICT (\"id\") DO UPDATE SET \"tenant\" = excluded.\"tenant\", \
                 \"note\" = excluded.\"note\" WHERE \"my \"\"orders\"\"\".\"tenant\" IS excluded.\"tenant\""
            )
        );
        assert!(!copy.insert[0].contains(":after"));
        assert_eq!(copy.query.params.len(), 1);
        assert_eq!(
            copy.record,
            CopyRecord {
                migration_id: "m-1".into(),
                item: "table 'my \"orders\"'".into()
            }
        );
        assert!(ItemSql::table("t", &["id".into()], "id", "missing", MovingRows::Key("k".into()), 10).is_none());
    }
}
