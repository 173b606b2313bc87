//! `shardlite serve --master PATH | --shard-dir DIR [--create] [--listen ADDR] [--api-key KEY | --api-keys FILE] [--api-key-header NAME]
//! [--body-limit BYTES] [--transaction-timeout SECS] [limits] [--tls-cert PEM --tls-key PEM
//! [--tls-client-ca PEM]] [--metrics-listen ADDR] [--config FILE]`: the daemon.
//!
//! The limits bound what one client can cost the others; each has a default that is safe to
//! expose: `--statement-timeout`, `--max-result-rows`, `--max-result-bytes`, `--request-timeout`,
//! `--max-concurrent-requests`, `--max-open-transactions` (per shard),
//! `--max-open-transactions-per-key`, `--readers` and `--max-queued-jobs`.
//!
//! The master must exist (`shardlite seed` creates one) unless `--create` is given, so a mistyped
//! path fails instead of serving a new, empty database.
//!
//! `--shard-dir DIR` instead makes the daemon a data host: it serves every shard file `DIR/<id>.db`,
//! each addressed by its shard id (the `X-Shardlite-Shard` header or `x-shardlite-shard` gRPC
//! metadata), opening files on first use and closing them when idle (see
//! [`ShardHost`](crate::server::ShardHost)). The folder must exist unless `--create` is given.
//!
//! Logs go to stderr (`RUST_LOG` filters them, default `info`). At `info` the daemon logs its
//! start, its shutdown and the request totals (once a minute while they change, and at
//! shutdown), not a line per request; `RUST_LOG=shardlite=debug` adds one line per request with
//! its route and shard, and failures of the daemon's own are logged at `warn`. stdout's first line is
//! `listening on http://ADDR`, with the real port when `--listen` asks for port 0, so scripts can
//! read it (`https://` with `--tls-cert`); the second says what is served (the keyspace and map version, or a
//! plain database). SIGINT or SIGTERM stops the daemon gracefully; SIGHUP reloads the TLS files.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::error::{Error, Result};
use crate::map::Secret;
use crate::server::keys::KeyRing;
use crate::server::{self, ServerConfig, ServerState, ServerTls, TlsFiles};
use crate::wire::DEFAULT_API_KEY_HEADER;

#[path = "serve_config.rs"]
mod serve_config;

