//! The OpenAPI document served at `/openapi.json`.
//!
//! Operations come from the handlers' `#[utoipa::path]` annotations, collected by utoipa-axum as
//! the router is built, so an endpoint cannot exist without being documented. [`complete`] then
//! adds what every operation shares, in one place: the route headers of data endpoints, the
//! problem responses (400, 408, 500, 503; 401 when an API key is configured; 413 and 415 where
//! there is a body; 404 `not_sharded` on shard-admin endpoints) and the API-key security scheme.
//! Every operation can answer 408 and 503 because the request limits cover every route.

use axum::Extension;
use axum::body::Bytes;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn, PathItem};
use utoipa::openapi::request_body::RequestBody;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Content, Header, OpenApi, Ref, RefOr, Required};
use utoipa::{OpenApi as _, ToSchema};

use super::bodies::PkType;
use super::error::{PROBLEM_CONTENT_TYPE, Problem};
use crate::data::openapi::{ParamsSchema, ValueSchema};
use crate::server::operations::{Needs, OperationId};
use crate::server::{KEYSPACE_HEADER, SHARD_KEY_HEADER, ServerConfig};
use crate::wire::SHARD_HEADER;

/// The static part of the document; operations are added by the router.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "shardlite daemon",
        description = "Application-level sharding for SQLite. Data endpoints run on the shard that the \
            route headers X-CSharpDB-Keyspace and X-CSharpDB-Shard-Key resolve to (send both or neither); \
            shard-admin endpoints are under /api/sharding. Errors are application/problem+json bodies with \
            title, status, detail and a stable errorCode. With scoped API keys, SQL is allowed as follows: \
            `read` runs POST /api/sql/read-only, and runs read-only, on a connection that cannot write, \
            POST /api/sql/execute, the transactions it begins (POST /api/transactions, then execute, commit and \
            rollback) and POST /api/procedures/{name}/execute: a statement that would write is refused with 403 \
            naming the `write` scope, and nothing is written; `write` runs any SQL on these; `admin` runs \
            POST /api/sharding/sql/execute-all."
    ),
    paths(openapi_json),
    components(schemas(Problem, ValueSchema, ParamsSchema, PkType)),
    tags(
        (name = "data", description = "SQL and database information; read-only SQL is POST /api/sql/read-only"),
        (name = "transactions", description = "Remote transactions with an idle timeout"),
        (name = "atomic participants", description = "Internal: the participant calls of atomic transactions \
            that another daemon coordinates on this daemon's plain database or data-host shards"),
        (name = "tables", description = "Tables and rows by primary key"),
        (name = "collections", description = "JSON documents by key"),
        (name = "saved queries", description = "Named SQL texts, stored per shard"),
        (name = "procedures", description = "Named, parameterised SQL bodies, executed atomically"),
        (name = "sharding", description = "Shard-admin endpoints for operators (404 on an unsharded daemon)"),
        (name = "data host", description = "The shard files of a data host (`serve --shard-dir`; 404 elsewhere)"),
        (name = "meta", description = "This document"),
    )
)]
pub struct ApiDoc;

/// The static part of the document.
pub fn base() -> OpenApi {
    ApiDoc::openapi()
}

/// The finished document, serialised once when the router is built.
#[derive(Debug, Clone)]
pub struct OpenApiJson(pub Bytes);

/// This document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "meta",
    operation_id = "getOpenApiDocument",
    responses((status = 200, description = "The OpenAPI document of this daemon", body = Object,
        content_type = "application/json"))
)]
pub async fn openapi_json(Extension(OpenApiJson(json)): Extension<OpenApiJson>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        json,
    )
}

