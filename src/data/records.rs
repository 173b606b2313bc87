//! The results and records of the data-operation interface: SQL results, table schemas and
//! pages, documents, saved queries, procedures, database info and transaction info.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Params, Value};
use crate::error::{Error, Result};

/// The result of executing SQL.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SqlResult {
    /// Whether a statement returned rows (columns).
    pub is_query: bool,
    /// Column names of the last statement that returned rows.
    pub column_names: Vec<String>,
    /// Rows of the last statement that returned rows; values in the order of the column names.
    #[cfg_attr(feature = "server", schema(value_type = Vec<Vec<crate::data::openapi::ValueSchema>>))]
    pub rows: Vec<Vec<Value>>,
    /// Rows changed by the statements that write.
    pub rows_affected: u64,
    /// Wall time spent executing, in milliseconds.
    pub elapsed_ms: f64,
    /// The rowid of the last row an `INSERT` (or `REPLACE`) of this call added to a rowid table,
    /// read on the connection that ran it right after it ran (SQLite's `last_insert_rowid()`);
    /// absent when no statement of the call inserted a row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_insert_rowid: Option<i64>,
}

impl SqlResult {
    /// The value at `row`, `column` (by name), if present.
    pub fn value(&self, row: usize, column: &str) -> Option<&Value> {
        let index = self.column_names.iter().position(|c| c == column)?;
        self.rows.get(row)?.get(index)
    }
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ColumnInfo {
    /// Column name.
    pub name: String,
    /// Declared type (may be empty).
    pub declared_type: String,
    /// Whether the column is NOT NULL.
    pub not_null: bool,
    /// Position in the primary key (1-based), or 0.
    pub primary_key_position: u32,
    /// The default value expression, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_value: Option<String>,
}

/// A table's schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TableSchema {
    /// Table name as stored.
    pub name: String,
    /// Columns in declaration order.
    pub columns: Vec<ColumnInfo>,
    /// The column row operations address by primary key: `rowid` when the table declares none,
    /// empty when the key is composite (row operations then refuse; use SQL).
    pub primary_key: String,
    /// The table's `CREATE` statement.
    pub sql: String,
}

/// A row as a map from column name to value.
pub type Row = BTreeMap<String, Value>;

/// One page of a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RowPage {
    /// Column names.
    pub column_names: Vec<String>,
    /// Rows in primary-key order, values in the order of the column names.
    #[cfg_attr(feature = "server", schema(value_type = Vec<Vec<crate::data::openapi::ValueSchema>>))]
    pub rows: Vec<Vec<Value>>,
    /// Rows in the table.
    pub total_rows: u64,
    /// The page (1-based).
    pub page: u32,
    /// Rows per page.
    pub page_size: u32,
    /// Pages in the table (at least 1).
    pub total_pages: u64,
}

/// A JSON document in a collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Document {
    /// The document key.
    pub key: String,
    /// The document.
    pub document: serde_json::Value,
}

/// One page of a collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DocumentPage {
    /// The collection.
    pub collection_name: String,
    /// Documents in key order.
    pub documents: Vec<Document>,
    /// Documents in the collection.
    pub total_count: u64,
    /// The page (1-based).
    pub page: u32,
    /// Documents per page.
    pub page_size: u32,
    /// Pages (at least 1).
    pub total_pages: u64,
}

/// A named, stored SQL text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SavedQuery {
    /// Its name.
    pub name: String,
    /// The SQL.
    pub sql_text: String,
    /// When it was created (RFC 3339).
    pub created_utc: String,
    /// When it was last changed (RFC 3339).
    pub updated_utc: String,
}

/// A declared procedure parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcedureParameter {
    /// Name, bound as `:name` in the body.
    #[cfg_attr(feature = "server", schema(min_length = 1, pattern = r"\S"))]
    pub name: String,
    /// Whether a caller must supply it (default true). Optional parameters default to `default`.
    #[serde(default = "default_true")]
    #[cfg_attr(feature = "server", schema(default = true))]
    pub required: bool,
    /// Value used when an optional parameter is not supplied.
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(value_type = crate::data::openapi::ValueSchema))]
    pub default: Value,
}

fn default_true() -> bool {
    true
}