/// Arguments of `shardlite serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// A TOML file with any of these flags (`max-result-rows = 1000`, `create = true`); flags
    /// given here win over the file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The master catalog, which must exist (see `--create`). Without an active shard map, the
    /// file is served as one plain database. Or a catalog in etcd,
    /// `etcd://HOST:PORT[,HOST:PORT…]/PREFIX`, which must hold a map. This or `--shard-dir` is
    /// required, here or in `--config`.
    #[arg(long)]
    master: Option<PathBuf>,
    /// Serve a folder of shard files as a data host: the shard `ID` is the file `DIR/ID.db`,
    /// addressed by the X-Shardlite-Shard header (gRPC metadata x-shardlite-shard). Instead of
    /// `--master`.
    #[arg(long, value_name = "DIR", conflicts_with = "master")]
    shard_dir: Option<PathBuf>,
    /// Create the master as a new, empty plain database (or the `--shard-dir` folder) when it
    /// does not exist, instead of refusing to start.
    #[arg(long)]
    create: bool,
    /// The address to listen on (`127.0.0.1:0` picks a free port and prints it).
    #[arg(long, default_value = "127.0.0.1:61818")]
    listen: String,
    /// Serve Prometheus metrics at `GET /metrics` on this address (its own port, without the API
    /// key); off by default. `127.0.0.1:0` picks a free port and prints it.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<String>,
    /// Require this API key on every REST and gRPC request (never logged).
    #[arg(long, env = "SHARDLITE_API_KEY", hide_env_values = true, value_parser = parse_api_key)]
    api_key: Option<Secret>,
    /// A JSON file of API keys, each with a name, scopes (read, write, admin) and keyspaces;
    /// read again on SIGHUP. Instead of `--api-key`.
    #[arg(long, value_name = "FILE", conflicts_with = "api_key")]
    api_keys: Option<PathBuf>,
    /// The header (gRPC metadata key, lower-cased) that carries the API key.
    #[arg(long, default_value = DEFAULT_API_KEY_HEADER)]
    api_key_header: String,
    /// The largest accepted request body, in bytes; larger bodies get 413.
    #[arg(long, default_value_t = ServerConfig::default().body_limit)]
    body_limit: usize,
    /// Seconds a remote transaction may stay idle before it is rolled back. A transaction that
    /// wrote holds its shard's write lock until then; other writers wait for it up to 5 s.
    #[arg(long, default_value_t = ServerConfig::default().transaction_idle_timeout.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..))]
    transaction_timeout: u64,
    /// Seconds one SQL statement may run before it is interrupted (`statement_timeout`); 0 = no limit.
    #[arg(long, value_name = "SECS", default_value_t = seconds(ServerConfig::default().statement_timeout))]
    statement_timeout: u64,
    /// Seconds a migration's `moved` record (which refuses writers still on the old map) stays in
    /// its source shard file once the new map is active; keep it longer than every router's
    /// refresh interval. Afterwards the record and its triggers are removed.
    #[arg(long, value_name = "SECS", default_value_t = ServerConfig::default().moved_record_grace.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    moved_record_grace: u64,
    /// Rows one result may buffer; more is refused with `result_too_large`.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().max_result_rows,
        value_parser = positive)]
    max_result_rows: usize,
    /// Bytes of values one result may buffer; more is refused with `result_too_large`.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().max_result_bytes,
        value_parser = positive)]
    max_result_bytes: usize,
    /// Seconds a whole request may take before it is answered `request_timeout` and its work is
    /// cancelled; 0 = no limit. A gRPC caller's shorter deadline is honoured too.
    #[arg(long, value_name = "SECS", default_value_t = seconds(ServerConfig::default().request_timeout))]
    request_timeout: u64,
    /// Requests served at once (REST and gRPC together); more are answered `busy` at once.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().max_concurrent_requests,
        value_parser = positive)]
    max_concurrent_requests: usize,
    /// Open transactions allowed per shard; more are answered `busy`.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().max_open_transactions,
        value_parser = positive)]
    max_open_transactions: usize,
    /// Open remote transactions allowed through this daemon, across all shards and all API keys
    /// together (one total, with --api-keys too); more are answered `busy`.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().max_open_transactions_per_key,
        value_parser = positive)]
    max_open_transactions_per_key: usize,
    /// Participant sessions of atomic transactions that other daemons coordinate on this one's
    /// databases, open at once; more are answered `busy`.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().max_atomic_participant_sessions,
        value_parser = positive)]
    max_atomic_participant_sessions: usize,
    /// Reader connections (threads) per shard.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().readers, value_parser = positive)]
    readers: usize,
    /// Jobs that may wait for a shard's writer, and for its readers; more are answered `busy`.
    #[arg(long, value_name = "N", default_value_t = ServerConfig::default().max_queued_jobs,
        value_parser = positive)]
    max_queued_jobs: usize,
    /// Shard files open at once; when full, the least recently used idle one closes. Default:
    /// what the descriptor limit allows (the daemon first raises its soft limit to the hard one).
    #[arg(long, value_name = "N", value_parser = positive)]
    max_open_shards: Option<usize>,
    /// Seconds an unused shard file stays open before it closes (it opens again on its next
    /// use); 0 keeps files open until their place is needed.
    #[arg(long, value_name = "SECS", default_value_t = seconds(ServerConfig::default().shard_idle_timeout))]
    shard_idle_timeout: u64,
    /// Seconds in which the heat of routed calls (`shardlite stats heat`) halves: shorter
    /// follows a changing load sooner, longer smooths bursts.
    #[arg(long, value_name = "SECS", default_value_t = crate::heat::DEFAULT_HALF_LIFE.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..))]
    heat_half_life: u64,
    /// Seconds an undecided atomic transaction may stay before recovery aborts it.
    #[arg(long, value_name = "SECS", default_value_t = ServerConfig::default().atomic_abandon_age.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..))]
    atomic_abandon_age: u64,
    /// Serve REST and gRPC over TLS with this PEM certificate chain (leaf first); needs
    /// `--tls-key`. SIGHUP reloads it (and the key and client CA) for new connections.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of `--tls-cert`.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Require client certificates signed by the CA(s) in this PEM file (mutual TLS); needs
    /// `--tls-cert`.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// The backup place `POST /api/sharding/backups` writes sets into; without it, refused.
    #[arg(long, value_name = "DIR")]
    backup_dir: Option<PathBuf>,
    /// Archive every written shard's and the master's transactions here, for `backup restore
    /// --to-time`.
    #[arg(long, value_name = "DIR")]
    archive_dir: Option<PathBuf>,
    /// The flags given on the command line or by environment variable (argument ids), which
    /// win over `--config`.
    #[arg(skip)]
    explicit: Vec<String>,
}

