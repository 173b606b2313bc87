//! Map generations: the map a sharded client serves and the clients of its shards, swapped as a
//! whole when a new map is activated, here or in another process.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use arc_swap::Guard;
use futures_util::future::{BoxFuture, join_all};

use super::{Shared, remote};
use crate::catalog::{diff, diff_of_changes};
use crate::client::LocalClient;
use crate::data::DataClient;
use crate::engine::EngineConfig;
use crate::error::{Error, Result};
use crate::map::records::RecordChange;
use crate::map::{Shard, ShardMap, ShardTarget, resolve_data_source};
use crate::routing::RouteContext;

/// How one shard is reached.
#[derive(Clone)]
pub(crate) enum ShardSlot {
    /// Disabled in the map: no client exists.
    Disabled,
    /// Reachable through `client`; `local` is set for in-process files.
    Ready {
        client: Arc<dyn DataClient>,
        local: Option<LocalClient>,
    },
    /// Enabled, but could not be opened; the reason is reported by status and on use.
    Unavailable(String),
}

/// One map and the clients of its shards. A call takes one generation and uses it from start
/// to end, so it resolves against one map version throughout.
pub(crate) struct Generation {
    pub(crate) map: ShardMap,
    pub(crate) shards: Vec<ShardSlot>,
    pub(super) data_source: String,
    /// Earlier versions this client served, each with the shards whose ownership changed when
    /// it was replaced: a transaction id of an earlier version stays valid on a shard that no
    /// later change touched.
    pub(super) retired: Vec<(u64, BTreeSet<String>)>,
}

impl Generation {
    /// The client of the shard at `index`.
    pub(crate) fn slot_client(&self, index: usize) -> Result<Arc<dyn DataClient>> {
        let shard_id = || self.map.shards()[index].id.clone();
        match &self.shards[index] {
            ShardSlot::Ready { client, .. } => Ok(Arc::clone(client)),
            ShardSlot::Disabled => Err(Error::ShardIsDisabled { shard_id: shard_id() }),
            ShardSlot::Unavailable(reason) => Err(Error::shard_unavailable(shard_id(), reason.clone())),
        }
    }

    /// The shard index and client a route resolves to.
    pub(super) fn route_client(&self, route: &RouteContext) -> Result<(usize, Arc<dyn DataClient>)> {
        let resolution = self.map.resolve(route.keyspace(), route.key())?;
        Ok((resolution.shard_index, self.slot_client(resolution.shard_index)?))
    }

    /// Each enabled shard's index and client, in definition order (unavailable ones as errors).
    pub(super) fn enabled_shards(&self) -> impl Iterator<Item = (usize, Result<Arc<dyn DataClient>>)> + '_ {
        self.shards
            .iter()
            .enumerate()
            .filter(|(_, slot)| !matches!(slot, ShardSlot::Disabled))
            .map(|(index, _)| (index, self.slot_client(index)))
    }

    /// Whether a transaction begun under map `version` on `shard_id` may go on: it was begun
    /// under this map, or under an earlier one and no change since touched its shard.
    pub(super) fn admits(&self, version: u64, shard_id: &str) -> bool {
        if version == self.map.version() {
            return true;
        }
        let Some(start) = self.retired.iter().position(|(retired, _)| *retired == version) else {
            return false;
        };
        let shard = shard_id.to_ascii_lowercase();
        self.retired[start..]
            .iter()
            .all(|(_, affected)| !affected.contains(&shard))
    }

    pub(super) fn local_of(&self, shard_id: &str) -> Option<LocalClient> {
        let index = self.map.shard_index(shard_id)?;
        match &self.shards[index] {
            ShardSlot::Ready { local, .. } => local.clone(),
            _ => None,
        }
    }
}

