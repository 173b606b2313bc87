//! The `shardlite` command line: argument parsing and one module per command.

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
}

impl Cli {
    /// Runs the parsed command, printing errors to stderr.
    pub fn run(self) -> ExitCode {
        let outcome = match self.command {
            Command::Token(args) => token::run(&args),
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

/// Parses the process arguments and runs the command.
pub fn main() -> ExitCode {
    Cli::parse().run()
}
