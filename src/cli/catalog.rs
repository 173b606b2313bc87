//! `shardlite catalog show|validate|apply|activate`: look at the master catalog and change the
//! map in three steps, on a local master or through a daemon; `export|import`: copy a catalog
//! between a master file and etcd.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::connection::{self, ConnectionArgs};
use super::data::{OutputArgs, print_json, table};
use super::hint::Caller;
use crate::catalog::{Catalog, CatalogExport, CatalogLocation};
use crate::data::{
    ActivationRequest, Audit, CatalogState, CatalogUpdateRequest, CatalogValidation, IssueSeverity, MapProposal,
    ShardAdmin, ShardChangeKind,
};
use crate::error::{Error, Result};
use crate::map::{MapPatch, ShardingOptions};

/// The `catalog` subcommands.
#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Show the active map version, the pending map (if any) and the catalog history.
    #[command(after_help = "Example: shardlite catalog show -c \"Data Source=master.db\"")]
    Show(ShowArgs),
    /// Check a proposed map against the catalog and show what it would change; changes nothing.
    ///
    /// Exits non-zero when the map would be refused.
    #[command(after_help = "Example: shardlite catalog validate -c \"Data Source=master.db\" --map map-v2.json")]
    Validate(ValidateArgs),
    /// Validate a proposed map and store it as the pending map; routing changes on activation.
    ///
    /// The write is compare-and-set on --expected-version. Exits non-zero when the map is refused
    /// or the catalog changed since --expected-version.
    #[command(
        after_help = "Example: shardlite catalog apply -c \"Data Source=master.db\" --map map-v2.json --expected-version 1"
    )]
    Apply(UpdateArgs),
    /// Make the pending map active without a restart.
    ///
    /// Exits non-zero when the pending map is not --expected-version.
    #[command(after_help = "Example: shardlite catalog activate -c \"Data Source=master.db\" --expected-version 2")]
    Activate(ActivateArgs),
    /// Write everything a catalog holds (maps, history, migrations) as one JSON document.
    #[command(after_help = "Example: shardlite catalog export -c \"Data Source=data/master.db\" --out catalog.json")]
    Export(ExportArgs),
    /// Copy an exported catalog into a catalog that holds no map yet (a master file or etcd).
    #[command(after_help = "Example: shardlite catalog import --master etcd://127.0.0.1:2379/shop --from catalog.json")]
    Import(ImportArgs),
}

/// Which catalog `export` and `import` read or write: `--master PATH`, or `-c` with a connection
/// string's `Data Source`.
#[derive(Debug, Args)]
pub struct CatalogArgs {
    /// The catalog: a master file, or etcd://HOST:PORT[,HOST:PORT…]/PREFIX.
    #[arg(long, required_unless_present = "connection", conflicts_with = "connection")]
    master: Option<PathBuf>,
    /// The catalog as a connection string: `Data Source=master.db` or
    /// `Data Source=etcd://HOST:PORT/PREFIX`. Not a daemon's `Endpoint`: an export holds the maps'
    /// connection strings and API keys, which a daemon never sends.
    #[arg(long, short = 'c')]
    connection: Option<String>,
}

impl CatalogArgs {
    /// The catalog's location, from `--master` or the connection string's `Data Source`.
    fn location(&self) -> Result<PathBuf> {
        if let Some(master) = &self.master {
            return Ok(master.clone());
        }
        let connection = self.connection.as_deref().unwrap_or_default();
        let options = crate::options::ConnectionOptions::parse(connection)?;
        match options.data_source() {
            Some(source) => Ok(PathBuf::from(source)),
            None => Err(Error::invalid_argument(
                "--connection",
                "catalog export and import work on the catalog itself, not through a daemon (an export holds \
                 the maps' connection strings and API keys, which a daemon never sends): give the daemon's \
                 master, -c 'Data Source=PATH' or -c 'Data Source=etcd://HOST:PORT/PREFIX', on a host that \
                 reaches it",
            )),
        }
    }
}

