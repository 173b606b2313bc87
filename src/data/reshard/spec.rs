//! What a migration is asked to do, as stored with its checkpoint and history, in the JSON
//! catalogs have always held.

use serde::{Deserialize, Serialize};

use super::{ReshardManifest, ReshardScope};
use crate::data::Audit;

/// Which kind of migration (the `kind` of a stored [`ReshardSpec`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "server", schema(description = "Which kind of migration."))]
#[cfg_attr(feature = "server", schema(as = MigrationKind))]
enum ReshardKind {
    /// One route key.
    ExactRouteKey,
    /// A range of virtual buckets.
    BucketRange,
}

/// What a migration is asked to do, as stored with it (resume runs it again from here).
///
/// Stored and served in the JSON it always had (`kind`, `keyspace`, `routeKey` or
/// `startBucketInclusive` and `endBucketExclusive`, `sourceShardId`, ..., `operator`, `comment`),
/// so checkpoints and history written by earlier releases read as they are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "StoredSpec", into = "StoredSpec")]
pub struct ReshardSpec {
    /// Which data moves, in the map's spelling of the keyspace.
    pub scope: ReshardScope,
    /// The shard the data leaves: where the route key resolved when the migration started, or
    /// the bucket range's source (the scope's `source_shard_id`).
    pub source_shard_id: String,
    /// The shard it moves to.
    pub destination_shard_id: String,
    /// What moves.
    pub manifest: ReshardManifest,
    /// Activate the new map when verified.
    pub activate: bool,
    /// Delete the source rows once the new map is active.
    pub delete_source: bool,
    /// Whether it copies while writes go on, fencing only for the cutover. Migrations recorded
    /// by releases before online moves have none, and ran fenced.
    pub online: bool,
    /// Who runs it and why.
    pub audit: Audit,
}

impl ReshardSpec {
    /// The map's keyspace.
    pub fn keyspace(&self) -> &str {
        self.scope.keyspace()
    }
}

/// What a migration is asked to do, as stored with it (resume runs it again from here).
///
/// (The JSON form of [`ReshardSpec`], in checkpoints, history and results; its OpenAPI schema.)
#[derive(Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "server",
    schema(description = "What a migration is asked to do, as stored with it (resume runs it again from here).")
)]
#[serde(expecting = "struct MigrationSpec", rename_all = "camelCase")]
struct StoredSpec {
    /// Which kind.
    kind: ReshardKind,
    /// The map's keyspace.
    keyspace: String,
    /// The route key (exact-key migrations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    route_key: Option<String>,
    /// The first bucket (bucket-range migrations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start_bucket_inclusive: Option<u32>,
    /// One past the last bucket (bucket-range migrations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    end_bucket_exclusive: Option<u32>,
    /// The shard the data leaves.
    source_shard_id: String,
    /// The shard it moves to.
    destination_shard_id: String,
    /// What moves.
    manifest: ReshardManifest,
    /// Activate the new map when verified.
    activate: bool,
    /// Delete the source rows once the new map is active.
    delete_source: bool,
    /// Whether it copies while writes go on, fencing only for the cutover. Migrations recorded
    /// by releases before online moves have none, and ran fenced.
    #[serde(default)]
    online: bool,
    /// Who runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    operator: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    comment: Option<String>,
}

impl TryFrom<StoredSpec> for ReshardSpec {
    type Error = String;

    /// Fails when the members of the spec's kind are missing (every release wrote them).
    fn try_from(stored: StoredSpec) -> Result<Self, String> {
        let scope = match stored.kind {
            ReshardKind::ExactRouteKey => ReshardScope::RouteKey {
                keyspace: stored.keyspace,
                route_key: stored
                    .route_key
                    .ok_or("an ExactRouteKey migration spec has no `routeKey`")?,
            },
            ReshardKind::BucketRange => match (stored.start_bucket_inclusive, stored.end_bucket_exclusive) {
                (Some(start_bucket_inclusive), Some(end_bucket_exclusive)) => ReshardScope::BucketRange {
                    keyspace: stored.keyspace,
                    source_shard_id: stored.source_shard_id.clone(),
                    start_bucket_inclusive,
                    end_bucket_exclusive,
                },
                _ => {
                    return Err(
                        "a BucketRange migration spec needs `startBucketInclusive` and `endBucketExclusive`".to_owned(),
                    );
                }
            },
        };
        Ok(Self {
            scope,
            source_shard_id: stored.source_shard_id,
            destination_shard_id: stored.destination_shard_id,
            manifest: stored.manifest,
            activate: stored.activate,
            delete_source: stored.delete_source,
            online: stored.online,
            audit: Audit::new(stored.operator, stored.comment),
        })
    }
}

impl From<ReshardSpec> for StoredSpec {
    fn from(spec: ReshardSpec) -> Self {
        let (kind, keyspace, route_key, buckets) = match spec.scope {
            ReshardScope::RouteKey { keyspace, route_key } => {
                (ReshardKind::ExactRouteKey, keyspace, Some(route_key), None)
            }
            ReshardScope::BucketRange {
                keyspace,
                start_bucket_inclusive,
                end_bucket_exclusive,
                ..
            } => (
                ReshardKind::BucketRange,
                keyspace,
                None,
                Some((start_bucket_inclusive, end_bucket_exclusive)),
            ),
        };
        Self {
            kind,
            keyspace,
            route_key,
            start_bucket_inclusive: buckets.map(|(start, _)| start),
            end_bucket_exclusive: buckets.map(|(_, end)| end),
            source_shard_id: spec.source_shard_id,
            destination_shard_id: spec.destination_shard_id,
            manifest: spec.manifest,
            activate: spec.activate,
            delete_source: spec.delete_source,
            online: spec.online,
            operator: spec.audit.operator,
            comment: spec.audit.comment,
        }
    }
}

// The OpenAPI schema keeps the name it has always had.
schema_from_form!(ReshardSpec as MigrationSpec, StoredSpec);