/// Opens the client of every shard of `map`, reusing the open client of a shard `previous`
/// reaches the same way (same file, daemon or connection string).
pub(super) async fn open_slots(
    map: &ShardMap,
    master: Option<&Path>,
    engine: &EngineConfig,
    previous: Option<&Generation>,
) -> Vec<ShardSlot> {
    // Relative shard paths are relative to the master's folder; without a master, to the
    // working directory.
    let locate = |path: &str| master.map_or_else(|| PathBuf::from(path), |m| resolve_data_source(m, path));
    join_all(map.shards().iter().map(|shard| {
        let engine = engine.clone();
        let reused = previous.and_then(|generation| reusable(generation, shard));
        async move {
            if !shard.enabled {
                return ShardSlot::Disabled;
            }
            if let Some(slot) = reused {
                return slot;
            }
            match &shard.target {
                ShardTarget::DataSource(path) => match LocalClient::lazy(locate(path), shard.id.clone(), engine) {
                    Ok(local) => ShardSlot::Ready {
                        client: Arc::new(local.clone()),
                        local: Some(local),
                    },
                    Err(err) => ShardSlot::Unavailable(err.to_string()),
                },
                ShardTarget::Endpoint {
                    endpoint,
                    transport,
                    remote_shard_id,
                } => {
                    let mut remote = remote::RemoteShard::new(endpoint.clone(), *transport);
                    remote.remote_shard_id = remote_shard_id.clone();
                    remote.api_key = shard.api_key.clone();
                    remote.api_key_header = shard.api_key_header_name.clone();
                    remote.open()
                }
                ShardTarget::ConnectionString(secret) => {
                    remote::open_connection_string_shard(&shard.id, secret, engine, locate).await
                }
            }
        }
    }))
    .await
}

/// The open slot of a shard the previous generation reaches exactly as `shard` is reached.
fn reusable(previous: &Generation, shard: &Shard) -> Option<ShardSlot> {
    let index = previous.map.shard_index(&shard.id)?;
    let before = &previous.map.shards()[index];
    let same = before.target == shard.target
        && before.api_key == shard.api_key
        && before.api_key_header_name == shard.api_key_header_name;
    match &previous.shards[index] {
        slot @ ShardSlot::Ready { .. } if same => Some(slot.clone()),
        _ => None,
    }
}

pub(super) fn data_source_of(map: &ShardMap) -> String {
    format!("sharded://{}?version={}", map.keyspace(), map.version())
}

impl Shared {
    /// The generation calls use now, without checking the catalog.
    pub(super) fn generation(&self) -> Arc<Generation> {
        self.current.load_full()
    }

    /// The generation calls use now, after noticing a map another process activated: at most
    /// once per refresh interval, this reads the active version from the catalog (a cheap read)
    /// and, when it changed, loads and installs the new map. A catalog that cannot be read
    /// leaves the current map in place.
    pub(crate) async fn fresh(self: &Arc<Self>) -> Arc<Generation> {
        let current = self.generation();
        let Some(catalog) = self.polled_catalog() else {
            return current;
        };
        if !self.claim_version_check(Instant::now()) {
            return current;
        }
        match catalog.active_version().await {
            Ok(Some(version)) if version != current.map.version() => self.load_active().await,
            _ => current,
        }
    }

