//! The shapes of shard directory calls: resolving a lookup key, the six mutations and their
//! result, listing entries a page at a time; and the [`DirectoryAdmin`] contract.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::{Audit, CatalogIssue, DirectoryImport, DirectoryImportOutcome};
use crate::error::Result;
use crate::map::{DirectoryEntry, EntryState};
use crate::routing::ResolvedRoute;

/// A lookup key to resolve through a directory.
///
/// ```
/// use shardlite::data::DirectoryLookup;
///
/// let lookup: DirectoryLookup = serde_json::from_str(r#"{"directoryName": "orders_by_id", "lookupKey": "SO-1"}"#)?;
/// assert!(!lookup.include_inactive);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirectoryLookup {
    /// The directory (ignoring case).
    pub directory_name: String,
    /// The lookup key (trimmed, exact).
    pub lookup_key: String,
    /// Resolve an entry that is not `Active` too.
    #[serde(default)]
    pub include_inactive: bool,
}

impl DirectoryLookup {
    /// A lookup of `lookup_key` in `directory`, of active entries only.
    pub fn new(directory: impl Into<String>, lookup_key: impl Into<String>) -> Self {
        Self {
            directory_name: directory.into(),
            lookup_key: lookup_key.into(),
            include_inactive: false,
        }
    }

    /// The same, resolving inactive entries too.
    #[must_use]
    pub fn including_inactive(mut self) -> Self {
        self.include_inactive = true;
        self
    }
}

/// A resolved directory entry: the entry and where its route resolves on the live map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DirectoryResolution {
    /// The entry.
    pub entry: DirectoryEntry,
    /// Its route, resolved on the live map.
    pub route_resolution: ResolvedRoute,
}

/// A change to one directory entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DirectoryOperation {
    /// Adds a `Reserved` entry.
    Reserve,
    /// Makes a `Reserved` entry `Active`.
    Activate,
    /// Adds or rewrites an entry with a given state (default `Active`).
    Upsert,
    /// Marks an entry `Disabled`.
    Disable,
    /// Marks an entry `Stale`.
    MarkStale,
    /// Marks an entry `Deleted`, or removes it (`removeEntry`).
    Delete,
}

impl DirectoryOperation {
    /// Every operation.
    pub const ALL: [Self; 6] = [
        Self::Reserve,
        Self::Activate,
        Self::Upsert,
        Self::Disable,
        Self::MarkStale,
        Self::Delete,
    ];

    /// Its name on the wire and in the command line (`mark-stale`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reserve => "reserve",
            Self::Activate => "activate",
            Self::Upsert => "upsert",
            Self::Disable => "disable",
            Self::MarkStale => "mark-stale",
            Self::Delete => "delete",
        }
    }

    /// The operation of a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.as_str() == name)
    }
}

/// The request of every directory mutation. Reserve and upsert need `targetKeyspace` and
/// `routeKey`; upsert takes `state`; delete takes `removeEntry`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirectoryMutation {
    /// The directory (ignoring case).
    pub directory_name: String,
    /// The lookup key (trimmed, exact).
    pub lookup_key: String,
    /// The route's keyspace (reserve, upsert): the directory's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_keyspace: Option<String>,
    /// The route key (reserve, upsert).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_key: Option<String>,
    /// The entry's state (upsert; default `Active`), one of the exact state names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Delete removes the entry instead of marking it `Deleted`.
    #[serde(default)]
    pub remove_entry: bool,
    /// The newest map version the catalog holds (the pending map's, else the active map's); a
    /// different one refuses the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_current_map_version: Option<u64>,
    /// Activates the pending map the change writes, in the same call.
    #[serde(default)]
    pub activate: bool,
    /// Who makes the change, for the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Why, for the history (a default names the operation and the entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl DirectoryMutation {
    /// A mutation of `lookup_key` in `directory` with nothing else set.
    pub fn new(directory: impl Into<String>, lookup_key: impl Into<String>) -> Self {
        Self {
            directory_name: directory.into(),
            lookup_key: lookup_key.into(),
            ..Self::default()
        }
    }

    /// The same, for the route `keyspace`/`route_key` (reserve, upsert).
    #[must_use]
    pub fn route(mut self, keyspace: impl Into<String>, route_key: impl Into<String>) -> Self {
        self.target_keyspace = Some(keyspace.into());
        self.route_key = Some(route_key.into());
        self
    }

    /// The same, with the entry state for an upsert.
    #[must_use]
    pub fn state(mut self, state: EntryState) -> Self {
        self.state = Some(state.as_str().to_owned());
        self
    }

    /// The same, refused unless the catalog's newest map version is still `version`.
    #[must_use]
    pub fn expecting_version(mut self, version: u64) -> Self {
        self.expected_current_map_version = Some(version);
        self
    }

    /// The same, removing the entry on delete.
    #[must_use]
    pub fn removing_entry(mut self) -> Self {
        self.remove_entry = true;
        self
    }

    /// The same, activating the pending map it writes.
    #[must_use]
    pub fn activating(mut self) -> Self {
        self.activate = true;
        self
    }

    /// The same, recorded in the history as `audit` says.
    #[must_use]
    pub fn audit(mut self, audit: Audit) -> Self {
        self.operator = audit.operator;
        self.comment = audit.comment;
        self
    }
}

