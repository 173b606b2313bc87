//! Recovery of atomic transactions: finishing what a coordinator that died left behind, from the
//! decision records and intents in the shard files ([`AtomicRecovery`], handed out by
//! [`ShardedClient::atomic_recovery`]), on demand (`shardlite tx resolve`), when a shard opens
//! holding atomic state, and in rounds over the shard files a client has open (the resolver
//! every client runs, see [`atomic_resolver`](super::atomic_resolver)).
//!
//! The resolver's rounds pace themselves (a thirteenth of their time working, see
//! [`PACE_WORK`]), so a backlog costs the writes the process serves little; on-demand resolves
//! and the pass when a shard opens run unpaced.
//!
//! For each decision record a shard holds: a pending one older than the abandon age is aborted
//! by compare-and-set (presumed abort); a decided one is finished on every participant, then
//! forgotten; one the coordinator queued to forget (every participant finished, see
//! [`Atomic::forget_later`](crate::engine::Atomic::forget_later)) is forgotten at once and not
//! listed as unresolved. For each intent a shard holds: the decision is read on the transaction's first
//! participant and followed. No record there means the first participant has not prepared yet
//! (the participants prepare at once), or never will: once the intent is older than the abandon
//! age, recovery writes an `abort` record in its place (a tombstone the first participant's late
//! prepare fails on) and follows that. A record is only forgotten once every participant
//! finished, and a coordinator never commits a record half the abandon age old, so an intent
//! that old without a record was never committed. Every step is safe to repeat and to race with
//! a live coordinator: finishing twice is a no-op, and a decision is one compare-and-set or one
//! insert that an existing record wins.
//!
//! Shards another daemon serves over REST or gRPC (a plain database, or a data host's shard) are
//! visited too, except by the pass at open (and by rounds, only when a sweep is due, see
//! [`atomic_resolver`](super::atomic_resolver)): one call reads a remote shard's records and
//! intents, and the same steps run there by call (see
//! [`AtomicParticipant`](crate::data::AtomicParticipant)). A remote shard that does not answer
//! counts as waiting, and the round goes on with the others.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::ShardedClient;
use super::atomic_participant::Seat;
use super::generation::Generation;
use crate::engine::{AtomicIntent, Database, Decision, DecisionState, Finished, unix_ms_now};
use crate::error::Result;

/// Where an unresolved atomic transaction stands on the shard that reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnresolvedState {
    /// Prepared on this participant, its locks held, awaiting the decision.
    Prepared,
    /// This shard holds its decision record, still undecided.
    Pending,
    /// Decided to commit; some participant has not applied yet.
    Commit,
    /// Decided to abort; some participant has not dropped yet.
    Abort,
}

/// An atomic transaction not finished everywhere, as one shard holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnresolvedAtomic {
    /// The transaction's id.
    pub transaction_id: String,
    /// The shard that holds this record or intent.
    pub shard_id: String,
    /// Where it stands there.
    pub state: UnresolvedState,
    /// Its participants; the first holds the decision.
    pub participants: Vec<String>,
    /// How long ago it was prepared (or its record created), in milliseconds.
    pub age_ms: u64,
}

/// What one resolve did, counted per participant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AtomicResolution {
    /// Participants that applied a committed transaction's values.
    pub committed: usize,
    /// Participants that dropped an aborted transaction's values.
    pub aborted: usize,
    /// Transactions left as they are: undecided and younger than the abandon age, or with a
    /// participant this client cannot reach.
    pub waiting: usize,
}

/// The recovery of a [`ShardedClient`]'s atomic transactions, handed out by
/// [`ShardedClient::atomic_recovery`].
#[derive(Debug, Clone, Copy)]
pub struct AtomicRecovery<'a> {
    sharded: &'a ShardedClient,
}

fn age_of(unix_ms: i64) -> u64 {
    u64::try_from(unix_ms_now().saturating_sub(unix_ms)).unwrap_or(0)
}

impl<'a> AtomicRecovery<'a> {
    pub(super) fn new(sharded: &'a ShardedClient) -> Self {
        Self { sharded }
    }

    fn abandon_age(self) -> Duration {
        self.sharded.inner.options.engine.atomic_abandon_age
    }

