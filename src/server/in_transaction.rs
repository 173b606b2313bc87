//! What a call in a remote transaction runs on, chosen by [`ServerState`]'s transaction calls
//! from the transaction id and the call's target.
//!
//! [`ServerState`]: super::ServerState

use std::sync::Arc;

use super::atomic_transactions::AtomicTransactions;
use crate::client::{DataClient, Params, ShardedClient, SqlResult};
use crate::error::Result;
use crate::routing::RouteContext;

/// What a call in a transaction runs on.
pub(super) enum InTransaction<'a> {
    /// A client that knows the transaction by the id given.
    Client(Arc<dyn DataClient>, &'a str),
    /// The sharded client, routing the call by the (sharded) id alone.
    ById(&'a ShardedClient, &'a str),
    /// An atomic transaction of the daemon, each call on the shard of its route.
    Atomic(&'a AtomicTransactions, Option<&'a RouteContext>, &'a str),
}

impl InTransaction<'_> {
    pub(super) async fn execute(&self, sql: &str, params: Params) -> Result<SqlResult> {
        match self {
            Self::Client(client, id) => client.execute_in_transaction(id, sql, params).await,
            Self::ById(sharded, id) => sharded.transactions().execute(id, sql, params).await,
            Self::Atomic(atomic, route, id) => atomic.execute(id, *route, sql, params).await,
        }
    }

    pub(super) async fn commit(&self) -> Result<()> {
        match self {
            Self::Client(client, id) => client.commit_transaction(id).await,
            Self::ById(sharded, id) => sharded.transactions().commit(id).await,
            Self::Atomic(atomic, _, id) => atomic.commit(id).await,
        }
    }

    pub(super) async fn rollback(&self) -> Result<()> {
        match self {
            Self::Client(client, id) => client.rollback_transaction(id).await,
            Self::ById(sharded, id) => sharded.transactions().rollback(id).await,
            Self::Atomic(atomic, _, id) => atomic.rollback(id).await,
        }
    }
}
