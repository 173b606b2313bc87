//! The daemon's settings: what bounds each request, where its keys and backups are.

use std::path::PathBuf;
use std::time::Duration;

use super::keys::KeyRing;
use crate::client::AtomicStepHook;
use crate::engine::EngineConfig;
use crate::error::{Error, Result};
use crate::map::Secret;
use crate::wire::DEFAULT_API_KEY_HEADER;

/// Daemon settings.
///
/// The defaults bound every request: how long it and each statement in it may run, how many rows
/// and bytes a result may buffer, how many requests run at once, and how many transactions stay
/// open. [`engine_config`](Self::engine_config) is what the daemon opens its shards with.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// When set, every REST, gRPC and admin request must present this key.
    pub api_key: Option<Secret>,
    /// Keys with scopes and keyspaces (`--api-keys FILE`); set at most one of this and
    /// [`api_key`](Self::api_key).
    pub api_keys: Option<KeyRing>,
    /// The file [`api_keys`](Self::api_keys) came from, read again by
    /// [`ServerState::reload_api_keys`](crate::server::ServerState::reload_api_keys) (on SIGHUP).
    pub api_keys_file: Option<PathBuf>,
    /// The header carrying the API key (default `X-CSharpDB-Api-Key`).
    pub api_key_header: String,
    /// Largest accepted request body in bytes (default 8 MiB); larger bodies get 413.
    pub body_limit: usize,
    /// Remote transactions idle this long are rolled back (default 5 s, the engine's busy
    /// timeout: a writer waiting behind a transaction its client abandoned after writing then
    /// gets the lock before it would give up with `busy`).
    pub transaction_idle_timeout: Duration,
    /// Open transactions allowed per shard (default 8); beyond it, begin answers `busy`.
    pub max_open_transactions: usize,
    /// Open remote transactions allowed per API key, across all shards (default 64); beyond it,
    /// begin answers `busy`. The daemon takes one key, so this is a daemon-wide total.
    pub max_open_transactions_per_key: usize,
    /// Participant sessions of atomic transactions other daemons coordinate, open at once on
    /// this daemon (default 64); beyond it, beginning one answers `busy`. One left idle past
    /// [`transaction_idle_timeout`](Self::transaction_idle_timeout) is rolled back.
    pub max_atomic_participant_sessions: usize,
    /// How long one statement may run before it is interrupted with `statement_timeout`
    /// (default 30 s); `None` never interrupts.
    pub statement_timeout: Option<Duration>,
    /// Rows one result may buffer (default 100 000); more is `result_too_large`.
    pub max_result_rows: usize,
    /// Bytes of values one result may buffer (default 64 MiB); more is `result_too_large`. The
    /// JSON of a response can be larger (blobs are base64).
    pub max_result_bytes: usize,
    /// How long a whole request may take (default 60 s), from its arrival to its answer; past
    /// it the request is answered `request_timeout` and its work is cancelled. `None` sets no
    /// limit. A gRPC caller's shorter deadline (`grpc-timeout`) is honoured too.
    pub request_timeout: Option<Duration>,
    /// Requests served at once (default 256), REST and gRPC together; one more is answered
    /// `busy` (503 with `Retry-After`, or `UNAVAILABLE`) at once rather than queued.
    pub max_concurrent_requests: usize,
    /// Reader connections (threads) per shard (default 2).
    pub readers: usize,
    /// Jobs that may wait for a shard's writer, and for its readers (default 1024); beyond it,
    /// calls answer `busy` at once.
    pub max_queued_jobs: usize,
    /// Whether to collect the Prometheus metrics ([`metrics`](super::metrics); `--metrics-listen`
    /// turns it on). Off, requests skip even the few atomic additions they cost.
    pub metrics: bool,
    /// How long the heat of routed calls takes to halve (`GET /api/sharding/stats/heat`;
    /// default 60 s, `--heat-half-life`).
    pub heat_half_life: Duration,
    /// How long a migration's `moved` record stays in its source file once the new map is
    /// active (see [`EngineConfig::moved_record_grace`]; default 10 minutes).
    pub moved_record_grace: Duration,
    /// Shard files open at once (see [`EngineConfig::max_open_shards`]); `None` takes the
    /// default the descriptor limit allows.
    pub max_open_shards: Option<usize>,
    /// How long an unused shard file stays open (default 60 s); `None` keeps it open until
    /// its place is needed.
    pub shard_idle_timeout: Option<Duration>,
    /// How long an undecided atomic transaction may stay before recovery aborts it (see
    /// [`EngineConfig::atomic_abandon_age`]; default 30 s).
    pub atomic_abandon_age: Duration,
    /// Called after each step of an atomic commit (a test hook, see [`AtomicStepHook`]).
    pub atomic_step_hook: Option<AtomicStepHook>,
    /// The backup place `POST /api/sharding/backups` writes sets into (`--backup-dir`); `None`
    /// refuses it. A client never names a folder on the daemon's disk.
    pub backup_dir: Option<PathBuf>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        let engine = EngineConfig::default();
        Self {
            api_key: None,
            api_keys: None,
            api_keys_file: None,
            api_key_header: DEFAULT_API_KEY_HEADER.to_owned(),
            body_limit: 8 * 1024 * 1024,
            transaction_idle_timeout: engine.busy_timeout,
            max_open_transactions: engine.max_open_transactions,
            max_open_transactions_per_key: 64,
            max_atomic_participant_sessions: 64,
            statement_timeout: Some(Duration::from_secs(30)),
            max_result_rows: 100_000,
            max_result_bytes: 64 * 1024 * 1024,
            request_timeout: Some(Duration::from_secs(60)),
            max_concurrent_requests: 256,
            readers: engine.readers,
            max_queued_jobs: engine.max_queued_jobs,
            moved_record_grace: engine.moved_record_grace,
            max_open_shards: None,
            shard_idle_timeout: engine.shard_idle_timeout,
            atomic_abandon_age: engine.atomic_abandon_age,
            atomic_step_hook: None,
            backup_dir: None,
            metrics: false,
            heat_half_life: crate::heat::DEFAULT_HALF_LIFE,
        }
    }
}

