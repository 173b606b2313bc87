//! The shapes of resharding (data moves, which the wire calls migrations): the manifest, the
//! request (one type, for an exact route key or a bucket range), and the result, which is also
//! the checkpoint a resume continues from. Schema migrations' shapes are in `data/schema.rs`.
//!
//! The request and the stored spec hold a [`ReshardScope`] and an [`Audit`]; their JSON keeps
//! the flat shapes the wire and the catalog have always had, through private forms
//! (`KeyReshardBody`, `BucketReshardBody`, `StoredSpec`) that also give the OpenAPI schemas.

use serde::{Deserialize, Serialize};

use super::{CatalogIssue, MovedBuckets, MovedPin, Value};

mod phase;
mod request;
mod spec;
#[cfg(test)]
mod tests;

pub use phase::ReshardPhase;
#[cfg(any(feature = "http", feature = "grpc", test))]
pub(crate) use request::ReshardBody;
#[cfg(any(feature = "server", test))]
pub(crate) use request::{BucketReshardBody, KeyReshardBody};
pub use request::{ReshardRequest, ReshardScope};
pub use spec::ReshardSpec;

/// What a migration moves: tables with their route-key and primary-key columns, and JSON
/// collections with their route-key property.
///
/// ```
/// use shardlite::data::ReshardManifest;
///
/// let manifest: ReshardManifest = serde_json::from_str(r#"{
///     "pageSize": 1000,
///     "tables": [{ "tableName": "orders", "routeKeyColumn": "tenant", "primaryKeyColumn": "id" }],
///     "collections": [{ "collectionName": "profiles", "routeKeyProperty": "tenant" }]
/// }"#)?;
/// assert_eq!(manifest.tables[0].route_key_column, "tenant");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "server", schema(as = MigrationManifest))]
// The OpenAPI document keeps the descriptions it has always had.
#[cfg_attr(
    feature = "server",
    schema(description = concat!(
        "What a migration moves: tables with their route-key and primary-key columns, and JSON\n",
        "collections with their route-key property.\n",
        "\n",
        "```\n",
        "use shardlite::data::MigrationManifest;\n",
        "\n",
        "let manifest: MigrationManifest = serde_json::from_str(r#\"{\n",
        "    \"pageSize\": 1000,\n",
        "    \"tables\": [{ \"tableName\": \"orders\", \"routeKeyColumn\": \"tenant\", \"primaryKeyColumn\": \"id\" }],\n",
        "    \"collections\": [{ \"collectionName\": \"profiles\", \"routeKeyProperty\": \"tenant\" }]\n",
        "}\"#)?;\n",
        "assert_eq!(manifest.tables[0].route_key_column, \"tenant\");\n",
        "# Ok::<(), serde_json::Error>(())\n",
        "```",
    ))
)]
pub struct ReshardManifest {
    /// Rows copied per page (one destination transaction and one checkpoint per page); 1 to
    /// 5000, default 500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u32>,
    /// Tables to move, in order.
    #[serde(default)]
    pub tables: Vec<TableManifest>,
    /// Collections to move, in order.
    #[serde(default)]
    pub collections: Vec<CollectionManifest>,
}

/// One table of a [`ReshardManifest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "server", schema(description = "One table of a [`MigrationManifest`]."))]
pub struct TableManifest {
    /// The table.
    pub table_name: String,
    /// The column that holds each row's route key.
    pub route_key_column: String,
    /// The single column that orders and identifies rows (pages are read in its order).
    pub primary_key_column: String,
}

/// One collection of a [`ReshardManifest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(
    feature = "server",
    schema(description = "One collection of a [`MigrationManifest`].")
)]
pub struct CollectionManifest {
    /// The collection.
    pub collection_name: String,
    /// The top-level property of each document that holds its route key.
    pub route_key_property: String,
}

/// Where a migration stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "server", schema(as = MigrationStatus))]
pub enum ReshardStatus {
    /// A dry run's answer: the plan; nothing was changed and nothing is stored.
    Planned,
    /// In progress, or stopped by a crash (resume it).
    Running,
    /// Refused before anything changed; see the issues.
    Rejected,
    /// The data was copied but did not verify; the map is unchanged.
    VerificationFailed,
    /// Verified; the new map is pending (activate it, or resume with activation).
    PendingActivation,
    /// Verified and the new map is active.
    Activated,
    /// Verified, but writing the pending map failed; the map is unchanged.
    CatalogApplyFailed,
    /// Stopped by an error; the map is unchanged.
    Failed,
}

