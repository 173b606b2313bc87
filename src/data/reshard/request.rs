//! The request for a data move: which data ([`ReshardScope`]), where it goes and how, and who
//! asks; with the flat JSON bodies the REST endpoints take for each scope.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::ReshardManifest;
use crate::data::Audit;

/// Which data a migration moves: the rows of one route key, or of a range of virtual buckets.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ReshardScope {
    /// The rows of one route key, which is pinned to the destination.
    RouteKey {
        /// The route keyspace (the map's).
        keyspace: String,
        /// The route key whose data moves.
        route_key: String,
    },
    /// The rows of every key whose bucket is in `[start_bucket_inclusive, end_bucket_exclusive)`,
    /// which the destination then owns. Pinned keys stay where their pins put them.
    BucketRange {
        /// The route keyspace (the map's).
        keyspace: String,
        /// The shard that owns every bucket of the range now.
        source_shard_id: String,
        /// The first bucket of the range.
        start_bucket_inclusive: u32,
        /// One past the last bucket of the range.
        end_bucket_exclusive: u32,
    },
}

impl ReshardScope {
    /// The route keyspace.
    pub fn keyspace(&self) -> &str {
        match self {
            Self::RouteKey { keyspace, .. } | Self::BucketRange { keyspace, .. } => keyspace,
        }
    }

    /// The route key, for a route-key migration.
    pub fn route_key(&self) -> Option<&str> {
        match self {
            Self::RouteKey { route_key, .. } => Some(route_key),
            Self::BucketRange { .. } => None,
        }
    }

    /// The buckets `start..end`, for a bucket-range migration.
    pub fn buckets(&self) -> Option<Range<u32>> {
        match self {
            Self::RouteKey { .. } => None,
            Self::BucketRange {
                start_bucket_inclusive,
                end_bucket_exclusive,
                ..
            } => Some(*start_bucket_inclusive..*end_bucket_exclusive),
        }
    }
}

/// A data move: the data of a route key or a bucket range ([`ReshardScope`]) to another primary
/// shard, verified; or, with `dry_run`, only its plan.
///
/// Build one with [`route_key`](Self::route_key) or [`bucket_range`](Self::bucket_range), then
/// change what differs from the defaults (online, no activation, source rows kept, a generated
/// id, no map-version check, no audit):
///
/// ```
/// use shardlite::data::{Audit, ReshardManifest, ReshardRequest, ReshardScope, TableManifest};
///
/// let manifest = ReshardManifest {
///     tables: vec![TableManifest {
///         table_name: "orders".into(),
///         route_key_column: "tenant".into(),
///         primary_key_column: "id".into(),
///     }],
///     ..ReshardManifest::default()
/// };
/// let request = ReshardRequest::route_key("tenants", "tenant-42", "s1", manifest.clone())
///     .activate()
///     .delete_source()
///     .audit(Audit::by("ada").because("tenant 42 outgrew s0"));
/// assert!(request.online && request.activate && request.delete_source && !request.dry_run);
/// assert_eq!(request.scope.route_key(), Some("tenant-42"));
///
/// let buckets = ReshardRequest::bucket_range("tenants", "s0", 0..8, "s1", manifest)
///     .offline()
///     .dry_run();
/// assert_eq!(buckets.scope.buckets(), Some(0..8));
/// assert!(matches!(buckets.scope, ReshardScope::BucketRange { ref source_shard_id, .. } if source_shard_id == "s0"));
/// ```
///
/// On the wire the two scopes are two bodies, as before: REST `POST
/// /api/sharding/migrations/exact-route-key` and `.../bucket-range`, gRPC `MigrateExactRouteKey`
/// and `MigrateBucketRange`, each with every member at the top level (`keyspace`, `routeKey` or
/// `sourceShardId`, `startBucketInclusive` and `endBucketExclusive`, `destinationShardId`,
/// `manifest`, ..., `operator`, `comment`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReshardRequest {
    /// Which data moves.
    pub scope: ReshardScope,
    /// The primary shard that receives it.
    pub destination_shard_id: String,
    /// What to move.
    pub manifest: ReshardManifest,
    /// An id of the caller's choosing; generated when absent.
    pub migration_id: Option<String>,
    /// The active map version the caller saw; refused when it is not the active one.
    pub expected_current_map_version: Option<u64>,
    /// Only plan: estimated rows, index use and the map diff. Changes nothing.
    pub dry_run: bool,
    /// Copy while writes go on and fence only for a short cutover (the default); `false` fences
    /// the moving keys for the whole copy, as the offline mode does.
    pub online: bool,
    /// Activate the new map once the data is verified (otherwise it stays pending).
    pub activate: bool,
    /// Delete the moved rows from the source once the new map is active (needs `activate`).
    pub delete_source: bool,
    /// Who runs it and why, for the history.
    pub audit: Audit,
}