impl ServerConfig {
    /// The engine settings the daemon opens its shards (or its plain database) with. `ATTACH`
    /// is always off: remote SQL must not reach other files on the daemon's machine.
    pub fn engine_config(&self) -> EngineConfig {
        let mut engine = EngineConfig {
            readers: self.readers,
            max_open_transactions: self.max_open_transactions,
            transaction_idle_timeout: Some(self.transaction_idle_timeout),
            allow_attach: false,
            statement_timeout: self.statement_timeout,
            max_result_rows: self.max_result_rows,
            max_result_bytes: self.max_result_bytes,
            max_queued_jobs: self.max_queued_jobs,
            moved_record_grace: self.moved_record_grace,
            shard_idle_timeout: self.shard_idle_timeout,
            atomic_abandon_age: self.atomic_abandon_age,
            ..EngineConfig::default()
        };
        if let Some(max) = self.max_open_shards {
            engine.max_open_shards = max;
        }
        engine
    }

    /// Whether requests must present a key ([`api_key`](Self::api_key) or
    /// [`api_keys`](Self::api_keys) is set).
    pub fn requires_key(&self) -> bool {
        self.api_key.is_some() || self.api_keys.is_some()
    }

    /// Checks the daemon's own limits (the engine checks its settings when a shard opens); the
    /// error names the setting.
    pub fn validate(&self) -> Result<()> {
        if self.api_key.is_some() && self.api_keys.is_some() {
            return Err(Error::invalid_argument(
                "api keys",
                "give one API key (--api-key, SHARDLITE_API_KEY) or a key file (--api-keys), not both",
            ));
        }
        if self.api_keys.as_ref().is_some_and(KeyRing::is_empty) {
            return Err(Error::invalid_argument("api keys", "the key file lists no keys"));
        }
        for (name, value) in [
            ("max concurrent requests", self.max_concurrent_requests),
            ("max open transactions", self.max_open_transactions),
            ("max open transactions per key", self.max_open_transactions_per_key),
            ("readers", self.readers),
        ] {
            if value == 0 {
                return Err(Error::invalid_argument(name, "must be at least 1"));
            }
        }
        if self.heat_half_life.is_zero() {
            return Err(Error::invalid_argument("heat half-life", "must be longer than zero"));
        }
        if self.transaction_idle_timeout.is_zero() {
            return Err(Error::invalid_argument(
                "transaction idle timeout",
                "must be longer than zero",
            ));
        }
        Ok(())
    }
}
