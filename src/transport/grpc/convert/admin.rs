//! The shard-administration types: shard maps and their shards, route resolutions, shard
//! status, fan-out results and the catalog state.

use super::{missing, pb};
use crate::data::{
    Audit, CatalogHistoryEntry, CatalogState, ShardSqlResult, ShardStatus, ShardStatusPage, ShardStatusQuery,
    ShardStatusSummary,
};
use crate::error::{Error, Result};
use crate::map::{BucketRange, MapSummary, ReplicaInfo, ShardMapSnapshot, ShardRole, ShardSnapshot, Transport};
use crate::routing::{ResolvedRoute, RouteSource};

fn role_to_pb(role: ShardRole) -> i32 {
    match role {
        ShardRole::Primary => pb::ShardRole::Primary as i32,
        ShardRole::Replica => pb::ShardRole::Replica as i32,
    }
}

fn role_from_pb(role: i32) -> Result<ShardRole> {
    match pb::ShardRole::try_from(role) {
        Ok(pb::ShardRole::Unspecified | pb::ShardRole::Primary) => Ok(ShardRole::Primary),
        Ok(pb::ShardRole::Replica) => Ok(ShardRole::Replica),
        Err(_) => Err(Error::invalid_argument(
            "gRPC message",
            format!("unknown shard role {role}"),
        )),
    }
}

fn transport_to_pb(transport: Transport) -> i32 {
    match transport {
        Transport::Direct => pb::ShardTransport::Direct as i32,
        Transport::Http => pb::ShardTransport::Http as i32,
        Transport::Grpc => pb::ShardTransport::Grpc as i32,
    }
}

fn transport_from_pb(transport: i32) -> Result<Transport> {
    match pb::ShardTransport::try_from(transport) {
        Ok(pb::ShardTransport::Unspecified | pb::ShardTransport::Direct) => Ok(Transport::Direct),
        Ok(pb::ShardTransport::Http) => Ok(Transport::Http),
        Ok(pb::ShardTransport::Grpc) => Ok(Transport::Grpc),
        Err(_) => Err(Error::invalid_argument(
            "gRPC message",
            format!("unknown shard transport {transport}"),
        )),
    }
}

convert_both_ways!(
    BucketRange,
    pb::BucketRange {
        start_bucket_inclusive,
        end_bucket_exclusive,
        shard_id,
    }
);

convert_both_ways!(
    ShardSqlResult,
    pb::ShardSqlResult {
        shard_id,
        result: option,
        error,
        error_code,
    }
);

impl From<CatalogHistoryEntry> for pb::CatalogHistoryEntry {
    fn from(entry: CatalogHistoryEntry) -> Self {
        Self {
            applied_utc: entry.applied_utc,
            keyspace: entry.keyspace,
            map_version: entry.map_version,
            operator: entry.audit.operator,
            comment: entry.audit.comment,
            metadata_only_ownership_change: entry.metadata_only_ownership_change,
        }
    }
}

impl From<pb::CatalogHistoryEntry> for CatalogHistoryEntry {
    fn from(entry: pb::CatalogHistoryEntry) -> Self {
        Self {
            applied_utc: entry.applied_utc,
            keyspace: entry.keyspace,
            map_version: entry.map_version,
            audit: Audit::new(entry.operator, entry.comment),
            metadata_only_ownership_change: entry.metadata_only_ownership_change,
        }
    }
}

impl From<ShardSnapshot> for pb::ShardSnapshot {
    fn from(shard: ShardSnapshot) -> Self {
        Self {
            shard_id: shard.shard_id,
            enabled: shard.enabled,
            role: role_to_pb(shard.role),
            primary_shard_id: shard.replica.primary_shard_id,
            promotion_eligible: shard.replica.promotion_eligible,
            replication_lag_bytes: shard.replica.replication_lag_bytes,
            last_replicated_utc: shard.replica.last_replicated_utc,
            transport: transport_to_pb(shard.transport),
            endpoint: shard.endpoint,
            remote_shard_id: shard.remote_shard_id,
            data_source: shard.data_source,
            has_connection_string: shard.has_connection_string,
            has_api_key: shard.has_api_key,
            api_key_header_name: shard.api_key_header_name,
        }
    }
}

