//! Which shard files are open: a bounded set, with the least recently used idle file closed to
//! make room, and files left unused closed after a while.
//!
//! A [`Database`](super::Database) opens its file on first use and registers it in the set its
//! configuration shares ([`OpenShards`]). When the set is full, the least recently used file that
//! is idle (no call in flight, no open transaction, no dedicated connection, no copy or fence in
//! progress) closes; when every open file is busy, the caller waits up to the busy timeout for
//! one to become idle and then answers busy. A sweeper thread, one for the process, closes files
//! that sat unused past [`EngineConfig::shard_idle_timeout`](super::EngineConfig::shard_idle_timeout)
//! and runs each open file's fence upkeep when due.
//!
//! "Recently" is counted in sweeper ticks, not clock reads: a call stores the current tick in
//! its file, which costs the hot path one load and, at most once a tick, one store.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use super::lifecycle::Shared;
use crate::error::{Error, Result};

/// How often the sweeper looks at every open file.
pub(super) const TICK: Duration = Duration::from_millis(250);

/// Sweeper ticks since the process started.
static NOW: AtomicU64 = AtomicU64::new(1);

/// The current tick.
pub(super) fn now() -> u64 {
    NOW.load(Ordering::Relaxed)
}

/// A set of open database files with a bound on its size. Clones share the set.
#[derive(Clone, Default)]
pub struct OpenShards(Arc<Set>);

#[derive(Default)]
struct Set {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    open: Vec<Weak<Shared>>,
    /// Files being opened: they hold a place in the set.
    opening: usize,
}

impl std::fmt::Debug for OpenShards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenShards").field("open", &self.len()).finish()
    }
}

impl OpenShards {
    /// How many files of the set are open now.
    pub fn len(&self) -> usize {
        let mut state = self.lock();
        state.open.retain(|shared| shared.strong_count() > 0);
        state.open.len()
    }

    /// Whether no file of the set is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes a place in the set for `opening` (the set holds at most `limit`), closing the least
    /// recently used idle file when it is full; waits up to `wait` for one to become idle.
    pub(super) fn admit(&self, opening: &Shared, limit: usize, wait: Duration) -> Result<Place<'_>> {
        let deadline = Instant::now() + wait;
        loop {
            let mut idle: Vec<(u64, Arc<Shared>)> = {
                let mut state = self.lock();
                state.open.retain(|shared| shared.strong_count() > 0);
                if state.open.len() + state.opening < limit {
                    state.opening += 1;
                    return Ok(Place { set: self, taken: true });
                }
                state
                    .open
                    .iter()
                    .filter_map(Weak::upgrade)
                    .filter(|shared| !shared.is_busy())
                    .map(|shared| (shared.last_used(), shared))
                    .collect()
            };
            // Least recently used first, by when each was last used as of now (calls go on
            // meanwhile: sorting by the live value would not be a consistent order); a file a call
            // holds refuses to close, and the next is tried.
            idle.sort_unstable_by_key(|(last_used, _)| *last_used);
            if idle.iter().any(|(_, shared)| shared.close_if_idle()) {
                continue;
            }
            if Instant::now() >= deadline {
                return Err(Error::busy(
                    opening.label.clone(),
                    format!(
                        "all {limit} open shards are busy (max open shards) and none became idle within {wait:?}; \
                         retry shortly, or raise the limit"
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Forgets `closed`, which released its place.
    pub(super) fn forget(&self, closed: &Shared) {
        self.lock()
            .open
            .retain(|shared| shared.strong_count() > 0 && !std::ptr::eq(shared.as_ptr(), closed));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn open_files(&self) -> Vec<Arc<Shared>> {
        self.lock().open.iter().filter_map(Weak::upgrade).collect()
    }
}

/// A place taken in the set for a file being opened: [`fill`](Self::fill) it with the open file,
/// or drop it to give the place back.
pub(super) struct Place<'a> {
    set: &'a OpenShards,
    taken: bool,
}

impl Place<'_> {
    /// Records `shared` as open in the place taken for it; the sweeper now looks after it.
    pub(super) fn fill(mut self, shared: &Arc<Shared>) {
        let mut state = self.set.lock();
        state.opening -= 1;
        state.open.push(Arc::downgrade(shared));
        drop(state);
        self.taken = false;
        sweep_set(self.set);
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        if self.taken {
            self.set.lock().opening -= 1;
        }
    }
}

/// Starts the sweeper (once) and makes sure it looks after `set`.
fn sweep_set(set: &OpenShards) {
    static SETS: OnceLock<Mutex<Vec<Weak<Set>>>> = OnceLock::new();
    let sets = SETS.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("shardlite-sweeper".to_owned())
            .spawn(|| {
                // The thread may start before the list it reads is in place.
                let sets = loop {
                    if let Some(sets) = SETS.get() {
                        break sets;
                    }
                    std::thread::sleep(TICK);
                };
                sweeper(sets);
            });
        if let Err(err) = spawned {
            tracing::warn!(error = %err, "the shard sweeper could not start: idle shards stay open");
        }
        Mutex::new(Vec::new())
    });
    let mut sets = sets.lock().unwrap_or_else(PoisonError::into_inner);
    if !sets
        .iter()
        .any(|known| std::ptr::eq(known.as_ptr(), Arc::as_ptr(&set.0)))
    {
        sets.retain(|known| known.strong_count() > 0);
        sets.push(Arc::downgrade(&set.0));
    }
}

fn sweeper(sets: &Mutex<Vec<Weak<Set>>>) {
    loop {
        std::thread::sleep(TICK);
        let tick = NOW.fetch_add(1, Ordering::Relaxed) + 1;
        let live: Vec<OpenShards> = {
            let mut sets = sets.lock().unwrap_or_else(PoisonError::into_inner);
            sets.retain(|set| set.strong_count() > 0);
            sets.iter().filter_map(Weak::upgrade).map(OpenShards).collect()
        };
        for set in live {
            for shared in set.open_files() {
                shared.sweep(tick);
            }
        }
    }
}
