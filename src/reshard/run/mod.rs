//! A data move's run: [`Resharder`], its requests, resume and abandon. The phases live one file
//! each: `admit` (request checks), `plan`, `drive` (the phase machine), `copy` (the two copy
//! strategies), `verify`, the online phases (`online`, `replay` of captured changes, `settle`,
//! their verification) and `activate`. What they share (the runner, the run's context, the
//! checkpoint and the early endings) is in `state`, which they import; only `drive` and this
//! file import the phases, so no phase imports the machine that runs it.
//!
//! The catalog holds each migration's state: its phase and, per table or collection, a receipt
//! of the copy (last key, counts, running checksum). Pages are upserted one transaction each,
//! and resume never copies a page the destination already committed:
//!
//! - Between two files of this process (`copy_inside`), each page's transaction on the
//!   destination also records the cursor after the page, so the destination's record is as far
//!   as its rows whatever stops the run. The catalog is checkpointed every
//!   [`CHECKPOINT_INTERVAL`](state::CHECKPOINT_INTERVAL) for progress; resume starts from the record when it is further
//!   along than the receipt (and updates the receipt from it).
//! - Through the data clients (`copy_through_clients`), each page is checkpointed in the
//!   catalog once the destination committed it and before the next is written, so a stopped
//!   run leaves at most one page beyond the checkpoint; resume reads that page back from the
//!   destination and writes it only when it is not already there.

mod activate;
mod admit;
mod copy;
mod drive;
mod online;
mod plan;
mod repair;
mod replay;
mod settle;
mod state;
mod verify;

use std::sync::Arc;

use super::fence::{self};
use crate::catalog::Catalog;
use crate::client::ShardedClient;
use crate::data::{
    ReshardAdmin, ReshardPhase, ReshardRequest, ReshardResult, ReshardScope, ReshardSpec, ReshardStatus, ResumeRequest,
};
use crate::error::{Error, Result};
pub use state::CopyProgress;
use state::{Runner, checkpoint};

/// Runs migrations through a [`ShardedClient`] opened from a master catalog.
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::client::ShardedClient;
/// use shardlite::data::{Audit, ReshardManifest, ReshardRequest, TableManifest};
/// use shardlite::reshard::Resharder;
///
/// let sharded = ShardedClient::open("data/master.db").await?;
/// let manifest = ReshardManifest {
///     tables: vec![TableManifest {
///         table_name: "orders".into(),
///         route_key_column: "tenant".into(),
///         primary_key_column: "id".into(),
///     }],
///     ..ReshardManifest::default()
/// };
/// let request = ReshardRequest::route_key("tenants", "tenant-42", "s1", manifest)
///     .activate()
///     .delete_source()
///     .audit(Audit::by("ada"));
/// let result = Resharder::new(sharded).migrate(request).await?;
/// println!("{:?}: {}", result.status, result.message);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Resharder {
    runner: Runner,
}

impl std::fmt::Debug for Resharder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resharder")
            .field("sharded", &self.runner.sharded)
            .finish_non_exhaustive()
    }
}

impl Resharder {
    /// A migrator over `sharded`, which must be opened from a master catalog.
    pub fn new(sharded: ShardedClient) -> Self {
        Self {
            runner: Runner {
                sharded,
                observer: None,
            },
        }
    }

    /// Calls `observer` after every page copied (for progress bars).
    pub fn with_observer(mut self, observer: impl Fn(&CopyProgress) + Send + Sync + 'static) -> Self {
        self.runner.observer = Some(Arc::new(observer));
        self
    }

