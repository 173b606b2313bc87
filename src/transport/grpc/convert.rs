//! Conversions between the crate's types and the generated protobuf messages, used by both the
//! gRPC client and the daemon's gRPC service so the two sides cannot disagree.
//!
//! Encoding (crate → protobuf) never fails. Decoding (protobuf → crate) fails only where the
//! message can carry something the crate type cannot: JSON text that does not parse, a named
//! parameter without a name, an absent required field, an unknown enum value.

use std::collections::{BTreeMap, HashMap};

use super::proto as pb;
use crate::data::{CatalogHistoryEntry, CatalogState};
use crate::data::{
    ColumnInfo, DatabaseInfo, Document, DocumentPage, Params, ProcedureDefinition, ProcedureParameter, Row, RowPage,
    SavedQuery, ShardSqlResult, ShardStatus, SqlResult, TableSchema, TransactionInfo, Value,
};
use crate::error::{Error, Result};
use crate::map::{BucketRange, ShardMapSnapshot, ShardRole, ShardSnapshot, Transport};
use crate::routing::{ResolvedRoute, RouteSource};

// ------------------------------------------------------------------ values and parameters

impl From<Value> for pb::Value {
    fn from(value: Value) -> Self {
        use pb::value::Kind;
        let kind = match value {
            Value::Null => Kind::Null(pb::Null {}),
            Value::Integer(v) => Kind::Integer(v),
            Value::Real(v) => Kind::Real(v),
            Value::Text(v) => Kind::Text(v),
            Value::Blob(v) => Kind::Blob(v),
        };
        Self { kind: Some(kind) }
    }
}

impl From<pb::Value> for Value {
    fn from(value: pb::Value) -> Self {
        use pb::value::Kind;
        match value.kind {
            None | Some(Kind::Null(_)) => Self::Null,
            Some(Kind::Integer(v)) => Self::Integer(v),
            Some(Kind::Real(v)) => Self::Real(v),
            Some(Kind::Text(v)) => Self::Text(v),
            Some(Kind::Blob(v)) => Self::Blob(v),
        }
    }
}

fn values_to_pb(values: Vec<Value>) -> pb::ValueList {
    pb::ValueList {
        values: values.into_iter().map(Into::into).collect(),
    }
}

fn values_from_pb(values: pb::ValueList) -> Vec<Value> {
    values.values.into_iter().map(Into::into).collect()
}

/// A row (column name → value) as a protobuf map.
pub(crate) fn row_to_pb(row: Row) -> HashMap<String, pb::Value> {
    row.into_iter().map(|(k, v)| (k, v.into())).collect()
}

/// A protobuf map as a row (column name → value).
pub(crate) fn row_from_pb(row: HashMap<String, pb::Value>) -> Row {
    row.into_iter().map(|(k, v)| (k, v.into())).collect()
}

impl From<Params> for pb::Params {
    fn from(params: Params) -> Self {
        use pb::params::Kind;
        let kind = match params {
            Params::Positional(values) if values.is_empty() => None,
            Params::Positional(values) => Some(Kind::Positional(values_to_pb(values))),
            Params::Named(values) => Some(Kind::Named(pb::ValueMap {
                values: row_to_pb(values),
            })),
        };
        Self { kind }
    }
}

/// Decodes parameters; absent means none. Named parameters lose a leading `:`, `@` or `$`, as
/// in the JSON form; a blank name or a name given twice is refused.
#[cfg_attr(not(feature = "server"), allow(dead_code))]
pub(crate) fn params_from_pb(params: Option<pb::Params>) -> Result<Params> {
    use pb::params::Kind;
    match params.and_then(|p| p.kind) {
        None => Ok(Params::none()),
        Some(Kind::Positional(values)) => Ok(Params::Positional(values_from_pb(values))),
        Some(Kind::Named(named)) => {
            let mut values = BTreeMap::new();
            for (name, value) in named.values {
                let bare = name.trim_start_matches([':', '@', '$']);
                if bare.is_empty() {
                    return Err(Error::invalid_argument("parameters", "a named parameter needs a name"));
                }
                if values.insert(bare.to_owned(), Value::from(value)).is_some() {
                    return Err(Error::invalid_argument(
                        "parameters",
                        format!("parameter '{bare}' is given twice (with different sigils)"),
                    ));
                }
            }
            Ok(Params::Named(values))
        }
    }
}

