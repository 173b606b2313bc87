//! Beginning a connection's transaction: the `BEGIN` forms `begin_with` accepts, and a begin
//! that a caller who stops waiting cannot leave open.

use std::sync::Arc;

use sqlx_core::error::Error;

use crate::data::{DataClient, TransactionInfo};

/// Begins on a task of its own, so that a caller that stops waiting does not leave an open
/// transaction (and the shard's write lock) behind.
pub(super) async fn begin_detached(client: &Arc<dyn DataClient>) -> Result<TransactionInfo, Error> {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return Ok(client.begin_transaction().await?);
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    let client = Arc::clone(client);
    runtime.spawn(async move {
        let outcome = client.begin_transaction().await;
        if let Err(Ok(info)) = reply.send(outcome) {
            let _ = client.rollback_transaction(&info.transaction_id).await;
        }
    });
    match answer.await {
        Ok(outcome) => Ok(outcome?),
        Err(_) => Err(Error::WorkerCrashed),
    }
}

/// The engine begins every transaction with `BEGIN IMMEDIATE` (take the write lock up front, so
/// that no transaction fails later on upgrading its lock); `begin_with` may ask for any `BEGIN`
/// form, since IMMEDIATE gives at least the isolation each one promises.
pub(super) fn check_begin_statement(sql: &str) -> Result<(), Error> {
    let words: Vec<String> = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["BEGIN"] | ["BEGIN", "TRANSACTION"] => Ok(()),
        ["BEGIN", "DEFERRED" | "IMMEDIATE" | "EXCLUSIVE"] => Ok(()),
        ["BEGIN", "DEFERRED" | "IMMEDIATE" | "EXCLUSIVE", "TRANSACTION"] => Ok(()),
        _ => Err(Error::InvalidArgument(format!(
            "shardlite begins transactions itself (BEGIN IMMEDIATE on the shard): begin_with accepts only \
             BEGIN [DEFERRED | IMMEDIATE | EXCLUSIVE] [TRANSACTION], not '{}'",
            sql.trim()
        ))),
    }
}
