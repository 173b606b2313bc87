//! The cut of a backup set, taken in bounded batches so that a set of any number of shards holds
//! a bounded number of file descriptors.
//!
//! A read snapshot holds about three descriptors (the file, its WAL and its WAL index) until its
//! copy is stored. So the cut does not snapshot every shard in one fence: it fences, snapshots at
//! most [`SNAPSHOTS_PER_FENCE`] shards (checking the stamps of unchanged ones on the way), lifts
//! the fence, copies that batch from its snapshots (closing them; a few shards at once, one per
//! core up to [`MAX_COPIES_AT_ONCE`]), and fences again for the next.
//!
//! Why that is as consistent as one fence: the first fence exports the catalog and reads how
//! many activations and atomic-commit decisions the gate has let through
//! ([`passes`](crate::engine::cut::passes)); every later fence reads the count again before it
//! takes a snapshot. When it is unchanged, no activation and no decision happened anywhere
//! between the first fence and this one, so the catalog and every snapshot lie in one stretch of
//! time free of them, which is all a single fence gives (single-shard writes are not ordered
//! across shards by either). When it moved, the attempt is dropped and the cut starts over; the
//! copies already stored are referenced again for shards whose stamp has not changed since.
//! After [`OPTIMISTIC_ATTEMPTS`] such starts, the fence is held from the first batch to the last
//! (still a bounded number of snapshots at a time), so a steady stream of decisions cannot keep
//! a set from finishing; they wait for it instead.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::create::BackupStep;
use super::manifest::ShardCopy;
use super::objects;
use super::stamp::FileStamp;
use crate::catalog::{Catalog, CatalogExport};
use crate::engine::backup::ShardSnapshot;
use crate::engine::cut;
use crate::error::{Error, Result};
use crate::map::{ShardMap, ShardTarget};
use crate::schema::DatabaseSchema;

/// The most read snapshots a backup holds at once (about three descriptors each).
pub const SNAPSHOTS_PER_FENCE: usize = 32;

/// The most shards copied at once (each copy is a thread of the blocking pool).
const MAX_COPIES_AT_ONCE: usize = 4;

/// Attempts whose fence is lifted between batches before the fence is held across them.
const OPTIMISTIC_ATTEMPTS: u32 = 3;

/// The cut: the catalog at one map version and a copy of every shard file that existed.
pub(super) struct Cut {
    pub export: CatalogExport,
    pub map: ShardMap,
    pub shards: Vec<ShardCopy>,
    /// The time the fences held, summed over the batches of the attempt that finished.
    pub fence_micros: u64,
    /// The longest single hold.
    pub longest_fence_micros: u64,
}

/// What one batch's fence decided for one shard.
enum Plan {
    /// Copy from this snapshot; the stamp when it began, if it can tell a later set.
    Copy(ShardSnapshot, Option<FileStamp>),
    /// Unchanged since a copy the place holds: reference it.
    Reuse(ShardCopy),
}

/// What lasts across attempts: the copies that can be referenced and those this set stored.
struct Known<'a> {
    place: &'a Path,
    id: &'a str,
    copies: HashMap<String, ShardCopy>,
    copied_here: HashSet<String>,
    progress: &'a (dyn Fn(&BackupStep) + Send + Sync),
}

/// Takes the cut of the keyspace whose catalog is `catalog`, storing the copies in `place` under
/// names starting with the set's `id`; `previous` holds the newest set's copies that can be
/// referenced when their shard is unchanged.
pub(super) async fn take(
    catalog: &Catalog,
    place: &Path,
    id: &str,
    previous: HashMap<String, ShardCopy>,
    progress: &(dyn Fn(&BackupStep) + Send + Sync),
) -> Result<Cut> {
    let mut known = Known {
        place,
        id,
        copies: previous,
        copied_here: HashSet::new(),
        progress,
    };
    let mut attempt = 1;
    loop {
        let hold = attempt > OPTIMISTIC_ATTEMPTS;
        if let Some(cut) = attempt_cut(catalog, &mut known, hold).await? {
            return Ok(cut);
        }
        attempt += 1;
        progress(&BackupStep::Restarted { attempt });
    }
}

/// Sums the time fences held and keeps the longest.
#[derive(Default)]
struct FenceTimer {
    total: Duration,
    longest: Duration,
}

