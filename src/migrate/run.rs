//! The migration phases, their checkpoints, and resume.
//!
//! The catalog holds each migration's state: its phase and, per table or collection, a receipt
//! of the copy (last key, counts, running checksum). Pages are upserted one transaction each,
//! and resume never copies a page the destination already committed:
//!
//! - Between two files of this process (`copy_inside`), each page's transaction on the
//!   destination also records the cursor after the page, so the destination's record is as far
//!   as its rows whatever stops the run. The catalog is checkpointed every
//!   [`CHECKPOINT_INTERVAL`] for progress; resume starts from the record when it is further
//!   along than the receipt (and updates the receipt from it).
//! - Through the data clients (`copy_through_clients`), each page is checkpointed in the
//!   catalog once the destination committed it and before the next is written, so a stopped
//!   run leaves at most one page beyond the checkpoint; resume reads that page back from the
//!   destination and writes it only when it is not already there.

use std::sync::Arc;
use std::time::Duration;

use super::fence::{self, Fence};
use super::manifest::{self, issue};
use super::target::{Checksum, Selection, Target};
use crate::catalog::{Catalog, diff};
use crate::client::ShardedClient;
use crate::data::{
    ActivationRequest, BucketMigrationRequest, CatalogIssue, CatalogUpdateRequest, DataClient, IssueSeverity,
    KeyMigrationRequest, MigrationAdmin, MigrationKind, MigrationPlan, MigrationReceipt, MigrationResult,
    MigrationSpec, MigrationStatus, Params, PlannedItem, ResumeRequest, TransactionOptions, Value,
};
use crate::engine::Database;
use crate::engine::copy::{PageCursor, PagedCopy};
use crate::engine::store::now_utc;
use crate::error::{Error, ErrorKind, Result};
use crate::map::{BucketRange, ShardMap, ShardRole, ShardingOptions};
use crate::routing::keyspace_eq;

/// Progress of a copy, reported after every page.
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
}

type Observer = Arc<dyn Fn(&CopyProgress) + Send + Sync>;

/// Runs migrations through a [`ShardedClient`] opened from a master catalog.
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::client::ShardedClient;
/// use shardlite::data::{KeyMigrationRequest, MigrationManifest, TableManifest};
/// use shardlite::migrate::Migrator;
///
/// let sharded = ShardedClient::open("data/master.db").await?;
/// let result = Migrator::new(sharded)
///     .migrate_key(KeyMigrationRequest {
///         keyspace: "tenants".into(),
///         route_key: "tenant-42".into(),
///         destination_shard_id: "s1".into(),
///         manifest: MigrationManifest {
///             page_size: None,
///             tables: vec![TableManifest {
///                 table_name: "orders".into(),
///                 route_key_column: "tenant".into(),
///                 primary_key_column: "id".into(),
///             }],
///             collections: vec![],
///         },
///         migration_id: None,
///         expected_current_map_version: None,
///         dry_run: false,
///         activate: true,
///         delete_source: true,
///         operator: Some("ada".into()),
///         comment: None,
///     })
///     .await?;
/// println!("{:?}: {}", result.status, result.message);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Migrator {
    sharded: ShardedClient,
    observer: Option<Observer>,
}

impl std::fmt::Debug for Migrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Migrator")
            .field("sharded", &self.sharded)
            .finish_non_exhaustive()
    }
}

/// How long one copy or checksum job may keep a shard's connection before it hands it back to
/// other callers (at a page boundary); the copy goes on in the next job.
const JOB_TIME: Duration = Duration::from_millis(100);

/// The least time between two catalog checkpoints of a copy inside SQLite: the catalog write
/// competes with the copy's own threads for the processor. The catalog's receipt is then the
/// copy's progress for status and progress reports only; where the copy resumes is the cursor
/// each page's own transaction records on the destination, which is never behind it.
const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(25);

/// The clients and SQL one run needs.
struct Context {
    source: Arc<dyn DataClient>,
    destination: Arc<dyn DataClient>,
    /// The engine of each side, when it is a file of this process: pages are then copied and
    /// checksummed inside SQLite.
    local_source: Option<Database>,
    local_destination: Option<Database>,
    targets: Vec<Target>,
    /// Each target's route column or property.
    routes: Vec<String>,
    selection: Selection,
    pins: Vec<String>,
}

impl Migrator {
    /// A migrator over `sharded`, which must be opened from a master catalog.
    pub fn new(sharded: ShardedClient) -> Self {
        Self {
            sharded,
            observer: None,
        }
    }

