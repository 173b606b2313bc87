//! Taking a backup set: the cut (a short fence in which each shard to copy gets a read
//! snapshot and each other shard's stamp is checked), then the copies from the snapshots, then
//! the manifest.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::manifest::{BackupManifest, MANIFEST_FORMAT, ShardCopy, list_sets};
use super::objects;
use super::stamp::FileStamp;
use crate::catalog::Catalog;
use crate::client::ShardedClient;
use crate::engine::backup::ShardSnapshot;
use crate::engine::cut;
use crate::error::{Error, Result};
use crate::map::{ShardMap, ShardTarget};
use crate::schema::DatabaseSchema;

/// One step of a backup, as it is reported while the set is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackupStep {
    /// The cut was taken: `to_copy` shards will be copied, `unchanged` are referenced from the
    /// previous set, after a fence of `fence_micros`.
    Cut {
        /// Shards to copy.
        to_copy: usize,
        /// Shards referenced from the previous set.
        unchanged: usize,
        /// How long the fence held.
        fence_micros: u64,
    },
    /// A shard's copy was stored (`done` of `total`).
    Copied {
        /// The shard.
        shard_id: String,
        /// Its size.
        bytes: u64,
        /// Copies stored so far.
        done: usize,
        /// Copies to store.
        total: usize,
    },
}

/// What the cut decided for one shard.
enum Plan {
    /// Copy from this snapshot; the stamp when it began, if it can tell a later set.
    Copy(ShardSnapshot, Option<FileStamp>),
    /// Unchanged since the previous set: reference its copy.
    Reuse(ShardCopy),
}

/// Takes a backup set of the keyspace `sharded` serves into the backup place `place` (a folder,
/// created if missing), reporting each step to `progress`; returns the manifest's path and the
/// manifest.
///
/// Shards unchanged since the newest set in `place` are referenced rather than copied. Every
/// shard must be a local file: a data host's shards are copied by their host.
pub async fn create_backup(
    sharded: &ShardedClient,
    place: &Path,
    progress: &(dyn Fn(&BackupStep) + Send + Sync),
) -> Result<(PathBuf, BackupManifest)> {
    let catalog = sharded.catalog().master().ok_or_else(|| {
        Error::invalid_argument(
            "backup",
            "a backup is taken where the master catalog is: this client has none",
        )
    })?;
    std::fs::create_dir_all(place).map_err(|source| Error::Io {
        what: format!("the backup folder {}", place.display()),
        source,
    })?;
    let previous: HashMap<String, ShardCopy> = list_sets(place)?
        .pop()
        .map(|(_, manifest)| {
            manifest
                .shards
                .into_iter()
                .filter(|copy| copy.source.is_some() && place.join(&copy.file).exists())
                .map(|copy| (copy.shard_id.clone(), copy))
                .collect()
        })
        .unwrap_or_default();
    let taken = time::OffsetDateTime::now_utc();
    let (export, map, plans, fence_micros) = cut(catalog, previous).await?;
    progress(&BackupStep::Cut {
        to_copy: plans.iter().filter(|(_, p)| matches!(p, Plan::Copy(..))).count(),
        unchanged: plans.iter().filter(|(_, p)| matches!(p, Plan::Reuse(_))).count(),
        fence_micros,
    });
    let id = set_id(place, taken);
    let catalog_file = objects::incoming(place, &format!("{id}.catalog.json"))?;
    let text = serde_json::to_vec_pretty(&export).map_err(|source| Error::Json {
        what: "the catalog export",
        source,
    })?;
    write_flushed(&catalog_file, &text)?;
    let catalog_object = objects::store(place, &catalog_file)?;
    let total = plans.iter().filter(|(_, p)| matches!(p, Plan::Copy(..))).count();
    let mut shards = Vec::with_capacity(plans.len());
    let mut done = 0;
    for (shard_id, plan) in plans {
        match plan {
            Plan::Reuse(mut copy) => {
                copy.copied = false;
                shards.push(copy);
            }
            Plan::Copy(snapshot, stamp) => {
                let incoming = objects::incoming(place, &format!("{id}.{shard_id}.db"))?;
                let place = place.to_owned();
                let (stored, fingerprint) = tokio::task::spawn_blocking(move || -> Result<_> {
                    let rows = snapshot.schema_rows()?;
                    snapshot.copy_to(&incoming)?;
                    let fingerprint = DatabaseSchema::from_master_rows(rows).fingerprint();
                    Ok((objects::store(&place, &incoming)?, fingerprint))
                })
                .await
                .map_err(|_| Error::Cancelled)??;
                done += 1;
                progress(&BackupStep::Copied {
                    shard_id: shard_id.clone(),
                    bytes: stored.bytes,
                    done,
                    total,
                });
                shards.push(ShardCopy {
                    shard_id,
                    file: stored.file,
                    bytes: stored.bytes,
                    sha256: stored.sha256,
                    schema_fingerprint: fingerprint,
                    copied: true,
                    source: stamp,
                });
            }
        }
    }
    let manifest = BackupManifest {
        format: MANIFEST_FORMAT.to_owned(),
        id,
        keyspace: map.keyspace().to_owned(),
        map_version: map.version(),
        taken_at: taken
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        fence_micros,
        catalog: catalog_object,
        shards,
    };
    let path = manifest.publish(place)?;
    Ok((path, manifest))
}