impl FenceTimer {
    fn lifted(&mut self, since: Instant) -> u64 {
        let held = since.elapsed();
        self.total += held;
        self.longest = self.longest.max(held);
        micros(held)
    }
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// One attempt at the cut; `None` when an activation or a decision came between two batches.
async fn attempt_cut(catalog: &Catalog, known: &mut Known<'_>, hold: bool) -> Result<Option<Cut>> {
    let mut timer = FenceTimer::default();
    let mut since = Instant::now();
    let mut fence = Some(cut::fence().await);
    let generation = cut::passes();
    let export = catalog.export().await?;
    let map = ShardMap::new(export.active_map.clone().ok_or(Error::NoMap)?)?;
    let files = shard_files(&map)?;
    let mut shards = Vec::with_capacity(files.len());
    let (mut next, mut batch, mut stored) = (0, 0, 0);
    loop {
        if fence.is_none() {
            since = Instant::now();
            fence = Some(cut::fence().await);
            if cut::passes() != generation {
                return Ok(None);
            }
        }
        let rest = files[next..].to_vec();
        let copies = std::mem::take(&mut known.copies);
        let (plans, consumed, copies) = tokio::task::spawn_blocking(move || plan_batch(&rest, copies))
            .await
            .map_err(|_| Error::Cancelled)??;
        known.copies = copies;
        next += consumed;
        batch += 1;
        let fence_micros = if hold {
            micros(since.elapsed())
        } else {
            drop(fence.take());
            timer.lifted(since)
        };
        (known.progress)(&BackupStep::Cut {
            batch,
            to_copy: plans.iter().filter(|(_, p)| matches!(p, Plan::Copy(..))).count(),
            unchanged: plans.iter().filter(|(_, p)| matches!(p, Plan::Reuse(_))).count(),
            through: next,
            total: files.len(),
            fence_micros,
        });
        shards.extend(copy_batch(known, plans, &mut stored).await?);
        if next >= files.len() {
            break;
        }
    }
    if fence.take().is_some() {
        timer.lifted(since);
    }
    Ok(Some(Cut {
        export,
        map,
        shards,
        fence_micros: micros(timer.total),
        longest_fence_micros: micros(timer.longest),
    }))
}

/// Each shard of the map and its file; refuses a shard that is not a file of this host.
fn shard_files(map: &ShardMap) -> Result<Vec<(String, PathBuf)>> {
    map.shards()
        .iter()
        .map(|shard| match &shard.target {
            // The export names every file by its absolute path.
            ShardTarget::DataSource(path) => Ok((shard.id.clone(), PathBuf::from(path))),
            _ => Err(Error::invalid_argument(
                "backup",
                format!(
                    "shard '{}' is not a file of this host: back up a data host's shards on that host",
                    shard.id
                ),
            )),
        })
        .collect()
}

/// Inside a fence: plans shards from the start of `files` until [`SNAPSHOTS_PER_FENCE`]
/// snapshots are held or the files run out; returns the plans, how many files it went through
/// (a file that does not exist has no plan) and `copies` back.
#[allow(clippy::type_complexity)]
fn plan_batch(
    files: &[(String, PathBuf)],
    copies: HashMap<String, ShardCopy>,
) -> Result<(Vec<(String, Plan)>, usize, HashMap<String, ShardCopy>)> {
    let mut plans = Vec::new();
    let mut snapshots = 0;
    let mut consumed = 0;
    for (shard_id, path) in files {
        if snapshots == SNAPSHOTS_PER_FENCE {
            break;
        }
        consumed += 1;
        let io = |source| Error::Io {
            what: format!("the shard file {}", path.display()),
            source,
        };
        // The stamp is read before the snapshot begins: a write in between makes it older than
        // the copy, so a later set copies again rather than miss the write.
        let Some((stamp, tells)) = FileStamp::of(path).map_err(io)? else {
            continue;
        };
        let plan = match copies.get(shard_id) {
            Some(copy) if copy.source.as_ref() == Some(&stamp) && tells => Plan::Reuse(copy.clone()),
            _ => {
                snapshots += 1;
                Plan::Copy(ShardSnapshot::take(path)?, tells.then_some(stamp))
            }
        };
        plans.push((shard_id.clone(), plan));
    }
    Ok((plans, consumed, copies))
}

/// Copies a batch's shards from their snapshots (closing them), [`MAX_COPIES_AT_ONCE`] at a
/// time, and references the copies its other plans name; returns the batch's copies in plan
/// order, reporting each one stored (`stored` counts them over the attempt).
async fn copy_batch(known: &mut Known<'_>, plans: Vec<(String, Plan)>, stored: &mut usize) -> Result<Vec<ShardCopy>> {
    use futures_util::StreamExt as _;
    let jobs: Vec<_> = plans
        .into_iter()
        .map(|(shard_id, plan)| {
            let (place, id) = (known.place.to_owned(), known.id.to_owned());
            let reused = known.copied_here.contains(&shard_id);
            async move {
                match plan {
                    Plan::Reuse(mut copy) => {
                        copy.copied = reused;
                        Ok((copy, false))
                    }
                    Plan::Copy(snapshot, stamp) => tokio::task::spawn_blocking(move || {
                        copy_one(&place, &id, shard_id, snapshot, stamp).map(|copy| (copy, true))
                    })
                    .await
                    .map_err(|_| Error::Cancelled)?,
                }
            }
        })
        .collect();
    let mut done = futures_util::stream::iter(jobs).buffered(copies_at_once());
    let mut copies = Vec::new();
    while let Some(outcome) = done.next().await {
        let (copy, fresh) = outcome?;
        if fresh {
            if copy.source.is_some() {
                known.copies.insert(copy.shard_id.clone(), copy.clone());
            }
            known.copied_here.insert(copy.shard_id.clone());
            *stored += 1;
            (known.progress)(&BackupStep::Copied {
                shard_id: copy.shard_id.clone(),
                bytes: copy.bytes,
                copies: *stored,
            });
        }
        copies.push(copy);
    }
    Ok(copies)
}

/// How many shards a backup copies at once: one per core, at most [`MAX_COPIES_AT_ONCE`].
fn copies_at_once() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, MAX_COPIES_AT_ONCE)
}

/// Copies one shard from its snapshot (closing it) into the place's incoming folder and stores
/// the copy under its content's name (blocking: file and SQLite work).
fn copy_one(
    place: &Path,
    id: &str,
    shard_id: String,
    snapshot: ShardSnapshot,
    stamp: Option<FileStamp>,
) -> Result<ShardCopy> {
    let incoming = objects::incoming(place, &format!("{id}.{shard_id}.db"))?;
    let rows = snapshot.schema_rows()?;
    snapshot.copy_to(&incoming)?;
    let fingerprint = DatabaseSchema::from_master_rows(rows).fingerprint();
    let stored = objects::store(place, &incoming)?;
    Ok(ShardCopy {
        shard_id,
        file: stored.file,
        bytes: stored.bytes,
        sha256: stored.sha256,
        schema_fingerprint: fingerprint,
        copied: true,
        source: stamp,
    })
}