    /// Every unresolved intent and decision record on the shards served from files here, and on
    /// the shards other daemons serve (over REST or gRPC) that answer.
    pub async fn unresolved(self) -> Result<Vec<UnresolvedAtomic>> {
        self.unresolved_in(false).await
    }

    /// [`unresolved`](Self::unresolved) in the shard files open now that may hold atomic
    /// state only, as the background resolver sees them: it never opens a file (a metrics
    /// scrape reads this).
    pub async fn unresolved_in_open_files(self) -> Result<Vec<UnresolvedAtomic>> {
        self.unresolved_in(true).await
    }

    async fn unresolved_in(self, open_only: bool) -> Result<Vec<UnresolvedAtomic>> {
        let generation = self.sharded.inner.fresh().await;
        let mut found = Vec::new();
        let scope = if open_only { Scope::OpenFiles } else { Scope::Every };
        let shards = local_shards(&generation, scope);
        let mut scanned: HashSet<String> = shards.iter().map(|(id, _)| id.clone()).collect();
        for (shard_id, db) in shards {
            let mut decisions = db.atomic().decisions().await?;
            // Finished everywhere; only its deletion is pending.
            decisions.retain(|d| !db.atomic().will_forget(&d.transaction_id));
            list_state(&shard_id, decisions, db.atomic().intents().await?, &mut found);
        }
        // A remote shard's state is one call (never made by a metrics scrape); one that does
        // not answer is left out.
        let remote = if open_only {
            Vec::new()
        } else {
            remote_shards(&generation, scope)
        };
        for (shard_id, seat) in remote {
            let Seat::Remote(participant) = seat else { continue };
            match participant.atomic_state().await {
                Ok(state) => {
                    list_state(&shard_id, state.decisions, state.intents, &mut found);
                    scanned.insert(shard_id);
                }
                Err(err) => {
                    tracing::debug!(shard = %shard_id, error = %err, "could not list a remote shard's atomic state")
                }
            }
        }
        Ok(without_finished(found, &scanned))
    }

    /// Finishes what can be finished on every shard served from a file here (opening each).
    pub async fn resolve(self) -> Result<AtomicResolution> {
        self.resolve_in(Scope::Every).await
    }

    /// How many shards the resolver's open pass visited since the client started: shards that
    /// opened holding an intent or a decision record, each counted once per opening (openings
    /// that came while it was queued count with it). A shard without atomic state never counts.
    pub fn open_passes(self) -> u64 {
        self.sharded.inner.atomic_opened.passes()
    }

    /// [`resolve`](Self::resolve) over the shard files open now that may hold atomic state
    /// only: the background resolver's paced round, which never opens a file and never reads
    /// one that has no atomic tables.
    pub(super) async fn resolve_open_files(self) -> Result<AtomicResolution> {
        self.resolve_in(Scope::OpenFiles).await
    }

    /// [`resolve`](Self::resolve) on the shard `shard_id` alone, unpaced, if its file is open:
    /// the pass after it opened holding atomic state (a file closed again meanwhile is left to
    /// its next opening). Its transactions' other participants are finished too.
    pub(super) async fn resolve_opened(self, shard_id: &str) -> Result<AtomicResolution> {
        self.resolve_in(Scope::Opened(shard_id)).await
    }

