//! The crate-wide error type.
//!
//! Every fallible operation returns [`Error`]. Callers that need to branch do so on
//! [`Error::kind`], which groups the variants into the few categories a caller (or the
//! daemon, when it picks an HTTP or gRPC status) can act on. Messages are lowercase, name
//! the offending input, and never contain secrets.

use std::fmt;

mod map;

pub use map::MapError;

/// Result type used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in shardlite.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A route keyspace or key was empty after trimming white space.
    #[error("route {field} is required (it was empty or only white space)")]
    BlankRoutePart {
        /// `"keyspace"` or `"key"`.
        field: &'static str,
    },

    /// An operation that must run on one shard was called without a route.
    #[error(
        "a route is required for this operation: bind one with ShardedClient::for_route, or send the \
         X-CSharpDB-Keyspace and X-CSharpDB-Shard-Key headers (metadata) on remote calls"
    )]
    RouteRequired,

    /// The route named a keyspace the shard map does not serve.
    #[error("route keyspace '{keyspace}' does not match the shard map keyspace '{expected}'")]
    UnknownKeyspace {
        /// The keyspace the caller sent.
        keyspace: String,
        /// The keyspace of the active shard map.
        expected: String,
    },

    /// The route resolved to a shard that is disabled in the map.
    #[error("route key '{key}' resolves to shard '{shard_id}', which is disabled")]
    ShardDisabled {
        /// The route key.
        key: String,
        /// The disabled shard.
        shard_id: String,
    },

    /// A shard id that the map does not define.
    #[error("shard '{shard_id}' is not defined in the shard map")]
    UnknownShard {
        /// The shard id that was asked for.
        shard_id: String,
    },

    /// A shard that could not be opened or reached.
    #[error("shard '{shard_id}' is unavailable: {reason}")]
    ShardUnavailable {
        /// The shard.
        shard_id: String,
        /// Why it is unavailable.
        reason: String,
    },

    /// A shard id that is defined but disabled was addressed directly.
    #[error("shard '{shard_id}' is disabled")]
    ShardIsDisabled {
        /// The disabled shard.
        shard_id: String,
    },

    /// The shard map failed validation.
    #[error(transparent)]
    InvalidMap(#[from] MapError),

    /// The master catalog holds no active shard map.
    #[error("the master catalog has no active shard map")]
    NoMap,

    /// A shard-admin operation on a daemon that serves one plain, unsharded database.
    #[error(
        "shard-admin operations are unavailable: this daemon serves one unsharded database (its master has no shard map)"
    )]
    NotSharded,

    /// The master catalog is not in a state this release can use.
    #[error("master catalog problem: {reason}")]
    Catalog {
        /// What is wrong with it.
        reason: String,
    },

    /// A transaction id that is not `csdbshard:{mapVersion}:{shardId}:{inner}`.
    #[error(
        "malformed transaction id '{input}': expected 'csdbshard:{{mapVersion}}:{{shardId}}:{{innerId}}' ({reason})"
    )]
    MalformedTransactionId {
        /// The id as received.
        input: String,
        /// Which part was wrong.
        reason: &'static str,
    },

    /// A transaction id that names no open transaction (committed, rolled back, expired, or never begun).
    #[error("transaction '{transaction_id}' is not open (it was committed, rolled back, expired, or never begun)")]
    TransactionNotFound {
        /// The id as received.
        transaction_id: String,
    },

    /// A transaction that was rolled back because it stayed idle past its timeout.
    #[error("transaction '{transaction_id}' expired: it stayed idle past its timeout and was rolled back")]
    TransactionExpired {
        /// The id as received.
        transaction_id: String,
    },

    /// A transaction id was used together with a route that resolves to another shard.
    #[error(
        "the route resolves to shard '{route_shard_id}', but transaction '{transaction_id}' belongs to shard '{transaction_shard_id}'"
    )]
    TransactionRouteConflict {
        /// The transaction id.
        transaction_id: String,
        /// The shard the id names.
        transaction_shard_id: String,
        /// The shard the supplied route resolves to.
        route_shard_id: String,
    },

    /// A transaction id was created under another shard map version.
    #[error(
        "transaction '{transaction_id}' was begun under shard map version {transaction_version}, but the active version is {active_version}"
    )]
    StaleMapVersion {
        /// The transaction id.
        transaction_id: String,
        /// The version the id carries.
        transaction_version: u64,
        /// The live map version.
        active_version: u64,
    },

    /// A shard has reached its limit of open transactions, or could not take the write lock in time.
    #[error("shard '{shard_id}' is busy: {reason}")]
    Busy {
        /// The shard.
        shard_id: String,
        /// Why it could not take the request.
        reason: String,
    },

    /// Read-only fan-out was given a statement that can write.
    #[error("read-only SQL accepts only SELECT, VALUES, WITH ... SELECT and EXPLAIN statements; rejected: {reason}")]
    ReadOnlyViolation {
        /// Which statement was refused and why.
        reason: String,
    },

    /// A query across every shard uses a construct whose answer could not be proven equal to
    /// the answer of one file holding every shard's rows; nothing ran.
    #[error("{construct} cannot be answered exactly across shards")]
    UnsupportedCrossShardQuery {
        /// The construct, as the SQL wrote it or by its name (`window function`, `random()`).
        construct: String,
    },

    /// A request argument was missing or malformed.
    #[error("invalid {name}: {reason}")]
    InvalidArgument {
        /// The argument's name.
        name: &'static str,
        /// What was wrong with it.
        reason: String,
    },

    /// A table, row, collection, document, saved query or procedure that does not exist.
    #[error("{what} '{name}' was not found")]
    NotFound {
        /// The kind of object (`"table"`, `"row"`, ...).
        what: &'static str,
        /// Its name or key.
        name: String,
    },

    /// SQLite refused the statement.
    #[error("sqlite error {code} ({code_name}): {message}")]
    Sql {
        /// The SQLite extended result code.
        code: i32,
        /// The symbolic name of the primary code, e.g. `SQLITE_CONSTRAINT`.
        code_name: &'static str,
        /// SQLite's message.
        message: String,
    },

    /// A file could not be created or opened.
    #[error("i/o error on {what}: {source}")]
    Io {
        /// What was being accessed (never a secret).
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A shard's worker stopped or the client was closed.
    #[error("shard '{shard_id}' is closed")]
    Closed {
        /// The shard (or data source) that is closed.
        shard_id: String,
    },

    /// A connection string (ADO.NET or URL form) with an unknown key or a bad value.
    #[error("connection string: {reason}")]
    ConnectionString {
        /// What is wrong, naming the key.
        reason: String,
    },

    /// A paging continuation token that was tampered with or belongs to another map version.
    #[error("invalid continuation token: {reason}")]
    InvalidCursor {
        /// What is wrong with it.
        reason: String,
    },

    /// JSON that could not be parsed.
    #[error("invalid JSON in {what}: {source}")]
    Json {
        /// What was being parsed.
        what: &'static str,
        /// The parser's error, which names line and column.
        #[source]
        source: serde_json::Error,
    },

    /// Transaction control (`BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, ...) outside the
    /// transaction API, where it would change state that other callers share.
    #[error(
        "'{statement}' is transaction control, which runs only through the transaction API: begin a \
         transaction (POST /api/transactions, the BeginTransaction RPC, or begin() in-process) and commit \
         or roll it back by its id"
    )]
    TransactionControl {
        /// The start of the refused statement.
        statement: String,
    },

    /// A statement no shared connection runs: it would reach other files, load code, or change
    /// durability, safety or connection state.
    #[error("'{statement}' is refused: {reason}")]
    ForbiddenStatement {
        /// The start of the refused statement.
        statement: String,
        /// Why it is refused.
        reason: &'static str,
    },

    /// A statement ran past its time limit and was interrupted.
    #[error(
        "the statement ran past its time limit of {limit_ms} ms and was interrupted: narrow it (WHERE, LIMIT) \
         or raise the limit ('Command Timeout', or serve --statement-timeout)"
    )]
    StatementTimeout {
        /// The limit, in milliseconds.
        limit_ms: u64,
    },

    /// The caller went away, or its deadline passed, before the work finished; it was stopped.
    #[error("the request was cancelled before it finished: the caller went away or its deadline passed")]
    Cancelled,

    /// A result grew past the rows or bytes one response may buffer.
    #[error(
        "the result exceeds the limit of {limit} {unit} per response: add LIMIT, or page through the rows \
         (LIMIT with OFFSET, or a WHERE on the last key seen)"
    )]
    ResultTooLarge {
        /// The limit that was reached.
        limit: u64,
        /// `"rows"` or `"bytes"`.
        unit: &'static str,
    },

    /// The daemon is already serving as many requests as it takes at once; it refuses more at
    /// once rather than queue them.
    #[error("the daemon is busy: {limit} requests are already in progress, the most it serves at once; retry shortly")]
    DaemonBusy {
        /// The daemon's limit on requests in progress.
        limit: usize,
    },

    /// The open remote transactions of one API key reached the daemon's limit.
    #[error(
        "{limit} remote transactions are already open under this API key (daemon-wide when the daemon has no \
         key), the most allowed: commit or roll back one, or retry shortly"
    )]
    TooManyTransactions {
        /// The limit per API key.
        limit: usize,
    },

    /// A request ran past the daemon's request timeout, or past the caller's own deadline, and
    /// was stopped; a statement it was still running was interrupted.
    #[error(
        "the request ran past its time limit of {limit_ms} ms and was stopped: the daemon's request timeout \
         (serve --request-timeout) or the caller's gRPC deadline"
    )]
    RequestTimeout {
        /// The limit, in milliseconds.
        limit_ms: u64,
    },

    /// An error a remote daemon reported, decoded from the wire with its kind preserved, so callers
    /// branch on [`Error::kind`] the same way in-process and over the network.
    #[error("{message}")]
    Remote {
        /// The kind the daemon reported.
        kind: ErrorKind,
        /// The daemon's message (never a file path or a secret).
        message: String,
        /// The SQLite extended result code, for SQL errors.
        sqlite_code: Option<i32>,
    },

    /// A catalog update named a map version that is no longer the newest: someone else changed
    /// the catalog first.
    #[error(
        "the catalog changed: the update expected map version {expected}, but the newest map version is \
         {current}; look at the catalog again and validate against it"
    )]
    MapVersionConflict {
        /// The version the caller expected.
        expected: u64,
        /// The newest version the catalog holds.
        current: u64,
    },

    /// Activation found no pending map (or another one than expected).
    #[error("there is no pending map version {expected} to activate{}", .pending.map_or_else(|| ": the catalog holds no pending map; apply an update first".to_owned(), |v| format!(": the pending map is version {v}")))]
    NoPendingMap {
        /// The version the caller asked to activate.
        expected: u64,
        /// The pending version, if any.
        pending: Option<u64>,
    },

    /// A write touched a route key or bucket that a data migration has fenced on this shard, or
    /// whose data has moved to another shard. Retryable: reads go on; writes succeed once the
    /// migration ends (or, after a move, once the writer's map is refreshed).
    #[error("{}", fenced_message(.table, .route_value, .migration_id, .destination, *.moved))]
    RouteFenced {
        /// The table (or `collection 'name'`) the write touched.
        table: String,
        /// The fenced route: the route key of an exact-key fence, or `buckets [start, end)` for a
        /// bucket-range fence (a fence trigger raises fixed text, which cannot carry the written
        /// row's own value in a form every SQLite parses).
        route_value: String,
        /// The migration that holds the fence.
        migration_id: String,
        /// The shard the data moves (or moved) to.
        destination: String,
        /// Whether the move is complete: this shard no longer owns the route value.
        moved: bool,
    },

    /// A daemon could not be reached, or did not answer within the timeout.
    #[error("call to the daemon at {endpoint} failed: {reason}")]
    Transport {
        /// The endpoint that was called (without credentials).
        endpoint: String,
        /// What went wrong (connection refused, timed out, bad endpoint, ...).
        reason: String,
    },

    /// A schema migration recorded as applied has other SQL now than when it was applied.
    #[error(
        "migration {version} was changed after it was applied: its checksum differs from the one recorded in \
         _sqlx_migrations; restore the original file and add the change as a new migration"
    )]
    MigrationChanged {
        /// The migration's version.
        version: i64,
    },

    /// A database records a schema migration the migration set does not hold.
    #[error(
        "migration {version} is recorded as applied in _sqlx_migrations but is not in the migration set; \
         add its file back, or use the folder the database was migrated with"
    )]
    MigrationMissing {
        /// The migration's version.
        version: i64,
    },

    /// A schema migration is recorded as failed partway (`success = false`).
    #[error(
        "migration {version} is recorded with success = false: it failed partway, or another run is applying \
         it now; if no run is, repair the schema by hand and delete that row from _sqlx_migrations"
    )]
    MigrationDirty {
        /// The migration's version.
        version: i64,
    },
}

