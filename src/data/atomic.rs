//! Atomic transactions across shards, what crosses the wire: a participant's decision records,
//! intents and finishing outcomes (what [`engine::Atomic`](crate::engine::Atomic) works with),
//! and [`AtomicParticipant`], the calls a coordinator makes on a participant shard that another
//! daemon serves (a plain database, or one shard of a data host's folder).
//!
//! A remote participant runs the same steps a local one does, each one call: begin a participant
//! session, execute in it, prepare it (the first participant's prepare also creates the pending
//! decision record), then one decision step at a time by transaction id. Its statements run on
//! that daemon, in a session of its own that the daemon bounds and expires.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{Params, SqlResult};
use crate::error::Result;

/// Where an atomic transaction's decision stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DecisionState {
    /// Created; participants may be preparing. Aborted once older than the abandon age.
    Pending,
    /// Committed: every participant applies its changes.
    Commit,
    /// Aborted: every participant drops its changes.
    Abort,
}

impl DecisionState {
    pub(crate) fn stored(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Commit => "commit",
            Self::Abort => "abort",
        }
    }

    pub(crate) fn from_stored(text: &str) -> Option<Self> {
        [Self::Pending, Self::Commit, Self::Abort]
            .into_iter()
            .find(|s| s.stored() == text)
    }
}

impl std::fmt::Display for DecisionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.stored())
    }
}

/// A decision record on a transaction's first participant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct Decision {
    /// The atomic transaction's id.
    pub transaction_id: String,
    /// Where it stands.
    pub state: DecisionState,
    /// Its participant shards, the first being the one that holds this record.
    pub participants: Vec<String>,
    /// When the record was created (Unix milliseconds).
    pub created_unix_ms: i64,
    /// When it was decided, if it was.
    pub decided_unix_ms: Option<i64>,
}

/// A transaction prepared on a participant and not yet finished there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub struct AtomicIntent {
    /// The atomic transaction's id.
    pub transaction_id: String,
    /// Its participant shards; the first holds the decision.
    pub participants: Vec<String>,
    /// When it was prepared here (Unix milliseconds).
    pub prepared_unix_ms: i64,
    /// How many rows it locks here.
    pub rows: usize,
}

/// What finishing a transaction on a participant did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Finished {
    /// Its changes were applied and its locks released.
    Applied,
    /// Its changes were dropped and its locks released.
    Dropped,
    /// Nothing was prepared under that id here (never, or finished already).
    NotPrepared,
}

/// What a participant prepares, sent to the daemon serving it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AtomicPrepare {
    /// The atomic transaction's id (`csdbatomic:{hex}`).
    #[cfg_attr(feature = "server", schema(pattern = r"^csdbatomic:[0-9a-f]{32}$"))]
    pub transaction_id: String,
    /// Its participant shards, as the coordinator's map names them; the first holds the decision.
    #[cfg_attr(feature = "server", schema(min_items = 1))]
    pub participants: Vec<String>,
    /// Whether this participant is the first one, whose prepare also creates the pending
    /// decision record.
    pub holds_decision: bool,
    /// When the coordinator began the commit (Unix milliseconds, its clock).
    pub started_unix_ms: i64,
}

/// What a prepare did: how many rows it locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AtomicPrepared {
    /// The rows the prepare locked.
    pub rows: u64,
}

/// One step of an atomic transaction on a participant, by transaction id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum AtomicStepKind {
    /// The commit point, on the first participant: moves the pending record to `commit` by one
    /// compare-and-set (to `abort` once it is `maxAgeMs` old) and applies this participant's
    /// own values in the same local commit.
    DecideCommit,
    /// Moves the pending record to `abort` by one compare-and-set.
    DecideAbort,
    /// Applies the prepared values and releases their locks.
    Apply,
    /// Drops the prepared values and releases their locks.
    Drop,
    /// Recovery on the first participant: aborts a pending record created at or before
    /// `abandonCutoffUnixMs`, writes an `abort` record dated `tombstoneUnixMs` when there is none
    /// (if given), then finishes this participant's own part.
    Settle,
    /// Deletes the decided record, every participant having finished.
    Forget,
    /// Queues the decided record, every participant having finished, to be deleted by the
    /// participant's next decision (no local commit of its own).
    ForgetLater,
}

/// A step of an atomic transaction on a participant (see [`AtomicStepKind`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AtomicStepRequest {
    /// The step.
    pub step: AtomicStepKind,
    /// `decideCommit`: the age (milliseconds) from which the record is aborted instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_ms: Option<u64>,
    /// `settle`: the participants, for a tombstone record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub participants: Vec<String>,
    /// `settle`: a pending record created at or before this time (Unix milliseconds) is aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abandon_cutoff_unix_ms: Option<i64>,
    /// `settle`: with no record, write an `abort` one dated this time (Unix milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tombstone_unix_ms: Option<i64>,
}

impl AtomicStepRequest {
    /// The step `step` with no arguments.
    pub fn new(step: AtomicStepKind) -> Self {
        Self {
            step,
            max_age_ms: None,
            participants: Vec::new(),
            abandon_cutoff_unix_ms: None,
            tombstone_unix_ms: None,
        }
    }
}

/// What a step did: the decision that holds afterwards (absent when there is no record, or the
/// step does not read it) and what finishing did on this participant (absent when the step
/// finishes nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AtomicStepOutcome {
    /// The decision that holds afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<DecisionState>,
    /// What finishing did here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<Finished>,
}

/// A participant's atomic state: its decision records and its unfinished intents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AtomicState {
    /// The decision records it holds as a first participant, oldest first.
    pub decisions: Vec<Decision>,
    /// The transactions prepared here and not yet finished, oldest first.
    pub intents: Vec<AtomicIntent>,
}

/// The decision record of one transaction on a participant, if it holds one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AtomicDecisionFound {
    /// The record, `null` when the participant holds none.
    pub decision: Option<Decision>,
}

/// The calls a coordinator makes on a participant shard served by another daemon (see the
/// module documentation). Implemented by the REST and gRPC clients
/// ([`HttpClient`](crate::transport::http::HttpClient),
/// [`GrpcClient`](crate::transport::grpc::GrpcClient)).
#[async_trait]
pub trait AtomicParticipant: Send + Sync {
    /// Begins a participant session; returns its id.
    async fn begin_participant(&self) -> Result<String>;
    /// Executes SQL in the participant session `session`.
    async fn execute_in_participant(&self, session: &str, sql: &str, params: Params) -> Result<SqlResult>;
    /// Prepares the participant session `session` (which ends it); how many rows it locked.
    async fn prepare_participant(&self, session: &str, prepare: &AtomicPrepare) -> Result<u64>;
    /// Rolls the participant session `session` back (an ended one counts as rolled back).
    async fn rollback_participant(&self, session: &str) -> Result<()>;
    /// Runs one step of `transaction_id` on the participant.
    async fn atomic_step(&self, transaction_id: &str, step: &AtomicStepRequest) -> Result<AtomicStepOutcome>;
    /// The decision record of `transaction_id`, if the participant holds one.
    async fn atomic_decision(&self, transaction_id: &str) -> Result<Option<Decision>>;
    /// The participant's decision records and unfinished intents.
    async fn atomic_state(&self) -> Result<AtomicState>;
}

/// A shared [`AtomicParticipant`].
pub type SharedParticipant = Arc<dyn AtomicParticipant>;
