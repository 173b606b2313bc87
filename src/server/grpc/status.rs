//! The one place that turns a crate [`Error`] into a gRPC [`Status`].
//!
//! | error kind | gRPC code |
//! |---|---|
//! | `route_required`, `unknown_keyspace`, `invalid_input`, `invalid_map`, `read_only`, `sql` | `INVALID_ARGUMENT` |
//! | `not_found`, `no_map` | `NOT_FOUND` |
//! | `conflict`, `stale_map_version`, `expired` | `ABORTED`: the transaction cannot go on; begin a new one |
//! | `map_version_conflict` | `ABORTED`: the catalog changed; read it again |
//! | `constraint`, `transaction_control` | `FAILED_PRECONDITION` |
//! | `not_sharded` (shard-admin call on an unsharded daemon) | `FAILED_PRECONDITION` |
//! | `unsupported_cross_shard_query` | `FAILED_PRECONDITION` |
//! | `forbidden_statement`, `permission_denied` (the key lacks a scope) | `PERMISSION_DENIED` |
//! | `statement_timeout`, `request_timeout` | `DEADLINE_EXCEEDED` |
//! | `cancelled` | `CANCELLED` |
//! | `result_too_large` | `RESOURCE_EXHAUSTED` |
//! | `busy`, `unavailable`, `catalog_unavailable` (etcd unreachable; nothing written) | `UNAVAILABLE`: retry later |
//! | `unauthenticated` | `UNAUTHENTICATED` |
//! | `internal` | `INTERNAL`, with a generic message; the real error goes to the log |
//!
//! Every status carries the trailer `shardlite-error-code` (the kind's code) and, for SQLite
//! errors, `shardlite-sqlite-code`, so clients branch on codes rather than on text.

use tonic::metadata::{AsciiMetadataValue, MetadataMap};
use tonic::{Code, Status};

use crate::error::{Error, ErrorKind, ShardProblem};
use crate::wire::{ERROR_CODE_METADATA, SQLITE_CODE_METADATA};

/// The message of every `internal` error; the real error is logged, never sent.
const INTERNAL_MESSAGE: &str = "the daemon could not complete the request; the daemon log has the details";

/// The gRPC code of an error kind.
fn code_for(kind: ErrorKind) -> Code {
    match kind {
        ErrorKind::RouteRequired
        | ErrorKind::UnknownKeyspace
        | ErrorKind::InvalidInput
        | ErrorKind::InvalidMap
        | ErrorKind::ReadOnly
        | ErrorKind::Sql => Code::InvalidArgument,
        ErrorKind::NotFound | ErrorKind::NoMap => Code::NotFound,
        ErrorKind::Conflict
        | ErrorKind::MapVersionConflict
        | ErrorKind::StaleMapVersion
        | ErrorKind::Expired
        | ErrorKind::RouteFenced => Code::Aborted,
        ErrorKind::Constraint | ErrorKind::NotSharded | ErrorKind::UnsupportedCrossShardQuery => {
            Code::FailedPrecondition
        }
        ErrorKind::Busy | ErrorKind::Unavailable | ErrorKind::CatalogUnavailable => Code::Unavailable,
        ErrorKind::Unauthenticated => Code::Unauthenticated,
        ErrorKind::Internal => Code::Internal,
        ErrorKind::TransactionControl => Code::FailedPrecondition,
        ErrorKind::Forbidden | ErrorKind::PermissionDenied => Code::PermissionDenied,
        ErrorKind::Timeout | ErrorKind::RequestTimeout => Code::DeadlineExceeded,
        ErrorKind::Cancelled => Code::Cancelled,
        ErrorKind::ResultTooLarge => Code::ResourceExhausted,
    }
}

fn status(kind: ErrorKind, message: String, sqlite_code: Option<i32>) -> Status {
    let mut metadata = MetadataMap::new();
    metadata.insert(ERROR_CODE_METADATA, AsciiMetadataValue::from_static(kind.code()));
    if let Some(code) = sqlite_code {
        // A decimal integer is always a valid metadata value.
        if let Ok(value) = AsciiMetadataValue::try_from(code.to_string()) {
            metadata.insert(SQLITE_CODE_METADATA, value);
        }
    }
    Status::with_metadata(code_for(kind), message, metadata)
}

/// The status a failed call answers with. The only function that maps errors to gRPC codes.
pub fn status_from_error(err: &Error) -> Status {
    let kind = err.kind();
    let message = match err {
        _ if kind == ErrorKind::Internal => {
            tracing::error!(error = %err, "gRPC call failed with an internal error");
            INTERNAL_MESSAGE.to_owned()
        }
        // The reason can name the shard's file; operators find it in the status RPC and the log.
        Error::ShardUnavailable(problem) => {
            let ShardProblem { shard_id, reason } = &**problem;
            tracing::warn!(shard_id, reason, "gRPC call reached an unavailable shard");
            format!("shard '{shard_id}' is unavailable; GetShardStatus reports why")
        }
        _ => err.to_string(),
    };
    status(kind, message, err.sqlite_code())
}

/// The status of a call without the configured API key (`header`, the daemon's key header).
pub fn unauthenticated(header: &str) -> Status {
    let message = crate::server::keys::refused_key_message(header);
    status(ErrorKind::Unauthenticated, message, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{SqlFailure, StaleMapVersion};

    fn code_of(status: &Status) -> &str {
        status
            .metadata()
            .get(ERROR_CODE_METADATA)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    #[test]
    fn routing_problems_are_invalid_argument() {
        let status = status_from_error(&Error::RouteRequired);
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(code_of(&status), "route_required");
        assert!(status.message().contains("route is required"));
    }

    #[test]
    fn transaction_problems_abort_and_admin_on_plain_daemons_fails_precondition() {
        let stale = Error::from(StaleMapVersion {
            transaction_id: "csdbshard:1:s0:x".into(),
            transaction_version: 1,
            active_version: 2,
        });
        assert_eq!(status_from_error(&stale).code(), Code::Aborted);
        let status = status_from_error(&Error::NotSharded);
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert_eq!(code_of(&status), "not_sharded");
    }

    #[test]
    fn sql_errors_carry_the_sqlite_code() {
        let err = Error::from(SqlFailure {
            code: 2067,
            code_name: "SQLITE_CONSTRAINT",
            message: "UNIQUE constraint failed: t.id".into(),
        });
        let status = status_from_error(&err);
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert_eq!(code_of(&status), "constraint");
        assert_eq!(
            status
                .metadata()
                .get(SQLITE_CODE_METADATA)
                .and_then(|v| v.to_str().ok()),
            Some("2067")
        );
    }

    #[test]
    fn internal_errors_and_unavailable_shards_hide_paths() {
        let err = Error::Io {
            what: "/srv/secret/master.db".into(),
            source: std::io::Error::other("disk on fire"),
        };
        let status = status_from_error(&err);
        assert_eq!(status.code(), Code::Internal);
        assert!(!status.message().contains("/srv"), "{}", status.message());
        let err = Error::shard_unavailable("s1", "i/o error on /srv/secret/s1.db");
        let status = status_from_error(&err);
        assert_eq!(status.code(), Code::Unavailable);
        assert!(!status.message().contains("/srv"), "{}", status.message());
    }
}