/// Arguments of `shardlite catalog export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    catalog: CatalogArgs,
    /// Where to write the document (default: standard output).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Arguments of `shardlite catalog import`. The catalog to fill must hold no map yet.
#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    catalog: CatalogArgs,
    /// The document `catalog export` wrote.
    #[arg(long)]
    from: PathBuf,
}

/// Arguments of `shardlite catalog show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite catalog validate` and `shardlite catalog apply`.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The proposed map (JSON, camelCase, as for `seed`), with a higher mapVersion.
    #[arg(long, required_unless_present = "patch", conflicts_with = "patch")]
    map: Option<PathBuf>,
    /// In place of `--map`: an RFC 7386 JSON Merge Patch of the newest map (with its new
    /// mapVersion), e.g. `{"mapVersion": 3, "exactKeyPins": {"tenant-42": "s1"}}`; `shards` may
    /// be an object keyed by shard id.
    #[arg(long)]
    patch: Option<PathBuf>,
    /// The newest map version the catalog should hold (the pending map's, else the active map's);
    /// refused when someone else changed the catalog since.
    #[arg(long)]
    expected_version: Option<u64>,
    /// Accept buckets or pins changing owner without a migration. Their data does not move:
    /// migrate it first.
    #[arg(long)]
    ack_ownership_change: bool,
    /// Who makes the change, for the history.
    #[arg(long)]
    operator: Option<String>,
    /// Why, for the history.
    #[arg(long)]
    comment: Option<String>,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite catalog validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    update: UpdateArgs,
    /// Check the whole proposed map, not only what the change touches (a change of pins alone
    /// is otherwise checked by the pins it changes). Runs on the catalog itself: needs
    /// `-c "Data Source=MASTER"` (a master file or `etcd://…`), not a daemon.
    #[arg(long)]
    full: bool,
}

/// Arguments of `shardlite catalog activate`.
#[derive(Debug, Args)]
pub struct ActivateArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The version of the pending map to activate.
    #[arg(long)]
    expected_version: u64,
    /// Who activates it, for the history.
    #[arg(long)]
    operator: Option<String>,
    /// Why, for the history.
    #[arg(long)]
    comment: Option<String>,
    #[command(flatten)]
    output: OutputArgs,
}

/// Runs a `catalog` subcommand.
pub async fn run(command: &CatalogCommand) -> Result<()> {
    match command {
        CatalogCommand::Show(args) => show(args).await,
        CatalogCommand::Validate(args) => validate(args).await,
        CatalogCommand::Apply(args) => apply(args).await,
        CatalogCommand::Activate(args) => activate(args).await,
        CatalogCommand::Export(args) => export(args).await,
        CatalogCommand::Import(args) => import(args).await,
    }
}

async fn export(args: &ExportArgs) -> Result<()> {
    let master = args.catalog.location()?;
    if let CatalogLocation::File(path) = CatalogLocation::of_path(&master)?
        && !path.exists()
    {
        let name = if args.catalog.master.is_some() {
            "--master"
        } else {
            "--connection"
        };
        return Err(Error::invalid_argument(
            name,
            format!("'{}' does not exist", path.display()),
        ));
    }
    let export = Catalog::open(&master).await?.export().await?;
    let text = serde_json::to_string_pretty(&export).map_err(|err| Error::Catalog {
        reason: format!("the export could not be encoded: {err}"),
    })?;
    match &args.out {
        Some(path) => tokio::fs::write(path, format!("{text}\n"))
            .await
            .map_err(|source| Error::Io {
                what: format!("export file '{}'", path.display()),
                source,
            })?,
        None => println!("{text}"),
    }
    Ok(())
}

async fn import(args: &ImportArgs) -> Result<()> {
    let text = tokio::fs::read_to_string(&args.from)
        .await
        .map_err(|source| Error::Io {
            what: format!("export file '{}'", args.from.display()),
            source,
        })?;
    let export: CatalogExport = serde_json::from_str(&text).map_err(|err| {
        Error::invalid_argument(
            "--from",
            format!("'{}' is not a catalog export: {err}", args.from.display()),
        )
    })?;
    let catalog = Catalog::open(&args.catalog.location()?).await?;
    catalog.import(&export).await?;
    println!(
        "imported {} into {}: {} history entr{}, {} migration(s)",
        args.from.display(),
        catalog.location(),
        export.history.len(),
        if export.history.len() == 1 { "y" } else { "ies" },
        export.migrations.len()
    );
    Ok(())
}