impl ServeArgs {
    /// Records which flags the command line (or the environment) set, from its parse.
    pub(super) fn note_explicit_flags(&mut self, matches: &clap::ArgMatches) {
        self.explicit = serve_config::explicit_flags(matches);
    }
}

/// Whole seconds of an optional limit, 0 for none (the flags' spelling of "no limit").
fn seconds(limit: Option<Duration>) -> u64 {
    limit.map_or(0, |limit| limit.as_secs())
}

/// The limit a seconds flag names: `None` for 0.
fn limit_from_seconds(secs: u64) -> Option<Duration> {
    (secs > 0).then(|| Duration::from_secs(secs))
}

fn positive(text: &str) -> std::result::Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".to_owned()),
        Ok(n) => Ok(n),
        Err(err) => Err(err.to_string()),
    }
}

fn parse_api_key(text: &str) -> std::result::Result<Secret, String> {
    if text.trim().is_empty() {
        return Err("the API key must not be blank".to_owned());
    }
    Ok(Secret::new(text))
}

/// Runs the daemon until SIGINT or SIGTERM.
pub async fn run(args: &ServeArgs) -> Result<()> {
    super::init_logging();
    let merged;
    let args = match &args.config {
        Some(path) => {
            merged = serve_config::apply_file(args, path)?;
            &merged
        }
        None => args,
    };
    let served = Served::of(args)?;
    match &served {
        Served::Master(master) => check_master_exists(args, master).await?,
        Served::ShardDir(dir) => check_shard_dir(args, dir).await?,
    }
    // Unusable TLS files are refused before anything opens or binds.
    let tls = tls_files(args).map(ServerTls::load).transpose()?;
    let mut config = server_config(args);
    config.atomic_step_hook = super::atomic_stop::from_env()?;
    if let Some(path) = &args.api_keys {
        config.api_keys = Some(KeyRing::load(path)?);
        config.api_keys_file = Some(path.clone());
    }
    raise_descriptor_limit(&config);
    config.engine_config().validate()?;
    if let Some(dir) = &args.archive_dir {
        crate::engine::archive::start_archive(dir)?;
    }
    let state = match &served {
        Served::Master(master) => ServerState::open(master, config).await?,
        Served::ShardDir(dir) => ServerState::open_shard_dir(dir, config)?,
    };
    // Fail on a bad configuration before binding, so nothing half-starts.
    let _ = server::router(&state)?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|source| Error::Io {
            what: format!("listen address '{}'", args.listen),
            source,
        })?;
    let address = listener.local_addr().map_err(|source| Error::Io {
        what: format!("listen address '{}'", args.listen),
        source,
    })?;
    tracing::info!(%address, served = %served.path().display(), "shardlite daemon listening");
    // A closed stdout (a reader that took the first line and left) must not stop the daemon, so
    // write errors here are ignored rather than panicking as `println!` would.
    let mut out = std::io::stdout();
    let scheme = if tls.is_some() { "https" } else { "http" };
    let _ = writeln!(out, "listening on {scheme}://{address}");
    let _ = match (state.sharded(), state.host()) {
        (_, Some(host)) => {
            let shards = host.ids().await.map_or(0, |ids| ids.len());
            writeln!(
                out,
                "serving the shard folder '{}' as a data host: {shards} shard file(s), addressed by the {} header",
                host.dir().display(),
                crate::wire::SHARD_HEADER
            )
        }
        (Some(sharded), None) => {
            let map = sharded.map();
            writeln!(
                out,
                "serving keyspace '{}', map version {}, {} shard(s)",
                map.keyspace(),
                map.version(),
                map.shards().len()
            )
        }
        (None, None) => writeln!(
            out,
            "serving '{}' as one plain database: it holds no shard map (store one with `shardlite seed`)",
            served.path().display()
        ),
    };
    let metrics = match &args.metrics_listen {
        Some(listen) => {
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .map_err(|source| Error::Io {
                    what: format!("metrics listen address '{listen}'"),
                    source,
                })?;
            if let Ok(address) = listener.local_addr() {
                tracing::info!(%address, "serving Prometheus metrics at /metrics");
                let _ = writeln!(out, "metrics on http://{address}/metrics");
            }
            let serving = server::metrics::serve(listener, state.clone(), std::future::pending());
            Some(tokio::spawn(serving))
        }
        None => None,
    };
    let _ = out.flush();
    server::reload_api_keys_on_sighup(&state);
    let served = match tls {
        Some(tls) => {
            #[cfg(unix)]
            let reloads = tls.reload_on_sighup()?;
            let served = server::run_tls(listener, tls, state, shutdown_signal()).await;
            #[cfg(unix)]
            reloads.abort();
            served
        }
        None => server::run(listener, state, shutdown_signal()).await,
    };
    if let Some(metrics) = metrics {
        metrics.abort();
    }
    served?;
    tracing::info!("shardlite daemon stopped");
    Ok(())
}

