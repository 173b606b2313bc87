//! Probes for load balancers and orchestrators, served without the API key:
//! - `GET /healthz`: 200 while the process serves requests;
//! - `GET /readyz`: 200 when the daemon can serve data (a sharded daemon's catalog answers and
//!   holds an active map; a plain daemon's database answers; a data host's folder can be
//!   listed), 503 otherwise, with the reason. A router on a catalog in etcd stays ready while
//!   etcd is unreachable: it serves data on the last map it knows, and only catalog writes fail
//!   meanwhile.
//!
//! Both answer small JSON bodies that name no file, key or secret.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use utoipa::openapi::header::Header;
use utoipa::openapi::path::{HttpMethod, OperationBuilder};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{Content, ObjectBuilder, OpenApi, Ref, RefOr, ResponseBuilder, Type};

use super::state::{Backend, ServerState};

/// The liveness probe's path.
pub const HEALTH_PATH: &str = "/healthz";
/// The readiness probe's path.
pub const READY_PATH: &str = "/readyz";

/// The probes' routes, outside the API-key check.
pub fn routes(state: ServerState) -> Router {
    Router::new()
        .route(HEALTH_PATH, axum::routing::get(healthz))
        .route(READY_PATH, axum::routing::get(readyz))
        .with_state(state)
}

async fn healthz() -> Response {
    (StatusCode::OK, axum::Json(json!({ "status": "serving" }))).into_response()
}

async fn readyz(State(state): State<ServerState>) -> Response {
    match readiness(&state).await {
        Ok(map_version) => (
            StatusCode::OK,
            axum::Json(json!({ "status": "ready", "mapVersion": map_version })),
        )
            .into_response(),
        Err(reason) => {
            tracing::debug!(%reason, "not ready");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, HeaderValue::from_static("1"))],
                axum::Json(json!({ "status": "not ready", "reason": reason })),
            )
                .into_response()
        }
    }
}

/// The active map version (none for a plain daemon), or why the daemon cannot serve data.
async fn readiness(state: &ServerState) -> Result<Option<u64>, String> {
    match state.backend() {
        Backend::Sharded(sharded) => {
            let catalog = sharded
                .catalog()
                .master()
                .ok_or_else(|| "the daemon serves a map without a catalog".to_owned())?;
            match catalog.active_version().await {
                Ok(Some(version)) => Ok(Some(version)),
                Ok(None) => Err("the catalog holds no active map".to_owned()),
                // A router on etcd serves data on the last map it knows while etcd is away;
                // taking every router out of the load balancer then would stop the data too.
                Err(err) if catalog.is_watched() && err.kind() == crate::ErrorKind::CatalogUnavailable => {
                    Ok(Some(sharded.map().version()))
                }
                Err(err) => Err(format!("the catalog cannot be read ({})", err.kind().code())),
            }
        }
        Backend::Host(host) => host
            .check_folder()
            .await
            .map(|()| None)
            .map_err(|err| format!("the shard folder cannot be read ({})", err.kind().code())),
        Backend::Plain(local) => local
            .probe()
            .await
            .map(|()| None)
            .map_err(|err| format!("the database cannot be read ({})", err.kind().code())),
    }
}

/// Adds the probes to the OpenAPI document, without a key requirement.
pub fn document(doc: &mut OpenApi) {
    for (path, id, summary, statuses) in [
        (
            HEALTH_PATH,
            "getHealth",
            "Liveness: the process serves requests",
            &[("200", "Serving: `{\"status\": \"serving\"}`")][..],
        ),
        (
            READY_PATH,
            "getReadiness",
            "Readiness: the catalog answers and holds an active map (or the plain database answers)",
            &[
                (
                    "200",
                    "Ready: `{\"status\": \"ready\", \"mapVersion\": N}` (null for a plain database)",
                ),
                (
                    "503",
                    "Not ready: `{\"status\": \"not ready\", \"reason\": \"...\"}` with Retry-After (or, as on every \
                     route, `busy` as a problem body)",
                ),
            ][..],
        ),
    ] {
        let mut operation = OperationBuilder::new()
            .tag("meta")
            .operation_id(Some(id))
            .summary(Some(summary))
            // An empty requirement: no API key, whatever the document's default.
            .security(SecurityRequirement::default());
        for (status, description) in statuses {
            let body = Content::new(Some(ObjectBuilder::new().schema_type(Type::Object)));
            let mut response = ResponseBuilder::new()
                .description(*description)
                .content("application/json", body);
            if *status == "503" {
                let problem = Content::new(Some(RefOr::Ref(Ref::from_schema_name("Problem"))));
                response = response.content(super::rest::PROBLEM_CONTENT_TYPE, problem).header(
                    "Retry-After",
                    Header::new(ObjectBuilder::new().schema_type(Type::Integer)),
                );
            }
            operation = operation.response(*status, response.build());
        }
        doc.paths
            .add_path_operation(path, vec![HttpMethod::Get], operation.build());
    }
}
