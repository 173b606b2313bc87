//! Atomic transactions across shards, the coordinator: [`AtomicTransaction`], begun by
//! [`ShardedClient::begin_atomic`], executes on any route and commits all or nothing.
//!
//! Each shard the transaction touches runs its statements in a session of its own (see
//! [`engine::atomic`](crate::engine::Atomic)). With one participant, commit is that session's
//! plain commit: today's path at today's cost. With several, commit is the protocol:
//! 1. every participant prepares at once, each in one local commit; the first participant's
//!    also creates the transaction's pending decision record there
//!    ([`AtomicStep::DecisionCreated`], [`AtomicStep::Prepared`]);
//! 2. one compare-and-set on the first participant moves the record to `commit`
//!    ([`AtomicStep::Decided`]): the commit point. It refuses (and aborts) once the commit is
//!    half the abandon age old, since recovery may by then have aborted an intent whose record
//!    had not come yet. The same local commit applies the first participant's own values and
//!    releases its locks (so [`AtomicStep::Decided`] is also [`AtomicStep::Applied`]`(1)`);
//! 3. every other participant applies its values and releases its locks, all at once
//!    ([`AtomicStep::Applied`]). The record is then queued to be forgotten: the first
//!    participant's next decision deletes it in its own local commit (or the resolver does),
//!    so forgetting costs the commit no local commit of its own.
//!
//! A failure before step 2 aborts every prepared participant. A crash at any step is finished
//! by recovery ([`ShardedClient::resolve_atomic`], and the background resolver): a record still
//! pending after [`atomic_abandon_age`](crate::engine::EngineConfig::atomic_abandon_age) is
//! aborted, and so is an intent that old whose record never came (a tombstone takes the
//! record's place).
//!
//! Every time the protocol stores (the record's and the intents') is the time the coordinator
//! began the commit, on its clock: the hosts' clocks must agree to well within half the
//! abandon age (30 s by default).
//!
//! A participant is a shard this process serves from its file, or one another daemon serves
//! over REST or gRPC (a plain database behind the map's `endpoint`, or a data host's shard named
//! by `remoteShardId`): the same steps, one call each (see
//! [`AtomicParticipant`](crate::data::AtomicParticipant)). A transaction whose one participant
//! is local commits that session plainly; one whose only participant is remote runs the
//! protocol with that one participant.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::future::join_all;

use super::ShardedClient;
use super::atomic_participant::{Participant, Seat};
use super::generation::Generation;
use crate::data::{Params, SqlResult};
use crate::engine::{DecisionState, unix_ms_now};
use crate::error::{Error, Result};
use crate::routing::RouteContext;
use crate::transaction::AtomicTransactionId;

/// A step of the commit protocol of an atomic transaction with several participants, after
/// which [`AtomicTransaction::commit_until`] stops (as a coordinator that died there would).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicStep {
    /// The first participant prepared and holds the pending decision record.
    DecisionCreated,
    /// This many participants besides the first prepared. As a stop of
    /// [`AtomicTransaction::commit_until`], the first one prepared too.
    Prepared(usize),
    /// This many participants besides the first prepared while the first one's prepare (which
    /// creates the decision record) had not finished: intents without a record. As a stop of
    /// [`AtomicTransaction::commit_until`], the first one never prepares.
    PreparedBeforeRecord(usize),
    /// The decision record says `commit`, and the first participant applied its values (in the
    /// same local commit).
    Decided,
    /// The decision was taken and this many participants applied their values, the first one
    /// included (`Applied(1)` leaves what [`Decided`](Self::Decided) leaves).
    Applied(usize),
}

/// A test hook the coordinator calls after each step of the commit protocol of a transaction
/// with several participants: after the first participant's prepare
/// ([`AtomicStep::DecisionCreated`]), after each other prepare ([`AtomicStep::Prepared`], counting
/// the others prepared so far, and before it [`AtomicStep::PreparedBeforeRecord`] when the first
/// participant's prepare had not finished then), after the decision ([`AtomicStep::Decided`]) and after each
/// participant's commit step ([`AtomicStep::Applied`], counting). The daemon binary installs one
/// only when `SHARDLITE_ATOMIC_STOP_AT` is set, to stop the process at a named step for crash
/// tests; unset, nothing is called.
#[derive(Clone)]
pub struct AtomicStepHook(pub Arc<dyn Fn(AtomicStep) + Send + Sync>);

impl std::fmt::Debug for AtomicStepHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AtomicStepHook")
    }
}

