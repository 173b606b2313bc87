//! Secret-free views of a shard map, for operators and the wire.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{BucketRange, ReplicaInfo, ShardMap, ShardRole, ShardTarget, Transport};

/// A shard map as shown to operators: no connection strings or API keys, only whether
/// they are set, and bucket ranges in canonical coalesced order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardMapSnapshot {
    /// The map keyspace.
    pub keyspace: String,
    /// The map version.
    pub map_version: u64,
    /// The number of virtual buckets.
    pub virtual_bucket_count: u32,
    /// The shards in definition order.
    pub shards: Vec<ShardSnapshot>,
    /// Canonical bucket ranges.
    pub bucket_ranges: Vec<BucketRange>,
    /// Exact pins, route key to shard id.
    pub exact_key_pins: BTreeMap<String, String>,
    /// The shard directories, each with its entry count (entries are listed separately, paged).
    #[serde(default)]
    pub directories: Vec<DirectorySnapshot>,
    /// Set when the snapshot summarises a large map: the lists longer than
    /// [`SNAPSHOT_ECHO_LIMIT`] are left empty and counted here. Absent for a whole map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<MapSummary>,
}

/// The most shards, bucket ranges or pins a summarising snapshot lists
/// ([`ShardMap::snapshot_within`]); a longer list is counted, not listed.
pub const SNAPSHOT_ECHO_LIMIT: usize = 1_000;

/// How large a map is, when a snapshot summarises it instead of listing every part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct MapSummary {
    /// How many shards the map defines.
    pub shard_count: u64,
    /// How many canonical bucket ranges it has.
    pub bucket_range_count: u64,
    /// How many exact-key pins it has.
    pub pin_count: u64,
    /// How many directory entries it holds, over all directories.
    pub directory_entry_count: u64,
    /// The lists left empty because they are longer than the limit (`shards`, `bucketRanges`,
    /// `exactKeyPins`), in that order.
    pub omitted: Vec<String>,
}

/// One shard directory in a [`ShardMapSnapshot`]: its definition and how many entries it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DirectorySnapshot {
    /// The directory's name.
    pub directory_name: String,
    /// The keyspace its entries route into.
    pub target_keyspace: String,
    /// What the directory is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the directory mutations are refused.
    pub read_only: bool,
    /// How many entries it holds.
    pub entry_count: u64,
}

/// One shard in a [`ShardMapSnapshot`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardSnapshot {
    /// The shard id.
    pub shard_id: String,
    /// Whether routes may resolve to it.
    pub enabled: bool,
    /// Primary or replica.
    pub role: ShardRole,
    /// Replica metadata (empty on a primary).
    #[serde(flatten)]
    pub replica: ReplicaInfo,
    /// The transport to the shard.
    pub transport: Transport,
    /// The daemon endpoint, for remote shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The shard's id on its data host, for a remote shard of one (not a secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_shard_id: Option<String>,
    /// The local file, for direct shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_source: Option<String>,
    /// Whether a connection string is configured (its value is never shown).
    pub has_connection_string: bool,
    /// Whether an API key is configured (its value is never shown).
    pub has_api_key: bool,
    /// The header carrying the API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_header_name: Option<String>,
}

impl ShardMap {
    /// A secret-free snapshot of this map, listing every shard, range and pin.
    pub fn snapshot(&self) -> ShardMapSnapshot {
        self.snapshot_within(usize::MAX)
    }