/// Decodes a required value (a primary key): absent is an error naming `name`.
#[cfg_attr(not(feature = "server"), allow(dead_code))]
pub(crate) fn required_value(value: Option<pb::Value>, name: &'static str) -> Result<Value> {
    value
        .map(Value::from)
        .ok_or_else(|| Error::invalid_argument(name, "is required"))
}

fn missing(field: &str) -> Error {
    Error::invalid_argument("gRPC message", format!("field '{field}' is missing"))
}

// ------------------------------------------------------------------ SQL, transactions, info

impl From<SqlResult> for pb::SqlResult {
    fn from(result: SqlResult) -> Self {
        Self {
            is_query: result.is_query,
            column_names: result.column_names,
            rows: result.rows.into_iter().map(values_to_pb).collect(),
            rows_affected: result.rows_affected,
            elapsed_ms: result.elapsed_ms,
        }
    }
}

impl From<pb::SqlResult> for SqlResult {
    fn from(result: pb::SqlResult) -> Self {
        Self {
            is_query: result.is_query,
            column_names: result.column_names,
            rows: result.rows.into_iter().map(values_from_pb).collect(),
            rows_affected: result.rows_affected,
            elapsed_ms: result.elapsed_ms,
        }
    }
}

impl From<TransactionInfo> for pb::TransactionInfo {
    fn from(info: TransactionInfo) -> Self {
        Self {
            transaction_id: info.transaction_id,
            expires_at_utc: info.expires_at_utc,
        }
    }
}

impl From<pb::TransactionInfo> for TransactionInfo {
    fn from(info: pb::TransactionInfo) -> Self {
        Self {
            transaction_id: info.transaction_id,
            expires_at_utc: info.expires_at_utc,
        }
    }
}

impl From<DatabaseInfo> for pb::DatabaseInfo {
    fn from(info: DatabaseInfo) -> Self {
        Self {
            data_source: info.data_source,
            table_count: info.table_count,
            index_count: info.index_count,
            view_count: info.view_count,
            trigger_count: info.trigger_count,
            collection_count: info.collection_count,
            saved_query_count: info.saved_query_count,
            procedure_count: info.procedure_count,
        }
    }
}

impl From<pb::DatabaseInfo> for DatabaseInfo {
    fn from(info: pb::DatabaseInfo) -> Self {
        Self {
            data_source: info.data_source,
            table_count: info.table_count,
            index_count: info.index_count,
            view_count: info.view_count,
            trigger_count: info.trigger_count,
            collection_count: info.collection_count,
            saved_query_count: info.saved_query_count,
            procedure_count: info.procedure_count,
        }
    }
}

// ------------------------------------------------------------------ tables and rows

impl From<ColumnInfo> for pb::ColumnInfo {
    fn from(column: ColumnInfo) -> Self {
        Self {
            name: column.name,
            declared_type: column.declared_type,
            not_null: column.not_null,
            primary_key_position: column.primary_key_position,
            default_value: column.default_value,
        }
    }
}

impl From<pb::ColumnInfo> for ColumnInfo {
    fn from(column: pb::ColumnInfo) -> Self {
        Self {
            name: column.name,
            declared_type: column.declared_type,
            not_null: column.not_null,
            primary_key_position: column.primary_key_position,
            default_value: column.default_value,
        }
    }
}

impl From<TableSchema> for pb::TableSchema {
    fn from(schema: TableSchema) -> Self {
        Self {
            name: schema.name,
            columns: schema.columns.into_iter().map(Into::into).collect(),
            primary_key: schema.primary_key,
            sql: schema.sql,
        }
    }
}

impl From<pb::TableSchema> for TableSchema {
    fn from(schema: pb::TableSchema) -> Self {
        Self {
            name: schema.name,
            columns: schema.columns.into_iter().map(Into::into).collect(),
            primary_key: schema.primary_key,
            sql: schema.sql,
        }
    }
}

impl From<RowPage> for pb::RowPage {
    fn from(page: RowPage) -> Self {
        Self {
            column_names: page.column_names,
            rows: page.rows.into_iter().map(values_to_pb).collect(),
            total_rows: page.total_rows,
            page: page.page,
            page_size: page.page_size,
            total_pages: page.total_pages,
        }
    }
}

impl From<pb::RowPage> for RowPage {
    fn from(page: pb::RowPage) -> Self {
        Self {
            column_names: page.column_names,
            rows: page.rows.into_iter().map(values_from_pb).collect(),
            total_rows: page.total_rows,
            page: page.page,
            page_size: page.page_size,
            total_pages: page.total_pages,
        }
    }
}

