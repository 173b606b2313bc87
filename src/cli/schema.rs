//! `shardlite schema migrate|status`: apply a folder of sqlx-style migrations to every shard, and
//! show each shard's applied versions, schema fingerprint and drift.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand, ValueEnum};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use super::connection::{self, ConnectionArgs};
use super::data::{OutputArgs, print_json, table};
use crate::data::{
    SchemaChange, SchemaMigrationReport, SchemaMigrationRequest, SchemaMigrationState, SchemaStatusReport, SchemaStep,
    ShardAdmin, ShardSchemaOutcome,
};
use crate::error::{Error, Result};
use crate::schema::read_migration_dir;

/// The `schema` subcommands.
#[derive(Debug, Subcommand)]
pub enum SchemaCommand {
    /// Apply a folder of sqlx migrations (`<VERSION>_<DESCRIPTION>.sql`) to every enabled shard.
    ///
    /// Each shard records what it applied in its own `_sqlx_migrations` table, as sqlx does.
    /// Shards already at the latest version are skipped, so a run can be repeated after fixing a
    /// shard that failed. Exits non-zero unless every shard ends at the latest version (with
    /// --dry-run: unless every shard could be migrated).
    #[command(
        after_help = "Example: shardlite schema migrate -c \"Data Source=master.db\" migrations\n\
                      Two runs at once never apply a migration twice on a shard."
    )]
    Migrate(MigrateArgs),
    /// Show every shard's applied migration versions, schema fingerprint and drift.
    ///
    /// A shard drifts when its versions or fingerprint differ from the majority's; the diff
    /// names the tables, indexes, views and triggers that differ. Exits non-zero when a shard
    /// drifts or cannot be read.
    #[command(after_help = "Example: shardlite schema status -c \"Data Source=master.db\" --json")]
    Status(StatusArgs),
}

/// When to show per-shard progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Progress {
    /// On stderr, when stderr is a terminal.
    Auto,
    /// On stderr, always.
    Always,
    /// Never.
    Never,
}

/// Arguments of `shardlite schema migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The folder of migrations, as for sqlx (`sqlx::migrate!("migrations")`).
    dir: PathBuf,
    /// List what would run on which shard, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Only this shard (repeat for several).
    #[arg(long = "shard", value_name = "SHARD_ID")]
    shards: Vec<String>,
    /// Per-shard progress lines on stderr.
    #[arg(long, value_enum, default_value_t = Progress::Auto)]
    progress: Progress,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite schema status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// Runs a `schema` subcommand.
pub async fn run(command: &SchemaCommand) -> Result<()> {
    match command {
        SchemaCommand::Migrate(args) => migrate(args).await,
        SchemaCommand::Status(args) => status(args).await,
    }
}

async fn admin(connection: &ConnectionArgs) -> Result<Arc<dyn ShardAdmin>> {
    connection::open(connection, None).await?.admin().cloned()
}

