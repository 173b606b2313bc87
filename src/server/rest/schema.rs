//! The bodies the REST API accepts and sends, with their OpenAPI schemas.
//!
//! Responses are serialised from these types (not from the client types they are converted
//! from), so `/openapi.json` describes exactly the bytes on the wire. Every conversion from a
//! client type destructures it completely: a field added to a client type fails to compile here
//! until the wire type, and with it the OpenAPI document, says what to do with it. A test checks
//! that each wire type serialises exactly like the client type it mirrors, so a remote client
//! can deserialise responses into the client types.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{IntoParams, PartialSchema, ToSchema};

use crate::catalog::{CatalogHistoryEntry, CatalogState};
use crate::client::{
    ColumnInfo, DatabaseInfo, Document, DocumentPage, Params, ProcedureDefinition, ProcedureParameter, Row, RowPage,
    SavedQuery, ShardSqlResult, ShardStatus, SqlResult, TableSchema, TransactionInfo, Value,
};
use crate::map::{BucketRange, ShardMapSnapshot, ShardRole, ShardSnapshot, Transport};
use crate::routing::{ResolvedRoute, RouteSource};

// ---------------------------------------------------------------------------------------------
// Schemas of types with hand-written serde formats.

/// Schema of one SQLite value: `null`, an integer, a float, a string, `{"$blob": "<base64>"}`, or
/// `{"$real": "inf" | "-inf" | "nan"}` for floats JSON cannot carry.
#[derive(Debug)]
pub struct ValueSchema;

impl PartialSchema for ValueSchema {
    fn schema() -> RefOr<Schema> {
        let blob = ObjectBuilder::new()
            .property(
                "$blob",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .content_encoding("base64")
                    .description(Some("the bytes, standard base64")),
            )
            .required("$blob")
            .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)))
            .description(Some("a blob"));
        let real = ObjectBuilder::new()
            .property(
                "$real",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["inf", "-inf", "nan"])),
            )
            .required("$real")
            .additional_properties(Some(AdditionalProperties::<Schema>::FreeForm(false)))
            .description(Some("a float JSON cannot carry"));
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64))),
            )
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Number)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Double))),
            )
            .item(ObjectBuilder::new().schema_type(Type::String))
            .item(blob)
            .item(real)
            .description(Some(
                "an SQLite value: null, a 64-bit integer (exact beyond 2^53), a float, text, or a blob",
            ))
            .into()
    }
}

impl ToSchema for ValueSchema {
    fn name() -> std::borrow::Cow<'static, str> {
        "Value".into()
    }
}

/// Schema of SQL parameters: an array for positional placeholders or an object for named ones.
#[derive(Debug)]
pub struct ParamsSchema;

impl PartialSchema for ParamsSchema {
    fn schema() -> RefOr<Schema> {
        let value = || RefOr::Ref(Ref::from_schema_name(ValueSchema::name()));
        OneOfBuilder::new()
            .item(
                ArrayBuilder::new()
                    .items(value())
                    .description(Some("values for ?, ?NNN placeholders; the first is ?1")),
            )
            .item(
                ObjectBuilder::new()
                    .additional_properties(Some(value()))
                    .description(Some("values for :name, @name, $name placeholders, keyed by name")),
            )
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .description(Some("parameters bound to placeholders (never spliced into the SQL)"))
            .into()
    }
}

impl ToSchema for ParamsSchema {
    fn name() -> std::borrow::Cow<'static, str> {
        "Parameters".into()
    }
}

/// A shard's role, as the wire spells it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ShardRole)]
pub enum ShardRoleSchema {
    /// Owns data.
    Primary,
    /// Metadata only.
    Replica,
}

/// How a shard is reached, as the wire spells it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = Transport)]
pub enum TransportSchema {
    /// A local file.
    Direct,
    /// A daemon over REST.
    Http,
    /// A daemon over gRPC.
    Grpc,
}

/// What decided a route's shard, as the wire spells it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = RouteSource)]
pub enum RouteSourceSchema {
    /// An exact route-key pin.
    Pin,
    /// The owner of the route's bucket.
    BucketRange,
}

// ---------------------------------------------------------------------------------------------
// Requests.

