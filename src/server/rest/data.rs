//! `GET /api/info`, `POST /api/sql/execute` and `POST /api/sql/read-only`.

use axum::Extension;
use axum::extract::State;

use super::bodies::SqlRequest;
use super::error::ApiError;
use super::extract::Json;
use crate::client::{DatabaseInfo, SqlResult};
use crate::server::sql_access::SqlAccess;
use crate::server::{Backend, ServerState, Target};

/// Counts of tables, indexes, views, triggers, collections, saved queries and procedures: of the
/// route's shard, or summed over every shard when no route is sent.
#[utoipa::path(
    get,
    path = "/api/info",
    tag = "data",
    operation_id = "getInfo",
    responses((status = 200, description = "Counts", body = DatabaseInfo))
)]
pub async fn info(State(state): State<ServerState>, target: Target) -> Result<axum::Json<DatabaseInfo>, ApiError> {
    let mut info = state.info(&target).await?;
    // Clients learn which database answered, never where its file lives.
    info.data_source = match (state.backend(), &target.route) {
        (Backend::Sharded(sharded), Some(route)) => {
            let resolved = sharded.resolve_route(route)?;
            format!("{}&shard={}", sharded.data_source(), resolved.shard_id)
        }
        (Backend::Sharded(sharded), None) => sharded.data_source().to_owned(),
        (Backend::Host(_), _) => format!("shard={}", target.shard.as_deref().unwrap_or_default()),
        (Backend::Plain(local), _) => local
            .database()
            .path()
            .file_name()
            .map_or_else(|| "database".to_owned(), |name| name.to_string_lossy().into_owned()),
    };
    Ok(axum::Json(info))
}

/// Executes SQL (one statement or a script) with bound parameters on the route's shard. A key
/// with the `write` scope runs any SQL; a key with `read` and not `write` runs it read-only, as
/// `POST /api/sql/read-only` does, and a statement that would write is refused (403
/// `permission_denied` naming the `write` scope) with nothing written.
#[utoipa::path(
    post,
    path = "/api/sql/execute",
    tag = "data",
    operation_id = "executeSql",
    request_body = SqlRequest,
    responses(
        (status = 200, description = "The result of the last statement that returned rows", body = SqlResult),
        (status = 403, description = "The API key lacks the `write` scope for SQL that writes (with `read` alone, SQL runs read-only), \
            or lacks both `read` and `write`, or this keyspace (`permission_denied`)", body = super::error::Problem,
            content_type = "application/problem+json"),
        (status = 409, description = "A constraint was violated (`constraint`)", body = super::error::Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn execute_sql(
    State(state): State<ServerState>,
    Extension(access): Extension<SqlAccess>,
    target: Target,
    Json(request): Json<SqlRequest>,
) -> Result<axum::Json<SqlResult>, ApiError> {
    let client = state.data_client(&target)?;
    let result = access
        .execute_sql(client.as_ref(), &request.sql, request.parameters.unwrap_or_default())
        .await?;
    Ok(axum::Json(result))
}

/// Executes SQL that must not write, on the route's shard: every statement must be a query that
/// SQLite reports as read-only, run on a connection that cannot write; otherwise nothing runs
/// (400 `read_only`). Needs the `read` scope.
#[utoipa::path(
    post,
    path = "/api/sql/read-only",
    tag = "data",
    operation_id = "executeReadOnlySql",
    request_body = SqlRequest,
    responses(
        (status = 200, description = "The result of the last statement that returned rows", body = SqlResult),
        (status = 400, description = "A statement could write (`read_only`), or other bad input", body = super::error::Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn execute_read_only_sql(
    State(state): State<ServerState>,
    target: Target,
    Json(request): Json<SqlRequest>,
) -> Result<axum::Json<SqlResult>, ApiError> {
    let result = state
        .data_client(&target)?
        .execute_read_only_sql(&request.sql, request.parameters.unwrap_or_default())
        .await?;
    Ok(axum::Json(result))
}
