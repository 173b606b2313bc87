//! The participant calls of atomic transactions that another daemon coordinates, on the
//! database this daemon serves (a plain database, or the data-host shard the shard header
//! names): `POST /api/atomic/sessions` and `/api/atomic/sessions/{id}/execute|prepare|rollback`,
//! `POST /api/atomic/transactions/{id}/steps`, `GET /api/atomic/transactions/{id}` and
//! `GET /api/atomic/state`. Internal endpoints of the protocol (see
//! [`AtomicParticipant`](crate::data::AtomicParticipant)); each needs the `write` scope.

use axum::extract::State;
use axum::http::StatusCode;

use super::bodies::SqlRequest;
use super::error::{ApiError, Problem};
use super::extract::{Json, Path};
use crate::client::{SqlResult, TransactionInfo};
use crate::data::{
    AtomicDecisionFound, AtomicPrepare, AtomicPrepared, AtomicState, AtomicStepOutcome, AtomicStepRequest,
};
use crate::server::{ServerState, Target};

/// Begins a participant session of an atomic transaction another daemon coordinates. Its
/// statements run in a session of their own on this daemon's database, rolled back if left idle
/// past the transaction idle timeout. Answers `busy` (503) past the daemon's limit of open
/// participant sessions (`--max-atomic-participant-sessions`), and 400 on a daemon that serves a
/// shard map (it coordinates its own).
#[utoipa::path(
    post,
    path = "/api/atomic/sessions",
    tag = "atomic participants",
    operation_id = "beginAtomicSession",
    responses(
        (status = 200, description = "The participant session id (as `transactionId`) and its idle expiry",
            body = TransactionInfo),
    )
)]
pub async fn begin(State(state): State<ServerState>, target: Target) -> Result<axum::Json<TransactionInfo>, ApiError> {
    Ok(axum::Json(state.begin_atomic_participant(&target).await?))
}

/// Executes SQL in a participant session and extends its idle expiry.
#[utoipa::path(
    post,
    path = "/api/atomic/sessions/{id}/execute",
    tag = "atomic participants",
    operation_id = "executeInAtomicSession",
    params(("id" = String, Path, description = "The participant session id", pattern = r"^[0-9a-f]{32}$")),
    request_body = SqlRequest,
    responses(
        (status = 200, description = "The result", body = SqlResult),
        (status = 404, description = "No such open participant session (never begun, prepared, rolled back or \
            expired)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A row the statement writes is locked by another atomic transaction \
            (`row_locked`, retryable), the session expired (`expired`), or a constraint was violated \
            (`constraint`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn execute(
    State(state): State<ServerState>,
    Path(id): Path<String>,
    Json(request): Json<SqlRequest>,
) -> Result<axum::Json<SqlResult>, ApiError> {
    let params = request.parameters.unwrap_or_default();
    let result = state.execute_in_atomic_participant(&id, &request.sql, params).await?;
    Ok(axum::Json(result))
}

/// Prepares a participant session, which ends it: one local commit stores the new values of the
/// rows it wrote and locks those rows (other writers get `row_locked` until the transaction is
/// finished here), leaving the rows as they were; the first participant's prepare also creates
/// the transaction's pending decision record.
#[utoipa::path(
    post,
    path = "/api/atomic/sessions/{id}/prepare",
    tag = "atomic participants",
    operation_id = "prepareAtomicSession",
    params(("id" = String, Path, description = "The participant session id", pattern = r"^[0-9a-f]{32}$")),
    request_body = AtomicPrepare,
    responses(
        (status = 200, description = "How many rows it locked", body = AtomicPrepared),
        (status = 404, description = "No such open participant session", body = Problem,
            content_type = "application/problem+json"),
        (status = 409, description = "The transaction was already decided here (`conflict`), or the session \
            expired (`expired`); nothing was prepared", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn prepare(
    State(state): State<ServerState>,
    Path(id): Path<String>,
    Json(request): Json<AtomicPrepare>,
) -> Result<axum::Json<AtomicPrepared>, ApiError> {
    let rows = state.prepare_atomic_participant(&id, request).await?;
    Ok(axum::Json(AtomicPrepared { rows }))
}

/// Rolls a participant session back; nothing it wrote stays.
#[utoipa::path(
    post,
    path = "/api/atomic/sessions/{id}/rollback",
    tag = "atomic participants",
    operation_id = "rollbackAtomicSession",
    params(("id" = String, Path, description = "The participant session id", pattern = r"^[0-9a-f]{32}$")),
    responses(
        (status = 204, description = "Rolled back"),
        (status = 404, description = "No such open participant session", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn rollback(State(state): State<ServerState>, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    state.rollback_atomic_participant(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Runs one step of an atomic transaction on this participant: the decision's compare-and-set
/// (`decideCommit`, which also applies this participant's values, or `decideAbort`), applying or
/// dropping the prepared values (`apply`, `drop`), recovery's `settle`, or forgetting a decided
/// record (`forget`, `forgetLater`). Every step is safe to repeat.
#[utoipa::path(
    post,
    path = "/api/atomic/transactions/{id}/steps",
    tag = "atomic participants",
    operation_id = "runAtomicStep",
    params(("id" = String, Path, description = "The atomic transaction id", pattern = r"^csdbatomic:[0-9a-f]{32}$")),
    request_body = AtomicStepRequest,
    responses(
        (status = 200, description = "The decision that holds afterwards and what finishing did here",
            body = AtomicStepOutcome),
    )
)]
pub async fn step(
    State(state): State<ServerState>,
    target: Target,
    Path(id): Path<String>,
    Json(request): Json<AtomicStepRequest>,
) -> Result<axum::Json<AtomicStepOutcome>, ApiError> {
    Ok(axum::Json(state.atomic_step(&target, &id, request).await?))
}

/// The decision record of an atomic transaction on this participant (its first), if it holds one.
#[utoipa::path(
    get,
    path = "/api/atomic/transactions/{id}",
    tag = "atomic participants",
    operation_id = "getAtomicDecision",
    params(("id" = String, Path, description = "The atomic transaction id", pattern = r"^csdbatomic:[0-9a-f]{32}$")),
    responses((status = 200, description = "The record, or `null`", body = AtomicDecisionFound))
)]
pub async fn decision(
    State(state): State<ServerState>,
    target: Target,
    Path(id): Path<String>,
) -> Result<axum::Json<AtomicDecisionFound>, ApiError> {
    let decision = state.atomic_decision(&target, &id).await?;
    Ok(axum::Json(AtomicDecisionFound { decision }))
}

/// The decision records this participant holds and the transactions prepared here and not yet
/// finished: what recovery in the coordinating daemon works from.
#[utoipa::path(
    get,
    path = "/api/atomic/state",
    tag = "atomic participants",
    operation_id = "getAtomicState",
    responses((status = 200, description = "Its decision records and unfinished intents", body = AtomicState))
)]
pub async fn atomic_state(
    State(state): State<ServerState>,
    target: Target,
) -> Result<axum::Json<AtomicState>, ApiError> {
    Ok(axum::Json(state.atomic_state(&target).await?))
}
