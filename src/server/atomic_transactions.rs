//! The daemon's open atomic transactions: begun by REST `POST /api/transactions` with
//! `{"atomic": true}` or gRPC `BeginTransaction` with `atomic`, each an
//! [`AtomicTransaction`] of the daemon's sharded client, addressed by its
//! `csdbatomic:{hex}` id. Each execute carries its own route (the route headers or metadata),
//! so one transaction writes on any shard; commit and rollback take the id alone.
//!
//! A transaction idle past the daemon's transaction idle timeout is rolled back: its
//! participants' sessions end by themselves after that timeout (nothing was prepared, so nothing
//! is applied anywhere: presumed abort), and the entry here is dropped when the table is next
//! consulted. An ended transaction is remembered for [`ENDED_MEMORY`], so a late call hears what
//! happened to it (`committed`, `rolled back`, `expired`) rather than "not open".

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::client::{AtomicTransaction, Params, ShardedClient, SqlResult, TransactionInfo};
use crate::error::{Error, Result};
use crate::routing::RouteContext;
use crate::transaction::{ATOMIC_ID_PREFIX, AtomicTransactionId};

/// How long an ended transaction's outcome is remembered for late calls.
pub(super) const ENDED_MEMORY: Duration = Duration::from_secs(600);

/// Whether `transaction_id` is an atomic transaction's (by its prefix; it may still be
/// malformed).
pub(super) fn is_atomic_id(transaction_id: &str) -> bool {
    transaction_id
        .strip_prefix(ATOMIC_ID_PREFIX)
        .is_some_and(|rest| rest.starts_with(':'))
}

/// The open atomic transactions of a daemon, and the recently ended ones.
#[derive(Debug)]
pub(super) struct AtomicTransactions {
    table: Mutex<Table>,
    idle_timeout: Duration,
    limit: usize,
}

#[derive(Debug, Default)]
struct Table {
    open: HashMap<String, Entry>,
    ended: HashMap<String, (Ended, Instant)>,
}

#[derive(Debug)]
struct Entry {
    transaction: Arc<tokio::sync::Mutex<Option<AtomicTransaction>>>,
    last_used: Instant,
    /// Calls running in it; an entry in use is never dropped for idleness.
    in_use: usize,
}

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Committed,
    RolledBack,
    Expired,
    /// Its commit failed; what happened is in that answer (and recovery finishes it).
    CommitFailed,
}

