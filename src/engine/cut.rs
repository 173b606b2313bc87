//! The consistent-cut gate: a process-wide reader-writer lock that every map activation and every
//! atomic-commit decision hold for read while they write, and that a backup holds for write
//! while it takes a read snapshot of each shard. Inside the backup's fence no activation and
//! no decision happens in this process, so the snapshots and the catalog agree on one map
//! version and on every atomic transaction's outcome, as a restore point blocks commit
//! decisions in other sharded databases.
//!
//! It is a process-wide value rather than a field of a client because activation (the
//! catalog) and decisions (a shard file's engine) share no owner below the daemon, and the cut
//! must cover every client of the process. Outside a fence, a read costs one uncontended
//! semaphore acquire, and only activations and decisions take it, never a routed query.

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static GATE: RwLock<()> = RwLock::const_new(());

/// Held by an activation or an atomic-commit decision for the time of its write.
pub struct CutPass {
    _held: RwLockReadGuard<'static, ()>,
}

/// Held by a backup while it takes its snapshots: no activation and no decision starts or
/// finishes until it is dropped.
pub struct CutFence {
    _held: RwLockWriteGuard<'static, ()>,
}

/// Waits for any backup fence to lift, then holds the gate open for one activation or decision.
pub async fn pass() -> CutPass {
    CutPass {
        _held: GATE.read().await,
    }
}

/// Waits for activations and decisions in progress to finish, then keeps new ones out until
/// the returned fence is dropped.
pub async fn fence() -> CutFence {
    CutFence {
        _held: GATE.write().await,
    }
}

#[cfg(test)]
mod tests {
    use super::{GATE, fence, pass};

    #[tokio::test]
    async fn a_fence_keeps_passes_out_and_a_pass_keeps_a_fence_out() {
        let fenced = fence().await;
        assert!(GATE.try_read().is_err(), "a pass would go through a fence");
        drop(fenced);
        let passing = pass().await;
        assert!(GATE.try_write().is_err(), "a fence would start during a pass");
        drop(passing);
    }
}
