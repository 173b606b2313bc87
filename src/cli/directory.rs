//! `shardlite directory resolve|reserve|activate|upsert|disable|delete|mark-stale|entries|import`:
//! shard directories on a local master or through a daemon.
//!
//! A change prints its result; a refused change (`Rejected`) prints it too and exits non-zero.
//! `import` reads JSON lines one at a time (bounded memory) and upserts each entry.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};

use super::connection::{self, ConnectionArgs};
use super::data::{OutputArgs, print_json, table};
use crate::data::{
    Audit, DirectoryAdmin, DirectoryEntryQuery, DirectoryLookup, DirectoryMutation, DirectoryMutationResult,
    DirectoryOperation, MutationStatus, ShardAdmin,
};
use crate::error::{Error, Result};
use crate::map::DirectoryEntry;

/// The `directory` subcommands.
#[derive(Debug, Subcommand)]
pub enum DirectoryCommand {
    /// Show the entry of a lookup key and where its route resolves on the live map.
    #[command(
        after_help = "Example: shardlite directory resolve -c \"Data Source=master.db\" --directory orders_by_id SO-1"
    )]
    Resolve(ResolveArgs),
    /// Add a `Reserved` entry for a route key.
    #[command(
        after_help = "Example: shardlite directory reserve -c \"Data Source=master.db\" --directory orders_by_id SO-2 --route-key tenant-a"
    )]
    Reserve(RouteChangeArgs),
    /// Make a `Reserved` entry `Active`.
    #[command(
        after_help = "Example: shardlite directory activate -c \"Data Source=master.db\" --directory orders_by_id SO-2 --activate"
    )]
    Activate(ChangeArgs),
    /// Add or rewrite an entry for a route key, with a state (default `Active`).
    #[command(
        after_help = "Example: shardlite directory upsert -c \"Data Source=master.db\" --directory orders_by_id SO-3 --route-key tenant-b"
    )]
    Upsert(UpsertArgs),
    /// Mark an entry `Disabled`.
    #[command(
        after_help = "Example: shardlite directory disable -c \"Data Source=master.db\" --directory orders_by_id SO-2"
    )]
    Disable(ChangeArgs),
    /// Mark an entry `Deleted`, or with --remove remove it.
    #[command(
        after_help = "Example: shardlite directory delete -c \"Data Source=master.db\" --directory orders_by_id SO-2 --remove"
    )]
    Delete(DeleteArgs),
    /// Mark an entry `Stale`.
    #[command(
        after_help = "Example: shardlite directory mark-stale -c \"Data Source=master.db\" --directory orders_by_id SO-2"
    )]
    MarkStale(ChangeArgs),
    /// List a directory's entries on the live map, a page at a time, by lookup key.
    #[command(
        after_help = "Example: shardlite directory entries -c \"Data Source=master.db\" --directory orders_by_id --limit 50"
    )]
    Entries(EntriesArgs),
    /// Upsert the entries of a JSON lines file: one `{"lookupKey", "routeKey", "state"?}` per line.
    #[command(
        after_help = "Example: shardlite directory import -c \"Data Source=master.db\" --directory orders_by_id orders.jsonl --activate"
    )]
    Import(ImportArgs),
}

/// The directory and lookup key every entry command takes.
#[derive(Debug, Args)]
pub struct EntryArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The directory (ignoring case).
    #[arg(long, short = 'd')]
    directory: String,
    /// The lookup key (an order number, say).
    lookup_key: String,
}

/// Arguments of `shardlite directory resolve`.
#[derive(Debug, Args)]
pub struct ResolveArgs {
    #[command(flatten)]
    entry: EntryArgs,
    /// Resolve an entry that is not `Active` too.
    #[arg(long)]
    include_inactive: bool,
    #[command(flatten)]
    output: OutputArgs,
}

