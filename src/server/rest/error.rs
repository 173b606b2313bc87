//! Every REST error, and the one function that turns it into an HTTP status and an
//! `application/problem+json` body (RFC 9457).
//!
//! Handlers return [`ApiError`]; extractor rejections (bad JSON, wrong content type, oversized
//! bodies, bad query strings or paths) are converted into it as well, so a client sees one error
//! shape everywhere. The status is chosen from the error's [`ErrorKind`] in [`problem`] and
//! nowhere else.
//!
//! | kind | status |
//! |---|---|
//! | `route_required`, `unknown_keyspace`, `invalid_input`, `invalid_map`, `read_only`, `sql`, `transaction_control`, `result_too_large` | 400 |
//! | `unauthenticated` | 401 |
//! | `forbidden_statement` | 403 |
//! | `not_found`, `no_map`, `not_sharded` | 404 |
//! | `statement_timeout`, `request_timeout`, `cancelled` | 408 |
//! | `conflict`, `map_version_conflict`, `stale_map_version`, `expired`, `route_fenced`, `row_locked`, `constraint` | 409 |
//! | `unsupported_cross_shard_query` | 422 |
//! | `busy` (with `Retry-After`), `unavailable`, `catalog_unavailable` (etcd unreachable; nothing written) | 503 |
//! | `internal` | 500, with a generic detail; the real error goes to the log |
//!
//! A `not_found` body also says which kind of object is missing (`missing`: `row`, `table`, ...).
//! A catalog update that validation refused is a 400 `invalid_input` body with the validation as
//! the extension member `validation` ([`CatalogUpdateRefused`]); a migration request that was
//! rejected before anything moved is a 400 `invalid_input` body with the whole result as the
//! extension member `migration` ([`ReshardRejected`]); a shard directory change that was refused
//! is a 400 `invalid_input` body with the whole result as the extension member `mutation`
//! ([`DirectoryRefused`]).
//! Request problems that are not crate errors: `payload_too_large` (413),
//! `unsupported_media_type` (415), `method_not_allowed` (405) and `not_found` for a path no
//! endpoint serves (404).

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::data::{CatalogValidation, DirectoryMutationResult, ReshardResult};
use crate::error::{Error, ErrorKind, ShardProblem};

/// The media type of every error body.
pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// Seconds a client should wait before retrying a `busy` answer.
const BUSY_RETRY_AFTER_SECS: &str = "1";

/// The detail of every `internal` error; the real error is logged, never sent.
const INTERNAL_DETAIL: &str = "the daemon could not complete the request; the daemon log has the details";

/// An error body (RFC 9457 problem details).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// The HTTP status phrase, e.g. `Bad Request`.
    #[schema(example = "Bad Request")]
    pub title: String,
    /// The HTTP status code.
    #[schema(example = 400)]
    pub status: u16,
    /// What went wrong, naming the offending input. Never contains file paths or secrets.
    #[schema(example = "a route is required for this operation: ...")]
    pub detail: String,
    /// A stable, machine-readable code: an `ErrorKind` code such as `route_required`, or a
    /// request problem such as `payload_too_large`.
    #[schema(example = "route_required")]
    pub error_code: String,
    /// The SQLite extended result code, for errors SQLite reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = 2067)]
    pub sqlite_code: Option<i32>,
    /// For `not_found`: the kind of object that is missing (`row`, `table`, `document`,
    /// `collection`, `saved query`, `procedure`, `transaction`, `shard`), so a client can tell a
    /// missing row from a missing table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = "row")]
    pub missing: Option<String>,
}

/// The answer to a catalog update that validation refused: a problem body (400, `invalid_input`,
/// the error issues as its detail) whose extension member `validation` is the whole validation.
/// A body that could not be read at all is a plain problem, without `validation`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogUpdateRefused {
    /// The problem members.
    #[serde(flatten)]
    pub problem: Problem,
    /// Why the update was refused, and what it would have changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation: Option<CatalogValidation>,
}

impl CatalogUpdateRefused {
    /// The refusal of an update whose `validation` found errors.
    pub fn new(validation: CatalogValidation) -> Self {
        let refused = Error::invalid_argument("catalog update", validation.error_summary());
        let (_, problem) = problem(&ApiError::Data(refused));
        Self {
            problem,
            validation: Some(validation),
        }
    }
}