impl TryFrom<pb::ShardSnapshot> for ShardSnapshot {
    type Error = Error;
    fn try_from(shard: pb::ShardSnapshot) -> Result<Self> {
        Ok(Self {
            role: role_from_pb(shard.role)?,
            transport: transport_from_pb(shard.transport)?,
            shard_id: shard.shard_id,
            enabled: shard.enabled,
            replica: ReplicaInfo {
                primary_shard_id: shard.primary_shard_id,
                promotion_eligible: shard.promotion_eligible,
                replication_lag_bytes: shard.replication_lag_bytes,
                last_replicated_utc: shard.last_replicated_utc,
            },
            endpoint: shard.endpoint,
            remote_shard_id: shard.remote_shard_id,
            data_source: shard.data_source,
            has_connection_string: shard.has_connection_string,
            has_api_key: shard.has_api_key,
            api_key_header_name: shard.api_key_header_name,
        })
    }
}

impl From<ShardMapSnapshot> for pb::ShardMapSnapshot {
    fn from(map: ShardMapSnapshot) -> Self {
        Self {
            keyspace: map.keyspace,
            map_version: map.map_version,
            virtual_bucket_count: map.virtual_bucket_count,
            shards: map.shards.into_iter().map(Into::into).collect(),
            bucket_ranges: map.bucket_ranges.into_iter().map(Into::into).collect(),
            exact_key_pins: map.exact_key_pins.into_iter().collect(),
            directories: map.directories.into_iter().map(Into::into).collect(),
            summary: map.summary.map(|summary| pb::MapSummary {
                shard_count: summary.shard_count,
                bucket_range_count: summary.bucket_range_count,
                pin_count: summary.pin_count,
                directory_entry_count: summary.directory_entry_count,
                omitted: summary.omitted,
            }),
        }
    }
}

impl TryFrom<pb::ShardMapSnapshot> for ShardMapSnapshot {
    type Error = Error;
    fn try_from(map: pb::ShardMapSnapshot) -> Result<Self> {
        Ok(Self {
            keyspace: map.keyspace,
            map_version: map.map_version,
            virtual_bucket_count: map.virtual_bucket_count,
            shards: map.shards.into_iter().map(TryInto::try_into).collect::<Result<_>>()?,
            bucket_ranges: map.bucket_ranges.into_iter().map(Into::into).collect(),
            exact_key_pins: map.exact_key_pins.into_iter().collect(),
            directories: map.directories.into_iter().map(Into::into).collect(),
            summary: map.summary.map(|summary| MapSummary {
                shard_count: summary.shard_count,
                bucket_range_count: summary.bucket_range_count,
                pin_count: summary.pin_count,
                directory_entry_count: summary.directory_entry_count,
                omitted: summary.omitted,
            }),
        })
    }
}

impl From<ResolvedRoute> for pb::ShardResolution {
    fn from(route: ResolvedRoute) -> Self {
        Self {
            keyspace: route.keyspace,
            key: route.key,
            token: route.token,
            token_hex: route.token_hex,
            bucket: route.bucket,
            shard_id: route.shard_id,
            map_version: route.map_version,
            source: match route.source {
                RouteSource::Pin => pb::RouteSource::Pin as i32,
                RouteSource::BucketRange => pb::RouteSource::BucketRange as i32,
            },
        }
    }
}

impl TryFrom<pb::ShardResolution> for ResolvedRoute {
    type Error = Error;
    fn try_from(route: pb::ShardResolution) -> Result<Self> {
        let source = match pb::RouteSource::try_from(route.source) {
            Ok(pb::RouteSource::Pin) => RouteSource::Pin,
            Ok(pb::RouteSource::BucketRange) => RouteSource::BucketRange,
            Ok(pb::RouteSource::Unspecified) | Err(_) => {
                return Err(Error::invalid_argument(
                    "gRPC message",
                    format!("unknown route source {}", route.source),
                ));
            }
        };
        Ok(Self {
            keyspace: route.keyspace,
            key: route.key,
            token: route.token,
            token_hex: route.token_hex,
            bucket: route.bucket,
            shard_id: route.shard_id,
            map_version: route.map_version,
            source,
        })
    }
}