/// What the daemon serves: a master catalog (or plain database), or a folder of shard files.
enum Served {
    Master(PathBuf),
    ShardDir(PathBuf),
}

impl Served {
    /// `--master` or `--shard-dir`: exactly one (the configuration file may set the other).
    fn of(args: &ServeArgs) -> Result<Self> {
        match (&args.master, &args.shard_dir) {
            (Some(master), None) => Ok(Self::Master(master.clone())),
            (None, Some(dir)) => Ok(Self::ShardDir(dir.clone())),
            (Some(_), Some(_)) => Err(Error::invalid_argument(
                "--shard-dir",
                "--shard-dir and --master are exclusive: a daemon serves either a master catalog (a router or a \
                 plain database) or a folder of shard files (a data host), not both",
            )),
            (None, None) => Err(Error::invalid_argument(
                "--master",
                "the master catalog is required: pass --master PATH (or --shard-dir DIR for a data host), or set \
                 master or shard-dir in --config",
            )),
        }
    }

    fn path(&self) -> &std::path::Path {
        match self {
            Self::Master(path) | Self::ShardDir(path) => path,
        }
    }
}

/// A missing shard folder is refused unless `--create` asks for it (then it is created).
async fn check_shard_dir(args: &ServeArgs, dir: &std::path::Path) -> Result<()> {
    let io = |source| Error::Io {
        what: format!("shard folder '{}'", dir.display()),
        source,
    };
    if tokio::fs::try_exists(dir).await.map_err(io)? {
        return Ok(());
    }
    if args.create {
        return tokio::fs::create_dir_all(dir).await.map_err(io);
    }
    Err(Error::invalid_argument(
        "--shard-dir",
        format!(
            "'{}' does not exist: create the folder, or pass --create to start with an empty one",
            dir.display()
        ),
    ))
}

