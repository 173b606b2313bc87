//! The bytes of a new, empty shard file, written once by SQLite so that `seed` can create
//! thousands of shard files by copying them (see the catalog's `new_files`).

use std::path::Path;

use crate::error::{Error, Result};

/// The bytes of a new, empty shard file: SQLite writes it at `scratch` (in WAL mode, the internal
/// tables created in one transaction, then closed, which checkpoints everything into the file),
/// and the scratch file is removed.
pub(crate) fn empty_shard_image(scratch: &Path) -> Result<Vec<u8>> {
    let failed = |source: std::io::Error| Error::Io {
        what: format!("the image of a new shard file at '{}'", scratch.display()),
        source,
    };
    let sqlite = |err: rusqlite::Error| {
        super::sqlite_error::io_failure(format!("the image of a new shard file at '{}'", scratch.display()), err)
    };
    let remove = || {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut path = scratch.as_os_str().to_owned();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    };
    remove();
    let written = (|| {
        let mut conn = rusqlite::Connection::open(scratch).map_err(sqlite)?;
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .map_err(sqlite)?;
        let tx = conn.transaction().map_err(sqlite)?;
        super::open::create_internal_tables(&tx)?;
        tx.commit().map_err(sqlite)?;
        conn.close().map_err(|(_, err)| sqlite(err))?;
        std::fs::read(scratch).map_err(failed)
    })();
    remove();
    let image = written?;
    // The header says WAL (bytes 18 and 19 are 2) and how many pages of what size the file
    // holds: a close that left pages in the WAL would show as a file shorter than that.
    let field = |range: std::ops::Range<usize>| {
        image
            .get(range)
            .map(|b| b.iter().fold(0usize, |n, b| n << 8 | usize::from(*b)))
    };
    let page_size = match field(16..18) {
        Some(1) => Some(65_536),
        other => other,
    };
    let complete = image.get(18..20) == Some(&[2, 2][..])
        && page_size
            .zip(field(28..32))
            .is_some_and(|(size, pages)| pages > 0 && size * pages == image.len());
    if !complete {
        return Err(failed(std::io::Error::other(
            "SQLite did not leave a complete WAL database",
        )));
    }
    Ok(image)
}
