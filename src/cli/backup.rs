//! `shardlite backup create|list|verify|restore`: backup sets of a keyspace (see
//! [`backup`](crate::backup)). `create` opens the master named by the connection string's
//! `Data Source` and reads the shard files itself, or asks the daemon an HTTP endpoint names to
//! take the set into its own backup place; the others read a backup place.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::connection::ConnectionArgs;
use super::data::{OutputArgs, print_json, table};
use crate::backup::{
    BackupManifest, BackupStep, RestoreTarget, create_backup, list_sets, parse_moment, restore_backup_as_at_into,
    restore_backup_into, verify_backup,
};
use crate::catalog::CatalogLocation;
use crate::client::ShardedClient;
use crate::error::{Error, Result};
#[cfg(any(feature = "grpc", feature = "http"))]
use crate::map::Transport;
use crate::options::ConnectionOptions;
#[cfg(any(feature = "grpc", feature = "http"))]
use crate::transport::RemoteOptions;
#[cfg(feature = "grpc")]
use crate::transport::grpc::GrpcClient;
#[cfg(feature = "http")]
use crate::transport::http::HttpClient;

/// The `backup` subcommands.
#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Take a backup set into a backup place: shards unchanged since its newest set are
    /// referenced, the others copied while they serve; progress on stderr.
    #[command(
        after_help = "Example: shardlite backup create -c \"Data Source=data/master.db\" --to backups\nExample: shardlite backup create -c http://127.0.0.1:61818 (a daemon started with --backup-dir)"
    )]
    Create(CreateArgs),
    /// List the complete sets of a backup place, oldest first.
    #[command(after_help = "Example: shardlite backup list backups")]
    List(ListArgs),
    /// Check every file of a set: checksums, that each shard opens as SQLite, that the map
    /// validates.
    #[command(after_help = "Example: shardlite backup verify backups/sets/20261203T120000000Z.json")]
    Verify(SetArgs),
    /// Write a set's shard files and a master into an empty folder (or its catalog into an empty
    /// etcd prefix and its shard files into `--shard-dir`), then finish the atomic transactions
    /// the set caught half done.
    #[command(
        after_help = "Example: shardlite backup restore backups/sets/20261203T120000000Z.json --to restored\nExample: shardlite backup restore backups --to etcd://127.0.0.1:2379/shop --shard-dir /srv/shards"
    )]
    Restore(RestoreArgs),
}

/// Arguments of `shardlite backup create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The backup place (a folder; created if missing). Not with a daemon's endpoint: the daemon
    /// writes into its own (`serve --backup-dir`).
    #[arg(long)]
    to: Option<PathBuf>,
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
    /// An empty or new folder for the shard files and `master.db`; or an etcd prefix that holds
    /// no key (`etcd://HOST:PORT[,HOST:PORT…]/PREFIX`) to import the catalog into, with the shard
    /// files in `--shard-dir`.
    #[arg(long, value_name = "DIR|URL")]
    to: PathBuf,
    /// With `--to etcd://…`: the empty or new folder the shard files go into (the restored maps
    /// name them by their absolute paths).
    #[arg(long, value_name = "DIR")]
    shard_dir: Option<PathBuf>,
    /// Restore the keyspace as it was at this moment (RFC 3339, `2026-12-03T12:00:00Z`), from
    /// the set (taken before it) and the point-in-time archive.
    #[arg(long, value_name = "TIME", requires = "archive")]
    to_time: Option<String>,
    /// The point-in-time archive (`serve --archive-dir`) `--to-time` reads.
    #[arg(long, value_name = "DIR", requires = "to_time")]
    archive: Option<PathBuf>,
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

/// The connection string of `create`; a bare `http://` or `https://` URL names a daemon's
/// HTTP endpoint.
fn create_connection(text: &str) -> Result<ConnectionOptions> {
    let lower = text.trim().to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return ConnectionOptions::parse(&format!("Endpoint={};Transport=Http", text.trim()));
    }
    text.parse()
}

async fn create(args: &CreateArgs) -> Result<()> {
    let options = create_connection(&args.connection.connection)?;
    let (path, manifest) = match options.data_source() {
        Some(master) => {
            let (path, manifest) = create_here(master, args.to.as_deref()).await?;
            (path.display().to_string(), manifest)
        }
        None => {
            let manifest = create_on_daemon(&options, args.to.as_deref()).await?;
            (
                format!("sets/{}.json in the daemon's backup place", manifest.id),
                manifest,
            )
        }
    };
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
        path
    );
    Ok(())
}

/// Takes a set in this process, reading the shard files of the master at `master`.
async fn create_here(master: &str, to: Option<&Path>) -> Result<(PathBuf, BackupManifest)> {
    let to =
        to.ok_or_else(|| Error::invalid_argument("--to", "give the backup place (a folder) to write the set into"))?;
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
    create_backup(&sharded, to, &report).await
}

/// Asks the daemon the connection names to take a set into its own backup place.
async fn create_on_daemon(options: &ConnectionOptions, to: Option<&Path>) -> Result<BackupManifest> {
    if to.is_some() {
        return Err(Error::invalid_argument(
            "--to",
            "a daemon writes its sets into its own backup place (`serve --backup-dir`): leave out --to",
        ));
    }
    #[cfg(any(feature = "grpc", feature = "http"))]
    let remote = RemoteOptions::from_connection_options(options)?;
    match options.transport() {
        #[cfg(feature = "http")]
        Some(Transport::Http) => {
            let daemon = HttpClient::new(remote)?;
            eprintln!("asking {} for a backup set", daemon.endpoint());
            daemon.create_backup().await
        }
        #[cfg(feature = "grpc")]
        Some(Transport::Grpc) => {
            let daemon = GrpcClient::connect(remote).await?;
            eprintln!("asking {} for a backup set", daemon.endpoint());
            daemon.create_backup().await
        }
        _ => Err(Error::invalid_argument(
            "--connection",
            "a backup is taken from a master file (`Data Source=MASTER`) or a daemon's endpoint \
             (`http://HOST:PORT`, or `Endpoint=http://HOST:PORT;Transport=Grpc`)",
        )),
    }
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
    let target = restore_target(args)?;
    let restored = match (&args.to_time, &args.archive) {
        (Some(time), Some(archive)) => {
            restore_backup_as_at_into(&args.set, archive, parse_moment(time)?, &target).await?
        }
        _ => restore_backup_into(&args.set, &target).await?,
    };
    if args.output.json {
        return print_json(&restored);
    }
    println!(
        "restored set {}: {} shard file(s) and {}; atomic recovery committed on {} participant(s), aborted on {}",
        restored.id, restored.shards, restored.master, restored.recovery.committed, restored.recovery.aborted
    );
    Ok(())
}

/// `--to DIR` alone, or `--to etcd://…` with `--shard-dir DIR`.
fn restore_target(args: &RestoreArgs) -> Result<RestoreTarget> {
    match (CatalogLocation::of_path(&args.to)?, &args.shard_dir) {
        (CatalogLocation::File(dir), None) => Ok(RestoreTarget::folder(dir)),
        (CatalogLocation::File(_), Some(_)) => Err(Error::invalid_argument(
            "--shard-dir",
            "the shard files go into --to when it is a folder: leave out --shard-dir, or give --to an etcd prefix",
        )),
        (etcd, Some(dir)) => RestoreTarget::catalog(etcd, dir),
        (etcd, None) => Err(Error::invalid_argument(
            "--shard-dir",
            format!("restoring the catalog into {etcd} needs a folder for the shard files: add --shard-dir DIR"),
        )),
    }
}
