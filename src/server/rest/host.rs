//! Data-host endpoints: `GET /api/host/shards` lists the shard files of a daemon started with
//! `serve --shard-dir` (paged, with the shard and open-file counts), and
//! `PUT /api/host/shards/{shardId}` creates one (idempotent; admin scope).
//!
//! On any other daemon both answer 404 with `errorCode` `not_found`.

use axum::extract::State;
use axum::http::StatusCode;

use super::error::{ApiError, Problem};
use super::extract::{Path, Query};
use crate::data::{HostShardCreated, HostShardPage, HostShardQuery};
use crate::error::Error;
use crate::server::{ServerState, ShardHost};

fn host(state: &ServerState) -> Result<&ShardHost, ApiError> {
    state.host().ok_or(ApiError::Data(Error::NotDataHost))
}

/// One page of the data host's shard ids (in byte order), with how many shard files it has and
/// how many are open now.
#[utoipa::path(
    get,
    path = "/api/host/shards",
    tag = "data host",
    operation_id = "listHostShards",
    params(HostShardQuery),
    responses(
        (status = 200, description = "The counts and one page of shard ids", body = HostShardPage),
        (status = 400, description = "A `limit` outside 1 to 1000, an `offset` beyond 2^63-1 or an unknown \
            parameter (`invalid_input`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_host_shards(
    State(state): State<ServerState>,
    Query(query): Query<HostShardQuery>,
) -> Result<axum::Json<HostShardPage>, ApiError> {
    Ok(axum::Json(host(&state)?.list(&query).await?))
}

/// Creates the file of shard `shardId` on the data host (`{shardId}.db` in its folder, with
/// shardlite's internal tables): 201 when created, 200 when it existed already. The id follows
/// the shard-id rules (ASCII letters, digits, `_`, `-`, `.`; not starting with `.`; at most 200
/// characters); anything else is refused with 400.
#[utoipa::path(
    put,
    path = "/api/host/shards/{shardId}",
    tag = "data host",
    operation_id = "createHostShard",
    params(("shardId" = String, Path, description = "The shard id", pattern = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}$")),
    responses(
        (status = 201, description = "The shard file was created", body = HostShardCreated),
        (status = 200, description = "The shard file existed already", body = HostShardCreated),
        (status = 400, description = "The id breaks the shard-id rules, or differs only in case from an \
            existing shard's (`invalid_input`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create_host_shard(
    State(state): State<ServerState>,
    Path(shard_id): Path<String>,
) -> Result<(StatusCode, axum::Json<HostShardCreated>), ApiError> {
    let created = host(&state)?.create_shard(&shard_id).await?;
    let status = if created.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, axum::Json(created)))
}
