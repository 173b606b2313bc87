//! The shard map: its JSON model, validation, and secret-free snapshots.
//!
//! [`ShardingOptions`] is what operators write; [`ShardMap::new`] validates it into the
//! immutable structure routing runs against. Validation refuses, with a [`MapError`] naming
//! the offending item: gaps and overlaps in bucket coverage, empty or out-of-range ranges,
//! unknown shards, buckets or pins owned by replicas, inconsistent replica metadata, blank
//! pin keys, maps without an enabled shard, and two shards with the same `dataSource` file.
//! Unknown JSON fields are refused when parsing.
//!
//! # Shard files
//!
//! A relative `dataSource` (and a relative `Data Source` in a shard's `connectionString`) is
//! relative to the **folder of the master catalog**, not to the working directory of the process
//! that opens it: with the master at `/srv/orders/master.db`, `"dataSource": "shard-0.db"` is
//! `/srv/orders/shard-0.db`. An absolute path is used as it is. [`resolve_data_source`] applies the
//! rule; a map held only in memory, with no master, keeps relative paths relative to the working
//! directory.
//!
//! Two shards may not share a file: `./a.db`, `a.db` and `x/../a.db` are the same file (see
//! [`normalize_path`]; case is compared as given), and opening or seeding a master also refuses
//! spellings that meet once resolved (an absolute path and a relative one) and a shard whose file is
//! the master catalog itself.

pub(crate) mod delta;
mod directory;
mod entry_changes;
mod files;
mod options;
mod patch;
mod pin_changes;
pub(crate) mod record_stream;
pub mod records;
mod snapshot;
mod validate;

pub use crate::error::MapError;
pub(crate) use directory::text_eq as directory_name_eq;
pub(crate) use directory::trimmed;
pub use directory::{CompactString, DirectoryDefinition, DirectoryEntry, EntryState};
pub use files::{normalize_path, resolve_data_source};
pub use options::{BucketRange, ReplicaInfo, Secret, ShardDefinition, ShardingOptions};
pub use patch::MapPatch;
pub use snapshot::{DirectorySnapshot, MapSummary, SNAPSHOT_ECHO_LIMIT, ShardMapSnapshot, ShardSnapshot};
pub use validate::{MAX_DATA_HOST_SHARD_ID_LEN, data_host_shard_id};

use validate::{
    ShardIdProblem, ShardLookup, assign_buckets, normalize_shard_id, validate_files, validate_pins,
    validate_replication, validate_shard,
};

use std::sync::{Arc, OnceLock};

/// The largest `virtualBucketCount` accepted: one owner slot per bucket is allocated.
pub const MAX_VIRTUAL_BUCKETS: u32 = 1 << 20;

/// A shard's role. Replicas are metadata only: they never own buckets or pins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub enum ShardRole {
    /// Owns data; may own buckets and pins.
    Primary,
    /// Follows a primary (metadata only).
    Replica,
}

impl ShardRole {
    /// `"Primary"` or `"Replica"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Primary => "Primary",
            Self::Replica => "Replica",
        }
    }
}

/// How a remote shard is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// A local file, opened in-process.
    Direct,
    /// A daemon over REST.
    Http,
    /// A daemon over gRPC.
    Grpc,
}

impl Transport {
    /// Parses `direct`, `http` or `grpc`, ignoring case and surrounding white space.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        [Self::Direct, Self::Http, Self::Grpc]
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(text))
    }

    /// `"direct"`, `"http"` or `"grpc"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Http => "http",
            Self::Grpc => "grpc",
        }
    }
}

/// Where a shard's data lives.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ShardTarget {
    /// A local SQLite file.
    DataSource(String),
    /// A daemon serving one plain database, or one shard of a data host's folder.
    Endpoint {
        /// The daemon's base URL.
        endpoint: String,
        /// REST or gRPC.
        transport: Transport,
        /// The shard id on a data host (`serve --shard-dir`), sent with every call; `None` for a
        /// daemon serving one database.
        remote_shard_id: Option<String>,
    },
    /// A connection string (a secret: it may carry credentials).
    ConnectionString(Secret),
}