    /// [`fresh`](Self::fresh) for a blocking caller whose call started at `now` (one clock
    /// read serves the call): the version check runs on the calling thread, and only a new map
    /// (rare) is loaded through `block_on`.
    ///
    /// The generation is lent, not cloned: a blocking call holds it for as long as it runs,
    /// without touching a reference count other threads share.
    pub(crate) fn fresh_blocking(
        self: &Arc<Self>,
        now: Instant,
        block_on: impl FnOnce(BoxFuture<'_, Arc<Generation>>) -> Arc<Generation>,
    ) -> Guard<Arc<Generation>> {
        let current = self.current.load();
        let Some(catalog) = self.polled_catalog() else {
            return current;
        };
        if !self.claim_version_check(now) {
            return current;
        }
        match catalog.active_version_blocking() {
            Ok(Some(version)) if version != current.map.version() => {
                drop(current);
                block_on(Box::pin(self.load_active()));
                self.current.load()
            }
            _ => current,
        }
    }

    /// The generation calls use now, lent, when no check of the catalog's version is due at
    /// `now`: the fast path of an async call that runs to its end without waiting. `None` when
    /// a check is due; the caller then goes through [`fresh`](Self::fresh), which makes it.
    pub(crate) fn lend_unless_check_due(&self, now: Instant) -> Option<Guard<Arc<Generation>>> {
        if self.polls_catalog && self.millis_since_epoch(now) >= self.next_check_ms.load(Ordering::Relaxed) {
            return None;
        }
        Some(self.current.load())
    }

    /// The catalog whose version calls check: a master file. A catalog in etcd is watched
    /// instead ([`follow`](super::follow)).
    fn polled_catalog(&self) -> Option<&crate::catalog::Catalog> {
        self.catalog.as_ref().filter(|_| self.polls_catalog)
    }

    fn millis_since_epoch(&self, now: Instant) -> u64 {
        u64::try_from(now.saturating_duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether this caller checks the catalog's version at `now`: at most one caller per
    /// refresh interval does.
    fn claim_version_check(&self, now: Instant) -> bool {
        let now = self.millis_since_epoch(now);
        let due = self.next_check_ms.load(Ordering::Relaxed);
        now >= due
            && self
                .next_check_ms
                .compare_exchange(
                    due,
                    now.saturating_add(self.refresh_ms()),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
    }

    /// Loads and installs the catalog's active map when it is not the one served: from the
    /// records written since the served version when the store gives them (a master file), else
    /// the whole map.
    pub(super) async fn load_active(self: &Arc<Self>) -> Arc<Generation> {
        let Some(catalog) = &self.catalog else {
            return self.generation();
        };
        let _switching = self.switching.lock().await;
        let current = self.generation();
        let Ok(Some(version)) = catalog.active_version().await else {
            return current;
        };
        if version == current.map.version() {
            return current;
        }
        if let Ok(Some(changes)) = catalog.changes_between(current.map.version(), version).await
            && let Ok(next) = current.map.follow_changes(&changes)
            && next.version() == version
        {
            self.advance(current.map.clone(), next, Some(&changes)).await;
            return self.generation();
        }
        match catalog.active_map().await {
            Ok(next) if next.version() != current.map.version() => {
                self.advance(current.map.clone(), next, None).await;
            }
            _ => {}
        }
        self.generation()
    }

    /// Installs the catalog's active map read whole (`None`: the catalog has none), unless it
    /// is the one served.
    #[cfg(feature = "etcd")]
    pub(super) async fn install_whole(self: &Arc<Self>, active: Option<crate::map::ShardingOptions>) {
        let _switching = self.switching.lock().await;
        let current = self.generation();
        let Some(active) = active else {
            return;
        };
        if u64::try_from(active.map_version).ok() == Some(current.map.version()) {
            return;
        }
        match ShardMap::new(active) {
            Ok(next) => self.advance(current.map.clone(), next, None).await,
            Err(err) => {
                tracing::warn!(error = %err, "the catalog's active map does not validate; serving the last one")
            }
        }
    }

    /// Follows an activation of version `version`, given the records that changed since the
    /// served map. `false` when they do not apply to it (the caller reads the whole map).
    #[cfg(feature = "etcd")]
    pub(super) async fn follow_changes(self: &Arc<Self>, version: u64, changes: &[RecordChange]) -> bool {
        let _switching = self.switching.lock().await;
        let current = self.generation();
        if current.map.version() == version {
            return true;
        }
        match current.map.follow_changes(changes) {
            Ok(next) if next.version() == version => {
                self.advance(current.map.clone(), next, Some(changes)).await;
                true
            }
            _ => false,
        }
    }

    /// Switches from `previous` to `next` (`changes`, when known, are the records between them)
    /// and drains the transactions of this process on the shards whose ownership changed, as on
    /// the router that activated the map (SPEC section 6): a bounded time to finish, then rolled
    /// back. In the background, so that the call that noticed the map goes on.
    async fn advance(self: &Arc<Self>, previous: ShardMap, next: ShardMap, changes: Option<&[RecordChange]>) {
        let Ok(affected) = self.switch_with(previous, next, changes).await else {
            return;
        };
        let shared = Arc::clone(self);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move { shared.drain(&affected).await });
            }
            Err(_) => {
                for local in self.local_shards(&affected) {
                    local.database().sessions().abort_sessions();
                }
            }
        }
    }

    fn refresh_ms(&self) -> u64 {
        u64::try_from(self.options.refresh_interval.as_millis()).unwrap_or(u64::MAX)
    }

    /// Installs `next` as the current generation, reusing the clients of unchanged shards.
    /// `affected` names the shards whose ownership changed since the current map.
    pub(super) async fn install(&self, next: ShardMap, affected: &BTreeSet<String>) -> Result<()> {
        let current = self.generation();
        if current.map.version() == next.version() {
            return Ok(());
        }
        let master = self.catalog.as_ref().map(|c| c.path().to_path_buf());
        let shards = open_slots(&next, master.as_deref(), &self.options.engine, Some(&current)).await;
        let mut retired = current.retired.clone();
        retired.push((current.map.version(), affected.clone()));
        let generation = Generation {
            data_source: data_source_of(&next),
            map: next,
            shards,
            retired,
        };
        self.current.store(Arc::new(generation));
        self.next_check_ms.store(
            u64::try_from(self.epoch.elapsed().as_millis())
                .unwrap_or(u64::MAX)
                .saturating_add(self.refresh_ms()),
            Ordering::Relaxed,
        );
        Ok(())
    }

    /// The in-process shard files among `shard_ids` (lower-case), in the current generation.
    pub(super) fn local_shards(&self, shard_ids: &BTreeSet<String>) -> Vec<LocalClient> {
        let generation = self.generation();
        shard_ids.iter().filter_map(|id| generation.local_of(id)).collect()
    }

    /// Swaps in `next` (whose predecessor is `previous`) unless this client already serves it.
    /// Returns the shards whose ownership changed.
    pub(super) async fn switch_to(&self, previous: ShardMap, next: ShardMap) -> Result<BTreeSet<String>> {
        self.switch_with(previous, next, None).await
    }

    /// [`switch_to`](Self::switch_to), given the records between the two maps when known: the
    /// shards a change of pins alone affects follow from the pins it changed.
    async fn switch_with(
        &self,
        previous: ShardMap,
        next: ShardMap,
        records: Option<&[RecordChange]>,
    ) -> Result<BTreeSet<String>> {
        if let Some(affected) = records.and_then(|records| diff_of_changes(&previous, &next, records)) {
            self.install(next, &affected.affected_shards()).await?;
            return Ok(affected.affected_shards());
        }
        let changes = if previous.keyspace().eq_ignore_ascii_case(next.keyspace())
            && previous.bucket_count() == next.bucket_count()
        {
            diff(&previous, &next).affected_shards()
        } else {
            // Every shard is affected when routing itself changed.
            previous
                .shards()
                .iter()
                .chain(next.shards())
                .map(|shard| shard.id.to_ascii_lowercase())
                .collect()
        };
        self.install(next, &changes).await?;
        Ok(changes)
    }

    /// Waits up to the drain timeout for open transactions on `affected` local shards to end,
    /// then rolls back the rest. Returns how many were rolled back.
    pub(super) async fn drain(&self, affected: &BTreeSet<String>) -> u64 {
        let locals = self.local_shards(affected);
        if locals.is_empty() {
            return 0;
        }
        let deadline = Instant::now() + self.options.drain_timeout;
        while Instant::now() < deadline
            && locals
                .iter()
                .any(|local| local.database().sessions().open_sessions() > 0)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        locals
            .iter()
            .map(|local| u64::try_from(local.database().sessions().abort_sessions()).unwrap_or(u64::MAX))
            .sum()
    }
}