fn steps(steps: &[SchemaStep]) -> String {
    steps
        .iter()
        .map(|s| s.version.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn version(version: Option<i64>) -> String {
    version.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// One line per shard outcome, for progress and the plain summary.
fn describe(outcome: &ShardSchemaOutcome) -> String {
    match outcome.state {
        SchemaMigrationState::UpToDate => format!("up to date at version {}", version(outcome.version_after)),
        SchemaMigrationState::Migrated => format!(
            "migrated {} -> {} (applied {})",
            version(outcome.version_before),
            version(outcome.version_after),
            steps(&outcome.applied)
        ),
        SchemaMigrationState::WouldMigrate => format!(
            "would apply {} (now at version {})",
            steps(&outcome.pending),
            version(outcome.version_before)
        ),
        SchemaMigrationState::Failed => format!(
            "FAILED{}: {}",
            outcome
                .failed_version
                .map_or_else(String::new, |v| format!(" at migration {v}")),
            outcome.error.as_deref().unwrap_or("unknown error")
        ),
    }
}

async fn migrate(args: &MigrateArgs) -> Result<()> {
    let migrations = read_migration_dir(&args.dir)?;
    if migrations.is_empty() {
        return Err(Error::invalid_argument(
            "migration folder",
            format!("{} holds no <VERSION>_<DESCRIPTION>.sql files", args.dir.display()),
        ));
    }
    let admin = admin(&args.connection).await?;
    let request = SchemaMigrationRequest::new(migrations).dry_run(args.dry_run);
    let progress = match args.progress {
        Progress::Auto => std::io::stderr().is_terminal(),
        Progress::Always => true,
        Progress::Never => false,
    };
    let report = if progress {
        migrate_with_progress(&*admin, request.on_shards(args.shards.iter().cloned())).await?
    } else {
        admin
            .migrate_schema(&request.on_shards(args.shards.iter().cloned()))
            .await?
    };
    if args.output.json {
        print_json(&report)?;
    } else {
        print_report(&report);
    }
    let behind: Vec<&str> = report
        .shards
        .iter()
        .filter(|s| s.state == SchemaMigrationState::Failed || (!args.dry_run && !s.at_target()))
        .map(|s| s.shard_id.as_str())
        .collect();
    if behind.is_empty() {
        return Ok(());
    }
    Err(Error::invalid_argument(
        "migration run",
        format!(
            "{} shard(s) are not at version {}: {}; fix them and run the same command again (shards at the \
             target are skipped)",
            behind.len(),
            version(report.target_version),
            behind.join(", ")
        ),
    ))
}

/// Migrates shard by shard (all at once), printing a line on stderr as each starts and ends.
async fn migrate_with_progress(
    admin: &dyn ShardAdmin,
    request: SchemaMigrationRequest,
) -> Result<SchemaMigrationReport> {
    let mut shards: Vec<String> = request.shard_ids.clone();
    if shards.is_empty() {
        shards = admin
            .shard_map()
            .await?
            .shards
            .into_iter()
            .filter(|s| s.enabled)
            .map(|s| s.shard_id)
            .collect();
    }
    let target = request.migrations.iter().map(|m| m.version).max();
    let mut running: FuturesUnordered<_> = shards
        .iter()
        .enumerate()
        .map(|(order, shard)| {
            eprintln!("{shard}: {}", if request.dry_run { "checking" } else { "migrating" });
            let one = request.clone().on_shards([shard.clone()]);
            async move { (order, shard, admin.migrate_schema(&one).await) }
        })
        .collect();
    let mut outcomes: Vec<Option<ShardSchemaOutcome>> = vec![None; shards.len()];
    while let Some((order, shard, result)) = running.next().await {
        // A refused set is refused for every shard alike: stop at the first refusal.
        let mut report = result?;
        let Some(outcome) = report.shards.pop() else {
            continue;
        };
        eprintln!("{shard}: {}", describe(&outcome));
        outcomes[order] = Some(outcome);
    }
    Ok(SchemaMigrationReport {
        target_version: target,
        dry_run: request.dry_run,
        shards: outcomes.into_iter().flatten().collect(),
    })
}

fn print_report(report: &SchemaMigrationReport) {
    let mut out = table(vec![
        "shard".into(),
        "state".into(),
        "before".into(),
        "after".into(),
        "applied".into(),
        "pending".into(),
        "error".into(),
    ]);
    for shard in &report.shards {
        let state = match shard.state {
            SchemaMigrationState::UpToDate => "up to date",
            SchemaMigrationState::Migrated => "migrated",
            SchemaMigrationState::WouldMigrate => "would migrate",
            SchemaMigrationState::Failed => "FAILED",
        };
        out.add_row(vec![
            shard.shard_id.clone(),
            state.to_owned(),
            version(shard.version_before),
            version(shard.version_after),
            steps(&shard.applied),
            steps(&shard.pending),
            shard.error.clone().unwrap_or_default(),
        ]);
    }
    println!("{out}");
    let at_target = report.shards.iter().filter(|s| s.at_target()).count();
    println!(
        "{at_target} of {} shard(s) at target version {}{}",
        report.shards.len(),
        version(report.target_version),
        if report.dry_run {
            " (dry run: nothing changed)"
        } else {
            ""
        }
    );
}

async fn status(args: &StatusArgs) -> Result<()> {
    let report = admin(&args.connection).await?.schema_status().await?;
    if args.output.json {
        print_json(&report)?;
    } else {
        print_status(&report);
    }
    let drifted: Vec<&str> = report.drifted().map(|s| s.shard_id.as_str()).collect();
    if drifted.is_empty() {
        return Ok(());
    }
    Err(Error::invalid_argument(
        "schema",
        format!(
            "{} shard(s) drift from the majority: {}",
            drifted.len(),
            drifted.join(", ")
        ),
    ))
}

fn print_status(report: &SchemaStatusReport) {
    let mut out = table(vec![
        "shard".into(),
        "versions".into(),
        "fingerprint".into(),
        "drift".into(),
        "differences".into(),
    ]);
    for shard in &report.shards {
        let mut notes: Vec<String> = Vec::new();
        if !shard.missing_versions.is_empty() {
            notes.push(format!("missing versions {:?}", shard.missing_versions));
        }
        if !shard.extra_versions.is_empty() {
            notes.push(format!("extra versions {:?}", shard.extra_versions));
        }
        if let Some(dirty) = shard.dirty_version {
            notes.push(format!("version {dirty} dirty"));
        }
        for diff in &shard.differences {
            let change = match diff.change {
                SchemaChange::Missing => "missing",
                SchemaChange::Extra => "extra",
                SchemaChange::Different => "differs",
            };
            notes.push(format!("{} {} {change}", diff.object_type, diff.name));
        }
        if let Some(error) = &shard.error {
            notes.push(format!("error: {error}"));
        }
        let versions = shard
            .applied_versions
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        out.add_row(vec![
            shard.shard_id.clone(),
            versions,
            shard
                .fingerprint
                .as_deref()
                .map_or_else(String::new, |f| f.chars().take(12).collect()),
            if shard.drift {
                "DRIFT".to_owned()
            } else {
                "ok".to_owned()
            },
            notes.join("; "),
        ]);
    }
    println!("{out}");
    let drifted = report.drifted().count();
    println!(
        "{} shard(s), {drifted} drifting from the majority (versions [{}])",
        report.shards.len(),
        report
            .majority_versions
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
}
