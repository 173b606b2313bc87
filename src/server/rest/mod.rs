//! The REST surface of the daemon: the router, its middleware, and one module per area.
//!
//! Every request passes, outermost first, through: the daemon's request limits (concurrency and
//! time, added around the merged REST and gRPC router by [`crate::server::router`]), the body
//! limit ([`ServerConfig::body_limit`], 413 beyond it), one middleware that counts the request,
//! opens its tracing span (method, path template, route, resolved shard, status, latency; never
//! API keys, bodies or SQL parameters) and checks the API key within it (401 when a key is
//! configured and not presented; this covers `/openapi.json` too; the admin page, merged beside
//! this router, is not behind it), and, on `/api/...`, the route-header check (400 when only one
//! of the two headers is sent). Handlers then run on [`ServerState::data_client`] for the
//! request's route.
//!
//! - `/api/info` and `/api/sql/...` live in [`data`], `/api/transactions/...` in
//!   [`transactions`], the participant calls of atomic transactions `/api/atomic/...` in
//!   [`atomic`], rows in [`tables`], documents in [`collections`], saved queries and
//!   procedures in [`procedures`], `/api/sharding/...` in [`admin`] (schema migrations and
//!   schema status in [`schema`], shard directories in [`directory`]), `/api/host/...` (a data host's shard files) in [`host`],
//!   and `/openapi.json`
//!   (generated from the handlers) in [`openapi`].
//! - The problem body and the one error-to-status function are in [`error`], extractors whose
//!   rejections become that body in [`extract`], and the request bodies in [`bodies`]. Responses
//!   are the client types themselves, which derive their OpenAPI schemas under the `server`
//!   feature.
//!
//! [`ServerConfig::body_limit`]: crate::server::ServerConfig::body_limit

pub mod admin;
pub mod atomic;
mod backup;
pub mod bodies;
pub mod collections;
pub mod data;
pub mod directory;
pub mod error;
pub mod extract;
mod gate;
pub mod host;
pub mod openapi;
pub mod procedures;
pub mod query;
pub mod reshard;
pub mod schema;
pub mod tables;
pub mod transactions;

use std::time::Instant;

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use tracing::Instrument as _;
use tracing::field::Empty;
use utoipa::openapi::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use error::{ApiError, PROBLEM_CONTENT_TYPE, Problem, problem};

use crate::error::{Error, ErrorKind, Result};
use crate::server::ServerState;
use crate::server::counters::{Outcome, Surface};
use crate::server::keys::{Access, Scope};
use crate::server::metrics;
use crate::server::sql_access::SqlAccess;
use gate::RestOperations;

/// The REST router for `state`, with its middleware and `/openapi.json`, and without a fallback
/// (the daemon adds one after merging the gRPC routes; see [`not_found`]).
///
/// Fails when the configured API-key header is not a valid header name or the API key is blank.
pub fn router(state: &ServerState) -> Result<Router> {
    let config = state.config();
    HeaderName::try_from(config.api_key_header.as_str()).map_err(|_| {
        Error::invalid_argument(
            "api key header",
            format!("'{}' is not a valid HTTP header name", config.api_key_header),
        )
    })?;
    if config
        .api_key
        .as_ref()
        .is_some_and(|key| key.expose().trim().is_empty())
    {
        return Err(Error::invalid_argument("api key", "must not be blank"));
    }

    let (api, doc) = api_routes().split_for_parts();
    let keyspace = state.sharded().map(|sharded| sharded.map().keyspace().to_owned());
    let mut doc = openapi_document_of(doc, config, keyspace.as_deref());
    if state.host().is_some() {
        openapi::require_shard_header(&mut doc);
    }
    let gate = RequestGate {
        state: state.clone(),
        operations: RestOperations::of(&doc)?,
    };
    let json = serde_json::to_vec(&doc).map_err(|source| Error::Json {
        what: "the OpenAPI document",
        source,
    })?;

    Ok(api
        .route_layer(from_fn_with_state(state.clone(), route_context))
        .route(
            "/openapi.json",
            get(openapi::openapi_json).layer(Extension(openapi::OpenApiJson(json.into()))),
        )
        .method_not_allowed_fallback(method_not_allowed)
        .layer(from_fn_with_state(gate, trace_request))
        .layer(DefaultBodyLimit::max(config.body_limit))
        .with_state(state.clone()))
}

/// The OpenAPI document the daemon serves for `config` (without starting anything). A daemon
/// serving a shard map of `keyspace` requires the route headers, with that keyspace, on the data
/// operations that need a route; `None` for a daemon serving a plain database.
pub fn openapi_document(config: &crate::server::ServerConfig, keyspace: Option<&str>) -> OpenApi {
    openapi_document_of(api_routes().into_openapi(), config, keyspace)
}

