//! Shard directory endpoints: `/api/sharding/directory/...`.
//!
//! Resolving a lookup key and listing a directory's entries read the live map (scope `read`); the
//! six mutations write a pending map (scope `admin`) and answer 200 with the result when it
//! `succeeded`, or 400 with the result as the problem's member `mutation` when it was refused
//! ([`DirectoryRefused`]); a bulk load (`import`, scope `admin`) upserts many entries as one
//! pending map. On a daemon serving an unsharded database each answers 404 with `errorCode`
//! `not_sharded`.

use axum::extract::State;
use axum::response::{IntoResponse, Response};

use super::error::{ApiError, DirectoryRefused, Problem};
use super::extract::{Json, Path, Query};
use crate::client::ShardedClient;
use crate::data::{
    DirectoryEntryPage, DirectoryEntryQuery, DirectoryImport, DirectoryImportOutcome, DirectoryLookup,
    DirectoryMutation, DirectoryMutationResult, DirectoryOperation, DirectoryResolution,
};
use crate::error::Error;
use crate::server::ServerState;

fn sharded(state: &ServerState) -> Result<&ShardedClient, ApiError> {
    state.sharded().ok_or(ApiError::Data(Error::NotSharded))
}

/// Runs one mutation: 200 with the result when it succeeded, else 400 with it.
async fn mutate(
    state: &ServerState,
    operation: DirectoryOperation,
    mutation: &DirectoryMutation,
) -> Result<Response, ApiError> {
    check_version(mutation.expected_current_map_version)?;
    let result = sharded(state)?.directories().mutate(operation, mutation).await?;
    Ok(if result.succeeded {
        axum::Json(result).into_response()
    } else {
        DirectoryRefused::new(result).into_response()
    })
}

/// Refuses an expected map version no map can have.
fn check_version(expected: Option<u64>) -> Result<(), ApiError> {
    match expected {
        Some(version) if i64::try_from(version).is_err() => Err(ApiError::invalid(
            "expectedCurrentMapVersion",
            format!("{version} is above the largest map version, {}", i64::MAX),
        )),
        _ => Ok(()),
    }
}