/// The daemon settings the flags describe.
fn server_config(args: &ServeArgs) -> ServerConfig {
    ServerConfig {
        api_key: args.api_key.clone(),
        api_keys: None,
        api_keys_file: None,
        api_key_header: args.api_key_header.trim().to_owned(),
        body_limit: args.body_limit,
        transaction_idle_timeout: Duration::from_secs(args.transaction_timeout),
        statement_timeout: limit_from_seconds(args.statement_timeout),
        max_result_rows: args.max_result_rows,
        max_result_bytes: args.max_result_bytes,
        request_timeout: limit_from_seconds(args.request_timeout),
        max_concurrent_requests: args.max_concurrent_requests,
        max_open_transactions: args.max_open_transactions,
        max_open_transactions_per_key: args.max_open_transactions_per_key,
        max_atomic_participant_sessions: args.max_atomic_participant_sessions,
        readers: args.readers,
        max_queued_jobs: args.max_queued_jobs,
        moved_record_grace: Duration::from_secs(args.moved_record_grace),
        max_open_shards: args.max_open_shards,
        shard_idle_timeout: limit_from_seconds(args.shard_idle_timeout),
        metrics: args.metrics_listen.is_some(),
        heat_half_life: Duration::from_secs(args.heat_half_life),
        atomic_abandon_age: Duration::from_secs(args.atomic_abandon_age),
        atomic_step_hook: None,
        backup_dir: args.backup_dir.clone(),
    }
}

/// Raises the soft descriptor limit to the hard one, as servers do, and logs both with the
/// number of shard files that may be open at once.
fn raise_descriptor_limit(config: &ServerConfig) {
    let raised = crate::engine::raise_descriptor_limit();
    let max_open_shards = config
        .max_open_shards
        .unwrap_or_else(crate::engine::default_max_open_shards);
    match raised {
        Some((before, after)) => tracing::info!(
            soft_limit_before = before,
            soft_limit = after,
            max_open_shards,
            "file descriptor limit"
        ),
        None => tracing::info!(max_open_shards, "file descriptor limit unknown"),
    }
}

/// The TLS files the flags name, if TLS is on.
fn tls_files(args: &ServeArgs) -> Option<TlsFiles> {
    let (certificate, key) = (args.tls_cert.clone()?, args.tls_key.clone()?);
    Some(TlsFiles {
        certificate,
        key,
        client_ca: args.tls_client_ca.clone(),
    })
}

/// A missing master is refused unless `--create` asks for a new database: opening would otherwise
/// create an empty file, and a typo in the path would start a daemon that serves nothing useful.
async fn check_master_exists(args: &ServeArgs, master: &std::path::Path) -> Result<()> {
    // A catalog URL names no file; opening it says whether it holds a catalog.
    if let crate::catalog::CatalogLocation::Etcd(_) = crate::catalog::CatalogLocation::of_path(master)? {
        return Ok(());
    }
    let exists = tokio::fs::try_exists(master).await.map_err(|source| Error::Io {
        what: format!("master catalog '{}'", master.display()),
        source,
    })?;
    if exists || args.create {
        return Ok(());
    }
    Err(Error::invalid_argument(
        "--master",
        format!(
            "'{}' does not exist: create a master catalog with `shardlite seed --master {} --map MAP.json`, \
             or pass --create to serve a new, empty database",
            master.display(),
            master.display()
        ),
    ))
}