/// The REST operations' document plus the admin page, completed with the shared responses.
fn openapi_document_of(mut doc: OpenApi, config: &crate::server::ServerConfig, keyspace: Option<&str>) -> OpenApi {
    crate::server::admin::document(&mut doc);
    crate::server::health::document(&mut doc);
    openapi::complete(doc, config, keyspace)
}

fn api_routes() -> OpenApiRouter<ServerState> {
    OpenApiRouter::with_openapi(openapi::base())
        .routes(routes!(data::info))
        .routes(routes!(data::execute_sql))
        .routes(routes!(data::execute_read_only_sql))
        .routes(routes!(transactions::begin))
        .routes(routes!(transactions::execute))
        .routes(routes!(transactions::commit))
        .routes(routes!(transactions::rollback))
        .routes(routes!(atomic::begin))
        .routes(routes!(atomic::execute))
        .routes(routes!(atomic::prepare))
        .routes(routes!(atomic::rollback))
        .routes(routes!(atomic::step))
        .routes(routes!(atomic::decision))
        .routes(routes!(atomic::atomic_state))
        .routes(routes!(tables::list_tables))
        .routes(routes!(tables::table_schema))
        .routes(routes!(tables::count_rows))
        .routes(routes!(tables::browse_rows, tables::insert_row))
        .routes(routes!(tables::get_row, tables::update_row, tables::delete_row))
        .routes(routes!(collections::list_collections))
        .routes(routes!(collections::browse_documents, collections::drop_collection))
        .routes(routes!(collections::count_documents))
        .routes(routes!(
            collections::get_document,
            collections::put_document,
            collections::delete_document
        ))
        .routes(routes!(procedures::list_saved_queries))
        .routes(routes!(
            procedures::get_saved_query,
            procedures::put_saved_query,
            procedures::delete_saved_query
        ))
        .routes(routes!(procedures::list_procedures, procedures::create_procedure))
        .routes(routes!(
            procedures::get_procedure,
            procedures::put_procedure,
            procedures::delete_procedure
        ))
        .routes(routes!(procedures::execute_procedure))
        .routes(routes!(admin::shard_map))
        .routes(routes!(admin::resolve))
        .routes(routes!(admin::status))
        .routes(routes!(admin::status_page))
        .routes(routes!(admin::heat))
        .routes(routes!(admin::atomic_transactions))
        .routes(routes!(admin::execute_all))
        .routes(routes!(admin::read_all))
        .routes(routes!(query::query_all))
        .routes(routes!(admin::catalog))
        .routes(routes!(admin::validate_catalog_update))
        .routes(routes!(admin::apply_catalog_update))
        .routes(routes!(admin::activate_catalog))
        .routes(routes!(directory::resolve))
        .routes(routes!(directory::entries))
        .routes(routes!(directory::reserve))
        .routes(routes!(directory::activate))
        .routes(routes!(directory::upsert))
        .routes(routes!(directory::disable))
        .routes(routes!(directory::delete))
        .routes(routes!(directory::mark_stale))
        .routes(routes!(directory::import))
        .routes(routes!(schema::schema_status))
        .routes(routes!(schema::migrate_schema))
        .routes(routes!(reshard::migrate_exact_route_key))
        .routes(routes!(reshard::migrate_bucket_range))
        .routes(routes!(reshard::migrations))
        .routes(routes!(reshard::history))
        .routes(routes!(reshard::progress))
        .routes(routes!(reshard::resume))
        .routes(routes!(reshard::abandon))
        .routes(routes!(backup::create, backup::list))
        .routes(routes!(backup::get_overview))
        .routes(routes!(host::list_host_shards))
        .routes(routes!(host::create_host_shard))
}

