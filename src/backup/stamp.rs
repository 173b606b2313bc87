//! A shard file's stamp: what tells, without reading the file, that it is unchanged since an
//! earlier set copied it.
//!
//! SQLite's file change counter (header offset 24) is not kept up to date in WAL mode, so the
//! stamp reads what is: while the file has WAL frames, the header of its WAL index (`-shm`),
//! whose change counter SQLite bumps on every transaction and whose frame count and salts move
//! with every write and checkpoint; and always the file's identity (device, inode), size and
//! modification time, and the WAL's size and time. A stamp is kept for a later set only when it
//! can tell: either it holds the WAL index header, or the files were last written longer ago
//! than the file system's timestamp granularity, so any later write shows as a new time.

use std::fs::Metadata;
use std::io::Read as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use crate::data::FileStamp;

/// Longer than the coarse clock tick that file times are taken from (a few milliseconds).
const SETTLED_AFTER: Duration = Duration::from_millis(50);

/// The WAL index header is 48 bytes, kept twice in a row; the copies differ while a writer is
/// changing it.
const WAL_INDEX_HEADER: usize = 48;

fn nanos(meta: &Metadata) -> i128 {
    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec())
}

fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn wal_index_header(path: &Path) -> Option<String> {
    let mut bytes = [0u8; 2 * WAL_INDEX_HEADER];
    std::fs::File::open(sidecar(path, "-shm"))
        .and_then(|mut f| f.read_exact(&mut bytes))
        .ok()?;
    let (first, second) = bytes.split_at(WAL_INDEX_HEADER);
    (first == second).then(|| first.iter().map(|b| format!("{b:02x}")).collect())
}

impl FileStamp {
    /// The stamp of the file at `path` now, and whether it can tell a later change (see the
    /// module's docs); `None` when the file does not exist.
    pub fn of(path: &Path) -> std::io::Result<Option<(Self, bool)>> {
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        };
        let wal = std::fs::metadata(sidecar(path, "-wal"))
            .ok()
            .filter(|w| w.len() > 0)
            .map_or((0, 0), |w| (w.len(), nanos(&w)));
        let wal_index = if wal.0 > 0 { wal_index_header(path) } else { None };
        let newest = nanos(&meta).max(wal.1);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
        let settled = now.saturating_sub(newest) >= i128::try_from(SETTLED_AFTER.as_nanos()).unwrap_or(i128::MAX);
        let tells = wal_index.is_some() || settled;
        let stamp = Self {
            path: std::path::absolute(path)
                .unwrap_or_else(|_| path.to_owned())
                .display()
                .to_string(),
            identity: (meta.dev(), meta.ino()),
            file: (meta.len(), nanos(&meta)),
            wal,
            wal_index,
        };
        Ok(Some((stamp, tells)))
    }
}

#[cfg(test)]
mod tests {
    use super::FileStamp;

    #[test]
    fn a_write_changes_the_stamp_of_an_open_wal_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        let (before, tells) = FileStamp::of(&path).unwrap().unwrap();
        assert!(tells && before.wal_index.is_some(), "{before:?}");
        assert_eq!(FileStamp::of(&path).unwrap().unwrap().0, before);
        conn.execute_batch("UPDATE t SET x = 2").unwrap();
        assert_ne!(FileStamp::of(&path).unwrap().unwrap().0, before);
    }
}
