//! Atomic transactions across shards, the engine's part: what a participant shard stores and
//! does ([`Atomic`], handed out by [`Database::atomic`]).
//!
//! No SQLite transaction stays open across the protocol. A participant's session runs the
//! transaction's statements in a savepoint while SQLite reports the rows they write; *prepare*
//! reads those rows' new values, rolls the statements back and, in the same local commit, stores
//! the values and a lock per row (`participant`), behind triggers that refuse other writers
//! with [`Error::RowLocked`](crate::Error::RowLocked) (`locks`). Readers meanwhile see the last
//! committed values. *Commit* and *abort* apply or drop the stored values and release the locks
//! in one local commit; both are safe to repeat ([`Finished::NotPrepared`] the second time).
//! The transaction's decision record lives on its first participant (`decision`): `pending`
//! from that participant's prepare (the participants prepare at once), then `commit` or `abort`
//! by one compare-and-set; recovery writes an `abort` record (a tombstone) for an intent older
//! than the abandon age whose record never came. The coordinator's compare-and-set also applies
//! the first participant's own intent in the same local commit
//! ([`Atomic::decide_commit_and_apply`]), and a record every participant finished is queued
//! ([`Atomic::forget_later`]) and deleted by that file's next decision, or by the resolver.
//!
//! Everything written is ordinary SQLite that 3.31 parses: internal tables, `WITHOUT ROWID`
//! keys, triggers raising string literals. Intents travel with the file (backups, copies).

mod decision;
mod locks;
mod participant;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub use crate::data::{AtomicIntent, Decision, DecisionState, Finished};
pub(crate) use participant::{Intent, Recorder};

use super::database::Database;
use crate::error::Result;

/// How many queued decided records one local commit deletes at most.
const FORGET_BATCH: usize = 64;