/// SQL with optional bound parameters.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SqlRequest {
    /// One statement or a script.
    #[schema(min_length = 1, pattern = r"\S", example = "SELECT * FROM orders WHERE id = ?1")]
    pub sql: String,
    /// Values for the placeholders.
    #[serde(default)]
    #[schema(value_type = Option<ParamsSchema>, example = json!([42]))]
    pub parameters: Option<Params>,
}

/// SQL to run on every shard (no parameters).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AllShardsSqlRequest {
    /// One statement or a script.
    #[schema(
        min_length = 1,
        pattern = r"\S",
        example = "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY)"
    )]
    pub sql: String,
}

/// Column values of a row.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RowValuesRequest {
    /// Column name to value; at least one.
    #[schema(value_type = BTreeMap<String, ValueSchema>, example = json!({"name": "Ada"}))]
    pub values: Row,
}

/// A JSON document to store.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DocumentRequest {
    /// Any JSON value.
    pub document: serde_json::Value,
}

/// The SQL text of a saved query.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SavedQueryRequest {
    /// The SQL.
    #[schema(min_length = 1, pattern = r"\S")]
    pub sql_text: String,
}

/// A procedure's new definition; its name comes from the path.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProcedureUpdateRequest {
    /// If given, must equal the name in the path.
    #[serde(default)]
    pub name: Option<String>,
    /// The SQL statements, run in one transaction with the arguments bound by name.
    #[schema(min_length = 1, pattern = r"\S")]
    pub body_sql: String,
    /// Declared parameters.
    #[serde(default)]
    pub parameters: Vec<ProcedureParameterBody>,
    /// A description for operators.
    #[serde(default)]
    pub description: Option<String>,
}

/// Arguments of a procedure call.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecuteProcedureRequest {
    /// Named arguments (an object), or positional ones in declaration order (an array).
    #[serde(default)]
    #[schema(value_type = Option<ParamsSchema>)]
    pub args: Option<Params>,
}

/// A route to resolve.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResolveRequest {
    /// The keyspace (compared with the map's ignoring case).
    #[schema(min_length = 1, example = "tenants")]
    pub keyspace: String,
    /// The route key.
    #[schema(min_length = 1, example = "tenant-a")]
    pub key: String,
}

/// Paging of a table or collection.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// The page, from 1 (default 1).
    #[param(minimum = 1, default = 1)]
    pub page: Option<u32>,
    /// Items per page, 1 to 1000 (default 50).
    #[param(minimum = 1, maximum = 1000, default = 50)]
    pub page_size: Option<u32>,
}

impl PageQuery {
    /// The page and page size, with defaults applied (the engine validates the ranges).
    pub fn resolve(&self) -> (u32, u32) {
        (self.page.unwrap_or(1), self.page_size.unwrap_or(50))
    }
}

/// How the primary-key path segment is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PkType {
    /// A 64-bit integer.
    Integer,
    /// A float.
    Real,
    /// Text, as given.
    Text,
    /// Bytes, as base64 (standard or URL-safe alphabet, padding optional).
    Blob,
}

/// Options of a row-by-key request.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PkQuery {
    /// How to read the key. By default it follows the SQLite type affinity of the primary-key
    /// column's declared type: INTEGER and NUMERIC columns take an integer (or a float) when the
    /// text is one, REAL columns a float, all others the text.
    pub pk_type: Option<PkType>,
}

// ---------------------------------------------------------------------------------------------
// Small responses.

/// Rows changed by a row operation.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = RowsAffected)]
pub struct RowsAffectedBody {
    /// Rows inserted, updated or deleted.
    pub rows_affected: u64,
}

/// Rows in a table.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = TableCount)]
pub struct TableCountBody {
    /// The table.
    pub table_name: String,
    /// Its rows.
    pub count: u64,
}

/// Documents in a collection.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = CollectionCount)]
pub struct CollectionCountBody {
    /// The collection.
    pub collection_name: String,
    /// Its documents.
    pub count: u64,
}

/// A row: column name to value.
#[derive(Debug, Serialize, ToSchema)]
#[serde(transparent)]
#[schema(as = Row, value_type = BTreeMap<String, ValueSchema>)]
pub struct RowBody(pub Row);

