//! Resharding from the command line, under the seed's command name `shardlite migrate
//! key|buckets|resume|status|history`: move the data of a route key or a bucket range to another
//! shard, verified, on a local master catalog. Schema migrations are `shardlite schema`.
//!
//! On a terminal a progress bar per table shows the rows copied out of the estimate; otherwise
//! plain progress lines go to stderr. The result goes to stdout (a summary, or `--json`). The
//! exit status is non-zero when the migration was rejected or needs an operator.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use super::connection::ConnectionArgs;
use super::data::{OutputArgs, print_json, table};
use crate::client::ShardedClient;
use crate::connect::{ConnectedClient, connect};
use crate::data::{
    Audit, ReshardAdmin, ReshardManifest, ReshardRequest, ReshardResult, ReshardScope, ReshardStatus, ResumeRequest,
};
use crate::error::{Error, Result};
use crate::options::ConnectionOptions;
use crate::reshard::{CopyProgress, Resharder};

/// The `migrate` subcommands.
#[derive(Debug, Subcommand)]
pub enum ReshardCommand {
    /// Move the data of one route key to another primary shard, verified, and pin the key there.
    #[command(
        after_help = "Example: shardlite migrate key -c \"Data Source=master.db\" --keyspace tenants --key acme \
                      --to s1 --manifest manifest.json --activate --delete-source"
    )]
    Key(KeyArgs),
    /// Move the data of a bucket range to another primary shard, verified; pinned keys stay.
    #[command(
        after_help = "Example: shardlite migrate buckets -c \"Data Source=master.db\" --from s0 --to s1 --start 0 \
                      --end 8 --manifest manifest.json --activate"
    )]
    Buckets(BucketArgs),
    /// Continue a stopped migration from its last checkpoint (running it again is harmless).
    #[command(after_help = "Example: shardlite migrate resume -c \"Data Source=master.db\" mig-20261130-...")]
    Resume(ResumeArgs),
    /// Give up a migration that has not written its new map: release its fence, keep the map.
    #[command(after_help = "Example: shardlite migrate abandon -c \"Data Source=master.db\" mig-20261130-...")]
    Abandon(AbandonArgs),
    /// Show one migration's state, or every migration's.
    #[command(after_help = "Example: shardlite migrate status -c \"Data Source=master.db\" --json")]
    Status(StatusArgs),
    /// Show the migration history, newest first.
    #[command(after_help = "Example: shardlite migrate history -c \"Data Source=master.db\"")]
    History(HistoryArgs),
}

/// What every migration takes.
#[derive(Debug, Args)]
pub struct CommonArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The manifest (JSON): `{pageSize?, tables: [{tableName, routeKeyColumn, primaryKeyColumn}],
    /// collections: [{collectionName, routeKeyProperty}]}`.
    #[arg(long)]
    manifest: PathBuf,
    /// Only show the plan: rows per table, index use, the map change. Changes nothing.
    #[arg(long)]
    dry_run: bool,
    /// Activate the new map once the data is verified (otherwise it stays pending).
    #[arg(long)]
    activate: bool,
    /// Delete the moved rows from the source once the new map is active (needs --activate).
    #[arg(long)]
    delete_source: bool,
    /// Fence the moving keys for the whole copy instead of copying while writes go on and
    /// fencing only for a short cutover.
    #[arg(long)]
    offline: bool,
    /// The active map version you saw; refused if it changed.
    #[arg(long)]
    expected_version: Option<u64>,
    /// An id for the migration (generated when absent).
    #[arg(long)]
    id: Option<String>,
    /// Who runs it, for the history.
    #[arg(long)]
    operator: Option<String>,
    /// Why, for the history.
    #[arg(long)]
    comment: Option<String>,
    #[command(flatten)]
    output: OutputArgs,
}

impl CommonArgs {
    /// The request to move `scope`'s data to `destination`, as the flags say.
    fn request(&self, scope: ReshardScope, destination: &str) -> Result<ReshardRequest> {
        Ok(ReshardRequest {
            migration_id: self.id.clone(),
            expected_current_map_version: self.expected_version,
            dry_run: self.dry_run,
            online: !self.offline,
            activate: self.activate,
            delete_source: self.delete_source,
            audit: Audit::new(self.operator.clone(), self.comment.clone()),
            ..ReshardRequest::new(scope, destination, read_manifest(&self.manifest)?)
        })
    }
}