    /// A secret-free snapshot that lists the shards, canonical bucket ranges and pins only where
    /// each list holds at most `limit` items; longer lists are left empty and counted in
    /// [`ShardMapSnapshot::summary`]. A map within the limit gives the same snapshot as
    /// [`snapshot`](Self::snapshot).
    ///
    /// ```
    /// use shardlite::map::{ShardMap, ShardingOptions};
    ///
    /// let mut options = ShardingOptions::from_json(r#"{"keyspace":"k","shards":[{"shardId":"s0","dataSource":"s0.db"}]}"#)?;
    /// options.exact_key_pins = (0..5).map(|n| (format!("t{n}"), "s0".to_owned())).collect();
    /// let map = ShardMap::new(options)?;
    /// assert_eq!(map.snapshot_within(10), map.snapshot());
    /// let summary = map.snapshot_within(3);
    /// assert!(summary.exact_key_pins.is_empty());
    /// assert_eq!(summary.summary.unwrap().pin_count, 5);
    /// # Ok::<(), shardlite::Error>(())
    /// ```
    pub fn snapshot_within(&self, limit: usize) -> ShardMapSnapshot {
        let ranges = self.shared_ranges();
        let pin_count = self.pin_count();
        let mut omitted = Vec::new();
        if self.shards().len() > limit {
            omitted.push("shards".to_owned());
        }
        if ranges.len() > limit {
            omitted.push("bucketRanges".to_owned());
        }
        if pin_count > limit {
            omitted.push("exactKeyPins".to_owned());
        }
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let summary = (!omitted.is_empty()).then(|| MapSummary {
            shard_count: count(self.shards().len()),
            bucket_range_count: count(ranges.len()),
            pin_count: count(pin_count),
            directory_entry_count: count(self.directory_entry_total()),
            omitted,
        });
        let shards = if self.shards().len() > limit {
            &[][..]
        } else {
            self.shards()
        };
        let shards = shards
            .iter()
            .map(|s| {
                let (transport, endpoint, data_source) = match &s.target {
                    ShardTarget::DataSource(path) => (Transport::Direct, None, Some(path.clone())),
                    ShardTarget::Endpoint {
                        endpoint, transport, ..
                    } => (*transport, Some(endpoint.clone()), None),
                    ShardTarget::ConnectionString(_) => (Transport::Direct, None, None),
                };
                let remote_shard_id = match &s.target {
                    ShardTarget::Endpoint { remote_shard_id, .. } => remote_shard_id.clone(),
                    _ => None,
                };
                ShardSnapshot {
                    shard_id: s.id.clone(),
                    enabled: s.enabled,
                    role: s.role,
                    replica: s.replica.clone(),
                    transport,
                    endpoint,
                    remote_shard_id,
                    data_source,
                    has_connection_string: matches!(s.target, ShardTarget::ConnectionString(_)),
                    has_api_key: s.api_key.is_some(),
                    api_key_header_name: s.api_key_header_name.clone(),
                }
            })
            .collect();
        let pins = (pin_count <= limit).then(|| self.pin_map());
        let exact_key_pins = pins
            .iter()
            .flat_map(|pins| pins.keys())
            .filter_map(|key| {
                let key = key.trim();
                let shard = self.pinned_shard(key)?;
                Some((key.to_owned(), self.shards()[shard].id.clone()))
            })
            .collect();
        ShardMapSnapshot {
            keyspace: self.keyspace().to_owned(),
            map_version: self.version(),
            virtual_bucket_count: self.bucket_count(),
            shards,
            bucket_ranges: if ranges.len() > limit {
                Vec::new()
            } else {
                ranges.to_vec()
            },
            exact_key_pins,
            // Shared with the maps that followed a change of pins (which keeps them).
            directories: self
                .options
                .directories
                .iter()
                .map(|directory| DirectorySnapshot {
                    directory_name: directory.directory_name.trim().to_owned(),
                    target_keyspace: directory.target_keyspace.trim().to_owned(),
                    description: directory
                        .description
                        .as_deref()
                        .map(str::trim)
                        .filter(|d| !d.is_empty())
                        .map(str::to_owned),
                    read_only: directory.read_only,
                    entry_count: u64::try_from(self.directory_entry_count(&directory.directory_name))
                        .unwrap_or(u64::MAX),
                })
                .collect(),
            summary,
        }
    }
}