// ---------------------------------------------------------------------------------------------
// Mirrors of the client types.

/// The result of executing SQL.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = SqlResult)]
pub struct SqlResultBody {
    /// Whether a statement returned rows (columns).
    pub is_query: bool,
    /// Column names of the last statement that returned rows.
    pub column_names: Vec<String>,
    /// Rows of the last statement that returned rows; values in `columnNames` order.
    #[schema(value_type = Vec<Vec<ValueSchema>>)]
    pub rows: Vec<Vec<Value>>,
    /// Rows changed by the statements that write.
    pub rows_affected: u64,
    /// Wall time spent executing, in milliseconds.
    pub elapsed_ms: f64,
}

impl From<SqlResult> for SqlResultBody {
    fn from(result: SqlResult) -> Self {
        let SqlResult {
            is_query,
            column_names,
            rows,
            rows_affected,
            elapsed_ms,
        } = result;
        Self {
            is_query,
            column_names,
            rows,
            rows_affected,
            elapsed_ms,
        }
    }
}

/// Counts describing a database (or, aggregated, a sharded keyspace).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = DatabaseInfo)]
pub struct DatabaseInfoBody {
    /// Which database this describes: `sharded://{keyspace}?version={n}` (with `&shard={id}` for
    /// a routed request), or the file name of an unsharded database.
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

impl From<DatabaseInfo> for DatabaseInfoBody {
    fn from(info: DatabaseInfo) -> Self {
        let DatabaseInfo {
            data_source,
            table_count,
            index_count,
            view_count,
            trigger_count,
            collection_count,
            saved_query_count,
            procedure_count,
        } = info;
        Self {
            data_source,
            table_count,
            index_count,
            view_count,
            trigger_count,
            collection_count,
            saved_query_count,
            procedure_count,
        }
    }
}

/// One column of a table.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ColumnInfo)]
pub struct ColumnInfoBody {
    /// Column name.
    pub name: String,
    /// Declared type (may be empty).
    pub declared_type: String,
    /// Whether the column is NOT NULL.
    pub not_null: bool,
    /// Position in the primary key (1-based), or 0.
    pub primary_key_position: u32,
    /// The default value expression, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_value: Option<String>,
}

impl From<ColumnInfo> for ColumnInfoBody {
    fn from(column: ColumnInfo) -> Self {
        let ColumnInfo {
            name,
            declared_type,
            not_null,
            primary_key_position,
            default_value,
        } = column;
        Self {
            name,
            declared_type,
            not_null,
            primary_key_position,
            default_value,
        }
    }
}

/// A table's schema.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = TableSchema)]
pub struct TableSchemaBody {
    /// Table name as stored.
    pub name: String,
    /// Columns in declaration order.
    pub columns: Vec<ColumnInfoBody>,
    /// The column row operations address by primary key (`rowid` when the table has none, empty
    /// when the key is composite).
    pub primary_key: String,
    /// The table's `CREATE` statement.
    pub sql: String,
}

impl From<TableSchema> for TableSchemaBody {
    fn from(schema: TableSchema) -> Self {
        let TableSchema {
            name,
            columns,
            primary_key,
            sql,
        } = schema;
        Self {
            name,
            columns: columns.into_iter().map(Into::into).collect(),
            primary_key,
            sql,
        }
    }
}

/// One page of a table.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = RowPage)]
pub struct RowPageBody {
    /// Column names.
    pub column_names: Vec<String>,
    /// Rows in primary-key order, values in `columnNames` order.
    #[schema(value_type = Vec<Vec<ValueSchema>>)]
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

impl From<RowPage> for RowPageBody {
    fn from(page: RowPage) -> Self {
        let RowPage {
            column_names,
            rows,
            total_rows,
            page,
            page_size,
            total_pages,
        } = page;
        Self {
            column_names,
            rows,
            total_rows,
            page,
            page_size,
            total_pages,
        }
    }
}

/// A document and its key.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Document)]
pub struct DocumentBody {
    /// The document key.
    pub key: String,
    /// The document.
    pub document: serde_json::Value,
}

impl From<Document> for DocumentBody {
    fn from(document: Document) -> Self {
        let Document { key, document } = document;
        Self { key, document }
    }
}

/// One page of a collection.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = DocumentPage)]
pub struct DocumentPageBody {
    /// The collection.
    pub collection_name: String,
    /// Documents in key order.
    pub documents: Vec<DocumentBody>,
    /// Documents in the collection.
    pub total_count: u64,
    /// The page (1-based).
    pub page: u32,
    /// Documents per page.
    pub page_size: u32,
    /// Pages (at least 1).
    pub total_pages: u64,
}

impl From<DocumentPage> for DocumentPageBody {
    fn from(page: DocumentPage) -> Self {
        let DocumentPage {
            collection_name,
            documents,
            total_count,
            page,
            page_size,
            total_pages,
        } = page;
        Self {
            collection_name,
            documents: documents.into_iter().map(Into::into).collect(),
            total_count,
            page,
            page_size,
            total_pages,
        }
    }
}

/// A named, stored SQL text.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = SavedQuery)]
pub struct SavedQueryBody {
    /// Its name.
    pub name: String,
    /// The SQL.
    pub sql_text: String,
    /// When it was created (RFC 3339).
    pub created_utc: String,
    /// When it was last changed (RFC 3339).
    pub updated_utc: String,
}

impl From<SavedQuery> for SavedQueryBody {
    fn from(query: SavedQuery) -> Self {
        let SavedQuery {
            name,
            sql_text,
            created_utc,
            updated_utc,
        } = query;
        Self {
            name,
            sql_text,
            created_utc,
            updated_utc,
        }
    }
}

/// A declared procedure parameter.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = ProcedureParameter)]
pub struct ProcedureParameterBody {
    /// Name, bound as `:name` in the body.
    #[schema(min_length = 1)]
    pub name: String,
    /// Whether a caller must supply it (default true).
    #[serde(default = "default_true")]
    #[schema(default = true)]
    pub required: bool,
    /// Value used when an optional parameter is not supplied.
    #[serde(default)]
    #[schema(value_type = ValueSchema)]
    pub default: Value,
}

fn default_true() -> bool {
    true
}

impl From<ProcedureParameter> for ProcedureParameterBody {
    fn from(parameter: ProcedureParameter) -> Self {
        let ProcedureParameter {
            name,
            required,
            default,
        } = parameter;
        Self {
            name,
            required,
            default,
        }
    }
}

impl From<ProcedureParameterBody> for ProcedureParameter {
    fn from(parameter: ProcedureParameterBody) -> Self {
        let ProcedureParameterBody {
            name,
            required,
            default,
        } = parameter;
        Self {
            name,
            required,
            default,
        }
    }
}

/// A named, parameterised SQL body, executed atomically.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = ProcedureDefinition)]
pub struct ProcedureBody {
    /// Its name.
    #[schema(min_length = 1, pattern = r"\S")]
    pub name: String,
    /// The SQL statements, run in one transaction with the arguments bound by name.
    #[schema(min_length = 1, pattern = r"\S")]
    pub body_sql: String,
    /// Declared parameters.
    #[serde(default)]
    pub parameters: Vec<ProcedureParameterBody>,
    /// A description for operators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl From<ProcedureDefinition> for ProcedureBody {
    fn from(definition: ProcedureDefinition) -> Self {
        let ProcedureDefinition {
            name,
            body_sql,
            parameters,
            description,
        } = definition;
        Self {
            name,
            body_sql,
            parameters: parameters.into_iter().map(Into::into).collect(),
            description,
        }
    }
}

impl From<ProcedureBody> for ProcedureDefinition {
    fn from(body: ProcedureBody) -> Self {
        let ProcedureBody {
            name,
            body_sql,
            parameters,
            description,
        } = body;
        Self {
            name,
            body_sql,
            parameters: parameters.into_iter().map(Into::into).collect(),
            description,
        }
    }
}

/// An open transaction.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = TransactionInfo)]
pub struct TransactionInfoBody {
    /// The id to pass to execute, commit and rollback: `csdbshard:{mapVersion}:{shardId}:{innerId}`
    /// on a sharded daemon (URL-encode it in paths).
    #[schema(example = "csdbshard:1:s0:4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e")]
    pub transaction_id: String,
    /// When the transaction is rolled back if left idle (RFC 3339); each execute extends it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at_utc: Option<String>,
}

impl From<TransactionInfo> for TransactionInfoBody {
    fn from(info: TransactionInfo) -> Self {
        let TransactionInfo {
            transaction_id,
            expires_at_utc,
        } = info;
        Self {
            transaction_id,
            expires_at_utc,
        }
    }
}

/// A half-open bucket range owned by one shard.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = BucketRange)]
pub struct BucketRangeBody {
    /// First bucket of the range.
    pub start_bucket_inclusive: i64,
    /// One past the last bucket.
    pub end_bucket_exclusive: i64,
    /// The owning shard.
    pub shard_id: String,
}

impl From<BucketRange> for BucketRangeBody {
    fn from(range: BucketRange) -> Self {
        let BucketRange {
            start_bucket_inclusive,
            end_bucket_exclusive,
            shard_id,
        } = range;
        Self {
            start_bucket_inclusive,
            end_bucket_exclusive,
            shard_id,
        }
    }
}

/// One shard of a map snapshot (never a secret: only whether one is configured).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ShardSnapshot)]
pub struct ShardSnapshotBody {
    /// The shard id.
    pub shard_id: String,
    /// Whether routes may resolve to it.
    pub enabled: bool,
    /// Primary or replica.
    #[schema(value_type = ShardRoleSchema)]
    pub role: ShardRole,
    /// For replicas, the primary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_shard_id: Option<String>,
    /// For replicas, whether promotion is allowed.
    pub promotion_eligible: bool,
    /// For replicas, the reported lag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication_lag_bytes: Option<i64>,
    /// For replicas, the last catch-up time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_replicated_utc: Option<String>,
    /// The transport to the shard.
    #[schema(value_type = TransportSchema)]
    pub transport: Transport,
    /// The daemon endpoint, for remote shards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The local file, for direct shards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_source: Option<String>,
    /// Whether a connection string is configured.
    pub has_connection_string: bool,
    /// Whether an API key is configured.
    pub has_api_key: bool,
    /// The header carrying the API key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_header_name: Option<String>,
}

impl From<ShardSnapshot> for ShardSnapshotBody {
    fn from(shard: ShardSnapshot) -> Self {
        let ShardSnapshot {
            shard_id,
            enabled,
            role,
            primary_shard_id,
            promotion_eligible,
            replication_lag_bytes,
            last_replicated_utc,
            transport,
            endpoint,
            data_source,
            has_connection_string,
            has_api_key,
            api_key_header_name,
        } = shard;
        Self {
            shard_id,
            enabled,
            role,
            primary_shard_id,
            promotion_eligible,
            replication_lag_bytes,
            last_replicated_utc,
            transport,
            endpoint,
            data_source,
            has_connection_string,
            has_api_key,
            api_key_header_name,
        }
    }
}

/// A secret-free snapshot of a shard map.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ShardMapSnapshot)]
pub struct ShardMapSnapshotBody {
    /// The map keyspace.
    pub keyspace: String,
    /// The map version.
    pub map_version: u64,
    /// The number of virtual buckets.
    pub virtual_bucket_count: u32,
    /// The shards in definition order.
    pub shards: Vec<ShardSnapshotBody>,
    /// Bucket ranges in canonical coalesced order.
    pub bucket_ranges: Vec<BucketRangeBody>,
    /// Exact pins: route key to shard id.
    pub exact_key_pins: BTreeMap<String, String>,
}

impl From<ShardMapSnapshot> for ShardMapSnapshotBody {
    fn from(snapshot: ShardMapSnapshot) -> Self {
        let ShardMapSnapshot {
            keyspace,
            map_version,
            virtual_bucket_count,
            shards,
            bucket_ranges,
            exact_key_pins,
        } = snapshot;
        Self {
            keyspace,
            map_version,
            virtual_bucket_count,
            shards: shards.into_iter().map(Into::into).collect(),
            bucket_ranges: bucket_ranges.into_iter().map(Into::into).collect(),
            exact_key_pins,
        }
    }
}

/// Where a route resolves.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ResolvedRoute)]
pub struct ResolvedRouteBody {
    /// The map's keyspace.
    pub keyspace: String,
    /// The trimmed route key.
    pub key: String,
    /// The route token, an unsigned 64-bit number (may exceed 2^53).
    pub token: u64,
    /// The token as 16 lowercase hex digits.
    pub token_hex: String,
    /// The hash bucket (reported even when a pin decided).
    pub bucket: u32,
    /// The shard the route resolves to.
    pub shard_id: String,
    /// The map version.
    pub map_version: u64,
    /// Whether a pin or a bucket range decided.
    #[schema(value_type = RouteSourceSchema)]
    pub source: RouteSource,
}

impl From<ResolvedRoute> for ResolvedRouteBody {
    fn from(route: ResolvedRoute) -> Self {
        let ResolvedRoute {
            keyspace,
            key,
            token,
            token_hex,
            bucket,
            shard_id,
            map_version,
            source,
        } = route;
        Self {
            keyspace,
            key,
            token,
            token_hex,
            bucket,
            shard_id,
            map_version,
            source,
        }
    }
}

/// One shard's health and metadata.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ShardStatus)]
pub struct ShardStatusBody {
    /// The shard.
    pub shard_id: String,
    /// Its file or endpoint (never a connection string).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_source: Option<String>,
    /// Whether it is enabled in the map.
    pub enabled: bool,
    /// Whether the probe succeeded.
    pub healthy: bool,
    /// Primary or replica.
    #[schema(value_type = ShardRoleSchema)]
    pub role: ShardRole,
    /// For replicas, the primary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_shard_id: Option<String>,
    /// For replicas, whether promotion is allowed.
    pub promotion_eligible: bool,
    /// A healthy, promotion-eligible replica.
    pub can_promote: bool,
    /// For replicas, the reported lag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication_lag_bytes: Option<i64>,
    /// For replicas, the last catch-up time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_replicated_utc: Option<String>,
    /// Why the shard is unhealthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The probe's counts, when healthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub info: Option<DatabaseInfoBody>,
}

impl From<ShardStatus> for ShardStatusBody {
    fn from(status: ShardStatus) -> Self {
        let ShardStatus {
            shard_id,
            data_source,
            enabled,
            healthy,
            role,
            primary_shard_id,
            promotion_eligible,
            can_promote,
            replication_lag_bytes,
            last_replicated_utc,
            error,
            info,
        } = status;
        Self {
            shard_id,
            data_source,
            enabled,
            healthy,
            role,
            primary_shard_id,
            promotion_eligible,
            can_promote,
            replication_lag_bytes,
            last_replicated_utc,
            error,
            info: info.map(Into::into),
        }
    }
}

/// One shard's outcome in a fan-out.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ShardSqlResult)]
pub struct ShardSqlResultBody {
    /// The shard.
    pub shard_id: String,
    /// Its result, on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<SqlResultBody>,
    /// Its error, on failure (internal errors are reported generically).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The error's code, on failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
}

impl From<ShardSqlResult> for ShardSqlResultBody {
    fn from(outcome: ShardSqlResult) -> Self {
        let ShardSqlResult {
            shard_id,
            result,
            error,
            error_code,
        } = outcome;
        Self {
            shard_id,
            result: result.map(Into::into),
            error,
            error_code,
        }
    }
}

/// One row of catalog history.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = CatalogHistoryEntry)]
pub struct CatalogHistoryEntryBody {
    /// When the change was written (RFC 3339).
    pub applied_utc: String,
    /// The keyspace.
    pub keyspace: String,
    /// The map version written.
    pub map_version: u64,
    /// Who made the change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Whether bucket or pin ownership changed without a data migration.
    pub metadata_only_ownership_change: bool,
}

impl From<CatalogHistoryEntry> for CatalogHistoryEntryBody {
    fn from(entry: CatalogHistoryEntry) -> Self {
        let CatalogHistoryEntry {
            applied_utc,
            keyspace,
            map_version,
            operator,
            comment,
            metadata_only_ownership_change,
        } = entry;
        Self {
            applied_utc,
            keyspace,
            map_version,
            operator,
            comment,
            metadata_only_ownership_change,
        }
    }
}

/// The catalog: active and pending maps (secret-free) and history.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = CatalogState)]
pub struct CatalogStateBody {
    /// `master-catalog` when a catalog file backs the map.
    pub source: String,
    /// Whether a catalog file backs the map.
    pub is_catalog_enabled: bool,
    /// The live map.
    pub active_map: ShardMapSnapshotBody,
    /// A stored map with another version than the live one, waiting for activation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_map: Option<ShardMapSnapshotBody>,
    /// Catalog history, newest first.
    pub history: Vec<CatalogHistoryEntryBody>,
}

impl From<CatalogState> for CatalogStateBody {
    fn from(state: CatalogState) -> Self {
        let CatalogState {
            source,
            is_catalog_enabled,
            active_map,
            pending_map,
            history,
        } = state;
        Self {
            source,
            is_catalog_enabled,
            active_map: active_map.into(),
            pending_map: pending_map.map(Into::into),
            history: history.into_iter().map(Into::into).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The wire type must serialise exactly like the client type it mirrors.
    fn same_json<C: Serialize + Clone, W: Serialize + From<C>>(client: &C) {
        let expected = serde_json::to_value(client).unwrap();
        let actual = serde_json::to_value(W::from(client.clone())).unwrap();
        assert_eq!(actual, expected);
    }

    fn sql_result() -> SqlResult {
        SqlResult {
            is_query: true,
            column_names: vec!["id".into(), "b".into()],
            rows: vec![vec![Value::Integer(i64::MAX), Value::Blob(vec![0, 1, 255])]],
            rows_affected: 3,
            elapsed_ms: 0.25,
        }
    }

    fn info() -> DatabaseInfo {
        DatabaseInfo {
            data_source: "sharded://tenants?version=1".into(),
            table_count: 1,
            index_count: 2,
            view_count: 3,
            trigger_count: 4,
            collection_count: 5,
            saved_query_count: 6,
            procedure_count: 7,
        }
    }

    fn snapshot() -> ShardMapSnapshot {
        ShardMapSnapshot {
            keyspace: "tenants".into(),
            map_version: 2,
            virtual_bucket_count: 4,
            shards: vec![ShardSnapshot {
                shard_id: "s0".into(),
                enabled: true,
                role: ShardRole::Replica,
                primary_shard_id: Some("s1".into()),
                promotion_eligible: true,
                replication_lag_bytes: Some(10),
                last_replicated_utc: Some("2026-01-01T00:00:00Z".into()),
                transport: Transport::Grpc,
                endpoint: Some("http://127.0.0.1:1".into()),
                data_source: None,
                has_connection_string: false,
                has_api_key: true,
                api_key_header_name: Some("X-Key".into()),
            }],
            bucket_ranges: vec![BucketRange::new(0, 4, "s1")],
            exact_key_pins: [("a".to_owned(), "s1".to_owned())].into(),
        }
    }

    #[test]
    fn data_bodies_serialise_like_the_client_types() {
        same_json::<_, SqlResultBody>(&sql_result());
        same_json::<_, DatabaseInfoBody>(&info());
        same_json::<_, TableSchemaBody>(&TableSchema {
            name: "t".into(),
            columns: vec![
                ColumnInfo {
                    name: "id".into(),
                    declared_type: "INTEGER".into(),
                    not_null: true,
                    primary_key_position: 1,
                    default_value: Some("0".into()),
                },
                ColumnInfo {
                    name: "v".into(),
                    declared_type: String::new(),
                    not_null: false,
                    primary_key_position: 0,
                    default_value: None,
                },
            ],
            primary_key: "id".into(),
            sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v)".into(),
        });
        same_json::<_, RowPageBody>(&RowPage {
            column_names: vec!["id".into()],
            rows: vec![vec![Value::Real(1.5)]],
            total_rows: 1,
            page: 1,
            page_size: 50,
            total_pages: 1,
        });
        same_json::<_, DocumentPageBody>(&DocumentPage {
            collection_name: "c".into(),
            documents: vec![Document {
                key: "k".into(),
                document: json!({"a": [1, 2]}),
            }],
            total_count: 1,
            page: 1,
            page_size: 10,
            total_pages: 1,
        });
        same_json::<_, SavedQueryBody>(&SavedQuery {
            name: "q".into(),
            sql_text: "SELECT 1".into(),
            created_utc: "2026-01-01T00:00:00Z".into(),
            updated_utc: "2026-01-02T00:00:00Z".into(),
        });
        for description in [None, Some("d".to_owned())] {
            same_json::<_, ProcedureBody>(&ProcedureDefinition {
                name: "p".into(),
                body_sql: "INSERT INTO t (v) VALUES (:v)".into(),
                parameters: vec![ProcedureParameter {
                    name: "v".into(),
                    required: false,
                    default: Value::Text("x".into()),
                }],
                description,
            });
        }
        for expires_at_utc in [None, Some("2026-01-01T00:00:30Z".to_owned())] {
            same_json::<_, TransactionInfoBody>(&TransactionInfo {
                transaction_id: "csdbshard:1:s0:abc".into(),
                expires_at_utc,
            });
        }
    }

    #[test]
    fn admin_bodies_serialise_like_the_client_types() {
        same_json::<_, ShardMapSnapshotBody>(&snapshot());
        for source in [RouteSource::Pin, RouteSource::BucketRange] {
            same_json::<_, ResolvedRouteBody>(&ResolvedRoute {
                keyspace: "tenants".into(),
                key: "a".into(),
                token: u64::MAX,
                token_hex: "ffffffffffffffff".into(),
                bucket: 3,
                shard_id: "s0".into(),
                map_version: 1,
                source,
            });
        }
        same_json::<_, ShardStatusBody>(&ShardStatus {
            shard_id: "s0".into(),
            data_source: Some("s0.db".into()),
            enabled: true,
            healthy: true,
            role: ShardRole::Primary,
            primary_shard_id: None,
            promotion_eligible: false,
            can_promote: false,
            replication_lag_bytes: None,
            last_replicated_utc: None,
            error: Some("x".into()),
            info: Some(info()),
        });
        same_json::<_, ShardSqlResultBody>(&ShardSqlResult {
            shard_id: "s0".into(),
            result: Some(sql_result()),
            error: Some("e".into()),
            error_code: Some("sql".into()),
        });
        same_json::<_, CatalogStateBody>(&CatalogState {
            source: "master-catalog".into(),
            is_catalog_enabled: true,
            active_map: snapshot(),
            pending_map: Some(snapshot()),
            history: vec![CatalogHistoryEntry {
                applied_utc: "2026-01-01T00:00:00Z".into(),
                keyspace: "tenants".into(),
                map_version: 1,
                operator: Some("op".into()),
                comment: Some("c".into()),
                metadata_only_ownership_change: true,
            }],
        });
    }

    #[test]
    fn enum_schemas_spell_variants_like_the_wire() {
        let pairs = [
            (json!(ShardRole::Primary), json!(ShardRoleSchema::Primary)),
            (json!(ShardRole::Replica), json!(ShardRoleSchema::Replica)),
            (json!(Transport::Direct), json!(TransportSchema::Direct)),
            (json!(Transport::Http), json!(TransportSchema::Http)),
            (json!(Transport::Grpc), json!(TransportSchema::Grpc)),
            (json!(RouteSource::Pin), json!(RouteSourceSchema::Pin)),
            (json!(RouteSource::BucketRange), json!(RouteSourceSchema::BucketRange)),
        ];
        for (wire, schema) in pairs {
            assert_eq!(wire, schema);
        }
    }

    #[test]
    fn request_bodies_refuse_unknown_fields() {
        let err = serde_json::from_str::<SqlRequest>(r#"{"sql":"SELECT 1","paramaters":[1]}"#).unwrap_err();
        assert!(err.to_string().contains("paramaters"), "{err}");
        let ok: SqlRequest = serde_json::from_str(r#"{"sql":"SELECT ?1","parameters":[1]}"#).unwrap();
        assert_eq!(ok.parameters, Some(Params::Positional(vec![Value::Integer(1)])));
    }
}
