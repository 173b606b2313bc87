//! What a backup needs from SQLite: a read snapshot of a shard file on a connection of its own,
//! a page-for-page copy of that snapshot through SQLite's online backup API, and a check that a
//! copied file opens and is intact. The snapshot is taken while writes go on; the copy reads
//! only the snapshot, so it holds the file as it was when the snapshot began.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use super::sqlite_error::sql_error;
use crate::error::{Error, Result};

/// One `sqlite_master` row: type, name, table name and SQL.
pub type SchemaRow = [String; 4];

/// How long a snapshot waits for a lock held during WAL recovery or a checkpoint's start.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A read transaction on a shard file, on a read-only connection of its own: what the file
/// held when [`ShardSnapshot::take`] returned, however the file is written afterwards.
pub struct ShardSnapshot {
    conn: Connection,
    path: PathBuf,
}

impl ShardSnapshot {
    /// Opens `path` read-only and begins a read transaction on it (blocking).
    pub fn take(path: &Path) -> Result<Self> {
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(sql_error)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql_error)?;
        // A read is what starts the read transaction `BEGIN` defers.
        conn.execute_batch("BEGIN; SELECT count(*) FROM sqlite_master;")
            .map_err(sql_error)?;
        Ok(Self {
            conn,
            path: path.to_owned(),
        })
    }

    /// The file the snapshot reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The snapshot's `sqlite_master` rows that have SQL.
    pub fn schema_rows(&self) -> Result<Vec<SchemaRow>> {
        schema_rows(&self.conn)
    }

    /// Copies the snapshot, page for page, into a new file `dest` (blocking), flushed to disk.
    pub fn copy_to(self, dest: &Path) -> Result<()> {
        let mut to = Connection::open(dest).map_err(sql_error)?;
        // The copy is written once and flushed by the caller: no journal is needed.
        to.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")
            .map_err(sql_error)?;
        {
            let backup = Backup::new(&self.conn, &mut to).map_err(sql_error)?;
            loop {
                match backup.step(-1).map_err(sql_error)? {
                    StepResult::Done => break,
                    // The source is read through its own read transaction, so these only
                    // happen when the destination is locked by someone else.
                    StepResult::Busy | StepResult::Locked => std::thread::yield_now(),
                    _ => {}
                }
            }
        }
        to.close().map_err(|(_, err)| sql_error(err))?;
        drop(self);
        std::fs::File::open(dest)
            .and_then(|f| f.sync_all())
            .map_err(|source| Error::Io {
                what: format!("the copy {}", dest.display()),
                source,
            })
    }
}

/// Opens a copied file without writing to it or beside it (`immutable`), checks its pages
/// (`PRAGMA quick_check`), and returns its `sqlite_master` rows; `Err` names what is wrong.
pub fn check_copy(path: &Path) -> Result<Vec<SchemaRow>> {
    let uri = format!("file:{}?immutable=1", uri_path(path));
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql_error)?;
    let verdict: Vec<String> = {
        let mut statement = conn.prepare("PRAGMA quick_check").map_err(sql_error)?;
        statement
            .query_map([], |row| row.get::<_, String>(0))
            .map_err(sql_error)?
            .collect::<rusqlite::Result<_>>()
            .map_err(sql_error)?
    };
    if verdict != ["ok"] {
        return Err(Error::invalid_argument("backup file", verdict.join("; ")));
    }
    schema_rows(&conn)
}

fn schema_rows(conn: &Connection) -> Result<Vec<SchemaRow>> {
    let mut statement = conn
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name")
        .map_err(sql_error)?;
    statement
        .query_map([], |row| Ok([row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?]))
        .map_err(sql_error)?
        .collect::<rusqlite::Result<_>>()
        .map_err(sql_error)
}

/// `path` as the path part of a `file:` URI (`%`, `?` and `#` escaped).
fn uri_path(path: &Path) -> String {
    let text = path.display().to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{ShardSnapshot, check_copy};

    #[test]
    fn a_copy_holds_the_file_as_it_was_when_the_snapshot_began() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("s0.db");
        let writer = rusqlite::Connection::open(&source).unwrap();
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1);",
            )
            .unwrap();
        let snapshot = ShardSnapshot::take(&source).unwrap();
        writer.execute_batch("INSERT INTO t VALUES (2);").unwrap();
        let copy = dir.path().join("copy.db");
        snapshot.copy_to(&copy).unwrap();
        let rows = check_copy(&copy).unwrap();
        assert_eq!(rows.len(), 1, "{rows:?}");
        let copied = rusqlite::Connection::open(&copy).unwrap();
        let ids: String = copied
            .query_row("SELECT group_concat(id) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ids, "1");
    }

    #[test]
    fn a_damaged_copy_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.db");
        std::fs::write(&file, b"not a database at all, just text that is long enough to matter").unwrap();
        assert!(check_copy(&file).is_err());
    }
}
