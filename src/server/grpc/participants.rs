//! The participant RPCs of atomic transactions another daemon coordinates, on the database this
//! daemon serves (its plain database, or the data-host shard of `x-shardlite-shard`):
//! `BeginAtomicSession`, `ExecuteInAtomicSession`, `PrepareAtomicSession`,
//! `RollbackAtomicSession`, `RunAtomicStep`, `GetAtomicDecision` and `GetAtomicState`. They run
//! through the same [`ServerState`](crate::server::ServerState) calls as REST `/api/atomic/*`,
//! so both surfaces share one table of participant sessions and its bound, and answer the same
//! errors (each needs the `write` scope).

use super::call::Call;
use crate::error::Result;
use crate::transport::grpc::convert::atomic::{prepare_from_pb, step_request_from_pb};
use crate::transport::grpc::convert::params_from_pb;
use crate::wire::proto as pb;

pub(super) async fn begin(call: Call, _: pb::Empty) -> Result<pb::TransactionInfo> {
    Ok(call.state.begin_atomic_participant(&call.target).await?.into())
}

pub(super) async fn execute(call: Call, request: pb::AtomicSessionSqlRequest) -> Result<pb::SqlResult> {
    let params = params_from_pb(request.params)?;
    let result = call
        .state
        .execute_in_atomic_participant(&request.session_id, &request.sql, params)
        .await?;
    Ok(result.into())
}

pub(super) async fn prepare(call: Call, request: pb::PrepareAtomicSessionRequest) -> Result<pb::AtomicPrepared> {
    let (session, prepare) = prepare_from_pb(request);
    let rows = call.state.prepare_atomic_participant(&session, prepare).await?;
    Ok(pb::AtomicPrepared { rows })
}

pub(super) async fn rollback(call: Call, request: pb::AtomicSessionRequest) -> Result<pb::Empty> {
    call.state.rollback_atomic_participant(&request.session_id).await?;
    Ok(pb::Empty {})
}

pub(super) async fn step(call: Call, request: pb::AtomicStepRequest) -> Result<pb::AtomicStepOutcome> {
    let (transaction_id, step) = step_request_from_pb(request)?;
    let outcome = call.state.atomic_step(&call.target, &transaction_id, step).await?;
    Ok(outcome.into())
}

pub(super) async fn decision(call: Call, request: pb::AtomicDecisionRequest) -> Result<pb::AtomicDecisionFound> {
    let decision = call
        .state
        .atomic_decision(&call.target, &request.transaction_id)
        .await?;
    Ok(pb::AtomicDecisionFound {
        decision: decision.map(Into::into),
    })
}

pub(super) async fn state(call: Call, _: pb::Empty) -> Result<pb::AtomicParticipantState> {
    Ok(call.state.atomic_state(&call.target).await?.into())
}