/// A named, parameterised SQL body, executed atomically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcedureDefinition {
    /// Its name.
    #[cfg_attr(feature = "server", schema(min_length = 1, pattern = r"\S"))]
    pub name: String,
    /// The SQL statements, run in one transaction with the arguments bound by name.
    #[cfg_attr(feature = "server", schema(min_length = 1, pattern = r"\S"))]
    pub body_sql: String,
    /// Declared parameters.
    #[serde(default)]
    pub parameters: Vec<ProcedureParameter>,
    /// A description for operators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl ProcedureDefinition {
    /// Matches call arguments (named, or positional in declaration order) to the declared
    /// parameters: the named parameters the body runs with, optional ones at their defaults.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for too many positional arguments, a required one missing, or
    /// a name the procedure does not declare.
    pub fn bind(&self, args: Params) -> Result<Params> {
        let mut given: BTreeMap<String, Value> = match args {
            Params::Named(map) => map,
            Params::Positional(values) => {
                if values.len() > self.parameters.len() {
                    return Err(Error::invalid_argument(
                        "args",
                        format!(
                            "procedure '{}' takes {} argument(s) but {} were given",
                            self.name,
                            self.parameters.len(),
                            values.len()
                        ),
                    ));
                }
                self.parameters.iter().map(|p| p.name.clone()).zip(values).collect()
            }
        };
        let mut bound = BTreeMap::new();
        for p in &self.parameters {
            match given.remove(&p.name) {
                Some(value) => {
                    bound.insert(p.name.clone(), value);
                }
                None if p.required => {
                    return Err(Error::invalid_argument(
                        "args",
                        format!("procedure '{}' requires argument '{}'", self.name, p.name),
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
                format!("procedure '{}' has no parameter '{unknown}'", self.name),
            ));
        }
        Ok(Params::Named(bound))
    }
}

/// Counts describing one database (or, aggregated, a sharded keyspace).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DatabaseInfo {
    /// Which database this describes: its file (the daemon sends only the file name), or
    /// `sharded://keyspace?version=N` for the aggregate of a sharded keyspace.
    pub data_source: String,
    /// User tables.
    pub table_count: u64,
    /// User indexes.
    pub index_count: u64,
    /// Views.
    pub view_count: u64,
    /// Triggers.
    pub trigger_count: u64,
    /// Collections.
    pub collection_count: u64,
    /// Saved queries.
    pub saved_query_count: u64,
    /// Procedures.
    pub procedure_count: u64,
}

/// How a transaction begins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema, utoipa::IntoParams))]
#[cfg_attr(feature = "server", into_params(parameter_in = Query))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TransactionOptions {
    /// A maintenance transaction: its statements may also write shardlite's internal tables
    /// (`_shardlite_*`) and create or drop their triggers, as a data migration does when it
    /// fences routes and moves collection documents. An operator capability: the scoped API
    /// keys of SPEC section 17 reserve it for `admin` keys. Default false.
    #[serde(default)]
    pub maintenance: bool,
    /// A read-only transaction: it runs on a connection that cannot write (SQLite's
    /// `query_only`), and a statement in it that would write is refused before it runs
    /// ([`Error::ReadOnlyViolation`]), having written nothing; reads, commit and rollback work as
    /// in any transaction. The daemon begins one for an API key that holds `read` and not
    /// `write` (SPEC section 17), so it is not a request parameter; a client of another daemon
    /// cannot begin one there. Default false.
    #[serde(skip)]
    pub read_only: bool,
}

impl TransactionOptions {
    /// The options of a maintenance transaction.
    pub fn maintenance() -> Self {
        Self {
            maintenance: true,
            read_only: false,
        }
    }

    /// The options of a read-only transaction (see the field `read_only`).
    pub fn read_only() -> Self {
        Self {
            maintenance: false,
            read_only: true,
        }
    }
}

/// An open transaction, as returned by begin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TransactionInfo {
    /// The id to pass to execute, commit and rollback: `csdbshard:{mapVersion}:{shardId}:{innerId}`
    /// for routed transactions (URL-encode it in REST paths).
    #[cfg_attr(
        feature = "server",
        schema(example = "csdbshard:1:s0:4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e")
    )]
    pub transaction_id: String,
    /// When the transaction is rolled back if left idle (RFC 3339), if it can expire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_utc: Option<String>,
}
