//! Failed calls: a transport failure, or an error status whose problem body
//! (`application/problem+json`) decodes into the crate's [`Error`] with the daemon's
//! [`ErrorKind`] and SQLite code, keeping the extension members a caller may need (`missing`,
//! the `validation` of a refused catalog update, the `migration` of a rejected migration, the
//! `mutation` of a refused shard directory change).

use reqwest::StatusCode;
use serde::Deserialize;

use crate::data::{CatalogValidation, DirectoryImportOutcome, DirectoryMutationResult, ReshardResult};
use crate::error::{Error, ErrorKind, RemoteFailure, TransportFailure};
use crate::transport::tls::explain_failure as explain_tls_failure;

/// A problem body, as the daemon sends it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Problem {
    #[serde(default)]
    detail: String,
    #[serde(default)]
    error_code: String,
    #[serde(default)]
    sqlite_code: Option<i32>,
    /// For `not_found`: the kind of object that is missing (`row`, `document`, ...).
    #[serde(default)]
    missing: Option<String>,
    /// For a refused catalog update: the validation that refused it. Read apart from the other
    /// members, so that a body this client cannot read still decodes as an error.
    #[serde(default)]
    validation: Option<serde_json::Value>,
    /// For a rejected migration request: its result, read apart like `validation`.
    #[serde(default)]
    migration: Option<serde_json::Value>,
    /// For a refused shard directory change: its result, read apart like `validation`.
    #[serde(default)]
    mutation: Option<serde_json::Value>,
    /// For a refused bulk load of directory entries: the index of the entry refused.
    #[serde(default)]
    refused_entry: Option<u64>,
}

/// A failed call: the error, for `not_found` the kind of object that is missing, for a refused
/// catalog update its validation, for a rejected migration its result, and for a refused shard
/// directory change its result.
pub(super) struct Failure {
    pub(super) error: Error,
    missing: Option<String>,
    validation: Option<Box<CatalogValidation>>,
    migration: Option<Box<ReshardResult>>,
    mutation: Option<Box<DirectoryMutationResult>>,
    refused_entry: Option<u64>,
}

impl Failure {
    /// A request that got no answer.
    pub(super) fn transport(endpoint: &str, err: &reqwest::Error) -> Self {
        Self {
            error: transport_error(endpoint, err),
            missing: None,
            validation: None,
            migration: None,
            mutation: None,
            refused_entry: None,
        }
    }

    /// An answer with an error `status` and `body`: the daemon's problem body decoded, or a
    /// transport error when the body is not one (a proxy, or not a shardlite daemon).
    pub(super) fn from_answer(endpoint: &str, status: StatusCode, body: &[u8]) -> Self {
        match serde_json::from_slice::<Problem>(body) {
            Ok(problem) if !problem.error_code.is_empty() => Self {
                error: Error::from(RemoteFailure {
                    kind: ErrorKind::from_code(&problem.error_code).unwrap_or_else(|| kind_for_status(status)),
                    message: problem.detail,
                    sqlite_code: problem.sqlite_code,
                }),
                missing: problem.missing,
                validation: problem
                    .validation
                    .and_then(|validation| serde_json::from_value(validation).ok())
                    .map(Box::new),
                migration: problem
                    .migration
                    .and_then(|migration| serde_json::from_value(migration).ok())
                    .map(Box::new),
                mutation: problem
                    .mutation
                    .and_then(|mutation| serde_json::from_value(mutation).ok())
                    .map(Box::new),
                refused_entry: problem.refused_entry,
            },
            _ => Self {
                error: Error::from(TransportFailure {
                    endpoint: endpoint.to_owned(),
                    reason: match std::str::from_utf8(body).ok().and_then(explain_tls_failure) {
                        Some(explained) => explained.to_owned(),
                        None => {
                            format!("the daemon answered {status} without an error body; is this a shardlite daemon?")
                        }
                    },
                }),
                missing: None,
                validation: None,
                migration: None,
                mutation: None,
                refused_entry: None,
            },
        }
    }

    /// The validation of a catalog update the daemon refused as invalid (400 `invalid_input` with
    /// a `validation` member), or the error when the answer is anything else.
    pub(super) fn into_refused_validation(self) -> Result<CatalogValidation, Error> {
        match self.validation {
            Some(validation) if self.error.kind() == ErrorKind::InvalidInput => Ok(*validation),
            _ => Err(self.error),
        }
    }

    /// The result of a migration the daemon rejected (400 `invalid_input` with a `migration`
    /// member), or the error when the answer is anything else.
    pub(super) fn into_rejected_migration(self) -> Result<ReshardResult, Error> {
        match self.migration {
            Some(migration) if self.error.kind() == ErrorKind::InvalidInput => Ok(*migration),
            _ => Err(self.error),
        }
    }

    /// The result of a shard directory change the daemon refused (400 `invalid_input` with a
    /// `mutation` member), or the error when the answer is anything else.
    pub(super) fn into_refused_mutation(self) -> Result<DirectoryMutationResult, Error> {
        match self.mutation {
            Some(mutation) if self.error.kind() == ErrorKind::InvalidInput => Ok(*mutation),
            _ => Err(self.error),
        }
    }

    /// The outcome of a bulk load of directory entries the daemon refused (400 `invalid_input`
    /// with `refusedEntry` and `mutation` members), or the error when the answer is anything else.
    pub(super) fn into_refused_import(self) -> Result<DirectoryImportOutcome, Error> {
        match (self.refused_entry, self.mutation) {
            (Some(index), Some(mutation)) if self.error.kind() == ErrorKind::InvalidInput => {
                Ok(DirectoryImportOutcome {
                    refused_entry: Some(index),
                    refusal: Some(*mutation),
                    ..DirectoryImportOutcome::default()
                })
            }
            _ => Err(self.error),
        }
    }

