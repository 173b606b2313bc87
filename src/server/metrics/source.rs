//! What the metrics read at scrape time rather than on every request: gauges that depend on the
//! engine and the catalog.

use std::collections::BTreeMap;

use crate::server::ServerState;
use crate::transaction::TransactionId;

/// One shard's gauges. `None` where the engine does not report the figure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardGauges {
    /// The shard id (the `shard` label).
    pub shard: String,
    /// Transactions open on the shard.
    pub open_transactions: Option<u64>,
    /// Jobs waiting for the shard's connections.
    pub queue_depth: Option<u64>,
}

/// The values a scrape reads from the engine and the catalog.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScrapeValues {
    /// Shards with an open, ready client.
    pub open_shards: Option<u64>,
    /// Per-shard gauges.
    pub shards: Vec<ShardGauges>,
    /// The active map's version (absent on a plain database).
    pub map_version: Option<u64>,
    /// Rows copied by the data migrations recorded in the catalog.
    pub migration_rows_copied: Option<u64>,
    /// Atomic transactions not finished everywhere, as the background resolver sees them (the
    /// open shard files that hold atomic state; absent unless sharded).
    pub atomic_unresolved: Option<u64>,
    /// When the newest backup set in the daemon's backup place was published, in seconds since
    /// the Unix epoch (0 before the first; absent without `--backup-dir`).
    pub backup_last_success: Option<u64>,
    /// The point-in-time archive's lag on each file being written, by shard id (`(master)` for
    /// the master catalog), in milliseconds (absent without `--archive-dir`).
    pub archive_lag_ms: Option<Vec<(String, u64)>>,
}

/// Where a scrape reads the engine-dependent values from. [`ServerState`] implements it with
/// what the engine reports today; an engine that tracks more (queue depths, per-shard
/// transactions) is reached by implementing this again.
#[async_trait::async_trait]
pub trait ScrapeSource: Send + Sync {
    /// Reads the values once, for one scrape.
    async fn scrape(&self) -> ScrapeValues;
}

#[async_trait::async_trait]
impl ScrapeSource for ServerState {
    /// Open shards: shard files open now (one for a plain database, the open files of a data
    /// host). Open transactions: the daemon's remote transactions by the shard their id names. Queue depth: jobs waiting on
    /// each in-process shard file (remote shards have no sample).
    async fn scrape(&self) -> ScrapeValues {
        let mut by_shard: BTreeMap<String, u64> = BTreeMap::new();
        let mut queued: BTreeMap<String, usize> = BTreeMap::new();
        let atomic_unresolved = match self.sharded() {
            Some(sharded) => match sharded.atomic_recovery().unresolved_in_open_files().await {
                Ok(found) => {
                    let ids: std::collections::BTreeSet<_> = found.into_iter().map(|u| u.transaction_id).collect();
                    u64::try_from(ids.len()).ok()
                }
                Err(err) => {
                    tracing::debug!(error = %err, "metrics: cannot read the unresolved atomic transactions");
                    None
                }
            },
            None => None,
        };
        let (open_shards, map_version, migration_rows_copied) = match self.sharded() {
            Some(sharded) => {
                let map = sharded.map();
                for shard in map.shards() {
                    by_shard.insert(shard.id.clone(), 0);
                }
                queued.extend(map.queued_jobs());
                let copied = match crate::reshard::Resharder::new(sharded.clone()).migrations().await {
                    Ok(migrations) => Some(
                        migrations
                            .iter()
                            .flat_map(|migration| &migration.receipts)
                            .map(|receipt| receipt.source_rows)
                            .sum(),
                    ),
                    Err(err) => {
                        tracing::debug!(error = %err, "metrics: cannot read the data migrations");
                        None
                    }
                };
                (
                    u64::try_from(sharded.shards().open_count()).ok(),
                    Some(map.version()),
                    copied,
                )
            }
            // A data host: its shard files open now; shards appear below only while they hold
            // an open transaction, so a host of many shards reports no row per idle file.
            None if self.host().is_some() => (
                self.host().and_then(|host| u64::try_from(host.open_shards()).ok()),
                None,
                None,
            ),
            None => {
                by_shard.insert("database".to_owned(), 0);
                (Some(1), None, None)
            }
        };
        let on_host = self.host().is_some();
        for id in self.open_transaction_ids() {
            let shard = match id.split_once(':') {
                // A data host's ids are `{shardId}:{innerId}`.
                Some((shard, _)) if on_host => shard.to_owned(),
                _ => id
                    .parse::<TransactionId>()
                    .map_or_else(|_| "database".to_owned(), |id| id.shard_id().to_owned()),
            };
            *by_shard.entry(shard).or_default() += 1;
        }
        let backup_last_success = self.config().backup_dir.as_deref().map(|place| {
            crate::backup::last_published(place)
                .ok()
                .flatten()
                .and_then(|at| at.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |since| since.as_secs())
        });
        let archive_lag_ms = crate::server::backups::archive_lags(self).map(|lags| {
            lags.into_iter()
                .map(|(shard, lag)| (shard, u64::try_from(lag.as_millis()).unwrap_or(u64::MAX)))
                .collect()
        });
        ScrapeValues {
            open_shards,
            shards: by_shard
                .into_iter()
                .map(|(shard, open)| ShardGauges {
                    queue_depth: queued.get(&shard).and_then(|depth| u64::try_from(*depth).ok()),
                    shard,
                    open_transactions: Some(open),
                })
                .collect(),
            map_version,
            migration_rows_copied,
            atomic_unresolved,
            backup_last_success,
            archive_lag_ms,
        }
    }
}
