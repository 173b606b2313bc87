//! Shard-admin endpoints for operators: `/api/sharding/...`.
//!
//! They ignore the route headers. On a daemon serving an unsharded database each answers 404
//! with `errorCode` `not_sharded`.

use axum::extract::State;
use axum::response::{IntoResponse, Response};

use super::bodies::{AllShardsSqlRequest, ResolveRequest, UnresolvedAtomicEntry};
use super::error::{ApiError, CatalogUpdateRefused, Problem};
use super::extract::{Json, Query};
use crate::client::{ShardSqlResult, ShardStatus, ShardedClient};
use crate::data::{
    ActivationRequest, ActivationResult, CatalogApplyResult, CatalogState, CatalogUpdateRequest, CatalogValidation,
    ShardStatusPage, ShardStatusQuery,
};
use crate::error::{Error, ErrorKind};
use crate::heat::HeatReport;
use crate::map::ShardMapSnapshot;
use crate::routing::{ResolvedRoute, RouteContext};
use crate::server::ServerState;

/// What a fan-out reports for a shard that failed internally; the real error is logged.
const INTERNAL_SHARD_ERROR: &str = "the shard could not complete the request; the daemon log has the details";

fn sharded(state: &ServerState) -> Result<&ShardedClient, ApiError> {
    state.sharded().ok_or(ApiError::Data(Error::NotSharded))
}

/// A secret-free snapshot of the live shard map.
#[utoipa::path(
    get,
    path = "/api/sharding/map",
    tag = "sharding",
    operation_id = "getShardMap",
    responses((status = 200, description = "The map", body = ShardMapSnapshot))
)]
pub async fn shard_map(State(state): State<ServerState>) -> Result<axum::Json<ShardMapSnapshot>, ApiError> {
    Ok(axum::Json(sharded(&state)?.map_snapshot()))
}

/// Where a route resolves: token, bucket, shard and whether a pin or a bucket range decided.
#[utoipa::path(
    post,
    path = "/api/sharding/resolve",
    tag = "sharding",
    operation_id = "resolveShardRoute",
    request_body = ResolveRequest,
    responses((status = 200, description = "The resolution", body = ResolvedRoute))
)]
pub async fn resolve(
    State(state): State<ServerState>,
    Json(request): Json<ResolveRequest>,
) -> Result<axum::Json<ResolvedRoute>, ApiError> {
    let sharded = sharded(&state)?;
    let route = RouteContext::new(&request.keyspace, &request.key)?;
    Ok(axum::Json(sharded.resolve_route(&route)?))
}

/// Every shard's health (a real probe) and metadata, in definition order.
#[utoipa::path(
    get,
    path = "/api/sharding/status",
    tag = "sharding",
    operation_id = "getShardStatus",
    responses((status = 200, description = "Per-shard status", body = Vec<ShardStatus>))
)]
pub async fn status(State(state): State<ServerState>) -> Result<axum::Json<Vec<ShardStatus>>, ApiError> {
    let statuses = sharded(&state)?.shards().status().await;
    Ok(axum::Json(statuses))
}

/// Where routed calls went lately: decayed request and row counts by shard (with each shard's
/// share), by bucket and for the hottest route keys, hottest first. Counts halve every
/// `halfLifeSeconds`; shards are credited as the active map routes.
#[utoipa::path(
    get,
    path = "/api/sharding/stats/heat",
    tag = "sharding",
    operation_id = "getShardHeat",
    responses((status = 200, description = "The heat", body = HeatReport))
)]
pub async fn heat(State(state): State<ServerState>) -> Result<axum::Json<HeatReport>, ApiError> {
    Ok(axum::Json(sharded(&state)?.shards().heat()))
}