    async fn resolve_in(self, scope: Scope<'_>) -> Result<AtomicResolution> {
        let generation = self.sharded.inner.fresh().await;
        let abandon_ms = i64::try_from(self.abandon_age().as_millis()).unwrap_or(i64::MAX);
        let mut round = Round {
            generation: &generation,
            abandon_ms,
            resolution: AtomicResolution::default(),
            pace: Pace::new(matches!(scope, Scope::OpenFiles)),
            forget: Vec::new(),
        };
        let mut shards: Vec<(String, Seat)> = local_shards(&generation, scope)
            .into_iter()
            .map(|(id, db)| (id, Seat::Local(db)))
            .collect();
        let remote_due = match scope {
            Scope::Every => true,
            Scope::OpenFiles => self.sharded.inner.atomic_opened.claim_remote_sweep(),
            Scope::Opened(_) => false,
        };
        if remote_due {
            shards.extend(remote_shards(&generation, scope));
        }
        for (shard_id, seat) in shards {
            let Some((decisions, remote_intents)) = round.read_state(&shard_id, &seat).await? else {
                self.sharded.inner.atomic_opened.want_remote_sweep();
                continue;
            };
            if matches!(seat, Seat::Remote(_)) && !(decisions.is_empty() && remote_intents.is_empty()) {
                // What is left there now is looked at again by the next round.
                self.sharded.inner.atomic_opened.want_remote_sweep();
            }
            let mut settled = HashSet::new();
            for d in decisions {
                round.pace.tick().await;
                if let Seat::Local(db) = &seat
                    && db.atomic().will_forget(&d.transaction_id)
                {
                    round.forget.push((shard_id.clone(), seat.clone(), d.transaction_id));
                    continue;
                }
                let young = d.state == DecisionState::Pending && !round.abandoned(d.created_unix_ms);
                if young {
                    round.resolution.waiting += 1;
                    continue;
                }
                round
                    .settle(&shard_id, &seat, &d.transaction_id, &d.participants, None)
                    .await?;
                settled.insert(d.transaction_id);
            }
            let intents = match (&seat, remote_intents) {
                (Seat::Local(db), _) => db.atomic().intents().await?,
                (Seat::Remote(_), intents) => intents
                    .into_iter()
                    .filter(|intent| !settled.contains(&intent.transaction_id))
                    .collect(),
            };
            for intent in intents {
                round.pace.tick().await;
                round.follow(&intent).await?;
            }
            round.flush_forgets().await?;
        }
        Ok(round.resolution)
    }
}

/// Lists the records and intents one shard holds as unresolved transactions.
fn list_state(shard_id: &str, decisions: Vec<Decision>, intents: Vec<AtomicIntent>, found: &mut Vec<UnresolvedAtomic>) {
    for d in decisions {
        found.push(UnresolvedAtomic {
            transaction_id: d.transaction_id,
            shard_id: shard_id.to_owned(),
            state: match d.state {
                DecisionState::Pending => UnresolvedState::Pending,
                DecisionState::Commit => UnresolvedState::Commit,
                DecisionState::Abort => UnresolvedState::Abort,
            },
            participants: d.participants,
            age_ms: age_of(d.created_unix_ms),
        });
    }
    for intent in intents {
        found.push(UnresolvedAtomic {
            transaction_id: intent.transaction_id,
            shard_id: shard_id.to_owned(),
            state: UnresolvedState::Prepared,
            participants: intent.participants,
            age_ms: age_of(intent.prepared_unix_ms),
        });
    }
}

/// Drops the decided records whose transaction every participant has finished: none of them
/// holds an intent, and all of them were `scanned`. Only the record's deletion is left, which
/// the holder's next decision or the resolver does (another process may have queued it).
fn without_finished(found: Vec<UnresolvedAtomic>, scanned: &HashSet<String>) -> Vec<UnresolvedAtomic> {
    let prepared: HashSet<String> = found
        .iter()
        .filter(|u| u.state == UnresolvedState::Prepared)
        .map(|u| u.transaction_id.clone())
        .collect();
    found
        .into_iter()
        .filter(|u| {
            let decided = matches!(u.state, UnresolvedState::Commit | UnresolvedState::Abort);
            !decided || prepared.contains(&u.transaction_id) || !u.participants.iter().all(|p| scanned.contains(p))
        })
        .collect()
}

/// One resolve over the shards: what it did, its pacing, and the decided records to forget.
struct Round<'g> {
    generation: &'g Generation,
    abandon_ms: i64,
    resolution: AtomicResolution,
    pace: Pace,
    /// Records every participant has finished: `(holder shard, holder, transaction)`.
    forget: Vec<(String, Seat, String)>,
}

