//! The resolver every client runs for its atomic transactions (see [`atomic_recovery`]): two
//! tasks, ended together when the client goes away.
//!
//! - **When a shard opens** holding atomic state (a prepared intent or a decision record), the
//!   engine calls the hook [`hook`] builds, on the thread that opened the file. The hook only
//!   queues the shard id in a set ([`OpenedShards`]) and wakes the *open pass* task, which
//!   resolves the queued shards one after another, unpaced, as `shardlite tx resolve` does for
//!   one shard. The opening call never waits for it: the decision may live on another shard,
//!   and recovery writes to this one. Meanwhile writes to rows no transaction locks proceed at
//!   once; writes to locked rows answer the retryable `row_locked` until the pass has finished
//!   (usually milliseconds after the open). A burst of openings queues each shard once and
//!   wakes one task, never a task per opening; a file without the atomic tables never reaches
//!   the hook.
//! - **Rounds**: every period (a quarter of the abandon age, between 50 ms and 5 s, unless
//!   [`ShardedClientOptions::atomic_resolver_period`](super::ShardedClientOptions::atomic_resolver_period)
//!   says otherwise), a paced round over the open files that may hold atomic state, for what
//!   the open pass left waiting (an undecided transaction younger than the abandon age). A
//!   round visits the shards other daemons serve (one call each) only when a sweep of them is
//!   due: the first round, after this process began a participant on one, and while a sweep
//!   left work waiting there; so a map of remote shards that takes no atomic transactions
//!   costs them nothing after the first round.
//!
//! [`atomic_recovery`]: super::atomic_recovery

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};

use super::{ShardedClient, Shared};
use crate::engine::AtomicOpenHook;

/// The shards that opened holding atomic state and await their open pass: each queued once,
/// however often it opened meanwhile.
#[derive(Default)]
pub(super) struct OpenedShards {
    queued: Mutex<BTreeSet<String>>,
    wake: Notify,
    /// Shards the open pass visited, for [`AtomicRecovery::open_passes`](super::AtomicRecovery::open_passes).
    passes: AtomicU64,
    /// Whether the shards other daemons serve need no visit by the next round: false at start
    /// (a first sweep finds what a crash left there), after this process began a participant on
    /// one, and while a sweep left work waiting there.
    remote_swept: std::sync::atomic::AtomicBool,
}

impl OpenedShards {
    fn push(&self, shard_id: &str) {
        let mut queued = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
        if !queued.contains(shard_id) {
            queued.insert(shard_id.to_owned());
        }
        drop(queued);
        self.wake.notify_one();
    }

    fn take(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.queued.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Shards the open pass visited since the client started.
    pub(super) fn passes(&self) -> u64 {
        self.passes.load(Ordering::Relaxed)
    }

    /// Claims the visit of the remote shards a round makes: true when one is due.
    pub(super) fn claim_remote_sweep(&self) -> bool {
        !self.remote_swept.swap(true, Ordering::AcqRel)
    }

    /// Asks the next round to visit the remote shards.
    pub(super) fn want_remote_sweep(&self) {
        self.remote_swept.store(false, Ordering::Release);
    }
}

/// The engine hook that queues a shard opening with atomic state in `opened`.
pub(super) fn hook(opened: &Arc<OpenedShards>) -> AtomicOpenHook {
    let opened = Arc::clone(opened);
    AtomicOpenHook(Arc::new(move |shard_id: &str| opened.push(shard_id)))
}

/// Ends the resolver's tasks when dropped (with the client's last handle).
pub(super) struct ResolverStop {
    _rounds: oneshot::Sender<()>,
    _open_passes: oneshot::Sender<()>,
}

/// The period of the resolver's rounds for an abandon age, unless set.
pub(super) fn period(abandon_age: Duration, set: Option<Duration>) -> Duration {
    set.unwrap_or_else(|| (abandon_age / 4).clamp(Duration::from_millis(50), Duration::from_secs(5)))
}

/// Starts the resolver of the client whose state is `inner`: its rounds every `period`, and its
/// open passes for the shards queued in `opened`. `None` outside a Tokio runtime.
pub(super) fn start(inner: &Weak<Shared>, period: Duration, opened: &Arc<OpenedShards>) -> Option<ResolverStop> {
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    let (rounds_stop, rounds_stopped) = oneshot::channel::<()>();
    let (open_stop, open_stopped) = oneshot::channel::<()>();
    runtime.spawn(rounds(Weak::clone(inner), period, rounds_stopped));
    runtime.spawn(open_passes(Weak::clone(inner), Arc::clone(opened), open_stopped));
    Some(ResolverStop {
        _rounds: rounds_stop,
        _open_passes: open_stop,
    })
}

async fn rounds(inner: Weak<Shared>, period: Duration, mut stopped: oneshot::Receiver<()>) {
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            () = tokio::time::sleep(period) => {}
        }
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let client = ShardedClient { inner: strong };
        if let Err(err) = client.atomic_recovery().resolve_open_files().await {
            tracing::debug!(error = %err, "atomic recovery will be tried again");
        }
    }
}

async fn open_passes(inner: Weak<Shared>, opened: Arc<OpenedShards>, mut stopped: oneshot::Receiver<()>) {
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            () = opened.wake.notified() => {}
        }
        let shards = opened.take();
        if shards.is_empty() {
            continue;
        }
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let client = ShardedClient { inner: strong };
        for shard_id in shards {
            if let Err(err) = client.atomic_recovery().resolve_opened(&shard_id).await {
                tracing::debug!(shard = %shard_id, error = %err, "atomic recovery at open: the resolver's rounds will try again");
            }
            opened.passes.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OpenedShards;

    #[tokio::test]
    async fn a_burst_of_atomic_openings_queues_each_shard_once_and_wakes_once() {
        let opened = OpenedShards::default();
        for i in 0..10_000 {
            opened.push(&format!("s{}", i % 3));
        }
        opened.wake.notified().await;
        let queued: Vec<String> = opened.take().into_iter().collect();
        assert_eq!(queued, ["s0", "s1", "s2"]);
        assert!(opened.take().is_empty());
        let again = tokio::time::timeout(std::time::Duration::from_millis(20), opened.wake.notified()).await;
        assert!(again.is_err(), "one wake-up for the whole burst");
    }
}