/// What a directory mutation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
pub enum MutationStatus {
    /// Reserve wrote a `Reserved` entry.
    Reserved,
    /// Reserve found the same entry reserved (no change).
    AlreadyReserved,
    /// Activate made the entry `Active`.
    Activated,
    /// Activate found the entry active (no change).
    AlreadyActive,
    /// Upsert added the entry.
    Upserted,
    /// Upsert rewrote an existing entry.
    Repaired,
    /// Upsert found the entry as asked (no change).
    AlreadyUpToDate,
    /// Disable marked the entry `Disabled`.
    Disabled,
    /// Disable found it disabled (no change).
    AlreadyDisabled,
    /// Mark-stale marked the entry `Stale`.
    MarkedStale,
    /// Mark-stale found it stale (no change).
    AlreadyStale,
    /// Delete marked the entry `Deleted`.
    Deleted,
    /// Delete removed the entry.
    Removed,
    /// Delete found the entry deleted or absent (no change).
    AlreadyDeleted,
    /// The change was refused; `issues` say why and nothing was written.
    Rejected,
}

/// The result of a directory mutation. `succeeded` is false only for `Rejected`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DirectoryMutationResult {
    /// Whether the change was made or was not needed.
    pub succeeded: bool,
    /// What happened.
    pub status: MutationStatus,
    /// What happened, in words naming the entry.
    pub message: String,
    /// The entry as it is now written (none when removed or refused before it was built).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<DirectoryEntry>,
    /// The pending map version the change wrote, if it wrote one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_map_version: Option<u64>,
    /// Whether the change waits for an activation of the pending map.
    pub requires_activation: bool,
    /// Why a change was refused (codes such as `directory-read-only`, `map-version-mismatch`).
    pub issues: Vec<CatalogIssue>,
}

/// Which page of a directory's entries to list: entries are ordered by lookup key.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema, utoipa::IntoParams))]
#[cfg_attr(feature = "server", into_params(parameter_in = Query))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirectoryEntryQuery {
    /// Start after this lookup key (the `nextAfter` of the previous page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// At most this many entries, 1 to [`MAX_DIRECTORY_PAGE`] (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", param(minimum = 1, maximum = 1000))]
    pub limit: Option<u32>,
}

impl DirectoryEntryQuery {
    /// Refuses a limit of 0 or above [`MAX_DIRECTORY_PAGE`].
    ///
    /// ```
    /// use shardlite::data::DirectoryEntryQuery;
    ///
    /// assert!(DirectoryEntryQuery { limit: Some(1000), ..Default::default() }.check().is_ok());
    /// assert!(DirectoryEntryQuery { limit: Some(0), ..Default::default() }.check().is_err());
    /// ```
    pub fn check(&self) -> Result<()> {
        match self.limit {
            Some(limit) if !(1..=MAX_DIRECTORY_PAGE).contains(&limit) => Err(crate::error::Error::invalid_argument(
                "limit",
                format!("must be between 1 and {MAX_DIRECTORY_PAGE} (got {limit})"),
            )),
            _ => Ok(()),
        }
    }
}

/// The most entries one page lists.
pub const MAX_DIRECTORY_PAGE: u32 = 1000;

/// One page of a directory's entries on the live map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DirectoryEntryPage {
    /// The directory.
    pub directory_name: String,
    /// How many entries the directory holds.
    pub entry_count: u64,
    /// This page's entries, by lookup key.
    pub entries: Vec<DirectoryEntry>,
    /// The `after` of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after: Option<String>,
}

/// Shard directories: resolving a lookup key, changing entries, listing them.
///
/// Implemented in-process by [`ShardedClient`](crate::client::ShardedClient), and through a daemon
/// by the REST client (`transport::http::HttpClient`) and the gRPC client
/// (`transport::grpc::GrpcClient`); a change the daemon refuses is the same `Rejected` result.
///
/// ```no_run
/// # async fn demo(admin: &dyn shardlite::data::DirectoryAdmin) -> shardlite::Result<()> {
/// use shardlite::data::{DirectoryLookup, DirectoryMutation, DirectoryOperation};
///
/// let reserved = admin
///     .mutate_directory_entry(DirectoryOperation::Reserve, &DirectoryMutation::new("orders_by_id", "SO-1")
///         .route("tenants", "tenant-a")
///         .activating())
///     .await?;
/// assert!(reserved.succeeded);
/// let found = admin.resolve_directory_entry(&DirectoryLookup::new("orders_by_id", "SO-1").including_inactive()).await?;
/// println!("SO-1 lives on {}", found.route_resolution.shard_id);
/// # Ok(()) }
/// ```
#[async_trait]
pub trait DirectoryAdmin: Send + Sync {
    /// Resolves a lookup key on the live map. An unknown directory or entry is an error of kind
    /// `NotFound`; an entry not `Active` (unless asked for), written by a future map version, or
    /// pointing to another shard than its route resolves to, of kind `Conflict`.
    async fn resolve_directory_entry(&self, lookup: &DirectoryLookup) -> Result<DirectoryResolution>;
    /// Changes one entry as a pending map (compare-and-set), activating it when asked. A refused
    /// change is a result with `succeeded: false`, not an error.
    async fn mutate_directory_entry(
        &self,
        operation: DirectoryOperation,
        mutation: &DirectoryMutation,
    ) -> Result<DirectoryMutationResult>;
    /// One page of a directory's entries on the live map.
    async fn directory_entries(&self, directory: &str, query: &DirectoryEntryQuery) -> Result<DirectoryEntryPage>;
    /// Upserts many entries as one pending map (compare-and-set), activating it when asked. A
    /// refused load is an outcome naming the refused entry, with nothing written, not an error.
    async fn import_directory_entries(&self, import: &DirectoryImport) -> Result<DirectoryImportOutcome>;
}
