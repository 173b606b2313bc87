//! `shardlite backup create|list|verify|restore`: backup sets of a keyspace (see
//! [`backup`](crate::backup)). `create` opens the master named by the connection string's
//! `Data Source` and reads the shard files itself; the others read a backup place.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::connection::ConnectionArgs;
use super::data::{OutputArgs, print_json, table};
use crate::backup::{BackupStep, create_backup, list_sets, restore_backup, verify_backup};
use crate::client::ShardedClient;
use crate::error::{Error, Result};
use crate::options::ConnectionOptions;

/// The `backup` subcommands.
#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Take a backup set into a backup place: shards unchanged since its newest set are
    /// referenced, the others copied while they serve; progress on stderr.
    #[command(after_help = "Example: shardlite backup create -c \"Data Source=data/master.db\" --to backups")]
    Create(CreateArgs),
    /// List the complete sets of a backup place, oldest first.
    #[command(after_help = "Example: shardlite backup list backups")]
    List(ListArgs),
    /// Check every file of a set: checksums, that each shard opens as SQLite, that the map
    /// validates.
    #[command(after_help = "Example: shardlite backup verify backups/sets/20261203T120000000Z.json")]
    Verify(SetArgs),
    /// Write a set's shard files and a master into an empty folder, then finish the atomic
    /// transactions the set caught half done.
    #[command(after_help = "Example: shardlite backup restore backups/sets/20261203T120000000Z.json --to restored")]
    Restore(RestoreArgs),
}

/// Arguments of `shardlite backup create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The backup place (a folder; created if missing).
    #[arg(long)]
    to: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite backup list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The backup place.
    #[arg(default_value = ".")]
    place: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite backup verify`.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// A set's manifest (`PLACE/sets/ID.json`), or a backup place for its newest set.
    set: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite backup restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// A set's manifest (`PLACE/sets/ID.json`), or a backup place for its newest set.
    set: PathBuf,
    /// An empty or new folder for the shard files and `master.db`.
    #[arg(long)]
    to: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
}

/// Runs a `backup` subcommand.
pub async fn run(command: &BackupCommand) -> Result<()> {
    match command {
        BackupCommand::Create(args) => create(args).await,
        BackupCommand::List(args) => list(args),
        BackupCommand::Verify(args) => verify(args).await,
        BackupCommand::Restore(args) => restore(args).await,
    }
}

async fn create(args: &CreateArgs) -> Result<()> {
    let options = ConnectionOptions::parse(&args.connection.connection)?;
    let master = options.data_source().ok_or_else(|| {
        Error::invalid_argument(
            "--connection",
            "a backup reads the master's shard files: give `Data Source=MASTER` on the host that holds them",
        )
    })?;
    let sharded = ShardedClient::open(master).await?;
    let report = |step: &BackupStep| match step {
        BackupStep::Cut {
            batch,
            to_copy,
            unchanged,
            through,
            total,
            fence_micros,
        } => eprintln!(
            "cut {batch}: {to_copy} shard(s) to copy, {unchanged} unchanged, {through}/{total} through (fence held {fence_micros} µs)"
        ),
        BackupStep::Copied {
            shard_id,
            bytes,
            copies,
        } => eprintln!("copied {copies}: {shard_id} ({bytes} bytes)"),
        BackupStep::Restarted { attempt } => eprintln!(
            "an activation or atomic-commit decision came between two batches: the cut starts over (attempt {attempt})"
        ),
    };
    let (path, manifest) = create_backup(&sharded, &args.to, &report).await?;
    if args.output.json {
        return print_json(&manifest);
    }
    let copied = manifest.shards.iter().filter(|s| s.copied).count();
    println!(
        "set {} (map version {}): {} shard(s), {copied} copied ({} bytes), {} referenced; manifest {}",
        manifest.id,
        manifest.map_version,
        manifest.shards.len(),
        manifest.copied_bytes(),
        manifest.shards.len() - copied,
        path.display()
    );
    Ok(())
}

fn list(args: &ListArgs) -> Result<()> {
    let sets = list_sets(&args.place)?;
    if args.output.json {
        let manifests: Vec<_> = sets.iter().map(|(_, m)| m).collect();
        return print_json(&manifests);
    }
    let mut out = table(
        ["set", "taken at", "map version", "shards", "copied", "manifest"]
            .map(str::to_owned)
            .to_vec(),
    );
    for (path, m) in &sets {
        out.add_row(vec![
            m.id.clone(),
            m.taken_at.clone(),
            m.map_version.to_string(),
            m.shards.len().to_string(),
            m.shards.iter().filter(|s| s.copied).count().to_string(),
            path.display().to_string(),
        ]);
    }
    println!("{out}");
    println!("{} set(s)", sets.len());
    Ok(())
}

async fn verify(args: &SetArgs) -> Result<()> {
    let verified = verify_backup(&args.set).await?;
    if args.output.json {
        return print_json(&verified);
    }
    println!(
        "set {} is intact: map version {}, {} shard file(s), {} bytes checked",
        verified.id, verified.map_version, verified.shards, verified.bytes
    );
    Ok(())
}

async fn restore(args: &RestoreArgs) -> Result<()> {
    let restored = restore_backup(&args.set, &args.to).await?;
    if args.output.json {
        return print_json(&restored);
    }
    println!(
        "restored set {}: {} shard file(s) and {}; atomic recovery committed on {} participant(s), aborted on {}",
        restored.id, restored.shards, restored.master, restored.recovery.committed, restored.recovery.aborted
    );
    Ok(())
}
