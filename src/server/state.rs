//! What every request handler shares: the backend (sharded or plain) and the server settings.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use futures_util::future::join_all;

use super::atomic_participants::{self, AtomicParticipants};
use super::atomic_transactions::{AtomicTransactions, is_atomic_id};
use super::config::ServerConfig;
use super::counters::{Outcome, RequestCounters, RequestCounts, Surface};
use super::host::{self, ShardHost};
use super::in_transaction::InTransaction;
use super::keys::{Access, KeyRing};
use super::metrics::{self, Metrics, ScrapeSource, ScrapeValues};
use super::operations::OperationId;
use super::remote_transactions::RemoteTransactions;
use crate::client::{
    DataClient, DatabaseInfo, LocalClient, Params, ShardedClient, ShardedClientOptions, SqlResult, TransactionInfo,
    TransactionOptions,
};
use crate::error::{Error, ErrorKind, Result};
use crate::routing::RouteContext;

pub use crate::wire::{KEYSPACE_HEADER, SHARD_KEY_HEADER};

/// The data behind the daemon.
#[derive(Debug, Clone)]
pub enum Backend {
    /// A master catalog with an active map.
    Sharded(ShardedClient),
    /// A file without a map, served as one plain database.
    Plain(LocalClient),
    /// A data host: a folder of shard files, each addressed by its shard id (`serve --shard-dir`).
    Host(ShardHost),
}

/// What a data request addresses: its route (the keyspace and key headers or metadata) and,
/// on a data host, its shard (the `X-Shardlite-Shard` header or metadata).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    /// The route, when both route headers were sent.
    pub route: Option<RouteContext>,
    /// The data-host shard id, when the shard header was sent (not yet checked).
    pub shard: Option<String>,
}

/// Shared state of a running daemon. Cheap to clone.
///
/// Data requests run on [`data_client`](Self::data_client). Remote transactions go through
/// [`begin_transaction`](Self::begin_transaction) and its siblings instead, so the daemon knows
/// which are open and [`close`](Self::close) can roll them back at shutdown.
#[derive(Debug, Clone)]
pub struct ServerState {
    inner: Arc<StateInner>,
}

#[derive(Debug)]
struct StateInner {
    backend: Backend,
    config: ServerConfig,
    /// Remote transactions begun through this daemon and not yet ended: what the per-key limit
    /// counts, and what shutdown rolls back.
    transactions: RemoteTransactions,
    /// Atomic transactions across shards begun through this daemon.
    atomic: AtomicTransactions,
    /// Participant sessions of atomic transactions other daemons coordinate here.
    participants: AtomicParticipants,
    /// Requests served, by surface and outcome.
    counters: RequestCounters,
    /// The accepted keys (`None`: the daemon requires none); replaced by a reload.
    keys: ArcSwapOption<KeyRing>,
    /// The Prometheus metrics, when collected.
    metrics: Option<Metrics>,
}

impl ServerState {
    /// Opens `master`: sharded when it holds an active map, otherwise as one plain database,
    /// with the engine settings of [`ServerConfig::engine_config`].
    pub async fn open(master: impl AsRef<Path>, config: ServerConfig) -> Result<Self> {
        let master = master.as_ref();
        config.validate()?;
        let engine = config.engine_config();
        let options = ShardedClientOptions {
            heat_half_life: config.heat_half_life,
            atomic_step_hook: config.atomic_step_hook.clone(),
            ..ShardedClientOptions::with_engine(engine.clone())
        };
        let backend = match ShardedClient::open_with(master, options).await {
            Ok(sharded) => Backend::Sharded(sharded),
            Err(Error::NoMap) => Backend::Plain(LocalClient::open_with(master, "database", engine).await?),
            Err(err) => return Err(err),
        };
        Ok(Self::new(backend, config))
    }

    /// Serves the shard files of the folder `dir` as a data host (see [`ShardHost`]), with the
    /// engine settings of [`ServerConfig::engine_config`]. Nothing is opened until a request
    /// names a shard.
    pub fn open_shard_dir(dir: impl AsRef<Path>, config: ServerConfig) -> Result<Self> {
        config.validate()?;
        let host = ShardHost::open(dir, config.engine_config())?;
        Ok(Self::new(Backend::Host(host), config))
    }

