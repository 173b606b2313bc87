//! An atomic transaction's participant calls over REST, on a database the daemon serves (a
//! plain database, or the data-host shard of the client's shard id): `POST /api/atomic/sessions`,
//! `/api/atomic/sessions/{id}/execute|prepare|rollback`, `POST /api/atomic/transactions/{id}/steps`,
//! `GET /api/atomic/transactions/{id}` and `GET /api/atomic/state`.

use async_trait::async_trait;

use super::HttpClient;
use super::body::sql_body;
use crate::data::{
    AtomicDecisionFound, AtomicParticipant, AtomicPrepare, AtomicPrepared, AtomicState, AtomicStepOutcome,
    AtomicStepRequest, Decision, Params, SqlResult, TransactionInfo,
};
use crate::error::Result;

#[async_trait]
impl AtomicParticipant for HttpClient {
    async fn begin_participant(&self) -> Result<String> {
        let info: TransactionInfo = self.json(self.post(&["atomic", "sessions"])).await?;
        Ok(info.transaction_id)
    }

    async fn execute_in_participant(&self, session: &str, sql: &str, params: Params) -> Result<SqlResult> {
        let request = self.post(&["atomic", "sessions", session, "execute"]);
        self.json(request.json(&sql_body(sql, params))).await
    }

    async fn prepare_participant(&self, session: &str, prepare: &AtomicPrepare) -> Result<u64> {
        let request = self.post(&["atomic", "sessions", session, "prepare"]);
        let prepared: AtomicPrepared = self.json(request.json(prepare)).await?;
        Ok(prepared.rows)
    }

    async fn rollback_participant(&self, session: &str) -> Result<()> {
        self.no_content(self.post(&["atomic", "sessions", session, "rollback"]))
            .await
    }

    async fn atomic_step(&self, transaction_id: &str, step: &AtomicStepRequest) -> Result<AtomicStepOutcome> {
        let request = self.post(&["atomic", "transactions", transaction_id, "steps"]);
        self.json(request.json(step)).await
    }

    async fn atomic_decision(&self, transaction_id: &str) -> Result<Option<Decision>> {
        let found: AtomicDecisionFound = self.json(self.get(&["atomic", "transactions", transaction_id])).await?;
        Ok(found.decision)
    }

    async fn atomic_state(&self) -> Result<AtomicState> {
        self.json(self.get(&["atomic", "state"])).await
    }
}