fn reached(hook: Option<&AtomicStepHook>, step: AtomicStep) {
    if let Some(hook) = hook {
        (hook.0)(step);
    }
}

/// An atomic transaction across shards: statements on any route, committed on every shard they
/// wrote or on none. Dropped without [`commit`](Self::commit), it rolls back.
///
/// ```no_run
/// # async fn demo(sharded: shardlite::client::ShardedClient) -> shardlite::Result<()> {
/// use shardlite::client::Params;
/// use shardlite::RouteContext;
///
/// let mut transfer = sharded.begin_atomic();
/// let from = RouteContext::new("accounts", "alice")?;
/// let to = RouteContext::new("accounts", "bob")?;
/// transfer.execute(&from, "UPDATE accounts SET balance = balance - 5 WHERE owner = 'alice'", Params::none()).await?;
/// transfer.execute(&to, "UPDATE accounts SET balance = balance + 5 WHERE owner = 'bob'", Params::none()).await?;
/// transfer.commit().await?;
/// # Ok(()) }
/// ```
pub struct AtomicTransaction {
    sharded: ShardedClient,
    id: AtomicTransactionId,
    participants: Vec<Participant>,
    finished: bool,
}

impl std::fmt::Debug for AtomicTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomicTransaction")
            .field("id", &self.id.to_string())
            .field("participants", &self.participants())
            .finish_non_exhaustive()
    }
}

impl AtomicTransaction {
    pub(super) fn new(sharded: ShardedClient) -> Self {
        Self {
            sharded,
            id: AtomicTransactionId::new(),
            participants: Vec::new(),
            finished: false,
        }
    }

    /// Its id (`csdbatomic:...`), as recovery and `shardlite tx list` show it.
    pub fn id(&self) -> String {
        self.id.to_string()
    }

    /// The shards it has touched, in the order it first touched them (the first will hold the
    /// decision).
    pub fn participants(&self) -> Vec<String> {
        self.participants.iter().map(|p| p.shard_id.clone()).collect()
    }

    fn gone(&self) -> Error {
        Error::TransactionNotFound {
            transaction_id: self.id.to_string(),
        }
    }

    /// Executes SQL on the shard `route` resolves to, inside this transaction. The shard joins
    /// the transaction at its first statement; a shard that is disabled (`invalid_input`) or
    /// unavailable is refused and nothing runs.
    pub async fn execute(&mut self, route: &RouteContext, sql: &str, params: Params) -> Result<SqlResult> {
        if self.finished {
            return Err(self.gone());
        }
        let generation = self.sharded.inner.fresh().await;
        // A disabled shard cannot take part: the caller's input, not an outage.
        let disabled = |err: Error| match err {
            Error::ShardDisabled(refused) => Error::AtomicUnsupported {
                what: format!("shard '{}', which the map disables", refused.shard_id).into(),
            },
            Error::ShardIsDisabled { shard_id } => Error::AtomicUnsupported {
                what: format!("shard '{shard_id}', which the map disables").into(),
            },
            other => other,
        };
        let resolution = generation
            .map
            .resolve(route.keyspace(), route.key())
            .map_err(disabled)?;
        let shard_id = resolution.shard_id.to_owned();
        let position = match self.participants.iter().position(|p| p.shard_id == shard_id) {
            Some(position) => position,
            None => {
                let seat = seat_of(&generation, resolution.shard_index).map_err(disabled)?;
                if matches!(seat, Seat::Remote(_)) {
                    // Whatever becomes of it, the resolver's next round visits the remote shards.
                    self.sharded.inner.atomic_opened.want_remote_sweep();
                }
                let session = seat.begin().await?;
                self.participants.push(Participant {
                    shard_id,
                    seat,
                    session,
                });
                self.participants.len() - 1
            }
        };
        self.participants[position].execute(sql, params).await
    }

    /// Commits on every shard it wrote, or on none. Once this returns `Ok` the commit is
    /// durable; an error before the decision means nothing was applied anywhere, and an error
    /// of the decision's own write leaves the outcome to recovery.
    pub async fn commit(mut self) -> Result<()> {
        self.commit_until(None).await
    }

