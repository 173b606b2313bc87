//! The `shardlite` command line: argument parsing and one module per command.

mod seed;
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
}

impl Cli {
    /// Runs the parsed command, printing errors to stderr.
    pub fn run(self) -> ExitCode {
        let outcome = match self.command {
            Command::Token(args) => token::run(&args),
            Command::Seed(args) => block_on(seed::run(&args)),
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