/// The category of an [`Error`]: what a caller can do about it.
///
/// The daemon maps each kind to an HTTP status and a gRPC code in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request lacked a route, or its route was blank.
    RouteRequired,
    /// The route's keyspace is not the map's.
    UnknownKeyspace,
    /// The input was malformed (bad id, bad argument, bad JSON, invalid map).
    InvalidInput,
    /// The shard map is invalid.
    InvalidMap,
    /// The named object or shard does not exist.
    NotFound,
    /// The request conflicts with the transaction or map it names.
    Conflict,
    /// The shard map changed since the transaction began.
    StaleMapVersion,
    /// The transaction expired and was rolled back.
    Expired,
    /// The daemon or the shard is temporarily unable to take the request; retry later.
    Busy,
    /// The addressed shard is disabled or closed.
    Unavailable,
    /// Read-only SQL would have written.
    ReadOnly,
    /// SQLite refused the SQL (syntax, constraint, type).
    Sql,
    /// A constraint (unique, foreign key, not null, check) was violated.
    Constraint,
    /// The master catalog has no map.
    NoMap,
    /// A shard-admin operation reached a daemon that serves an unsharded database.
    NotSharded,
    /// Storage or other internal failure.
    Internal,
    /// A catalog update expected another map version than the newest.
    MapVersionConflict,
    /// The daemon requires an API key and none, or a wrong one, was presented.
    Unauthenticated,
    /// Transaction control outside the transaction API.
    TransactionControl,
    /// A statement that reaches other files, loads code, or changes shared connection state.
    Forbidden,
    /// A statement ran past its time limit.
    Timeout,
    /// The caller went away before the work finished.
    Cancelled,
    /// A result grew past the rows or bytes one response may buffer.
    ResultTooLarge,
    /// A request ran past the daemon's request timeout or the caller's deadline.
    RequestTimeout,
    /// A write touched a route key or bucket fenced by a data migration (or moved by one); retry.
    RouteFenced,
    /// A query across every shard uses a construct that cannot be answered exactly there.
    UnsupportedCrossShardQuery,
}

