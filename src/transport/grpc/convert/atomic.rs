//! The participant calls of atomic transactions: a prepare, a step and its outcome, decision
//! records, intents and a participant's state. Enumerations decode strictly: an unspecified or
//! unknown step, decision state or finishing outcome is refused.

use super::pb;
use crate::data::{
    AtomicIntent, AtomicPrepare, AtomicState, AtomicStepKind, AtomicStepOutcome, AtomicStepRequest, Decision,
    DecisionState, Finished,
};
use crate::error::{Error, Result};

fn unknown(what: &str, value: i32) -> Error {
    Error::invalid_argument("gRPC message", format!("unknown {what} {value}"))
}

fn step_to_pb(step: AtomicStepKind) -> i32 {
    let step = match step {
        AtomicStepKind::DecideCommit => pb::AtomicStepKind::DecideCommit,
        AtomicStepKind::DecideAbort => pb::AtomicStepKind::DecideAbort,
        AtomicStepKind::Apply => pb::AtomicStepKind::Apply,
        AtomicStepKind::Drop => pb::AtomicStepKind::Drop,
        AtomicStepKind::Settle => pb::AtomicStepKind::Settle,
        AtomicStepKind::Forget => pb::AtomicStepKind::Forget,
        AtomicStepKind::ForgetLater => pb::AtomicStepKind::ForgetLater,
    };
    step as i32
}

#[cfg(feature = "server")]
fn step_from_pb(step: i32) -> Result<AtomicStepKind> {
    match pb::AtomicStepKind::try_from(step) {
        Ok(pb::AtomicStepKind::DecideCommit) => Ok(AtomicStepKind::DecideCommit),
        Ok(pb::AtomicStepKind::DecideAbort) => Ok(AtomicStepKind::DecideAbort),
        Ok(pb::AtomicStepKind::Apply) => Ok(AtomicStepKind::Apply),
        Ok(pb::AtomicStepKind::Drop) => Ok(AtomicStepKind::Drop),
        Ok(pb::AtomicStepKind::Settle) => Ok(AtomicStepKind::Settle),
        Ok(pb::AtomicStepKind::Forget) => Ok(AtomicStepKind::Forget),
        Ok(pb::AtomicStepKind::ForgetLater) => Ok(AtomicStepKind::ForgetLater),
        Ok(pb::AtomicStepKind::Unspecified) | Err(_) => Err(unknown("atomic step", step)),
    }
}

fn state_to_pb(state: DecisionState) -> i32 {
    let state = match state {
        DecisionState::Pending => pb::AtomicDecisionState::Pending,
        DecisionState::Commit => pb::AtomicDecisionState::Commit,
        DecisionState::Abort => pb::AtomicDecisionState::Abort,
    };
    state as i32
}

fn state_from_pb(state: i32) -> Result<DecisionState> {
    match pb::AtomicDecisionState::try_from(state) {
        Ok(pb::AtomicDecisionState::Pending) => Ok(DecisionState::Pending),
        Ok(pb::AtomicDecisionState::Commit) => Ok(DecisionState::Commit),
        Ok(pb::AtomicDecisionState::Abort) => Ok(DecisionState::Abort),
        Ok(pb::AtomicDecisionState::Unspecified) | Err(_) => Err(unknown("decision state", state)),
    }
}

fn finished_to_pb(finished: Finished) -> i32 {
    let finished = match finished {
        Finished::Applied => pb::AtomicFinished::Applied,
        Finished::Dropped => pb::AtomicFinished::Dropped,
        Finished::NotPrepared => pb::AtomicFinished::NotPrepared,
    };
    finished as i32
}

fn finished_from_pb(finished: i32) -> Result<Finished> {
    match pb::AtomicFinished::try_from(finished) {
        Ok(pb::AtomicFinished::Applied) => Ok(Finished::Applied),
        Ok(pb::AtomicFinished::Dropped) => Ok(Finished::Dropped),
        Ok(pb::AtomicFinished::NotPrepared) => Ok(Finished::NotPrepared),
        Ok(pb::AtomicFinished::Unspecified) | Err(_) => Err(unknown("finishing outcome", finished)),
    }
}

/// The prepare of the participant session `session_id`.
pub(crate) fn prepare_to_pb(session_id: &str, prepare: &AtomicPrepare) -> pb::PrepareAtomicSessionRequest {
    pb::PrepareAtomicSessionRequest {
        session_id: session_id.to_owned(),
        transaction_id: prepare.transaction_id.clone(),
        participants: prepare.participants.clone(),
        holds_decision: prepare.holds_decision,
        started_unix_ms: prepare.started_unix_ms,
    }
}

/// A prepare's session id and what it prepares.
#[cfg(feature = "server")]
pub(crate) fn prepare_from_pb(request: pb::PrepareAtomicSessionRequest) -> (String, AtomicPrepare) {
    let prepare = AtomicPrepare {
        transaction_id: request.transaction_id,
        participants: request.participants,
        holds_decision: request.holds_decision,
        started_unix_ms: request.started_unix_ms,
    };
    (request.session_id, prepare)
}

/// The step `step` of the transaction `transaction_id`.
pub(crate) fn step_request_to_pb(transaction_id: &str, step: &AtomicStepRequest) -> pb::AtomicStepRequest {
    pb::AtomicStepRequest {
        transaction_id: transaction_id.to_owned(),
        step: step_to_pb(step.step),
        max_age_ms: step.max_age_ms,
        participants: step.participants.clone(),
        abandon_cutoff_unix_ms: step.abandon_cutoff_unix_ms,
        tombstone_unix_ms: step.tombstone_unix_ms,
    }
}

