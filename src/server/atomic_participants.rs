//! The participant sessions of atomic transactions that another daemon coordinates on a
//! database this daemon serves (a plain database, or a data host's shard): begun by
//! `POST /api/atomic/sessions`, each an atomic session of the engine (see
//! [`engine::atomic`](crate::engine::Atomic)) addressed by its id, which knows its file, so
//! later calls need no shard header.
//!
//! The table is bounded ([`ServerConfig::max_atomic_participant_sessions`]): a begin past it is
//! answered `busy`. A session its coordinator abandoned is rolled back by its file after the
//! transaction idle timeout, and its entry is dropped when the table is next consulted (after
//! that timeout and [`REAP_GRACE`], when no call runs in it). Prepare ends a session (its
//! changes are stored as an intent, finished by the decision steps), and so does rollback.
//!
//! [`ServerConfig::max_atomic_participant_sessions`]: super::ServerConfig::max_atomic_participant_sessions

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::remote_transactions::REAP_GRACE;
use crate::data::{
    AtomicPrepare, AtomicState, AtomicStepKind, AtomicStepOutcome, AtomicStepRequest, Params, SqlResult,
    TransactionInfo,
};
use crate::engine::Database;
use crate::error::{Error, ErrorKind, Result};
use crate::transaction::AtomicTransactionId;

/// The open participant sessions of a daemon.
#[derive(Debug)]
pub(super) struct AtomicParticipants {
    table: Mutex<Table>,
    idle_timeout: Duration,
    limit: usize,
}

#[derive(Debug, Default)]
struct Table {
    open: HashMap<String, Entry>,
    /// Begins that hold a place and have not yet heard back from their file.
    beginning: usize,
}

#[derive(Debug)]
struct Entry {
    db: Database,
    last_used: Instant,
    /// Calls running in it; an entry in use is never dropped for idleness.
    in_use: usize,
}

impl AtomicParticipants {
    pub(super) fn new(idle_timeout: Duration, limit: usize) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            idle_timeout,
            limit: limit.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let forget_after = self.idle_timeout.saturating_add(REAP_GRACE);
        table.open.retain(|id, entry| {
            let keep = entry.in_use > 0 || now.saturating_duration_since(entry.last_used) < forget_after;
            if !keep {
                entry.db.sessions().session_abandon(id);
            }
            keep
        });
        table
    }

    fn gone(session: &str) -> Error {
        Error::TransactionNotFound {
            transaction_id: session.to_owned(),
        }
    }

    /// Begins a participant session on `db`; `busy` past the limit.
    pub(super) async fn begin(&self, db: Database) -> Result<TransactionInfo> {
        {
            let mut table = self.lock();
            if table.open.len() + table.beginning >= self.limit {
                return Err(Error::busy(
                    "atomic participants",
                    format!(
                        "{} atomic participant sessions are already open, the most allowed",
                        self.limit
                    ),
                ));
            }
            table.beginning += 1;
        }
        let begun = db.sessions().begin_atomic().await;
        let mut table = self.lock();
        table.beginning = table.beginning.saturating_sub(1);
        let info = begun?;
        let expires = info.expires_at.map(time::OffsetDateTime::from);
        table.open.insert(
            info.id.clone(),
            Entry {
                db,
                last_used: Instant::now(),
                in_use: 0,
            },
        );
        Ok(TransactionInfo {
            transaction_id: info.id,
            expires_at_utc: expires.and_then(|at| at.format(&time::format_description::well_known::Rfc3339).ok()),
        })
    }

    /// Executes SQL in the participant session `session`.
    pub(super) async fn execute(&self, session: &str, sql: &str, params: Params) -> Result<SqlResult> {
        let db = {
            let mut table = self.lock();
            let entry = table.open.get_mut(session).ok_or_else(|| Self::gone(session))?;
            entry.in_use += 1;
            entry.db.clone()
        };
        let outcome = db.sessions().session_execute(session, sql, params).await;
        let mut table = self.lock();
        let ended = matches!(&outcome, Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::Expired));
        if ended {
            table.open.remove(session);
        } else if let Some(entry) = table.open.get_mut(session) {
            entry.in_use = entry.in_use.saturating_sub(1);
            entry.last_used = Instant::now();
        }
        outcome
    }

    /// Takes `session` out of the open ones (prepare and rollback end it).
    fn take(&self, session: &str) -> Result<Database> {
        let mut table = self.lock();
        match table.open.get(session) {
            Some(entry) if entry.in_use > 0 => Err(Error::invalid_argument(
                "session",
                "a statement is still running in this participant session",
            )),
            Some(_) => table
                .open
                .remove(session)
                .map(|entry| entry.db)
                .ok_or_else(|| Self::gone(session)),
            None => Err(Self::gone(session)),
        }
    }

    /// Prepares the participant session `session`, which ends it; how many rows it locked.
    pub(super) async fn prepare(&self, session: &str, prepare: AtomicPrepare) -> Result<u64> {
        AtomicTransactionId::parse(&prepare.transaction_id)?;
        if prepare.participants.is_empty() {
            return Err(Error::invalid_argument("participants", "names no shard"));
        }
        let db = self.take(session)?;
        let rows = db
            .sessions()
            .session_prepare_as(
                session,
                &prepare.transaction_id,
                prepare.participants,
                prepare.holds_decision,
                prepare.started_unix_ms,
            )
            .await?;
        Ok(u64::try_from(rows).unwrap_or(u64::MAX))
    }

    /// Rolls the participant session `session` back.
    pub(super) async fn rollback(&self, session: &str) -> Result<()> {
        let db = self.take(session)?;
        db.sessions().session_rollback(session).await
    }

    /// Rolls back every open one (at shutdown).
    pub(super) async fn close(&self) {
        let open: Vec<(String, Entry)> = self.lock().open.drain().collect();
        for (session, entry) in open {
            let _ = entry.db.sessions().session_rollback(&session).await;
        }
    }
}

