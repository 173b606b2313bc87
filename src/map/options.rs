//! The shard-map JSON model, exactly as operators write it.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::directory::{DirectoryDefinition, DirectoryEntry};
use crate::error::{Error, Result};

/// A shard map as written in JSON (camelCase). Unknown fields are refused so that a typo
/// never silently changes routing.
///
/// This is the unvalidated form; [`ShardMap::new`](super::ShardMap::new) validates it.
///
/// ```
/// use shardlite::map::ShardingOptions;
///
/// let options = ShardingOptions::from_json(r#"{
///     "keyspace": "orders_by_month",
///     "mapVersion": 1,
///     "virtualBucketCount": 16,
///     "shards": [{ "shardId": "shard-0", "dataSource": "shard-0.db" }]
/// }"#)?;
/// assert_eq!(options.shards.len(), 1);
/// assert!(ShardingOptions::from_json(r#"{"shards": [], "mapVersoin": 2}"#).is_err());
/// # Ok::<(), shardlite::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "server",
    schema(description = "A shard map as written in a map file (camelCase); unknown fields are refused.")
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShardingOptions {
    /// The keyspace this map serves. Default `"default"`.
    #[serde(default = "default_keyspace")]
    pub keyspace: String,
    /// The map version; must be positive and grows with every catalog update. Default 1.
    #[serde(default = "default_map_version")]
    pub map_version: i64,
    /// The number of virtual buckets. Default 4096.
    #[serde(default = "default_bucket_count")]
    pub virtual_bucket_count: i64,
    /// The shards, in definition order.
    pub shards: Vec<ShardDefinition>,
    /// Which shard owns which buckets. May be omitted when there is exactly one shard.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bucket_ranges: Vec<BucketRange>,
    /// Route keys placed on a named shard regardless of their bucket (case-sensitive keys).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub exact_key_pins: BTreeMap<String, String>,
    /// Shard directories: named lookup indexes into the keyspace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directories: Vec<DirectoryDefinition>,
    /// The entries of the shard directories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directory_entries: Vec<DirectoryEntry>,
}

fn default_keyspace() -> String {
    "default".to_owned()
}
fn default_map_version() -> i64 {
    1
}
fn default_bucket_count() -> i64 {
    4096
}
fn default_true() -> bool {
    true
}

impl ShardingOptions {
    /// Parses a shard map from JSON; the error names the unknown field or the bad value.
    pub fn from_json(json: &str) -> Result<Self> {
        serde_json::from_str(json).map_err(|source| Error::Json {
            what: "shard map",
            source,
        })
    }

    /// Serialises the map as it was given (secrets included: this is the stored form, never a snapshot).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Replica metadata, shared by the map, its snapshots and shard status: which primary a replica
/// follows, whether an operator may promote it, and how far behind it is. Replicas are metadata
/// only; on a primary every field is empty.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReplicaInfo {
    /// The primary the replica follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_shard_id: Option<String>,
    /// Whether an operator may promote the replica.
    #[serde(default)]
    pub promotion_eligible: bool,
    /// How far behind the primary the replica is, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication_lag_bytes: Option<i64>,
    /// When the replica last caught up (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_replicated_utc: Option<String>,
}

/// One shard of the map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShardDefinition {
    /// ASCII letters, digits, `_`, `-`, `.`; unique ignoring case.
    pub shard_id: String,
    /// Disabled shards may be defined (and own buckets) but routes to them fail. Default true.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// `Primary` (default) or `Replica`, case-insensitive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// For replicas: the primary, promotion eligibility and lag (`primaryShardId`,
    /// `promotionEligible`, `replicationLagBytes`, `lastReplicatedUtc`).
    #[serde(flatten)]
    pub replica: ReplicaInfo,
    /// A local SQLite file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_source: Option<String>,
    /// A daemon serving this shard (with `transport`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// `direct`, `http` or `grpc`, case-insensitive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// With `endpoint`: the id of this shard on a data host (a daemon started with
    /// `serve --shard-dir`), sent with every call so the host serves its file `<id>.db`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_shard_id: Option<String>,
    /// A connection string for this shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(value_type = Option<String>))]
    pub connection_string: Option<Secret>,
    /// The API key to present to the shard's daemon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(value_type = Option<String>))]
    pub api_key: Option<Secret>,
    /// The header carrying the API key (default `X-CSharpDB-Api-Key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_header_name: Option<String>,
}

impl ShardDefinition {
    /// A primary shard stored in a local SQLite file.
    pub fn local(shard_id: impl Into<String>, data_source: impl Into<String>) -> Self {
        Self {
            shard_id: shard_id.into(),
            enabled: true,
            role: None,
            replica: ReplicaInfo::default(),
            data_source: Some(data_source.into()),
            endpoint: None,
            transport: None,
            remote_shard_id: None,
            connection_string: None,
            api_key: None,
            api_key_header_name: None,
        }
    }
}

/// A half-open range of buckets `[startBucketInclusive, endBucketExclusive)` owned by one shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BucketRange {
    /// First bucket of the range.
    pub start_bucket_inclusive: i64,
    /// One past the last bucket of the range.
    pub end_bucket_exclusive: i64,
    /// The owning shard.
    pub shard_id: String,
}

impl BucketRange {
    /// A range `[start, end)` owned by `shard_id`.
    pub fn new(start: i64, end: i64, shard_id: impl Into<String>) -> Self {
        Self {
            start_bucket_inclusive: start,
            end_bucket_exclusive: end,
            shard_id: shard_id.into(),
        }
    }
}

/// A secret string (connection string or API key): serialised as is for storage, but never
/// shown by `Debug` and never part of a snapshot.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself; call only where it is used, never to print it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub(crate) fn is_blank(&self) -> bool {
        self.0.trim().is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_when_fields_are_omitted() {
        let options = ShardingOptions::from_json(r#"{"shards":[{"shardId":"a","dataSource":"a.db"}]}"#).unwrap();
        assert_eq!(options.keyspace, "default");
        assert_eq!(options.map_version, 1);
        assert_eq!(options.virtual_bucket_count, 4096);
        assert!(options.shards[0].enabled);
    }

    #[test]
    fn unknown_fields_are_refused_by_name_at_every_level() {
        for (json, field) in [
            (r#"{"shards":[],"bucketRangez":[]}"#, "bucketRangez"),
            (
                r#"{"shards":[{"shardId":"a","dataSource":"a.db","enabeld":false}]}"#,
                "enabeld",
            ),
            (
                r#"{"shards":[],"bucketRanges":[{"startBucketInclusive":0,"endBucketExclusive":1,"shardId":"a","owner":"b"}]}"#,
                "owner",
            ),
        ] {
            let err = ShardingOptions::from_json(json).unwrap_err();
            assert!(err.to_string().contains(field), "{err}");
        }
    }

    #[test]
    fn secrets_are_redacted_in_debug_output() {
        let mut shard = ShardDefinition::local("a", "a.db");
        shard.api_key = Some(Secret::new("hunter2"));
        assert!(!format!("{shard:?}").contains("hunter2"));
    }
}
