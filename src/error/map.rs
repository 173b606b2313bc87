//! Why a shard map was refused.

/// A shard-map validation failure. Every message names the offending item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    /// The map keyspace is blank.
    #[error("shard map keyspace is required")]
    BlankKeyspace,
    /// `mapVersion` is zero or negative.
    #[error("mapVersion must be greater than 0 (got {value})")]
    InvalidMapVersion {
        /// The value given.
        value: i64,
    },
    /// `virtualBucketCount` is zero, negative, or above the cap.
    #[error("virtualBucketCount must be between 1 and {max} (got {value})")]
    InvalidBucketCount {
        /// The value given.
        value: i64,
        /// The largest count accepted.
        max: u32,
    },
    /// The map defines no shard.
    #[error("the shard map defines no shards")]
    NoShards,
    /// A shard id is blank.
    #[error("shard #{index} has a blank shardId")]
    BlankShardId {
        /// Position of the shard in `shards` (0-based).
        index: usize,
    },
    /// A shard id contains `:`, which would break transaction ids.
    #[error("shard id '{shard_id}' contains ':', which transaction ids reserve as a separator")]
    ShardIdHasColon {
        /// The id given.
        shard_id: String,
    },
    /// A shard id contains a character other than ASCII letters, digits, `_`, `-`, `.`.
    #[error("shard id '{shard_id}' may contain only ASCII letters, digits, '_', '-' and '.'")]
    InvalidShardIdCharacters {
        /// The id given.
        shard_id: String,
    },
    /// A shard id that a data host cannot serve as a file name (see
    /// [`data_host_shard_id`](crate::map::data_host_shard_id)).
    #[error("shard id '{shard_id}' cannot name a shard on a data host: {reason}")]
    InvalidDataHostShardId {
        /// The id given.
        shard_id: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// `remoteShardId` set on a shard that is not reached through an `endpoint`.
    #[error("shard '{shard_id}' sets remoteShardId, which names a shard of a data host and needs an endpoint")]
    RemoteShardIdWithoutEndpoint {
        /// The shard.
        shard_id: String,
    },
    /// Two shards share an id, ignoring case.
    #[error("shard id '{shard_id}' is defined more than once (ids are compared ignoring case)")]
    DuplicateShardId {
        /// The repeated id.
        shard_id: String,
    },
    /// A role other than `Primary` or `Replica`.
    #[error("shard '{shard_id}' has role '{role}'; expected 'Primary' or 'Replica'")]
    InvalidRole {
        /// The shard.
        shard_id: String,
        /// The role given.
        role: String,
    },
    /// A transport other than `direct`, `http` or `grpc`, or one that does not fit the target.
    #[error("shard '{shard_id}' has transport '{transport}': {reason}")]
    InvalidTransport {
        /// The shard.
        shard_id: String,
        /// The transport given.
        transport: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A shard with no `dataSource`, `endpoint` or `connectionString`.
    #[error("shard '{shard_id}' needs exactly one of dataSource, endpoint or connectionString, and has none")]
    MissingTarget {
        /// The shard.
        shard_id: String,
    },
    /// A shard with more than one target.
    #[error("shard '{shard_id}' needs exactly one of dataSource, endpoint or connectionString, but sets {targets}")]
    MultipleTargets {
        /// The shard.
        shard_id: String,
        /// The targets it sets.
        targets: String,
    },
    /// No shard is enabled.
    #[error("the shard map needs at least one enabled shard")]
    NoEnabledShard,
    /// Two shards name the same file: equal `dataSource` paths once normalised, or, when a master
    /// catalog opens or seeds the map, paths that resolve to one file.
    #[error("shards '{first}' and '{second}' both use file '{file}'; each shard needs a file of its own")]
    DuplicateShardFile {
        /// The shard defined first.
        first: String,
        /// The shard defined later, naming the same file.
        second: String,
        /// The file, as the later shard names it.
        file: String,
    },
    /// A shard's file is the master catalog that holds the map.
    #[error("shard '{shard_id}' uses file '{file}', which is the master catalog; a shard needs a file of its own")]
    ShardIsMasterCatalog {
        /// The shard.
        shard_id: String,
        /// The file, as the shard names it.
        file: String,
    },
    /// `replicationLagBytes` is negative.
    #[error("shard '{shard_id}' has negative replicationLagBytes ({value})")]
    NegativeReplicationLag {
        /// The shard.
        shard_id: String,
        /// The value given.
        value: i64,
    },
    /// `lastReplicatedUtc` is not an RFC 3339 timestamp.
    #[error("shard '{shard_id}' has lastReplicatedUtc '{value}', which is not an RFC 3339 timestamp")]
    InvalidTimestamp {
        /// The shard.
        shard_id: String,
        /// The value given.
        value: String,
    },
    /// A replica without `primaryShardId`.
    #[error("replica shard '{shard_id}' requires primaryShardId")]
    ReplicaWithoutPrimary {
        /// The replica.
        shard_id: String,
    },
    /// A replica naming itself as its primary.
    #[error("replica shard '{shard_id}' cannot name itself as primaryShardId")]
    ReplicaOfItself {
        /// The replica.
        shard_id: String,
    },
    /// A replica naming a primary that is not defined.
    #[error("replica shard '{shard_id}' names unknown primary shard '{primary_shard_id}'")]
    ReplicaOfUnknownShard {
        /// The replica.
        shard_id: String,
        /// The unknown primary.
        primary_shard_id: String,
    },
    /// A replica naming another replica as its primary.
    #[error("replica shard '{shard_id}' names '{primary_shard_id}' as primaryShardId, which is not a primary shard")]
    ReplicaOfReplica {
        /// The replica.
        shard_id: String,
        /// The shard it names.
        primary_shard_id: String,
    },
    /// A primary carrying a replica-only field.
    #[error("primary shard '{shard_id}' cannot set {field} (replica-only)")]
    PrimaryWithReplicaField {
        /// The primary.
        shard_id: String,
        /// The replica-only field it sets.
        field: &'static str,
    },
    /// Several shards but no bucket ranges.
    #[error("bucketRanges are required when the map defines more than one shard")]
    BucketRangesRequired,
    /// A bucket range naming an undefined shard.
    #[error("bucket range [{start}, {end}) names unknown shard '{shard_id}'")]
    RangeUnknownShard {
        /// The shard named.
        shard_id: String,
        /// Range start.
        start: i64,
        /// Range end.
        end: i64,
    },
    /// A bucket range owned by a replica.
    #[error("bucket range [{start}, {end}) names replica shard '{shard_id}'; only primary shards own buckets or pins")]
    RangeOwnedByReplica {
        /// The replica.
        shard_id: String,
        /// Range start.
        start: i64,
        /// Range end.
        end: i64,
    },
    /// An empty range or one outside `[0, virtualBucketCount)`.
    #[error("bucket range [{start}, {end}) of shard '{shard_id}' is empty or outside [0, {bucket_count})")]
    InvalidRange {
        /// The owning shard.
        shard_id: String,
        /// Range start.
        start: i64,
        /// Range end.
        end: i64,
        /// The map's bucket count.
        bucket_count: u32,
    },
    /// Two ranges cover the same bucket.
    #[error("bucket {bucket} is assigned to both shard '{first}' and shard '{second}'")]
    BucketOverlap {
        /// The first bucket found in both ranges.
        bucket: u32,
        /// The owner from the earlier range.
        first: String,
        /// The owner from the later range.
        second: String,
    },
    /// A bucket no range covers.
    #[error("bucket {bucket} is not assigned to any shard")]
    BucketGap {
        /// The first uncovered bucket.
        bucket: u32,
    },
    /// A pin with a blank key.
    #[error("exactKeyPins has a blank route key (pinned to '{shard_id}')")]
    BlankPinKey {
        /// The shard the blank key was pinned to.
        shard_id: String,
    },
    /// Two pin keys equal after trimming.
    #[error("exactKeyPins lists route key '{key}' more than once (after trimming)")]
    DuplicatePinKey {
        /// The repeated key.
        key: String,
    },
    /// A pin naming an undefined shard.
    #[error("exact pin '{key}' names unknown shard '{shard_id}'")]
    PinUnknownShard {
        /// The pinned key.
        key: String,
        /// The shard named.
        shard_id: String,
    },
    /// A pin owned by a replica.
    #[error("exact pin '{key}' names replica shard '{shard_id}'; only primary shards own buckets or pins")]
    PinOwnedByReplica {
        /// The pinned key.
        key: String,
        /// The replica.
        shard_id: String,
    },
    /// A directory or directory entry with a blank required field.
    #[error("shard directory {field} is required (in '{entry}')")]
    BlankDirectoryField {
        /// The blank field.
        field: &'static str,
        /// The directory or entry (`directory:lookupKey`) it belongs to, when known.
        entry: String,
    },
    /// Two directories with the same name (ignoring case).
    #[error("shard directory '{name}' is defined more than once (names are compared ignoring case)")]
    DuplicateDirectory {
        /// The repeated name.
        name: String,
    },
    /// An entry naming a directory the map does not define.
    #[error("shard directory entry '{entry}' names unknown directory '{directory}'")]
    EntryUnknownDirectory {
        /// The entry, `directory:lookupKey`.
        entry: String,
        /// The directory named.
        directory: String,
    },
    /// An entry whose keyspace is not its directory's.
    #[error(
        "shard directory entry '{entry}' targets keyspace '{keyspace}', which does not match its directory's keyspace '{expected}'"
    )]
    EntryKeyspaceMismatch {
        /// The entry, `directory:lookupKey`.
        entry: String,
        /// The entry's keyspace.
        keyspace: String,
        /// The directory's keyspace.
        expected: String,
    },
    /// An entry with a map version of zero or less.
    #[error("shard directory entry '{entry}' has mapVersion {value}; it must be greater than 0")]
    EntryMapVersionNotPositive {
        /// The entry, `directory:lookupKey`.
        entry: String,
        /// The version given.
        value: i64,
    },
    /// An entry written by a map version above the map's own.
    #[error("shard directory entry '{entry}' names future map version {value} (the map is version {map_version})")]
    EntryFutureMapVersion {
        /// The entry, `directory:lookupKey`.
        entry: String,
        /// The entry's version.
        value: i64,
        /// The map's version.
        map_version: u64,
    },
    /// Two entries of one directory with the same lookup key (ignoring case).
    #[error("shard directory entry '{entry}' is listed more than once (lookup keys are compared ignoring case)")]
    DuplicateDirectoryEntry {
        /// The entry, `directory:lookupKey`.
        entry: String,
    },
    /// An entry whose route resolves to another shard than the one it names.
    #[error(
        "shard directory entry '{entry}' points to shard '{shard_id}', but route key '{route_key}' resolves to shard '{resolved}'"
    )]
    EntryShardMismatch {
        /// The entry, `directory:lookupKey`.
        entry: String,
        /// The shard the entry names.
        shard_id: Box<str>,
        /// The entry's route key.
        route_key: Box<str>,
        /// The shard the route resolves to.
        resolved: Box<str>,
    },
    /// An entry whose route does not resolve on the map (another keyspace, a disabled shard).
    #[error("shard directory entry '{entry}' has a route that does not resolve: {reason}")]
    EntryRouteUnresolved {
        /// The entry, `directory:lookupKey`.
        entry: String,
        /// Why.
        reason: String,
    },
}
