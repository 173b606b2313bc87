//! Row operations on user tables by primary key: schema, count, browse, get, insert, update,
//! delete; [`Tables`], handed out by [`Database::tables`].

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension};

use super::{count, page_bounds, read_names, total_pages};
use crate::data::{ColumnInfo, Params, Row, RowPage, TableSchema, Value};
use crate::engine::database::Database;
use crate::engine::script::{self, ScriptMode};
use crate::engine::sqlite_error::sql_error;
use crate::engine::value::value_from_ref;
use crate::error::{Error, Result};
use crate::sql::quote_ident;

fn table_schema(conn: &Connection, table: &str) -> Result<TableSchema> {
    let found: Option<(String, String)> = conn
        .prepare_cached(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name = ?1 COLLATE NOCASE \
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_shardlite\\_%' ESCAPE '\\'",
        )
        .map_err(sql_error)?
        .query_row([table], |r| {
            Ok((r.get(0)?, r.get::<_, Option<String>>(1)?.unwrap_or_default()))
        })
        .optional()
        .map_err(sql_error)?;
    let Some((name, create_sql)) = found else {
        return Err(Error::NotFound {
            what: "table",
            name: table.into(),
        });
    };
    let mut stmt = conn
        .prepare_cached("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1) ORDER BY cid")
        .map_err(sql_error)?;
    let columns = stmt
        .query_map([&name], |r| {
            Ok(ColumnInfo {
                name: r.get(0)?,
                declared_type: r.get(1)?,
                not_null: r.get(2)?,
                default_value: r.get(3)?,
                primary_key_position: r.get(4)?,
            })
        })
        .map_err(sql_error)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql_error)?;
    let pk: Vec<&ColumnInfo> = columns.iter().filter(|c| c.primary_key_position > 0).collect();
    let primary_key = match pk.as_slice() {
        [] => "rowid".to_owned(),
        [one] => one.name.clone(),
        _ => String::new(),
    };
    Ok(TableSchema {
        name,
        columns,
        primary_key,
        sql: create_sql,
    })
}

fn row_key(schema: &TableSchema) -> Result<&str> {
    if schema.primary_key.is_empty() {
        return Err(Error::invalid_argument(
            "table",
            format!(
                "table '{}' has a composite primary key; use SQL for its rows",
                schema.name
            ),
        ));
    }
    Ok(&schema.primary_key)
}

fn check_columns<'v>(schema: &TableSchema, values: &'v Row) -> Result<Vec<(&'v String, &'v Value)>> {
    if values.is_empty() {
        return Err(Error::invalid_argument(
            "values",
            "at least one column value is required",
        ));
    }
    values
        .iter()
        .map(|(column, value)| {
            if schema.columns.iter().any(|c| c.name.eq_ignore_ascii_case(column)) {
                Ok((column, value))
            } else {
                Err(Error::invalid_argument(
                    "values",
                    format!("table '{}' has no column '{column}'", schema.name),
                ))
            }
        })
        .collect()
}

fn read_row(stmt_row: &rusqlite::Row<'_>, names: &[String]) -> rusqlite::Result<Row> {
    let mut row = BTreeMap::new();
    for (i, name) in names.iter().enumerate() {
        row.insert(name.clone(), value_from_ref(stmt_row.get_ref(i)?));
    }
    Ok(row)
}

/// The user tables of one [`Database`], row by row by primary key: handed out by
/// [`Database::tables`]. For anything else, use SQL ([`Database::execute`]).
///
/// A table with a composite primary key can be listed, counted and browsed, but not read or
/// written row by row; shardlite's internal tables (`_shardlite_*`) are never listed.
#[derive(Debug, Clone, Copy)]
pub struct Tables<'db> {
    db: &'db Database,
}

impl<'db> Tables<'db> {
    pub(in crate::engine) fn new(db: &'db Database) -> Self {
        Self { db }
    }

    /// User tables, sorted by name (internal tables excluded).
    pub async fn list_tables(self) -> Result<Vec<String>> {
        read_names(
            self.db,
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_shardlite\\_%' ESCAPE '\\' \
             ORDER BY name",
        )
        .await
    }

    /// A table's columns and primary key.
    pub async fn table_schema(self, table: &str) -> Result<TableSchema> {
        let table = table.to_owned();
        self.db.read(move |conn| table_schema(conn, &table)).await
    }

    /// Rows in a table.
    pub async fn count_rows(self, table: &str) -> Result<u64> {
        let table = table.to_owned();
        self.db
            .read(move |conn| {
                let schema = table_schema(conn, &table)?;
                count(conn, &format!("SELECT count(*) FROM {}", quote_ident(&schema.name)), [])
            })
            .await
    }