    /// [`commit`](Self::commit), stopping after `step` as a coordinator that died there would:
    /// for recovery tests. `None` runs to the end.
    #[doc(hidden)]
    pub async fn commit_until(&mut self, stop: Option<AtomicStep>) -> Result<()> {
        if self.finished {
            return Err(self.gone());
        }
        self.finished = true;
        let participants = std::mem::take(&mut self.participants);
        if let Err(err) = self.still_enabled(&participants).await {
            for p in &participants {
                let _ = p.rollback().await;
            }
            return Err(err);
        }
        match participants.split_first() {
            None => Ok(()),
            Some((only, [])) if only.is_local() => only.commit_alone().await,
            Some((first, others)) => {
                let options = &self.sharded.inner.options;
                let context = (options.atomic_step_hook.as_ref(), options.engine.atomic_abandon_age);
                let outcome = commit_protocol(&self.id.to_string(), first, others, stop, context).await;
                if participants.iter().any(|p| !p.is_local()) {
                    // A remote participant left behind (a failed step) is found by the next round.
                    self.sharded.inner.atomic_opened.want_remote_sweep();
                }
                outcome
            }
        }
    }

    /// Refuses the commit when the live map disables a participant, or no longer has it: an
    /// operator took the shard out of service while the transaction was open.
    async fn still_enabled(&self, participants: &[Participant]) -> Result<()> {
        let generation = self.sharded.inner.fresh().await;
        for p in participants {
            let what = match generation.map.shards().iter().find(|shard| shard.id == p.shard_id) {
                Some(shard) if shard.enabled => continue,
                Some(_) => "which the map disables",
                None => "which the map no longer has",
            };
            return Err(Error::AtomicUnsupported {
                what: format!("shard '{}', {what}", p.shard_id).into(),
            });
        }
        Ok(())
    }

    /// Rolls back on every shard it touched.
    pub async fn rollback(mut self) -> Result<()> {
        self.finished = true;
        for p in std::mem::take(&mut self.participants) {
            p.rollback().await?;
        }
        Ok(())
    }
}

impl Drop for AtomicTransaction {
    fn drop(&mut self) {
        for p in &self.participants {
            p.abandon();
        }
    }
}

/// What the commit protocol works with: the transaction, its participants, when its commit
/// began, and the test hook and stop.
struct Protocol<'a> {
    id: &'a str,
    ids: Vec<String>,
    first: &'a Participant,
    others: &'a [Participant],
    started_unix_ms: i64,
    hook: Option<&'a AtomicStepHook>,
}

impl Protocol<'_> {
    async fn prepare(&self, p: &Participant) -> Result<u64> {
        let first = std::ptr::eq(p, self.first);
        p.prepare(self.id, self.ids.clone(), first, self.started_unix_ms).await
    }

    /// Stops at `stop` if it is a step before the decision, leaving what a coordinator that died
    /// there leaves; `true` when it stopped.
    async fn stop_before_decision(&self, stop: Option<AtomicStep>) -> bool {
        let (first, now) = match stop {
            Some(AtomicStep::DecisionCreated) => (true, 0),
            Some(AtomicStep::Prepared(k)) => (true, k),
            Some(AtomicStep::PreparedBeforeRecord(k)) => (false, k),
            _ => return false,
        };
        let (now, later) = self.others.split_at(now.min(self.others.len()));
        let outcomes = join_all(now.iter().map(|p| self.prepare(p))).await;
        let first = if first {
            self.prepare(self.first).await.map(|_| ())
        } else {
            self.first.rollback().await
        };
        for p in later {
            let _ = p.rollback().await;
        }
        if first.is_err() || outcomes.iter().any(Result::is_err) {
            tracing::debug!(transaction = self.id, "a prepare failed while stopping early");
        }
        true
    }

    /// Prepares every participant at once; the first one's prepare also creates the pending
    /// decision record. Returns the first failure, and whether the first participant prepared.
    async fn prepare_all(&self) -> (Result<()>, bool) {
        let (count, first_done) = (AtomicUsize::new(0), AtomicBool::new(false));
        let first = async {
            let prepared = self.prepare(self.first).await;
            first_done.store(prepared.is_ok(), Ordering::SeqCst);
            if prepared.is_ok() {
                reached(self.hook, AtomicStep::DecisionCreated);
            }
            prepared
        };
        let others = join_all(self.others.iter().map(|p| async {
            let prepared = self.prepare(p).await;
            if prepared.is_ok() {
                let n = count.fetch_add(1, Ordering::SeqCst) + 1;
                if !first_done.load(Ordering::SeqCst) {
                    reached(self.hook, AtomicStep::PreparedBeforeRecord(n));
                }
                reached(self.hook, AtomicStep::Prepared(n));
            }
            prepared
        }));
        let (first, others) = tokio::join!(first, others);
        let first_ok = first.is_ok();
        let outcome = std::iter::once(first)
            .chain(others)
            .find_map(Result::err)
            .map_or(Ok(()), Err);
        (outcome, first_ok)
    }
}