    /// State over an already opened backend.
    pub fn new(backend: Backend, config: ServerConfig) -> Self {
        let keys = match (&config.api_keys, &config.api_key) {
            (Some(ring), _) => Some(Arc::new(ring.clone())),
            (None, Some(key)) => Some(Arc::new(KeyRing::single(key))),
            (None, None) => None,
        };
        Self {
            inner: Arc::new(StateInner {
                keys: ArcSwapOption::new(keys),
                metrics: config.metrics.then(Metrics::default),
                backend,
                transactions: RemoteTransactions::new(
                    config.transaction_idle_timeout,
                    config.max_open_transactions_per_key.max(1),
                ),
                atomic: AtomicTransactions::new(
                    config.transaction_idle_timeout,
                    config.max_open_transactions_per_key.max(1),
                ),
                participants: AtomicParticipants::new(
                    config.transaction_idle_timeout,
                    config.max_atomic_participant_sessions,
                ),
                config,
                counters: RequestCounters::default(),
            }),
        }
    }

    /// The requests served so far, by surface and outcome.
    pub fn request_counts(&self) -> RequestCounts {
        self.inner.counters.snapshot()
    }

    /// Counts one finished request, whatever the transport and however it ended (a refusal
    /// before its handler included): in the totals of the log summary and, when they are on, in
    /// the metrics. Returns how the totals counted it.
    pub(super) fn record_request(
        &self,
        surface: Surface,
        operation: OperationId,
        ended: metrics::Outcome,
        elapsed: Duration,
    ) -> Outcome {
        let counted = match ended {
            metrics::Outcome::Ok => Outcome::Ok,
            metrics::Outcome::Failed(kind) => Outcome::of_kind(kind),
            metrics::Outcome::Rejected => Outcome::ClientError,
        };
        self.inner.counters.record(surface, counted);
        if let Some(metrics) = self.metrics() {
            metrics.record(surface, operation, ended, elapsed);
        }
        counted
    }

    /// The Prometheus metrics, when [`ServerConfig::metrics`] is on.
    pub fn metrics(&self) -> Option<&Metrics> {
        self.inner.metrics.as_ref()
    }

    /// Reads the values the metrics take at scrape time (see [`ScrapeSource`]).
    pub async fn scrape(&self) -> ScrapeValues {
        ScrapeSource::scrape(self).await
    }

    /// Counts a request routed by `route` for the per-shard metric (a route that does not
    /// resolve is not counted; the request fails on it anyway).
    pub(super) fn count_shard_request(&self, metrics: &Metrics, route: &RouteContext) {
        if let Some(sharded) = self.sharded() {
            let map = sharded.map();
            if let Ok(resolution) = map.resolve(route.keyspace(), route.key()) {
                metrics.count_shard_request(&map, resolution.shard_index);
            }
        }
    }

    /// The ids of the remote transactions open now.
    pub fn open_transaction_ids(&self) -> Vec<String> {
        self.inner.transactions.open_ids()
    }

    /// The settings.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// The backend.
    pub fn backend(&self) -> &Backend {
        &self.inner.backend
    }

    /// The sharded client, when the daemon serves a sharded master.
    pub fn sharded(&self) -> Option<&ShardedClient> {
        match &self.inner.backend {
            Backend::Sharded(sharded) => Some(sharded),
            Backend::Plain(_) | Backend::Host(_) => None,
        }
    }

    /// The data host, when the daemon serves a folder of shard files.
    pub fn host(&self) -> Option<&ShardHost> {
        match &self.inner.backend {
            Backend::Host(host) => Some(host),
            Backend::Plain(_) | Backend::Sharded(_) => None,
        }
    }