/// Atomic transactions across shards not yet finished on every participant, oldest first: one
/// entry per shard that holds one (its decision record, or its prepared intent), with the
/// transaction's participants, its state there and its age. The daemon's resolver finishes them
/// (a pending one once older than the abandon age); `shardlite tx resolve` does it at once.
#[utoipa::path(
    get,
    path = "/api/sharding/atomic-transactions",
    tag = "sharding",
    operation_id = "listAtomicTransactions",
    responses((status = 200, description = "The unresolved atomic transactions, oldest first",
        body = Vec<UnresolvedAtomicEntry>))
)]
pub async fn atomic_transactions(
    State(state): State<ServerState>,
) -> Result<axum::Json<Vec<UnresolvedAtomicEntry>>, ApiError> {
    let mut found = sharded(&state)?.atomic_recovery().unresolved().await?;
    found.sort_by(|a, b| {
        b.age_ms
            .cmp(&a.age_ms)
            .then_with(|| a.transaction_id.cmp(&b.transaction_id))
    });
    Ok(axum::Json(found.into_iter().map(UnresolvedAtomicEntry::from).collect()))
}

/// One page of shard health, with counts by state over every shard probed: for maps too large
/// to list at once. `shardId` probes that shard alone; otherwise every shard is probed for the
/// counts and the page holds the matching shards (`unhealthyOnly`: enabled shards whose probe
/// failed) from `offset`, at most `limit` of them.
#[utoipa::path(
    get,
    path = "/api/sharding/status/page",
    tag = "sharding",
    operation_id = "getShardStatusPage",
    params(ShardStatusQuery),
    responses(
        (status = 200, description = "The counts and the page", body = ShardStatusPage),
        (status = 400, description = "A `limit` outside 1 to 1000, a blank `shardId` or an unknown parameter \
            (`invalid_input`)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "The map has no shard `shardId`", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn status_page(
    State(state): State<ServerState>,
    Query(query): Query<ShardStatusQuery>,
) -> Result<axum::Json<ShardStatusPage>, ApiError> {
    Ok(axum::Json(sharded(&state)?.shards().status_page(&query).await?))
}

/// Runs SQL (typically schema setup) on every enabled shard in parallel. One failing shard
/// does not stop the others; each reports its result or error.
#[utoipa::path(
    post,
    path = "/api/sharding/sql/execute-all",
    tag = "sharding",
    operation_id = "executeSqlOnAllShards",
    request_body = AllShardsSqlRequest,
    responses((status = 200, description = "Per-shard outcome, in definition order", body = Vec<ShardSqlResult>))
)]
pub async fn execute_all(
    State(state): State<ServerState>,
    Json(request): Json<AllShardsSqlRequest>,
) -> Result<axum::Json<Vec<ShardSqlResult>>, ApiError> {
    let outcomes = sharded(&state)?.query().execute_all(&request.sql).await?;
    Ok(axum::Json(redact_internal_errors(outcomes)))
}

/// Runs read-only SQL on every enabled shard in parallel, on connections that cannot write.
/// Any statement that could write refuses the whole request (400 `read_only`) and nothing runs.
#[utoipa::path(
    post,
    path = "/api/sharding/sql/read-all",
    tag = "sharding",
    operation_id = "executeReadOnlySqlOnAllShards",
    request_body = AllShardsSqlRequest,
    responses(
        (status = 200, description = "Per-shard outcome, in definition order", body = Vec<ShardSqlResult>),
        (status = 400, description = "A statement is not a read-only query (`read_only`), or other bad input",
            body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn read_all(
    State(state): State<ServerState>,
    Json(request): Json<AllShardsSqlRequest>,
) -> Result<axum::Json<Vec<ShardSqlResult>>, ApiError> {
    let outcomes = sharded(&state)?.query().read_all(&request.sql).await?;
    Ok(axum::Json(redact_internal_errors(outcomes)))
}

/// The master catalog: active and pending maps (secret-free) and history.
#[utoipa::path(
    get,
    path = "/api/sharding/catalog",
    tag = "sharding",
    operation_id = "getShardCatalog",
    responses((status = 200, description = "The catalog state", body = CatalogState))
)]
pub async fn catalog(State(state): State<ServerState>) -> Result<axum::Json<CatalogState>, ApiError> {
    Ok(axum::Json(sharded(&state)?.catalog().state().await?))
}

