//! The `shardlite` command line: argument parsing and one module per command.

mod catalog;
mod connection;
mod data;
mod migrate;
mod seed;
#[cfg(feature = "server")]
mod serve;
mod token;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Application-level sharding for SQLite.
#[derive(Debug, Parser)]
#[command(name = "shardlite", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the canonical route text, token and bucket of a route.
    Token(token::TokenArgs),
    /// Validate a shard map and store it as the active map of a master catalog.
    Seed(seed::SeedArgs),
    /// Show where a route resolves (route from --keyspace/--key or the connection string).
    Resolve(data::ResolveArgs),
    /// Show the active shard map (no secrets).
    Map(data::AdminArgs),
    /// Probe every shard and show its health.
    Status(data::AdminArgs),
    /// Run SQL on the shard a route resolves to (or on a plain database).
    Sql(data::SqlArgs),
    /// Run SQL (schema setup) on every enabled shard; fails if any shard fails.
    ExecAll(data::FanOutArgs),
    /// Run read-only SQL on every enabled shard (writes are refused by the engine).
    ReadAll(data::FanOutArgs),
    /// Show the master catalog, or change the map: validate, apply (as the pending map), activate.
    Catalog {
        #[command(subcommand)]
        command: catalog::CatalogCommand,
    },
    /// Move the data of a route key or a bucket range to another shard, verified and resumable.
    Migrate {
        #[command(subcommand)]
        command: migrate::MigrateCommand,
    },
    /// Serve a master catalog over REST and gRPC on one port until SIGINT or SIGTERM.
    #[cfg(feature = "server")]
    Serve(serve::ServeArgs),
}

impl Cli {
    /// Runs the parsed command, printing errors to stderr.
    pub fn run(self) -> ExitCode {
        let outcome = match self.command {
            Command::Token(args) => token::run(&args),
            Command::Seed(args) => block_on(seed::run(&args)),
            Command::Resolve(args) => block_on(data::resolve(&args)),
            Command::Map(args) => block_on(data::map(&args)),
            Command::Status(args) => block_on(data::status(&args)),
            Command::Sql(args) => block_on(data::sql(&args)),
            Command::ExecAll(args) => block_on(data::exec_all(&args)),
            Command::ReadAll(args) => block_on(data::read_all(&args)),
            Command::Catalog { command } => block_on(catalog::run(&command)),
            Command::Migrate { command } => block_on(migrate::run(&command)),
            #[cfg(feature = "server")]
            Command::Serve(args) => block_on(serve::run(&args)),
        };
        match outcome {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("error: {err}");
                ExitCode::FAILURE
            }
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

/// Parses the process arguments and runs the command.
pub fn main() -> ExitCode {
    Cli::parse().run()
}
