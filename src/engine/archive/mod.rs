//! The point-in-time archive: every transaction committed to a written file, kept as change
//! files shardlite writes itself, so a file can be rebuilt as it was at any moment since.
//!
//! When a file's first transaction in this process commits, the archive begins a
//! **generation** of it: a copy of the file as it is (`base`), then a log to which it appends,
//! at most every [`READ_EVERY`], the pages the transactions committed since changed, read from
//! the file's WAL, stamped with the time they were read. While a file is being written its
//! connections leave checkpoints to the archive, which takes one only after it read every frame
//! the checkpoint may fold into the file (a read snapshot of its own holds back the WAL's
//! restart meanwhile), so no committed frame is lost to a restart. A file nobody writes costs
//! nothing: no thread, no descriptor, no timer; a written file holds two connections of the
//! archive until it has been quiet for [`QUIET_AFTER`].
//!
//! The archive is one per process ([`start_archive`]), as the worker threads are: every file
//! any connection of the process opens for writing afterwards, shard or master catalog, is
//! archived.
//!
//! ```text
//! ARCHIVE/files/KEY/file.json      the file's path and whether it is a master catalog
//! ARCHIVE/files/KEY/TIME.base      the file when its generation began (ms since the epoch)
//! ARCHIVE/files/KEY/TIME.log       the records appended since
//! ```

mod log;
mod tailer;
mod wal;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use tailer::Archived;

/// How often a written file's new transactions are read into the archive at most.
pub const READ_EVERY: Duration = Duration::from_millis(100);
/// How long a file goes without a commit before the archive lets go of its connections.
pub const QUIET_AFTER: Duration = Duration::from_secs(2);
/// The WAL frames after which the archive checkpoints a file it read (SQLite's own default).
const CHECKPOINT_FRAMES: u64 = 1000;

static ARCHIVE: OnceLock<Arc<Archive>> = OnceLock::new();

/// The process's archive.
pub(crate) struct Archive {
    dir: PathBuf,
    files: Mutex<HashMap<PathBuf, Arc<Archived>>>,
    reader: tailer::Reader,
}

/// What the archive records about a file it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchivedFile {
    /// The file's absolute path when it was archived.
    pub path: String,
    /// Whether it is a master catalog.
    pub catalog: bool,
}

/// How far behind the archive is on one file being written.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveLag {
    /// The file.
    pub path: PathBuf,
    /// Whether it is a master catalog.
    pub catalog: bool,
    /// How long the oldest transaction not yet in the archive has been committed (zero when the
    /// archive holds every one).
    pub lag: Duration,
}

/// Archives every file this process opens for writing from now on into `dir` (created if
/// missing). Once per process; starting it again with the same folder does nothing, with
/// another is refused.
pub fn start_archive(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir.join("files")).map_err(|source| Error::Io {
        what: format!("the archive folder {}", dir.display()),
        source,
    })?;
    let dir = std::fs::canonicalize(dir).map_err(|source| Error::Io {
        what: format!("the archive folder {}", dir.display()),
        source,
    })?;
    let archive = ARCHIVE.get_or_init(|| {
        Arc::new(Archive {
            dir: dir.clone(),
            files: Mutex::new(HashMap::new()),
            reader: tailer::Reader::default(),
        })
    });
    if archive.dir != dir {
        return Err(Error::invalid_argument(
            "archive folder",
            format!(
                "this process archives into {} already; one archive per process",
                archive.dir.display()
            ),
        ));
    }
    Ok(())
}

/// Whether this process archives the files it writes.
pub(crate) fn is_active() -> bool {
    ARCHIVE.get().is_some()
}

/// Whether this process runs a point-in-time archive ([`start_archive`]).
pub fn is_archiving() -> bool {
    is_active()
}

/// The archive's lag on each file it holds connections for (the files being written).
pub fn archive_lag() -> Vec<ArchiveLag> {
    let Some(archive) = ARCHIVE.get() else {
        return Vec::new();
    };
    let files = archive.files.lock().unwrap_or_else(PoisonError::into_inner);
    files
        .values()
        .filter_map(|file| {
            file.lag().map(|lag| ArchiveLag {
                path: file.path.clone(),
                catalog: file.catalog,
                lag,
            })
        })
        .collect()
}

/// Sets up a read-write connection to `path` for the archive, when there is one: SQLite's
/// automatic checkpoints off (the archive takes them) and a commit hook that tells the archive.
pub(crate) fn attach(conn: &Connection, path: &Path, catalog: bool) -> Result<()> {
    let Some(mut committed) = prepare(conn, path, catalog)? else {
        return Ok(());
    };
    conn.commit_hook(Some(move || {
        committed();
        false
    }))
    .map_err(super::sqlite_error::sql_error)
}

/// [`attach`] without the commit hook, for a connection whose own commit hook calls what this
/// returns at each commit (SQLite keeps one commit hook per connection): `None` when there is
/// no archive.
pub(crate) fn prepare(conn: &Connection, path: &Path, catalog: bool) -> Result<Option<impl FnMut() + Send + 'static>> {
    let Some(archive) = ARCHIVE.get() else { return Ok(None) };
    let path = std::fs::canonicalize(path).map_err(|source| Error::Io {
        what: format!("{}", path.display()),
        source,
    })?;
    let file = {
        let mut files = archive.files.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(files.entry(path.clone()).or_insert_with(|| {
            let file = Arc::new(Archived::new(&archive.dir, path, catalog));
            if catalog && let Err(err) = file.describe() {
                tracing::error!(file = %file.path.display(), error = %err, "the archive cannot describe this master");
            }
            file
        }))
    };
    conn.execute_batch("PRAGMA wal_autocheckpoint = 0;")
        .map_err(super::sqlite_error::sql_error)?;
    let archive = Arc::clone(archive);
    Ok(Some(move || file.committed(&archive)))
}

/// The files the archive in `dir` holds, by their folder.
pub fn archived_files(dir: &Path) -> Result<Vec<(PathBuf, ArchivedFile)>> {
    let files = dir.join("files");
    let entries = std::fs::read_dir(&files).map_err(|source| Error::Io {
        what: format!("the archive folder {}", files.display()),
        source,
    })?;
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let meta = entry.path().join("file.json");
        let Ok(text) = std::fs::read(&meta) else { continue };
        let file: ArchivedFile = serde_json::from_slice(&text)
            .map_err(|err| Error::invalid_argument("archive", format!("{} does not parse: {err}", meta.display())))?;
        found.push((entry.path(), file));
    }
    Ok(found)
}

/// Writes `to` as the file archived in `folder` (see [`archived_files`]) was at `time_ms`
/// (milliseconds since the Unix epoch); `false`, writing nothing, when no generation of it had
/// begun by then.
pub fn rebuild_as_at(folder: &Path, time_ms: u64, to: &Path) -> Result<bool> {
    let Some((_, base, log)) = log::generations(folder)
        .into_iter()
        .rfind(|(began, _, _)| *began <= time_ms)
    else {
        return Ok(false);
    };
    log::rebuild(&base, &log, time_ms, to).map_err(|source| Error::Io {
        what: format!("rebuilding {} from the archive", to.display()),
        source,
    })?;
    Ok(true)
}

/// The time the first generation of the file archived in `folder` began, if any.
pub fn first_generation(folder: &Path) -> Option<u64> {
    log::generations(folder).first().map(|(time, _, _)| *time)
}

fn now_ms() -> u64 {
    u64::try_from(super::unix_ms_now()).unwrap_or(0)
}