/// A validated shard definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    /// The shard id as defined.
    pub id: String,
    /// Whether routes may resolve to it.
    pub enabled: bool,
    /// Primary or replica.
    pub role: ShardRole,
    /// Replica metadata (empty on a primary).
    pub replica: ReplicaInfo,
    /// Where the data lives.
    pub target: ShardTarget,
    /// API key for a remote shard.
    pub api_key: Option<Secret>,
    /// Header carrying the API key (default [`DEFAULT_API_KEY_HEADER`](crate::wire::DEFAULT_API_KEY_HEADER)).
    pub api_key_header_name: Option<String>,
}

/// A validated, immutable shard map.
///
/// ```
/// use shardlite::map::{BucketRange, ShardDefinition, ShardMap, ShardingOptions};
///
/// let map = ShardMap::new(ShardingOptions {
///     keyspace: "tenants".into(),
///     map_version: 1,
///     virtual_bucket_count: 4,
///     shards: vec![ShardDefinition::local("s0", "s0.db"), ShardDefinition::local("s1", "s1.db")],
///     bucket_ranges: vec![BucketRange::new(0, 2, "s0"), BucketRange::new(2, 4, "s1")],
///     exact_key_pins: [("tenant-a".to_owned(), "s0".to_owned())].into(),
///     directories: vec![],
///     directory_entries: vec![],
/// })?;
/// assert_eq!(map.resolve("tenants", "tenant-a")?.shard_id, "s0");
/// # Ok::<(), shardlite::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ShardMap {
    /// The options the routing state was built from. A map that followed a change of pins
    /// (see [`ShardMap::with_changes`]) shares them with the map it followed, and its own
    /// options are built from them and `pin_changes` on first use (`merged`).
    options: Arc<ShardingOptions>,
    /// This map's own options, when `pin_changes` or the header differ from `options`.
    merged: OnceLock<Arc<ShardingOptions>>,
    keyspace: String,
    map_version: u64,
    bucket_count: u32,
    /// The large, unchanging parts are shared between a map and the maps that follow it, so
    /// that following a change of pins copies none of them.
    shards: Arc<Vec<Shard>>,
    /// Each shard's position in `shards`, by its id in ASCII lower case: shard ids are ASCII
    /// and compared ignoring case, and a map may hold thousands of shards.
    by_id: Arc<std::collections::HashMap<String, u32>>,
    /// Index into `shards` of each bucket's owner.
    owners: Arc<Vec<u32>>,
    /// The canonical bucket ranges, built from `owners` on first use.
    ranges: Arc<OnceLock<Vec<BucketRange>>>,
    /// Pinned route keys (trimmed, case-sensitive), sorted, with the index into `shards`: the
    /// pins of `options`.
    pins: Arc<Vec<(String, u32)>>,
    /// The pins changed since `options` (see [`pin_changes`]), which win over `pins`.
    pin_changes: Arc<pin_changes::PinChanges>,
    /// The start of every route's canonical text, `"{len}:{keyspace}|"`, built once.
    route_prefix: String,
    /// Each pin's route token with its index in `pins`: resolution, which hashes the key anyway,
    /// finds a pin with one probe of a hash table keyed by the token (a SHA-256 prefix, so it is
    /// its own hash), which stays flat with 100,000 pins where a binary search did not. Filled by
    /// the routing module on first use.
    pin_tokens: Arc<OnceLock<PinTokens>>,
    /// The shard directories and the entries of `options`, indexed for lookups.
    directories: Arc<directory::DirectoryIndex>,
    /// The directory entries changed since `options` (see [`entry_changes`]), which win over
    /// the indexed ones.
    entry_changes: Arc<entry_changes::EntryChanges>,
}

