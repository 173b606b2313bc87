//! How one gRPC call runs: the scope check, the route, the metrics, the request counts and the
//! log line around the handler of its RPC (see [`service`](super::service)).

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use tonic::{Request, Response, Status};

use super::gate::{CallAccess, CallRefused, CallRoute};
use super::status::status_from_error;
use crate::client::{DataClient, ShardedClient};
use crate::error::{Error, Result};
use crate::routing::RouteContext;
use crate::server::counters::{Outcome, Surface};
use crate::server::keys::{Access, Scope};
use crate::server::metrics;
use crate::server::operations::{Needs, OperationId};
use crate::server::sql_access::SqlAccess;
use crate::server::{ServerState, Target};

/// The service implementation; the [`CallGate`](super::gate::CallGate) interceptor runs first.
#[derive(Debug, Clone)]
pub(in crate::server::grpc) struct ShardliteService {
    state: ServerState,
}

impl ShardliteService {
    pub(in crate::server::grpc) fn new(state: ServerState) -> Self {
        Self { state }
    }

    /// Runs one RPC: hands the handler the call's route and state, maps its error to a status
    /// in the one mapping function, and logs the outcome (never parameters or keys).
    pub(super) async fn run<Req, Resp, F, Fut>(
        &self,
        rpc: &'static str,
        request: Request<Req>,
        handler: F,
    ) -> std::result::Result<Response<Resp>, Status>
    where
        F: FnOnce(Call, Req) -> Fut,
        Fut: Future<Output = Result<Resp>>,
    {
        let started = Instant::now();
        let operation = OperationId::of(rpc).unwrap_or(OperationId::OTHER);
        if let Some(refused) = request.extensions().get::<CallRefused>() {
            let ended = metrics::Outcome::Failed(refused.kind);
            self.state
                .record_request(Surface::Grpc, operation, ended, started.elapsed());
            return Err(Status::clone(&refused.status));
        }
        let access = request.extensions().get::<CallAccess>().map(|access| access.0.clone());
        // An operation without a scope decision needs `admin`, the narrowest scope.
        let needs = match operation.needs() {
            _ if operation == OperationId::OTHER => Needs::Scope(Scope::Admin),
            needs => needs,
        };
        let scope = needs.scope();
        let permitted = match &access {
            Some(access) => SqlAccess::permit(access, needs, || self.state.served_keyspace()),
            None => Err(Error::invalid_argument(
                "API key",
                "the call did not pass the key check",
            )),
        };
        let sql_access = match permitted {
            Ok(sql_access) => sql_access,
            Err(denied) => {
                tracing::info!(rpc, error = %denied, "gRPC call refused");
                let ended = metrics::Outcome::Failed(denied.kind());
                self.state
                    .record_request(Surface::Grpc, operation, ended, started.elapsed());
                return Err(status_from_error(&denied));
            }
        };
        let target = request
            .extensions()
            .get::<CallRoute>()
            .map(|r| r.0.clone())
            .unwrap_or_default();
        let route = target.route.clone();
        let call = Call {
            state: self.state.clone(),
            target,
            sql_access,
        };
        if let (Some(metrics), Some(route)) = (self.state.metrics(), route.as_ref()) {
            self.state.count_shard_request(metrics, route);
        }
        let outcome = handler(call, request.into_inner()).await;
        let ended = match &outcome {
            Ok(_) => metrics::Outcome::Ok,
            Err(err) => metrics::Outcome::Failed(err.kind()),
        };
        let counted = self
            .state
            .record_request(Surface::Grpc, operation, ended, started.elapsed());
        if tracing::enabled!(tracing::Level::DEBUG) || counted == Outcome::ServerError {
            let shard = match (&route, self.state.sharded()) {
                (Some(route), Some(sharded)) => sharded.resolve_route(route).ok().map(|r| r.shard_id),
                _ => None,
            };
            let code = match &outcome {
                Ok(_) => "ok",
                Err(err) => err.kind().code(),
            };
            let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
            let keyspace = route.as_ref().map(RouteContext::keyspace);
            let key = route.as_ref().map(RouteContext::key);
            let shard = shard.as_deref();
            if counted == Outcome::ServerError {
                tracing::warn!(rpc, keyspace, key, shard, code, elapsed_ms, "gRPC call failed");
            } else {
                tracing::debug!(rpc, keyspace, key, shard, code, elapsed_ms, "gRPC call");
            }
        }
        if scope == Some(Scope::Admin) {
            let key = access.as_ref().and_then(Access::key_name).unwrap_or("-");
            let code = outcome.as_ref().map_or_else(|err| err.kind().code(), |_| "ok");
            tracing::info!(key, operation = rpc, code, "admin action");
        }
        outcome.map(Response::new).map_err(|err| status_from_error(&err))
    }
}

/// What a handler works with: the daemon state and what the call addresses (its route, and its
/// shard on a data host).
pub(super) struct Call {
    pub(super) state: ServerState,
    pub(super) target: Target,
    /// How the call's SQL may run (read-only for a key with `read` and not `write`).
    pub(super) sql_access: SqlAccess,
}

impl Call {
    /// The route's shard, the plain database, or the named shard of a data host; a sharded
    /// daemon sent no route answers "route required".
    pub(super) fn data(&self) -> Result<Arc<dyn DataClient>> {
        self.state.data_client(&self.target)
    }

    /// Runs `sql` on [`data`](Self::data) as the caller's key allows (see [`SqlAccess`]).
    pub(super) async fn execute_sql(
        &self,
        sql: &str,
        params: crate::client::Params,
    ) -> Result<crate::client::SqlResult> {
        self.sql_access.execute_sql(self.data()?.as_ref(), sql, params).await
    }

    /// The data host; its RPCs on another daemon fail with `not_found`.
    pub(super) fn host(&self) -> Result<crate::server::ShardHost> {
        self.state.host().cloned().ok_or(Error::NotDataHost)
    }

    /// The sharded client; shard-admin RPCs on an unsharded daemon fail with `not_sharded`.
    pub(super) fn admin(&self) -> Result<ShardedClient> {
        self.state.sharded().cloned().ok_or(Error::NotSharded)
    }
}

pub(super) type RpcResult<T> = std::result::Result<Response<T>, Status>;