    /// The client a data request runs on: the route's shard when a route is given, the plain
    /// database (which ignores routes) when unsharded, and the named shard's file on a data host.
    ///
    /// Fails with [`Error::RouteRequired`] when a sharded daemon is sent no route (only
    /// [`info`](Self::info) and transaction calls by id need none), when a data host is not told
    /// which shard (or the shard has no file, or its id breaks the rules), and when another
    /// daemon is given a shard id.
    pub fn data_client(&self, target: &Target) -> Result<Arc<dyn DataClient>> {
        match (&self.inner.backend, target.shard.as_deref()) {
            (Backend::Host(host), Some(shard)) => Ok(Arc::new(host.client(shard)?)),
            (Backend::Host(_), None) => Err(host::shard_required()),
            (_, Some(_)) => Err(host::not_a_host()),
            (Backend::Sharded(sharded), None) => match &target.route {
                Some(route) => Ok(Arc::new(sharded.for_route(route.clone()))),
                None => Err(Error::RouteRequired),
            },
            (Backend::Plain(local), None) => Ok(Arc::new(local.clone())),
        }
    }

    /// Counts of what the target holds: as [`data_client`](Self::data_client)'s client answers
    /// them, except that a sharded daemon sent no route sums them over every shard.
    pub async fn info(&self, target: &Target) -> Result<DatabaseInfo> {
        match (&self.inner.backend, target) {
            (
                Backend::Sharded(sharded),
                Target {
                    route: None,
                    shard: None,
                },
            ) => sharded.shards().info().await,
            _ => self.data_client(target)?.info().await,
        }
    }