/// Runs one step of the atomic transaction `transaction_id` on the participant `db`; a
/// `decideCommit` without `maxAgeMs` refuses once the record is `default_max_age` old.
pub(super) async fn step(
    db: &Database,
    transaction_id: &str,
    request: AtomicStepRequest,
    default_max_age: Duration,
) -> Result<AtomicStepOutcome> {
    AtomicTransactionId::parse(transaction_id)?;
    let atomic = db.atomic();
    let id = transaction_id;
    let mut outcome = AtomicStepOutcome::default();
    match request.step {
        AtomicStepKind::DecideCommit => {
            let max_age = request.max_age_ms.map_or(default_max_age, Duration::from_millis);
            outcome.state = atomic.decide_commit_and_apply(id, max_age).await?;
        }
        AtomicStepKind::DecideAbort => {
            outcome.state = atomic.decide(id, crate::data::DecisionState::Abort).await?;
        }
        AtomicStepKind::Apply => outcome.finished = Some(atomic.commit_prepared(id).await?),
        AtomicStepKind::Drop => outcome.finished = Some(atomic.abort_prepared(id).await?),
        AtomicStepKind::Settle => {
            let cutoff = request.abandon_cutoff_unix_ms.ok_or_else(|| {
                Error::invalid_argument("abandonCutoffUnixMs", "the settle step needs the abandon cutoff")
            })?;
            if request.tombstone_unix_ms.is_some() && request.participants.is_empty() {
                return Err(Error::invalid_argument(
                    "participants",
                    "a tombstone record names the transaction's participants",
                ));
            }
            let (state, finished) = atomic
                .settle(id, request.participants, cutoff, request.tombstone_unix_ms)
                .await?;
            outcome.state = state;
            outcome.finished = Some(finished);
        }
        AtomicStepKind::Forget => {
            atomic.forget_decisions(vec![id.to_owned()]).await?;
        }
        AtomicStepKind::ForgetLater => atomic.forget_later(id),
    }
    Ok(outcome)
}

/// The decision records (but those queued to be forgotten, every participant having finished)
/// and the unfinished intents of the participant `db`.
pub(super) async fn state(db: &Database) -> Result<AtomicState> {
    let mut decisions = db.atomic().decisions().await?;
    decisions.retain(|d| !db.atomic().will_forget(&d.transaction_id));
    Ok(AtomicState {
        decisions,
        intents: db.atomic().intents().await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_sessions_are_not_found() {
        let table = AtomicParticipants::new(Duration::from_secs(5), 2);
        let err = table.take("0123").expect_err("unknown");
        assert_eq!(err.kind(), ErrorKind::NotFound);
    }
}