impl From<ShardStatus> for pb::ShardStatus {
    fn from(status: ShardStatus) -> Self {
        Self {
            shard_id: status.shard_id,
            data_source: status.data_source,
            enabled: status.enabled,
            healthy: status.healthy,
            role: role_to_pb(status.role),
            primary_shard_id: status.replica.primary_shard_id,
            promotion_eligible: status.replica.promotion_eligible,
            can_promote: status.can_promote,
            replication_lag_bytes: status.replica.replication_lag_bytes,
            last_replicated_utc: status.replica.last_replicated_utc,
            error: status.error,
            info: status.info.map(Into::into),
        }
    }
}

impl TryFrom<pb::ShardStatus> for ShardStatus {
    type Error = Error;
    fn try_from(status: pb::ShardStatus) -> Result<Self> {
        Ok(Self {
            role: role_from_pb(status.role)?,
            shard_id: status.shard_id,
            data_source: status.data_source,
            enabled: status.enabled,
            healthy: status.healthy,
            replica: ReplicaInfo {
                primary_shard_id: status.primary_shard_id,
                promotion_eligible: status.promotion_eligible,
                replication_lag_bytes: status.replication_lag_bytes,
                last_replicated_utc: status.last_replicated_utc,
            },
            can_promote: status.can_promote,
            error: status.error,
            info: status.info.map(Into::into),
        })
    }
}

impl From<ShardStatusQuery> for pb::ShardStatusPageRequest {
    fn from(query: ShardStatusQuery) -> Self {
        Self {
            shard_id: query.shard_id,
            unhealthy_only: query.unhealthy_only,
            offset: query.offset,
            limit: query.limit,
        }
    }
}

impl From<pb::ShardStatusPageRequest> for ShardStatusQuery {
    fn from(request: pb::ShardStatusPageRequest) -> Self {
        Self {
            shard_id: request.shard_id,
            unhealthy_only: request.unhealthy_only,
            offset: request.offset,
            limit: request.limit,
        }
    }
}

impl From<ShardStatusPage> for pb::ShardStatusPage {
    fn from(page: ShardStatusPage) -> Self {
        let ShardStatusSummary {
            shards,
            enabled,
            disabled,
            healthy,
            unavailable,
        } = page.summary;
        Self {
            summary: Some(pb::ShardStatusSummary {
                shards,
                enabled,
                disabled,
                healthy,
                unavailable,
            }),
            total: page.total,
            offset: page.offset,
            shards: page.shards.into_iter().map(Into::into).collect(),
        }
    }
}

impl TryFrom<pb::ShardStatusPage> for ShardStatusPage {
    type Error = Error;
    fn try_from(page: pb::ShardStatusPage) -> Result<Self> {
        let summary = page.summary.unwrap_or_default();
        Ok(Self {
            summary: ShardStatusSummary {
                shards: summary.shards,
                enabled: summary.enabled,
                disabled: summary.disabled,
                healthy: summary.healthy,
                unavailable: summary.unavailable,
            },
            total: page.total,
            offset: page.offset,
            shards: page.shards.into_iter().map(TryInto::try_into).collect::<Result<_>>()?,
        })
    }
}

impl From<CatalogState> for pb::ShardCatalogState {
    fn from(state: CatalogState) -> Self {
        Self {
            source: state.source,
            is_catalog_enabled: state.is_catalog_enabled,
            active_map: Some(state.active_map.into()),
            pending_map: state.pending_map.map(Into::into),
            history: state.history.into_iter().map(Into::into).collect(),
        }
    }
}

impl TryFrom<pb::ShardCatalogState> for CatalogState {
    type Error = Error;
    fn try_from(state: pb::ShardCatalogState) -> Result<Self> {
        Ok(Self {
            source: state.source,
            is_catalog_enabled: state.is_catalog_enabled,
            active_map: state.active_map.ok_or_else(|| missing("active_map"))?.try_into()?,
            pending_map: state.pending_map.map(TryInto::try_into).transpose()?,
            history: state.history.into_iter().map(Into::into).collect(),
        })
    }
}
