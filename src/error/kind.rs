//! What a caller can do about an error: [`ErrorKind`], its stable wire code, and the kind of
//! every [`Error`] variant.

use std::fmt;

use super::Error;

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
    /// The API key is valid but lacks the scope the operation needs, or may not use its keyspace.
    PermissionDenied,
    /// The catalog's store (etcd) could not be reached; nothing was written. Retry later.
    CatalogUnavailable,
    /// A write touched a row locked by a prepared atomic transaction; retry.
    RowLocked,
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
            Self::PermissionDenied => "permission_denied",
            Self::CatalogUnavailable => "catalog_unavailable",
            Self::RowLocked => "row_locked",
        }
    }

    /// Every kind, in declaration order (a kind's position is stable within one build).
    pub const ALL: [ErrorKind; 29] = [
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
        Self::PermissionDenied,
        Self::CatalogUnavailable,
        Self::RowLocked,
    ];

    /// The kind whose [`code`](Self::code) is `code`, for decoding errors received over the wire.
    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.code() == code)
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
            | Self::ShardStorage { .. }
            | Self::Closed { .. } => ErrorKind::Unavailable,
            Self::UnknownShard { .. }
            | Self::NotFound { .. }
            | Self::TransactionNotFound { .. }
            | Self::NotDataHost => ErrorKind::NotFound,
            Self::InvalidMap(_) => ErrorKind::InvalidMap,
            Self::Directory(problem) => problem.kind(),
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
            Self::Sql(failure) => match failure.code & 0xff {
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
            Self::Remote(remote) => remote.kind,
            Self::Transport { .. } => ErrorKind::Unavailable,
            Self::SchemaMigrationChanged { .. }
            | Self::SchemaMigrationMissing { .. }
            | Self::SchemaMigrationDirty { .. }
            | Self::ReshardRunning { .. } => ErrorKind::Conflict,
            Self::RouteFenced { .. } => ErrorKind::RouteFenced,
            Self::UnsupportedCrossShardQuery { .. } => ErrorKind::UnsupportedCrossShardQuery,
            Self::PermissionDenied(_) => ErrorKind::PermissionDenied,
            Self::CatalogUnavailable { .. } => ErrorKind::CatalogUnavailable,
            Self::RowLocked { .. } => ErrorKind::RowLocked,
            Self::AtomicUnsupported { .. } => ErrorKind::InvalidInput,
            Self::AtomicDecided { .. } => ErrorKind::Conflict,
            Self::BackupDamaged { .. } => ErrorKind::InvalidInput,
        }
    }

    /// Whether the same request may succeed if sent again shortly: the shard was busy, the
    /// route was fenced by a migration that will end, or the catalog's store was unreachable.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::Busy | ErrorKind::RouteFenced | ErrorKind::CatalogUnavailable | ErrorKind::RowLocked
        )
    }

    /// The SQLite extended result code, when SQLite produced this error.
    pub fn sqlite_code(&self) -> Option<i32> {
        match self {
            Self::Sql(failure) | Self::ShardStorage { failure, .. } => Some(failure.code),
            Self::Remote(remote) => remote.sqlite_code,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{RemoteFailure, SqlFailure};

    #[test]
    fn a_catalog_outage_does_not_claim_a_read_wrote_nothing() {
        let err = Error::CatalogUnavailable {
            reason: "etcd at 127.0.0.1:2379 did not answer".into(),
        };
        let message = err.to_string();
        assert!(!message.contains("nothing was written"), "{message}");
        assert!(message.contains("retry once it answers"), "{message}");
        assert_eq!(err.kind(), ErrorKind::CatalogUnavailable);
    }

    #[test]
    fn constraint_codes_map_to_constraint_kind() {
        let err = Error::from(SqlFailure {
            code: 2067,
            code_name: "SQLITE_CONSTRAINT",
            message: "UNIQUE constraint failed: t.id".into(),
        });
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
            ErrorKind::PermissionDenied,
            ErrorKind::RowLocked,
        ] {
            assert_eq!(ErrorKind::from_code(kind.code()), Some(kind));
        }
        assert_eq!(ErrorKind::from_code("no_such_code"), None);
        let remote = Error::from(RemoteFailure {
            kind: ErrorKind::Constraint,
            message: "UNIQUE constraint failed: t.id".into(),
            sqlite_code: Some(2067),
        });
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