    /// Whether the daemon answered that an `object` (`row`, `document`, ...) does not exist.
    pub(super) fn is_missing(&self, object: &str) -> bool {
        self.error.kind() == ErrorKind::NotFound && self.missing.as_deref() == Some(object)
    }
}

/// An [`Error::Transport`] naming the endpoint, for a request that failed or timed out.
pub(super) fn transport_error(endpoint: &str, err: &reqwest::Error) -> Error {
    let cause = root_cause(err);
    let reason = if let Some(explained) = explain_tls_failure(&cause) {
        format!("{explained} ({cause})")
    } else if err.is_timeout() {
        "no answer within the request timeout".to_owned()
    } else if err.is_connect() {
        format!("could not connect ({cause})")
    } else {
        cause
    };
    Error::from(TransportFailure {
        endpoint: endpoint.to_owned(),
        reason,
    })
}

/// The messages of an error chain, outermost first, without repeats.
fn root_cause(err: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![err.to_string()];
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

/// The kind for a status whose problem body carries no crate error code.
fn kind_for_status(status: StatusCode) -> ErrorKind {
    match status {
        StatusCode::UNAUTHORIZED => ErrorKind::Unauthenticated,
        StatusCode::NOT_FOUND => ErrorKind::NotFound,
        StatusCode::CONFLICT => ErrorKind::Conflict,
        StatusCode::SERVICE_UNAVAILABLE => ErrorKind::Unavailable,
        s if s.is_client_error() => ErrorKind::InvalidInput,
        _ => ErrorKind::Internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENDPOINT: &str = "http://h:1";

    #[test]
    fn problem_bodies_keep_the_daemons_kind_sqlite_code_and_missing_object() {
        let body = br#"{"detail":"UNIQUE constraint failed","errorCode":"constraint","sqliteCode":2067}"#;
        let failure = Failure::from_answer(ENDPOINT, StatusCode::CONFLICT, body);
        assert_eq!(failure.error.kind(), ErrorKind::Constraint);
        assert_eq!(failure.error.sqlite_code(), Some(2067));
        assert_eq!(failure.error.to_string(), "UNIQUE constraint failed");

        let body = br#"{"detail":"no such row","errorCode":"not_found","missing":"row"}"#;
        let failure = Failure::from_answer(ENDPOINT, StatusCode::NOT_FOUND, body);
        assert!(failure.is_missing("row"));
        assert!(!failure.is_missing("document"));
    }

    #[test]
    fn a_refused_catalog_update_keeps_its_validation() {
        let body = br#"{"detail":"invalid catalog update: invalid-map: no shard","errorCode":"invalid_input",
            "validation":{"valid":false,"requiresDataMigration":false,"currentMapVersion":1,
            "issues":[{"severity":"error","code":"invalid-map","message":"no shard"}],
            "movedBuckets":[],"movedPins":[],"shardChanges":[]}}"#;
        let failure = Failure::from_answer(ENDPOINT, StatusCode::BAD_REQUEST, body);
        let validation = failure.into_refused_validation().expect("a validation");
        assert!(!validation.valid);
        assert_eq!(validation.issues[0].code, "invalid-map");

        // Without the member, or with one this client cannot read, it stays an error.
        let body = br#"{"detail":"bad body","errorCode":"invalid_input","validation":{"valid":"maybe"}}"#;
        let failure = Failure::from_answer(ENDPOINT, StatusCode::BAD_REQUEST, body);
        let err = failure.into_refused_validation().expect_err("no validation");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        let body = br#"{"detail":"stale","errorCode":"map_version_conflict"}"#;
        let failure = Failure::from_answer(ENDPOINT, StatusCode::CONFLICT, body);
        let err = failure.into_refused_validation().expect_err("a conflict");
        assert_eq!(err.kind(), ErrorKind::MapVersionConflict);
    }

    #[test]
    fn an_unknown_error_code_falls_back_to_the_status() {
        let body = br#"{"detail":"later","errorCode":"from_the_future"}"#;
        let failure = Failure::from_answer(ENDPOINT, StatusCode::SERVICE_UNAVAILABLE, body);
        assert_eq!(failure.error.kind(), ErrorKind::Unavailable);
        let failure = Failure::from_answer(ENDPOINT, StatusCode::UNPROCESSABLE_ENTITY, body);
        assert_eq!(failure.error.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn answers_without_a_problem_body_are_transport_errors_naming_the_endpoint() {
        for body in [&b"<html>bad gateway</html>"[..], br#"{"detail":"no code"}"#] {
            let failure = Failure::from_answer(ENDPOINT, StatusCode::BAD_GATEWAY, body);
            assert!(matches!(failure.error, Error::Transport { .. }), "{:?}", failure.error);
            assert!(failure.error.to_string().contains(ENDPOINT), "{}", failure.error);
            assert!(!failure.is_missing("row"));
        }
    }

    #[test]
    fn a_tls_port_answering_plain_http_says_to_use_https() {
        let body = crate::transport::tls::TLS_REQUIRED_REPLY.as_bytes();
        let failure = Failure::from_answer(ENDPOINT, StatusCode::BAD_REQUEST, body);
        assert!(matches!(failure.error, Error::Transport { .. }), "{:?}", failure.error);
        assert!(
            failure.error.to_string().contains("use an https:// endpoint"),
            "{}",
            failure.error
        );
    }
}