// ------------------------------------------------------------------ collections

/// Parses a document sent as JSON text.
pub(crate) fn document_from_json(json: &str) -> Result<serde_json::Value> {
    serde_json::from_str(json).map_err(|source| Error::Json {
        what: "document",
        source,
    })
}

impl From<DocumentPage> for pb::DocumentPage {
    fn from(page: DocumentPage) -> Self {
        Self {
            collection_name: page.collection_name,
            documents: page
                .documents
                .into_iter()
                .map(|d| pb::Document {
                    key: d.key,
                    json: d.document.to_string(),
                })
                .collect(),
            total_count: page.total_count,
            page: page.page,
            page_size: page.page_size,
            total_pages: page.total_pages,
        }
    }
}

impl TryFrom<pb::DocumentPage> for DocumentPage {
    type Error = Error;
    fn try_from(page: pb::DocumentPage) -> Result<Self> {
        let documents = page
            .documents
            .into_iter()
            .map(|d| {
                Ok(Document {
                    document: document_from_json(&d.json)?,
                    key: d.key,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            collection_name: page.collection_name,
            documents,
            total_count: page.total_count,
            page: page.page,
            page_size: page.page_size,
            total_pages: page.total_pages,
        })
    }
}

// ------------------------------------------------------------------ saved queries and procedures

impl From<SavedQuery> for pb::SavedQuery {
    fn from(query: SavedQuery) -> Self {
        Self {
            name: query.name,
            sql_text: query.sql_text,
            created_utc: query.created_utc,
            updated_utc: query.updated_utc,
        }
    }
}

impl From<pb::SavedQuery> for SavedQuery {
    fn from(query: pb::SavedQuery) -> Self {
        Self {
            name: query.name,
            sql_text: query.sql_text,
            created_utc: query.created_utc,
            updated_utc: query.updated_utc,
        }
    }
}

impl From<ProcedureDefinition> for pb::ProcedureDefinition {
    fn from(definition: ProcedureDefinition) -> Self {
        Self {
            name: definition.name,
            body_sql: definition.body_sql,
            parameters: definition
                .parameters
                .into_iter()
                .map(|p| pb::ProcedureParameter {
                    name: p.name,
                    required: Some(p.required),
                    default: Some(p.default.into()),
                })
                .collect(),
            description: definition.description,
        }
    }
}

impl From<pb::ProcedureDefinition> for ProcedureDefinition {
    fn from(definition: pb::ProcedureDefinition) -> Self {
        Self {
            name: definition.name,
            body_sql: definition.body_sql,
            parameters: definition
                .parameters
                .into_iter()
                .map(|p| ProcedureParameter {
                    name: p.name,
                    required: p.required.unwrap_or(true),
                    default: p.default.map(Value::from).unwrap_or_default(),
                })
                .collect(),
            description: definition.description,
        }
    }
}

// ------------------------------------------------------------------ shard administration

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

impl From<ShardSnapshot> for pb::ShardSnapshot {
    fn from(shard: ShardSnapshot) -> Self {
        Self {
            shard_id: shard.shard_id,
            enabled: shard.enabled,
            role: role_to_pb(shard.role),
            primary_shard_id: shard.primary_shard_id,
            promotion_eligible: shard.promotion_eligible,
            replication_lag_bytes: shard.replication_lag_bytes,
            last_replicated_utc: shard.last_replicated_utc,
            transport: transport_to_pb(shard.transport),
            endpoint: shard.endpoint,
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
            primary_shard_id: shard.primary_shard_id,
            promotion_eligible: shard.promotion_eligible,
            replication_lag_bytes: shard.replication_lag_bytes,
            last_replicated_utc: shard.last_replicated_utc,
            endpoint: shard.endpoint,
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
            bucket_ranges: map
                .bucket_ranges
                .into_iter()
                .map(|r| pb::BucketRange {
                    start_bucket_inclusive: r.start_bucket_inclusive,
                    end_bucket_exclusive: r.end_bucket_exclusive,
                    shard_id: r.shard_id,
                })
                .collect(),
            exact_key_pins: map.exact_key_pins.into_iter().collect(),
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
            bucket_ranges: map
                .bucket_ranges
                .into_iter()
                .map(|r| BucketRange::new(r.start_bucket_inclusive, r.end_bucket_exclusive, r.shard_id))
                .collect(),
            exact_key_pins: map.exact_key_pins.into_iter().collect(),
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
            primary_shard_id: status.primary_shard_id,
            promotion_eligible: status.promotion_eligible,
            can_promote: status.can_promote,
            replication_lag_bytes: status.replication_lag_bytes,
            last_replicated_utc: status.last_replicated_utc,
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
            primary_shard_id: status.primary_shard_id,
            promotion_eligible: status.promotion_eligible,
            can_promote: status.can_promote,
            replication_lag_bytes: status.replication_lag_bytes,
            last_replicated_utc: status.last_replicated_utc,
            error: status.error,
            info: status.info.map(Into::into),
        })
    }
}

impl From<ShardSqlResult> for pb::ShardSqlResult {
    fn from(result: ShardSqlResult) -> Self {
        Self {
            shard_id: result.shard_id,
            result: result.result.map(Into::into),
            error: result.error,
            error_code: result.error_code,
        }
    }
}

impl From<pb::ShardSqlResult> for ShardSqlResult {
    fn from(result: pb::ShardSqlResult) -> Self {
        Self {
            shard_id: result.shard_id,
            result: result.result.map(Into::into),
            error: result.error,
            error_code: result.error_code,
        }
    }
}

impl From<CatalogState> for pb::ShardCatalogState {
    fn from(state: CatalogState) -> Self {
        Self {
            source: state.source,
            is_catalog_enabled: state.is_catalog_enabled,
            active_map: Some(state.active_map.into()),
            pending_map: state.pending_map.map(Into::into),
            history: state
                .history
                .into_iter()
                .map(|h| pb::CatalogHistoryEntry {
                    applied_utc: h.applied_utc,
                    keyspace: h.keyspace,
                    map_version: h.map_version,
                    operator: h.operator,
                    comment: h.comment,
                    metadata_only_ownership_change: h.metadata_only_ownership_change,
                })
                .collect(),
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
            history: state
                .history
                .into_iter()
                .map(|h| CatalogHistoryEntry {
                    applied_utc: h.applied_utc,
                    keyspace: h.keyspace,
                    map_version: h.map_version,
                    operator: h.operator,
                    comment: h.comment,
                    metadata_only_ownership_change: h.metadata_only_ownership_change,
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Real(x), Value::Real(y)) => x.to_bits() == y.to_bits(),
            _ => a == b,
        }
    }

    #[test]
    fn values_round_trip_bit_for_bit_through_protobuf_bytes() {
        use prost::Message;
        let values = vec![
            Value::Null,
            Value::Integer(i64::MIN),
            Value::Integer(i64::MAX),
            Value::Real(-0.0),
            Value::Real(f64::from_bits(1)),
            Value::Real(f64::NAN),
            Value::Real(f64::NEG_INFINITY),
            Value::Text("a\0b".into()),
            Value::Blob(vec![0, 255]),
        ];
        let bytes = values_to_pb(values.clone()).encode_to_vec();
        let back = values_from_pb(pb::ValueList::decode(bytes.as_slice()).expect("decodes"));
        assert_eq!(back.len(), values.len());
        for (a, b) in values.iter().zip(&back) {
            assert!(same(a, b), "{a:?} came back as {b:?}");
        }
    }

    #[test]
    fn named_parameters_lose_their_sigil_and_refuse_duplicates() {
        let named = |pairs: &[(&str, i64)]| {
            Some(pb::Params {
                kind: Some(pb::params::Kind::Named(pb::ValueMap {
                    values: pairs
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), Value::Integer(*v).into()))
                        .collect(),
                })),
            })
        };
        assert_eq!(
            params_from_pb(named(&[(":a", 1), ("b", 2)])).expect("valid"),
            Params::named([("a", 1), ("b", 2)])
        );
        let err = params_from_pb(named(&[(":a", 1), ("@a", 2)])).expect_err("duplicate");
        assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
        assert!(params_from_pb(named(&[("$", 1)])).is_err());
        assert_eq!(params_from_pb(None).expect("none"), Params::none());
    }

    #[test]
    fn procedure_parameters_default_to_required_when_unset() {
        let definition = pb::ProcedureDefinition {
            name: "p".into(),
            body_sql: "SELECT :x".into(),
            parameters: vec![pb::ProcedureParameter {
                name: "x".into(),
                required: None,
                default: None,
            }],
            description: None,
        };
        let back = ProcedureDefinition::from(definition);
        assert!(back.parameters[0].required);
        assert_eq!(back.parameters[0].default, Value::Null);
    }
}
