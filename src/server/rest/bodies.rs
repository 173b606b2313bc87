//! The request bodies the REST API accepts and the small responses that have no data type (the
//! OpenAPI side; SQL schema across shards is `schema.rs`).
//!
//! Every other response is a data type itself ([`SqlResult`](crate::data::SqlResult),
//! [`ShardStatus`](crate::data::ShardStatus), [`ResolvedRoute`](crate::routing::ResolvedRoute),
//! ...), deriving its schema when the `server` feature is on, so `/openapi.json` describes the
//! very types a remote client deserialises; the schemas of hand-written serde formats are in
//! [`crate::data::openapi`].

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::data::openapi::{ParamsSchema, ValueSchema};
use crate::data::{Params, ProcedureParameter, Row};

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

/// How a transaction begins (`POST /api/transactions`); the body is optional.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BeginTransactionRequest {
    /// An atomic transaction across shards (a daemon serving a shard map, `write` scope): begun
    /// without a route, its id is `csdbatomic:{32 hex digits}`, each execute carries the route
    /// headers of the shard it runs on, and commit applies its writes on every shard or on none.
    #[serde(default)]
    pub atomic: bool,
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
    pub parameters: Vec<ProcedureParameter>,
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
    /// The page, from 1 (default 1) to 2^31 - 1.
    #[param(minimum = 1, maximum = 2_147_483_647, default = 1)]
    pub page: Option<u32>,
    /// Items per page, 1 to 1000 (default 50).
    #[param(minimum = 1, maximum = 1000, default = 50)]
    pub page_size: Option<u32>,
}

impl PageQuery {
    /// The page and page size, with defaults applied; a page past the documented range is refused
    /// here, and the engine validates the rest.
    pub fn resolve(&self) -> Result<(u32, u32), crate::Error> {
        let page = self.page.unwrap_or(1);
        if i32::try_from(page).is_err() {
            return Err(crate::Error::invalid_argument(
                "page",
                format!("{page} is past the last page number accepted, {}", i32::MAX),
            ));
        }
        Ok((page, self.page_size.unwrap_or(50)))
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

#[cfg(test)]
mod tests {
    use serde_json::{Value as Json, json};

    use super::*;
    use crate::client::Value;
    use crate::map::{Secret, ShardRole, Transport};
    use crate::routing::RouteSource;
    use crate::server::ServerConfig;

    fn document() -> Json {
        // With an API key, so the security scheme is part of what is checked.
        let config = ServerConfig {
            api_key: Some(Secret::new("key")),
            ..ServerConfig::default()
        };
        serde_json::to_value(crate::server::rest::openapi_document(&config, Some("orders_by_month"))).unwrap()
    }

    fn collect_refs<'a>(node: &'a Json, refs: &mut Vec<&'a str>) {
        match node {
            Json::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("$ref", Json::String(target)) => refs.push(target),
                        _ => collect_refs(value, refs),
                    }
                }
            }
            Json::Array(items) => items.iter().for_each(|item| collect_refs(item, refs)),
            _ => {}
        }
    }

    #[test]
    fn the_document_has_the_client_type_schemas_and_every_ref_resolves() {
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        for name in [
            "SqlResult",
            "DatabaseInfo",
            "TableSchema",
            "ColumnInfo",
            "RowPage",
            "Row",
            "Document",
            "DocumentPage",
            "SavedQuery",
            "ProcedureDefinition",
            "ProcedureParameter",
            "TransactionInfo",
            "ShardMapSnapshot",
            "MapSummary",
            "ShardSnapshot",
            "BucketRange",
            "ResolvedRoute",
            "ShardStatus",
            "ShardSqlResult",
            "CatalogState",
            "CatalogHistoryEntry",
            "ShardRole",
            "Transport",
            "RouteSource",
            "Value",
            "Parameters",
            "Problem",
        ] {
            assert!(schemas[name].is_object(), "no component schema {name}");
        }

        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        assert!(refs.contains(&"#/components/schemas/ResolvedRoute"), "{refs:?}");
        for target in refs {
            let name = target
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("unexpected $ref {target}"));
            assert!(schemas[name].is_object(), "$ref {target} does not resolve");
        }
    }

    #[test]
    fn value_fields_refer_to_the_value_schema() {
        // utoipa reads any type named `Value` as `serde_json::Value` (any JSON); the client
        // types must point their SQLite values at the hand-written schema instead.
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        let value = json!("#/components/schemas/Value");
        assert_eq!(
            schemas["SqlResult"]["properties"]["rows"]["items"]["items"]["$ref"],
            value
        );
        assert_eq!(
            schemas["RowPage"]["properties"]["rows"]["items"]["items"]["$ref"],
            value
        );
        assert_eq!(schemas["ProcedureParameter"]["properties"]["default"]["$ref"], value);
        assert_eq!(schemas["Row"]["additionalProperties"]["$ref"], value);
    }

    #[test]
    fn enum_schemas_spell_variants_like_the_wire() {
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        let cases = [
            ("ShardRole", json!([ShardRole::Primary, ShardRole::Replica])),
            (
                "Transport",
                json!([Transport::Direct, Transport::Http, Transport::Grpc]),
            ),
            ("RouteSource", json!([RouteSource::Pin, RouteSource::BucketRange])),
        ];
        for (name, wire) in cases {
            assert_eq!(schemas[name]["enum"], wire, "{name}");
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

/// An atomic transaction not finished on every participant, as one shard holds it (see
/// [`UnresolvedAtomic`](crate::client::UnresolvedAtomic)).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnresolvedAtomicEntry {
    /// The transaction's id (`csdbatomic:{32 hex digits}`).
    #[schema(example = "csdbatomic:0123456789abcdef0123456789abcdef")]
    pub transaction_id: String,
    /// The shard that holds this record or intent.
    pub shard_id: String,
    /// Where it stands there: `prepared` (an intent, its rows locked, awaiting the decision),
    /// `pending` (the undecided decision record), `commit` or `abort` (decided, some participant
    /// not finished yet).
    #[schema(example = "prepared")]
    pub state: String,
    /// Its participant shards; the first holds the decision.
    pub participants: Vec<String>,
    /// How long ago it was prepared there (or its record created), in milliseconds.
    pub age_ms: u64,
}

impl From<crate::client::UnresolvedAtomic> for UnresolvedAtomicEntry {
    fn from(u: crate::client::UnresolvedAtomic) -> Self {
        let state = serde_json::to_value(u.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        Self {
            transaction_id: u.transaction_id,
            shard_id: u.shard_id,
            state,
            participants: u.participants,
            age_ms: u.age_ms,
        }
    }
}
