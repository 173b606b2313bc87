//! An atomic transaction's participant as its coordinator drives it: a shard this process
//! serves from its file (its engine session and [`Atomic`](crate::engine::Atomic) steps,
//! called directly) or a shard another daemon serves (the same steps, one call each, through
//! [`AtomicParticipant`](crate::data::AtomicParticipant): a plain database behind an `endpoint`,
//! or a data host's shard named by `remoteShardId`).

use std::time::Duration;

use crate::data::{
    AtomicPrepare, AtomicStepKind, AtomicStepRequest, Decision, DecisionState, Finished, Params, SharedParticipant,
    SqlResult,
};
use crate::engine::Database;
use crate::error::{ErrorKind, Result};

/// Where a participant runs.
#[derive(Clone)]
pub(super) enum Seat {
    /// A shard file this process serves.
    Local(Database),
    /// A database another daemon serves.
    Remote(SharedParticipant),
}

impl Seat {
    /// Begins a participant session; returns its id.
    pub(super) async fn begin(&self) -> Result<String> {
        match self {
            Self::Local(db) => Ok(db.sessions().begin_atomic().await?.id),
            Self::Remote(remote) => remote.begin_participant().await,
        }
    }

    /// One step by transaction id on a remote participant.
    async fn remote_step(
        remote: &SharedParticipant,
        id: &str,
        request: AtomicStepRequest,
    ) -> Result<crate::data::AtomicStepOutcome> {
        remote.atomic_step(id, &request).await
    }

    /// Applies the prepared transaction `id` and releases its locks.
    pub(super) async fn commit_prepared(&self, id: &str) -> Result<Finished> {
        match self {
            Self::Local(db) => db.atomic().commit_prepared(id).await,
            Self::Remote(remote) => {
                let outcome = Self::remote_step(remote, id, AtomicStepRequest::new(AtomicStepKind::Apply)).await?;
                Ok(outcome.finished.unwrap_or(Finished::NotPrepared))
            }
        }
    }

    /// Drops the prepared transaction `id` and releases its locks.
    pub(super) async fn abort_prepared(&self, id: &str) -> Result<Finished> {
        match self {
            Self::Local(db) => db.atomic().abort_prepared(id).await,
            Self::Remote(remote) => {
                let outcome = Self::remote_step(remote, id, AtomicStepRequest::new(AtomicStepKind::Drop)).await?;
                Ok(outcome.finished.unwrap_or(Finished::NotPrepared))
            }
        }
    }

    /// Moves the pending record of `id` to `abort` (this being its first participant).
    pub(super) async fn decide_abort(&self, id: &str) -> Result<Option<DecisionState>> {
        match self {
            Self::Local(db) => db.atomic().decide(id, DecisionState::Abort).await,
            Self::Remote(remote) => {
                let request = AtomicStepRequest::new(AtomicStepKind::DecideAbort);
                Ok(Self::remote_step(remote, id, request).await?.state)
            }
        }
    }

    /// The commit point on the first participant, applying its own values in the same local
    /// commit (see [`Atomic::decide_commit_and_apply`](crate::engine::Atomic::decide_commit_and_apply)).
    pub(super) async fn decide_commit_and_apply(&self, id: &str, max_age: Duration) -> Result<Option<DecisionState>> {
        match self {
            Self::Local(db) => db.atomic().decide_commit_and_apply(id, max_age).await,
            Self::Remote(remote) => {
                let mut request = AtomicStepRequest::new(AtomicStepKind::DecideCommit);
                request.max_age_ms = Some(u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX));
                Ok(Self::remote_step(remote, id, request).await?.state)
            }
        }
    }

    /// Recovery on the first participant (see [`Atomic::settle`](crate::engine::Atomic::settle)).
    pub(super) async fn settle(
        &self,
        id: &str,
        participants: Vec<String>,
        abandon_cutoff_unix_ms: i64,
        tombstone_unix_ms: Option<i64>,
    ) -> Result<(Option<DecisionState>, Finished)> {
        match self {
            Self::Local(db) => {
                db.atomic()
                    .settle(id, participants, abandon_cutoff_unix_ms, tombstone_unix_ms)
                    .await
            }
            Self::Remote(remote) => {
                let mut request = AtomicStepRequest::new(AtomicStepKind::Settle);
                request.participants = participants;
                request.abandon_cutoff_unix_ms = Some(abandon_cutoff_unix_ms);
                request.tombstone_unix_ms = tombstone_unix_ms;
                let outcome = Self::remote_step(remote, id, request).await?;
                Ok((outcome.state, outcome.finished.unwrap_or(Finished::NotPrepared)))
            }
        }
    }

    /// The decision record of `id` on this participant, if it holds one.
    pub(super) async fn decision(&self, id: &str) -> Result<Option<Decision>> {
        match self {
            Self::Local(db) => db.atomic().decision(id).await,
            Self::Remote(remote) => remote.atomic_decision(id).await,
        }
    }

    /// Queues the decided record of `id`, which every participant finished, to be forgotten: a
    /// remote one by a call in the background, off the commit's latency.
    pub(super) fn forget_later(&self, id: &str) {
        match self {
            Self::Local(db) => db.atomic().forget_later(id),
            Self::Remote(remote) => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    let (remote, id) = (remote.clone(), id.to_owned());
                    runtime.spawn(async move {
                        let request = AtomicStepRequest::new(AtomicStepKind::ForgetLater);
                        let _ = remote.atomic_step(&id, &request).await;
                    });
                }
            }
        }
    }
}