async fn commit_protocol(
    id: &str,
    first: &Participant,
    others: &[Participant],
    stop: Option<AtomicStep>,
    options: (Option<&AtomicStepHook>, Duration),
) -> Result<()> {
    let (hook, abandon_age) = options;
    let protocol = Protocol {
        id,
        ids: std::iter::once(first)
            .chain(others)
            .map(|p| p.shard_id.clone())
            .collect(),
        first,
        others,
        started_unix_ms: unix_ms_now(),
        hook,
    };
    if protocol.stop_before_decision(stop).await {
        return Ok(());
    }
    let (prepared, first_prepared) = protocol.prepare_all().await;
    if let Err(err) = prepared {
        // Nothing was decided: abort; a participant whose prepare failed prepared nothing.
        if first_prepared {
            let _ = first.seat.decide_abort(id).await;
        }
        finish_everywhere(id, first, others, false, None).await;
        return Err(err);
    }
    // Half the abandon age: recovery writes a tombstone for a record that is not there only
    // once an intent is a whole abandon age old (see `engine::atomic`'s decision records).
    // The first participant applies its own values in the decision's local commit.
    match first.seat.decide_commit_and_apply(id, abandon_age / 2).await? {
        Some(DecisionState::Commit) => {}
        _ => {
            finish_everywhere(id, first, others, false, None).await;
            return Err(Error::AtomicDecided {
                transaction_id: id.into(),
                state: "aborted (it was undecided past its abandon age)",
            });
        }
    }
    reached(hook, AtomicStep::Decided);
    reached(hook, AtomicStep::Applied(1));
    if stop == Some(AtomicStep::Decided) {
        return Ok(());
    }
    if let Some(AtomicStep::Applied(k)) = stop {
        for p in others.iter().take(k.saturating_sub(1)) {
            p.seat.commit_prepared(id).await?;
        }
        return Ok(());
    }
    finish_everywhere(id, first, others, true, hook).await;
    Ok(())
}

/// Applies (`commit`, the first participant having applied with the decision) or drops the
/// transaction on every participant, then queues the decision to be forgotten once all
/// finished. A participant that fails here is finished by recovery.
async fn finish_everywhere(
    id: &str,
    first: &Participant,
    others: &[Participant],
    commit: bool,
    hook: Option<&AtomicStepHook>,
) {
    let all: Vec<&Participant> = if commit {
        others.iter().collect()
    } else {
        std::iter::once(first).chain(others).collect()
    };
    let count = AtomicUsize::new(1);
    let results = join_all(all.iter().map(|p| async {
        if commit {
            let applied = p.seat.commit_prepared(id).await;
            if applied.is_ok() {
                reached(hook, AtomicStep::Applied(count.fetch_add(1, Ordering::SeqCst) + 1));
            }
            applied
        } else {
            p.seat.abort_prepared(id).await
        }
    }))
    .await;
    let mut done = true;
    for (p, result) in all.iter().zip(results) {
        if let Err(err) = result {
            done = false;
            tracing::warn!(transaction = id, shard = %p.shard_id, error = %err, "atomic transaction left for recovery");
        }
    }
    if done {
        first.seat.forget_later(id);
    }
}

/// How the shard at `index` takes part: its file, when this process serves it, or the participant
/// calls of the daemon that serves it (over REST or gRPC).
fn seat_of(generation: &Generation, index: usize) -> Result<Seat> {
    let client = generation.slot_client(index)?;
    let shard = &generation.map.shards()[index];
    if let Some(local) = generation.local_of(&shard.id) {
        return Ok(Seat::Local(local.database().clone()));
    }
    client
        .atomic_participant()
        .map(Seat::Remote)
        .ok_or_else(|| Error::AtomicUnsupported {
            what: format!(
                "shard '{}', which this process reaches through a client that carries no participant calls",
                shard.id
            )
            .into(),
        })
}

/// How the shard `shard_id` of `generation` takes part, when it can (it is enabled, available,
/// and served here or by a daemon reached over REST or gRPC): what recovery finishes it through.
pub(super) fn seat_by_id(generation: &Generation, shard_id: &str) -> Option<Seat> {
    let index = generation.map.shard_index(shard_id)?;
    seat_of(generation, index).ok()
}
