//! An atomic transaction's participant calls over gRPC, on a database the daemon serves (a plain
//! database, or the data-host shard of the client's shard id): `BeginAtomicSession`,
//! `ExecuteInAtomicSession`, `PrepareAtomicSession`, `RollbackAtomicSession`, `RunAtomicStep`,
//! `GetAtomicDecision` and `GetAtomicState`, the REST participant calls one for one.

use async_trait::async_trait;

use super::convert::atomic::{decision_from_pb, prepare_to_pb, step_request_to_pb};
use super::{GrpcClient, pb};
use crate::data::{
    AtomicParticipant, AtomicPrepare, AtomicState, AtomicStepOutcome, AtomicStepRequest, Decision, Params, SqlResult,
};
use crate::error::Result;

fn session_request(session: &str) -> pb::AtomicSessionRequest {
    pb::AtomicSessionRequest {
        session_id: session.to_owned(),
    }
}

#[async_trait]
impl AtomicParticipant for GrpcClient {
    async fn begin_participant(&self) -> Result<String> {
        Ok(rpc!(self, begin_atomic_session, pb::Empty {})?.transaction_id)
    }

    async fn execute_in_participant(&self, session: &str, sql: &str, params: Params) -> Result<SqlResult> {
        let request = pb::AtomicSessionSqlRequest {
            session_id: session.to_owned(),
            sql: sql.to_owned(),
            params: Some(params.into()),
        };
        Ok(rpc!(self, execute_in_atomic_session, request)?.into())
    }

    async fn prepare_participant(&self, session: &str, prepare: &AtomicPrepare) -> Result<u64> {
        Ok(rpc!(self, prepare_atomic_session, prepare_to_pb(session, prepare))?.rows)
    }

    async fn rollback_participant(&self, session: &str) -> Result<()> {
        rpc!(self, rollback_atomic_session, session_request(session))?;
        Ok(())
    }

    async fn atomic_step(&self, transaction_id: &str, step: &AtomicStepRequest) -> Result<AtomicStepOutcome> {
        rpc!(self, run_atomic_step, step_request_to_pb(transaction_id, step))?.try_into()
    }

    async fn atomic_decision(&self, transaction_id: &str) -> Result<Option<Decision>> {
        let request = pb::AtomicDecisionRequest {
            transaction_id: transaction_id.to_owned(),
        };
        decision_from_pb(rpc!(self, get_atomic_decision, request)?)
    }

    async fn atomic_state(&self) -> Result<AtomicState> {
        rpc!(self, get_atomic_state, pb::Empty {})?.try_into()
    }
}
