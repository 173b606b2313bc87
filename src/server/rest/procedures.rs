//! Saved queries (`/api/saved-queries/...`) and procedures (`/api/procedures/...`), both stored
//! per shard.

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;

use super::bodies::{ExecuteProcedureRequest, ProcedureUpdateRequest, SavedQueryRequest};
use super::error::{ApiError, Problem};
use super::extract::{Json, Path};
use crate::client::{ProcedureDefinition, SavedQuery, SqlResult};
use crate::server::sql_access::SqlAccess;
use crate::server::{ServerState, Target};

/// Saved queries, by name.
#[utoipa::path(
    get,
    path = "/api/saved-queries",
    tag = "saved queries",
    operation_id = "listSavedQueries",
    responses((status = 200, description = "Saved queries", body = Vec<SavedQuery>))
)]
pub async fn list_saved_queries(
    State(state): State<ServerState>,
    target: Target,
) -> Result<axum::Json<Vec<SavedQuery>>, ApiError> {
    let queries = state.data_client(&target)?.list_saved_queries().await?;
    Ok(axum::Json(queries))
}

/// A saved query by name.
#[utoipa::path(
    get,
    path = "/api/saved-queries/{name}",
    tag = "saved queries",
    operation_id = "getSavedQuery",
    params(("name" = String, Path, description = "The saved query")),
    responses(
        (status = 200, description = "The saved query", body = SavedQuery),
        (status = 404, description = "No such saved query", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_saved_query(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
) -> Result<axum::Json<SavedQuery>, ApiError> {
    match state.data_client(&target)?.get_saved_query(&name).await? {
        Some(query) => Ok(axum::Json(query)),
        None => Err(ApiError::not_found("saved query", name)),
    }
}

/// Creates or replaces a saved query.
#[utoipa::path(
    put,
    path = "/api/saved-queries/{name}",
    tag = "saved queries",
    operation_id = "putSavedQuery",
    params(("name" = String, Path, description = "The saved query")),
    request_body = SavedQueryRequest,
    responses((status = 200, description = "The stored query", body = SavedQuery))
)]
pub async fn put_saved_query(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
    Json(request): Json<SavedQueryRequest>,
) -> Result<axum::Json<SavedQuery>, ApiError> {
    let query = state
        .data_client(&target)?
        .put_saved_query(&name, &request.sql_text)
        .await?;
    Ok(axum::Json(query))
}

/// Deletes a saved query.
#[utoipa::path(
    delete,
    path = "/api/saved-queries/{name}",
    tag = "saved queries",
    operation_id = "deleteSavedQuery",
    params(("name" = String, Path, description = "The saved query")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such saved query", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_saved_query(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.data_client(&target)?.delete_saved_query(&name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("saved query", name))
    }
}

/// Procedures, by name.
#[utoipa::path(
    get,
    path = "/api/procedures",
    tag = "procedures",
    operation_id = "listProcedures",
    responses((status = 200, description = "Procedures", body = Vec<ProcedureDefinition>))
)]
pub async fn list_procedures(
    State(state): State<ServerState>,
    target: Target,
) -> Result<axum::Json<Vec<ProcedureDefinition>>, ApiError> {
    let procedures = state.data_client(&target)?.list_procedures().await?;
    Ok(axum::Json(procedures))
}

/// Creates (or replaces) a procedure.
#[utoipa::path(
    post,
    path = "/api/procedures",
    tag = "procedures",
    operation_id = "createProcedure",
    request_body = ProcedureDefinition,
    responses((status = 201, description = "The stored procedure", body = ProcedureDefinition))
)]
pub async fn create_procedure(
    State(state): State<ServerState>,
    target: Target,
    Json(request): Json<ProcedureDefinition>,
) -> Result<(StatusCode, axum::Json<ProcedureDefinition>), ApiError> {
    let stored = state.data_client(&target)?.put_procedure(request).await?;
    Ok((StatusCode::CREATED, axum::Json(stored)))
}

/// A procedure by name.
#[utoipa::path(
    get,
    path = "/api/procedures/{name}",
    tag = "procedures",
    operation_id = "getProcedure",
    params(("name" = String, Path, description = "The procedure")),
    responses(
        (status = 200, description = "The procedure", body = ProcedureDefinition),
        (status = 404, description = "No such procedure", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_procedure(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
) -> Result<axum::Json<ProcedureDefinition>, ApiError> {
    match state.data_client(&target)?.get_procedure(&name).await? {
        Some(procedure) => Ok(axum::Json(procedure)),
        None => Err(ApiError::not_found("procedure", name)),
    }
}

/// Creates or replaces the procedure named in the path.
#[utoipa::path(
    put,
    path = "/api/procedures/{name}",
    tag = "procedures",
    operation_id = "putProcedure",
    params(("name" = String, Path, description = "The procedure")),
    request_body = ProcedureUpdateRequest,
    responses((status = 200, description = "The stored procedure", body = ProcedureDefinition))
)]
pub async fn put_procedure(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
    Json(request): Json<ProcedureUpdateRequest>,
) -> Result<axum::Json<ProcedureDefinition>, ApiError> {
    if let Some(body_name) = &request.name
        && body_name != &name
    {
        return Err(ApiError::invalid(
            "name",
            format!("the body names procedure '{body_name}' but the path names '{name}'"),
        ));
    }
    let definition = ProcedureDefinition {
        name,
        body_sql: request.body_sql,
        parameters: request.parameters,
        description: request.description,
    };
    let stored = state.data_client(&target)?.put_procedure(definition).await?;
    Ok(axum::Json(stored))
}

/// Deletes a procedure.
#[utoipa::path(
    delete,
    path = "/api/procedures/{name}",
    tag = "procedures",
    operation_id = "deleteProcedure",
    params(("name" = String, Path, description = "The procedure")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such procedure", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_procedure(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.data_client(&target)?.delete_procedure(&name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("procedure", name))
    }
}

/// Runs a procedure atomically with arguments: every statement takes effect, or none does. A key
/// with the `write` scope runs any procedure; a key with `read` and not `write` runs its body
/// read-only, on a connection that cannot write, so a procedure that only reads runs and one that
/// would write is refused (403 `permission_denied` naming the `write` scope) with nothing written.
#[utoipa::path(
    post,
    path = "/api/procedures/{name}/execute",
    tag = "procedures",
    operation_id = "executeProcedure",
    params(("name" = String, Path, description = "The procedure")),
    request_body = ExecuteProcedureRequest,
    responses(
        (status = 200, description = "The result of the body's last statement that returned rows", body = SqlResult),
        (status = 404, description = "No such procedure", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A constraint was violated; nothing was written", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn execute_procedure(
    State(state): State<ServerState>,
    Extension(access): Extension<SqlAccess>,
    target: Target,
    Path(name): Path<String>,
    Json(request): Json<ExecuteProcedureRequest>,
) -> Result<axum::Json<SqlResult>, ApiError> {
    let client = state.data_client(&target)?;
    let result = access
        .execute_procedure(client.as_ref(), &name, request.args.unwrap_or_default())
        .await?;
    Ok(axum::Json(result))
}
