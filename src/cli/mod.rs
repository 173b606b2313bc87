//! The `shardlite` command line: argument parsing and one module per command.

#[cfg(feature = "server")]
mod atomic_stop;
mod backup;
mod catalog;
mod connection;
mod data;
mod demo;
mod directory;
mod directory_import;
mod hint;
#[cfg(any(feature = "grpc", feature = "http"))]
mod host;
mod reshard;
mod schema;
mod seed;
#[cfg(feature = "server")]
mod serve;
mod stats;
mod status;
mod token;
mod tx;

use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

/// Application-level sharding for SQLite.
#[derive(Debug, Parser)]
#[command(
    name = "shardlite",
    version,
    about,
    after_help = "Example: shardlite status -c \"Data Source=demo/shards/master.db\"   (make one with `shardlite demo demo`)"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// The connection string the command was given, for hints that paste (set by [`main`]).
    #[arg(skip)]
    connection: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the order-history sample: a master and four shard files, orders routed by month.
    #[command(after_help = "Example: shardlite demo demo   (keeps the files in ./demo/shards/)")]
    Demo(demo::DemoArgs),
    /// Print the canonical route text, token and bucket of a route.
    #[command(after_help = "Example: shardlite token orders_by_month 2026-06 --buckets 16")]
    Token(token::TokenArgs),
    /// Validate a shard map and store it as the active map of a master catalog.
    #[command(after_help = "Example: shardlite seed --master data/master.db --map map.json")]
    Seed(seed::SeedArgs),
    /// Show where a route resolves (route from --keyspace/--key or the connection string).
    #[command(
        after_help = "Example: shardlite resolve -c \"Data Source=data/master.db\" --keyspace orders_by_month --key 2026-06"
    )]
    Resolve(data::ResolveArgs),
    /// Show the active shard map (no secrets).
    #[command(after_help = "Example: shardlite map -c \"Data Source=data/master.db\"")]
    Map(data::AdminArgs),
    /// Probe every shard and show its health (counts by state on a large map).
    #[command(
        after_help = "Example: shardlite status -c \"Endpoint=http://127.0.0.1:61818;Transport=Grpc\" --unhealthy"
    )]
    Status(status::StatusArgs),
    /// Show where routed calls went lately (heat), or print a next map that evens the load.
    #[command(after_help = "Example: shardlite stats heat -c \"Endpoint=http://127.0.0.1:61818;Transport=Grpc\"")]
    Stats {
        #[command(subcommand)]
        command: stats::StatsCommand,
    },
    /// Run SQL on the shard a route resolves to (or on a plain database).
    #[command(
        after_help = "Example: shardlite sql -c \"Data Source=data/master.db\" --keyspace orders_by_month --key 2026-06 \"SELECT count(*) FROM orders\""
    )]
    Sql(data::SqlArgs),
    /// Run SQL (schema setup) on every enabled shard; fails if any shard fails.
    #[command(
        after_help = "Example: shardlite exec-all -c \"Data Source=data/master.db\" \"CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, order_month TEXT)\""
    )]
    ExecAll(data::FanOutArgs),
    /// Run read-only SQL on every enabled shard (writes are refused by the engine).
    #[command(
        after_help = "Example: shardlite read-all -c \"Data Source=data/master.db\" \"SELECT count(*) FROM orders\""
    )]
    ReadAll(data::FanOutArgs),
    /// Run one read-only SELECT on every shard and print one merged result.
    #[command(
        after_help = "Example: shardlite query-all -c \"Data Source=data/master.db\" \"SELECT order_month, count(*) FROM orders WHERE amount > ? GROUP BY order_month ORDER BY 1\" --param 10"
    )]
    QueryAll(data::QueryAllArgs),
    /// Show the master catalog, or change the map: validate, apply (as the pending map), activate.
    #[command(after_help = "Example: shardlite catalog show -c \"Data Source=data/master.db\"")]
    Catalog {
        #[command(subcommand)]
        command: catalog::CatalogCommand,
    },
    /// Apply sqlx migrations to every shard, or show each shard's migration versions and drift.
    #[command(after_help = "Example: shardlite schema migrate -c \"Data Source=data/master.db\" migrations")]
    Schema {
        #[command(subcommand)]
        command: schema::SchemaCommand,
    },
    /// Move the data of a route key or a bucket range to another shard, verified and resumable.
    #[command(
        after_help = "Example: shardlite migrate key -c \"Data Source=data/master.db\" --keyspace orders_by_month --key 2026-05 --to shard-4 --manifest manifest.json --dry-run"
    )]
    Migrate {
        #[command(subcommand)]
        command: reshard::ReshardCommand,
    },
    /// Shard directories: resolve a lookup key, change its entry, list or import entries.
    #[command(
        after_help = "Example: shardlite directory resolve -c \"Data Source=data/master.db\" --directory orders_by_id SO-1"
    )]
    Directory {
        #[command(subcommand)]
        command: directory::DirectoryCommand,
    },
    /// Atomic transactions across shards: list the unresolved ones, or resolve them.
    #[command(after_help = "Example: shardlite tx list -c \"Data Source=data/master.db\"")]
    Tx {
        #[command(subcommand)]
        command: tx::TxCommand,
    },
    /// Backup sets of the keyspace: take one, list them, verify one, restore one.
    #[command(after_help = "Example: shardlite backup create -c \"Data Source=data/master.db\" --to backups")]
    Backup {
        #[command(subcommand)]
        command: backup::BackupCommand,
    },
    /// A data host's shard files: count and list them, or create new ones.
    #[cfg(any(feature = "grpc", feature = "http"))]
    #[command(
        after_help = "Example: shardlite host create-shard -c \"Endpoint=http://127.0.0.1:61818;Transport=Http\" orders-1"
    )]
    Host {
        #[command(subcommand)]
        command: host::HostCommand,
    },
    /// Serve a master catalog (or, with --shard-dir, a folder of shard files) over REST and gRPC
    /// on one port until SIGINT or SIGTERM.
    #[cfg(feature = "server")]
    #[command(after_help = "Example: shardlite serve --master data/master.db --listen 127.0.0.1:61818")]
    Serve(Box<serve::ServeArgs>),
}

