//! A test hook of `shardlite serve`: with `SHARDLITE_ATOMIC_STOP_AT` set, the daemon stops
//! itself at that step of an atomic commit, so a crash test can kill it exactly there. Unset (as
//! in any real deployment), nothing is installed and commits run untouched.
//!
//! The value names one step of [`AtomicStepHook`]'s steps: `after-decision-created` (the first
//! participant prepared and holds the pending decision record), `after-prepares:K` (K more
//! participants prepared), `after-prepares-before-record:K` (K more participants prepared while
//! the first one's prepare, which creates the record, had not finished), `after-decision` (the
//! record says `commit`, and the first participant applied in the same local commit),
//! `after-commits:K` (K participants applied, the first included: `after-commits:1` leaves what
//! `after-decision` leaves). The first commit to reach the step writes
//! `shardlite: atomic stop at STEP` to stderr and stops the whole process (`SIGSTOP`; it sleeps
//! forever where there is no such signal), so nothing else runs until it is killed.

use std::sync::Arc;

use crate::client::{AtomicStep, AtomicStepHook};
use crate::error::{Error, Result};

/// The environment variable the daemon reads.
pub const STOP_AT_VAR: &str = "SHARDLITE_ATOMIC_STOP_AT";

/// The hook `SHARDLITE_ATOMIC_STOP_AT` asks for, if it is set; a value that names no step is an
/// error naming the variable.
pub fn from_env() -> Result<Option<AtomicStepHook>> {
    let Ok(value) = std::env::var(STOP_AT_VAR) else {
        return Ok(None);
    };
    let step = parse(&value).ok_or_else(|| {
        Error::invalid_argument(
            STOP_AT_VAR,
            format!(
                "'{value}' names no step: give after-decision-created, after-prepares:K, after-prepares-before-record:K, after-decision or after-commits:K"
            ),
        )
    })?;
    Ok(Some(AtomicStepHook(Arc::new(move |reached| {
        if reached == step {
            eprintln!("shardlite: atomic stop at {value}");
            stop_process();
        }
    }))))
}

fn parse(value: &str) -> Option<AtomicStep> {
    let count = |rest: &str| rest.parse::<usize>().ok().filter(|k| *k > 0);
    match value.split_once(':') {
        None if value == "after-decision-created" => Some(AtomicStep::DecisionCreated),
        None if value == "after-decision" => Some(AtomicStep::Decided),
        Some(("after-prepares", k)) => count(k).map(AtomicStep::Prepared),
        Some(("after-prepares-before-record", k)) => count(k).map(AtomicStep::PreparedBeforeRecord),
        Some(("after-commits", k)) => count(k).map(AtomicStep::Applied),
        _ => None,
    }
}

fn stop_process() {
    #[cfg(unix)]
    {
        let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::STOP);
    }
    loop {
        std::thread::park();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_has_a_name_and_other_names_are_refused() {
        assert_eq!(parse("after-decision-created"), Some(AtomicStep::DecisionCreated));
        assert_eq!(parse("after-prepares:2"), Some(AtomicStep::Prepared(2)));
        assert_eq!(
            parse("after-prepares-before-record:1"),
            Some(AtomicStep::PreparedBeforeRecord(1))
        );
        assert_eq!(parse("after-decision"), Some(AtomicStep::Decided));
        assert_eq!(parse("after-commits:1"), Some(AtomicStep::Applied(1)));
        for bad in ["", "after-prepares:0", "after-commits:x", "after-decision:1", "decided"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
