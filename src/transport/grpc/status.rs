//! Failed calls: a gRPC status decoded into the crate's [`Error`], so callers branch on the same
//! [`ErrorKind`] as in-process.

use tonic::{Code, Status};

use super::proto as pb;
use crate::error::{Error, ErrorKind, RemoteFailure, TransportFailure};
use crate::transport::tls::explain_failure;
use crate::wire::{ERROR_CODE_METADATA, SQLITE_CODE_METADATA};

/// An [`Error::Transport`] naming the endpoint; a failed TLS handshake (or a TLS port reached
/// without TLS) is explained first.
pub(super) fn transport_error(endpoint: &str, reason: impl Into<String>) -> Error {
    let reason = reason.into();
    let reason = match explain_failure(&reason) {
        Some(explained) => format!("{explained} ({reason})"),
        None => reason,
    };
    Error::from(TransportFailure {
        endpoint: endpoint.to_owned(),
        reason,
    })
}

/// An error and its sources, joined with ": ".
pub(super) fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let next = inner.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = inner.source();
    }
    text
}

/// The kind of a status that carries no `shardlite-error-code` (a proxy or an older daemon).
fn kind_from_code(code: Code) -> ErrorKind {
    match code {
        Code::InvalidArgument | Code::OutOfRange => ErrorKind::InvalidInput,
        Code::NotFound => ErrorKind::NotFound,
        Code::AlreadyExists | Code::Aborted | Code::FailedPrecondition => ErrorKind::Conflict,
        Code::Unauthenticated | Code::PermissionDenied => ErrorKind::Unauthenticated,
        Code::ResourceExhausted => ErrorKind::Busy,
        Code::Unavailable => ErrorKind::Unavailable,
        _ => ErrorKind::Internal,
    }
}

/// Decodes a failed call into the crate's error, keeping the daemon's kind and SQLite code.
pub(super) fn decode_status(endpoint: &str, status: &Status) -> Error {
    let metadata = status.metadata();
    let text = |key: &str| metadata.get(key).and_then(|v| v.to_str().ok());
    if let Some(code) = text(ERROR_CODE_METADATA) {
        let kind = ErrorKind::from_code(code).unwrap_or_else(|| kind_from_code(status.code()));
        return Error::from(RemoteFailure {
            kind,
            message: status.message().to_owned(),
            sqlite_code: text(SQLITE_CODE_METADATA).and_then(|c| c.parse().ok()),
        });
    }
    match status.code() {
        // Without our trailer these come from the channel (refused, reset, timed out) or from
        // something that is not a shardlite daemon.
        Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Unknown | Code::Internal => {
            transport_error(endpoint, error_chain(status))
        }
        Code::Unimplemented => transport_error(
            endpoint,
            format!(
                "the endpoint does not serve the {} gRPC service ({})",
                pb::shardlite_server::SERVICE_NAME,
                status.message()
            ),
        ),
        code => Error::from(RemoteFailure {
            kind: kind_from_code(code),
            message: status.message().to_owned(),
            sqlite_code: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use tonic::metadata::{AsciiMetadataValue, MetadataMap};

    use super::*;

    #[test]
    fn statuses_with_a_shardlite_code_keep_their_kind_and_sqlite_code() {
        let mut metadata = MetadataMap::new();
        metadata.insert(ERROR_CODE_METADATA, AsciiMetadataValue::from_static("constraint"));
        metadata.insert(SQLITE_CODE_METADATA, AsciiMetadataValue::from_static("2067"));
        let status = Status::with_metadata(Code::FailedPrecondition, "UNIQUE constraint failed", metadata);
        let err = decode_status("http://h:1", &status);
        assert_eq!(err.kind(), ErrorKind::Constraint);
        assert_eq!(err.sqlite_code(), Some(2067));
        assert_eq!(err.to_string(), "UNIQUE constraint failed");

        let mut metadata = MetadataMap::new();
        metadata.insert(ERROR_CODE_METADATA, AsciiMetadataValue::from_static("not_sharded"));
        let status = Status::with_metadata(Code::FailedPrecondition, "not sharded", metadata);
        assert_eq!(decode_status("http://h:1", &status).kind(), ErrorKind::NotSharded);
    }

    #[test]
    fn statuses_without_a_shardlite_code_name_the_endpoint() {
        let err = decode_status("http://h:1", &Status::unavailable("tcp connect error"));
        assert!(matches!(err, Error::Transport { .. }), "{err:?}");
        assert!(err.to_string().contains("http://h:1"), "{err}");
        assert_eq!(err.kind(), ErrorKind::Unavailable);
        let err = decode_status("http://h:1", &Status::unimplemented(""));
        assert!(err.to_string().contains("shardlite.v1.Shardlite"), "{err}");
        assert_eq!(
            decode_status("http://h:1", &Status::unauthenticated("no key")).kind(),
            ErrorKind::Unauthenticated
        );
    }
}