    /// Moves the data of a route key or a bucket range, as `request`'s scope says, to another
    /// primary shard: a route key is then pinned there, a bucket range owned by it (its pinned
    /// keys stay where their pins put them). With `dry_run` it only plans.
    ///
    /// A request that cannot run comes back `Rejected` with issues naming each problem (not as
    /// an error); so do verification and catalog failures, with a recovery text.
    pub async fn migrate(&self, request: ReshardRequest) -> Result<ReshardResult> {
        let ReshardRequest {
            scope,
            destination_shard_id,
            manifest,
            migration_id,
            expected_current_map_version,
            dry_run,
            online,
            activate,
            delete_source,
            audit,
        } = request;
        let map = self.runner.sharded.map();
        let mut issues = Vec::new();
        let (scope, source) = admit::scope(scope, &map, &mut issues);
        let destination = destination_shard_id.trim().to_owned();
        admit::check_destination(&map, &source, &destination, &mut issues, || match &scope {
            ReshardScope::RouteKey { route_key, .. } => {
                format!("route key '{route_key}' already resolves to shard '{source}'")
            }
            ReshardScope::BucketRange {
                start_bucket_inclusive: start,
                end_bucket_exclusive: end,
                ..
            } => format!("bucket range [{start}, {end}) already belongs to shard '{source}'"),
        });
        let spec = ReshardSpec {
            scope,
            source_shard_id: source,
            destination_shard_id: destination,
            manifest,
            activate,
            delete_source,
            online,
            audit,
        };
        admit::start(
            &self.runner,
            spec,
            migration_id,
            expected_current_map_version,
            dry_run,
            issues,
        )
        .await
    }

    /// Continues migration `id` from its last checkpoint: pages already copied are not copied
    /// again, everything is verified again, and the phases after verification run as far as
    /// the migration (and `options`) asks. A migration that already ended successfully is
    /// returned as it is, so resuming twice does no harm. While another runner drives it, resuming
    /// is refused with [`Error::ReshardRunning`].
    ///
    /// A page can be on the destination without a checkpoint in the catalog (the run stopped
    /// between the two writes). Between files of this process each page's transaction also
    /// recorded the cursor after it on the destination, and the copy goes on from whichever of
    /// that record and the catalog is further along; through the data clients, the first page
    /// after the checkpoint is read back from the destination and written only if it is not
    /// already there. After `VerificationFailed` everything is copied again.
    pub async fn resume(&self, id: &str, options: ResumeRequest) -> Result<ReshardResult> {
        let catalog = self.runner.catalog()?;
        let id = id.trim();
        if id.is_empty() {
            return Err(Error::invalid_argument("migration id", "it is blank"));
        }
        // Held until this run ends: a second resume is refused meanwhile.
        let claim = catalog.claim_migration(id).await?;
        let result = self.resume_claimed(catalog, id, options).await;
        claim.release().await;
        result
    }

    /// [`resume`](Self::resume) once the run holds the migration's claim.
    async fn resume_claimed(&self, catalog: &Catalog, id: &str, options: ResumeRequest) -> Result<ReshardResult> {
        let mut state = catalog.migration(id).await?.ok_or_else(|| Error::NotFound {
            what: "migration",
            name: id.into(),
        })?;
        let activate = state.spec.activate || options.activate;
        let delete_source = state.spec.delete_source || options.delete_source;
        if delete_source && !activate {
            return Err(Error::invalid_argument(
                "resume options",
                "deleting the source rows needs activation: resume with activation too",
            ));
        }
        let finished = match state.status {
            ReshardStatus::Rejected | ReshardStatus::Planned => {
                return Err(Error::invalid_argument(
                    "migration id",
                    format!("migration '{id}' was rejected and never started: start a new one"),
                ));
            }
            // A run stopped right after activation may have left its change capture behind.
            ReshardStatus::Activated => {
                (!delete_source || state.phase == ReshardPhase::SourceDeleted)
                    && !state.online.as_ref().is_some_and(|online| online.capturing)
            }
            ReshardStatus::PendingActivation => !activate,
            _ => false,
        };
        if finished {
            return Ok(state);
        }
        state.spec.activate = activate;
        state.spec.delete_source = delete_source;
        let copy_again = state.status == ReshardStatus::VerificationFailed;
        if copy_again {
            // The destination was repaired (or will be compared afresh): copy everything again.
            for receipt in &mut state.receipts {
                *receipt = plan::fresh_receipt(&receipt.name, receipt.collection);
            }
        }
        if state.status != ReshardStatus::Activated {
            state.status = if state.pending_map_version.is_some() {
                ReshardStatus::PendingActivation
            } else {
                ReshardStatus::Running
            };
        }
        state.attempt += 1;
        state.issues.clear();
        state.completed_utc = None;
        state.requires_operator_recovery = false;
        state.recovery_action = None;
        let map = self.runner.sharded.map();
        let context = plan::context(&self.runner, &state.spec, &map).await?;
        if copy_again && let Some(destination) = &context.local_destination {
            // The cursors the destination recorded belong to the copy being redone.
            destination.moves().clear_copy_cursors(&state.migration_id).await?;
        }
        checkpoint(&self.runner, &mut state).await?;
        drive::drive(&self.runner, state, context).await
    }

