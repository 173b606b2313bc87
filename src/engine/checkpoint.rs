//! Checkpoints of a file's write-ahead log, kept off async callers' tasks.
//!
//! SQLite folds the WAL back into the file (a checkpoint) in the commit that grows it past
//! [`WAL_PAGES`], on the committing thread, and a checkpoint syncs both files. A write that runs
//! on its caller's task (see [`write_inline`](super::inline::write_inline)) would then block a
//! runtime worker for the length of two syncs, leaving its core idle, where a thread of its own
//! would hand the core to another. So the writer's connection checkpoints through a WAL hook of
//! its own: on the writer's thread and on blocking callers' threads the hook checkpoints as
//! SQLite's would (passive, at the same size); inside an inline write it only notes that one is
//! due, and the write queues it on the writer's thread.
//!
//! Under the point-in-time archive the archive's tailer checkpoints instead (it reads every frame
//! before one is folded), and the hook is not installed.

use std::cell::Cell;
use std::ffi::c_int;

use rusqlite::Connection;
use rusqlite::hooks::{CheckpointMode, Wal};

/// The WAL size, in pages, past which a commit asks for a checkpoint: SQLite's own default.
pub(super) const WAL_PAGES: c_int = 1000;

thread_local! {
    /// Whether this thread runs a write on an async caller's task, where a checkpoint waits.
    static DEFERRING: Cell<bool> = const { Cell::new(false) };
    /// Whether a commit made while deferring found the WAL past [`WAL_PAGES`].
    static DUE: Cell<bool> = const { Cell::new(false) };
}

/// Makes the writer's connection `conn` checkpoint through [`grown`] (this replaces SQLite's
/// automatic checkpoint, and `PRAGMA wal_autocheckpoint` then reads 0).
pub(super) fn install(conn: &Connection) {
    conn.wal_hook(Some(grown));
}

/// The WAL hook: SQLite calls it after each commit with the WAL's size in pages.
fn grown(wal: &Wal, pages: c_int) -> rusqlite::Result<()> {
    if pages < WAL_PAGES {
        return Ok(());
    }
    if DEFERRING.with(Cell::get) {
        DUE.with(|due| due.set(true));
    } else {
        // As SQLite's automatic checkpoint: passive, and its outcome does not change the commit's.
        let _ = wal.checkpoint_v2(CheckpointMode::PASSIVE);
    }
    Ok(())
}

/// Runs `write` with checkpoints deferred; also says whether a commit of it asked for one.
pub(super) fn deferred<T>(write: impl FnOnce() -> T) -> (T, bool) {
    let before = DEFERRING.with(|deferring| deferring.replace(true));
    DUE.with(|due| due.set(false));
    let outcome = write();
    DEFERRING.with(|deferring| deferring.set(before));
    (outcome, DUE.with(|due| due.replace(false)))
}

/// A passive checkpoint on `conn`, for the writer's thread.
pub(super) fn run(conn: &Connection) {
    let _ = super::guard::trusted(|| conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file in WAL mode with the hook installed, and a table of one row per page.
    fn writer(dir: &tempfile::TempDir) -> Connection {
        let conn = Connection::open(dir.path().join("file.db")).expect("open");
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .expect("wal");
        conn.execute_batch("PRAGMA synchronous = NORMAL; CREATE TABLE pages (body BLOB);")
            .expect("schema");
        install(&conn);
        conn
    }

    /// One commit of more pages than [`WAL_PAGES`].
    fn grow(conn: &Connection) {
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) \
             INSERT INTO pages SELECT zeroblob(3000) FROM n",
            [WAL_PAGES + 100],
        )
        .expect("grow");
    }

    /// One small commit, checkpoints deferred: whether the WAL was still past its size after it
    /// (it starts over after a whole checkpoint).
    fn still_due(conn: &Connection) -> bool {
        deferred(|| conn.execute("INSERT INTO pages VALUES (x'00')", []).expect("insert")).1
    }

    #[test]
    fn a_commit_off_async_tasks_checkpoints_as_sqlite_would() {
        let dir = tempfile::tempdir().expect("dir");
        let conn = writer(&dir);
        grow(&conn);
        assert!(!still_due(&conn), "the commit that grew the WAL checkpointed it");
    }

    #[test]
    fn a_deferred_commit_leaves_the_checkpoint_to_whoever_runs_it() {
        let dir = tempfile::tempdir().expect("dir");
        let conn = writer(&dir);
        let ((), due) = deferred(|| grow(&conn));
        assert!(due, "the commit past the WAL's size asks for a checkpoint");
        assert!(still_due(&conn), "nothing checkpointed the WAL");
        run(&conn);
        assert!(!still_due(&conn), "the checkpoint let the WAL start over");
        let ((), due) = deferred(|| ());
        assert!(!due, "nothing committed, nothing asked");
    }

    /// Writes of async callers run on their tasks and leave the checkpoint to the writer's
    /// thread, which folds the WAL into the file: the file grows to hold the pages.
    #[tokio::test]
    async fn inline_writes_hand_their_checkpoint_to_the_writer() {
        use crate::data::Params;
        use crate::engine::{Database, EngineConfig};

        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("p.db");
        let db = Database::open(&path, "p", EngineConfig::default()).await.expect("open");
        db.execute("CREATE TABLE pages (body BLOB)", Params::none())
            .await
            .expect("table");
        for _ in 0..WAL_PAGES + 100 {
            db.execute("INSERT INTO pages VALUES (zeroblob(3000))", Params::none())
                .await
                .expect("insert");
        }
        let folded = u64::try_from(WAL_PAGES).expect("pages") * 3000;
        let waited = std::time::Instant::now();
        while std::fs::metadata(&path).expect("file").len() < folded {
            assert!(
                waited.elapsed() < std::time::Duration::from_secs(10),
                "no checkpoint folded the WAL into the file"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
}
