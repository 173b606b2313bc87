//! What every phase of a data move's run shares: the [`Runner`] (the sharded client and the
//! progress observer), the run's [`Context`], the checkpoint, and the helpers that set the
//! run's state when it stops early. The phases import this file and nothing above them.

use std::sync::Arc;
use std::time::Duration;

use crate::catalog::Catalog;
use crate::client::ShardedClient;
use crate::data::now_utc;
use crate::data::{
    CatalogIssue, DataClient, IssueSeverity, OnlineProgress, ReshardPhase, ReshardResult, ReshardStatus,
};
use crate::engine::reshard::moving::MovingRows;
use crate::engine::{Database, Pin};
use crate::error::{Error, Result};
use crate::reshard::item_sql::ItemSql;
use crate::reshard::manifest::issue;

/// Progress of a migration, reported after every page copied and when its phase changes.
#[derive(Debug, Clone)]
pub struct CopyProgress {
    /// The migration.
    pub migration_id: String,
    /// The table or collection being copied.
    pub item: String,
    /// Rows copied so far (including pages copied before a resume).
    pub rows: u64,
    /// Rows the plan expected to move.
    pub estimated_rows: u64,
    /// The phase the migration is in (`copying table 'orders'`, and for online migrations
    /// `capturing`, `catching-up`, `cutover`, `activated`). A report of a phase change has a
    /// blank `item`.
    pub phase: ReshardPhase,
    /// Captured changes not yet applied to the destination (online migrations).
    pub remaining_changes: u64,
    /// How long the cutover refused writes, in milliseconds, once it is over.
    pub cutover_ms: Option<u64>,
}

type Observer = Arc<dyn Fn(&CopyProgress) + Send + Sync>;

/// What the phases of a run reach through: the sharded client (opened from a master catalog)
/// and the observer of progress.
#[derive(Clone)]
pub(super) struct Runner {
    pub(super) sharded: ShardedClient,
    pub(super) observer: Option<Observer>,
}

impl Runner {
    /// The catalog, where runs record the new map, their checkpoints and history.
    pub(super) fn catalog(&self) -> Result<&Catalog> {
        self.sharded.catalog().master().ok_or_else(|| Error::Catalog {
            reason: "migrations need a client opened from a master catalog, where they record the new map, their \
                     checkpoints and history"
                .to_owned(),
        })
    }
}

/// How long one copy or checksum job may keep a shard's connection before it hands it back to
/// other callers (at a page boundary); the copy goes on in the next job.
pub(super) const JOB_TIME: Duration = Duration::from_millis(100);

/// The least time between two catalog checkpoints of a copy inside SQLite: the catalog write
/// competes with the copy's own threads for the processor. The catalog's receipt is then the
/// copy's progress for status and progress reports only; where the copy resumes is the cursor
/// each page's own transaction records on the destination, which is never behind it.
pub(super) const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(25);

/// The clients and SQL one run needs.
pub(super) struct Context {
    pub(super) source: Arc<dyn DataClient>,
    pub(super) destination: Arc<dyn DataClient>,
    /// The engine of each side, when it is a file of this process: pages are then copied and
    /// checksummed inside SQLite.
    pub(super) local_source: Option<Database>,
    pub(super) local_destination: Option<Database>,
    pub(super) targets: Vec<ItemSql>,
    /// Each target's route column or property.
    pub(super) routes: Vec<String>,
    pub(super) moving: MovingRows,
    /// Keys (per target) of an online migration whose rows differed at the last comparison
    /// before the cutover (still being written): compared again in the cutover.
    pub(super) recheck: std::sync::Mutex<Vec<Vec<crate::data::Value>>>,
    /// Keeps the local files of both sides open for the whole run: a copy in progress is never
    /// closed under it to make room for other shards.
    pub(super) _kept_open: Vec<Pin>,
}

/// Records the run's state in the catalog, where status reads it and resume starts from it.
pub(super) async fn checkpoint(migrator: &Runner, state: &mut ReshardResult) -> Result<()> {
    state.updated_utc = now_utc();
    migrator.catalog()?.save_migration_checkpoint(state).await
}

/// The message of the first error-level issue, for a run's summary.
pub(super) fn first_error(issues: &[CatalogIssue]) -> String {
    issues
        .iter()
        .find(|i| i.severity == IssueSeverity::Error)
        .map_or_else(String::new, |i| i.message.clone())
}

/// The online progress of `state`, created on first use.
pub(super) fn progress(state: &mut ReshardResult) -> &mut OnlineProgress {
    state.online.get_or_insert_with(OnlineProgress::default)
}

/// Tells the observer (progress displays) that the run entered `state`'s phase.
pub(super) fn report_phase(migrator: &Runner, state: &ReshardResult) {
    if let Some(observer) = &migrator.observer {
        let online = state.online.clone().unwrap_or_default();
        observer(&CopyProgress {
            migration_id: state.migration_id.clone(),
            item: String::new(),
            rows: 0,
            estimated_rows: 0,
            phase: state.phase.clone(),
            remaining_changes: online.remaining_changes,
            cutover_ms: online.cutover_ms,
        });
    }
}

/// Rejects the migration because migration `other` already fences some of its moving rows.
pub(super) fn reject_fenced(state: &mut ReshardResult, context: &Context, other: &str) {
    let (code, what) = match context.moving {
        MovingRows::Key(ref key) => ("route-key-already-fenced", format!("route key '{key}'")),
        MovingRows::Buckets { start, end, .. } => {
            ("bucket-range-already-fenced", format!("bucket range [{start}, {end})"))
        }
    };
    let message = format!(
        "{what} is already fenced by migration '{other}' on shard '{}'",
        state.spec.source_shard_id
    );
    state.issues.push(issue(code, message.clone()));
    state.status = ReshardStatus::Rejected;
    state.phase = ReshardPhase::Rejected;
    state.message = format!("the migration was rejected: {message}");
}

/// Records that the destination did not verify.
pub(super) fn verification_failed(state: &mut ReshardResult) {
    state.status = ReshardStatus::VerificationFailed;
    state.phase = ReshardPhase::VerificationFailed;
    let failed: Vec<String> = state
        .receipts
        .iter()
        .filter(|r| !r.verified)
        .map(|r| r.name.clone())
        .collect();
    let fence = if state.spec.online {
        "writes of the moving keys go on (the capture stays)"
    } else {
        "the fence stays"
    };
    state.message = format!(
        "the data was copied but {} did not verify; the shard map was left unchanged and {fence} until the \
         migration is resumed",
        failed.join(", ")
    );
}
