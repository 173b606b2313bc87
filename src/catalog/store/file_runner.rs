//! Runner claims on a master file: a row naming the runner's process (its id and start time).
//! A second process is refused while that process lives, and takes the claim over once it has
//! died, however it died.

use async_trait::async_trait;

use super::file::{FileStore, text};
use super::{CatalogStore, RunnerClaim};
use crate::data::{Params, Value, now_utc};
use crate::error::{Error, Result};

/// Claims migration `id` on `store` for this process.
pub(super) async fn claim(store: &FileStore, id: &str) -> Result<Box<dyn RunnerClaim>> {
    let since = now_utc();
    if let Some((runner, since)) = store.claim_row(id, &since).await? {
        return Err(Error::ReshardRunning {
            migration_id: id.into(),
            holder: format!("process {} on this host (since {since})", runner.pid).into(),
        });
    }
    Ok(Box::new(FileClaim {
        row: Some((store.clone(), id.to_owned(), since)),
    }))
}

/// This process's row in a master file's runner table, deleted when released or dropped.
#[derive(Debug)]
struct FileClaim {
    /// The master file, the migration id and when the claim was made.
    row: Option<(FileStore, String, String)>,
}

#[async_trait]
impl RunnerClaim for FileClaim {
    async fn release(mut self: Box<Self>) {
        if let Some((file, id, since)) = self.row.take() {
            let _ = file.release_row(&id, &since).await;
        }
    }
}

impl Drop for FileClaim {
    fn drop(&mut self) {
        // A row left behind (no runtime to delete it on) names a process that has ended, which
        // the next claim takes over.
        if let Some((file, id, since)) = self.row.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = file.release_row(&id, &since).await;
            });
        }
    }
}

/// A process that claimed a migration: its id and when it started (so that a reused id is not
/// taken for the same process).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Runner {
    pid: i64,
    process_start: String,
}

impl Runner {
    /// This process.
    fn this_process() -> Self {
        let pid = i64::from(std::process::id());
        Self {
            pid,
            process_start: process_start(pid).unwrap_or_default(),
        }
    }

    /// Whether the process still runs on this host. Where that cannot be known (no `/proc`),
    /// a claim is taken for dead: the claim is a guard against mistakes, not a lock.
    fn is_alive(&self) -> bool {
        process_start(self.pid).is_some_and(|start| start == self.process_start)
    }
}

/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat`, field 22).
fn process_start(pid: i64) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19).map(str::to_owned)
}

impl FileStore {
    /// Claims migration `id` for this process unless a live process holds it. Returns the
    /// holder when one does.
    async fn claim_row(&self, id: &str, since: &str) -> Result<Option<(Runner, String)>> {
        self.ensure_schema().await?;
        let me = Runner::this_process();
        let current = self
            .db
            .execute_read_only(
                "SELECT pid, process_start, since_utc FROM shardlite_migration_runners WHERE migration_id = ?1",
                Params::from(vec![id]),
            )
            .await?;
        let holder = current.rows.first().map(|row| {
            (
                Runner {
                    pid: row.first().and_then(Value::as_i64).unwrap_or(0),
                    process_start: text(row, 1).unwrap_or_default(),
                },
                text(row, 2).unwrap_or_default(),
            )
        });
        if let Some((runner, since)) = &holder
            && runner != &me
            && runner.is_alive()
        {
            return Ok(Some((runner.clone(), since.clone())));
        }
        // Take the row over only if it is still what was read (another process may be claiming).
        let (old_pid, old_start) = holder
            .as_ref()
            .map_or((-1, String::new()), |(r, _)| (r.pid, r.process_start.clone()));
        let taken = self
            .db
            .execute(
                "INSERT INTO shardlite_migration_runners (migration_id, pid, process_start, since_utc)
                     VALUES (:id, :pid, :start, :now)
                 ON CONFLICT (migration_id) DO UPDATE SET pid = excluded.pid, process_start = excluded.process_start,
                     since_utc = excluded.since_utc
                     WHERE shardlite_migration_runners.pid = :old_pid AND shardlite_migration_runners.process_start = :old_start",
                Params::named([
                    ("id", Value::from(id)),
                    ("pid", Value::Integer(me.pid)),
                    ("start", Value::from(me.process_start.as_str())),
                    ("now", Value::from(since)),
                    ("old_pid", Value::Integer(old_pid)),
                    ("old_start", Value::from(old_start.as_str())),
                ]),
            )
            .await?;
        if taken.rows_affected == 0 {
            return Ok(Some((
                Runner {
                    pid: -1,
                    process_start: String::new(),
                },
                "a moment ago".to_owned(),
            )));
        }
        Ok(None)
    }

    /// Releases the claim on migration `id` this process made at `since`.
    async fn release_row(&self, id: &str, since: &str) -> Result<()> {
        let me = Runner::this_process();
        self.db
            .execute(
                "DELETE FROM shardlite_migration_runners
                 WHERE migration_id = ?1 AND pid = ?2 AND process_start = ?3 AND since_utc = ?4",
                Params::from(vec![
                    Value::from(id),
                    Value::Integer(me.pid),
                    Value::from(me.process_start.as_str()),
                    Value::from(since),
                ]),
            )
            .await?;
        Ok(())
    }
}