async fn admin(connection: &ConnectionArgs) -> Result<std::sync::Arc<dyn ShardAdmin>> {
    connection::open(connection, None).await?.admin().cloned()
}

async fn show(args: &ShowArgs) -> Result<()> {
    let state = admin(&args.connection).await?.catalog_state().await?;
    if args.output.json {
        return print_json(&state);
    }
    print_state(&state);
    Ok(())
}

/// How many shards a snapshot's map has, listed or (for a large map) counted.
fn shard_count(map: &crate::map::ShardMapSnapshot) -> u64 {
    map.summary
        .as_ref()
        .map_or(u64::try_from(map.shards.len()).unwrap_or(u64::MAX), |summary| {
            summary.shard_count
        })
}

fn print_state(state: &CatalogState) {
    let active = &state.active_map;
    println!(
        "active map: keyspace '{}', version {}, {} shard(s), {} virtual buckets",
        active.keyspace,
        active.map_version,
        shard_count(active),
        active.virtual_bucket_count
    );
    match &state.pending_map {
        Some(pending) => println!(
            "pending map: version {}, {} shard(s) (activate with --expected-version {})",
            pending.map_version,
            shard_count(pending),
            pending.map_version
        ),
        None => println!("pending map: none"),
    }
    if state.history.is_empty() {
        println!("history: empty");
        return;
    }
    let mut history = table(vec![
        "applied (UTC)".into(),
        "version".into(),
        "operator".into(),
        "comment".into(),
        "ownership change without migration".into(),
    ]);
    for entry in &state.history {
        history.add_row(vec![
            entry.applied_utc.clone(),
            entry.map_version.to_string(),
            entry.audit.operator.clone().unwrap_or_default(),
            entry.audit.comment.clone().unwrap_or_default(),
            if entry.metadata_only_ownership_change {
                "yes"
            } else {
                ""
            }
            .to_owned(),
        ]);
    }
    println!("{history}");
}

async fn update_request(args: &UpdateArgs) -> Result<CatalogUpdateRequest> {
    let (path, what) = match (&args.map, &args.patch) {
        (Some(map), _) => (map, "map file"),
        (None, Some(patch)) => (patch, "patch file"),
        (None, None) => return Err(Error::invalid_argument("--map", "give --map FILE or --patch FILE")),
    };
    let json = tokio::fs::read_to_string(path).await.map_err(|source| Error::Io {
        what: format!("{what} '{}'", path.display()),
        source,
    })?;
    let map = match &args.map {
        Some(_) => MapProposal::Map(ShardingOptions::from_json(&json)?),
        None => MapProposal::Patch(MapPatch::from_json(&json)?),
    };
    Ok(CatalogUpdateRequest {
        map,
        expected_current_map_version: args.expected_version,
        allow_ownership_change: args.ack_ownership_change,
        audit: Audit::new(args.operator.clone(), args.comment.clone()),
    })
}

async fn validate(args: &ValidateArgs) -> Result<()> {
    let (full, args) = (args.full, &args.update);
    let request = update_request(args).await?;
    let validation = if full {
        let options = crate::options::ConnectionOptions::parse(&args.connection.connection)?;
        let Some(master) = options.data_source() else {
            return Err(Error::invalid_argument(
                "--full",
                "a daemon checks what a change touches; run the full check on the catalog itself \
                 (-c \"Data Source=MASTER\")",
            ));
        };
        connection::open(&args.connection, None).await?.admin()?;
        Catalog::open(master).await?.validate_update_full(&request).await?
    } else {
        admin(&args.connection).await?.validate_catalog_update(&request).await?
    };
    if args.output.json {
        print_json(&validation)?;
    } else {
        print_validation(&validation);
    }
    if validation.valid {
        Ok(())
    } else {
        Err(refusal(&validation))
    }
}

