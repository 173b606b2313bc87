//! Tables and rows: `/api/tables/...`.
//!
//! A row's primary key travels as a path segment, which is text. It is read with the SQLite type
//! affinity of the key column's declared type (so `/rows/42` finds the integer key 42), or as
//! the type named by `?pkType=integer|real|text|blob` (blob keys as base64).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

use super::bodies::{PageQuery, PkQuery, PkType, RowBody, RowValuesRequest, RowsAffectedBody, TableCountBody};
use super::error::{ApiError, Problem};
use super::extract::{Json, Path, Query};
use crate::client::{DataClient, RowPage, TableSchema, Value};
use crate::server::{ServerState, Target};

/// User table names, sorted.
#[utoipa::path(
    get,
    path = "/api/tables",
    tag = "tables",
    operation_id = "listTables",
    responses((status = 200, description = "Table names", body = Vec<String>))
)]
pub async fn list_tables(
    State(state): State<ServerState>,
    target: Target,
) -> Result<axum::Json<Vec<String>>, ApiError> {
    Ok(axum::Json(state.data_client(&target)?.list_tables().await?))
}

/// A table's columns and primary key.
#[utoipa::path(
    get,
    path = "/api/tables/{name}/schema",
    tag = "tables",
    operation_id = "getTableSchema",
    params(("name" = String, Path, description = "The table")),
    responses(
        (status = 200, description = "The schema", body = TableSchema),
        (status = 404, description = "No such table", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn table_schema(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
) -> Result<axum::Json<TableSchema>, ApiError> {
    Ok(axum::Json(state.data_client(&target)?.table_schema(&name).await?))
}

/// Rows in a table.
#[utoipa::path(
    get,
    path = "/api/tables/{name}/count",
    tag = "tables",
    operation_id = "countRows",
    params(("name" = String, Path, description = "The table")),
    responses(
        (status = 200, description = "The count", body = TableCountBody),
        (status = 404, description = "No such table", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn count_rows(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
) -> Result<axum::Json<TableCountBody>, ApiError> {
    let count = state.data_client(&target)?.count_rows(&name).await?;
    Ok(axum::Json(TableCountBody {
        table_name: name,
        count,
    }))
}

/// One page of a table, in primary-key order.
#[utoipa::path(
    get,
    path = "/api/tables/{name}/rows",
    tag = "tables",
    operation_id = "browseRows",
    params(("name" = String, Path, description = "The table"), PageQuery),
    responses(
        (status = 200, description = "The page", body = RowPage),
        (status = 404, description = "No such table", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn browse_rows(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
    Query(paging): Query<PageQuery>,
) -> Result<axum::Json<RowPage>, ApiError> {
    let (page, page_size) = paging.resolve()?;
    let rows = state.data_client(&target)?.browse_rows(&name, page, page_size).await?;
    Ok(axum::Json(rows))
}

/// Inserts a row.
#[utoipa::path(
    post,
    path = "/api/tables/{name}/rows",
    tag = "tables",
    operation_id = "insertRow",
    params(("name" = String, Path, description = "The table")),
    request_body = RowValuesRequest,
    responses(
        (status = 201, description = "Inserted", body = RowsAffectedBody),
        (status = 404, description = "No such table", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A constraint was violated", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn insert_row(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
    Json(request): Json<RowValuesRequest>,
) -> Result<(StatusCode, axum::Json<RowsAffectedBody>), ApiError> {
    let rows_affected = state.data_client(&target)?.insert_row(&name, request.values).await?;
    Ok((StatusCode::CREATED, axum::Json(RowsAffectedBody { rows_affected })))
}

/// A row by primary key.
#[utoipa::path(
    get,
    path = "/api/tables/{name}/rows/{pk}",
    tag = "tables",
    operation_id = "getRow",
    params(
        ("name" = String, Path, description = "The table"),
        ("pk" = String, Path, description = "The primary-key value (see `pkType`)"),
        PkQuery,
    ),
    responses(
        (status = 200, description = "The row", body = RowBody),
        (status = 404, description = "No such table or row", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_row(
    State(state): State<ServerState>,
    target: Target,
    Path((name, pk)): Path<(String, String)>,
    Query(options): Query<PkQuery>,
) -> Result<axum::Json<RowBody>, ApiError> {
    let (client, key) = row_key(state.data_client(&target), &name, &pk, options.pk_type).await?;
    match client.get_row(&name, key).await? {
        Some(row) => Ok(axum::Json(RowBody(row))),
        None => Err(row_not_found(&name, &pk)),
    }
}

/// Updates a row by primary key.
#[utoipa::path(
    put,
    path = "/api/tables/{name}/rows/{pk}",
    tag = "tables",
    operation_id = "updateRow",
    params(
        ("name" = String, Path, description = "The table"),
        ("pk" = String, Path, description = "The primary-key value (see `pkType`)"),
        PkQuery,
    ),
    request_body = RowValuesRequest,
    responses(
        (status = 200, description = "Updated", body = RowsAffectedBody),
        (status = 404, description = "No such table or row", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A constraint was violated", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn update_row(
    State(state): State<ServerState>,
    target: Target,
    Path((name, pk)): Path<(String, String)>,
    Query(options): Query<PkQuery>,
    Json(request): Json<RowValuesRequest>,
) -> Result<axum::Json<RowsAffectedBody>, ApiError> {
    let (client, key) = row_key(state.data_client(&target), &name, &pk, options.pk_type).await?;
    match client.update_row(&name, key, request.values).await? {
        0 => Err(row_not_found(&name, &pk)),
        rows_affected => Ok(axum::Json(RowsAffectedBody { rows_affected })),
    }
}

/// Deletes a row by primary key.
#[utoipa::path(
    delete,
    path = "/api/tables/{name}/rows/{pk}",
    tag = "tables",
    operation_id = "deleteRow",
    params(
        ("name" = String, Path, description = "The table"),
        ("pk" = String, Path, description = "The primary-key value (see `pkType`)"),
        PkQuery,
    ),
    responses(
        (status = 200, description = "Deleted", body = RowsAffectedBody),
        (status = 404, description = "No such table or row", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_row(
    State(state): State<ServerState>,
    target: Target,
    Path((name, pk)): Path<(String, String)>,
    Query(options): Query<PkQuery>,
) -> Result<axum::Json<RowsAffectedBody>, ApiError> {
    let (client, key) = row_key(state.data_client(&target), &name, &pk, options.pk_type).await?;
    match client.delete_row(&name, key).await? {
        0 => Err(row_not_found(&name, &pk)),
        rows_affected => Ok(axum::Json(RowsAffectedBody { rows_affected })),
    }
}

fn row_not_found(table: &str, pk: &str) -> ApiError {
    ApiError::not_found("row", format!("{table}/{pk}"))
}

/// The client a row call runs on, and the key value a path segment stands for: as `pk_type`
/// says, or by the key column's affinity. A key that does not parse as `pk_type` is refused
/// before a missing client is (a sharded daemon sent no route).
async fn row_key(
    client: crate::Result<Arc<dyn DataClient>>,
    table: &str,
    pk: &str,
    pk_type: Option<PkType>,
) -> Result<(Arc<dyn DataClient>, Value), ApiError> {
    let typed = pk_type.map(|pk_type| key_as(pk, pk_type)).transpose()?;
    let client = client?;
    let key = match typed {
        Some(key) => key,
        None => key_by_affinity(&client.table_schema(table).await?, pk),
    };
    Ok((client, key))
}

fn key_as(pk: &str, pk_type: PkType) -> Result<Value, ApiError> {
    match pk_type {
        PkType::Integer => pk
            .parse::<i64>()
            .map(Value::Integer)
            .map_err(|_| ApiError::invalid("pk", format!("'{pk}' is not a 64-bit integer (pkType=integer)"))),
        PkType::Real => parse_finite(pk)
            .map(Value::Real)
            .ok_or_else(|| ApiError::invalid("pk", format!("'{pk}' is not a finite number (pkType=real)"))),
        PkType::Text => Ok(Value::Text(pk.to_owned())),
        PkType::Blob => [STANDARD, URL_SAFE, STANDARD_NO_PAD, URL_SAFE_NO_PAD]
            .iter()
            .find_map(|engine| engine.decode(pk).ok())
            .map(Value::Blob)
            .ok_or_else(|| ApiError::invalid("pk", "the key is not base64 (pkType=blob)")),
    }
}

/// SQLite's column affinity of a declared type (<https://sqlite.org/datatype3.html#type_affinity>).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Affinity {
    Integer,
    Text,
    Blob,
    Real,
    Numeric,
}

fn affinity(declared_type: &str) -> Affinity {
    let declared = declared_type.to_ascii_uppercase();
    if declared.contains("INT") {
        Affinity::Integer
    } else if ["CHAR", "CLOB", "TEXT"].iter().any(|t| declared.contains(t)) {
        Affinity::Text
    } else if declared.contains("BLOB") || declared.trim().is_empty() {
        Affinity::Blob
    } else if ["REAL", "FLOA", "DOUB"].iter().any(|t| declared.contains(t)) {
        Affinity::Real
    } else {
        Affinity::Numeric
    }
}

/// Reads the key the way SQLite would convert it when comparing with the key column: numeric
/// affinities take a number when the text is one; everything else stays text.
fn key_by_affinity(schema: &TableSchema, pk: &str) -> Value {
    let column = schema
        .columns
        .iter()
        .find(|c| c.name.eq_ignore_ascii_case(&schema.primary_key));
    let affinity = match column {
        Some(column) => affinity(&column.declared_type),
        // No declared key: rows are addressed by rowid, an integer.
        None if schema.primary_key.eq_ignore_ascii_case("rowid") => Affinity::Integer,
        // A composite key: the engine refuses the operation with a clear error.
        None => Affinity::Text,
    };
    let number = || {
        pk.parse::<i64>()
            .map(Value::Integer)
            .ok()
            .or_else(|| parse_finite(pk).map(Value::Real))
    };
    match affinity {
        Affinity::Integer | Affinity::Numeric => number(),
        Affinity::Real => parse_finite(pk).map(Value::Real),
        Affinity::Text | Affinity::Blob => None,
    }
    .unwrap_or_else(|| Value::Text(pk.to_owned()))
}

fn parse_finite(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ColumnInfo;

    fn schema(declared_type: &str) -> TableSchema {
        TableSchema {
            name: "t".into(),
            columns: vec![ColumnInfo {
                name: "id".into(),
                declared_type: declared_type.into(),
                not_null: false,
                primary_key_position: 1,
                default_value: None,
            }],
            primary_key: "id".into(),
            sql: String::new(),
        }
    }

    #[test]
    fn affinity_follows_sqlite_rules() {
        for (declared, expected) in [
            ("INTEGER", Affinity::Integer),
            ("bigint", Affinity::Integer),
            ("VARCHAR(20)", Affinity::Text),
            ("text", Affinity::Text),
            ("BLOB", Affinity::Blob),
            ("", Affinity::Blob),
            ("DOUBLE PRECISION", Affinity::Real),
            ("FLOAT", Affinity::Real),
            ("DECIMAL(10,2)", Affinity::Numeric),
            ("BOOLEAN", Affinity::Numeric),
            // "INT" wins over "CHAR": CHARINT has integer affinity.
            ("CHARINT", Affinity::Integer),
        ] {
            assert_eq!(affinity(declared), expected, "{declared}");
        }
    }

    #[test]
    fn keys_follow_the_column_affinity() {
        assert_eq!(key_by_affinity(&schema("INTEGER"), "42"), Value::Integer(42));
        assert_eq!(
            key_by_affinity(&schema("INTEGER"), "-9223372036854775808"),
            Value::Integer(i64::MIN)
        );
        assert_eq!(key_by_affinity(&schema("INTEGER"), "abc"), Value::Text("abc".into()));
        assert_eq!(key_by_affinity(&schema("REAL"), "1.5"), Value::Real(1.5));
        assert_eq!(key_by_affinity(&schema("NUMERIC"), "1.5"), Value::Real(1.5));
        assert_eq!(key_by_affinity(&schema("REAL"), "inf"), Value::Text("inf".into()));
        assert_eq!(key_by_affinity(&schema("TEXT"), "0042"), Value::Text("0042".into()));
        assert_eq!(key_by_affinity(&schema(""), "42"), Value::Text("42".into()));
        let mut rowid = schema("TEXT");
        rowid.columns[0].primary_key_position = 0;
        rowid.primary_key = "rowid".into();
        assert_eq!(key_by_affinity(&rowid, "7"), Value::Integer(7));
    }

    #[test]
    fn explicit_key_types_are_strict() {
        assert_eq!(key_as("7", PkType::Integer).unwrap(), Value::Integer(7));
        assert!(key_as("7.5", PkType::Integer).is_err());
        assert_eq!(key_as("7.5", PkType::Real).unwrap(), Value::Real(7.5));
        assert!(key_as("NaN", PkType::Real).is_err());
        assert_eq!(key_as("007", PkType::Text).unwrap(), Value::Text("007".into()));
        assert_eq!(key_as("AAH/", PkType::Blob).unwrap(), Value::Blob(vec![0, 1, 255]));
        assert_eq!(key_as("AAH_", PkType::Blob).unwrap(), Value::Blob(vec![0, 1, 255]));
        assert_eq!(key_as("AAE", PkType::Blob).unwrap(), Value::Blob(vec![0, 1]));
        assert!(key_as("not base64!", PkType::Blob).is_err());
    }
}