impl ShardMap {
    /// Validates `options`, returning the first problem found.
    pub fn new(options: ShardingOptions) -> Result<Self, MapError> {
        let keyspace = options.keyspace.trim().to_owned();
        if keyspace.is_empty() {
            return Err(MapError::BlankKeyspace);
        }
        let map_version =
            u64::try_from(options.map_version)
                .ok()
                .filter(|v| *v > 0)
                .ok_or(MapError::InvalidMapVersion {
                    value: options.map_version,
                })?;
        let bucket_count = u32::try_from(options.virtual_bucket_count)
            .ok()
            .filter(|c| (1..=MAX_VIRTUAL_BUCKETS).contains(c))
            .ok_or(MapError::InvalidBucketCount {
                value: options.virtual_bucket_count,
                max: MAX_VIRTUAL_BUCKETS,
            })?;
        if options.shards.is_empty() {
            return Err(MapError::NoShards);
        }

        let mut shards: Vec<Shard> = Vec::with_capacity(options.shards.len());
        let mut by_id = std::collections::HashMap::with_capacity(options.shards.len());
        for (index, def) in options.shards.iter().enumerate() {
            let id = normalize_shard_id(&def.shard_id).map_err(|e| match e {
                ShardIdProblem::Blank => MapError::BlankShardId { index },
                other => other.into_error(&def.shard_id),
            })?;
            let position = u32::try_from(index).unwrap_or(u32::MAX);
            if by_id.insert(id.to_ascii_lowercase(), position).is_some() {
                return Err(MapError::DuplicateShardId { shard_id: id });
            }
            shards.push(validate_shard(id, def)?);
        }
        let lookup = ShardLookup {
            shards: &shards,
            by_id: &by_id,
        };
        if !shards.iter().any(|s| s.enabled) {
            return Err(MapError::NoEnabledShard);
        }
        validate_files(&shards)?;
        validate_replication(lookup)?;

        let owners = assign_buckets(&options, lookup, bucket_count)?;
        let pins = validate_pins(&options, lookup)?;
        let directories =
            directory::validate_directories(&options.directories, &options.directory_entries, map_version)?;

        Ok(Self {
            options: Arc::new(options),
            merged: OnceLock::new(),
            route_prefix: format!("{}:{keyspace}|", keyspace.encode_utf16().count()),
            pin_tokens: Arc::default(),
            keyspace,
            map_version,
            bucket_count,
            shards: Arc::new(shards),
            by_id: Arc::new(by_id),
            owners: Arc::new(owners),
            ranges: Arc::default(),
            pins: Arc::new(pins),
            pin_changes: Arc::default(),
            directories: Arc::new(directories),
            entry_changes: Arc::default(),
        })
    }

    /// Parses and validates a map from JSON.
    pub fn from_json(json: &str) -> crate::error::Result<Self> {
        Ok(Self::new(ShardingOptions::from_json(json)?)?)
    }

    /// The map's keyspace, as configured (trimmed).
    pub fn keyspace(&self) -> &str {
        &self.keyspace
    }

    /// The start of the canonical text of every route of this map: `"{len}:{keyspace}|"`.
    pub(crate) fn route_prefix(&self) -> &str {
        &self.route_prefix
    }

    /// The map version.
    pub fn version(&self) -> u64 {
        self.map_version
    }

    /// The number of virtual buckets.
    pub fn bucket_count(&self) -> u32 {
        self.bucket_count
    }

    /// The shards, in definition order.
    pub fn shards(&self) -> &[Shard] {
        &self.shards
    }

    /// The shard with this id (ignoring case).
    pub fn shard(&self, shard_id: &str) -> Option<&Shard> {
        self.shard_index(shard_id).map(|i| &self.shards[i])
    }

    /// Position of the shard with this id (ignoring case and surrounding white space).
    pub fn shard_index(&self, shard_id: &str) -> Option<usize> {
        ShardLookup {
            shards: &self.shards,
            by_id: &self.by_id,
        }
        .find(shard_id)
        .map(|(index, _)| index)
    }

    /// The options this map was built from, as submitted (secrets included).
    ///
    /// A map that followed a change of pins builds them on first use (a copy of the map it
    /// followed with the changed pins).
    pub fn options(&self) -> &ShardingOptions {
        if self.pin_changes.is_empty() && self.entry_changes.is_empty() {
            return &self.options;
        }
        self.merged.get_or_init(|| {
            let mut options = self.pin_changes.merged(&self.options);
            self.entry_changes.merge_into(&mut options);
            Arc::new(options)
        })
    }

    /// The owner (index into [`shards`](Self::shards)) of a bucket.
    pub(crate) fn bucket_owner(&self, bucket: u32) -> usize {
        usize::try_from(self.owners[usize::try_from(bucket).unwrap_or(usize::MAX)]).unwrap_or(usize::MAX)
    }

