//! The daemon's own record of the remote transactions begun through it: what the per-API-key
//! limit counts, and what shutdown rolls back.
//!
//! The table never holds more entries than the limit: a begin reserves its place before it
//! reaches a shard, and is refused with [`Error::TooManyTransactions`] when none is left. Commit,
//! rollback and an answer of "expired" or "not found" remove an entry at once. A transaction its
//! client abandoned is rolled back by its shard after the idle timeout without the daemon hearing
//! of it, so entries idle past that timeout (and not in use by a call) are reaped whenever the
//! table is consulted; an abandoned transaction so holds its place for at most the idle timeout
//! and [`REAP_GRACE`].

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How long past the idle timeout an unused entry is kept: the shard's own expiry runs on
/// another thread, and may roll the transaction back a little after its deadline.
pub(super) const REAP_GRACE: Duration = Duration::from_secs(1);

/// Open remote transactions of the daemon's (single) API key.
#[derive(Debug)]
pub(super) struct RemoteTransactions {
    table: Mutex<Table>,
    idle_timeout: Duration,
    limit: usize,
}

#[derive(Debug, Default)]
struct Table {
    open: HashMap<String, Entry>,
    /// Begins that reserved a place and have not yet heard back from their shard.
    beginning: usize,
}

#[derive(Debug)]
struct Entry {
    last_used: Instant,
    /// Calls running in the transaction; an entry in use is never reaped, however long its
    /// statement runs.
    in_use: usize,
    /// Begun read-only (by a key holding `read` and not `write`).
    read_only: bool,
}

impl RemoteTransactions {
    pub(super) fn new(idle_timeout: Duration, limit: usize) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            idle_timeout,
            limit,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets entries idle past the idle timeout and [`REAP_GRACE`], and not in use.
    fn reap(&self, table: &mut Table, now: Instant) {
        let forget_after = self.idle_timeout.saturating_add(REAP_GRACE);
        table
            .open
            .retain(|_, entry| entry.in_use > 0 || now.saturating_duration_since(entry.last_used) < forget_after);
    }

    /// Reserves a place for one more transaction, or refuses when the limit is reached. The place
    /// is given back when the reservation drops without [`Reservation::confirm`].
    pub(super) fn reserve(&self) -> Result<Reservation<'_>> {
        let mut table = self.lock();
        self.reap(&mut table, Instant::now());
        if table.open.len() + table.beginning >= self.limit {
            return Err(Error::TooManyTransactions { limit: self.limit });
        }
        table.beginning += 1;
        Ok(Reservation { owner: Some(self) })
    }

    /// Marks a call running in `id` until the returned guard drops, which counts as a use.
    /// Transactions the daemon does not know (begun before a restart, or already reaped) are left
    /// alone.
    pub(super) fn use_transaction<'a>(&'a self, id: &'a str) -> InUse<'a> {
        let known = match self.lock().open.get_mut(id) {
            Some(entry) => {
                entry.in_use += 1;
                entry.last_used = Instant::now();
                true
            }
            None => false,
        };
        InUse { owner: self, id, known }
    }

    /// Whether `id` was begun read-only, or `None` when the daemon does not know it (begun
    /// before a restart, elsewhere, or already ended or reaped).
    pub(super) fn is_read_only(&self, id: &str) -> Option<bool> {
        self.lock().open.get(id).map(|entry| entry.read_only)
    }

    /// Forgets `id` (it ended).
    pub(super) fn forget(&self, id: &str) {
        self.lock().open.remove(id);
    }

    /// How many transactions are open, after reaping.
    pub(super) fn count(&self) -> usize {
        let mut table = self.lock();
        self.reap(&mut table, Instant::now());
        table.open.len()
    }

    /// The ids of the open transactions, after reaping (for the metrics' per-shard gauge).
    pub(super) fn open_ids(&self) -> Vec<String> {
        let mut table = self.lock();
        self.reap(&mut table, Instant::now());
        table.open.keys().cloned().collect()
    }

    /// Forgets every entry, returning the ids.
    pub(super) fn drain(&self) -> Vec<String> {
        self.lock().open.drain().map(|(id, _)| id).collect()
    }
}

/// A place reserved for a transaction being begun.
#[derive(Debug)]
pub(super) struct Reservation<'a> {
    owner: Option<&'a RemoteTransactions>,
}

impl Reservation<'_> {
    /// Records the transaction the reservation was for, begun `read_only` or not.
    pub(super) fn confirm(mut self, id: String, read_only: bool) {
        if let Some(owner) = self.owner.take() {
            let mut table = owner.lock();
            table.beginning = table.beginning.saturating_sub(1);
            table.open.insert(
                id,
                Entry {
                    last_used: Instant::now(),
                    in_use: 0,
                    read_only,
                },
            );
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if let Some(owner) = self.owner.take() {
            let mut table = owner.lock();
            table.beginning = table.beginning.saturating_sub(1);
        }
    }
}

/// A call running in a transaction (see [`RemoteTransactions::use_transaction`]).
#[derive(Debug)]
pub(super) struct InUse<'a> {
    owner: &'a RemoteTransactions,
    id: &'a str,
    known: bool,
}

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        if !self.known {
            return;
        }
        if let Some(entry) = self.owner.lock().open.get_mut(self.id) {
            entry.in_use = entry.in_use.saturating_sub(1);
            entry.last_used = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn aged(table: &RemoteTransactions, id: &str, age: Duration) {
        if let Some(entry) = table.lock().open.get_mut(id) {
            entry.last_used = Instant::now().checked_sub(age).unwrap_or_else(Instant::now);
        }
    }

    #[test]
    fn the_limit_counts_open_and_beginning_transactions() {
        let table = RemoteTransactions::new(Duration::from_secs(5), 2);
        table.reserve().expect("room").confirm("a".into(), false);
        let pending = table.reserve().expect("room");
        let refused = table.reserve().expect_err("full");
        assert_eq!(refused.kind(), ErrorKind::Busy);
        assert!(refused.to_string().contains("2 remote transactions"), "{refused}");
        // A begin that failed (or whose caller went away) gives its place back.
        drop(pending);
        table.reserve().expect("room again").confirm("b".into(), true);
        assert_eq!(table.count(), 2);
        assert_eq!(
            (table.is_read_only("a"), table.is_read_only("b")),
            (Some(false), Some(true))
        );
        table.forget("a");
        assert_eq!(table.count(), 1);
        assert_eq!(table.is_read_only("a"), None);
        assert_eq!(table.drain(), vec!["b".to_owned()]);
        assert_eq!(table.count(), 0);
    }

    #[test]
    fn abandoned_entries_are_reaped_after_the_idle_timeout_unless_in_use() {
        let idle = Duration::from_secs(5);
        let table = RemoteTransactions::new(idle, 3);
        for id in ["fresh", "abandoned", "running"] {
            table.reserve().expect("room").confirm(id.into(), false);
        }
        let running = table.use_transaction("running");
        let past = idle + REAP_GRACE + Duration::from_millis(10);
        aged(&table, "abandoned", past);
        aged(&table, "running", past);
        assert_eq!(table.count(), 2, "the abandoned entry is reaped");
        // The reaped place is free again, and the limit still holds.
        table.reserve().expect("room").confirm("new".into(), false);
        assert!(table.reserve().is_err());
        // A call that finishes counts as a use: its transaction is not idle.
        drop(running);
        assert_eq!(table.count(), 3);
        // Calls in transactions the daemon does not know change nothing.
        drop(table.use_transaction("unknown"));
        assert_eq!(table.count(), 3);
    }
}