/// Adds the shared parameters, responses and security to every operation of `doc`. On a daemon
/// serving a shard map of `keyspace`, the route headers are required (with that keyspace)
/// wherever the operation needs a route.
pub fn complete(mut doc: OpenApi, config: &ServerConfig, keyspace: Option<&str>) -> OpenApi {
    let authenticated = config.requires_key();
    for (path, item) in &mut doc.paths.paths {
        let area = Area::of(path);
        // Operations on an open transaction route by its shard-prefixed id, not by headers, and
        // the daemon's info answers for the whole map without a route.
        // Atomic participant calls address a plain database or a data host's shard, never a route,
        // and an atomic transaction's begin takes none (an ordinary begin without one is 400).
        let needs_route =
            !path.starts_with("/api/transactions") && !path.starts_with("/api/atomic/") && path != "/api/info";
        for operation in operations(item) {
            if area == Area::Data {
                add_route_headers(operation, keyspace.filter(|_| needs_route));
                add_shard_header(operation);
            }
            let has_body = operation.request_body.as_ref().is_some_and(has_content);
            let responses = &mut operation.responses.responses;
            let mut add = |status: &str, response: Response| {
                responses.entry(status.to_owned()).or_insert(RefOr::T(response));
            };
            add(
                "400",
                problem_response("Bad input: a malformed body, query, path, header or id"),
            );
            add(
                "500",
                problem_response("An internal failure (details are only in the daemon log)"),
            );
            // An operation that declares its own (empty) security needs no key: the admin page.
            if authenticated && operation.security.is_none() {
                add(
                    "401",
                    problem_response("The API key is missing or wrong (`unauthenticated`)"),
                );
                let needs = operation
                    .operation_id
                    .as_deref()
                    .and_then(OperationId::of_rest)
                    .map(OperationId::needs);
                let refusal = match needs {
                    Some(Needs::Sql) => Some(
                        "The API key holds neither `read` (with which SQL runs read-only) nor `write`, or not \
                         for this keyspace; or it holds `read` and not `write` and SQL would write, which \
                         is refused naming the `write` scope with nothing written (`permission_denied`)"
                            .to_owned(),
                    ),
                    Some(needs) => needs.scope().map(|scope| {
                        format!("The API key lacks the `{scope}` scope, or this keyspace (`permission_denied`)")
                    }),
                    None => None,
                };
                if let Some(refusal) = refusal {
                    add("403", problem_response(&refusal));
                }
            }
            if has_body {
                add(
                    "413",
                    problem_response("The body is larger than the daemon's limit (`payload_too_large`)"),
                );
                add(
                    "415",
                    problem_response("The body is not application/json (`unsupported_media_type`)"),
                );
            }
            add("408", timeout_response(area));
            add("503", busy_response(area));
            if area == Area::Sharding {
                add("404", problem_response("The daemon is not sharded (`not_sharded`)"));
            }
            if area == Area::Host {
                add("404", problem_response("The daemon is not a data host (`not_found`)"));
            }
            if area == Area::Data {
                add(
                    "404",
                    problem_response(
                        "Not found (`not_found`): what the request names, or, on a data host, the shard named by \
                         X-Shardlite-Shard",
                    ),
                );
            }
        }
    }
    if authenticated {
        let components = doc.components.get_or_insert_with(Default::default);
        components.security_schemes.insert(
            "apiKey".to_owned(),
            RefOr::T(SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new(
                config.api_key_header.clone(),
            )))),
        );
        doc.security = Some(vec![SecurityRequirement::new("apiKey", Vec::<String>::new())]);
    }
    doc
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Area {
    Data,
    Sharding,
    Host,
    Meta,
}

impl Area {
    fn of(path: &str) -> Self {
        if path.starts_with("/api/sharding/") {
            Self::Sharding
        } else if path.starts_with("/api/host/") {
            Self::Host
        } else if path.starts_with("/api/") {
            Self::Data
        } else {
            Self::Meta
        }
    }
}

pub(super) fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        item.get.as_mut(),
        item.put.as_mut(),
        item.post.as_mut(),
        item.delete.as_mut(),
        item.patch.as_mut(),
    ]
    .into_iter()
    .flatten()
}

fn has_content(body: &RefOr<RequestBody>) -> bool {
    match body {
        RefOr::T(body) => !body.content.is_empty(),
        RefOr::Ref(_) => true,
    }
}

