//! Collections of JSON documents: `/api/collections/...`.

use axum::extract::State;
use axum::http::StatusCode;

use super::bodies::{CollectionCountBody, DocumentRequest, PageQuery};
use super::error::{ApiError, Problem};
use super::extract::{Json, Path, Query};
use crate::client::{Document, DocumentPage};
use crate::server::{ServerState, Target};

/// Collection names, sorted.
#[utoipa::path(
    get,
    path = "/api/collections",
    tag = "collections",
    operation_id = "listCollections",
    responses((status = 200, description = "Collection names", body = Vec<String>))
)]
pub async fn list_collections(
    State(state): State<ServerState>,
    target: Target,
) -> Result<axum::Json<Vec<String>>, ApiError> {
    Ok(axum::Json(state.data_client(&target)?.list_collections().await?))
}

/// One page of a collection, in key order.
#[utoipa::path(
    get,
    path = "/api/collections/{name}",
    tag = "collections",
    operation_id = "browseDocuments",
    params(("name" = String, Path, description = "The collection"), PageQuery),
    responses((status = 200, description = "The page", body = DocumentPage))
)]
pub async fn browse_documents(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
    Query(paging): Query<PageQuery>,
) -> Result<axum::Json<DocumentPage>, ApiError> {
    let (page, page_size) = paging.resolve()?;
    let documents = state
        .data_client(&target)?
        .browse_documents(&name, page, page_size)
        .await?;
    Ok(axum::Json(documents))
}

/// Deletes a collection and all its documents.
#[utoipa::path(
    delete,
    path = "/api/collections/{name}",
    tag = "collections",
    operation_id = "dropCollection",
    params(("name" = String, Path, description = "The collection")),
    responses(
        (status = 204, description = "Dropped"),
        (status = 404, description = "The collection has no documents (`missing`: `collection`)", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn drop_collection(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.data_client(&target)?.drop_collection(&name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("collection", name))
    }
}

/// Documents in a collection.
#[utoipa::path(
    get,
    path = "/api/collections/{name}/count",
    tag = "collections",
    operation_id = "countDocuments",
    params(("name" = String, Path, description = "The collection")),
    responses((status = 200, description = "The count", body = CollectionCountBody))
)]
pub async fn count_documents(
    State(state): State<ServerState>,
    target: Target,
    Path(name): Path<String>,
) -> Result<axum::Json<CollectionCountBody>, ApiError> {
    let count = state.data_client(&target)?.count_documents(&name).await?;
    Ok(axum::Json(CollectionCountBody {
        collection_name: name,
        count,
    }))
}

/// A document by key.
#[utoipa::path(
    get,
    path = "/api/collections/{name}/documents/{key}",
    tag = "collections",
    operation_id = "getDocument",
    params(
        ("name" = String, Path, description = "The collection"),
        ("key" = String, Path, description = "The document key"),
    ),
    responses(
        (status = 200, description = "The document", body = Document),
        (status = 404, description = "No such document", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_document(
    State(state): State<ServerState>,
    target: Target,
    Path((name, key)): Path<(String, String)>,
) -> Result<axum::Json<Document>, ApiError> {
    match state.data_client(&target)?.get_document(&name, &key).await? {
        Some(document) => Ok(axum::Json(Document { key, document })),
        None => Err(document_not_found(&name, &key)),
    }
}

/// Stores (creates or replaces) a document.
#[utoipa::path(
    put,
    path = "/api/collections/{name}/documents/{key}",
    tag = "collections",
    operation_id = "putDocument",
    params(
        ("name" = String, Path, description = "The collection"),
        ("key" = String, Path, description = "The document key"),
    ),
    request_body = DocumentRequest,
    responses((status = 204, description = "Stored"))
)]
pub async fn put_document(
    State(state): State<ServerState>,
    target: Target,
    Path((name, key)): Path<(String, String)>,
    Json(request): Json<DocumentRequest>,
) -> Result<StatusCode, ApiError> {
    state
        .data_client(&target)?
        .put_document(&name, &key, request.document)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes a document.
#[utoipa::path(
    delete,
    path = "/api/collections/{name}/documents/{key}",
    tag = "collections",
    operation_id = "deleteDocument",
    params(
        ("name" = String, Path, description = "The collection"),
        ("key" = String, Path, description = "The document key"),
    ),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such document", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn delete_document(
    State(state): State<ServerState>,
    target: Target,
    Path((name, key)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    if state.data_client(&target)?.delete_document(&name, &key).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(document_not_found(&name, &key))
    }
}

fn document_not_found(collection: &str, key: &str) -> ApiError {
    ApiError::not_found("document", format!("{collection}/{key}"))
}