impl ErrorKind {
    /// A stable snake_case code for this kind, used as `errorCode` on the wire.
    pub fn code(self) -> &'static str {
        match self {
            Self::RouteRequired => "route_required",
            Self::UnknownKeyspace => "unknown_keyspace",
            Self::InvalidInput => "invalid_input",
            Self::InvalidMap => "invalid_map",
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::StaleMapVersion => "stale_map_version",
            Self::Expired => "expired",
            Self::Busy => "busy",
            Self::Unavailable => "unavailable",
            Self::ReadOnly => "read_only",
            Self::Sql => "sql",
            Self::Constraint => "constraint",
            Self::NoMap => "no_map",
            Self::NotSharded => "not_sharded",
            Self::Internal => "internal",
            Self::Unauthenticated => "unauthenticated",
            Self::MapVersionConflict => "map_version_conflict",
            Self::TransactionControl => "transaction_control",
            Self::Forbidden => "forbidden_statement",
            Self::Timeout => "statement_timeout",
            Self::Cancelled => "cancelled",
            Self::ResultTooLarge => "result_too_large",
            Self::RequestTimeout => "request_timeout",
            Self::RouteFenced => "route_fenced",
            Self::UnsupportedCrossShardQuery => "unsupported_cross_shard_query",
        }
    }

    /// The kind whose [`code`](Self::code) is `code`, for decoding errors received over the wire.
    pub fn from_code(code: &str) -> Option<Self> {
        [
            Self::RouteRequired,
            Self::UnknownKeyspace,
            Self::InvalidInput,
            Self::InvalidMap,
            Self::NotFound,
            Self::Conflict,
            Self::StaleMapVersion,
            Self::Expired,
            Self::Busy,
            Self::Unavailable,
            Self::ReadOnly,
            Self::Sql,
            Self::Constraint,
            Self::NoMap,
            Self::NotSharded,
            Self::Internal,
            Self::Unauthenticated,
            Self::MapVersionConflict,
            Self::TransactionControl,
            Self::Forbidden,
            Self::Timeout,
            Self::Cancelled,
            Self::ResultTooLarge,
            Self::RequestTimeout,
            Self::RouteFenced,
            Self::UnsupportedCrossShardQuery,
        ]
        .into_iter()
        .find(|kind| kind.code() == code)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl Error {
    /// The category of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::BlankRoutePart { .. } | Self::RouteRequired => ErrorKind::RouteRequired,
            Self::UnknownKeyspace { .. } => ErrorKind::UnknownKeyspace,
            Self::ShardDisabled { .. }
            | Self::ShardIsDisabled { .. }
            | Self::ShardUnavailable { .. }
            | Self::Closed { .. } => ErrorKind::Unavailable,
            Self::UnknownShard { .. } | Self::NotFound { .. } | Self::TransactionNotFound { .. } => ErrorKind::NotFound,
            Self::InvalidMap(_) => ErrorKind::InvalidMap,
            Self::NoMap => ErrorKind::NoMap,
            Self::NotSharded => ErrorKind::NotSharded,
            Self::MalformedTransactionId { .. }
            | Self::InvalidArgument { .. }
            | Self::Json { .. }
            | Self::ConnectionString { .. }
            | Self::InvalidCursor { .. } => ErrorKind::InvalidInput,
            Self::TransactionRouteConflict { .. } => ErrorKind::Conflict,
            Self::StaleMapVersion { .. } => ErrorKind::StaleMapVersion,
            Self::TransactionExpired { .. } => ErrorKind::Expired,
            Self::Busy { .. } | Self::DaemonBusy { .. } | Self::TooManyTransactions { .. } => ErrorKind::Busy,
            Self::ReadOnlyViolation { .. } => ErrorKind::ReadOnly,
            Self::Sql { code, .. } => match code & 0xff {
                rusqlite::ffi::SQLITE_CONSTRAINT => ErrorKind::Constraint,
                rusqlite::ffi::SQLITE_BUSY | rusqlite::ffi::SQLITE_LOCKED => ErrorKind::Busy,
                rusqlite::ffi::SQLITE_READONLY => ErrorKind::ReadOnly,
                rusqlite::ffi::SQLITE_IOERR
                | rusqlite::ffi::SQLITE_CORRUPT
                | rusqlite::ffi::SQLITE_FULL
                | rusqlite::ffi::SQLITE_CANTOPEN
                | rusqlite::ffi::SQLITE_NOMEM => ErrorKind::Internal,
                _ => ErrorKind::Sql,
            },
            Self::Catalog { .. } | Self::Io { .. } => ErrorKind::Internal,
            Self::TransactionControl { .. } => ErrorKind::TransactionControl,
            Self::ForbiddenStatement { .. } => ErrorKind::Forbidden,
            Self::StatementTimeout { .. } => ErrorKind::Timeout,
            Self::Cancelled => ErrorKind::Cancelled,
            Self::ResultTooLarge { .. } => ErrorKind::ResultTooLarge,
            Self::RequestTimeout { .. } => ErrorKind::RequestTimeout,
            Self::MapVersionConflict { .. } => ErrorKind::MapVersionConflict,
            Self::NoPendingMap { .. } => ErrorKind::Conflict,
            Self::Remote { kind, .. } => *kind,
            Self::Transport { .. } => ErrorKind::Unavailable,
            Self::MigrationChanged { .. } | Self::MigrationMissing { .. } | Self::MigrationDirty { .. } => {
                ErrorKind::Conflict
            }
            Self::RouteFenced { .. } => ErrorKind::RouteFenced,
            Self::UnsupportedCrossShardQuery { .. } => ErrorKind::UnsupportedCrossShardQuery,
        }
    }

    /// Whether the same request may succeed if sent again shortly: the shard was busy, or the
    /// route was fenced by a migration that will end.
    pub fn is_retryable(&self) -> bool {
        matches!(self.kind(), ErrorKind::Busy | ErrorKind::RouteFenced)
    }

    /// The SQLite extended result code, when SQLite produced this error.
    pub fn sqlite_code(&self) -> Option<i32> {
        match self {
            Self::Sql { code, .. } => Some(*code),
            Self::Remote { sqlite_code, .. } => *sqlite_code,
            _ => None,
        }
    }

    pub(crate) fn invalid_argument(name: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidArgument {
            name,
            reason: reason.into(),
        }
    }
}

