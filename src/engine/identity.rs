//! Which file a database opened, so that a write never goes to a file that was deleted or
//! replaced since: SQLite keeps writing to an unlinked file through the connections that had it
//! open, and in WAL mode nothing tells the writer, so such writes would be acknowledged and
//! then lost with the file. Before each job of the shared writer, and before a transaction
//! commits, the path is looked up again (one `stat`, about a microsecond) and compared with the
//! file opened; a mismatch answers [`Error::ShardStorage`](crate::Error::ShardStorage) naming the shard, and nothing is
//! written. A file overwritten in place (same inode) is not caught here; SQLite reports what it
//! then cannot read.
//!
//! A file this process may not write (permission denied, a read-only mount, an immutable file)
//! is opened read-only by SQLite without a word, and a write on it then fails as a client's
//! write on a read-only connection would;
//! [`read_only_file`](super::sqlite_error::read_only_file) tells the two apart.

use std::path::Path;

use super::sqlite_error::file_moved;
use crate::error::Result;

/// The device and inode of an opened file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileIdentity {
    device: u64,
    inode: u64,
}

impl FileIdentity {
    /// The identity of the file at `path` now; `None` when there is none (or the platform has
    /// no inodes).
    pub(super) fn of(path: &Path) -> Option<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            std::fs::metadata(path).ok().map(|meta| Self {
                device: meta.dev(),
                inode: meta.ino(),
            })
        }
        #[cfg(not(unix))]
        {
            let _ = path;
            None
        }
    }

    /// Fails, naming the shard `label`, when `path` no longer names the file that was opened as
    /// `opened` (nothing to compare with: passes).
    pub(super) fn check(opened: Option<Self>, path: &Path, label: &str) -> Result<()> {
        let Some(opened) = opened else {
            return Ok(());
        };
        let what = match Self::of(path) {
            Some(now) if now == opened => return Ok(()),
            Some(_) => "replaced by another file",
            None => "deleted",
        };
        Err(file_moved(label, what))
    }
}