/// Completes on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %err, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::error!(error = %err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("SIGINT received; shutting down"),
        () = terminate => tracing::info!("SIGTERM received; shutting down"),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Serve {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn config(flags: &[&str]) -> std::result::Result<ServerConfig, clap::Error> {
        let argv = ["serve", "--master", "m.db"].iter().chain(flags);
        Serve::try_parse_from(argv).map(|serve| server_config(&serve.args))
    }

    #[test]
    fn the_defaults_are_the_server_config_defaults() {
        let parsed = config(&[]).expect("defaults parse");
        let default = ServerConfig::default();
        assert_eq!(parsed.statement_timeout, default.statement_timeout);
        assert_eq!(parsed.request_timeout, default.request_timeout);
        assert_eq!(parsed.transaction_idle_timeout, default.transaction_idle_timeout);
        assert_eq!(parsed.max_result_rows, 100_000);
        assert_eq!(parsed.max_result_bytes, 64 * 1024 * 1024);
        assert_eq!(parsed.max_concurrent_requests, 256);
        assert_eq!(parsed.max_open_transactions, default.max_open_transactions);
        assert_eq!(parsed.max_open_transactions_per_key, 64);
        assert_eq!(parsed.readers, default.readers);
        assert_eq!(parsed.moved_record_grace, Duration::from_secs(600));
        assert_eq!(
            config(&["--moved-record-grace", "30"])
                .expect("parses")
                .moved_record_grace,
            Duration::from_secs(30)
        );
        assert!(config(&["--moved-record-grace", "0"]).is_err());
        assert_eq!(parsed.max_queued_jobs, default.max_queued_jobs);
    }

    #[test]
    fn limits_flow_into_the_config_and_zero_seconds_means_no_limit() {
        let parsed = config(&[
            "--statement-timeout",
            "0",
            "--request-timeout",
            "7",
            "--max-result-rows",
            "10",
            "--max-result-bytes",
            "2048",
            "--max-concurrent-requests",
            "3",
            "--max-open-transactions",
            "2",
            "--max-open-transactions-per-key",
            "5",
            "--readers",
            "1",
            "--max-queued-jobs",
            "4",
        ])
        .expect("flags parse");
        assert_eq!(parsed.statement_timeout, None);
        assert_eq!(parsed.request_timeout, Some(Duration::from_secs(7)));
        let engine = parsed.engine_config();
        assert_eq!(engine.statement_timeout, None);
        assert_eq!((engine.max_result_rows, engine.max_result_bytes), (10, 2048));
        assert_eq!((engine.readers, engine.max_queued_jobs), (1, 4));
        assert_eq!(engine.max_open_transactions, 2);
        assert!(!engine.allow_attach);
        assert_eq!(parsed.max_concurrent_requests, 3);
        assert_eq!(parsed.max_open_transactions_per_key, 5);
    }

    #[test]
    fn tls_flags_come_as_a_certificate_and_its_key() {
        let parse = |flags: &[&str]| {
            let argv = ["serve", "--master", "m.db"].iter().chain(flags);
            Serve::try_parse_from(argv).map(|serve| tls_files(&serve.args))
        };
        assert!(parse(&[]).expect("no TLS").is_none());
        let files = parse(&["--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-client-ca", "ca.pem"])
            .expect("TLS flags parse")
            .expect("TLS on");
        assert_eq!(files.certificate, PathBuf::from("c.pem"));
        assert_eq!(files.key, PathBuf::from("k.pem"));
        assert_eq!(files.client_ca, Some(PathBuf::from("ca.pem")));
        for lone in [
            &["--tls-cert", "c.pem"][..],
            &["--tls-key", "k.pem"],
            &["--tls-client-ca", "ca.pem"],
        ] {
            assert!(parse(lone).is_err(), "{lone:?}");
        }
    }

    #[test]
    fn counts_must_be_positive() {
        for flag in [
            "--max-result-rows",
            "--max-result-bytes",
            "--max-concurrent-requests",
            "--max-open-transactions",
            "--max-open-transactions-per-key",
            "--readers",
            "--max-queued-jobs",
        ] {
            let err = config(&[flag, "0"]).expect_err(flag).to_string();
            assert!(err.contains("at least 1"), "{flag}: {err}");
        }
    }
}