impl ReshardStatus {
    /// Whether an operator must act before the migration can finish.
    pub fn requires_operator_recovery(self) -> bool {
        matches!(self, Self::VerificationFailed | Self::CatalogApplyFailed | Self::Failed)
    }

    /// What the operator should do, for the statuses that need it.
    pub fn recovery_action(self) -> Option<&'static str> {
        match self {
            Self::VerificationFailed => Some(
                "the data was copied but did not verify, so the shard map was left unchanged and the source still \
                 owns the data: compare the receipts' counts and checksums, remove or repair the destination rows \
                 of the moving keys, then run `shardlite migrate resume` with this id (it copies and verifies again)",
            ),
            Self::CatalogApplyFailed => Some(
                "the data was verified but the pending map could not be written (another catalog change came first, \
                 or the catalog is unwritable), so the shard map was left unchanged: fix the catalog (activate or \
                 replace its pending map), then run `shardlite migrate resume` with this id",
            ),
            Self::Failed => Some(
                "the migration stopped before it finished and the shard map was left unchanged: read the issues, fix \
                 the cause, then run `shardlite migrate resume` with this id; copied pages are upserted again, so \
                 partial destination data is harmless",
            ),
            _ => None,
        }
    }
}

/// One table's or collection's copy and verification: its checkpoint while copying, its
/// receipt when done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "server", schema(as = MigrationReceipt))]
pub struct ReshardReceipt {
    /// The table or collection.
    pub name: String,
    /// Whether it is a collection.
    pub collection: bool,
    /// Moving rows read from the source (and copied), so far.
    pub source_rows: u64,
    /// Pages copied so far.
    pub pages_copied: u64,
    /// The primary key of the last row copied (the resume point), absent before the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(value_type = Option<crate::data::openapi::ValueSchema>))]
    pub last_key: Option<Value>,
    /// Whether every page was copied.
    pub copied: bool,
    /// The running checksum of the source rows copied so far (hex SHA-256 chain over pages in
    /// primary-key order).
    pub source_checksum: String,
    /// Moving rows found on the destination at verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_rows: Option<u64>,
    /// Their checksum, computed the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_checksum: Option<String>,
    /// Whether counts and checksums match on both sides.
    pub verified: bool,
    /// Source rows deleted after activation.
    pub source_rows_deleted: u64,
    /// Why it failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A dry run's view of one table or collection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PlannedItem {
    /// The table or collection.
    pub name: String,
    /// Whether it is a collection.
    pub collection: bool,
    /// Rows that would move (counted on the source now).
    pub estimated_rows: u64,
    /// Whether an index serves the route filter (without one every page scans the table).
    pub route_index: bool,
    /// SQLite's plan for the page query.
    pub query_plan: String,
}

/// What a migration would do: returned by a dry run, and kept with every migration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "server", schema(as = MigrationPlan))]
pub struct ReshardPlan {
    /// Per table and collection.
    pub items: Vec<PlannedItem>,
    /// Bucket ranges that change owner in the new map.
    pub moved_buckets: Vec<MovedBuckets>,
    /// Pins that change owner in the new map.
    pub moved_pins: Vec<MovedPin>,
    /// The version the new map would get.
    pub proposed_map_version: u64,
}