/// The tables of atomic transactions in a shard file, created at the first prepare or decision.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS _shardlite_atomic_intents (
    transaction_id TEXT PRIMARY KEY,
    participants TEXT NOT NULL,
    prepared_unix_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS _shardlite_atomic_rows (
    transaction_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    table_name TEXT NOT NULL,
    row_id INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    PRIMARY KEY (transaction_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _shardlite_atomic_values (
    transaction_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    column_name TEXT NOT NULL,
    value,
    PRIMARY KEY (transaction_id, seq, column_name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS _shardlite_atomic_locks (
    table_name TEXT NOT NULL,
    row_id INTEGER NOT NULL,
    transaction_id TEXT NOT NULL,
    PRIMARY KEY (table_name, row_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS _shardlite_atomic_locks_by_transaction ON _shardlite_atomic_locks (transaction_id);
CREATE TABLE IF NOT EXISTS _shardlite_atomic_decisions (
    transaction_id TEXT PRIMARY KEY,
    state TEXT NOT NULL CHECK (state IN ('pending', 'commit', 'abort')),
    participants TEXT NOT NULL,
    created_unix_ms INTEGER NOT NULL,
    decided_unix_ms INTEGER
);";

/// Whether the file `conn` has the atomic tables (read when a file opens).
pub(super) fn has_state(conn: &rusqlite::Connection) -> bool {
    participant::has_tables(conn).unwrap_or(true)
}

/// Whether the file `conn` holds atomic state now, an intent or a decision record (read when a
/// file that has the atomic tables opens, for [`EngineConfig::atomic_open_hook`]).
///
/// [`EngineConfig::atomic_open_hook`]: super::EngineConfig::atomic_open_hook
pub(super) fn holds_records(conn: &rusqlite::Connection) -> bool {
    participant::holds_records(conn).unwrap_or(true)
}

/// The atomic-transaction part of a [`Database`]: a participant's commit and abort, its
/// prepared intents, and the decision records it holds as a first participant. Prepare runs in
/// the transaction's session ([`Sessions::session_prepare`](super::Sessions::session_prepare)).
#[derive(Debug, Clone, Copy)]
pub struct Atomic<'db> {
    db: &'db Database,
}

impl<'db> Atomic<'db> {
    pub(super) fn new(db: &'db Database) -> Self {
        Self { db }
    }

    /// Whether the file may hold atomic-transaction state (its tables were there when it opened,
    /// or this process prepared or decided on it since): background recovery visits only these.
    pub fn may_hold_state(self) -> bool {
        self.db.shared.atomic_state.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Applies the prepared transaction `id` and releases its locks, in one local commit.
    pub async fn commit_prepared(self, id: &str) -> Result<Finished> {
        let id = id.to_owned();
        self.db
            .write_atomic(move |conn| participant::finish(conn, &id, true))
            .await
    }

    /// Drops the prepared transaction `id` and releases its locks, in one local commit.
    pub async fn abort_prepared(self, id: &str) -> Result<Finished> {
        let id = id.to_owned();
        self.db
            .write_atomic(move |conn| participant::finish(conn, &id, false))
            .await
    }

    /// The transactions prepared here and not yet finished, oldest first.
    pub async fn intents(self) -> Result<Vec<AtomicIntent>> {
        self.db.read(|conn| participant::intents(conn)).await
    }

    /// Creates the pending decision record of `id` (this shard being its first participant).
    pub async fn create_decision(self, id: &str, participants: Vec<String>) -> Result<()> {
        let id = id.to_owned();
        self.db
            .shared
            .atomic_state
            .store(true, std::sync::atomic::Ordering::Release);
        self.db
            .write_atomic(move |conn| decision::create(conn, &id, &participants, super::unix_ms_now()))
            .await
    }

    /// Decides `id` by one compare-and-set from `pending` to `want`; returns the state that
    /// holds afterwards (an earlier decision wins), or `None` when there is no record.
    pub async fn decide(self, id: &str, want: DecisionState) -> Result<Option<DecisionState>> {
        let id = id.to_owned();
        // No decision inside a backup's cut (see `engine::cut`).
        let _pass = crate::engine::cut::pass().await;
        self.db
            .write_atomic(move |conn| decision::decide(conn, &id, want))
            .await
    }

    /// The commit point: moves the pending record of `id` to `commit` by one compare-and-set,
    /// unless the record is `max_age` old or older, which moves it to `abort` instead (see
    /// `decision`: the coordinator decides within half the abandon age). Returns the state that
    /// holds afterwards (an earlier decision wins), or `None` when there is no record.
    pub async fn decide_commit(self, id: &str, max_age: Duration) -> Result<Option<DecisionState>> {
        let id = id.to_owned();
        let max_age_ms = i64::try_from(max_age.as_millis()).unwrap_or(i64::MAX);
        let _pass = crate::engine::cut::pass().await;
        self.db
            .write_atomic(move |conn| decision::decide_commit(conn, &id, max_age_ms))
            .await
    }

    /// The commit point and this participant's own part of it, in one local commit: moves the
    /// pending record of `id` as [`decide_commit`](Self::decide_commit) does, then applies this
    /// participant's intent (or drops it, when the record says `abort`). The same commit deletes
    /// the records queued by [`forget_later`](Self::forget_later). Returns the state that holds
    /// afterwards, or `None` when there is no record; on an error nothing of it was written.
    pub async fn decide_commit_and_apply(self, id: &str, max_age: Duration) -> Result<Option<DecisionState>> {
        let id = id.to_owned();
        let max_age_ms = i64::try_from(max_age.as_millis()).unwrap_or(i64::MAX);
        let forget = self.take_forgets();
        let queued = forget.clone();
        let _pass = crate::engine::cut::pass().await;
        let outcome = self
            .db
            .write_atomic(move |conn| {
                decision::forget_all(conn, &forget)?;
                let state = decision::decide_commit(conn, &id, max_age_ms)?;
                match state {
                    Some(DecisionState::Commit) => participant::finish(conn, &id, true)?,
                    Some(DecisionState::Abort) => participant::finish(conn, &id, false)?,
                    _ => Finished::NotPrepared,
                };
                Ok(state)
            })
            .await;
        if outcome.is_err() {
            self.queue_forgets(queued);
        }
        outcome
    }

    /// Queues the decided record of `id`, which every participant has finished, to be deleted
    /// by this file's next [`decide_commit_and_apply`](Self::decide_commit_and_apply) or by the
    /// resolver ([`forget_decisions`](Self::forget_decisions)), off the commit's latency path.
    /// A queued record counts as finished ([`will_forget`](Self::will_forget)); one a crash
    /// leaves behind is a decided record recovery finishes (a no-op) and forgets.
    pub fn forget_later(self, id: &str) {
        self.queue_forgets(vec![id.to_owned()]);
    }

    /// Whether the decided record of `id` is queued to be forgotten (every participant finished).
    pub fn will_forget(self, id: &str) -> bool {
        self.forgets().iter().any(|queued| queued == id)
    }

    fn forgets(self) -> std::sync::MutexGuard<'db, Vec<String>> {
        self.db
            .shared
            .atomic_forget
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn take_forgets(self) -> Vec<String> {
        let mut queued = self.forgets();
        let keep = queued.len().saturating_sub(FORGET_BATCH);
        queued.split_off(keep)
    }

    fn queue_forgets(self, ids: Vec<String>) {
        self.forgets().extend(ids);
    }

    /// Makes sure the transaction `id` has a decision record here, writing an `abort` one dated
    /// `created_unix_ms` when it has none (recovery, for an intent elsewhere older than the
    /// abandon age whose record never came); returns the state the record holds.
    pub async fn abort_unknown(
        self,
        id: &str,
        participants: Vec<String>,
        created_unix_ms: i64,
    ) -> Result<DecisionState> {
        let id = id.to_owned();
        self.db
            .shared
            .atomic_state
            .store(true, std::sync::atomic::Ordering::Release);
        let _pass = crate::engine::cut::pass().await;
        self.db
            .write_atomic(move |conn| decision::abort_unknown(conn, &id, &participants, created_unix_ms))
            .await
    }

    /// Recovery on the first participant, in one local commit: reads the decision of `id` and
    /// moves a pending record created at or before `abandon_cutoff_unix_ms` to `abort`; with
    /// no record, writes an `abort` one dated `tombstone_unix_ms` if that is given (see
    /// [`abort_unknown`](Self::abort_unknown)); then, once decided, applies or drops this
    /// participant's own intent. Returns the decision (`None` without a record) and what
    /// finishing did here.
    pub async fn settle(
        self,
        id: &str,
        participants: Vec<String>,
        abandon_cutoff_unix_ms: i64,
        tombstone_unix_ms: Option<i64>,
    ) -> Result<(Option<DecisionState>, Finished)> {
        let id = id.to_owned();
        if tombstone_unix_ms.is_some() {
            self.db
                .shared
                .atomic_state
                .store(true, std::sync::atomic::Ordering::Release);
        }
        let _pass = crate::engine::cut::pass().await;
        self.db
            .write_atomic(move |conn| {
                let state = match decision::get(conn, &id)? {
                    None => match tombstone_unix_ms {
                        Some(at) => Some(decision::abort_unknown(conn, &id, &participants, at)?),
                        None => None,
                    },
                    Some(d) if d.state == DecisionState::Pending && d.created_unix_ms <= abandon_cutoff_unix_ms => {
                        decision::decide(conn, &id, DecisionState::Abort)?
                    }
                    Some(d) => Some(d.state),
                };
                let finished = match state {
                    Some(DecisionState::Commit) => participant::finish(conn, &id, true)?,
                    Some(DecisionState::Abort) => participant::finish(conn, &id, false)?,
                    _ => Finished::NotPrepared,
                };
                Ok((state, finished))
            })
            .await
    }

    /// Removes the decided records of `ids` (pending ones stay) in one local commit; how many
    /// were removed.
    pub async fn forget_decisions(self, ids: Vec<String>) -> Result<usize> {
        let done = ids.clone();
        let removed = self
            .db
            .write_atomic(move |conn| decision::forget_all(conn, &ids))
            .await?;
        self.forgets().retain(|queued| !done.contains(queued));
        Ok(removed)
    }

    /// Aborts every pending record older than `age` (presumed abort); returns their ids.
    pub async fn abort_abandoned(self, age: Duration) -> Result<Vec<String>> {
        let cutoff = super::unix_ms_now().saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX));
        let _pass = crate::engine::cut::pass().await;
        self.db
            .write_atomic(move |conn| decision::abort_abandoned(conn, cutoff))
            .await
    }

    /// The decision record of `id`, if this shard holds one.
    pub async fn decision(self, id: &str) -> Result<Option<Decision>> {
        let id = id.to_owned();
        self.db.read(move |conn| decision::get(conn, &id)).await
    }

    /// Every decision record this shard holds, oldest first.
    pub async fn decisions(self) -> Result<Vec<Decision>> {
        self.db.read(|conn| decision::list(conn)).await
    }

    /// Removes the decided record of `id` once every participant has finished.
    pub async fn forget_decision(self, id: &str) -> Result<bool> {
        let id = id.to_owned();
        self.db.write_atomic(move |conn| decision::forget(conn, &id)).await
    }
}
