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
//!
//! The gate also counts the passes it has let through ([`passes`]), so a backup that fences in
//! several short batches can tell whether any activation or decision came between two of them.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static GATE: RwLock<()> = RwLock::const_new(());

/// Passes granted since the process started.
static PASSES: AtomicU64 = AtomicU64::new(0);

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
    let held = GATE.read().await;
    PASSES.fetch_add(1, Ordering::SeqCst);
    CutPass { _held: held }
}

/// How many passes (activations and decisions) the gate has let through in this process. Read
/// under a [`CutFence`], it cannot move until the fence is dropped: two fences that read the
/// same count had no activation and no decision between them.
pub fn passes() -> u64 {
    PASSES.load(Ordering::SeqCst)
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
    use super::{GATE, fence, pass, passes};

    #[tokio::test]
    async fn a_fence_keeps_passes_out_and_a_pass_keeps_a_fence_out() {
        let fenced = fence().await;
        assert!(GATE.try_read().is_err(), "a pass would go through a fence");
        drop(fenced);
        let passing = pass().await;
        assert!(GATE.try_write().is_err(), "a fence would start during a pass");
        drop(passing);
    }

    #[tokio::test]
    async fn each_pass_moves_the_count_two_fences_compare() {
        let before = passes();
        drop(pass().await);
        let fenced = fence().await;
        assert!(passes() > before, "a pass between two fences goes unseen");
        drop(fenced);
    }
}
