//! A backup place's content-addressed files: each stored once, as `objects/ab/abcd…` after the
//! SHA-256 of its content, whichever sets reference it.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::manifest::{StoredFile, sync_dir};
use crate::error::{Error, Result};

const OBJECTS_DIR: &str = "objects";
/// Where copies are written before they have a name.
const INCOMING_DIR: &str = "incoming";

fn io(what: String) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { what, source }
}

/// SHA-256 (hex) and size of the file at `path`.
pub(super) fn digest(path: &Path) -> Result<(String, u64)> {
    let mut file = std::fs::File::open(path).map_err(io(path.display().to_string()))?;
    let mut hash = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let read = file.read(&mut buffer).map_err(io(path.display().to_string()))?;
        if read == 0 {
            break;
        }
        hash.update(&buffer[..read]);
        bytes += u64::try_from(read).unwrap_or(u64::MAX);
    }
    Ok((hash.finalize().iter().map(|b| format!("{b:02x}")).collect(), bytes))
}

/// A fresh path to write a copy to before it is stored (`incoming/NAME`), its folder created.
pub(super) fn incoming(place: &Path, name: &str) -> Result<PathBuf> {
    let dir = place.join(INCOMING_DIR);
    std::fs::create_dir_all(&dir).map_err(io(dir.display().to_string()))?;
    let path = dir.join(name);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(io(path.display().to_string())(source)),
    }
    Ok(path)
}

/// Stores the flushed file at `written` under its content's name, moving it (or dropping it when
/// the place holds that content already).
pub(super) fn store(place: &Path, written: &Path) -> Result<StoredFile> {
    let (sha256, bytes) = digest(written)?;
    let relative = format!("{OBJECTS_DIR}/{}/{sha256}", &sha256[..2]);
    let path = place.join(&relative);
    if path.exists() {
        std::fs::remove_file(written).map_err(io(written.display().to_string()))?;
    } else {
        let dir = path.parent().unwrap_or(place);
        std::fs::create_dir_all(dir).map_err(io(dir.display().to_string()))?;
        std::fs::rename(written, &path).map_err(io(path.display().to_string()))?;
        sync_dir(dir)?;
    }
    Ok(StoredFile {
        file: relative,
        bytes,
        sha256,
    })
}
