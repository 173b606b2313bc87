//! An atomic session's prepare (see [`Atomic`](crate::engine::Atomic)): the session's writes become an
//! intent and its row locks in one local commit, and the session ends.

use std::sync::atomic::Ordering;

use tokio::sync::oneshot;

use super::{SessionJob, Sessions};
use crate::error::{Error, Result};

impl Sessions<'_> {
    /// Prepares the atomic transaction `transaction_id` from an atomic session's writes and
    /// closes the session: one local commit stores the new values of the rows it wrote and locks
    /// them, leaving the rows themselves as they were. Returns how many rows it locked.
    ///
    /// The first of `participants` holds the decision: when that is this file, the same commit
    /// creates the transaction's pending decision record.
    pub async fn session_prepare(self, id: &str, transaction_id: &str, participants: Vec<String>) -> Result<usize> {
        self.session_prepare_at(id, transaction_id, participants, crate::engine::unix_ms_now())
            .await
    }

    /// [`session_prepare`](Self::session_prepare) for a commit that began at `started_unix_ms`
    /// (the coordinator's clock): the time the intent and the decision record carry, from which
    /// recovery counts the abandon age and after which the decision's compare-and-set refuses
    /// to commit (see [`Atomic::decide_commit`](crate::engine::Atomic::decide_commit)).
    pub async fn session_prepare_at(
        self,
        id: &str,
        transaction_id: &str,
        participants: Vec<String>,
        started_unix_ms: i64,
    ) -> Result<usize> {
        let holds_decision = participants.first().is_some_and(|first| *first == self.db.shared.label);
        self.session_prepare_as(id, transaction_id, participants, holds_decision, started_unix_ms)
            .await
    }

    /// [`session_prepare_at`](Self::session_prepare_at) told whether this file holds the
    /// decision rather than reading it from its label: a file another daemon's coordinator
    /// names by that map's shard id (a plain database, or a data host's shard).
    pub async fn session_prepare_as(
        self,
        id: &str,
        transaction_id: &str,
        participants: Vec<String>,
        holds_decision: bool,
        started_unix_ms: i64,
    ) -> Result<usize> {
        self.db.shared.atomic_state.store(true, Ordering::Release);
        let jobs = self.session_sender(id, true)?;
        let (reply, rx) = oneshot::channel();
        let gone = || Error::TransactionExpired {
            transaction_id: id.to_owned(),
        };
        jobs.send(SessionJob::Prepare {
            transaction_id: transaction_id.to_owned(),
            participants,
            holds_decision,
            started_unix_ms,
            reply,
        })
        .map_err(|_| gone())?;
        rx.await
            .map_err(|_| gone())?
            .map_err(|err| self.db.storage_failure(err))
    }
}