    /// The pinned shard index of a (trimmed) route key, if pinned.
    pub(crate) fn pinned_shard(&self, key: &str) -> Option<usize> {
        if let Some(changed) = self.pin_changes.owner(key) {
            return changed;
        }
        if self.pins.is_empty() {
            return None;
        }
        let found = self
            .pins
            .binary_search_by(|(pinned, _)| pinned.as_str().cmp(key))
            .ok()?;
        usize::try_from(self.pins[found].1).ok()
    }

    /// The pinned shard index of a (trimmed) route key whose route token is `token`, if pinned.
    /// `token_of` computes a pinned key's token (once per map).
    pub(crate) fn pinned_shard_by_token(&self, key: &str, token: u64, token_of: impl Fn(&str) -> u64) -> Option<usize> {
        if let Some(changed) = self.pin_changes.owner(key) {
            return changed;
        }
        if self.pins.is_empty() {
            return None;
        }
        let tokens = self.pin_tokens.get_or_init(|| {
            let mut tokens = PinTokens::with_capacity_and_hasher(self.pins.len(), Default::default());
            for (at, (pinned, _)) in self.pins.iter().enumerate() {
                tokens
                    .entry(token_of(pinned))
                    .or_insert(u32::try_from(at).unwrap_or(u32::MAX));
            }
            tokens
        });
        let at = usize::try_from(*tokens.get(&token)?).unwrap_or(usize::MAX);
        match self.pins.get(at) {
            Some((pinned, index)) if pinned == key => usize::try_from(*index).ok(),
            // Two keys with one token (a 64-bit SHA-256 prefix): ask by key.
            _ => self.pinned_shard(key),
        }
    }

    /// Whether a (trimmed) route key is pinned.
    pub fn is_pinned(&self, key: &str) -> bool {
        self.pinned_shard(key).is_some()
    }

    /// The shard directory named `name` (ignoring case and surrounding white space).
    pub fn directory(&self, name: &str) -> Option<&DirectoryDefinition> {
        self.options.directories.get(self.directories.directory(name)?)
    }

    /// The entry of directory `name` (ignoring case) for `lookup_key` (trimmed, exact).
    pub fn directory_entry(&self, name: &str, lookup_key: &str) -> Option<&DirectoryEntry> {
        let key = directory::trimmed(lookup_key);
        let folded_key = directory::FoldedKey::new(key);
        let at = self.directories.directory(name)?;
        let is_key = |entry: &&DirectoryEntry| directory::trimmed(&entry.lookup_key) == key;
        if let Some(changed) = self.entry_changes.get(at, folded_key.as_str()) {
            return changed.entry.as_ref().filter(is_key);
        }
        let entries = &self.options.directory_entries;
        entries.get(self.directories.exact_entry(at, folded_key.as_str(), key, entries)?)
    }