    /// Calls `observer` after every page copied (for progress bars).
    pub fn with_observer(mut self, observer: impl Fn(&CopyProgress) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    fn catalog(&self) -> Result<&Catalog> {
        self.sharded.catalog().ok_or_else(|| Error::Catalog {
            reason: "migrations need a client opened from a master catalog, where they record the new map, their \
                     checkpoints and history"
                .to_owned(),
        })
    }

    /// Moves the data of one route key to another primary shard and pins the key there.
    ///
    /// A request that cannot run comes back `Rejected` with issues naming each problem (not as
    /// an error); so do verification and catalog failures, with a recovery text.
    pub async fn migrate_key(&self, request: KeyMigrationRequest) -> Result<MigrationResult> {
        let map = self.sharded.map();
        let mut issues = Vec::new();
        let keyspace = self.keyspace_of(&request.keyspace, &map, &mut issues);
        let key = request.route_key.trim().to_owned();
        if key.is_empty() {
            issues.push(issue("missing-route-key", "the route key is blank".to_owned()));
        }
        let mut source = String::new();
        if !key.is_empty() && issues.is_empty() {
            match map.resolve(&keyspace, &key) {
                Ok(resolution) => source = resolution.shard_id.to_owned(),
                Err(err) => issues.push(issue("source-shard-unavailable", err.to_string())),
            }
        }
        let destination = request.destination_shard_id.trim().to_owned();
        check_destination(&map, &source, &destination, &mut issues, || {
            format!("route key '{key}' already resolves to shard '{source}'")
        });
        let spec = MigrationSpec {
            kind: MigrationKind::ExactRouteKey,
            keyspace,
            route_key: Some(key),
            start_bucket_inclusive: None,
            end_bucket_exclusive: None,
            source_shard_id: source,
            destination_shard_id: destination,
            manifest: request.manifest,
            activate: request.activate,
            delete_source: request.delete_source,
            operator: request.operator,
            comment: request.comment,
        };
        self.start(
            spec,
            request.migration_id,
            request.expected_current_map_version,
            request.dry_run,
            issues,
        )
        .await
    }

    /// Moves the data of the buckets `[start, end)` from their source shard to another primary
    /// shard. Pinned keys stay where their pins put them.
    pub async fn migrate_buckets(&self, request: BucketMigrationRequest) -> Result<MigrationResult> {
        let map = self.sharded.map();
        let mut issues = Vec::new();
        let keyspace = self.keyspace_of(&request.keyspace, &map, &mut issues);
        let (start, end) = (request.start_bucket_inclusive, request.end_bucket_exclusive);
        let source = request.source_shard_id.trim().to_owned();
        match map.shard(&source) {
            None => issues.push(issue(
                "unknown-source-shard",
                format!("source shard '{source}' is not defined in the shard map"),
            )),
            Some(shard) if !shard.enabled => issues.push(issue(
                "source-shard-disabled",
                format!("source shard '{source}' is disabled"),
            )),
            Some(_) => {}
        }
        if start >= end || end > map.bucket_count() {
            issues.push(issue(
                "invalid-bucket-range",
                format!(
                    "bucket range [{start}, {end}) is empty or outside the {} virtual buckets",
                    map.bucket_count()
                ),
            ));
        } else if let Some(index) = map.shard_index(&source)
            && (start..end).any(|bucket| map.bucket_owner(bucket) != index)
        {
            issues.push(issue(
                "source-does-not-own-bucket-range",
                format!("source shard '{source}' does not own every bucket of [{start}, {end})"),
            ));
        }
        let destination = request.destination_shard_id.trim().to_owned();
        check_destination(&map, &source, &destination, &mut issues, || {
            format!("bucket range [{start}, {end}) already belongs to shard '{source}'")
        });
        let spec = MigrationSpec {
            kind: MigrationKind::BucketRange,
            keyspace,
            route_key: None,
            start_bucket_inclusive: Some(start),
            end_bucket_exclusive: Some(end),
            source_shard_id: source,
            destination_shard_id: destination,
            manifest: request.manifest,
            activate: request.activate,
            delete_source: request.delete_source,
            operator: request.operator,
            comment: request.comment,
        };
        self.start(
            spec,
            request.migration_id,
            request.expected_current_map_version,
            request.dry_run,
            issues,
        )
        .await
    }

    fn keyspace_of(&self, keyspace: &str, map: &ShardMap, issues: &mut Vec<CatalogIssue>) -> String {
        if keyspace_eq(keyspace.trim(), map.keyspace()) {
            map.keyspace().to_owned()
        } else {
            issues.push(issue(
                "keyspace-mismatch",
                format!(
                    "keyspace '{}' is not the shard map's keyspace '{}'",
                    keyspace.trim(),
                    map.keyspace()
                ),
            ));
            keyspace.trim().to_owned()
        }
    }

    /// Common checks, then the plan, then (unless a dry run) the phases.
    async fn start(
        &self,
        spec: MigrationSpec,
        id: Option<String>,
        expected_version: Option<u64>,
        dry_run: bool,
        mut issues: Vec<CatalogIssue>,
    ) -> Result<MigrationResult> {
        let map = self.sharded.map();
        let id = match id.as_deref().map(str::trim) {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => new_migration_id(),
        };
        match self.sharded.catalog() {
            None => issues.push(issue(
                "catalog-required",
                "migrations need a client opened from a master catalog".to_owned(),
            )),
            Some(catalog) => {
                if catalog.migration(&id).await?.is_some() {
                    issues.push(issue(
                        "migration-id-exists",
                        format!("migration '{id}' already exists: resume it, or choose another id"),
                    ));
                }
                if let Some(pending) = catalog.pending_options().await? {
                    issues.push(issue(
                        "pending-map-exists",
                        format!(
                            "the catalog holds a pending map (version {}): activate it first, so the migration \
                             builds on the map that will be active",
                            pending.map_version
                        ),
                    ));
                }
            }
        }
        if let Some(expected) = expected_version
            && expected != map.version()
        {
            issues.push(issue(
                "map-version-mismatch",
                format!(
                    "expected active map version {expected}, but the active version is {}",
                    map.version()
                ),
            ));
        }
        if spec.delete_source && !spec.activate {
            issues.push(issue(
                "delete-source-requires-activation",
                "deleting the source rows needs activation in the same run: until the new map is active the \
                 source still owns them"
                    .to_owned(),
            ));
        }
        issues.extend(manifest::check(&spec.manifest));
        let now = now_utc();
        let mut state = MigrationResult {
            migration_id: id,
            status: MigrationStatus::Running,
            phase: "validated".to_owned(),
            message: String::new(),
            spec,
            plan: None,
            map_version: map.version(),
            pending_map_version: None,
            requires_operator_recovery: false,
            recovery_action: None,
            receipts: Vec::new(),
            issues,
            attempt: 1,
            started_utc: now.clone(),
            updated_utc: now,
            completed_utc: None,
        };
        let context = if state.issues.is_empty() {
            match self.context(&state.spec, &map).await {
                Ok(context) => Some(context),
                Err(err) => {
                    state.issues.push(issue("manifest-mismatch", err.to_string()));
                    None
                }
            }
        } else {
            None
        };
        let Some(context) = context else {
            state.status = MigrationStatus::Rejected;
            state.phase = "rejected".to_owned();
            state.message = format!("the migration was rejected: {}", first_error(&state.issues));
            // A rejection is recorded under its id, unless the id belongs to another migration.
            let id_taken = state.issues.iter().any(|i| i.code == "migration-id-exists");
            if !dry_run && !id_taken && self.sharded.catalog().is_some() {
                self.finish(&mut state).await;
            }
            return Ok(state);
        };
        let plan = self.plan(&state.spec, &map, &context).await?;
        for item in plan
            .items
            .iter()
            .filter(|item| !item.route_index && item.estimated_rows > 0)
        {
            if state.spec.kind == MigrationKind::ExactRouteKey {
                state.issues.push(CatalogIssue {
                    severity: IssueSeverity::Warning,
                    code: "no-route-index".to_owned(),
                    message: format!(
                        "no index covers the route filter of {} '{}': every page scans it; create an index on its \
                         route column",
                        if item.collection { "collection" } else { "table" },
                        item.name
                    ),
                });
            }
        }
        state.plan = Some(plan);
        if dry_run {
            state.status = MigrationStatus::Planned;
            state.phase = "planned".to_owned();
            state.message = "dry run: this is the plan; nothing was changed".to_owned();
            return Ok(state);
        }
        state.receipts = context
            .targets
            .iter()
            .map(|t| fresh_receipt(&t.name, t.collection))
            .collect();
        // A record under this id can only be a leftover (the catalog knew no such migration):
        // the copy must not resume from it.
        if let Some(destination) = &context.local_destination {
            destination.clear_copy_cursors(&state.migration_id).await?;
        }
        self.checkpoint(&mut state).await?;
        self.drive(state, context).await
    }

    /// Continues migration `id` from its last checkpoint: pages already copied are not copied
    /// again, everything is verified again, and the phases after verification run as far as
    /// the migration (and `options`) asks. A migration that already ended successfully is
    /// returned as it is, so resuming twice does no harm.
    ///
    /// A page can be on the destination without a checkpoint in the catalog (the run stopped
    /// between the two writes). Between files of this process each page's transaction also
    /// recorded the cursor after it on the destination, and the copy goes on from whichever of
    /// that record and the catalog is further along; through the data clients, the first page
    /// after the checkpoint is read back from the destination and written only if it is not
    /// already there. After `VerificationFailed` everything is copied again.
    pub async fn resume(&self, id: &str, options: ResumeRequest) -> Result<MigrationResult> {
        let catalog = self.catalog()?;
        let id = id.trim();
        if id.is_empty() {
            return Err(Error::invalid_argument("migration id", "it is blank"));
        }
        let mut state = catalog.migration(id).await?.ok_or_else(|| Error::NotFound {
            what: "migration",
            name: id.to_owned(),
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
            MigrationStatus::Rejected | MigrationStatus::Planned => {
                return Err(Error::invalid_argument(
                    "migration id",
                    format!("migration '{id}' was rejected and never started: start a new one"),
                ));
            }
            MigrationStatus::Activated => !delete_source || state.phase == "source-deleted",
            MigrationStatus::PendingActivation => !activate,
            _ => false,
        };
        if finished {
            return Ok(state);
        }
        state.spec.activate = activate;
        state.spec.delete_source = delete_source;
        let copy_again = state.status == MigrationStatus::VerificationFailed;
        if copy_again {
            // The destination was repaired (or will be compared afresh): copy everything again.
            for receipt in &mut state.receipts {
                *receipt = fresh_receipt(&receipt.name, receipt.collection);
            }
        }
        if state.status != MigrationStatus::Activated {
            state.status = if state.pending_map_version.is_some() {
                MigrationStatus::PendingActivation
            } else {
                MigrationStatus::Running
            };
        }
        state.attempt += 1;
        state.issues.clear();
        state.completed_utc = None;
        state.requires_operator_recovery = false;
        state.recovery_action = None;
        let map = self.sharded.map();
        let context = self.context(&state.spec, &map).await?;
        if copy_again && let Some(destination) = &context.local_destination {
            // The cursors the destination recorded belong to the copy being redone.
            destination.clear_copy_cursors(&state.migration_id).await?;
        }
        self.checkpoint(&mut state).await?;
        self.drive(state, context).await
    }

    /// Gives up a migration that has not changed the map (the explicit recovery for a fence a
    /// crash or a failure left behind): releases its fence, so writes of its keys on the source
    /// go on, and records it as `Failed` in phase `abandoned`. Rows already copied to the
    /// destination stay there (running the migration again upserts them). Refused once the
    /// migration has written its new map: finish it with [`resume`](Self::resume) instead.
    pub async fn abandon(&self, id: &str) -> Result<MigrationResult> {
        let catalog = self.catalog()?;
        let id = id.trim();
        let mut state = catalog.migration(id).await?.ok_or_else(|| Error::NotFound {
            what: "migration",
            name: id.to_owned(),
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
        if matches!(state.status, MigrationStatus::Rejected | MigrationStatus::Planned) {
            return Err(Error::invalid_argument(
                "migration id",
                format!("migration '{id}' was rejected and holds no fence"),
            ));
        }
        let source = self.sharded.for_shard_id(&state.spec.source_shard_id)?;
        fence::release(&source, &state.migration_id).await?;
        state.status = MigrationStatus::Failed;
        state.phase = "abandoned".to_owned();
        state.message = "abandoned by the operator: the fence was released and the shard map left unchanged; rows \
                         already copied to the destination stay there"
            .to_owned();
        self.finish(&mut state).await;
        Ok(state)
    }

    /// The state of migration `id`, as last checkpointed.
    pub async fn status(&self, id: &str) -> Result<Option<MigrationResult>> {
        self.catalog()?.migration(id.trim()).await
    }

    /// Every migration's latest state, most recently updated first.
    pub async fn migrations(&self) -> Result<Vec<MigrationResult>> {
        self.catalog()?.migrations().await
    }

    /// The migration history: one entry per run that ended, newest first.
    pub async fn history(&self) -> Result<Vec<MigrationResult>> {
        self.catalog()?.migration_history().await
    }

    async fn context(&self, spec: &MigrationSpec, map: &ShardMap) -> Result<Context> {
        let source = self.sharded.for_shard_id(&spec.source_shard_id)?;
        let destination = self.sharded.for_shard_id(&spec.destination_shard_id)?;
        let pins: Vec<String> = map
            .options()
            .exact_key_pins
            .keys()
            .map(|k| k.trim().to_owned())
            .collect();
        let selection = Selection::of(spec, map.bucket_count(), pins.clone());
        let page_size = manifest::page_size(&spec.manifest);
        let mut targets = Vec::new();
        let mut routes = Vec::new();
        for table in &spec.manifest.tables {
            let name = table.table_name.trim();
            let schema = source.table_schema(name).await.map_err(|err| {
                Error::invalid_argument(
                    "manifest",
                    format!(
                        "table '{name}' cannot be read on source shard '{}': {err}",
                        spec.source_shard_id
                    ),
                )
            })?;
            destination.table_schema(name).await.map_err(|err| {
                Error::invalid_argument(
                    "manifest",
                    format!(
                        "table '{name}' cannot be read on destination shard '{}' (create the schema there first): {err}",
                        spec.destination_shard_id
                    ),
                )
            })?;
            let columns: Vec<String> = schema.columns.iter().map(|c| c.name.clone()).collect();
            let target = Target::table(
                &schema.name,
                &columns,
                table.primary_key_column.trim(),
                table.route_key_column.trim(),
                selection.clone(),
                page_size,
            )
            .ok_or_else(|| {
                Error::invalid_argument(
                    "manifest",
                    format!(
                        "table '{name}' has no column '{}' or '{}' (its columns: {})",
                        table.primary_key_column.trim(),
                        table.route_key_column.trim(),
                        columns.join(", ")
                    ),
                )
            })?;
            let route = columns
                .iter()
                .find(|c| c.eq_ignore_ascii_case(table.route_key_column.trim()))
                .cloned()
                .unwrap_or_default();
            targets.push(target);
            routes.push(route);
        }
        for collection in &spec.manifest.collections {
            let property = collection.route_key_property.trim();
            targets.push(Target::collection(
                collection.collection_name.trim(),
                property,
                selection.clone(),
                page_size,
            ));
            routes.push(property.to_owned());
        }
        Ok(Context {
            source,
            destination,
            local_source: self
                .sharded
                .local_shard(&spec.source_shard_id)
                .map(|local| local.database().clone()),
            local_destination: self
                .sharded
                .local_shard(&spec.destination_shard_id)
                .map(|local| local.database().clone()),
            targets,
            routes,
            selection,
            pins,
        })
    }

    async fn plan(&self, spec: &MigrationSpec, map: &ShardMap, context: &Context) -> Result<MigrationPlan> {
        let mut items = Vec::new();
        for target in &context.targets {
            let (sql, params) = target.count_query();
            let count = context.source.execute_read_only_sql(&sql, params).await?;
            let (sql, params) = target.explain_query();
            let explained = context.source.execute_read_only_sql(&sql, params).await?;
            let detail_index = explained.column_names.iter().position(|c| c == "detail").unwrap_or(3);
            let query_plan: Vec<String> = explained
                .rows
                .iter()
                .filter_map(|row| row.get(detail_index).and_then(Value::as_str).map(str::to_owned))
                .collect();
            let route_index = query_plan.iter().any(|step| {
                (step.contains("USING INDEX") || step.contains("USING COVERING INDEX")) && step.contains("=?")
            });
            items.push(PlannedItem {
                name: target.name.clone(),
                collection: target.collection,
                estimated_rows: first_u64(&count.rows),
                route_index,
                query_plan: query_plan.join("; "),
            });
        }
        let proposed = ShardMap::new(proposed_options(map, spec))?;
        let changes = diff(map, &proposed);
        Ok(MigrationPlan {
            items,
            moved_buckets: changes.moved_buckets,
            moved_pins: changes.moved_pins,
            proposed_map_version: proposed.version(),
        })
    }

    async fn checkpoint(&self, state: &mut MigrationResult) -> Result<()> {
        state.updated_utc = now_utc();
        self.catalog()?.save_migration_checkpoint(state).await
    }

    /// Runs the phases, then records how the run ended.
    async fn drive(&self, mut state: MigrationResult, context: Context) -> Result<MigrationResult> {
        if let Err(err) = self.phases(&mut state, &context).await {
            state.status = MigrationStatus::Failed;
            state.phase = "failed".to_owned();
            state.message = if state.pending_map_version.is_some() {
                format!("the migration stopped after writing the new map: {err}")
            } else {
                format!("the migration stopped and the shard map was left unchanged: {err}")
            };
            state.issues.push(issue("migration-failed", err.to_string()));
        }
        self.finish(&mut state).await;
        Ok(state)
    }

    async fn phases(&self, state: &mut MigrationResult, context: &Context) -> Result<()> {
        if state.status != MigrationStatus::Activated {
            fence::clear_moved(&context.destination, &context.selection).await?;
            let fence = Fence {
                migration_id: &state.migration_id,
                selection: &context.selection,
                pins: &context.pins,
                destination: &state.spec.destination_shard_id,
                targets: fence::targets_of(&context.targets, &context.routes),
            };
            if let Some(other) = fence::install(&context.source, &fence).await? {
                let (code, what) = match context.selection {
                    Selection::Key(ref key) => ("route-key-already-fenced", format!("route key '{key}'")),
                    Selection::Buckets { start, end, .. } => {
                        ("bucket-range-already-fenced", format!("bucket range [{start}, {end})"))
                    }
                };
                let message = format!(
                    "{what} is already fenced by migration '{other}' on shard '{}'",
                    state.spec.source_shard_id
                );
                state.issues.push(issue(code, message.clone()));
                state.status = MigrationStatus::Rejected;
                state.phase = "rejected".to_owned();
                state.message = format!("the migration was rejected: {message}");
                return Ok(());
            }
            if state.phase == "validated" {
                state.phase = "fenced".to_owned();
                self.checkpoint(state).await?;
            }
        }
        if state.pending_map_version.is_none() {
            for index in 0..context.targets.len() {
                self.copy(state, context, index).await?;
            }
            if !self.verify(state, context).await? {
                state.status = MigrationStatus::VerificationFailed;
                state.phase = "verification-failed".to_owned();
                let failed: Vec<String> = state
                    .receipts
                    .iter()
                    .filter(|r| !r.verified)
                    .map(|r| r.name.clone())
                    .collect();
                state.message = format!(
                    "the data was copied but {} did not verify; the shard map was left unchanged and the fence \
                     stays until the migration is resumed",
                    failed.join(", ")
                );
                return Ok(());
            }
            state.phase = "verified".to_owned();
            self.checkpoint(state).await?;
            if !self.write_pending(state).await? {
                state.status = MigrationStatus::CatalogApplyFailed;
                state.phase = "catalog-apply-failed".to_owned();
                state.message = format!(
                    "the data was verified, but the pending map could not be written ({}); the shard map was left \
                     unchanged",
                    first_error(&state.issues)
                );
                return Ok(());
            }
            state.status = MigrationStatus::PendingActivation;
            state.phase = "pending-map-written".to_owned();
            self.checkpoint(state).await?;
        }
        let pending = state.pending_map_version.unwrap_or(0);
        if state.status != MigrationStatus::Activated {
            let active = self.catalog()?.active_version().await?;
            if active != Some(pending) {
                if !state.spec.activate {
                    state.message = format!(
                        "verified; pending map version {pending} was written: activate it (shardlite catalog \
                         activate, or resume this migration with activation)"
                    );
                    return Ok(());
                }
                self.sharded
                    .activate_pending_map(&ActivationRequest {
                        expected_pending_map_version: pending,
                        operator: state.spec.operator.clone(),
                        comment: Some(format!("migration {}", state.migration_id)),
                    })
                    .await?;
            }
            fence::mark_moved(&context.source, &state.migration_id).await?;
            state.status = MigrationStatus::Activated;
            state.phase = "activated".to_owned();
            self.checkpoint(state).await?;
        }
        if state.spec.delete_source && state.phase != "source-deleted" {
            for (index, target) in context.targets.iter().enumerate() {
                loop {
                    let deleted = fence::delete_page(&context.source, &state.migration_id, target).await?;
                    if deleted == 0 {
                        break;
                    }
                    state.receipts[index].source_rows_deleted += deleted;
                    self.checkpoint(state).await?;
                }
            }
            state.phase = "source-deleted".to_owned();
        }
        let deleted: u64 = state.receipts.iter().map(|r| r.source_rows_deleted).sum();
        state.message = if state.spec.delete_source {
            format!("verified and activated map version {pending}; {deleted} source rows deleted")
        } else {
            format!(
                "verified and activated map version {pending}; the source rows are still there (not asked to delete them)"
            )
        };
        Ok(())
    }

    /// Copies the remaining pages of one target, checkpointing as it goes: inside SQLite when
    /// both shards are files of this process (and the source's path can be attached), else
    /// through the data clients.
    async fn copy(&self, state: &mut MigrationResult, context: &Context, index: usize) -> Result<()> {
        if state.receipts[index].copied {
            return Ok(());
        }
        match (&context.local_source, &context.local_destination) {
            (Some(source), Some(destination)) if source.path().to_str().is_some() => {
                let copy = Arc::new(context.targets[index].paged_copy(&state.migration_id));
                self.copy_inside(state, context, index, (source, destination), copy)
                    .await
            }
            _ => self.copy_through_clients(state, context, index).await,
        }
    }

    /// Copies between two files of this process inside SQLite: a reader of the source hashes
    /// each page while the destination's writer, with the source attached, upserts the page
    /// before by `INSERT ... SELECT` and records the cursor after it on the destination, both in
    /// one transaction. The copy does not wait for the catalog: after each page it publishes its
    /// cursor, and the newest cursor is checkpointed in the catalog at most every
    /// [`CHECKPOINT_INTERVAL`] and when a job ends. The copy starts from the destination's
    /// record when it is ahead of the catalog's receipt (pages committed after the last
    /// checkpoint of a run that stopped), so no page is copied twice.
    async fn copy_inside(
        &self,
        state: &mut MigrationResult,
        context: &Context,
        index: usize,
        (source, destination): (&Database, &Database),
        copy: Arc<PagedCopy>,
    ) -> Result<()> {
        let receipt = &state.receipts[index];
        let mut cursor = PageCursor {
            after: receipt.last_key.clone(),
            checksum: Checksum::from_hex(&receipt.source_checksum)?.link(),
            rows: receipt.source_rows,
            pages: receipt.pages_copied,
            finished: false,
        };
        // The record is written with each page, the receipt after it: the record is never
        // behind, and ahead when a run stopped before checkpointing its last pages.
        if let Some(recorded) = destination.copy_cursor(&copy.record).await?
            && recorded.pages > cursor.pages
        {
            self.copied(state, context, index, &recorded).await?;
            if recorded.finished {
                return Ok(());
            }
            cursor = recorded;
        }
        loop {
            let (published, mut pages) = tokio::sync::watch::channel(None::<PageCursor>);
            let job = destination.copy_pages(source, Arc::clone(&copy), cursor.clone(), JOB_TIME, move |page| {
                published.send_replace(Some(page.clone()));
            });
            tokio::pin!(job);
            let mut recorded: Option<PageCursor> = None;
            let done = loop {
                tokio::select! {
                    biased;
                    done = &mut job => break done?,
                    Ok(()) = pages.changed() => {
                        let page = pages.borrow_and_update().clone();
                        if let Some(page) = page {
                            self.copied(state, context, index, &page).await?;
                            recorded = Some(page);
                        }
                        tokio::select! {
                            biased;
                            done = &mut job => break done?,
                            () = tokio::time::sleep(CHECKPOINT_INTERVAL) => {}
                        }
                    }
                }
            };
            if recorded.as_ref() != Some(&done) {
                self.copied(state, context, index, &done).await?;
            }
            if done.finished {
                return Ok(());
            }
            cursor = done;
        }
    }

    /// Records that target `index` is copied up to `cursor`: the receipt, a checkpoint, progress.
    async fn copied(
        &self,
        state: &mut MigrationResult,
        context: &Context,
        index: usize,
        cursor: &PageCursor,
    ) -> Result<()> {
        let receipt = &mut state.receipts[index];
        receipt.source_rows = cursor.rows;
        receipt.pages_copied = cursor.pages;
        receipt.last_key.clone_from(&cursor.after);
        receipt.source_checksum = Checksum::from_link(cursor.checksum).to_hex();
        receipt.copied = cursor.finished;
        self.page_checkpoint(state, context, index).await
    }

    /// The checkpoint and progress report after a page of target `index`.
    async fn page_checkpoint(&self, state: &mut MigrationResult, context: &Context, index: usize) -> Result<()> {
        let target = &context.targets[index];
        state.phase = format!("copying {}", target.label());
        self.checkpoint(state).await?;
        if let Some(observer) = &self.observer {
            let estimated = state
                .plan
                .as_ref()
                .and_then(|plan| plan.items.get(index))
                .map_or(0, |item| item.estimated_rows);
            observer(&CopyProgress {
                migration_id: state.migration_id.clone(),
                item: target.name.clone(),
                rows: state.receipts[index].source_rows,
                estimated_rows: estimated,
            });
        }
        Ok(())
    }

    /// Copies through the shards' data clients (either side may be a remote daemon): each page
    /// is read as values and upserted by one multi-row statement, and checkpointed in the
    /// catalog once the destination committed it, before the next page is written. So at most
    /// one page can be on the destination beyond the checkpoint: on resume the first page is
    /// read back from the destination first, and not written again when it is already there.
    async fn copy_through_clients(&self, state: &mut MigrationResult, context: &Context, index: usize) -> Result<()> {
        let target = &context.targets[index];
        let mut checksum = Checksum::from_hex(&state.receipts[index].source_checksum)?;
        let read = |shard: &Arc<dyn DataClient>, after: Option<Value>| {
            let (sql, params) = target.page_query(after.as_ref());
            let shard = Arc::clone(shard);
            async move { Ok::<_, Error>(shard.execute_read_only_sql(&sql, params).await?.rows) }
        };
        let mut after = state.receipts[index].last_key.clone();
        let mut rows = read(&context.source, after.clone()).await?;
        let mut check_destination = state.attempt > 1;
        loop {
            let count = rows.len();
            let mut next = Vec::new();
            if count > 0 {
                let last = rows[count - 1].get(target.key_index).cloned().unwrap_or(Value::Null);
                if last == Value::Null {
                    return Err(Error::invalid_argument(
                        "manifest",
                        format!(
                            "{} has a row with a NULL primary key; it cannot be paged",
                            target.label()
                        ),
                    ));
                }
                checksum.add_page(&rows);
                // A run that stopped between the destination's commit and the checkpoint left
                // this page there already, exactly as the source has it.
                let landed = check_destination && read(&context.destination, after.clone()).await? == rows;
                check_destination = false;
                let write = async {
                    if !landed {
                        let (sql, params) = target.upsert(rows);
                        write_page(context.destination.as_ref(), target.collection, &sql, params).await?;
                    }
                    Ok::<_, Error>(())
                };
                if count < target.page_size {
                    write.await?;
                } else {
                    // The next page is read from the source while this one is written to the
                    // destination (two files, two threads); it is checkpointed only after the
                    // write commits, as before.
                    let (written, following) = tokio::join!(write, read(&context.source, Some(last.clone())));
                    written?;
                    next = following?;
                }
                let receipt = &mut state.receipts[index];
                receipt.source_rows += u64::try_from(count).unwrap_or(u64::MAX);
                receipt.pages_copied += 1;
                receipt.last_key = Some(last.clone());
                receipt.source_checksum = checksum.to_hex();
                after = Some(last);
            }
            state.receipts[index].copied = count < target.page_size;
            self.page_checkpoint(state, context, index).await?;
            if state.receipts[index].copied {
                return Ok(());
            }
            rows = next;
        }
    }

    /// Counts and checksums the moving rows on the destination; true when every receipt matches.
    async fn verify(&self, state: &mut MigrationResult, context: &Context) -> Result<bool> {
        let mut all = true;
        for (index, target) in context.targets.iter().enumerate() {
            let (rows_seen, checksum) = match &context.local_destination {
                Some(destination) => {
                    let query = Arc::new(target.paged_query());
                    let mut cursor = PageCursor::start();
                    while !cursor.finished {
                        cursor = destination.checksum_pages(Arc::clone(&query), cursor, JOB_TIME).await?;
                    }
                    (cursor.rows, Checksum::from_link(cursor.checksum))
                }
                None => checksum_through_client(&context.destination, target).await?,
            };
            let receipt = &mut state.receipts[index];
            receipt.destination_rows = Some(rows_seen);
            receipt.destination_checksum = Some(checksum.to_hex());
            receipt.verified = rows_seen == receipt.source_rows && checksum.to_hex() == receipt.source_checksum;
            receipt.error = (!receipt.verified).then(|| {
                format!(
                    "the destination holds {rows_seen} moving rows (checksum {}), the source {} (checksum {})",
                    checksum.to_hex(),
                    receipt.source_rows,
                    receipt.source_checksum
                )
            });
            all &= receipt.verified;
        }
        Ok(all)
    }

    /// Writes the new map as the pending map. False (with an issue) when the catalog refuses.
    /// A map this migration already wrote (before a crash) is recognised and kept.
    async fn write_pending(&self, state: &mut MigrationResult) -> Result<bool> {
        let catalog = self.catalog()?;
        let active = catalog.active_map().await?;
        let next = state.map_version + 1;
        if active.version() == next && routes_to_destination(&active, &state.spec) {
            state.pending_map_version = Some(next);
            return Ok(true);
        }
        if let Some(pending) = catalog.pending_options().await?
            && u64::try_from(pending.map_version).ok() == Some(next)
            && ShardMap::new(pending).is_ok_and(|map| routes_to_destination(&map, &state.spec))
        {
            state.pending_map_version = Some(next);
            return Ok(true);
        }
        if active.version() != state.map_version {
            state.issues.push(issue(
                "map-version-mismatch",
                format!(
                    "the active map changed from version {} to {} while the migration ran",
                    state.map_version,
                    active.version()
                ),
            ));
            return Ok(false);
        }
        let newest = catalog.newest_version().await?.unwrap_or(active.version());
        let request = CatalogUpdateRequest {
            map: proposed_options(&active, &state.spec),
            expected_current_map_version: Some(newest),
            allow_ownership_change: true,
            operator: state.spec.operator.clone(),
            comment: Some(match &state.spec.comment {
                Some(comment) => format!("{comment} (migration {})", state.migration_id),
                None => format!("migration {}", state.migration_id),
            }),
        };
        match self.sharded.apply_catalog_update(&request).await {
            Ok(applied) if applied.applied => {
                state.pending_map_version = applied.pending_map_version;
                Ok(true)
            }
            Ok(refused) => {
                state.issues.extend(
                    refused
                        .validation
                        .issues
                        .into_iter()
                        .filter(|i| i.severity == IssueSeverity::Error),
                );
                Ok(false)
            }
            Err(err) if err.kind() == ErrorKind::MapVersionConflict => {
                state.issues.push(issue("map-version-conflict", err.to_string()));
                Ok(false)
            }
            Err(err) => Err(err),
        }
    }

    /// Sets the recovery fields, then writes the final checkpoint and a history row. A failure
    /// to record is reported as a warning: the data is where the status says.
    async fn finish(&self, state: &mut MigrationResult) {
        let abandoned = state.phase == "abandoned";
        state.requires_operator_recovery = !abandoned && state.status.requires_operator_recovery();
        state.recovery_action = if abandoned {
            None
        } else {
            state.status.recovery_action().map(str::to_owned)
        };
        let now = now_utc();
        state.updated_utc = now.clone();
        state.completed_utc = Some(now);
        let recorded = match self.catalog() {
            Ok(catalog) => catalog.record_migration_end(state).await,
            Err(err) => Err(err),
        };
        // The destination's copy cursors matter only while some item is still to be copied.
        let copy_over = abandoned || (!state.receipts.is_empty() && state.receipts.iter().all(|r| r.copied));
        if copy_over && let Some(destination) = self.sharded.local_shard(&state.spec.destination_shard_id) {
            // A record left behind misleads nobody: it is keyed by this migration's id, which a
            // later migration can only take after clearing its records (see `start`).
            if let Err(err) = destination.database().clear_copy_cursors(&state.migration_id).await {
                tracing::warn!(migration = %state.migration_id, "the copy cursors could not be removed: {err}");
            }
        }
        if let Err(err) = recorded {
            state.issues.push(CatalogIssue {
                severity: IssueSeverity::Warning,
                code: "migration-history-write-failed".to_owned(),
                message: format!("the migration ended {:?}, but recording it failed: {err}", state.status),
            });
        }
    }
}

/// Counts and checksums the moving rows of `target` on `shard` read as values, page by page.
/// Writes one page of moved rows to `destination`: a collection's documents live in an internal
/// table, which only a maintenance transaction writes; a table's rows are one plain statement.
async fn write_page(destination: &dyn DataClient, collection: bool, sql: &str, params: Params) -> Result<()> {
    if !collection {
        destination.execute_sql(sql, params).await?;
        return Ok(());
    }
    let tx = destination
        .begin_transaction_with(TransactionOptions::maintenance())
        .await?;
    match destination
        .execute_in_transaction(&tx.transaction_id, sql, params)
        .await
    {
        Ok(_) => destination.commit_transaction(&tx.transaction_id).await,
        Err(err) => {
            let _ = destination.rollback_transaction(&tx.transaction_id).await;
            Err(err)
        }
    }
}

async fn checksum_through_client(shard: &Arc<dyn DataClient>, target: &Target) -> Result<(u64, Checksum)> {
    let mut checksum = Checksum::empty();
    let mut rows_seen = 0u64;
    let mut after: Option<Value> = None;
    loop {
        let (sql, params) = target.page_query(after.as_ref());
        let rows = shard.execute_read_only_sql(&sql, params).await?.rows;
        if rows.is_empty() {
            break;
        }
        rows_seen += u64::try_from(rows.len()).unwrap_or(u64::MAX);
        checksum.add_page(&rows);
        after = rows.last().and_then(|row| row.get(target.key_index)).cloned();
        if rows.len() < target.page_size {
            break;
        }
    }
    Ok((rows_seen, checksum))
}

/// Checks the destination: defined, enabled, primary, not the source.
fn check_destination(
    map: &ShardMap,
    source: &str,
    destination: &str,
    issues: &mut Vec<CatalogIssue>,
    same: impl FnOnce() -> String,
) {
    match map.shard(destination) {
        None => issues.push(issue(
            "unknown-destination-shard",
            format!("destination shard '{destination}' is not defined in the shard map"),
        )),
        Some(shard) if !shard.enabled => issues.push(issue(
            "destination-shard-disabled",
            format!("destination shard '{destination}' is disabled"),
        )),
        Some(shard) if shard.role == ShardRole::Replica => issues.push(issue(
            "destination-shard-not-primary",
            format!("destination shard '{destination}' is a replica: data can move only to primary shards"),
        )),
        Some(shard) if !source.is_empty() && shard.id.eq_ignore_ascii_case(source) => {
            issues.push(issue("destination-is-source", same()));
        }
        Some(_) => {}
    }
}

/// The active map with the moving key pinned (or the range owned) by the destination, one
/// version up.
fn proposed_options(map: &ShardMap, spec: &MigrationSpec) -> ShardingOptions {
    let mut options = map.options().clone();
    options.map_version = i64::try_from(map.version() + 1).unwrap_or(i64::MAX);
    let destination = map
        .shard(&spec.destination_shard_id)
        .map_or_else(|| spec.destination_shard_id.clone(), |s| s.id.clone());
    if let Some(key) = &spec.route_key {
        options.exact_key_pins.insert(key.clone(), destination);
    } else if let (Some(start), Some(end)) = (spec.start_bucket_inclusive, spec.end_bucket_exclusive) {
        let mut ranges: Vec<BucketRange> = Vec::new();
        for bucket in 0..map.bucket_count() {
            let owner = if (start..end).contains(&bucket) {
                destination.clone()
            } else {
                map.shards()[map.bucket_owner(bucket)].id.clone()
            };
            let at = i64::from(bucket);
            match ranges.last_mut() {
                Some(last) if last.shard_id == owner => last.end_bucket_exclusive = at + 1,
                _ => ranges.push(BucketRange::new(at, at + 1, owner)),
            }
        }
        options.bucket_ranges = ranges;
    }
    options
}

/// Whether `map` sends the migration's data to its destination.
fn routes_to_destination(map: &ShardMap, spec: &MigrationSpec) -> bool {
    let Some(destination) = map.shard_index(&spec.destination_shard_id) else {
        return false;
    };
    match (&spec.route_key, spec.start_bucket_inclusive, spec.end_bucket_exclusive) {
        (Some(key), _, _) => map.owner_of_key(key) == destination,
        (None, Some(start), Some(end)) => (start..end).all(|bucket| map.bucket_owner(bucket) == destination),
        _ => false,
    }
}

fn fresh_receipt(name: &str, collection: bool) -> MigrationReceipt {
    MigrationReceipt {
        name: name.to_owned(),
        collection,
        source_rows: 0,
        pages_copied: 0,
        last_key: None,
        copied: false,
        source_checksum: Checksum::empty().to_hex(),
        destination_rows: None,
        destination_checksum: None,
        verified: false,
        source_rows_deleted: 0,
        error: None,
    }
}

fn first_error(issues: &[CatalogIssue]) -> String {
    issues
        .iter()
        .find(|i| i.severity == IssueSeverity::Error)
        .map_or_else(String::new, |i| i.message.clone())
}

fn first_u64(rows: &[Vec<Value>]) -> u64 {
    rows.first()
        .and_then(|row| row.first())
        .and_then(Value::as_i64)
        .and_then(|v| u64::try_from(v).ok())
        .unwrap_or(0)
}

/// `mig-{yyyymmddhhmmss}-{32 hex}`.
fn new_migration_id() -> String {
    let stamp = time::OffsetDateTime::now_utc()
        .format(time::macros::format_description!(
            "[year][month][day][hour][minute][second]"
        ))
        .unwrap_or_default();
    format!("mig-{stamp}-{}", uuid::Uuid::new_v4().simple())
}

#[async_trait::async_trait]
impl MigrationAdmin for Migrator {
    async fn migrate_exact_route_key(&self, request: &KeyMigrationRequest) -> Result<MigrationResult> {
        self.migrate_key(request.clone()).await
    }

    async fn migrate_bucket_range(&self, request: &BucketMigrationRequest) -> Result<MigrationResult> {
        self.migrate_buckets(request.clone()).await
    }

    async fn resume_migration(&self, migration_id: &str, options: &ResumeRequest) -> Result<MigrationResult> {
        self.resume(migration_id, *options).await
    }

    async fn migration_progress(&self, migration_id: &str) -> Result<MigrationResult> {
        self.status(migration_id).await?.ok_or_else(|| Error::NotFound {
            what: "migration",
            name: migration_id.trim().to_owned(),
        })
    }

    async fn migrations(&self) -> Result<Vec<MigrationResult>> {
        Migrator::migrations(self).await
    }

    async fn migration_history(&self) -> Result<Vec<MigrationResult>> {
        self.history().await
    }

    async fn abandon_migration(&self, migration_id: &str) -> Result<MigrationResult> {
        self.abandon(migration_id).await
    }
}