/// A shard taking part in an atomic transaction, with its open session.
pub(super) struct Participant {
    pub(super) shard_id: String,
    pub(super) seat: Seat,
    pub(super) session: String,
}

impl Participant {
    /// Executes SQL in its session.
    pub(super) async fn execute(&self, sql: &str, params: Params) -> Result<SqlResult> {
        match &self.seat {
            Seat::Local(db) => db.sessions().session_execute(&self.session, sql, params).await,
            Seat::Remote(remote) => remote.execute_in_participant(&self.session, sql, params).await,
        }
    }

    /// Commits its session plainly: the transaction's one participant, on a local file.
    /// A remote one runs the protocol (see the coordinator), so this is for local seats.
    pub(super) async fn commit_alone(&self) -> Result<()> {
        match &self.seat {
            Seat::Local(db) => db.sessions().session_commit(&self.session).await,
            Seat::Remote(_) => unreachable_remote(),
        }
    }

    /// Prepares its session (which ends it); the first participant's prepare also creates the
    /// pending decision record.
    pub(super) async fn prepare(
        &self,
        id: &str,
        participants: Vec<String>,
        first: bool,
        started_unix_ms: i64,
    ) -> Result<u64> {
        match &self.seat {
            Seat::Local(db) => {
                let rows = db
                    .sessions()
                    .session_prepare_as(&self.session, id, participants, first, started_unix_ms)
                    .await?;
                Ok(u64::try_from(rows).unwrap_or(u64::MAX))
            }
            Seat::Remote(remote) => {
                let prepare = AtomicPrepare {
                    transaction_id: id.to_owned(),
                    participants,
                    holds_decision: first,
                    started_unix_ms,
                };
                remote.prepare_participant(&self.session, &prepare).await
            }
        }
    }

    /// Rolls its session back; one already ended counts as rolled back.
    pub(super) async fn rollback(&self) -> Result<()> {
        match &self.seat {
            Seat::Local(db) => db.sessions().session_rollback(&self.session).await,
            Seat::Remote(remote) => match remote.rollback_participant(&self.session).await {
                Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::Expired) => Ok(()),
                other => other,
            },
        }
    }

    /// Rolls its session back without waiting (for a transaction being dropped): a remote one
    /// by a call in the background, and by its daemon after the idle timeout anyway.
    pub(super) fn abandon(&self) {
        match &self.seat {
            Seat::Local(db) => db.sessions().session_abandon(&self.session),
            Seat::Remote(remote) => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    let (remote, session) = (remote.clone(), self.session.clone());
                    runtime.spawn(async move {
                        let _ = remote.rollback_participant(&session).await;
                    });
                }
            }
        }
    }

    /// Whether it runs in this process.
    pub(super) fn is_local(&self) -> bool {
        matches!(self.seat, Seat::Local(_))
    }
}

fn unreachable_remote() -> Result<()> {
    Err(crate::error::Error::invalid_argument(
        "atomic participant",
        "a participant on another daemon commits through the protocol",
    ))
}