    /// The entry of directory `at` whose folded lookup key is `folded_key`, whatever the case
    /// of its own key, with `changes` in place of this map's entry changes.
    fn held_entry<'a>(
        &'a self,
        changes: &'a entry_changes::EntryChanges,
        at: usize,
        folded_key: &str,
    ) -> Option<&'a DirectoryEntry> {
        if let Some(changed) = changes.get(at, folded_key) {
            return changed.entry.as_ref();
        }
        let entries = &self.options.directory_entries;
        entries.get(self.directories.entry(at, folded_key, entries)?)
    }

    /// How many entries directory `name` holds (0 for an unknown directory).
    pub fn directory_entry_count(&self, name: &str) -> usize {
        self.directories.directory(name).map_or(0, |at| self.entry_count_at(at))
    }

    /// How many entries the directory at position `at` holds.
    fn entry_count_at(&self, at: usize) -> usize {
        let base = self.directories.counts.get(at).copied().unwrap_or(0);
        self.entry_changes.count(at, base)
    }

    /// How many entries all directories hold.
    pub(crate) fn directory_entry_total(&self) -> usize {
        (0..self.directories.counts.len())
            .map(|at| self.entry_count_at(at))
            .sum()
    }

    /// The bucket ranges in canonical form: ordered by start, adjacent buckets with the
    /// same owner coalesced, covering `[0, virtualBucketCount)`.
    pub fn canonical_ranges(&self) -> Vec<BucketRange> {
        self.shared_ranges().to_vec()
    }

    /// [`canonical_ranges`](Self::canonical_ranges), built once and shared with the maps that
    /// follow a change of pins.
    pub(crate) fn shared_ranges(&self) -> &[BucketRange] {
        self.ranges.get_or_init(|| self.build_ranges())
    }

    /// The map's pins (route key to shard id, as written), without building the rest of its
    /// options.
    pub(crate) fn pin_map(&self) -> std::borrow::Cow<'_, std::collections::BTreeMap<String, String>> {
        if self.pin_changes.is_empty() {
            return std::borrow::Cow::Borrowed(&self.options.exact_key_pins);
        }
        let mut pins = self.options.exact_key_pins.clone();
        self.pin_changes.pins_into(&mut pins);
        std::borrow::Cow::Owned(pins)
    }

    /// How many pins the map has.
    pub fn pin_count(&self) -> usize {
        self.pin_changes.count(&self.options)
    }

    /// The directory entries, in the order of the options (a change of pins keeps them; a
    /// followed change of entries builds them on first use).
    pub(crate) fn directory_entries(&self) -> &[DirectoryEntry] {
        &self.options().directory_entries
    }

    /// The map's header as options without shards, ranges, pins or entries: keyspace (as
    /// written), version, bucket count and directories.
    pub(crate) fn header_options(&self) -> ShardingOptions {
        let mut header = ShardingOptions {
            keyspace: self.options.keyspace.clone(),
            map_version: self.options.map_version,
            virtual_bucket_count: self.options.virtual_bucket_count,
            shards: Vec::new(),
            bucket_ranges: Vec::new(),
            exact_key_pins: std::collections::BTreeMap::new(),
            directories: self.options.directories.clone(),
            directory_entries: Vec::new(),
        };
        self.pin_changes.header_into(&mut header);
        header
    }

    /// The pin keys whose owner may differ between this map and `other`, when both were
    /// built from the same options and differ only by the pins they followed; `None` when
    /// they do not share their routing state (compare them whole).
    pub(crate) fn changed_pins_since<'a>(&'a self, other: &'a ShardMap) -> Option<std::collections::BTreeSet<&'a str>> {
        if !Arc::ptr_eq(&self.options, &other.options) {
            return None;
        }
        Some(self.pin_changes.keys().chain(other.pin_changes.keys()).collect())
    }

    /// Whether this map and `other` have the same shards (cheaply when they share them).
    pub(crate) fn same_shards(&self, other: &ShardMap) -> bool {
        self.shares_shards(other) || self.shards == other.shards
    }

    /// Whether this map and `other` share their shards (one followed the other).
    pub(crate) fn shares_shards(&self, other: &ShardMap) -> bool {
        Arc::ptr_eq(&self.shards, &other.shards)
    }

    /// Whether this map and `other` share their directory entries and their index: one followed
    /// the other's changes of entries without reading or indexing the rest again.
    #[doc(hidden)]
    pub fn shares_directory_index(&self, other: &ShardMap) -> bool {
        Arc::ptr_eq(&self.directories, &other.directories) && Arc::ptr_eq(&self.options, &other.options)
    }

    /// Whether this map and `other` share their bucket owners (one followed the other).
    pub(crate) fn shares_bucket_owners(&self, other: &ShardMap) -> bool {
        Arc::ptr_eq(&self.owners, &other.owners)
    }

    fn build_ranges(&self) -> Vec<BucketRange> {
        let mut ranges: Vec<BucketRange> = Vec::new();
        for (bucket, owner) in self.owners.iter().enumerate() {
            let bucket = i64::try_from(bucket).unwrap_or(i64::MAX);
            let id = &self.shards[usize::try_from(*owner).unwrap_or(0)].id;
            match ranges.last_mut() {
                Some(last) if last.shard_id == *id => last.end_bucket_exclusive = bucket + 1,
                _ => ranges.push(BucketRange::new(bucket, bucket + 1, id.clone())),
            }
        }
        ranges
    }
}

/// Pins by route token (see `ShardMap::pin_tokens`).
type PinTokens = std::collections::HashMap<u64, u32, std::hash::BuildHasherDefault<TokenHasher>>;

/// Hashes a route token as itself: the token is a SHA-256 prefix, already uniform, and hashing
/// it again would cost about as much as the lookup.
#[derive(Default)]
struct TokenHasher(u64);

impl std::hash::Hasher for TokenHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}