/// Arguments of `shardlite migrate key`.
#[derive(Debug, Args)]
pub struct KeyArgs {
    /// The route keyspace.
    #[arg(long)]
    keyspace: String,
    /// The route key whose data moves.
    #[arg(long)]
    key: String,
    /// The destination shard.
    #[arg(long)]
    to: String,
    #[command(flatten)]
    common: CommonArgs,
}

/// Arguments of `shardlite migrate buckets`.
#[derive(Debug, Args)]
pub struct BucketArgs {
    /// The route keyspace (default: the map's).
    #[arg(long)]
    keyspace: Option<String>,
    /// The shard that owns the range now.
    #[arg(long)]
    from: String,
    /// The destination shard.
    #[arg(long)]
    to: String,
    /// The first bucket of the range.
    #[arg(long)]
    start: u32,
    /// One past the last bucket of the range.
    #[arg(long)]
    end: u32,
    #[command(flatten)]
    common: CommonArgs,
}

/// Arguments of `shardlite migrate resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The migration id.
    id: String,
    /// Also activate the new map once verified.
    #[arg(long)]
    activate: bool,
    /// Also delete the source rows once the new map is active.
    #[arg(long)]
    delete_source: bool,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite migrate abandon`.
#[derive(Debug, Args)]
pub struct AbandonArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The migration id.
    id: String,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite migrate status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The migration id (default: every migration).
    id: Option<String>,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite migrate history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// Runs a `migrate` subcommand.
pub async fn run(command: &ReshardCommand) -> Result<()> {
    match command {
        ReshardCommand::Key(args) => {
            let common = &args.common;
            let (admin, _) = open(&common.connection, true).await?;
            let scope = ReshardScope::RouteKey {
                keyspace: args.keyspace.clone(),
                route_key: args.key.clone(),
            };
            let request = common.request(scope, &args.to)?;
            report(&admin.start_migration(&request).await?, common.output.json)
        }
        ReshardCommand::Buckets(args) => {
            let common = &args.common;
            let (admin, connected) = open(&common.connection, true).await?;
            let keyspace = match &args.keyspace {
                Some(keyspace) => keyspace.clone(),
                None => match &connected {
                    ConnectedClient::Shard { client, .. } => client.sharded().map().keyspace().to_owned(),
                    ConnectedClient::Sharded { client, .. } => client.map().keyspace().to_owned(),
                    ConnectedClient::Remote { client, .. } => client.admin().shard_map().await?.keyspace,
                    _ => String::new(),
                },
            };
            let scope = ReshardScope::BucketRange {
                keyspace,
                source_shard_id: args.from.clone(),
                start_bucket_inclusive: args.start,
                end_bucket_exclusive: args.end,
            };
            let request = common.request(scope, &args.to)?;
            report(&admin.start_migration(&request).await?, common.output.json)
        }
        ReshardCommand::Resume(args) => {
            let (admin, _) = open(&args.connection, true).await?;
            let options = ResumeRequest {
                activate: args.activate,
                delete_source: args.delete_source,
            };
            report(&admin.resume_migration(&args.id, &options).await?, args.output.json)
        }
        ReshardCommand::Abandon(args) => {
            let (admin, _) = open(&args.connection, false).await?;
            report(&admin.abandon_migration(&args.id).await?, args.output.json)
        }
        ReshardCommand::Status(args) => {
            let (admin, _) = open(&args.connection, false).await?;
            match &args.id {
                Some(id) => report(&admin.migration_progress(id).await?, args.output.json),
                None => list(&admin.migrations().await?, args.output.json),
            }
        }
        ReshardCommand::History(args) => {
            let (admin, _) = open(&args.connection, false).await?;
            list(&admin.migration_history().await?, args.output.json)
        }
    }
}

/// Opens what the connection names: a local master catalog (the migration runs here, with a
/// progress display when asked) or a daemon (the migration runs there).
async fn open(connection: &ConnectionArgs, progress: bool) -> Result<(Arc<dyn ReshardAdmin>, ConnectedClient)> {
    let options = ConnectionOptions::parse(&connection.connection)?;
    if let Some(path) = options.data_source()
        && !std::path::Path::new(path).exists()
    {
        return Err(Error::invalid_argument(
            "--connection",
            format!("Data Source '{path}' does not exist"),
        ));
    }
    let connected = connect(&options).await?;
    let in_process = |sharded: &ShardedClient| -> Arc<dyn ReshardAdmin> {
        let migrator = Resharder::new(sharded.clone());
        Arc::new(match progress {
            true => migrator.with_observer(progress_display()),
            false => migrator,
        })
    };
    let admin = match &connected {
        ConnectedClient::Shard { client, .. } => in_process(client.sharded()),
        ConnectedClient::Sharded { client, .. } => in_process(client),
        ConnectedClient::Remote { client, .. } => Arc::clone(client.migrations()),
        _ => {
            return Err(Error::invalid_argument(
                "--connection",
                "migrations need a master catalog with a shard map (`Data Source=master.db`) or a daemon serving one",
            ));
        }
    };
    Ok((admin, connected))
}

fn read_manifest(path: &PathBuf) -> Result<ReshardManifest> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        what: format!("manifest {}", path.display()),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| Error::Json {
        what: "the manifest",
        source,
    })
}

/// A progress bar per table on a terminal; otherwise a plain line per table at most every
/// second, and when it is done.
fn progress_display() -> impl Fn(&CopyProgress) + Send + Sync + 'static {
    let terminal = std::io::stderr().is_terminal();
    let bars = MultiProgress::new();
    let state: Mutex<HashMap<String, (ProgressBar, Instant)>> = Mutex::new(HashMap::new());
    let style = ProgressStyle::with_template("{prefix:>16} [{bar:40}] {pos}/{len} rows {per_sec} eta {eta}")
        .map(|style| style.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    let state = Arc::new(state);
    move |progress: &CopyProgress| {
        if progress.item.is_empty() {
            // A phase change of an online migration: capture, catch-up, cutover, activation.
            let line = phase_line(progress);
            if terminal {
                let _ = bars.println(line);
            } else {
                eprintln!("{line}");
            }
            return;
        }
        let mut items = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let done = progress.rows >= progress.estimated_rows;
        if terminal {
            let (bar, _) = items.entry(progress.item.clone()).or_insert_with(|| {
                let bar = bars.add(ProgressBar::new(progress.estimated_rows.max(1)));
                bar.set_style(style.clone());
                bar.set_prefix(progress.item.clone());
                (bar, Instant::now())
            });
            bar.set_length(progress.estimated_rows.max(progress.rows).max(1));
            bar.set_position(progress.rows);
            if done {
                bar.finish();
            }
        } else {
            let entry = items
                .entry(progress.item.clone())
                .or_insert_with(|| (ProgressBar::hidden(), Instant::now() - Duration::from_secs(2)));
            if done || entry.1.elapsed() >= Duration::from_secs(1) {
                entry.1 = Instant::now();
                let (id, item) = (&progress.migration_id, &progress.item);
                eprintln!("{}", copied_line(id, item, progress.rows, progress.estimated_rows));
            }
        }
    }
}

/// One progress line of a table: `migration m: items copied 120 of 20112 rows`. The estimate
/// is the count before the copy; rows written meanwhile can take the copy past it.
fn copied_line(migration_id: &str, item: &str, rows: u64, estimate: u64) -> String {
    if rows > estimate {
        format!(
            "migration {migration_id}: {item} copied {rows} rows (estimated {estimate} before the copy; rows \
             written since count too)"
        )
    } else {
        format!("migration {migration_id}: {item} copied {rows} of {estimate} rows")
    }
}

/// One line for a phase change: `migration m: catching-up (120 changes to replay)`.
fn phase_line(progress: &CopyProgress) -> String {
    let mut line = format!("migration {}: {}", progress.migration_id, progress.phase);
    if progress.remaining_changes > 0 {
        line.push_str(&format!(" ({} changes to replay)", progress.remaining_changes));
    }
    if let Some(ms) = progress.cutover_ms {
        line.push_str(&format!(" (cutover: writes of the moving keys refused for {ms} ms)"));
    }
    line
}

/// Whether a run ended in a way a script must notice: rejected, or needing an operator.
fn failed(result: &ReshardResult) -> bool {
    result.status == ReshardStatus::Rejected || result.requires_operator_recovery
}

/// Prints a migration's state; an error (non-zero exit) when it was rejected or needs an operator.
fn report(result: &ReshardResult, json: bool) -> Result<()> {
    if json {
        print_json(result)?;
    } else {
        println!(
            "migration {}: {:?} ({})",
            result.migration_id, result.status, result.phase
        );
        println!("{}", result.message);
        let spec = &result.spec;
        let what = match &spec.scope {
            ReshardScope::RouteKey { route_key, .. } => format!("route key '{route_key}'"),
            ReshardScope::BucketRange {
                start_bucket_inclusive: start,
                end_bucket_exclusive: end,
                ..
            } => format!("buckets [{start}, {end})"),
        };
        println!(
            "{what} in '{}': {} -> {}",
            spec.keyspace(),
            spec.source_shard_id,
            spec.destination_shard_id
        );
        match &result.online {
            Some(online) => println!(
                "online: {} captured changes replayed in {} catch-up rounds, {} remaining; cutover {}",
                online.changes_applied,
                online.catch_up_rounds,
                online.remaining_changes,
                online
                    .cutover_ms
                    .map_or_else(|| "not yet".to_owned(), |ms| format!("{ms} ms"))
            ),
            None if result.status != ReshardStatus::Planned && !spec.online => {
                println!("offline: the moving keys were fenced for the whole copy");
            }
            None => {}
        }
        if let Some(plan) = &result.plan
            && result.status == ReshardStatus::Planned
        {
            let mut rows = table(vec![
                "item".into(),
                "estimated rows".into(),
                "route index".into(),
                "plan".into(),
            ]);
            for item in &plan.items {
                rows.add_row(vec![
                    item.name.clone(),
                    item.estimated_rows.to_string(),
                    if item.route_index { "yes" } else { "no" }.to_owned(),
                    item.query_plan.clone(),
                ]);
            }
            println!("{rows}");
            for moved in &plan.moved_pins {
                println!("pin '{}': {} -> {}", moved.0, moved.1, moved.2);
            }
            for moved in &plan.moved_buckets {
                println!("buckets [{}, {}): {} -> {}", moved.0, moved.1, moved.2, moved.3);
            }
            println!("new map version: {}", plan.proposed_map_version);
        } else if !result.receipts.is_empty() {
            let mut receipts = table(
                [
                    "item",
                    "source rows",
                    "destination rows",
                    "source checksum",
                    "destination checksum",
                    "verified",
                    "deleted",
                ]
                .map(String::from)
                .to_vec(),
            );
            for receipt in &result.receipts {
                receipts.add_row(vec![
                    receipt.name.clone(),
                    receipt.source_rows.to_string(),
                    receipt
                        .destination_rows
                        .map_or_else(|| "-".to_owned(), |n| n.to_string()),
                    short(&receipt.source_checksum),
                    receipt
                        .destination_checksum
                        .as_deref()
                        .map_or_else(|| "-".to_owned(), short),
                    if receipt.verified { "yes" } else { "no" }.to_owned(),
                    receipt.source_rows_deleted.to_string(),
                ]);
            }
            println!("{receipts}");
        }
        for issue in &result.issues {
            println!("{:?} {}: {}", issue.severity, issue.code, issue.message);
        }
        if let Some(action) = &result.recovery_action {
            println!("recovery: {action}");
        }
    }
    if failed(result) {
        return Err(Error::invalid_argument(
            "migration",
            format!(
                "migration {} ended {:?}: {}",
                result.migration_id, result.status, result.message
            ),
        ));
    }
    Ok(())
}

fn short(checksum: &str) -> String {
    checksum.chars().take(16).collect()
}

fn list(results: &[ReshardResult], json: bool) -> Result<()> {
    if json {
        return print_json(&results);
    }
    let mut rows = table(
        ["id", "status", "phase", "what", "from", "to", "rows", "updated"]
            .map(String::from)
            .to_vec(),
    );
    for result in results {
        let spec = &result.spec;
        rows.add_row(vec![
            result.migration_id.clone(),
            format!("{:?}", result.status),
            result.phase.to_string(),
            match &spec.scope {
                ReshardScope::RouteKey { route_key, .. } => route_key.clone(),
                ReshardScope::BucketRange {
                    start_bucket_inclusive: start,
                    end_bucket_exclusive: end,
                    ..
                } => format!("[{start}, {end})"),
            },
            spec.source_shard_id.clone(),
            spec.destination_shard_id.clone(),
            result.receipts.iter().map(|r| r.source_rows).sum::<u64>().to_string(),
            result.updated_utc.clone(),
        ]);
    }
    println!("{rows}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::copied_line;

    #[test]
    fn a_copy_past_its_estimate_does_not_claim_more_rows_than_the_whole() {
        assert_eq!(
            copied_line("m", "items", 700, 700),
            "migration m: items copied 700 of 700 rows"
        );
        let past = copied_line("m", "items", 20113, 20112);
        assert!(!past.contains("20113 of 20112"), "{past}");
        assert!(
            past.contains("copied 20113 rows (estimated 20112 before the copy"),
            "{past}"
        );
    }
}
