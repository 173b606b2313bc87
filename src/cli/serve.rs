//! `shardlite serve --master PATH [--create] [--listen ADDR] [--api-key KEY] [--api-key-header NAME]
//! [--body-limit BYTES] [--transaction-timeout SECS]`: the daemon.
//!
//! The master must exist (`shardlite seed` creates one) unless `--create` is given, so a mistyped
//! path fails instead of serving a new, empty database.
//!
//! Logs go to stderr (`RUST_LOG` filters them, default `info`); stdout gets one line,
//! `listening on http://ADDR`, with the real port when `--listen` asks for port 0, so scripts can
//! read it. SIGINT or SIGTERM stops the daemon gracefully.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::error::{Error, Result};
use crate::map::Secret;
use crate::server::{self, ServerConfig, ServerState};
use crate::wire::DEFAULT_API_KEY_HEADER;

/// Arguments of `shardlite serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The master catalog, which must exist (see `--create`). Without an active shard map, the
    /// file is served as one plain database.
    #[arg(long)]
    master: PathBuf,
    /// Create the master as a new, empty plain database when it does not exist, instead of
    /// refusing to start.
    #[arg(long)]
    create: bool,
    /// The address to listen on (`127.0.0.1:0` picks a free port and prints it).
    #[arg(long, default_value = "127.0.0.1:61818")]
    listen: String,
    /// Require this API key on every REST and gRPC request (never logged).
    #[arg(long, env = "SHARDLITE_API_KEY", hide_env_values = true, value_parser = parse_api_key)]
    api_key: Option<Secret>,
    /// The header (gRPC metadata key, lower-cased) that carries the API key.
    #[arg(long, default_value = DEFAULT_API_KEY_HEADER)]
    api_key_header: String,
    /// The largest accepted request body, in bytes; larger bodies get 413.
    #[arg(long, default_value_t = ServerConfig::default().body_limit)]
    body_limit: usize,
    /// Seconds a remote transaction may stay idle before it is rolled back.
    #[arg(long, default_value_t = ServerConfig::default().transaction_idle_timeout.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..))]
    transaction_timeout: u64,
}

fn parse_api_key(text: &str) -> std::result::Result<Secret, String> {
    if text.trim().is_empty() {
        return Err("the API key must not be blank".to_owned());
    }
    Ok(Secret::new(text))
}

/// Runs the daemon until SIGINT or SIGTERM.
pub async fn run(args: &ServeArgs) -> Result<()> {
    init_logging();
    check_master_exists(args).await?;
    let config = ServerConfig {
        api_key: args.api_key.clone(),
        api_key_header: args.api_key_header.trim().to_owned(),
        body_limit: args.body_limit,
        transaction_idle_timeout: Duration::from_secs(args.transaction_timeout),
        ..ServerConfig::default()
    };
    let state = ServerState::open(&args.master, config).await?;
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
    tracing::info!(%address, master = %args.master.display(), "shardlite daemon listening");
    println!("listening on http://{address}");
    server::run(listener, state, shutdown_signal()).await?;
    tracing::info!("shardlite daemon stopped");
    Ok(())
}

/// A missing master is refused unless `--create` asks for a new database: opening would otherwise
/// create an empty file, and a typo in the path would start a daemon that serves nothing useful.
async fn check_master_exists(args: &ServeArgs) -> Result<()> {
    let exists = tokio::fs::try_exists(&args.master).await.map_err(|source| Error::Io {
        what: format!("master catalog '{}'", args.master.display()),
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
            args.master.display(),
            args.master.display()
        ),
    ))
}

fn init_logging() {
    use std::io::IsTerminal;

    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // A subscriber installed earlier (by an embedding program) wins.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
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