/// Validates a proposed map against the catalog and changes nothing. Answers 200 even when the
/// map is refused: `valid` says whether it could be applied, `issues` say why not, and
/// `movedBuckets` / `movedPins` / `shardChanges` list what it would change against the active map.
#[utoipa::path(
    post,
    path = "/api/sharding/catalog/validate",
    tag = "sharding",
    operation_id = "validateShardCatalogUpdate",
    request_body = CatalogUpdateRequest,
    responses((status = 200, description = "The validation, valid or not", body = CatalogValidation))
)]
pub async fn validate_catalog_update(
    State(state): State<ServerState>,
    Json(request): Json<CatalogUpdateRequest>,
) -> Result<axum::Json<CatalogValidation>, ApiError> {
    map_version_in_range("expectedCurrentMapVersion", request.expected_current_map_version)?;
    Ok(axum::Json(sharded(&state)?.catalog().validate(&request).await?))
}

/// Map versions are SQLite integers: one above `i64::MAX` (which the document's `int64`
/// forbids too) is bad input, not a version that merely does not match.
fn map_version_in_range(name: &'static str, version: Option<u64>) -> Result<(), ApiError> {
    match version {
        Some(version) if i64::try_from(version).is_err() => Err(ApiError::Data(Error::invalid_argument(
            name,
            format!("{version} is above the largest map version, {}", i64::MAX),
        ))),
        _ => Ok(()),
    }
}

/// Validates a proposed map and writes it as the pending map, compare-and-set on
/// `expectedCurrentMapVersion`, with a history row. The active map does not change until the
/// pending map is activated.
#[utoipa::path(
    post,
    path = "/api/sharding/catalog/apply",
    tag = "sharding",
    operation_id = "applyShardCatalogUpdate",
    request_body = CatalogUpdateRequest,
    responses(
        (status = 200, description = "Written as the pending map", body = CatalogApplyResult),
        (status = 400, description = "Validation refused the map: `invalid_input`, with the validation as the \
            member `validation`. A malformed body is a plain problem without it.", body = CatalogUpdateRefused,
            content_type = "application/problem+json"),
        (status = 409, description = "`expectedCurrentMapVersion` is not the newest map version: someone else \
            changed the catalog first (`map_version_conflict`)", body = Problem,
            content_type = "application/problem+json"),
    )
)]
pub async fn apply_catalog_update(
    State(state): State<ServerState>,
    Json(request): Json<CatalogUpdateRequest>,
) -> Result<Response, ApiError> {
    map_version_in_range("expectedCurrentMapVersion", request.expected_current_map_version)?;
    let result = sharded(&state)?.catalog().apply(&request).await?;
    if result.applied {
        Ok(axum::Json(result).into_response())
    } else {
        Ok(CatalogUpdateRefused::new(result.validation).into_response())
    }
}

/// Makes the pending map active without a restart: requests already running finish on the old
/// map, new ones resolve on the new one, and open transactions on shards whose ownership changed
/// are drained, then rolled back.
#[utoipa::path(
    post,
    path = "/api/sharding/catalog/activate",
    tag = "sharding",
    operation_id = "activateShardCatalog",
    request_body = ActivationRequest,
    responses(
        (status = 200, description = "The pending map is now active", body = ActivationResult),
        (status = 409, description = "There is no pending map of `expectedPendingMapVersion` (`conflict`)",
            body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn activate_catalog(
    State(state): State<ServerState>,
    Json(request): Json<ActivationRequest>,
) -> Result<axum::Json<ActivationResult>, ApiError> {
    map_version_in_range("expectedPendingMapVersion", Some(request.expected_pending_map_version))?;
    Ok(axum::Json(sharded(&state)?.catalog().activate(&request).await?))
}

/// Per-shard outcomes for the wire: internal failures are logged and reported generically, like
/// every other internal error.
fn redact_internal_errors(mut outcomes: Vec<ShardSqlResult>) -> Vec<ShardSqlResult> {
    for outcome in &mut outcomes {
        if outcome.error_code.as_deref() == Some(ErrorKind::Internal.code()) {
            tracing::error!(
                shard = %outcome.shard_id,
                error = outcome.error.as_deref().unwrap_or_default(),
                "shard failed during fan-out"
            );
            outcome.error = Some(INTERNAL_SHARD_ERROR.to_owned());
        }
    }
    outcomes
}