impl ReshardRequest {
    /// Moves `scope`'s data to `destination_shard_id`: online, leaving the new map pending and
    /// the source rows in place, under a generated id.
    pub fn new(scope: ReshardScope, destination_shard_id: impl Into<String>, manifest: ReshardManifest) -> Self {
        Self {
            scope,
            destination_shard_id: destination_shard_id.into(),
            manifest,
            migration_id: None,
            expected_current_map_version: None,
            dry_run: false,
            online: true,
            activate: false,
            delete_source: false,
            audit: Audit::default(),
        }
    }

    /// Moves the data of `route_key` in `keyspace` to `destination_shard_id`, pinning the key there.
    pub fn route_key(
        keyspace: impl Into<String>,
        route_key: impl Into<String>,
        destination_shard_id: impl Into<String>,
        manifest: ReshardManifest,
    ) -> Self {
        let scope = ReshardScope::RouteKey {
            keyspace: keyspace.into(),
            route_key: route_key.into(),
        };
        Self::new(scope, destination_shard_id, manifest)
    }

    /// Moves the data of the buckets `buckets` (end exclusive) of `keyspace` from
    /// `source_shard_id`, which owns each of them now, to `destination_shard_id`.
    pub fn bucket_range(
        keyspace: impl Into<String>,
        source_shard_id: impl Into<String>,
        buckets: Range<u32>,
        destination_shard_id: impl Into<String>,
        manifest: ReshardManifest,
    ) -> Self {
        let scope = ReshardScope::BucketRange {
            keyspace: keyspace.into(),
            source_shard_id: source_shard_id.into(),
            start_bucket_inclusive: buckets.start,
            end_bucket_exclusive: buckets.end,
        };
        Self::new(scope, destination_shard_id, manifest)
    }

    /// The same, under the id `migration_id` (resume and status use it).
    #[must_use]
    pub fn migration_id(mut self, migration_id: impl Into<String>) -> Self {
        self.migration_id = Some(migration_id.into());
        self
    }

    /// The same, refused unless the active map version is still `version`.
    #[must_use]
    pub fn expecting_map_version(mut self, version: u64) -> Self {
        self.expected_current_map_version = Some(version);
        self
    }

    /// The same, only planned: nothing changes and nothing is stored.
    #[must_use]
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// The same, fencing the moving keys for the whole copy instead of copying while writes go on.
    #[must_use]
    pub fn offline(mut self) -> Self {
        self.online = false;
        self
    }

    /// The same, activating the new map once the data is verified.
    #[must_use]
    pub fn activate(mut self) -> Self {
        self.activate = true;
        self
    }

    /// The same, deleting the moved rows from the source once the new map is active. Refused
    /// without [`activate`](Self::activate).
    #[must_use]
    pub fn delete_source(mut self) -> Self {
        self.delete_source = true;
        self
    }

    /// The same, recorded in the history as `audit` says.
    #[must_use]
    pub fn audit(mut self, audit: Audit) -> Self {
        self.audit = audit;
        self
    }
}

/// Moves the data of one route key to another primary shard, pinning the key there.
///
/// (The JSON body of a route-key [`ReshardRequest`]: REST `exact-route-key`, gRPC
/// `MigrateExactRouteKey`, and its OpenAPI schema.)
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "server",
    schema(
        as = KeyMigrationRequest,
        description = "Moves the data of one route key to another primary shard, pinning the key there."
    )
)]
#[serde(
    expecting = "struct KeyMigrationRequest",
    rename_all = "camelCase",
    deny_unknown_fields
)]
pub(crate) struct KeyReshardBody {
    /// The route keyspace.
    keyspace: String,
    /// The route key whose data moves.
    route_key: String,
    /// The primary shard that receives it.
    destination_shard_id: String,
    /// What to move.
    manifest: ReshardManifest,
    /// An id of the caller's choosing; generated when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    migration_id: Option<String>,
    /// The active map version the caller saw; refused when it is not the active one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expected_current_map_version: Option<u64>,
    /// Only plan: estimated rows, index use and the map diff. Changes nothing.
    #[serde(default)]
    dry_run: bool,
    /// Copy while writes go on and fence only for a short cutover (the default); `false` fences
    /// the moving keys for the whole copy, as the offline mode does.
    #[serde(default = "online_by_default")]
    online: bool,
    /// Activate the new map once the data is verified (otherwise it stays pending).
    #[serde(default)]
    activate: bool,
    /// Delete the moved rows from the source once the new map is active (needs `activate`).
    #[serde(default)]
    delete_source: bool,
    /// Who runs it, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    operator: Option<String>,
    /// Why, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    comment: Option<String>,
}