    /// Gives up a migration that has not changed the map (the explicit recovery for a fence a
    /// crash or a failure left behind): releases its fence and removes its change capture, so
    /// writes of its keys on the source go on as before, and records it as `Failed` in phase `abandoned`. Rows already copied to the
    /// destination stay there (running the migration again upserts them). Refused once the
    /// migration has written its new map: finish it with [`resume`](Self::resume) instead.
    pub async fn abandon(&self, id: &str) -> Result<ReshardResult> {
        let catalog = self.runner.catalog()?;
        let id = id.trim();
        // A running migration is not abandoned under its runner.
        let claim = catalog.claim_migration(id).await?;
        let result = self.abandon_claimed(catalog, id).await;
        claim.release().await;
        result
    }

    /// [`abandon`](Self::abandon) once this process holds the migration's claim.
    async fn abandon_claimed(&self, catalog: &Catalog, id: &str) -> Result<ReshardResult> {
        let mut state = catalog.migration(id).await?.ok_or_else(|| Error::NotFound {
            what: "migration",
            name: id.into(),
        })?;
        if let Some(version) = state.pending_map_version {
            return Err(Error::invalid_argument(
                "migration id",
                format!(
                    "migration '{id}' already wrote map version {version}, which routes its keys to the destination: \
                     finish it with resume (and activation) instead"
                ),
            ));
        }
        if matches!(state.status, ReshardStatus::Rejected | ReshardStatus::Planned) {
            return Err(Error::invalid_argument(
                "migration id",
                format!("migration '{id}' was rejected and holds no fence"),
            ));
        }
        let source = self.runner.sharded.for_shard_id(&state.spec.source_shard_id)?;
        fence::release(&source, &state.migration_id).await?;
        let items = state.spec.manifest.tables.len() + state.spec.manifest.collections.len();
        super::capture::remove(&source, &state.migration_id, items).await?;
        if let Some(online) = state.online.as_mut() {
            online.capturing = false;
        }
        state.status = ReshardStatus::Failed;
        state.phase = ReshardPhase::Abandoned;
        state.message = "abandoned by the operator: the fence was released and the shard map left unchanged; rows \
                         already copied to the destination stay there"
            .to_owned();
        activate::finish(&self.runner, &mut state).await;
        Ok(state)
    }

    /// The state of migration `id`, as last checkpointed.
    pub async fn status(&self, id: &str) -> Result<Option<ReshardResult>> {
        self.runner.catalog()?.migration(id.trim()).await
    }

    /// Every migration's latest state, most recently updated first.
    pub async fn migrations(&self) -> Result<Vec<ReshardResult>> {
        self.runner.catalog()?.migrations().await
    }

    /// The migration history: one entry per run that ended, newest first.
    pub async fn history(&self) -> Result<Vec<ReshardResult>> {
        self.runner.catalog()?.migration_history().await
    }
}
#[async_trait::async_trait]
impl ReshardAdmin for Resharder {
    async fn start_migration(&self, request: &ReshardRequest) -> Result<ReshardResult> {
        self.migrate(request.clone()).await
    }

    async fn resume_migration(&self, migration_id: &str, options: &ResumeRequest) -> Result<ReshardResult> {
        self.resume(migration_id, *options).await
    }

    async fn migration_progress(&self, migration_id: &str) -> Result<ReshardResult> {
        self.status(migration_id).await?.ok_or_else(|| Error::NotFound {
            what: "migration",
            name: migration_id.trim().into(),
        })
    }

    async fn migrations(&self) -> Result<Vec<ReshardResult>> {
        Resharder::migrations(self).await
    }

    async fn migration_history(&self) -> Result<Vec<ReshardResult>> {
        self.history().await
    }

    async fn abandon_migration(&self, migration_id: &str) -> Result<ReshardResult> {
        self.abandon(migration_id).await
    }
}