impl Round<'_> {
    fn abandoned(&self, unix_ms: i64) -> bool {
        unix_ms_now().saturating_sub(unix_ms) >= self.abandon_ms
    }

    /// The decision records a shard holds and, for a remote one, its intents too (read in the
    /// same call; a local shard's are read after its records are settled). A remote shard that
    /// does not answer counts as waiting (`None`): the others are resolved meanwhile.
    async fn read_state(&mut self, shard_id: &str, seat: &Seat) -> Result<Option<(Vec<Decision>, Vec<AtomicIntent>)>> {
        match seat {
            Seat::Local(db) => Ok(Some((db.atomic().decisions().await?, Vec::new()))),
            Seat::Remote(remote) => match remote.atomic_state().await {
                Ok(state) => Ok(Some((state.decisions, state.intents))),
                Err(err) => {
                    tracing::debug!(shard = shard_id, error = %err, "atomic recovery could not read a remote shard");
                    self.resolution.waiting += 1;
                    Ok(None)
                }
            },
        }
    }

    /// Follows the decision of the transaction `intent` is prepared for, on its first
    /// participant (here or on another daemon); an undecided one waits for the abandon age.
    async fn follow(&mut self, intent: &AtomicIntent) -> Result<()> {
        let Some(holder_id) = intent.participants.first() else {
            return Ok(());
        };
        let Some(holder) = super::atomic::seat_by_id(self.generation, holder_id) else {
            self.resolution.waiting += 1;
            return Ok(());
        };
        let (id, at) = (&intent.transaction_id, intent.prepared_unix_ms);
        let record = match holder.decision(id).await {
            Ok(record) => record,
            Err(err) if matches!(holder, Seat::Remote(_)) => {
                tracing::debug!(transaction = %id, error = %err, "atomic recovery could not read a remote decision");
                self.resolution.waiting += 1;
                return Ok(());
            }
            Err(err) => return Err(err),
        };
        // No record yet: the first participant may not have prepared (prepares run at
        // once); one pending: the coordinator may still decide. Both wait for the age.
        let waits = match &record {
            None => !self.abandoned(at),
            Some(d) => d.state == DecisionState::Pending && !self.abandoned(d.created_unix_ms),
        };
        if waits {
            self.resolution.waiting += 1;
            return Ok(());
        }
        self.settle(holder_id, &holder, id, &intent.participants, Some(at))
            .await
    }

    /// Decides (presumed abort, or a tombstone dated `tombstone` when there is no record) and
    /// finishes the transaction `id` on its first participant `holder` in one local commit,
    /// then on the other participants served here; the record is forgotten when all are.
    async fn settle(
        &mut self,
        holder_id: &str,
        holder: &Seat,
        id: &str,
        participants: &[String],
        tombstone: Option<i64>,
    ) -> Result<()> {
        let cutoff = unix_ms_now().saturating_sub(self.abandon_ms);
        let settled = holder.settle(id, participants.to_vec(), cutoff, tombstone).await;
        let (state, finished) = match settled {
            Ok(settled) => settled,
            Err(err) if matches!(holder, Seat::Remote(_)) => {
                tracing::debug!(transaction = id, error = %err, "atomic recovery could not settle on a remote shard");
                self.resolution.waiting += 1;
                return Ok(());
            }
            Err(err) => return Err(err),
        };
        count(finished, &mut self.resolution);
        let Some(state @ (DecisionState::Commit | DecisionState::Abort)) = state else {
            // A listed record that is gone was finished and forgotten by another pass meanwhile
            // (the one at open, say): nothing waits on it.
            if state.is_some() || tombstone.is_some() {
                self.resolution.waiting += 1;
            }
            return Ok(());
        };
        let mut all = true;
        for participant in participants.iter().filter(|p| p.as_str() != holder_id) {
            match super::atomic::seat_by_id(self.generation, participant) {
                Some(seat @ Seat::Local(_)) => finish(&seat, id, state, &mut self.resolution).await?,
                Some(seat) => {
                    if let Err(err) = finish(&seat, id, state, &mut self.resolution).await {
                        tracing::debug!(transaction = id, error = %err, "atomic recovery could not finish on a remote shard");
                        all = false;
                    }
                }
                None => all = false,
            }
        }
        if all {
            self.forget.push((holder_id.to_owned(), holder.clone(), id.to_owned()));
        } else {
            self.resolution.waiting += 1;
        }
        Ok(())
    }

    /// Forgets the finished records, a bounded batch per local commit on each holder.
    async fn flush_forgets(&mut self) -> Result<()> {
        let mut forget = std::mem::take(&mut self.forget);
        forget.sort_by(|a, b| a.0.cmp(&b.0));
        for batch in forget.chunk_by(|a, b| a.0 == b.0) {
            for chunk in batch.chunks(FORGET_BATCH) {
                self.pace.tick().await;
                let ids: Vec<String> = chunk.iter().map(|(_, _, id)| id.clone()).collect();
                match &chunk[0].1 {
                    Seat::Local(db) => {
                        db.atomic().forget_decisions(ids).await?;
                    }
                    Seat::Remote(remote) => {
                        let request = crate::data::AtomicStepRequest::new(crate::data::AtomicStepKind::Forget);
                        for id in ids {
                            // A record left behind is forgotten by a later round.
                            let _ = remote.atomic_step(&id, &request).await;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// How many finished decision records one local commit forgets.
const FORGET_BATCH: usize = 64;

/// How long the background resolver works before it rests, and how much longer than it worked
/// it then rests: a thirteenth of its time working, so that a backlog (a thousand transactions
/// a crashed coordinator left behind) is worked off without denting the throughput of the writes
/// the process serves. The rest is measured against the work actually done, so a step that ran
/// long (a write waiting behind the load's) is paid for with a longer rest. On-demand resolves
/// (`shardlite tx resolve`, a shard opening) run unpaced.
const PACE_WORK: Duration = Duration::from_millis(3);
const PACE_REST_FACTOR: u32 = 12;

/// The background resolver's pacing (see [`PACE_WORK`]); does nothing when not `paced`.
struct Pace {
    paced: bool,
    since: Instant,
}

impl Pace {
    fn new(paced: bool) -> Self {
        Self {
            paced,
            since: Instant::now(),
        }
    }

    /// Rests when the resolver has worked [`PACE_WORK`] since it last rested, for
    /// [`PACE_REST_FACTOR`] times as long as it worked.
    async fn tick(&mut self) {
        let worked = self.since.elapsed();
        if self.paced && worked >= PACE_WORK {
            tokio::time::sleep(worked * PACE_REST_FACTOR).await;
            self.since = Instant::now();
        }
    }
}

async fn finish(seat: &Seat, id: &str, state: DecisionState, resolution: &mut AtomicResolution) -> Result<()> {
    let finished = if state == DecisionState::Commit {
        seat.commit_prepared(id).await?
    } else {
        seat.abort_prepared(id).await?
    };
    count(finished, resolution);
    Ok(())
}

fn count(finished: Finished, resolution: &mut AtomicResolution) {
    match finished {
        Finished::Applied => resolution.committed += 1,
        Finished::Dropped => resolution.aborted += 1,
        Finished::NotPrepared => {}
    }
}

/// Which shards a resolve visits.
#[derive(Debug, Clone, Copy)]
enum Scope<'a> {
    /// Every shard served from a file here, opening each.
    Every,
    /// The files open now that may hold atomic state (the resolver's rounds).
    OpenFiles,
    /// This shard, if its file is open now (the pass after it opened holding atomic state).
    Opened(&'a str),
}

/// The shards of `generation` served from files here that `scope` visits.
fn local_shards(generation: &Generation, scope: Scope<'_>) -> Vec<(String, Database)> {
    let shards = generation.map.shards();
    let chosen: Vec<&str> = match scope {
        Scope::Opened(shard_id) => generation
            .map
            .shard_index(shard_id)
            .map(|index| shards[index].id.as_str())
            .into_iter()
            .collect(),
        Scope::Every | Scope::OpenFiles => shards.iter().map(|shard| shard.id.as_str()).collect(),
    };
    chosen
        .into_iter()
        .filter_map(|shard_id| {
            let db = generation.local_of(shard_id)?.database().clone();
            let visits = match scope {
                Scope::Every => true,
                Scope::OpenFiles => db.is_open() && db.atomic().may_hold_state(),
                Scope::Opened(_) => db.is_open(),
            };
            visits.then(|| (shard_id.to_owned(), db))
        })
        .collect()
}

/// The shards of `generation` another daemon serves (REST or gRPC), which a resolve over every shard
/// and the resolver's rounds visit (one call each for its records and intents); the pass after a
/// shard opened visits none.
fn remote_shards(generation: &Generation, scope: Scope<'_>) -> Vec<(String, Seat)> {
    if matches!(scope, Scope::Opened(_)) {
        return Vec::new();
    }
    generation
        .map
        .shards()
        .iter()
        .filter(|shard| generation.local_of(&shard.id).is_none())
        .filter_map(|shard| {
            let seat = super::atomic::seat_by_id(generation, &shard.id)?;
            Some((shard.id.clone(), seat))
        })
        .collect()
}