    /// What a call in transaction `transaction_id` runs on, and the id it knows the
    /// transaction by: on a data host the shard is the id's prefix (`{shardId}:{innerId}`),
    /// and a shard header naming another shard is a conflict; on a sharded daemon sent no
    /// route, the shard is the one the id names. An atomic transaction's call runs on the shard
    /// its route resolves to.
    fn transaction_client<'a>(&'a self, target: &'a Target, transaction_id: &'a str) -> Result<InTransaction<'a>> {
        if is_atomic_id(transaction_id) {
            // An atomic transaction belongs to the daemon that routes it, never to a data
            // host's shard: a shard header on one is refused, as on any other sharded call.
            if target.shard.is_some() {
                return Err(Error::invalid_argument(
                    "shard header",
                    format!("an atomic transaction takes no {} header", crate::wire::SHARD_HEADER),
                ));
            }
            let route = target.route.as_ref();
            return Ok(InTransaction::Atomic(&self.inner.atomic, route, transaction_id));
        }
        let host = match &self.inner.backend {
            Backend::Host(host) => host,
            Backend::Sharded(sharded) if target.route.is_none() && target.shard.is_none() => {
                return Ok(InTransaction::ById(sharded, transaction_id));
            }
            _ => return Ok(InTransaction::Client(self.data_client(target)?, transaction_id)),
        };
        let (shard, inner) = host::split_transaction_id(transaction_id)?;
        if let Some(named) = target.shard.as_deref().map(str::trim)
            && named != shard
        {
            return Err(Error::TransactionRouteConflict(Box::new(
                crate::error::TransactionRouteConflict {
                    transaction_id: transaction_id.to_owned(),
                    transaction_shard_id: shard.to_owned(),
                    route_shard_id: named.to_owned(),
                },
            )));
        }
        Ok(InTransaction::Client(Arc::new(host.client(shard)?), inner))
    }

    /// Who presented `presented`: [`Access::Open`] when the daemon requires no key, the key's
    /// holder when it is one of the configured keys (compared as SHA-256 digests in constant
    /// time, so timing reveals nothing about them), `None` otherwise.
    pub fn authenticate(&self, presented: Option<&[u8]>) -> Option<Access> {
        let keys = self.inner.keys.load();
        let Some(ring) = keys.as_deref() else {
            return Some(Access::Open);
        };
        ring.authenticate(presented?).map(Access::Key)
    }

    /// Whether `presented` is an accepted API key (always true when none is configured).
    pub fn api_key_matches(&self, presented: Option<&[u8]>) -> bool {
        self.authenticate(presented).is_some()
    }

    /// The keyspace the daemon serves (`None` for a plain database): what a key's keyspaces
    /// are checked against.
    pub fn served_keyspace(&self) -> Option<String> {
        self.sharded().map(|sharded| sharded.map().keyspace().to_owned())
    }

    /// Reads [`ServerConfig::api_keys_file`] again and, when it is valid, serves its keys from
    /// the next request on. A bad file changes nothing: the error says why, and the keys in use
    /// stay. Returns how many keys are now accepted.
    pub fn reload_api_keys(&self) -> Result<usize> {
        let Some(path) = &self.inner.config.api_keys_file else {
            return Err(Error::invalid_argument(
                "api keys",
                "the daemon was not started with a key file (--api-keys), so there is nothing to reload",
            ));
        };
        let ring = KeyRing::load(path)?;
        let count = ring.len();
        self.inner.keys.store(Some(Arc::new(ring)));
        Ok(count)
    }

    // -----------------------------------------------------------------------------------------
    // Remote transactions. The REST and gRPC surfaces go through these (rather than through
    // `data_client` directly) so the daemon knows which transactions are open and can roll them
    // back on shutdown.

    /// Begins an atomic transaction across the shards of a sharded daemon (an
    /// [`AtomicTransaction`](crate::client::AtomicTransaction) the daemon holds by its id); its
    /// calls run on the shard each call's route resolves to.
    pub async fn begin_atomic_transaction(&self) -> Result<TransactionInfo> {
        let sharded = self.sharded().ok_or_else(|| {
            Error::invalid_argument(
                "atomic",
                "only a daemon that serves a shard map begins atomic transactions",
            )
        })?;
        self.inner.atomic.begin(sharded)
    }

    /// The database a participant call of an atomic transaction that another daemon coordinates
    /// runs on: the plain database, or the data host's shard the shard header names. A daemon
    /// serving a shard map takes part only in its own atomic transactions.
    fn participant_db(&self, target: &Target) -> Result<crate::engine::Database> {
        match (&self.inner.backend, target.shard.as_deref()) {
            (Backend::Host(host), Some(shard)) => Ok(host.client(shard)?.database().clone()),
            (Backend::Host(_), None) => Err(host::shard_required()),
            (_, Some(_)) => Err(host::not_a_host()),
            (Backend::Plain(local), None) => Ok(local.database().clone()),
            (Backend::Sharded(_), None) => Err(Error::invalid_argument(
                "atomic participant",
                "a daemon that serves a shard map coordinates its own atomic transactions; participant calls \
                 go to a daemon serving a plain database or a data host",
            )),
        }
    }

    /// Begins a participant session of an atomic transaction another daemon coordinates, on
    /// the target's database; `busy` past [`ServerConfig::max_atomic_participant_sessions`].
    pub async fn begin_atomic_participant(&self, target: &Target) -> Result<TransactionInfo> {
        let db = self.participant_db(target)?;
        self.inner.participants.begin(db).await
    }

    /// Executes SQL in a participant session.
    pub async fn execute_in_atomic_participant(&self, session: &str, sql: &str, params: Params) -> Result<SqlResult> {
        self.inner.participants.execute(session, sql, params).await
    }

    /// Prepares a participant session (which ends it); how many rows it locked.
    pub async fn prepare_atomic_participant(&self, session: &str, prepare: crate::data::AtomicPrepare) -> Result<u64> {
        self.inner.participants.prepare(session, prepare).await
    }

    /// Rolls a participant session back.
    pub async fn rollback_atomic_participant(&self, session: &str) -> Result<()> {
        self.inner.participants.rollback(session).await
    }

    /// Runs one step of an atomic transaction on the target's database.
    pub async fn atomic_step(
        &self,
        target: &Target,
        transaction_id: &str,
        request: crate::data::AtomicStepRequest,
    ) -> Result<crate::data::AtomicStepOutcome> {
        let db = self.participant_db(target)?;
        let max_age = self.inner.config.atomic_abandon_age / 2;
        atomic_participants::step(&db, transaction_id, request, max_age).await
    }

    /// The decision record of `transaction_id` on the target's database, if it holds one.
    pub async fn atomic_decision(
        &self,
        target: &Target,
        transaction_id: &str,
    ) -> Result<Option<crate::data::Decision>> {
        crate::transaction::AtomicTransactionId::parse(transaction_id)?;
        self.participant_db(target)?.atomic().decision(transaction_id).await
    }

    /// The decision records and unfinished intents of the target's database.
    pub async fn atomic_state(&self, target: &Target) -> Result<crate::data::AtomicState> {
        atomic_participants::state(&self.participant_db(target)?).await
    }

    /// Begins a transaction on the route's shard and remembers it until it ends. Answers
    /// [`Error::TooManyTransactions`] at once when the API key's limit is reached.
    pub async fn begin_transaction(&self, target: &Target, options: TransactionOptions) -> Result<TransactionInfo> {
        let client = self.data_client(target);
        let place = self.inner.transactions.reserve()?;
        let mut info = client?.begin_transaction_with(options).await?;
        if let (Backend::Host(_), Some(shard)) = (&self.inner.backend, target.shard.as_deref()) {
            info.transaction_id = format!("{}:{}", shard.trim(), info.transaction_id);
        }
        place.confirm(info.transaction_id.clone(), options.read_only);
        Ok(info)
    }

    /// Whether this daemon began `transaction_id` read-only (`None`: it does not know it).
    pub(super) fn transaction_is_read_only(&self, transaction_id: &str) -> Option<bool> {
        self.inner.transactions.is_read_only(transaction_id)
    }

    /// Executes SQL in a transaction (checking `route` against the id when one is given).
    pub async fn execute_in_transaction(
        &self,
        target: &Target,
        transaction_id: &str,
        sql: &str,
        params: Params,
    ) -> Result<SqlResult> {
        let client = self.transaction_client(target, transaction_id)?;
        let in_use = self.inner.transactions.use_transaction(transaction_id);
        let outcome = client.execute(sql, params).await;
        drop(in_use);
        if let Err(err) = &outcome
            && matches!(err.kind(), ErrorKind::NotFound | ErrorKind::Expired)
        {
            self.inner.transactions.forget(transaction_id);
        }
        outcome
    }

    /// Commits a transaction (checking `route` against the id when one is given).
    pub async fn commit_transaction(&self, target: &Target, transaction_id: &str) -> Result<()> {
        let outcome = self.transaction_client(target, transaction_id)?.commit().await;
        self.settle(transaction_id, &outcome);
        outcome
    }

    /// Rolls back a transaction (checking `route` against the id when one is given).
    pub async fn rollback_transaction(&self, target: &Target, transaction_id: &str) -> Result<()> {
        let outcome = self.transaction_client(target, transaction_id)?.rollback().await;
        self.settle(transaction_id, &outcome);
        outcome
    }

    /// Remote transactions begun through this daemon that have not ended. Transactions idle
    /// past the idle timeout count as ended (their shard rolled them back), so the number falls
    /// back to zero on its own once clients abandon theirs.
    pub fn open_transaction_count(&self) -> usize {
        self.inner.transactions.count()
    }

    /// Rolls back every remote transaction still open and waits for the rollbacks. Called by
    /// [`run`](super::run) after the last request finished.
    pub async fn close(&self) {
        self.inner.atomic.close().await;
        self.inner.participants.close().await;
        let ids = self.inner.transactions.drain();
        if ids.is_empty() {
            return;
        }
        let outcomes = join_all(
            ids.iter()
                .map(|id| async move { self.transaction_client(&Target::default(), id)?.rollback().await }),
        )
        .await;
        let rolled_back = outcomes.iter().filter(|outcome| outcome.is_ok()).count();
        tracing::info!(
            rolled_back,
            already_ended = ids.len() - rolled_back,
            "rolled back open remote transactions at shutdown"
        );
    }

    /// After commit or rollback: the transaction is over unless the call was refused before it
    /// reached the transaction (malformed id, conflicting route, other map version).
    fn settle(&self, transaction_id: &str, outcome: &Result<()>) {
        let refused_up_front = matches!(
            outcome,
            Err(err) if matches!(
                err.kind(),
                ErrorKind::InvalidInput
                    | ErrorKind::Conflict
                    | ErrorKind::StaleMapVersion
                    | ErrorKind::RouteRequired
                    | ErrorKind::UnknownKeyspace
            )
        );
        if !refused_up_front {
            self.inner.transactions.forget(transaction_id);
        }
    }
}
