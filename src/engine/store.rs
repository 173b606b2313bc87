//! Row operations by primary key, and the reserved internal tables that hold collections,
//! saved queries and procedures inside every data database.
//!
//! Internal tables are named `_shardlite_*` and never appear in table lists or counts.
//! Identifiers are always quoted; values are always bound.

use std::collections::BTreeMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::database::Database;
use super::sql::{self, Access, sql_error};
use super::value::value_from_ref;
use crate::data::Value;
use crate::data::{
    ColumnInfo, DatabaseInfo, Document, DocumentPage, Params, ProcedureDefinition, Row, RowPage, SavedQuery, SqlResult,
    TableSchema,
};
use crate::error::{Error, Result};

/// Prefix of the reserved internal tables.
pub const INTERNAL_PREFIX: &str = "_shardlite_";

/// The largest page size browse operations accept.
pub const MAX_PAGE_SIZE: u32 = 1000;

pub(crate) fn create_internal_tables(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS _shardlite_collections (
             collection TEXT NOT NULL,
             key TEXT NOT NULL,
             document TEXT NOT NULL,
             PRIMARY KEY (collection, key)
         ) WITHOUT ROWID;
         CREATE TABLE IF NOT EXISTS _shardlite_saved_queries (
             name TEXT PRIMARY KEY,
             sql_text TEXT NOT NULL,
             created_utc TEXT NOT NULL,
             updated_utc TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS _shardlite_procedures (
             name TEXT PRIMARY KEY,
             definition TEXT NOT NULL,
             created_utc TEXT NOT NULL,
             updated_utc TEXT NOT NULL
         );",
    )
    .map_err(sql_error)
}

/// Quotes an SQL identifier.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

pub(crate) fn now_utc() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn require_name(what: &'static str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(Error::invalid_argument(what, "must not be blank"));
    }
    Ok(())
}

fn page_bounds(page: u32, page_size: u32) -> Result<(u32, u32, i64)> {
    if page == 0 {
        return Err(Error::invalid_argument("page", "pages start at 1"));
    }
    if page_size == 0 || page_size > MAX_PAGE_SIZE {
        return Err(Error::invalid_argument(
            "pageSize",
            format!("must be between 1 and {MAX_PAGE_SIZE} (got {page_size})"),
        ));
    }
    let offset = (i64::from(page) - 1) * i64::from(page_size);
    Ok((page, page_size, offset))
}

fn total_pages(total: u64, page_size: u32) -> u64 {
    total.div_ceil(u64::from(page_size)).max(1)
}

