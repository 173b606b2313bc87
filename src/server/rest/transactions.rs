//! Remote transactions: `POST /api/transactions` and `/api/transactions/{id}/execute|commit|rollback`.
//!
//! Begin needs a route (an atomic transaction's does not: each of its executes carries one); the
//! returned id (`csdbshard:{mapVersion}:{shardId}:{innerId}` on a sharded
//! daemon) routes the later calls by itself. A route sent with an id must resolve to the id's
//! shard (409 otherwise), and an id from another map version is refused (409). A transaction left
//! idle past the daemon's timeout is rolled back and then answers `expired` (409). Open
//! transactions are limited per shard and per API key; past either limit, begin answers `busy`.
//!
//! A key with the `write` scope begins transactions that run any SQL. A key with `read` and not
//! `write` begins read-only ones, and may use no other (see [`SqlAccess`]).

use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;

use super::bodies::{BeginTransactionRequest, SqlRequest};
use super::error::{ApiError, Problem};
use super::extract::{Json, OptionalJson, Path, Query};
use crate::client::{SqlResult, TransactionInfo, TransactionOptions};
use crate::server::sql_access::SqlAccess;
use crate::server::{ServerState, Target};

/// Begins a transaction on the route's shard. It takes the shard's write lock at its first
/// write (until then other writers go straight through) and holds it until commit, rollback or
/// idle expiry. Answers `busy` (503) when the shard's or the API key's transaction limit is
/// reached. `?maintenance=true` begins a maintenance transaction, whose statements may also
/// write shardlite's internal tables (an operator capability, used by data migrations).
///
/// Needs the `read` or `write` scope. Begun with a key that holds `read` and not `write`, the
/// transaction is read-only: it runs on a connection that cannot write, a statement in it that
/// would write is refused (403 `permission_denied` naming the `write` scope) with nothing written,
/// and only such a key's read-only transactions accept its execute, commit and rollback.
///
/// With the body `{"atomic": true}` (a daemon serving a shard map, `write` scope) it begins an
/// atomic transaction across shards instead, with no route: its id is `csdbatomic:{hex}`, each
/// execute carries the route headers of the shard it runs on (400 `route_required` without
/// them), and commit applies its writes on every shard it wrote or on none. Left idle past the
/// idle expiry, it is rolled back everywhere and answers `expired`.
#[utoipa::path(
    post,
    path = "/api/transactions",
    tag = "transactions",
    operation_id = "beginTransaction",
    params(TransactionOptions),
    request_body(content = Option<BeginTransactionRequest>, description = "Optional: `{\"atomic\": true}` \
        begins an atomic transaction across shards"),
    responses(
        (status = 200, description = "The transaction id and its idle expiry", body = TransactionInfo),
    )
)]
pub async fn begin(
    State(state): State<ServerState>,
    Extension(access): Extension<SqlAccess>,
    target: Target,
    Query(options): Query<TransactionOptions>,
    OptionalJson(request): OptionalJson<BeginTransactionRequest>,
) -> Result<axum::Json<TransactionInfo>, ApiError> {
    if request.atomic {
        access.permit_atomic(options)?;
        return Ok(axum::Json(state.begin_atomic_transaction().await?));
    }
    let info = state
        .begin_transaction(&target, access.transaction_options(options))
        .await?;
    Ok(axum::Json(info))
}

/// Executes SQL inside a transaction and extends its idle expiry. In a read-only transaction
/// (begun with a key that holds `read` and not `write`), a statement that would write is refused
/// with nothing written.
#[utoipa::path(
    post,
    path = "/api/transactions/{id}/execute",
    tag = "transactions",
    operation_id = "executeInTransaction",
    params(("id" = String, Path, description = "The transaction id, URL-encoded", pattern = r"^(csdbshard:[0-9]+:[A-Za-z0-9_.-]+:.*\S.*|csdbatomic:[0-9a-f]{32})$")),
    request_body = SqlRequest,
    responses(
        (status = 200, description = "The result", body = SqlResult),
        (status = 400, description = "A statement that would write, in a read-only transaction begun by a key \
            that holds `read` and not `write`, sent with a key that holds `write` (`read_only`); nothing was \
            written", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The API key holds `read` and not `write`, and the statement would write \
            or the transaction was begun by a key with `write`; or it holds neither scope, or not for this \
            keyspace (`permission_denied`). Nothing was written", body = Problem,
            content_type = "application/problem+json"),
        (status = 404, description = "No such open transaction (for a key with `read` and not `write`: \
            no such read-only transaction begun through this daemon)", body = Problem,
            content_type = "application/problem+json"),
        (status = 409, description = "The route conflicts with the transaction's shard (`conflict`), the id is \
            from another map version (`stale_map_version`), the transaction expired (`expired`), or a constraint \
            was violated (`constraint`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn execute(
    State(state): State<ServerState>,
    Extension(access): Extension<SqlAccess>,
    target: Target,
    Path(id): Path<String>,
    Json(request): Json<SqlRequest>,
) -> Result<axum::Json<SqlResult>, ApiError> {
    let params = request.parameters.unwrap_or_default();
    let result = access
        .execute_in_transaction(&state, &target, &id, &request.sql, params)
        .await?;
    Ok(axum::Json(result))
}

/// Commits a transaction.
#[utoipa::path(
    post,
    path = "/api/transactions/{id}/commit",
    tag = "transactions",
    operation_id = "commitTransaction",
    params(("id" = String, Path, description = "The transaction id, URL-encoded", pattern = r"^(csdbshard:[0-9]+:[A-Za-z0-9_.-]+:.*\S.*|csdbatomic:[0-9a-f]{32})$")),
    responses(
        (status = 204, description = "Committed"),
        (status = 404, description = "No such open transaction", body = Problem,
            content_type = "application/problem+json"),
        (status = 409, description = "Route conflict, stale map version, or expired", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn commit(
    State(state): State<ServerState>,
    Extension(access): Extension<SqlAccess>,
    target: Target,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    access.permit_transaction(&state, &id)?;
    state.commit_transaction(&target, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Rolls back a transaction.
#[utoipa::path(
    post,
    path = "/api/transactions/{id}/rollback",
    tag = "transactions",
    operation_id = "rollbackTransaction",
    params(("id" = String, Path, description = "The transaction id, URL-encoded", pattern = r"^(csdbshard:[0-9]+:[A-Za-z0-9_.-]+:.*\S.*|csdbatomic:[0-9a-f]{32})$")),
    responses(
        (status = 204, description = "Rolled back"),
        (status = 404, description = "No such open transaction", body = Problem,
            content_type = "application/problem+json"),
        (status = 409, description = "Route conflict, stale map version, or expired", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn rollback(
    State(state): State<ServerState>,
    Extension(access): Extension<SqlAccess>,
    target: Target,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    access.permit_transaction(&state, &id)?;
    state.rollback_transaction(&target, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
