//! `shardlite stats heat|suggest`: where routed calls went lately, and a next map that evens
//! the load.
//!
//! Both read the heat of the connection's target: a daemon's (`Endpoint=…`) counts every call
//! it routed; a local master (`Data Source=…`) opened by this command has served none.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::connection::{self, ConnectionArgs};
use super::data::{OutputArgs, print_json, table};
use crate::error::{Error, Result};
use crate::heat::{HeatReport, SuggestionKind, suggest_next_map};
use crate::map::ShardingOptions;

/// The `stats` subcommands.
#[derive(Debug, Subcommand)]
pub enum StatsCommand {
    /// Show the heat: decayed requests and rows by shard (with each one's share), the hottest
    /// buckets and the hottest route keys.
    #[command(after_help = "Example: shardlite stats heat -c \"Endpoint=http://127.0.0.1:61818;Transport=Grpc\"")]
    Heat(HeatArgs),
    /// Print a next map (JSON, for `catalog validate` and `catalog apply`) that evens the load:
    /// a bucket range or a hot key moved from the hottest shard to the coolest.
    ///
    /// What it changes goes to stderr. The map moves ownership only: move the data with
    /// `shardlite migrate`, or apply with --ack-ownership-change when there is none to move.
    #[command(
        after_help = "Example: shardlite stats suggest -c \"Endpoint=http://127.0.0.1:61818;Transport=Grpc\" > next-map.json"
    )]
    Suggest(SuggestArgs),
}

/// Arguments of `shardlite stats heat`.
#[derive(Debug, Args)]
pub struct HeatArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// How many buckets and route keys to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    limit: usize,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite stats suggest`.
#[derive(Debug, Args)]
pub struct SuggestArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The active map's file (JSON, as for `seed`): needed when a shard has a connection string
    /// or an API key, which the daemon never shows, so that the proposal keeps them.
    #[arg(long, value_name = "FILE")]
    map: Option<PathBuf>,
}

/// Runs a `stats` subcommand.
pub async fn run(command: &StatsCommand) -> Result<()> {
    match command {
        StatsCommand::Heat(args) => heat(args).await,
        StatsCommand::Suggest(args) => suggest(args).await,
    }
}

async fn heat(args: &HeatArgs) -> Result<()> {
    let opened = connection::open(&args.connection, None).await?;
    let report = opened.admin()?.shard_heat().await?;
    if opened.is_local() {
        eprintln!("note: a master opened by this command has routed no calls; connect to the daemon for its heat");
    }
    if args.output.json {
        return print_json(&report);
    }
    print_heat(&report, args.limit);
    Ok(())
}

fn print_heat(report: &HeatReport, limit: usize) {
    println!(
        "heat of '{}' (map version {}): {:.1} requests, {:.1} rows, halving every {} s",
        report.keyspace, report.map_version, report.total_requests, report.total_rows, report.half_life_seconds
    );
    let mut shards = table(vec!["shard".into(), "requests".into(), "rows".into(), "share".into()]);
    for shard in &report.shards {
        shards.add_row(vec![
            shard.shard_id.clone(),
            format!("{:.1}", shard.requests),
            format!("{:.1}", shard.rows),
            format!("{:.1}%", shard.share * 100.0),
        ]);
    }
    println!("{shards}");
    if !report.buckets.is_empty() {
        let mut buckets = table(vec!["bucket".into(), "shard".into(), "requests".into(), "rows".into()]);
        for bucket in report.buckets.iter().take(limit) {
            buckets.add_row(vec![
                bucket.bucket.to_string(),
                bucket.shard_id.clone(),
                format!("{:.1}", bucket.requests),
                format!("{:.1}", bucket.rows),
            ]);
        }
        println!("{buckets}");
    }
    if !report.keys.is_empty() {
        let mut keys = table(vec![
            "route key".into(),
            "bucket".into(),
            "shard".into(),
            "requests".into(),
            "rows".into(),
        ]);
        for key in report.keys.iter().take(limit) {
            let shard = if key.pinned {
                format!("{} (pinned)", key.shard_id)
            } else {
                key.shard_id.clone()
            };
            keys.add_row(vec![
                key.key.clone(),
                key.bucket.to_string(),
                shard,
                format!("{:.1}", key.requests),
                format!("{:.1}", key.rows),
            ]);
        }
        println!("{keys}");
    }
    if report.total_requests <= 0.0 {
        println!("no routed calls counted lately");
    }
}

async fn suggest(args: &SuggestArgs) -> Result<()> {
    let base = match &args.map {
        Some(path) => {
            let json = tokio::fs::read_to_string(path).await.map_err(|source| Error::Io {
                what: format!("map file '{}'", path.display()),
                source,
            })?;
            Some(ShardingOptions::from_json(&json)?)
        }
        None => None,
    };
    let opened = connection::open(&args.connection, None).await?;
    let admin = opened.admin()?;
    let active = admin.shard_map().await?;
    let report = admin.shard_heat().await?;
    if opened.is_local() && report.total_requests <= 0.0 {
        return Err(Error::invalid_argument(
            "--connection",
            "a master opened by this command has routed no calls: connect to the daemon that serves it \
             (Endpoint=…) for its heat",
        ));
    }
    let suggestion = suggest_next_map(&report, &active, base.as_ref())?;
    println!("{}", suggestion.map.to_json());
    let version = suggestion.map.map_version;
    eprintln!(
        "suggested map version {version}: {}; the hottest shard's share goes from {:.1}% to {:.1}% for the same load",
        suggestion.kind,
        suggestion.hottest_share_before * 100.0,
        suggestion.hottest_share_after * 100.0
    );
    let (data, moved) = match &suggestion.kind {
        SuggestionKind::MoveBuckets { start, end, from, to } => (
            format!(
                "shardlite migrate buckets -c CONN --from {from} --to {to} --start {start} --end {end} --manifest \
                 MANIFEST --activate"
            ),
            format!("the buckets {start}..{end}"),
        ),
        SuggestionKind::PinKey { key, to, .. } => (
            format!(
                "shardlite migrate key -c CONN --keyspace {} --key '{key}' --to {to} --manifest MANIFEST --activate",
                active.keyspace
            ),
            format!("the route key '{key}'"),
        ),
    };
    // The map changes owners, so `catalog validate` and `catalog apply` accept it only with the
    // acknowledgement; the rows of what moves have to move with it, which only `migrate` does.
    eprintln!(
        "next: check the map with `shardlite catalog validate -c CONN --map next-map.json --ack-ownership-change`. \
         It changes the owner of {moved}, so a data move is needed whenever there are rows in {moved} (the calls \
         counted suggest there are): move them, which also activates the new owner, with `{data}`. Only when there are no \
         rows to move, apply the map as it is with `shardlite catalog apply -c CONN --map next-map.json \
         --ack-ownership-change` and then `shardlite catalog activate -c CONN --expected-version {version}`"
    );
    Ok(())
}