impl Cli {
    /// Runs the parsed command, printing errors to stderr.
    pub fn run(self) -> ExitCode {
        let outcome = match self.command {
            Command::Demo(args) => block_on(demo::run(&args)),
            Command::Token(args) => token::run(&args),
            Command::Seed(args) => block_on(seed::run(&args)),
            Command::Resolve(args) => block_on(data::resolve(&args)),
            Command::Map(args) => block_on(data::map(&args)),
            Command::Status(args) => block_on(status::run(&args)),
            Command::Stats { command } => block_on(stats::run(&command)),
            Command::Sql(args) => block_on(data::sql(&args)),
            Command::ExecAll(args) => block_on(data::exec_all(&args)),
            Command::ReadAll(args) => block_on(data::read_all(&args)),
            Command::QueryAll(args) => block_on(data::query_all(&args)),
            Command::Catalog { command } => block_on(catalog::run(&command)),
            Command::Schema { command } => block_on(schema::run(&command)),
            Command::Migrate { command } => block_on(reshard::run(&command)),
            Command::Directory { command } => block_on(directory::run(&command)),
            Command::Tx { command } => block_on(tx::run(&command)),
            Command::Backup { command } => block_on(backup::run(&command)),
            #[cfg(any(feature = "grpc", feature = "http"))]
            Command::Host { command } => block_on(host::run(&command)),
            #[cfg(feature = "server")]
            Command::Serve(args) => block_on(serve::run(&args)),
        };
        match outcome {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("error: {err}");
                if let Some(hint) = hint::Caller::new(self.connection.as_deref()).after_error(&err) {
                    eprintln!("hint: {hint}");
                }
                ExitCode::FAILURE
            }
        }
    }
}

/// The `--connection` value of the innermost subcommand that takes one.
fn connection_of(matches: &clap::ArgMatches) -> Option<String> {
    let mut current = matches;
    let mut found = None;
    loop {
        if let Ok(Some(connection)) = current.try_get_one::<String>("connection") {
            found = Some(connection.clone());
        }
        match current.subcommand() {
            Some((_, inner)) => current = inner,
            None => return found,
        }
    }
}

/// Runs an async command on a runtime of its own.
fn block_on<F: std::future::Future<Output = crate::Result<()>>>(future: F) -> crate::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|source| crate::Error::Io {
            what: "the async runtime".to_owned(),
            source,
        })?
        .block_on(future)
}

/// Ends the process quietly when standard output is a pipe its reader closed (`shardlite status |
/// head`), as command-line tools do, instead of reporting a panic with a backtrace.
fn exit_quietly_on_closed_pipe() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            // 128 + SIGPIPE: what a shell reports for a tool the pipe ended.
            std::process::exit(141);
        }
        previous(info);
    }));
}

/// Parses the process arguments and runs the command.
pub fn main() -> ExitCode {
    exit_quietly_on_closed_pipe();
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.format(&mut Cli::command()).exit());
    cli.connection = connection_of(&matches);
    // `serve --config FILE` needs to know which flags the command line set: those win.
    #[cfg(feature = "server")]
    let cli = {
        let mut cli = cli;
        if let (Command::Serve(args), Some(("serve", serve))) = (&mut cli.command, matches.subcommand()) {
            args.note_explicit_flags(serve);
        }
        cli
    };
    cli.run()
}

/// Logs to stderr at the level `RUST_LOG` names (`info` by default), unless a subscriber is
/// installed already.
#[cfg(feature = "server")]
pub(crate) fn init_logging() {
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