/// Moves the data of a bucket range from one primary shard to another. Pinned keys stay where
/// their pins put them.
///
/// (The JSON body of a bucket-range [`ReshardRequest`]: REST `bucket-range`, gRPC
/// `MigrateBucketRange`, and its OpenAPI schema.)
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "server",
    schema(
        as = BucketMigrationRequest,
        description = "Moves the data of a bucket range from one primary shard to another. Pinned keys stay where\ntheir pins put them."
    )
)]
#[serde(
    expecting = "struct BucketMigrationRequest",
    rename_all = "camelCase",
    deny_unknown_fields
)]
pub(crate) struct BucketReshardBody {
    /// The route keyspace (the map's).
    keyspace: String,
    /// The shard that owns every bucket of the range now.
    source_shard_id: String,
    /// The primary shard that receives them.
    destination_shard_id: String,
    /// The first bucket of the range.
    start_bucket_inclusive: u32,
    /// One past the last bucket of the range.
    end_bucket_exclusive: u32,
    /// What to move.
    manifest: ReshardManifest,
    /// An id of the caller's choosing; generated when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    migration_id: Option<String>,
    /// The active map version the caller saw; refused when it is not the active one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expected_current_map_version: Option<u64>,
    /// Only plan: estimated rows, index use and the map diff. Changes nothing.
    #[serde(default)]
    dry_run: bool,
    /// Copy while writes go on and fence only for a short cutover (the default); `false` fences
    /// the moving keys for the whole copy, as the offline mode does.
    #[serde(default = "online_by_default")]
    online: bool,
    /// Activate the new map once the data is verified (otherwise it stays pending).
    #[serde(default)]
    activate: bool,
    /// Delete the moved rows from the source once the new map is active (needs `activate`).
    #[serde(default)]
    delete_source: bool,
    /// Who runs it, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    operator: Option<String>,
    /// Why, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    comment: Option<String>,
}

/// Migrations requested without `online` run online.
fn online_by_default() -> bool {
    true
}

impl From<KeyReshardBody> for ReshardRequest {
    fn from(body: KeyReshardBody) -> Self {
        Self {
            scope: ReshardScope::RouteKey {
                keyspace: body.keyspace,
                route_key: body.route_key,
            },
            destination_shard_id: body.destination_shard_id,
            manifest: body.manifest,
            migration_id: body.migration_id,
            expected_current_map_version: body.expected_current_map_version,
            dry_run: body.dry_run,
            online: body.online,
            activate: body.activate,
            delete_source: body.delete_source,
            audit: Audit::new(body.operator, body.comment),
        }
    }
}

impl From<BucketReshardBody> for ReshardRequest {
    fn from(body: BucketReshardBody) -> Self {
        Self {
            scope: ReshardScope::BucketRange {
                keyspace: body.keyspace,
                source_shard_id: body.source_shard_id,
                start_bucket_inclusive: body.start_bucket_inclusive,
                end_bucket_exclusive: body.end_bucket_exclusive,
            },
            destination_shard_id: body.destination_shard_id,
            manifest: body.manifest,
            migration_id: body.migration_id,
            expected_current_map_version: body.expected_current_map_version,
            dry_run: body.dry_run,
            online: body.online,
            activate: body.activate,
            delete_source: body.delete_source,
            audit: Audit::new(body.operator, body.comment),
        }
    }
}

/// A [`ReshardRequest`] as the wire carries it: the body of its scope's endpoint or RPC.
#[cfg(any(feature = "http", feature = "grpc", test))]
#[derive(Debug, Clone)]
pub(crate) enum ReshardBody {
    /// REST `exact-route-key`, gRPC `MigrateExactRouteKey`.
    RouteKey(KeyReshardBody),
    /// REST `bucket-range`, gRPC `MigrateBucketRange`.
    BucketRange(BucketReshardBody),
}

#[cfg(any(feature = "http", feature = "grpc", test))]
impl From<ReshardRequest> for ReshardBody {
    fn from(request: ReshardRequest) -> Self {
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
            audit: Audit { operator, comment },
        } = request;
        match scope {
            ReshardScope::RouteKey { keyspace, route_key } => Self::RouteKey(KeyReshardBody {
                keyspace,
                route_key,
                destination_shard_id,
                manifest,
                migration_id,
                expected_current_map_version,
                dry_run,
                online,
                activate,
                delete_source,
                operator,
                comment,
            }),
            ReshardScope::BucketRange {
                keyspace,
                source_shard_id,
                start_bucket_inclusive,
                end_bucket_exclusive,
            } => Self::BucketRange(BucketReshardBody {
                keyspace,
                source_shard_id,
                destination_shard_id,
                start_bucket_inclusive,
                end_bucket_exclusive,
                manifest,
                migration_id,
                expected_current_map_version,
                dry_run,
                online,
                activate,
                delete_source,
                operator,
                comment,
            }),
        }
    }
}