/// How a change is written: the version it expects, activation, and the history's audit.
#[derive(Debug, Args)]
pub struct WriteArgs {
    /// Refuse the change unless the catalog's newest map version is this one.
    #[arg(long)]
    pub(super) expected_version: Option<u64>,
    /// Activate the pending map the change writes, in the same call.
    #[arg(long)]
    pub(super) activate: bool,
    /// Who makes the change, for the catalog history.
    #[arg(long)]
    pub(super) operator: Option<String>,
    /// Why, for the catalog history.
    #[arg(long)]
    pub(super) comment: Option<String>,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `activate`, `disable` and `mark-stale`.
#[derive(Debug, Args)]
pub struct ChangeArgs {
    #[command(flatten)]
    entry: EntryArgs,
    #[command(flatten)]
    write: WriteArgs,
}

/// Arguments of `reserve`: the route the lookup key stands for.
#[derive(Debug, Args)]
pub struct RouteChangeArgs {
    #[command(flatten)]
    entry: EntryArgs,
    /// The route key the lookup key stands for.
    #[arg(long)]
    route_key: String,
    /// The route's keyspace (default: the map's).
    #[arg(long)]
    keyspace: Option<String>,
    #[command(flatten)]
    write: WriteArgs,
}

/// Arguments of `upsert`.
#[derive(Debug, Args)]
pub struct UpsertArgs {
    #[command(flatten)]
    change: RouteChangeArgs,
    /// The entry's state: Reserved, Active (default), Moving, Disabled, Deleted or Stale.
    #[arg(long)]
    state: Option<String>,
}

/// Arguments of `delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    #[command(flatten)]
    change: ChangeArgs,
    /// Remove the entry instead of marking it `Deleted`.
    #[arg(long)]
    remove: bool,
}

/// Arguments of `shardlite directory entries`.
#[derive(Debug, Args)]
pub struct EntriesArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The directory (ignoring case).
    #[arg(long, short = 'd')]
    directory: String,
    /// Start after this lookup key (the `next` a previous page printed).
    #[arg(long)]
    after: Option<String>,
    /// At most this many entries, 1 to 1000.
    #[arg(long)]
    limit: Option<u32>,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite directory import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub(super) connection: ConnectionArgs,
    /// The directory (ignoring case).
    #[arg(long, short = 'd')]
    pub(super) directory: String,
    /// The route keys' keyspace (default: the map's).
    #[arg(long)]
    pub(super) keyspace: Option<String>,
    /// The JSON lines file: one `{"lookupKey": "SO-1", "routeKey": "tenant-a", "state": "Active"}`
    /// per line (`state` optional, default Active; blank lines are skipped).
    pub(super) file: PathBuf,
    /// Through a daemon, the entries sent per request, each written as one pending map (the
    /// daemon's body limit, 8 MiB by default, takes about 80,000 entries); a master catalog
    /// opened here takes the whole file as one.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub(super) batch: u64,
    #[command(flatten)]
    pub(super) write: WriteArgs,
}

/// Runs a `directory` subcommand.
pub async fn run(command: &DirectoryCommand) -> Result<()> {
    match command {
        DirectoryCommand::Resolve(args) => resolve(args).await,
        DirectoryCommand::Reserve(args) => route_change(DirectoryOperation::Reserve, args, None).await,
        DirectoryCommand::Upsert(args) => {
            route_change(DirectoryOperation::Upsert, &args.change, args.state.clone()).await
        }
        DirectoryCommand::Activate(args) => change(DirectoryOperation::Activate, args, false).await,
        DirectoryCommand::Disable(args) => change(DirectoryOperation::Disable, args, false).await,
        DirectoryCommand::MarkStale(args) => change(DirectoryOperation::MarkStale, args, false).await,
        DirectoryCommand::Delete(args) => change(DirectoryOperation::Delete, &args.change, args.remove).await,
        DirectoryCommand::Entries(args) => entries(args).await,
        DirectoryCommand::Import(args) => super::directory_import::run(args).await,
    }
}

/// What the directory commands work with: the directories of the connection's target, its
/// shard admin, and the map's keyspace.
pub(super) struct Target {
    /// Whether the connection opened a master catalog in this process (not a daemon).
    pub(super) in_process: bool,
    pub(super) directories: Arc<dyn DirectoryAdmin>,
    pub(super) admin: Arc<dyn ShardAdmin>,
    pub(super) keyspace: String,
}

/// Opens the connection's target: a master catalog with a shard map, or a daemon serving one.
pub(super) async fn open(args: &ConnectionArgs) -> Result<Target> {
    let opened = connection::open(args, None).await?;
    let admin = Arc::clone(opened.admin()?);
    let keyspace = admin.shard_map().await?.keyspace;
    let directories = opened.directories().ok_or_else(|| {
        Error::invalid_argument(
            "--connection",
            "shard directories need a master catalog with a shard map or a daemon serving one",
        )
    })?;
    Ok(Target {
        in_process: opened.sharded.is_some(),
        directories,
        admin,
        keyspace,
    })
}