/// A step request's transaction id and step; an unspecified step is refused.
#[cfg(feature = "server")]
pub(crate) fn step_request_from_pb(request: pb::AtomicStepRequest) -> Result<(String, AtomicStepRequest)> {
    let step = AtomicStepRequest {
        step: step_from_pb(request.step)?,
        max_age_ms: request.max_age_ms,
        participants: request.participants,
        abandon_cutoff_unix_ms: request.abandon_cutoff_unix_ms,
        tombstone_unix_ms: request.tombstone_unix_ms,
    };
    Ok((request.transaction_id, step))
}

impl From<AtomicStepOutcome> for pb::AtomicStepOutcome {
    fn from(outcome: AtomicStepOutcome) -> Self {
        Self {
            state: outcome.state.map(state_to_pb),
            finished: outcome.finished.map(finished_to_pb),
        }
    }
}

impl TryFrom<pb::AtomicStepOutcome> for AtomicStepOutcome {
    type Error = Error;

    fn try_from(outcome: pb::AtomicStepOutcome) -> Result<Self> {
        Ok(Self {
            state: outcome.state.map(state_from_pb).transpose()?,
            finished: outcome.finished.map(finished_from_pb).transpose()?,
        })
    }
}

impl From<Decision> for pb::AtomicDecision {
    fn from(decision: Decision) -> Self {
        Self {
            transaction_id: decision.transaction_id,
            state: state_to_pb(decision.state),
            participants: decision.participants,
            created_unix_ms: decision.created_unix_ms,
            decided_unix_ms: decision.decided_unix_ms,
        }
    }
}

impl TryFrom<pb::AtomicDecision> for Decision {
    type Error = Error;

    fn try_from(decision: pb::AtomicDecision) -> Result<Self> {
        Ok(Self {
            transaction_id: decision.transaction_id,
            state: state_from_pb(decision.state)?,
            participants: decision.participants,
            created_unix_ms: decision.created_unix_ms,
            decided_unix_ms: decision.decided_unix_ms,
        })
    }
}

impl From<AtomicIntent> for pb::AtomicIntent {
    fn from(intent: AtomicIntent) -> Self {
        Self {
            transaction_id: intent.transaction_id,
            participants: intent.participants,
            prepared_unix_ms: intent.prepared_unix_ms,
            rows: u64::try_from(intent.rows).unwrap_or(u64::MAX),
        }
    }
}

impl From<pb::AtomicIntent> for AtomicIntent {
    fn from(intent: pb::AtomicIntent) -> Self {
        Self {
            transaction_id: intent.transaction_id,
            participants: intent.participants,
            prepared_unix_ms: intent.prepared_unix_ms,
            rows: usize::try_from(intent.rows).unwrap_or(usize::MAX),
        }
    }
}

impl From<AtomicState> for pb::AtomicParticipantState {
    fn from(state: AtomicState) -> Self {
        Self {
            decisions: state.decisions.into_iter().map(Into::into).collect(),
            intents: state.intents.into_iter().map(Into::into).collect(),
        }
    }
}

impl TryFrom<pb::AtomicParticipantState> for AtomicState {
    type Error = Error;

    fn try_from(state: pb::AtomicParticipantState) -> Result<Self> {
        Ok(Self {
            decisions: state
                .decisions
                .into_iter()
                .map(Decision::try_from)
                .collect::<Result<_>>()?,
            intents: state.intents.into_iter().map(Into::into).collect(),
        })
    }
}

/// The record a decision answer carries, if any.
pub(crate) fn decision_from_pb(found: pb::AtomicDecisionFound) -> Result<Option<Decision>> {
    found.decision.map(Decision::try_from).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_outcomes_round_trip_and_unspecified_ones_are_refused() {
        for step in [
            AtomicStepKind::DecideCommit,
            AtomicStepKind::DecideAbort,
            AtomicStepKind::Apply,
            AtomicStepKind::Drop,
            AtomicStepKind::Settle,
            AtomicStepKind::Forget,
            AtomicStepKind::ForgetLater,
        ] {
            let request = AtomicStepRequest {
                max_age_ms: Some(7),
                participants: vec!["s0".into()],
                abandon_cutoff_unix_ms: Some(5),
                tombstone_unix_ms: Some(6),
                ..AtomicStepRequest::new(step)
            };
            let wire = step_request_to_pb("csdbatomic:x", &request);
            assert_eq!(step_request_from_pb(wire).unwrap(), ("csdbatomic:x".into(), request));
        }
        let err = step_request_from_pb(pb::AtomicStepRequest::default()).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
        let outcome = AtomicStepOutcome {
            state: Some(DecisionState::Commit),
            finished: Some(Finished::NotPrepared),
        };
        assert_eq!(
            AtomicStepOutcome::try_from(pb::AtomicStepOutcome::from(outcome)).unwrap(),
            outcome
        );
        let bad = pb::AtomicStepOutcome {
            state: Some(0),
            finished: None,
        };
        assert!(AtomicStepOutcome::try_from(bad).is_err());
    }

    #[test]
    fn a_state_round_trips() {
        let state = AtomicState {
            decisions: vec![Decision {
                transaction_id: "csdbatomic:a".into(),
                state: DecisionState::Pending,
                participants: vec!["s1".into(), "s0".into()],
                created_unix_ms: 10,
                decided_unix_ms: None,
            }],
            intents: vec![AtomicIntent {
                transaction_id: "csdbatomic:b".into(),
                participants: vec!["s0".into()],
                prepared_unix_ms: 11,
                rows: 3,
            }],
        };
        assert_eq!(
            AtomicState::try_from(pb::AtomicParticipantState::from(state.clone())).unwrap(),
            state
        );
    }
}