async fn apply(args: &UpdateArgs) -> Result<()> {
    let request = update_request(args).await?;
    let result = admin(&args.connection).await?.apply_catalog_update(&request).await?;
    if args.output.json {
        print_json(&result)?;
    } else {
        print_validation(&result.validation);
        if let Some(version) = result.pending_map_version.filter(|_| result.applied) {
            let next = Caller::new(Some(&args.connection.connection))
                .command("catalog activate", &format!("--expected-version {version}"));
            println!("applied: map version {version} is the pending map; `{next}` makes it active");
        }
    }
    if result.applied {
        Ok(())
    } else {
        Err(refusal(&result.validation))
    }
}

async fn activate(args: &ActivateArgs) -> Result<()> {
    let request =
        ActivationRequest::new(args.expected_version).audit(Audit::new(args.operator.clone(), args.comment.clone()));
    let result = admin(&args.connection).await?.activate_pending_map(&request).await?;
    if args.output.json {
        return print_json(&result);
    }
    println!(
        "map version {} is active (was {})",
        result.active_map_version, result.previous_map_version
    );
    if !result.affected_shards.is_empty() {
        println!(
            "ownership changed on shard(s) {}; {} open transaction(s) there were rolled back",
            result.affected_shards.join(", "),
            result.rolled_back_transactions
        );
    }
    Ok(())
}

/// The error that makes a refused map exit non-zero, naming its error issues.
fn refusal(validation: &CatalogValidation) -> Error {
    Error::invalid_argument(
        "--map",
        format!("the catalog refuses it: {}", validation.error_summary()),
    )
}

/// The issues, then a diff against the active map: bucket ranges and pins that change owner,
/// and shards added, removed, disabled or enabled.
fn print_validation(validation: &CatalogValidation) {
    let proposed = validation.preview.as_ref().map_or_else(String::new, |preview| {
        format!(", proposed version {}", preview.map_version)
    });
    println!(
        "{} (current map version {}{proposed})",
        if validation.valid { "valid" } else { "refused" },
        validation.current_map_version
    );
    if !validation.issues.is_empty() {
        let mut issues = table(vec!["severity".into(), "code".into(), "message".into()]);
        for issue in &validation.issues {
            let severity = match issue.severity {
                IssueSeverity::Error => "error",
                IssueSeverity::Warning => "warning",
                IssueSeverity::Info => "info",
            };
            issues.add_row(vec![severity.to_owned(), issue.code.clone(), issue.message.clone()]);
        }
        println!("{issues}");
    }
    if !validation.moved_buckets.is_empty() {
        let mut buckets = table(vec!["buckets changing owner".into(), "from".into(), "to".into()]);
        for moved in &validation.moved_buckets {
            buckets.add_row(vec![
                format!("[{}, {})", moved.0, moved.1),
                moved.2.clone(),
                moved.3.clone(),
            ]);
        }
        println!("{buckets}");
    }
    if !validation.moved_pins.is_empty() {
        let mut pins = table(vec!["pinned key changing owner".into(), "from".into(), "to".into()]);
        for moved in &validation.moved_pins {
            pins.add_row(vec![moved.0.clone(), moved.1.clone(), moved.2.clone()]);
        }
        println!("{pins}");
    }
    if !validation.shard_changes.is_empty() {
        let mut shards = table(vec!["shard".into(), "change".into()]);
        for change in &validation.shard_changes {
            let what = match change.change {
                ShardChangeKind::Added => "added",
                ShardChangeKind::Removed => "removed",
                ShardChangeKind::Disabled => "disabled",
                ShardChangeKind::Enabled => "enabled",
            };
            shards.add_row(vec![change.shard_id.clone(), what.to_owned()]);
        }
        println!("{shards}");
    }
    if validation.valid && validation.moved_buckets.is_empty() && validation.moved_pins.is_empty() {
        println!("no bucket or pinned key changes owner");
    }
}
