//! The transaction RPCs: `BeginTransaction` (an atomic one across the daemon's shards too),
//! `ExecuteInTransaction`, `CommitTransaction` and `RollbackTransaction`. Through the state,
//! which tracks open remote transactions so shutdown can roll them back.

use super::call::Call;
use crate::client::TransactionOptions;
use crate::error::Result;
use crate::transport::grpc::convert::params_from_pb;
use crate::wire::proto as pb;

pub(super) async fn begin(call: Call, request: pb::BeginTransactionRequest) -> Result<pb::TransactionInfo> {
    let options = TransactionOptions {
        maintenance: request.maintenance,
        ..TransactionOptions::default()
    };
    if request.atomic {
        call.sql_access.permit_atomic(options)?;
        return Ok(call.state.begin_atomic_transaction().await?.into());
    }
    let options = call.sql_access.transaction_options(options);
    Ok(call.state.begin_transaction(&call.target, options).await?.into())
}

pub(super) async fn execute(call: Call, request: pb::TransactionSqlRequest) -> Result<pb::SqlResult> {
    let params = params_from_pb(request.params)?;
    let result = call
        .sql_access
        .execute_in_transaction(&call.state, &call.target, &request.transaction_id, &request.sql, params)
        .await?;
    Ok(result.into())
}

pub(super) async fn commit(call: Call, request: pb::TransactionRequest) -> Result<pb::Empty> {
    call.sql_access
        .permit_transaction(&call.state, &request.transaction_id)?;
    call.state
        .commit_transaction(&call.target, &request.transaction_id)
        .await?;
    Ok(pb::Empty {})
}

pub(super) async fn rollback(call: Call, request: pb::TransactionRequest) -> Result<pb::Empty> {
    call.sql_access
        .permit_transaction(&call.state, &request.transaction_id)?;
    call.state
        .rollback_transaction(&call.target, &request.transaction_id)
        .await?;
    Ok(pb::Empty {})
}
