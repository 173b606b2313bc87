//! Creating the shard files of a map being seeded, thousands at a time.
//!
//! A new shard file is the same every time: an SQLite database in WAL mode holding the empty
//! internal tables. SQLite writes that image once, into a scratch file, and each new shard file
//! gets a copy of its bytes, written and flushed to disk (`fsync`) by a small, bounded set of
//! threads, with each folder flushed once at the end. Opening every file through SQLite instead
//! (a connection, a journal-mode change, a transaction, a checkpoint and a close) costs several
//! `fsync`s and file creations per shard, which is what made seeding a thousand shards take
//! seconds.
//!
//! A file that already exists is never overwritten: seeding opens it through the engine as
//! before, which refuses a file that is not a database and adds the internal tables it lacks.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::engine::{Database, EngineConfig};
use crate::error::{Error, Result, ShardProblem};
use crate::map::{ShardMap, ShardTarget};

/// At most this many threads write shard files at once: enough to overlap the `fsync`s,
/// few enough not to crowd the machine.
const MAX_WRITERS: usize = 8;

/// How many shard files seeding created, and how many it found already there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CreatedFiles {
    /// New files written from the image.
    pub(crate) created: usize,
    /// Files that existed and were opened instead.
    pub(crate) existing: usize,
}

/// Creates the missing local shard files of `map` (relative paths in the folder of `master`) and
/// opens the ones that exist.
pub(crate) async fn create_shard_files(master: &Path, map: &ShardMap) -> Result<CreatedFiles> {
    let files: Vec<(String, PathBuf)> = map
        .shards()
        .iter()
        .filter(|shard| matches!(shard.target, ShardTarget::DataSource(_)))
        .filter_map(|shard| super::shard_file(master, shard).map(|file| (shard.id.clone(), file)))
        .collect();
    if files.is_empty() {
        return Ok(CreatedFiles::default());
    }
    let count = files.len();
    let scratch = scratch_path(master);
    let existing = tokio::task::spawn_blocking(move || write_new_files(&scratch, &files))
        .await
        .map_err(|_| Error::Io {
            what: "the shard files of the map".to_owned(),
            source: std::io::Error::other("the task writing them stopped"),
        })??;
    let created = count - existing.len();
    for (shard_id, file) in &existing {
        Database::open(file, shard_id.clone(), EngineConfig::default()).await?;
    }
    Ok(CreatedFiles {
        created,
        existing: existing.len(),
    })
}

/// A scratch file for the image, beside the master (a folder seeding writes to anyway), named
/// so that concurrent seeds never share it.
fn scratch_path(master: &Path) -> PathBuf {
    let name = master
        .file_name()
        .map_or_else(|| "master".to_owned(), |name| name.to_string_lossy().into_owned());
    let unique = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    master.with_file_name(format!(".{name}.shard-image-{}-{unique}.db", std::process::id()))
}

/// Writes every file of `files` that does not exist yet; returns the ones that did.
fn write_new_files(scratch: &Path, files: &[(String, PathBuf)]) -> Result<Vec<(String, PathBuf)>> {
    let folders: BTreeSet<&Path> = files
        .iter()
        .filter_map(|(_, file)| file.parent().filter(|p| !p.as_os_str().is_empty()))
        .collect();
    let image = crate::engine::empty_shard_image(scratch)?;
    let next = AtomicUsize::new(0);
    let existing = Mutex::new(Vec::new());
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let writers = MAX_WRITERS.min(files.len()).max(1);
    std::thread::scope(|scope| {
        for _ in 0..writers {
            scope.spawn(|| {
                loop {
                    let at = next.fetch_add(1, Ordering::Relaxed);
                    let Some((shard_id, file)) = files.get(at) else {
                        return;
                    };
                    match write_file(file, &image) {
                        Ok(true) => {}
                        Ok(false) => existing
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .push((shard_id.clone(), file.clone())),
                        Err(source) => {
                            let reason = format!("cannot create its file '{}': {source}", file.display());
                            failure
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                                .get_or_insert(Error::ShardUnavailable(Box::new(ShardProblem::new(
                                    shard_id.clone(),
                                    reason,
                                ))));
                            // Stop handing out files: the seed fails as a whole.
                            next.store(files.len(), Ordering::Relaxed);
                            return;
                        }
                    }
                }
            });
        }
    });
    if let Some(err) = failure.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
        return Err(err);
    }
    for folder in &folders {
        sync_folder(folder).map_err(|source| Error::Io {
            what: format!("flushing the shard folder '{}'", folder.display()),
            source,
        })?;
    }
    Ok(existing.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner))
}

/// Writes `image` to a new file at `path` (creating its folder) and flushes it; `false` when the
/// file exists. A file left half written is removed, so a failed seed leaves no damaged database
/// behind.
fn write_file(path: &Path, image: &[u8]) -> std::io::Result<bool> {
    let create = || std::fs::OpenOptions::new().write(true).create_new(true).open(path);
    let opened = match create() {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => match path.parent() {
            Some(folder) if !folder.as_os_str().is_empty() => {
                std::fs::create_dir_all(folder)?;
                create()
            }
            _ => Err(err),
        },
        other => other,
    };
    let mut file = match opened {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(err) => return Err(err),
    };
    let written = file.write_all(image).and_then(|()| file.sync_all());
    if let Err(err) = written {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(err);
    }
    Ok(true)
}

/// Flushes a folder's entries, so the files created in it survive a crash.
#[cfg(unix)]
fn sync_folder(folder: &Path) -> std::io::Result<()> {
    std::fs::File::open(folder)?.sync_all()
}

/// Windows cannot open a folder as a file; its file system commits new entries with the file.
#[cfg(not(unix))]
fn sync_folder(_folder: &Path) -> std::io::Result<()> {
    Ok(())
}