fn count(conn: &Connection, sql: &str, args: impl rusqlite::Params) -> Result<u64> {
    let n: i64 = conn.query_row(sql, args, |r| r.get(0)).map_err(sql_error)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

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
            name: table.to_owned(),
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

fn get_document(conn: &Connection, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
    let text: Option<String> = conn
        .prepare_cached("SELECT document FROM _shardlite_collections WHERE collection = ?1 AND key = ?2")
        .map_err(sql_error)?
        .query_row([collection, key], |r| r.get(0))
        .optional()
        .map_err(sql_error)?;
    text.map(|t| {
        serde_json::from_str(&t).map_err(|source| Error::Json {
            what: "a stored document",
            source,
        })
    })
    .transpose()
}

impl Database {
    /// Runs a query returning one text column, on a reader.
    async fn read_names(&self, sql: &'static str) -> Result<Vec<String>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(sql).map_err(sql_error)?;
            stmt.query_map([], |r| r.get(0))
                .map_err(sql_error)?
                .collect::<rusqlite::Result<Vec<String>>>()
                .map_err(sql_error)
        })
        .await
    }

    /// Runs a `DELETE` with text parameters on the writer; returns whether it removed anything.
    async fn delete_where(&self, sql: &'static str, params: Vec<String>) -> Result<bool> {
        self.write(move |conn| {
            let n = conn
                .prepare_cached(sql)
                .map_err(sql_error)?
                .execute(rusqlite::params_from_iter(params.iter()))
                .map_err(sql_error)?;
            Ok(n > 0)
        })
        .await
    }

    /// User tables, sorted by name (internal tables excluded).
    pub async fn list_tables(&self) -> Result<Vec<String>> {
        self.read_names(
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_shardlite\\_%' ESCAPE '\\' \
             ORDER BY name",
        )
        .await
    }

    /// A table's columns and primary key.
    pub async fn table_schema(&self, table: &str) -> Result<TableSchema> {
        let table = table.to_owned();
        self.read(move |conn| table_schema(conn, &table)).await
    }

    /// Rows in a table.
    pub async fn count_rows(&self, table: &str) -> Result<u64> {
        let table = table.to_owned();
        self.read(move |conn| {
            let schema = table_schema(conn, &table)?;
            count(conn, &format!("SELECT count(*) FROM {}", quote_ident(&schema.name)), [])
        })
        .await
    }

    /// One page of a table in primary-key order.
    pub async fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> Result<RowPage> {
        let (page, page_size, offset) = page_bounds(page, page_size)?;
        let table = table.to_owned();
        self.read(move |conn| {
            let schema = table_schema(conn, &table)?;
            let name = quote_ident(&schema.name);
            let order = if schema.primary_key.is_empty() {
                "rowid".to_owned()
            } else {
                quote_ident(&schema.primary_key)
            };
            let total_rows = count(conn, &format!("SELECT count(*) FROM {name}"), [])?;
            let result = sql::execute(
                conn,
                &format!("SELECT * FROM {name} ORDER BY {order} LIMIT ?1 OFFSET ?2"),
                &Params::Positional(vec![Value::from(page_size), Value::Integer(offset)]),
                Access::ReadOnly,
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
    pub async fn get_row(&self, table: &str, key: Value) -> Result<Option<Row>> {
        let table = table.to_owned();
        self.read(move |conn| {
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
    pub async fn insert_row(&self, table: &str, values: Row) -> Result<u64> {
        let table = table.to_owned();
        self.write(move |conn| {
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
    pub async fn update_row(&self, table: &str, key: Value, values: Row) -> Result<u64> {
        let table = table.to_owned();
        self.write(move |conn| {
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
    pub async fn delete_row(&self, table: &str, key: Value) -> Result<u64> {
        let table = table.to_owned();
        self.write(move |conn| {
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

    // --- collections -------------------------------------------------------------------------

    /// Collection names, sorted.
    pub async fn list_collections(&self) -> Result<Vec<String>> {
        self.read_names("SELECT DISTINCT collection FROM _shardlite_collections ORDER BY collection")
            .await
    }

    /// Documents in a collection.
    pub async fn count_documents(&self, collection: &str) -> Result<u64> {
        require_name("collection", collection)?;
        let collection = collection.to_owned();
        self.read(move |conn| {
            count(
                conn,
                "SELECT count(*) FROM _shardlite_collections WHERE collection = ?1",
                [&collection],
            )
        })
        .await
    }

    /// One page of a collection, in key order.
    pub async fn browse_documents(&self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage> {
        require_name("collection", collection)?;
        let (page, page_size, offset) = page_bounds(page, page_size)?;
        let collection = collection.to_owned();
        self.read(move |conn| {
            let total_count = count(
                conn,
                "SELECT count(*) FROM _shardlite_collections WHERE collection = ?1",
                [&collection],
            )?;
            let mut stmt = conn
                .prepare_cached(
                    "SELECT key, document FROM _shardlite_collections WHERE collection = ?1 \
                     ORDER BY key LIMIT ?2 OFFSET ?3",
                )
                .map_err(sql_error)?;
            let raw = stmt
                .query_map(params![collection, page_size, offset], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .map_err(sql_error)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sql_error)?;
            let documents = raw
                .into_iter()
                .map(|(key, text)| {
                    serde_json::from_str(&text)
                        .map(|document| Document { key, document })
                        .map_err(|source| Error::Json {
                            what: "a stored document",
                            source,
                        })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(DocumentPage {
                collection_name: collection,
                documents,
                total_count,
                page,
                page_size,
                total_pages: total_pages(total_count, page_size),
            })
        })
        .await
    }

    /// A document by key.
    pub async fn get_document(&self, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
        require_name("collection", collection)?;
        require_name("document key", key)?;
        let (collection, key) = (collection.to_owned(), key.to_owned());
        self.read(move |conn| get_document(conn, &collection, &key)).await
    }

    /// Stores (inserts or replaces) a document.
    pub async fn put_document(&self, collection: &str, key: &str, document: serde_json::Value) -> Result<()> {
        require_name("collection", collection)?;
        require_name("document key", key)?;
        let (collection, key) = (collection.to_owned(), key.to_owned());
        let text = document.to_string();
        self.write(move |conn| {
            conn.prepare_cached(
                "INSERT INTO _shardlite_collections (collection, key, document) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (collection, key) DO UPDATE SET document = excluded.document",
            )
            .map_err(sql_error)?
            .execute([&collection, &key, &text])
            .map_err(sql_error)?;
            Ok(())
        })
        .await
    }

    /// Deletes a document; returns whether it existed.
    pub async fn delete_document(&self, collection: &str, key: &str) -> Result<bool> {
        require_name("collection", collection)?;
        require_name("document key", key)?;
        self.delete_where(
            "DELETE FROM _shardlite_collections WHERE collection = ?1 AND key = ?2",
            vec![collection.to_owned(), key.to_owned()],
        )
        .await
    }

    /// Deletes every document of a collection; returns whether it had any.
    pub async fn drop_collection(&self, collection: &str) -> Result<bool> {
        require_name("collection", collection)?;
        self.delete_where(
            "DELETE FROM _shardlite_collections WHERE collection = ?1",
            vec![collection.to_owned()],
        )
        .await
    }

    // --- saved queries -----------------------------------------------------------------------

    /// Saved queries, sorted by name.
    pub async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT name, sql_text, created_utc, updated_utc FROM _shardlite_saved_queries ORDER BY name",
                )
                .map_err(sql_error)?;
            stmt.query_map([], saved_query_from_row)
                .map_err(sql_error)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sql_error)
        })
        .await
    }

    /// A saved query by name.
    pub async fn get_saved_query(&self, name: &str) -> Result<Option<SavedQuery>> {
        require_name("saved query name", name)?;
        let name = name.to_owned();
        self.read(move |conn| {
            conn.prepare_cached(
                "SELECT name, sql_text, created_utc, updated_utc FROM _shardlite_saved_queries WHERE name = ?1",
            )
            .map_err(sql_error)?
            .query_row([&name], saved_query_from_row)
            .optional()
            .map_err(sql_error)
        })
        .await
    }

    /// Creates or replaces a saved query.
    pub async fn put_saved_query(&self, name: &str, sql_text: &str) -> Result<SavedQuery> {
        require_name("saved query name", name)?;
        require_name("sqlText", sql_text)?;
        let (name, sql_text) = (name.trim().to_owned(), sql_text.to_owned());
        self.write(move |conn| {
            let now = now_utc();
            conn.prepare_cached(
                "INSERT INTO _shardlite_saved_queries (name, sql_text, created_utc, updated_utc) \
                 VALUES (?1, ?2, ?3, ?3) \
                 ON CONFLICT (name) DO UPDATE SET sql_text = excluded.sql_text, updated_utc = excluded.updated_utc",
            )
            .map_err(sql_error)?
            .execute([&name, &sql_text, &now])
            .map_err(sql_error)?;
            conn.query_row(
                "SELECT name, sql_text, created_utc, updated_utc FROM _shardlite_saved_queries WHERE name = ?1",
                [&name],
                saved_query_from_row,
            )
            .map_err(sql_error)
        })
        .await
    }

    /// Deletes a saved query; returns whether it existed.
    pub async fn delete_saved_query(&self, name: &str) -> Result<bool> {
        require_name("saved query name", name)?;
        self.delete_where(
            "DELETE FROM _shardlite_saved_queries WHERE name = ?1",
            vec![name.to_owned()],
        )
        .await
    }

    // --- procedures --------------------------------------------------------------------------

    /// Procedures, sorted by name.
    pub async fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached("SELECT definition FROM _shardlite_procedures ORDER BY name")
                .map_err(sql_error)?;
            let texts = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(sql_error)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sql_error)?;
            texts.iter().map(|t| parse_procedure(t)).collect()
        })
        .await
    }

    /// A procedure by name.
    pub async fn get_procedure(&self, name: &str) -> Result<Option<ProcedureDefinition>> {
        require_name("procedure name", name)?;
        let name = name.to_owned();
        self.read(move |conn| load_procedure(conn, &name)).await
    }

    /// Creates or replaces a procedure. Its body must prepare (checked inside a rolled-back savepoint).
    pub async fn put_procedure(&self, definition: ProcedureDefinition) -> Result<ProcedureDefinition> {
        require_name("procedure name", &definition.name)?;
        require_name("bodySql", &definition.body_sql)?;
        let mut seen = std::collections::BTreeSet::new();
        for p in &definition.parameters {
            require_name("procedure parameter name", &p.name)?;
            if !seen.insert(p.name.as_str()) {
                return Err(Error::invalid_argument(
                    "parameters",
                    format!("procedure parameter '{}' is declared twice", p.name),
                ));
            }
        }
        let mut definition = definition;
        definition.name = definition.name.trim().to_owned();
        self.write(move |conn| {
            let text = serde_json::to_string(&definition).map_err(|source| Error::Json {
                what: "a procedure definition",
                source,
            })?;
            let now = now_utc();
            conn.prepare_cached(
                "INSERT INTO _shardlite_procedures (name, definition, created_utc, updated_utc) VALUES (?1, ?2, ?3, ?3) \
                 ON CONFLICT (name) DO UPDATE SET definition = excluded.definition, updated_utc = excluded.updated_utc",
            )
            .map_err(sql_error)?
            .execute([&definition.name, &text, &now])
            .map_err(sql_error)?;
            Ok(definition)
        })
        .await
    }

    /// Deletes a procedure; returns whether it existed.
    pub async fn delete_procedure(&self, name: &str) -> Result<bool> {
        require_name("procedure name", name)?;
        self.delete_where(
            "DELETE FROM _shardlite_procedures WHERE name = ?1",
            vec![name.to_owned()],
        )
        .await
    }

    /// Runs a procedure's body in one transaction with the arguments bound by name.
    /// Either every statement takes effect or none does.
    pub async fn execute_procedure(&self, name: &str, args: Params) -> Result<SqlResult> {
        require_name("procedure name", name)?;
        let name = name.to_owned();
        self.write_atomic(move |conn| {
            let Some(definition) = load_procedure(conn, &name)? else {
                return Err(Error::NotFound {
                    what: "procedure",
                    name,
                });
            };
            let bound = bind_procedure_args(&definition, args)?;
            sql::execute(conn, &definition.body_sql, &bound, Access::ReadWrite)
        })
        .await
    }

    /// Counts for this database.
    pub async fn info(&self) -> Result<DatabaseInfo> {
        let data_source = self.path().display().to_string();
        self.read(move |conn| {
            let objects = |kind: &str| {
                count(
                    conn,
                    "SELECT count(*) FROM sqlite_master WHERE type = ?1 \
                     AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_shardlite\\_%' ESCAPE '\\' \
                     AND tbl_name NOT LIKE '\\_shardlite\\_%' ESCAPE '\\'",
                    [kind],
                )
            };
            Ok(DatabaseInfo {
                data_source,
                table_count: objects("table")?,
                index_count: objects("index")?,
                view_count: objects("view")?,
                trigger_count: objects("trigger")?,
                collection_count: count(
                    conn,
                    "SELECT count(DISTINCT collection) FROM _shardlite_collections",
                    [],
                )?,
                saved_query_count: count(conn, "SELECT count(*) FROM _shardlite_saved_queries", [])?,
                procedure_count: count(conn, "SELECT count(*) FROM _shardlite_procedures", [])?,
            })
        })
        .await
    }
}

fn saved_query_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SavedQuery> {
    Ok(SavedQuery {
        name: r.get(0)?,
        sql_text: r.get(1)?,
        created_utc: r.get(2)?,
        updated_utc: r.get(3)?,
    })
}

fn parse_procedure(text: &str) -> Result<ProcedureDefinition> {
    serde_json::from_str(text).map_err(|source| Error::Json {
        what: "a stored procedure definition",
        source,
    })
}

fn load_procedure(conn: &Connection, name: &str) -> Result<Option<ProcedureDefinition>> {
    let text: Option<String> = conn
        .prepare_cached("SELECT definition FROM _shardlite_procedures WHERE name = ?1")
        .map_err(sql_error)?
        .query_row([name], |r| r.get(0))
        .optional()
        .map_err(sql_error)?;
    text.as_deref().map(parse_procedure).transpose()
}

/// Matches call arguments (named, or positional in declaration order) to declared parameters.
fn bind_procedure_args(definition: &ProcedureDefinition, args: Params) -> Result<Params> {
    let mut given: BTreeMap<String, Value> = match args {
        Params::Named(map) => map,
        Params::Positional(values) => {
            if values.len() > definition.parameters.len() {
                return Err(Error::invalid_argument(
                    "args",
                    format!(
                        "procedure '{}' takes {} argument(s) but {} were given",
                        definition.name,
                        definition.parameters.len(),
                        values.len()
                    ),
                ));
            }
            definition
                .parameters
                .iter()
                .map(|p| p.name.clone())
                .zip(values)
                .collect()
        }
    };
    let mut bound = BTreeMap::new();
    for p in &definition.parameters {
        match given.remove(&p.name) {
            Some(value) => {
                bound.insert(p.name.clone(), value);
            }
            None if p.required => {
                return Err(Error::invalid_argument(
                    "args",
                    format!("procedure '{}' requires argument '{}'", definition.name, p.name),
                ));
            }
            None => {
                bound.insert(p.name.clone(), p.default.clone());
            }
        }
    }
    if let Some(unknown) = given.keys().next() {
        return Err(Error::invalid_argument(
            "args",
            format!("procedure '{}' has no parameter '{unknown}'", definition.name),
        ));
    }
    Ok(Params::Named(bound))
}