/// The answer to a migration request that was rejected before anything moved (its `status` is
/// `Rejected`; the history records it): a problem body (400, `invalid_input`, the result's
/// message as its detail) whose extension member `migration` is the whole result, with the
/// `issues` that name each problem. A body that could not be read at all is a plain problem,
/// without `migration`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = MigrationRejected)]
pub struct ReshardRejected {
    /// The problem members.
    #[serde(flatten)]
    pub problem: Problem,
    /// The rejected migration's result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub migration: Option<ReshardResult>,
}

impl ReshardRejected {
    /// The answer for `migration`, which was rejected.
    pub fn new(migration: ReshardResult) -> Self {
        let rejected = Error::invalid_argument("migration request", migration.message.clone());
        let (_, problem) = problem(&ApiError::Data(rejected));
        Self {
            problem,
            migration: Some(migration),
        }
    }
}

/// The answer to a shard directory change that was refused (its `status` is `Rejected`; nothing
/// was written): a problem body (400, `invalid_input`, the result's message as its detail) whose
/// extension member `mutation` is the whole result, with the `issues` that name the problem. A
/// body that could not be read at all is a plain problem, without `mutation`.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = DirectoryMutationRefused)]
pub struct DirectoryRefused {
    /// The problem members.
    #[serde(flatten)]
    pub problem: Problem,
    /// The refused change's result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutation: Option<DirectoryMutationResult>,
    /// For a refused bulk load: the index (from 0) of the entry refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused_entry: Option<u64>,
}

impl DirectoryRefused {
    /// The answer for `mutation`, which was refused.
    pub fn new(mutation: DirectoryMutationResult) -> Self {
        let refused = Error::invalid_argument("shard directory change", mutation.message.clone());
        let (_, problem) = problem(&ApiError::Data(refused));
        Self {
            problem,
            mutation: Some(mutation),
            refused_entry: None,
        }
    }

    /// The answer for a bulk load refused at entry `index` for `mutation`: nothing was written.
    pub fn import(index: u64, mutation: DirectoryMutationResult) -> Self {
        let lookup_key = mutation.entry.as_ref().map(|entry| entry.lookup_key.clone());
        let entry = match lookup_key {
            Some(key) => format!("entry {index} (lookup key '{key}')"),
            None => format!("entry {index}"),
        };
        let detail = format!("{entry}: {}; nothing was written", mutation.message);
        let refused = Error::invalid_argument("shard directory import", detail);
        let (_, problem) = problem(&ApiError::Data(refused));
        Self {
            problem,
            mutation: Some(mutation),
            refused_entry: Some(index),
        }
    }
}

impl IntoResponse for DirectoryRefused {
    fn into_response(self) -> Response {
        let status = self.problem.status;
        problem_with_members(status, self)
    }
}

impl IntoResponse for ReshardRejected {
    fn into_response(self) -> Response {
        let status = self.problem.status;
        problem_with_members(status, self)
    }
}

/// A problem body with extension members, with its status and media type.
fn problem_with_members(status: u16, body: impl Serialize) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = (status, axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_CONTENT_TYPE));
    response
}

impl IntoResponse for CatalogUpdateRefused {
    fn into_response(self) -> Response {
        tracing::debug!(
            error_code = self.problem.error_code,
            status = self.problem.status,
            "catalog update refused"
        );
        let status = self.problem.status;
        problem_with_members(status, self)
    }
}

/// Anything a REST request can fail with.
#[derive(Debug)]
pub enum ApiError {
    /// A crate error from the data or admin operation (or a request argument it refused).
    Data(Error),
    /// An API key is configured and the request did not present it (or an unknown one) in
    /// `header`, the daemon's key header.
    Unauthenticated {
        /// The header the key goes in.
        header: Box<str>,
    },
    /// The request body is larger than the configured limit.
    PayloadTooLarge,
    /// The request body is not `application/json`.
    UnsupportedMediaType,
    /// The path exists, but not with this method.
    MethodNotAllowed,
    /// No endpoint serves this path.
    NoEndpoint,
}

impl From<Error> for ApiError {
    fn from(err: Error) -> Self {
        Self::Data(err)
    }
}