/// The cut: inside the fence, the catalog export (one map version) and, for each shard file,
/// either a read snapshot or the previous set's copy when its stamp is unchanged.
async fn cut(
    catalog: &Catalog,
    previous: HashMap<String, ShardCopy>,
) -> Result<(crate::catalog::CatalogExport, ShardMap, Vec<(String, Plan)>, u64)> {
    let started = Instant::now();
    let fence = cut::fence().await;
    let export = catalog.export().await?;
    let options = export.active_map.clone().ok_or(Error::NoMap)?;
    let map = ShardMap::new(options)?;
    let mut files = Vec::with_capacity(map.shards().len());
    for shard in map.shards() {
        match &shard.target {
            // The export names every file by its absolute path.
            ShardTarget::DataSource(path) => files.push((shard.id.clone(), PathBuf::from(path))),
            _ => {
                return Err(Error::invalid_argument(
                    "backup",
                    format!(
                        "shard '{}' is not a file of this host: back up a data host's shards on that host",
                        shard.id
                    ),
                ));
            }
        }
    }
    let plans = tokio::task::spawn_blocking(move || -> Result<Vec<(String, Plan)>> {
        let mut plans = Vec::with_capacity(files.len());
        for (shard_id, path) in files {
            let io = |source| Error::Io {
                what: format!("the shard file {}", path.display()),
                source,
            };
            // The stamp is read before the snapshot begins: a write in between makes it older
            // than the copy, so a later set copies again rather than miss the write.
            let Some((stamp, tells)) = FileStamp::of(&path).map_err(io)? else {
                continue;
            };
            let plan = match previous.get(&shard_id) {
                Some(copy) if copy.source.as_ref() == Some(&stamp) && tells => Plan::Reuse(copy.clone()),
                _ => Plan::Copy(ShardSnapshot::take(&path)?, tells.then_some(stamp)),
            };
            plans.push((shard_id, plan));
        }
        Ok(plans)
    })
    .await
    .map_err(|_| Error::Cancelled)??;
    drop(fence);
    let fence_micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    Ok((export, map, plans, fence_micros))
}

/// A set name unique in `place`: the time of the cut, to the millisecond.
fn set_id(place: &Path, taken: time::OffsetDateTime) -> String {
    let format = time::macros::format_description!("[year][month][day]T[hour][minute][second][subsecond digits:3]Z");
    let base = taken.format(&format).unwrap_or_default();
    let sets = place.join(super::manifest::SETS_DIR);
    (1..)
        .map(|n| if n == 1 { base.clone() } else { format!("{base}-{n}") })
        .find(|id| !sets.join(format!("{id}.json")).exists())
        .unwrap_or(base)
}

fn write_flushed(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    std::fs::File::create(path)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .map_err(|source| Error::Io {
            what: path.display().to_string(),
            source,
        })
}