/// The route headers of a data operation: required, and the keyspace named, when the operation
/// runs on a shard of a map of `keyspace`.
fn add_route_headers(operation: &mut Operation, keyspace: Option<&str>) {
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    for (name, what) in [(KEYSPACE_HEADER, "keyspace"), (SHARD_KEY_HEADER, "key")] {
        let description = if keyspace.is_some() {
            format!(
                "The route {what}: this daemon serves a shard map, so the operation runs on the shard the route \
                 resolves to, and answers 400 `route_required` without both route headers (a blank value counts \
                 as absent)."
            )
        } else {
            format!(
                "The route {what}. Send both route headers or neither; a blank value counts as absent. On a \
                 daemon that serves a shard map, operations that need a route answer 400 `route_required` \
                 without one."
            )
        };
        let mut schema = ObjectBuilder::new().schema_type(Type::String);
        if let Some(keyspace) = keyspace {
            schema = if name == KEYSPACE_HEADER {
                // Keyspaces compare case-insensitively; the map's own spelling is the one named.
                schema.enum_values(Some([keyspace.to_owned()]))
            } else {
                // A blank key counts as absent.
                schema.pattern(Some(r"\S"))
            };
        }
        parameters.push(RefOr::T(
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Header)
                .required(if keyspace.is_some() {
                    Required::True
                } else {
                    Required::False
                })
                .description(Some(description))
                .schema(Some(schema))
                .build(),
        ));
    }
}

/// The pattern of a data-host shard id (see [`crate::map::data_host_shard_id`]).
const SHARD_ID_PATTERN: &str = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}$";

/// The data-host shard header of a data operation: optional here, required on a data host (see
/// [`require_shard_header`]).
fn add_shard_header(operation: &mut Operation) {
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    parameters.push(RefOr::T(
        ParameterBuilder::new()
            .name(SHARD_HEADER)
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some(
                "The shard of a data host (a daemon started with --shard-dir) the operation runs on. A data host \
                 answers 400 without it and 404 for a shard it has no file for; other daemons answer 400 when it \
                 is sent. A blank value is refused.",
            ))
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(SHARD_ID_PATTERN)),
            ))
            .build(),
    ));
}

/// Marks the shard header required on every data operation: the document of a data host.
pub fn require_shard_header(doc: &mut OpenApi) {
    for (path, item) in &mut doc.paths.paths {
        if Area::of(path) != Area::Data {
            continue;
        }
        for operation in operations(item) {
            for parameter in operation.parameters.iter_mut().flatten() {
                if let RefOr::T(parameter) = parameter
                    && parameter.name == SHARD_HEADER
                {
                    parameter.required = Required::True;
                }
            }
        }
    }
}

fn problem_content() -> Content {
    Content::new(Some(RefOr::Ref(Ref::from_schema_name(Problem::name()))))
}

fn problem_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(PROBLEM_CONTENT_TYPE, problem_content())
        .build()
}

fn timeout_response(area: Area) -> Response {
    let description = if area == Area::Meta {
        "The request ran past the daemon's request timeout (`request_timeout`)"
    } else {
        "The request ran past the daemon's request timeout (`request_timeout`), or a statement past the \
         statement timeout (`statement_timeout`); the work was stopped"
    };
    problem_response(description)
}

fn busy_response(area: Area) -> Response {
    let description = match area {
        Area::Data => {
            "Busy, retry after Retry-After seconds: the daemon is serving as many requests as it takes at once, \
             the shard's queue or transaction limit is full, the API key holds as many open transactions as \
             allowed, or the write lock stayed held (`busy`); or the shard is disabled or closed (`unavailable`)"
        }
        Area::Sharding | Area::Host | Area::Meta => {
            "Busy, retry after Retry-After seconds: the daemon is serving as many requests as it takes at once \
             (`busy`)"
        }
    };
    let retry_after = Header::new(ObjectBuilder::new().schema_type(Type::Integer));
    ResponseBuilder::new()
        .description(description)
        .content(PROBLEM_CONTENT_TYPE, problem_content())
        .header("Retry-After", retry_after)
        .build()
}