/// The answer for a path no REST endpoint serves: 401 without a required API key, else 404.
pub fn not_found(state: &ServerState, request: &Request) -> Response {
    if !api_key_presented(state, request.headers()) {
        return unauthenticated(state);
    }
    tracing::info!(method = %request.method(), status = 404, "request for a path no endpoint serves");
    ApiError::NoEndpoint.into_response()
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

fn api_key_presented(state: &ServerState, headers: &HeaderMap) -> bool {
    authenticate(state, headers).is_some()
}

fn authenticate(state: &ServerState, headers: &HeaderMap) -> Option<Access> {
    let presented = headers
        .get(state.config().api_key_header.as_str())
        .map(HeaderValue::as_bytes);
    state.authenticate(presented)
}

/// What the request middleware needs: the state, and which operation a request is.
#[derive(Clone)]
struct RequestGate {
    state: ServerState,
    operations: RestOperations,
}

fn unauthenticated(state: &ServerState) -> Response {
    let header = state.config().api_key_header.as_str();
    let mut response = ApiError::Unauthenticated { header: header.into() }.into_response();
    let challenge = format!("ApiKey header=\"{header}\"");
    if let Ok(value) = HeaderValue::try_from(challenge) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// Parses the route headers once (400 when only one is sent), records the route and its shard
/// (or its data-host shard) on the request span when that span is enabled, and hands both to the
/// handler's [`Target`](crate::server::Target).
async fn route_context(
    State(state): State<ServerState>,
    mut request: Request,
    next: Next,
) -> std::result::Result<Response, ApiError> {
    let mut target = extract::target_from_headers(request.headers())?;
    if let Some(lookup) = extract::lookup_from_headers(request.headers())? {
        target.route = crate::server::lookup::bind(&state, target.route.take(), Some(lookup))?;
    }
    let route = target.route.as_ref();
    if let (Some(metrics), Some(route)) = (state.metrics(), route) {
        state.count_shard_request(metrics, route);
    }
    let span = tracing::Span::current();
    // Resolving only to name the shard in a span nobody records would cost a route hash per
    // request; the handler resolves the route anyway.
    if let Some(shard) = target.shard.as_deref().filter(|_| !span.is_disabled()) {
        span.record("shard", shard);
    }
    if let Some(route) = route.filter(|_| !span.is_disabled()) {
        span.record("keyspace", route.keyspace());
        span.record("key", route.key());
        if let Some(resolved) = state.sharded().and_then(|sharded| sharded.resolve_route(route).ok()) {
            span.record("shard", resolved.shard_id.as_str());
        }
    }
    request.extensions_mut().insert(target);
    Ok(next.run(request).await)
}

/// Counts every request, answers 401 unless it presents an accepted API key (compared in
/// constant time) and 403 when the key lacks the operation's scope or the daemon's keyspace,
/// logs admin actions at `info` with the key's name, and logs every request at `debug` (a
/// failure of the daemon's own at `warn`) in a span that carries its route.
///
/// One middleware rather than two: each `from_fn` layer costs a clone of the route's service
/// and two boxed futures per request.
async fn trace_request(State(gate): State<RequestGate>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let state = &gate.state;
    let method = request.method().clone();
    let matched = request.extensions().get::<MatchedPath>().cloned();
    let path = matched.as_ref().map_or("-", MatchedPath::as_str);
    let operation = gate.operations.find(&method, path);
    let span = tracing::debug_span!(
        "request",
        method = %method,
        path = %path,
        keyspace = Empty,
        key = Empty,
        shard = Empty,
    );
    let access = authenticate(state, request.headers());
    let scope = operation.needs().scope();
    let response = match &access {
        None => unauthenticated(state),
        Some(access) => match SqlAccess::permit(access, operation.needs(), || state.served_keyspace()) {
            Ok(sql_access) => {
                let mut request = request;
                request.extensions_mut().insert(sql_access);
                next.run(request).instrument(span.clone()).await
            }
            Err(denied) => {
                tracing::info!(operation = operation.name(), error = %denied, "request refused");
                ApiError::Data(denied).into_response()
            }
        },
    };
    if scope == Some(Scope::Admin)
        && let Some(access) = &access
    {
        tracing::info!(
            key = access.key_name().unwrap_or("-"),
            operation = operation.name(),
            status = response.status().as_u16(),
            "admin action"
        );
    }
    let status = response.status();
    let ended = match response.extensions().get::<ErrorKind>() {
        Some(kind) => metrics::Outcome::Failed(*kind),
        None if status.is_success() || status.is_redirection() => metrics::Outcome::Ok,
        // A failure of the daemon's own that carries no kind (a panic caught by a layer).
        None if status.is_server_error() => metrics::Outcome::Failed(ErrorKind::Internal),
        None => metrics::Outcome::Rejected,
    };
    let outcome = state.record_request(Surface::Rest, operation, ended, started.elapsed());
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let status = status.as_u16();
    span.in_scope(|| {
        if outcome == Outcome::ServerError {
            tracing::warn!(%method, %path, status, latency_ms = format_args!("{latency_ms:.3}"), "request failed");
        } else {
            tracing::debug!(status, latency_ms = format_args!("{latency_ms:.3}"), "request finished");
        }
    });
    response
}