/// Resolves a lookup key on the live map: the entry and where its route resolves.
#[utoipa::path(
    post,
    path = "/api/sharding/directory/resolve",
    tag = "sharding",
    operation_id = "resolveShardDirectoryEntry",
    request_body = DirectoryLookup,
    responses(
        (status = 200, description = "The entry and its route's resolution", body = DirectoryResolution),
        (status = 400, description = "A blank directory name or lookup key, or a malformed body \
            (`invalid_input`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such directory, or no entry for the lookup key (`not_found`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The entry is not `Active` (and `includeInactive` is not set), names a \
            future map version, or its route resolves to another shard (`conflict`)", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn resolve(
    State(state): State<ServerState>,
    Json(lookup): Json<DirectoryLookup>,
) -> Result<axum::Json<DirectoryResolution>, ApiError> {
    Ok(axum::Json(sharded(&state)?.directories().resolve(&lookup).await?))
}

/// One page of a directory's entries on the live map, ordered by lookup key.
#[utoipa::path(
    get,
    path = "/api/sharding/directory/{name}/entries",
    tag = "sharding",
    operation_id = "listShardDirectoryEntries",
    params(("name" = String, Path, description = "The directory (ignoring case)"), DirectoryEntryQuery),
    responses(
        (status = 200, description = "The entry count and the page", body = DirectoryEntryPage),
        (status = 400, description = "A `limit` outside 1 to 1000 or an unknown parameter (`invalid_input`)",
            body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such directory (`not_found`)", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn entries(
    State(state): State<ServerState>,
    Path(name): Path<String>,
    Query(query): Query<DirectoryEntryQuery>,
) -> Result<axum::Json<DirectoryEntryPage>, ApiError> {
    Ok(axum::Json(sharded(&state)?.directories().entries(&name, &query).await?))
}

/// One POST endpoint per mutation, each documented with its own path and operation id.
macro_rules! mutation_endpoint {
    ($name:ident, $operation:expr, $path:literal, $id:literal, $what:literal) => {
        #[doc = $what]
        #[utoipa::path(
                            post,
                            path = $path,
                            tag = "sharding",
                            operation_id = $id,
                            request_body = DirectoryMutation,
                            responses(
                                (status = 200, description = "The change was written as a pending map (activated when \
                    `activate` is set), or was not needed", body = DirectoryMutationResult),
                                (status = 400, description = "The change was refused and nothing was written \
                    (`invalid_input`, the result as the member `mutation`, its `issues` naming the problem: \
                    unknown directory, read-only directory, keyspace mismatch, invalid state, version \
                    mismatch, ...), or a malformed body (a plain problem without `mutation`)",
                                    body = DirectoryRefused, content_type = "application/problem+json"),
                            )
                        )]
        pub async fn $name(
            State(state): State<ServerState>,
            Json(mutation): Json<DirectoryMutation>,
        ) -> Result<Response, ApiError> {
            mutate(&state, $operation, &mutation).await
        }
    };
}

mutation_endpoint!(
    reserve,
    DirectoryOperation::Reserve,
    "/api/sharding/directory/reserve",
    "reserveShardDirectoryEntry",
    "Adds a `Reserved` entry for a route (`targetKeyspace`, `routeKey`)."
);
mutation_endpoint!(
    activate,
    DirectoryOperation::Activate,
    "/api/sharding/directory/activate",
    "activateShardDirectoryEntry",
    "Makes a `Reserved` entry `Active`."
);
mutation_endpoint!(
    upsert,
    DirectoryOperation::Upsert,
    "/api/sharding/directory/upsert",
    "upsertShardDirectoryEntry",
    "Adds or rewrites an entry for a route, with `state` (default `Active`)."
);
mutation_endpoint!(
    disable,
    DirectoryOperation::Disable,
    "/api/sharding/directory/disable",
    "disableShardDirectoryEntry",
    "Marks an entry `Disabled`."
);
mutation_endpoint!(
    delete,
    DirectoryOperation::Delete,
    "/api/sharding/directory/delete",
    "deleteShardDirectoryEntry",
    "Marks an entry `Deleted`, or with `removeEntry` removes it."
);
mutation_endpoint!(
    mark_stale,
    DirectoryOperation::MarkStale,
    "/api/sharding/directory/mark-stale",
    "markShardDirectoryEntryStale",
    "Marks an entry `Stale`."
);

/// Upserts many entries as one pending map (activated when `activate` is set): 200 with what
/// the load did, or 400 naming the first refused entry, with nothing written.
#[utoipa::path(
    post,
    path = "/api/sharding/directory/import",
    tag = "sharding",
    operation_id = "importShardDirectoryEntries",
    request_body = DirectoryImport,
    responses(
        (status = 200, description = "The changed entries were written as one pending map (activated when \
            `activate` is set), or none needed a change", body = DirectoryImportOutcome),
        (status = 400, description = "An entry was refused and nothing was written (`invalid_input`, with \
            `refusedEntry`, its index from 0, and `mutation`, its result), the entries make a map that does not \
            validate, or a malformed body", body = DirectoryRefused, content_type = "application/problem+json"),
        (status = 409, description = "`expectedCurrentMapVersion` is not the newest map version \
            (`map_version_conflict`); nothing was written", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn import(
    State(state): State<ServerState>,
    Json(import): Json<DirectoryImport>,
) -> Result<Response, ApiError> {
    check_version(import.expected_current_map_version)?;
    let outcome = sharded(&state)?.directories().import(&import).await?;
    Ok(match (outcome.refused_entry, outcome.refusal) {
        (Some(index), Some(refusal)) => DirectoryRefused::import(index, refusal).into_response(),
        (_, refusal) => axum::Json(DirectoryImportOutcome { refusal, ..outcome }).into_response(),
    })
}