async fn resolve(args: &ResolveArgs) -> Result<()> {
    let directories = open(&args.entry.connection).await?.directories;
    let mut lookup = DirectoryLookup::new(&args.entry.directory, &args.entry.lookup_key);
    lookup.include_inactive = args.include_inactive;
    let found = directories.resolve_directory_entry(&lookup).await?;
    if args.output.json {
        return print_json(&found);
    }
    print_entries(std::slice::from_ref(&found.entry));
    let route = &found.route_resolution;
    println!(
        "route {}/{} resolves to shard {} (bucket {}, map version {}, by {:?})",
        route.keyspace, route.key, route.shard_id, route.bucket, route.map_version, route.source
    );
    Ok(())
}

impl WriteArgs {
    /// `mutation` with this change's version, activation and audit.
    pub(super) fn apply(&self, mutation: DirectoryMutation) -> DirectoryMutation {
        let mut mutation = mutation.audit(Audit::new(self.operator.clone(), self.comment.clone()));
        mutation.expected_current_map_version = self.expected_version;
        mutation.activate = self.activate;
        mutation
    }

    /// Whether to print JSON.
    pub(super) fn json(&self) -> bool {
        self.output.json
    }
}

async fn route_change(operation: DirectoryOperation, args: &RouteChangeArgs, state: Option<String>) -> Result<()> {
    let Target {
        directories, keyspace, ..
    } = open(&args.entry.connection).await?;
    let keyspace = args.keyspace.clone().unwrap_or(keyspace);
    let mut mutation =
        DirectoryMutation::new(&args.entry.directory, &args.entry.lookup_key).route(keyspace, &args.route_key);
    mutation.state = state;
    let result = directories
        .mutate_directory_entry(operation, &args.write.apply(mutation))
        .await?;
    report(&result, args.write.json())
}

async fn change(operation: DirectoryOperation, args: &ChangeArgs, remove: bool) -> Result<()> {
    let directories = open(&args.entry.connection).await?.directories;
    let mut mutation = DirectoryMutation::new(&args.entry.directory, &args.entry.lookup_key);
    mutation.remove_entry = remove;
    let result = directories
        .mutate_directory_entry(operation, &args.write.apply(mutation))
        .await?;
    report(&result, args.write.json())
}

/// Prints a change's result; a refused change is an error naming its issues.
pub(super) fn report(result: &DirectoryMutationResult, json: bool) -> Result<()> {
    if json {
        print_json(result)?;
    } else {
        println!("{:?}: {}", result.status, result.message);
        if let Some(version) = result.pending_map_version {
            let activated = if result.requires_activation {
                "pending activation"
            } else {
                "activated"
            };
            println!("map version {version}, {activated}");
        }
    }
    refused(result)
}

/// The error for a refused change, naming its issues; `Ok` otherwise.
pub(super) fn refused(result: &DirectoryMutationResult) -> Result<()> {
    if result.status != MutationStatus::Rejected {
        return Ok(());
    }
    let issues: Vec<String> = result
        .issues
        .iter()
        .map(|issue| format!("{}: {}", issue.code, issue.message))
        .collect();
    Err(Error::invalid_argument("shard directory change", issues.join("; ")))
}

async fn entries(args: &EntriesArgs) -> Result<()> {
    let directories = open(&args.connection).await?.directories;
    let query = DirectoryEntryQuery {
        after: args.after.clone(),
        limit: args.limit,
    };
    let page = directories.directory_entries(&args.directory, &query).await?;
    if args.output.json {
        return print_json(&page);
    }
    println!("{}: {} entries", page.directory_name, page.entry_count);
    print_entries(&page.entries);
    if let Some(next) = &page.next_after {
        println!("next page: --after {next}");
    }
    Ok(())
}

fn print_entries(entries: &[DirectoryEntry]) {
    let header = ["lookup key", "state", "keyspace", "route key", "shard", "map version"];
    let mut out = table(header.iter().map(|h| (*h).to_owned()).collect());
    for entry in entries {
        out.add_row(vec![
            entry.lookup_key.to_string(),
            entry.state.to_string(),
            entry.target_keyspace.to_string(),
            entry.route_key.to_string(),
            entry.shard_id.to_string(),
            entry.map_version.to_string(),
        ]);
    }
    println!("{out}");
}
