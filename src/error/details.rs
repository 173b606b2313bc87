//! The payloads of the [`Error`](super::Error) variants that carry more than one string, boxed so
//! the error itself stays small.

use std::fmt;

use super::ErrorKind;

/// The route named a keyspace the shard map does not serve ([`Error::UnknownKeyspace`](super::Error::UnknownKeyspace)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKeyspace {
    /// The keyspace the caller sent.
    pub keyspace: String,
    /// The keyspace of the active shard map.
    pub expected: String,
}

/// The route resolved to a disabled shard ([`Error::ShardDisabled`](super::Error::ShardDisabled)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardDisabled {
    /// The route key.
    pub key: String,
    /// The disabled shard.
    pub shard_id: String,
}

/// A shard and why it could not take a request ([`Error::ShardUnavailable`](super::Error::ShardUnavailable),
/// [`Error::Busy`](super::Error::Busy)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardProblem {
    /// The shard.
    pub shard_id: String,
    /// Why it could not take the request.
    pub reason: String,
}

impl ShardProblem {
    /// A problem of `shard_id`, for `reason`.
    pub fn new(shard_id: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            shard_id: shard_id.into(),
            reason: reason.into(),
        }
    }
}

/// A transaction id used with a route that resolves to another shard
/// ([`Error::TransactionRouteConflict`](super::Error::TransactionRouteConflict)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionRouteConflict {
    /// The transaction id.
    pub transaction_id: String,
    /// The shard the id names.
    pub transaction_shard_id: String,
    /// The shard the supplied route resolves to.
    pub route_shard_id: String,
}

/// A transaction id created under another shard map version
/// ([`Error::StaleMapVersion`](super::Error::StaleMapVersion)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleMapVersion {
    /// The transaction id.
    pub transaction_id: String,
    /// The version the id carries.
    pub transaction_version: u64,
    /// The live map version.
    pub active_version: u64,
}

/// SQLite refused a statement ([`Error::Sql`](super::Error::Sql)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlFailure {
    /// The SQLite extended result code.
    pub code: i32,
    /// The symbolic name of the primary code, e.g. `SQLITE_CONSTRAINT`.
    pub code_name: &'static str,
    /// SQLite's message.
    pub message: String,
}

/// An error a remote daemon reported ([`Error::Remote`](super::Error::Remote)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFailure {
    /// The kind the daemon reported.
    pub kind: ErrorKind,
    /// The daemon's message (never a file path or a secret).
    pub message: String,
    /// The SQLite extended result code, for SQL errors.
    pub sqlite_code: Option<i32>,
}

/// A write that touched a fenced or moved route value ([`Error::RouteFenced`](super::Error::RouteFenced)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteFenced {
    /// The table (or `collection 'name'`) the write touched.
    pub table: String,
    /// The fenced route: the route key of an exact-key fence, or `buckets [start, end)` for a
    /// bucket-range fence (a fence trigger raises fixed text, which cannot carry the written
    /// row's own value in a form every SQLite parses).
    pub route_value: String,
    /// The data move that holds the fence.
    pub migration_id: String,
    /// The shard the data moves (or moved) to.
    pub destination: String,
    /// Whether the move is complete: this shard no longer owns the route value.
    pub moved: bool,
}

/// A daemon that could not be reached or did not answer in time
/// ([`Error::Transport`](super::Error::Transport)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportFailure {
    /// The endpoint that was called (without credentials).
    pub endpoint: String,
    /// What went wrong (connection refused, timed out, bad endpoint, ...).
    pub reason: String,
}

pub(super) fn fenced_message(fenced: &RouteFenced) -> String {
    let RouteFenced {
        table,
        route_value: value,
        migration_id,
        destination,
        moved,
    } = fenced;
    if *moved {
        format!(
            "route '{value}' in {table} has moved to shard '{destination}' (migration '{migration_id}'): \
             this shard no longer owns it; refresh the shard map and retry"
        )
    } else {
        format!(
            "route '{value}' in {table} is fenced by migration '{migration_id}' while its data moves to \
             shard '{destination}': reads go on; retry the write after the migration ends"
        )
    }
}

/// Why an authenticated request was refused ([`Error::PermissionDenied`](super::Error::PermissionDenied)).
/// Names the key by its configured name, never by its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionDenial {
    /// The name the key has in the key file.
    pub key_name: String,
    /// The scope the operation needs (`read`, `write` or `admin`).
    pub scope: &'static str,
    /// When the key holds the scope but not the keyspace: the keyspace it may not use.
    pub keyspace: Option<String>,
}

impl fmt::Display for PermissionDenial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            key_name,
            scope,
            keyspace,
        } = self;
        match keyspace {
            None => write!(
                f,
                "permission denied: this operation needs the '{scope}' scope, which the API key '{key_name}' does not have"
            ),
            Some(keyspace) => write!(
                f,
                "permission denied: the API key '{key_name}' has the '{scope}' scope but not for keyspace '{keyspace}'"
            ),
        }
    }
}