fn fenced_message(table: &str, value: &str, migration_id: &str, destination: &str, moved: bool) -> String {
    if moved {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraint_codes_map_to_constraint_kind() {
        let err = Error::Sql {
            code: 2067,
            code_name: "SQLITE_CONSTRAINT",
            message: "UNIQUE constraint failed: t.id".into(),
        };
        assert_eq!(err.kind(), ErrorKind::Constraint);
        assert_eq!(err.sqlite_code(), Some(2067));
    }

    #[test]
    fn every_kind_code_decodes_back() {
        for kind in [
            ErrorKind::RouteRequired,
            ErrorKind::Constraint,
            ErrorKind::Internal,
            ErrorKind::Unauthenticated,
            ErrorKind::TransactionControl,
            ErrorKind::Forbidden,
            ErrorKind::Timeout,
            ErrorKind::Cancelled,
            ErrorKind::ResultTooLarge,
            ErrorKind::RequestTimeout,
            ErrorKind::RouteFenced,
            ErrorKind::UnsupportedCrossShardQuery,
        ] {
            assert_eq!(ErrorKind::from_code(kind.code()), Some(kind));
        }
        assert_eq!(ErrorKind::from_code("no_such_code"), None);
        let remote = Error::Remote {
            kind: ErrorKind::Constraint,
            message: "UNIQUE constraint failed: t.id".into(),
            sqlite_code: Some(2067),
        };
        assert_eq!(remote.kind(), ErrorKind::Constraint);
        assert_eq!(remote.sqlite_code(), Some(2067));
    }

    #[test]
    fn route_required_message_says_how_to_fix_it() {
        let text = Error::RouteRequired.to_string();
        assert!(text.contains("for_route"), "{text}");
        assert!(text.contains("X-CSharpDB-Shard-Key"), "{text}");
    }
}
