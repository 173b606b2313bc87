//! An archived file's generations: a base (the file as it was when archiving of it began) and
//! a log of records appended after it, each the pages the transactions committed since the
//! record before changed, stamped with the time they were read. Rebuilding the file as at a
//! time applies the base and every record stamped up to then.

use std::io::{BufReader, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use super::wal::Committed;

const RECORD_MAGIC: &[u8; 4] = b"SLA1";

/// Appends one record (`time_ms`, the pages of `committed`) to `log`.
pub(super) fn append(log: &mut std::fs::File, time_ms: u64, committed: &Committed) -> std::io::Result<()> {
    let mut bytes = Vec::with_capacity(24 + committed.pages.len() * (4 + committed.page_size as usize));
    bytes.extend_from_slice(RECORD_MAGIC);
    bytes.extend_from_slice(&time_ms.to_le_bytes());
    bytes.extend_from_slice(&committed.page_size.to_le_bytes());
    bytes.extend_from_slice(&committed.db_pages.to_le_bytes());
    let count = u32::try_from(committed.pages.len()).unwrap_or(u32::MAX);
    bytes.extend_from_slice(&count.to_le_bytes());
    for (page, content) in &committed.pages {
        bytes.extend_from_slice(&page.to_le_bytes());
        bytes.extend_from_slice(content);
    }
    log.write_all(&bytes)
}

/// The generations of one archived file, by the time each began (milliseconds since the Unix
/// epoch): `(time, base, log)`, oldest first.
pub(super) fn generations(dir: &Path) -> Vec<(u64, PathBuf, PathBuf)> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let time = name.strip_suffix(".base")?.parse::<u64>().ok()?;
            Some((time, entry.path(), dir.join(format!("{time}.log"))))
        })
        .collect();
    found.sort_by_key(|(time, _, _)| *time);
    found
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Writes `to` as the generation (`base`, `log`) was at `time_ms`: the base, then each record
/// stamped up to `time_ms` (a record cut short at the log's end, by a crash, is left out).
pub(super) fn rebuild(base: &Path, log: &Path, time_ms: u64, to: &Path) -> std::io::Result<u64> {
    std::fs::copy(base, to)?;
    let mut out = std::fs::OpenOptions::new().write(true).open(to)?;
    let mut applied = 0;
    let mut reader = match std::fs::File::open(log) {
        Ok(file) => BufReader::new(file),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return finish(out, applied),
        Err(err) => return Err(err),
    };
    let mut head = [0u8; 24];
    while reader.read_exact(&mut head).is_ok() && &head[..4] == RECORD_MAGIC {
        let time = u64::from_le_bytes(head[4..12].try_into().unwrap_or_default());
        let (page_size, db_pages, count) = (u32_at(&head, 12), u32_at(&head, 16), u32_at(&head, 20));
        if time > time_ms {
            break;
        }
        let mut body = vec![0u8; count as usize * (4 + page_size as usize)];
        if reader.read_exact(&mut body).is_err() {
            break;
        }
        for entry in body.chunks_exact(4 + page_size as usize) {
            let page = u64::from(u32_at(entry, 0));
            out.seek(SeekFrom::Start(page.saturating_sub(1) * u64::from(page_size)))?;
            out.write_all(&entry[4..])?;
        }
        out.set_len(u64::from(db_pages) * u64::from(page_size))?;
        applied += 1;
    }
    finish(out, applied)
}

fn finish(out: std::fs::File, applied: u64) -> std::io::Result<u64> {
    out.sync_all()?;
    Ok(applied)
}
