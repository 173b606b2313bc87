//! Reading a WAL file's committed frames from a known position: the header's salts tell a WAL
//! that restarted (or was deleted and made again) from the one read before, and the running
//! checksum tells a complete frame from a stale or half-written one.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

const HEADER: usize = 32;
const FRAME_HEADER: usize = 24;

/// Where the last read stopped: just after the last frame of a committed transaction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct WalPosition {
    /// The header's salts when the position was taken (`None`: no WAL read yet).
    salts: Option<(u32, u32)>,
    /// Byte offset of the next frame.
    offset: u64,
    /// The running checksum at `offset`.
    checksum: (u32, u32),
}

/// The pages of the transactions committed since a position, the last version of each.
#[derive(Debug, Default)]
pub(super) struct Committed {
    /// Page size of the file.
    pub(super) page_size: u32,
    /// Pages of the file after the last commit.
    pub(super) db_pages: u32,
    /// Page number to content.
    pub(super) pages: BTreeMap<u32, Vec<u8>>,
    /// Frames read.
    pub(super) frames: u64,
}

fn be(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// SQLite's WAL checksum over `data` (a multiple of 8 bytes), continued from `seed`.
fn checksum(big_endian: bool, seed: (u32, u32), data: &[u8]) -> (u32, u32) {
    let (mut s0, mut s1) = seed;
    for pair in data.chunks_exact(8) {
        let word = |at: usize| {
            let b = [pair[at], pair[at + 1], pair[at + 2], pair[at + 3]];
            if big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        s0 = s0.wrapping_add(word(0)).wrapping_add(s1);
        s1 = s1.wrapping_add(word(4)).wrapping_add(s0);
    }
    (s0, s1)
}

/// Reads the transactions committed to the WAL beside `db` after `from`; returns them and the
/// position after the last one. A WAL that is missing or holds no new commit gives none.
pub(super) fn read_committed(db: &Path, from: WalPosition) -> std::io::Result<(Committed, WalPosition)> {
    use std::io::{Seek as _, SeekFrom};
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    let mut file = match std::fs::File::open(&wal) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok((Committed::default(), from)),
        Err(err) => return Err(err),
    };
    let mut header = [0u8; HEADER];
    if file.read_exact(&mut header).is_err() {
        return Ok((Committed::default(), from));
    }
    // Only the frames after the position are read, unless the WAL restarted.
    let start = if from.salts == Some((be(&header, 16), be(&header, 20))) {
        from.offset
    } else {
        HEADER as u64
    };
    file.seek(SeekFrom::Start(start))?;
    let mut body = Vec::new();
    file.read_to_end(&mut body)?;
    Ok(parse(&header, &body, start, from))
}

fn parse(header: &[u8; HEADER], body: &[u8], start: u64, from: WalPosition) -> (Committed, WalPosition) {
    let mut found = Committed::default();
    let magic = be(header, 0);
    if magic & !1 != 0x377f_0682 {
        return (found, from);
    }
    let big_endian = magic & 1 == 1;
    let page_size = match be(header, 8) {
        1 => 65_536,
        size => size,
    };
    let salts = (be(header, 16), be(header, 20));
    let header_sum = checksum(big_endian, (0, 0), &header[..24]);
    if header_sum != (be(header, 24), be(header, 28)) {
        return (found, from);
    }
    let mut at = if start == HEADER as u64 {
        WalPosition {
            salts: Some(salts),
            offset: HEADER as u64,
            checksum: header_sum,
        }
    } else {
        from
    };
    found.page_size = page_size;
    let frame = FRAME_HEADER + page_size as usize;
    let mut pending: Vec<(u32, usize)> = Vec::new();
    let mut offset = 0usize;
    let mut running = at.checksum;
    while offset.saturating_add(frame) <= body.len() {
        let head = &body[offset..offset + FRAME_HEADER];
        if (be(head, 8), be(head, 12)) != salts {
            break;
        }
        let sum = checksum(big_endian, running, &head[..8]);
        let sum = checksum(big_endian, sum, &body[offset + FRAME_HEADER..offset + frame]);
        if sum != (be(head, 16), be(head, 20)) {
            break;
        }
        running = sum;
        pending.push((be(head, 0), offset + FRAME_HEADER));
        offset += frame;
        let commit_size = be(head, 4);
        if commit_size != 0 {
            for (page, from) in pending.drain(..) {
                found.pages.insert(page, body[from..from + page_size as usize].to_vec());
                found.frames += 1;
            }
            found.db_pages = commit_size;
            at = WalPosition {
                salts: Some(salts),
                offset: start + offset as u64,
                checksum: running,
            };
        }
    }
    (found, at)
}

impl WalPosition {
    /// Frames between the WAL's start and this position.
    pub(super) fn frames(&self, page_size: u32) -> u64 {
        self.offset.saturating_sub(HEADER as u64) / (FRAME_HEADER as u64 + u64::from(page_size.max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    #[test]
    fn reads_each_commit_once_and_follows_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.db");
        let conn = Connection::open(&path).unwrap();
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())).unwrap();
        conn.execute_batch("PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
        let (first, at) = read_committed(&path, WalPosition::default()).unwrap();
        assert!(first.frames >= 2 && first.db_pages >= 2);
        let (none, same) = read_committed(&path, at).unwrap();
        assert_eq!((none.frames, same), (0, at));
        conn.execute_batch("INSERT INTO t VALUES (2)").unwrap();
        let (second, at) = read_committed(&path, at).unwrap();
        assert_eq!(second.frames, 1);
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .unwrap();
        conn.execute_batch("INSERT INTO t VALUES (3)").unwrap();
        let (third, moved) = read_committed(&path, at).unwrap();
        assert_eq!(third.frames, 1, "the restarted WAL is read from its start");
        assert_ne!(moved.salts, at.salts);
    }
}
