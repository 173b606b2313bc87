//! Which operation a REST request is, from its method and path template, so the request
//! middleware can check the caller's scope and count the request under the operation's name.
//!
//! The table is built from the daemon's own OpenAPI document when the router is built: every
//! operation that needs a key must have a scope decision in [`OPERATIONS`], or the router is
//! refused, so an endpoint cannot be added without one.
//!
//! [`OPERATIONS`]: crate::server::operations::OPERATIONS

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::Method;
use utoipa::openapi::OpenApi;
use utoipa::openapi::path::PathItem;

use crate::error::{Error, Result};
use crate::server::operations::OperationId;

/// Path template → the operations served there, by method.
#[derive(Debug, Clone, Default)]
pub(super) struct RestOperations(Arc<HashMap<String, Vec<(Method, OperationId)>>>);

impl RestOperations {
    /// The operations of `doc`. Fails naming an operation that needs a key and has no entry in
    /// the scope table (operations that declare their own empty security, the admin page and
    /// the health probes, need no key and no entry).
    pub(super) fn of(doc: &OpenApi) -> Result<Self> {
        let mut table: HashMap<String, Vec<(Method, OperationId)>> = HashMap::new();
        for (path, item) in &doc.paths.paths {
            for (method, operation) in methods(item) {
                let public = operation
                    .security
                    .as_ref()
                    .is_some_and(|requirements| requirements.iter().all(is_empty_requirement));
                if public {
                    continue;
                }
                let name = operation.operation_id.as_deref().unwrap_or("(no operationId)");
                let id = OperationId::of_rest(name).ok_or_else(|| {
                    Error::invalid_argument(
                        "operations table",
                        format!("REST operation {name} ({method} {path}) has no scope decision"),
                    )
                })?;
                table.entry(path.clone()).or_default().push((method, id));
            }
        }
        Ok(Self(Arc::new(table)))
    }

    /// The operation serving `method` at the path template `path`, if any.
    pub(super) fn find(&self, method: &Method, path: &str) -> OperationId {
        self.0
            .get(path)
            .and_then(|served| served.iter().find(|(m, _)| m == method))
            .map_or(OperationId::OTHER, |(_, id)| *id)
    }
}

fn is_empty_requirement(requirement: &utoipa::openapi::security::SecurityRequirement) -> bool {
    serde_json::to_value(requirement).is_ok_and(|value| value.as_object().is_some_and(serde_json::Map::is_empty))
}

fn methods(item: &PathItem) -> impl Iterator<Item = (Method, &utoipa::openapi::path::Operation)> {
    [
        (Method::GET, item.get.as_ref()),
        (Method::PUT, item.put.as_ref()),
        (Method::POST, item.post.as_ref()),
        (Method::DELETE, item.delete.as_ref()),
        (Method::PATCH, item.patch.as_ref()),
    ]
    .into_iter()
    .filter_map(|(method, operation)| operation.map(|operation| (method, operation)))
}