/// A migration's state: what it was asked, where it stands, and its receipts. Stored as its
/// checkpoint after every page and in the history when it ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "server", schema(as = MigrationResult))]
pub struct ReshardResult {
    /// The migration's id.
    pub migration_id: String,
    /// Where it stands.
    pub status: ReshardStatus,
    /// The last phase reached: `validated`, `fenced` (offline) or `capturing` (online),
    /// `copying`, `catching-up` and `cutover` (online), `verified`, `pending-map-written`,
    /// `activated`, `source-deleted`, or the terminal status.
    #[cfg_attr(feature = "server", schema(value_type = String))]
    pub phase: ReshardPhase,
    /// A sentence for people.
    pub message: String,
    /// What it was asked to do.
    pub spec: ReshardSpec,
    /// The dry-run plan, when asked for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<ReshardPlan>,
    /// The active map version when it started.
    pub map_version: u64,
    /// The version of the map it wrote, once written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_map_version: Option<u64>,
    /// Whether an operator must act before it can finish.
    pub requires_operator_recovery: bool,
    /// What to do, when `requiresOperatorRecovery`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_action: Option<String>,
    /// Per table and collection, in manifest order.
    pub receipts: Vec<ReshardReceipt>,
    /// Why it was rejected or failed, and warnings.
    pub issues: Vec<CatalogIssue>,
    /// How many times it was started or resumed.
    pub attempt: u32,
    /// When it was first started (RFC 3339, UTC).
    pub started_utc: String,
    /// When this state was written.
    pub updated_utc: String,
    /// When it ended, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_utc: Option<String>,
    /// How an online migration's change capture and cutover went (absent for offline ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online: Option<OnlineProgress>,
}

/// The change capture and cutover of an online migration: where replay stands, how much is
/// left, and how long writes of the moving keys were refused.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct OnlineProgress {
    /// Whether the capture triggers and change table are installed on the source.
    #[serde(default)]
    pub capturing: bool,
    /// The sequence number of the last captured change applied to the destination: replay
    /// resumes after it.
    #[serde(default)]
    pub replayed_through: i64,
    /// The position up to which the destination was compared with a consistent snapshot of
    /// the source (every row counted and checksummed); the cutover compares only the rows
    /// changed after it.
    #[serde(default)]
    pub verified_through: i64,
    /// Captured changes applied to the destination so far (a row changed twice counts twice).
    #[serde(default)]
    pub changes_applied: u64,
    /// Captured changes not yet applied, as last counted.
    #[serde(default)]
    pub remaining_changes: u64,
    /// Catch-up rounds run so far (each applies what was captured since the last).
    #[serde(default)]
    pub catch_up_rounds: u32,
    /// When the cutover fenced the moving keys (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cutover_started_utc: Option<String>,
    /// How long writes of the moving keys were refused: from the fence to activation, in
    /// milliseconds (measured by the run that activated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cutover_ms: Option<u64>,
}

impl ReshardResult {
    /// Whether it reached a successful end (`PendingActivation` or `Activated`).
    pub fn succeeded(&self) -> bool {
        matches!(self.status, ReshardStatus::PendingActivation | ReshardStatus::Activated)
    }
}

/// Migrations, in-process ([`Resharder`](crate::reshard::Resharder)) or through a daemon
/// (`HttpClient`, `GrpcClient`): the migration half of the shard-admin interface.
#[async_trait::async_trait]
pub trait ReshardAdmin: Send + Sync {
    /// Moves the data of a route key or a bucket range, as `request`'s scope says, and runs the
    /// move to its end (or only plans it, with `dry_run`). A request that cannot run comes back
    /// `Rejected`, with issues naming each problem.
    async fn start_migration(&self, request: &ReshardRequest) -> crate::Result<ReshardResult>;
    /// Continues a stopped migration from its last checkpoint; harmless when it already ended.
    async fn resume_migration(&self, migration_id: &str, options: &ResumeRequest) -> crate::Result<ReshardResult>;
    /// One migration's latest state ([`Error::NotFound`](crate::Error::NotFound) when unknown).
    async fn migration_progress(&self, migration_id: &str) -> crate::Result<ReshardResult>;
    /// Every migration's latest state, most recently updated first.
    async fn migrations(&self) -> crate::Result<Vec<ReshardResult>>;
    /// The migration history (one entry per run that ended), newest first.
    async fn migration_history(&self) -> crate::Result<Vec<ReshardResult>>;
    /// Gives up a migration that has not written its new map: releases its fence (the explicit
    /// recovery for a fence a crash left behind) and records it as abandoned.
    async fn abandon_migration(&self, migration_id: &str) -> crate::Result<ReshardResult>;
}

/// What a resume may add to a stored migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResumeRequest {
    /// Activate the new map once verified, even if the migration was started without it.
    #[serde(default)]
    pub activate: bool,
    /// Delete the source rows once the new map is active.
    #[serde(default)]
    pub delete_source: bool,
}
