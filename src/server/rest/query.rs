//! `POST /api/sharding/query`: one read-only `SELECT` over every shard, answered as one result.

use axum::extract::State;

use super::bodies::SqlRequest;
use super::error::{ApiError, Problem};
use super::extract::Json;
use crate::data::SqlResult;
use crate::error::Error;
use crate::server::ServerState;

/// Runs one read-only `SELECT` on every enabled shard and answers as SQLite would over one file
/// holding every shard's rows: `ORDER BY`, `LIMIT`/`OFFSET`, `DISTINCT`, `count`, `sum`, `total`,
/// `min`, `max`, `avg`, `GROUP BY` and `HAVING` are merged; joins and subqueries run on each
/// shard over its own rows. A query that cannot be answered exactly is refused before any shard
/// runs it (422 `unsupported_cross_shard_query`, naming the construct).
#[utoipa::path(
    post,
    path = "/api/sharding/query",
    tag = "sharding",
    operation_id = "queryAllShards",
    request_body = SqlRequest,
    responses(
        (status = 200, description = "The merged result", body = SqlResult),
        (status = 400, description = "Bad SQL or parameters", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The query cannot be answered exactly across shards (`unsupported_cross_shard_query`)",
            body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn query_all(
    State(state): State<ServerState>,
    Json(request): Json<SqlRequest>,
) -> Result<axum::Json<SqlResult>, ApiError> {
    let sharded = state.sharded().ok_or(ApiError::Data(Error::NotSharded))?;
    let result = sharded
        .query()
        .merged(&request.sql, request.parameters.unwrap_or_default())
        .await?;
    Ok(axum::Json(result))
}
