//! `shardlite status`: shard health, summarised on large maps.
//!
//! A map of up to [`FULL_TABLE_UP_TO`] shards prints one row per shard, as it always has. A larger
//! one prints counts by state and points at the options that list shards: `--shard ID` for one,
//! `--unhealthy` for the problem shards, `--limit`/`--offset` for a page, `--all` for every row.
//! The exit code is non-zero when an enabled shard's probe failed, so `status` can gate a script.

use clap::Args;

use super::connection::{self, ConnectionArgs};
use super::data::{OutputArgs, print_json, table};
use crate::data::{MAX_STATUS_PAGE, ShardStatus, ShardStatusPage, ShardStatusQuery, ShardStatusSummary};
use crate::error::{Error, Result};

/// Maps with at most this many shards print every row by default.
pub const FULL_TABLE_UP_TO: u32 = 50;

/// Arguments of `shardlite status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// Show this shard only (only it is probed).
    #[arg(long, value_name = "ID", conflicts_with_all = ["unhealthy", "all"])]
    shard: Option<String>,
    /// List only problem shards: enabled shards whose probe failed.
    #[arg(long)]
    unhealthy: bool,
    /// List at most this many shards (1 to 1000).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_STATUS_PAGE)))]
    limit: Option<u32>,
    /// Skip this many shards of the list.
    #[arg(long, value_name = "N")]
    offset: Option<u64>,
    /// List every shard, however many the map has.
    #[arg(long, conflicts_with_all = ["limit", "offset"])]
    all: bool,
    #[command(flatten)]
    output: OutputArgs,
}

impl StatusArgs {
    /// Whether any option asks for a particular list (rather than the default view).
    fn lists(&self) -> bool {
        self.shard.is_some() || self.unhealthy || self.limit.is_some() || self.offset.is_some()
    }
}

/// `shardlite status`.
pub async fn run(args: &StatusArgs) -> Result<()> {
    let opened = connection::open(&args.connection, None).await?;
    let admin = opened.admin()?;
    if args.all || (args.output.json && !args.lists()) {
        // Every row, in the shape `status` has always printed.
        let statuses = admin.shard_status().await?;
        let summary = ShardStatusSummary::of(&statuses);
        if args.output.json {
            print_json(&statuses)?;
        } else {
            print_rows(&statuses);
            print_summary(&summary);
        }
        return healthy(&summary);
    }
    let query = ShardStatusQuery {
        shard_id: args.shard.clone(),
        unhealthy_only: args.unhealthy,
        offset: args.offset.unwrap_or(0),
        limit: Some(args.limit.unwrap_or(FULL_TABLE_UP_TO)),
    };
    let page = admin.shard_status_page(&query).await?;
    if args.output.json {
        print_json(&page)?;
        return healthy(&page.summary);
    }
    let summary = page.summary;
    if !args.lists() && summary.shards > u64::from(FULL_TABLE_UP_TO) {
        print_summary(&summary);
        println!(
            "a large map: `--unhealthy` lists the problem shards, `--shard ID` shows one, \
             `--limit N --offset N` pages through every shard, `--all` lists them all"
        );
        return healthy(&summary);
    }
    if page.shards.is_empty() && args.unhealthy {
        println!("no unhealthy shard: every enabled shard answered its probe");
    } else {
        print_rows(&page.shards);
        print_range(&page);
    }
    print_summary(&summary);
    healthy(&summary)
}

/// Fails when an enabled shard's probe failed, so that the exit code says so.
fn healthy(summary: &ShardStatusSummary) -> Result<()> {
    if summary.unavailable == 0 {
        return Ok(());
    }
    Err(Error::invalid_argument(
        "shard health",
        format!(
            "{} enabled shard(s) failed their probe (the status above says why); `--unhealthy` lists only them",
            summary.unavailable
        ),
    ))
}

fn print_rows(statuses: &[ShardStatus]) {
    let mut out = table(vec![
        "shard".into(),
        "enabled".into(),
        "healthy".into(),
        "role".into(),
        "tables".into(),
        "error".into(),
    ]);
    for shard in statuses {
        out.add_row(vec![
            shard.shard_id.clone(),
            shard.enabled.to_string(),
            shard.healthy.to_string(),
            shard.role.as_str().to_owned(),
            shard
                .info
                .as_ref()
                .map_or_else(String::new, |i| i.table_count.to_string()),
            shard.error.clone().unwrap_or_default(),
        ]);
    }
    println!("{out}");
}

/// Which rows of how many matching ones the page shows, when it is not all of them.
fn print_range(page: &ShardStatusPage) {
    let shown = u64::try_from(page.shards.len()).unwrap_or(u64::MAX);
    if shown == page.total {
        return;
    }
    if shown == 0 {
        println!("no shard at offset {} ({} match)", page.offset, page.total);
    } else {
        let last = page.offset + shown;
        let next = if last < page.total {
            format!(" (--offset {last} for the next page)")
        } else {
            String::new()
        };
        println!("shards {} to {last} of {}{next}", page.offset + 1, page.total);
    }
}

fn print_summary(summary: &ShardStatusSummary) {
    println!(
        "{} shard(s): {} enabled ({} healthy, {} unavailable), {} disabled",
        summary.shards, summary.enabled, summary.healthy, summary.unavailable, summary.disabled
    );
}