    /// One page of a table in primary-key order.
    pub async fn browse_rows(self, table: &str, page: u32, page_size: u32) -> Result<RowPage> {
        let (page, page_size, offset) = page_bounds(page, page_size)?;
        let table = table.to_owned();
        self.db
            .read(move |conn| {
                let schema = table_schema(conn, &table)?;
                let name = quote_ident(&schema.name);
                let order = if schema.primary_key.is_empty() {
                    "rowid".to_owned()
                } else {
                    quote_ident(&schema.primary_key)
                };
                let total_rows = count(conn, &format!("SELECT count(*) FROM {name}"), [])?;
                let result = script::execute(
                    conn,
                    &format!("SELECT * FROM {name} ORDER BY {order} LIMIT ?1 OFFSET ?2"),
                    &Params::Positional(vec![Value::from(page_size), Value::Integer(offset)]),
                    ScriptMode::ReadOnly,
                )?;
                Ok(RowPage {
                    column_names: result.column_names,
                    rows: result.rows,
                    total_rows,
                    page,
                    page_size,
                    total_pages: total_pages(total_rows, page_size),
                })
            })
            .await
    }

    /// The row whose primary key equals `key`.
    pub async fn get_row(self, table: &str, key: Value) -> Result<Option<Row>> {
        let table = table.to_owned();
        self.db
            .read(move |conn| {
                let schema = table_schema(conn, &table)?;
                let pk = row_key(&schema)?;
                let sql = format!(
                    "SELECT * FROM {} WHERE {} = ?1",
                    quote_ident(&schema.name),
                    quote_ident(pk)
                );
                let mut stmt = conn.prepare_cached(&sql).map_err(sql_error)?;
                let names: Vec<String> = stmt.column_names().into_iter().map(str::to_owned).collect();
                stmt.query_row([&key], |r| read_row(r, &names))
                    .optional()
                    .map_err(sql_error)
            })
            .await
    }

    /// Inserts a row; returns rows inserted.
    pub async fn insert_row(self, table: &str, values: Row) -> Result<u64> {
        let table = table.to_owned();
        self.db
            .write(move |conn| {
                let schema = table_schema(conn, &table)?;
                let pairs = check_columns(&schema, &values)?;
                let columns: Vec<String> = pairs.iter().map(|(c, _)| quote_ident(c)).collect();
                let marks: Vec<String> = (1..=pairs.len()).map(|i| format!("?{i}")).collect();
                let sql = format!(
                    "INSERT INTO {} ({}) VALUES ({})",
                    quote_ident(&schema.name),
                    columns.join(", "),
                    marks.join(", ")
                );
                let mut stmt = conn.prepare_cached(&sql).map_err(sql_error)?;
                let n = stmt
                    .execute(rusqlite::params_from_iter(pairs.iter().map(|(_, v)| *v)))
                    .map_err(sql_error)?;
                Ok(u64::try_from(n).unwrap_or(0))
            })
            .await
    }

    /// Updates the row whose primary key equals `key`; returns rows updated (0 when absent).
    pub async fn update_row(self, table: &str, key: Value, values: Row) -> Result<u64> {
        let table = table.to_owned();
        self.db
            .write(move |conn| {
                let schema = table_schema(conn, &table)?;
                let pk = row_key(&schema)?.to_owned();
                let pairs = check_columns(&schema, &values)?;
                let sets: Vec<String> = pairs
                    .iter()
                    .enumerate()
                    .map(|(i, (c, _))| format!("{} = ?{}", quote_ident(c), i + 1))
                    .collect();
                let sql = format!(
                    "UPDATE {} SET {} WHERE {} = ?{}",
                    quote_ident(&schema.name),
                    sets.join(", "),
                    quote_ident(&pk),
                    pairs.len() + 1
                );
                let mut stmt = conn.prepare_cached(&sql).map_err(sql_error)?;
                let n = stmt
                    .execute(rusqlite::params_from_iter(
                        pairs.iter().map(|(_, v)| *v).chain(std::iter::once(&key)),
                    ))
                    .map_err(sql_error)?;
                Ok(u64::try_from(n).unwrap_or(0))
            })
            .await
    }

    /// Deletes the row whose primary key equals `key`; returns rows deleted (0 when absent).
    pub async fn delete_row(self, table: &str, key: Value) -> Result<u64> {
        let table = table.to_owned();
        self.db
            .write(move |conn| {
                let schema = table_schema(conn, &table)?;
                let pk = row_key(&schema)?;
                let sql = format!(
                    "DELETE FROM {} WHERE {} = ?1",
                    quote_ident(&schema.name),
                    quote_ident(pk)
                );
                let n = conn
                    .prepare_cached(&sql)
                    .map_err(sql_error)?
                    .execute([&key])
                    .map_err(sql_error)?;
                Ok(u64::try_from(n).unwrap_or(0))
            })
            .await
    }
}