impl ApiError {
    /// A 400 naming the argument that was wrong.
    pub fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        Self::Data(Error::InvalidArgument {
            name,
            reason: reason.into().into_boxed_str(),
        })
    }

    /// A 404 for a missing object.
    pub fn not_found(what: &'static str, name: impl Into<String>) -> Self {
        Self::Data(Error::NotFound {
            what,
            name: name.into().into_boxed_str(),
        })
    }
}

/// The status and problem body of an error. The only place that maps errors to HTTP statuses.
pub fn problem(err: &ApiError) -> (StatusCode, Problem) {
    let missing = match err {
        ApiError::Data(Error::NotFound { what, .. }) => Some(*what),
        ApiError::Data(Error::TransactionNotFound { .. }) => Some("transaction"),
        ApiError::Data(Error::UnknownShard { .. }) => Some("shard"),
        _ => None,
    };
    let (status, code, detail, sqlite_code) = match err {
        ApiError::Data(err) => {
            let kind = err.kind();
            let status = match kind {
                ErrorKind::RouteRequired
                | ErrorKind::UnknownKeyspace
                | ErrorKind::InvalidInput
                | ErrorKind::InvalidMap
                | ErrorKind::ReadOnly
                | ErrorKind::Sql
                | ErrorKind::TransactionControl
                | ErrorKind::ResultTooLarge => StatusCode::BAD_REQUEST,
                ErrorKind::Forbidden | ErrorKind::PermissionDenied => StatusCode::FORBIDDEN,
                ErrorKind::Timeout | ErrorKind::RequestTimeout | ErrorKind::Cancelled => StatusCode::REQUEST_TIMEOUT,
                ErrorKind::Unauthenticated => StatusCode::UNAUTHORIZED,
                ErrorKind::NotFound | ErrorKind::NoMap | ErrorKind::NotSharded => StatusCode::NOT_FOUND,
                ErrorKind::Conflict
                | ErrorKind::MapVersionConflict
                | ErrorKind::StaleMapVersion
                | ErrorKind::Expired
                | ErrorKind::RouteFenced
                | ErrorKind::RowLocked
                | ErrorKind::Constraint => StatusCode::CONFLICT,
                ErrorKind::UnsupportedCrossShardQuery => StatusCode::UNPROCESSABLE_ENTITY,
                ErrorKind::Busy | ErrorKind::Unavailable | ErrorKind::CatalogUnavailable => {
                    StatusCode::SERVICE_UNAVAILABLE
                }
                ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            };
            let detail = match err {
                _ if kind == ErrorKind::Internal => INTERNAL_DETAIL.to_owned(),
                // The reason can name the shard's file; operators find it in the status endpoint.
                Error::ShardUnavailable(problem) => {
                    format!(
                        "shard '{}' is unavailable; GET /api/sharding/status reports why",
                        problem.shard_id
                    )
                }
                _ => err.to_string(),
            };
            (status, kind.code(), detail, err.sqlite_code())
        }
        ApiError::Unauthenticated { header } => (
            StatusCode::UNAUTHORIZED,
            ErrorKind::Unauthenticated.code(),
            crate::server::keys::refused_key_message(header),
            None,
        ),
        ApiError::PayloadTooLarge => (
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the request body is larger than the daemon's body limit".to_owned(),
            None,
        ),
        ApiError::UnsupportedMediaType => (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the request body must be JSON, sent with 'Content-Type: application/json'".to_owned(),
            None,
        ),
        ApiError::MethodNotAllowed => (
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            "this endpoint does not accept the request method; /openapi.json lists the methods".to_owned(),
            None,
        ),
        ApiError::NoEndpoint => (
            StatusCode::NOT_FOUND,
            ErrorKind::NotFound.code(),
            "no endpoint serves this path; /openapi.json lists the endpoints".to_owned(),
            None,
        ),
    };
    let problem = Problem {
        title: status.canonical_reason().unwrap_or("Error").to_owned(),
        status: status.as_u16(),
        detail,
        error_code: code.to_owned(),
        sqlite_code,
        missing: missing.map(str::to_owned),
    };
    (status, problem)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, body) = problem(&self);
        if let Self::Data(err) = &self {
            if err.kind() == ErrorKind::Internal {
                tracing::error!(error = %err, "request failed with an internal error");
            } else if let Error::ShardUnavailable(problem) = err {
                let ShardProblem { shard_id, reason } = &**problem;
                tracing::warn!(shard_id, reason, "request reached an unavailable shard");
            } else {
                tracing::debug!(error_code = body.error_code, status = body.status, "request refused");
            }
        }
        let mut response = (status, axum::Json(body)).into_response();
        // The request middleware counts the outcome by kind (the metrics' `code` label).
        match &self {
            Self::Data(err) => {
                response.extensions_mut().insert(err.kind());
            }
            Self::Unauthenticated { .. } => {
                response.extensions_mut().insert(ErrorKind::Unauthenticated);
            }
            _ => {}
        }
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_CONTENT_TYPE));
        if status == StatusCode::SERVICE_UNAVAILABLE
            && matches!(&self, Self::Data(err) if err.kind() == ErrorKind::Busy)
        {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static(BUSY_RETRY_AFTER_SECS));
        }
        response
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        match rejection.status() {
            StatusCode::PAYLOAD_TOO_LARGE => Self::PayloadTooLarge,
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Self::UnsupportedMediaType,
            _ => Self::invalid("request body", rejection.body_text()),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        Self::invalid("query string", rejection.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        Self::invalid("path", rejection.body_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{SqlFailure, TransactionRouteConflict, UnknownKeyspace};

    fn status_of(err: Error) -> (u16, String) {
        let (status, body) = problem(&ApiError::Data(err));
        assert_eq!(status.as_u16(), body.status);
        (body.status, body.error_code)
    }

    #[test]
    fn routing_problems_are_client_errors() {
        assert_eq!(status_of(Error::RouteRequired), (400, "route_required".into()));
        let unknown = Error::from(UnknownKeyspace {
            keyspace: "x".into(),
            expected: "tenants".into(),
        });
        assert_eq!(status_of(unknown), (400, "unknown_keyspace".into()));
        let malformed = Error::MalformedTransactionId {
            input: "nope".into(),
            reason: "it needs four ':'-separated parts",
        };
        assert_eq!(status_of(malformed), (400, "invalid_input".into()));
        let conflict = Error::from(TransactionRouteConflict {
            transaction_id: "csdbshard:1:s0:a".into(),
            transaction_shard_id: "s0".into(),
            route_shard_id: "s1".into(),
        });
        assert_eq!(status_of(conflict), (409, "conflict".into()));
        assert_eq!(status_of(Error::NotSharded), (404, "not_sharded".into()));
    }

    #[test]
    fn not_found_names_what_is_missing() {
        let (_, row) = problem(&ApiError::not_found("row", "items/7"));
        assert_eq!(row.missing.as_deref(), Some("row"));
        let transaction = Error::TransactionNotFound {
            transaction_id: "csdbshard:1:s0:x".into(),
        };
        let (_, transaction) = problem(&ApiError::Data(transaction));
        assert_eq!(transaction.missing.as_deref(), Some("transaction"));
        let (_, other) = problem(&ApiError::Data(Error::RouteRequired));
        assert_eq!(other.missing, None);
    }

    #[test]
    fn internal_errors_hide_their_detail() {
        let err = Error::Io {
            what: "/srv/secret/path/master.db".into(),
            source: std::io::Error::other("disk on fire"),
        };
        let (status, body) = problem(&ApiError::Data(err));
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!body.detail.contains("/srv"), "{}", body.detail);
        assert!(!body.detail.contains("fire"), "{}", body.detail);
        assert_eq!(body.error_code, "internal");
    }

    #[test]
    fn sql_errors_carry_the_sqlite_code() {
        let err = Error::from(SqlFailure {
            code: 2067,
            code_name: "SQLITE_CONSTRAINT",
            message: "UNIQUE constraint failed: t.id".into(),
        });
        let (status, body) = problem(&ApiError::Data(err));
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(body.sqlite_code, Some(2067));
        assert_eq!(body.title, "Conflict");
    }

    #[test]
    fn busy_answers_carry_retry_after() {
        let response = ApiError::Data(Error::busy("s0", "8 transactions are already open")).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        assert_eq!(response.headers()[header::CONTENT_TYPE], PROBLEM_CONTENT_TYPE);
    }
}