impl AtomicTransactions {
    pub(super) fn new(idle_timeout: Duration, limit: usize) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            idle_timeout,
            limit,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let idle = self.idle_timeout;
        let expired: Vec<String> = table
            .open
            .iter()
            .filter(|(_, e)| e.in_use == 0 && now.saturating_duration_since(e.last_used) >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            // Dropping the transaction rolls back whatever its sessions still hold.
            table.open.remove(&id);
            table.ended.insert(id, (Ended::Expired, now));
        }
        table
            .ended
            .retain(|_, (_, at)| now.saturating_duration_since(*at) < ENDED_MEMORY);
        table
    }

    /// Begins an atomic transaction on `sharded`; refused with `busy` past the daemon's limit of
    /// open transactions per key.
    pub(super) fn begin(&self, sharded: &ShardedClient) -> Result<TransactionInfo> {
        let mut table = self.lock();
        if table.open.len() >= self.limit {
            return Err(Error::TooManyTransactions { limit: self.limit });
        }
        let transaction = sharded.begin_atomic();
        let transaction_id = transaction.id();
        table.open.insert(
            transaction_id.clone(),
            Entry {
                transaction: Arc::new(tokio::sync::Mutex::new(Some(transaction))),
                last_used: Instant::now(),
                in_use: 0,
            },
        );
        let expires = time::OffsetDateTime::from(SystemTime::now() + self.idle_timeout);
        Ok(TransactionInfo {
            transaction_id,
            expires_at_utc: expires.format(&time::format_description::well_known::Rfc3339).ok(),
        })
    }

    /// The error for a call in `transaction_id`, which is not open.
    fn not_open(&self, table: &Table, transaction_id: &str) -> Error {
        let transaction_id = transaction_id.to_owned();
        match table.ended.get(&transaction_id).map(|(ended, _)| *ended) {
            Some(Ended::Committed) => Error::AtomicDecided {
                transaction_id: transaction_id.into(),
                state: "committed",
            },
            Some(Ended::RolledBack) => Error::AtomicDecided {
                transaction_id: transaction_id.into(),
                state: "rolled back",
            },
            Some(Ended::Expired) => Error::TransactionExpired { transaction_id },
            Some(Ended::CommitFailed) | None => Error::TransactionNotFound { transaction_id },
        }
    }

    /// Executes SQL on the shard `route` resolves to, inside `transaction_id`.
    pub(super) async fn execute(
        &self,
        transaction_id: &str,
        route: Option<&RouteContext>,
        sql: &str,
        params: Params,
    ) -> Result<SqlResult> {
        AtomicTransactionId::parse(transaction_id)?;
        let route = route.ok_or(Error::RouteRequired)?;
        let transaction = {
            let mut table = self.lock();
            match table.open.get_mut(transaction_id) {
                Some(entry) => {
                    entry.in_use += 1;
                    Arc::clone(&entry.transaction)
                }
                None => return Err(self.not_open(&table, transaction_id)),
            }
        };
        let outcome = match transaction.lock().await.as_mut() {
            Some(open) => open.execute(route, sql, params).await,
            None => Err(Error::TransactionNotFound {
                transaction_id: transaction_id.to_owned(),
            }),
        };
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = table.open.get_mut(transaction_id) {
            entry.in_use = entry.in_use.saturating_sub(1);
            entry.last_used = Instant::now();
        }
        outcome
    }

    /// Takes `transaction_id` out of the open ones, waiting for a call running in it.
    async fn take(&self, transaction_id: &str) -> Result<AtomicTransaction> {
        AtomicTransactionId::parse(transaction_id)?;
        let transaction = {
            let mut table = self.lock();
            match table.open.remove(transaction_id) {
                Some(entry) => entry.transaction,
                None => return Err(self.not_open(&table, transaction_id)),
            }
        };
        let taken = transaction.lock().await.take();
        taken.ok_or_else(|| Error::TransactionNotFound {
            transaction_id: transaction_id.to_owned(),
        })
    }

    fn remember(&self, transaction_id: &str, ended: Ended) {
        self.lock()
            .ended
            .insert(transaction_id.to_owned(), (ended, Instant::now()));
    }

    /// Commits `transaction_id` on every shard it wrote, or on none.
    pub(super) async fn commit(&self, transaction_id: &str) -> Result<()> {
        let transaction = self.take(transaction_id).await?;
        let outcome = transaction.commit().await;
        let ended = if outcome.is_ok() {
            Ended::Committed
        } else {
            Ended::CommitFailed
        };
        self.remember(transaction_id, ended);
        outcome
    }

    /// Rolls `transaction_id` back on every shard it touched.
    pub(super) async fn rollback(&self, transaction_id: &str) -> Result<()> {
        let transaction = self.take(transaction_id).await?;
        self.remember(transaction_id, Ended::RolledBack);
        transaction.rollback().await
    }

    /// Rolls back every open one (at shutdown).
    pub(super) async fn close(&self) {
        let open: Vec<_> = self.lock().open.drain().map(|(_, entry)| entry.transaction).collect();
        for transaction in open {
            if let Some(transaction) = transaction.lock().await.take() {
                let _ = transaction.rollback().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_ids_are_told_by_their_prefix() {
        assert!(is_atomic_id("csdbatomic:0123"));
        assert!(is_atomic_id("csdbatomic:"));
        assert!(!is_atomic_id("csdbatomicx:0"));
        assert!(!is_atomic_id("csdbshard:1:s0:x"));
    }
}
