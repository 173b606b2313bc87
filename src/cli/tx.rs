//! `shardlite tx list|resolve`: atomic transactions not finished on every shard, and finishing
//! them (see [`AtomicRecovery`](crate::client::AtomicRecovery)). Both open the master named by
//! the connection string's `Data Source` and read the shard files themselves, with no pass when
//! a shard opens: the list shows what the files hold, and resolve counts all it finished.

use clap::{Args, Subcommand};

use super::connection::ConnectionArgs;
use super::data::{OutputArgs, print_json, table};
use crate::client::{ShardedClient, ShardedClientOptions};
use crate::error::{Error, Result};
use crate::options::ConnectionOptions;

/// The `tx` subcommands.
#[derive(Debug, Subcommand)]
pub enum TxCommand {
    /// List unresolved atomic transactions: id, shard, state, age and participants.
    #[command(after_help = "Example: shardlite tx list -c \"Data Source=data/master.db\"")]
    List(TxArgs),
    /// Finish what can be finished now: decided transactions are applied or dropped on every
    /// participant, and undecided ones older than the abandon age are aborted.
    #[command(after_help = "Example: shardlite tx resolve -c \"Data Source=data/master.db\"")]
    Resolve(TxArgs),
}

/// Arguments of `shardlite tx list|resolve`.
#[derive(Debug, Args)]
pub struct TxArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// Runs a `tx` subcommand.
pub async fn run(command: &TxCommand) -> Result<()> {
    match command {
        TxCommand::List(args) => list(args).await,
        TxCommand::Resolve(args) => resolve(args).await,
    }
}

async fn open(args: &TxArgs) -> Result<ShardedClient> {
    let options = ConnectionOptions::parse(&args.connection.connection)?;
    let master = options.data_source().ok_or_else(|| {
        Error::invalid_argument(
            "--connection",
            "atomic transactions are listed and resolved from the master's shard files: give `Data Source=MASTER`",
        )
    })?;
    // Listing changes nothing, and resolving counts what it did itself: no pass when a shard
    // opens.
    let options = ShardedClientOptions {
        atomic_resolve_on_open: false,
        ..ShardedClientOptions::default()
    };
    ShardedClient::open_with(master, options).await
}

async fn list(args: &TxArgs) -> Result<()> {
    let unresolved = open(args).await?.atomic_recovery().unresolved().await?;
    if args.output.json {
        return print_json(&unresolved);
    }
    let mut out = table(
        ["transaction", "shard", "state", "age (ms)", "participants"]
            .map(str::to_owned)
            .to_vec(),
    );
    for u in &unresolved {
        out.add_row(vec![
            u.transaction_id.clone(),
            u.shard_id.clone(),
            serde_json::to_value(u.state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            u.age_ms.to_string(),
            u.participants.join(", "),
        ]);
    }
    println!("{out}");
    println!("{} unresolved", unresolved.len());
    Ok(())
}

async fn resolve(args: &TxArgs) -> Result<()> {
    let resolution = open(args).await?.atomic_recovery().resolve().await?;
    if args.output.json {
        return print_json(&resolution);
    }
    println!(
        "committed on {} participant(s), aborted on {}, {} waiting",
        resolution.committed, resolution.aborted, resolution.waiting
    );
    Ok(())
}
