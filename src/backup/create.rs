//! Taking a backup set: the cut and the copies, in bounded batches (see
//! [`batches`](super::batches)), then the catalog and the manifest.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::batches;
use super::manifest::{BackupManifest, MANIFEST_FORMAT, ShardCopy, list_sets};
use super::objects;
use crate::client::ShardedClient;
use crate::error::{Error, Result};

/// One step of a backup, as it is reported while the set is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackupStep {
    /// One batch of the cut was planned inside a fence: `to_copy` shards got a read snapshot and
    /// will be copied, `unchanged` are referenced from an earlier copy; `through` of the map's
    /// `total` shards have been through the cut.
    Cut {
        /// The batch, from 1.
        batch: usize,
        /// Shards of this batch to copy.
        to_copy: usize,
        /// Shards of this batch referenced from an earlier copy.
        unchanged: usize,
        /// Shards of the map through the cut so far.
        through: usize,
        /// Shards in the map.
        total: usize,
        /// How long this batch's fence had held when its snapshots were taken, in microseconds.
        fence_micros: u64,
    },
    /// A shard's copy was stored, the `copies`-th of this set.
    Copied {
        /// The shard.
        shard_id: String,
        /// Its size.
        bytes: u64,
        /// Copies stored so far.
        copies: usize,
    },
    /// An activation or an atomic-commit decision came between two batches: the cut starts
    /// over (its `attempt`, from 2), referencing the copies already stored of unchanged shards.
    Restarted {
        /// The attempt starting.
        attempt: u32,
    },
}

/// Takes a backup set of the keyspace `sharded` serves into the backup place `place` (a folder,
/// created if missing), reporting each step to `progress`; returns the manifest's path and the
/// manifest.
///
/// Shards unchanged since the newest set in `place` are referenced rather than copied. Every
/// shard must be a local file: a data host's shards are copied by their host. At most
/// [`SNAPSHOTS_PER_FENCE`](super::SNAPSHOTS_PER_FENCE) shard snapshots are open at once, whatever the number of shards.
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
    let id = set_id(place, taken);
    let cut = batches::take(catalog, place, &id, previous, progress).await?;
    let catalog_file = objects::incoming(place, &format!("{id}.catalog.json"))?;
    let text = serde_json::to_vec_pretty(&cut.export).map_err(|source| Error::Json {
        what: "the catalog export",
        source,
    })?;
    write_flushed(&catalog_file, &text)?;
    let catalog_object = objects::store(place, &catalog_file)?;
    let manifest = BackupManifest {
        format: MANIFEST_FORMAT.to_owned(),
        id,
        keyspace: cut.map.keyspace().to_owned(),
        map_version: cut.map.version(),
        taken_at: taken
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        fence_micros: cut.fence_micros,
        longest_fence_micros: cut.longest_fence_micros,
        catalog: catalog_object,
        shards: cut.shards,
    };
    let path = manifest.publish(place)?;
    Ok((path, manifest))
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
