//! The data and admin commands: `resolve`, `map`, `sql`, `exec-all`, `read-all`,
//! `query-all`.

use clap::Args;
use comfy_table::Table;

use super::connection::{self, ConnectionArgs, RouteArgs};
use crate::client::{Params, ShardSqlResult, SqlResult, Value};
use crate::error::{Error, Result};

/// Output format shared by the commands.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Print JSON instead of tables.
    #[arg(long)]
    pub(super) json: bool,
}

/// Arguments of `shardlite resolve`.
#[derive(Debug, Args)]
pub struct ResolveArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(flatten)]
    route: RouteArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite map`.
#[derive(Debug, Args)]
pub struct AdminArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite sql`.
#[derive(Debug, Args)]
pub struct SqlArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    #[command(flatten)]
    route: RouteArgs,
    /// Parameters as JSON: an array for `?` placeholders, an object for `:name` ones.
    #[arg(long)]
    params: Option<String>,
    /// The SQL to run on the route's shard.
    sql: String,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite exec-all` and `shardlite read-all`.
#[derive(Debug, Args)]
pub struct FanOutArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The SQL to run on every enabled shard.
    sql: String,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite query-all`.
#[derive(Debug, Args)]
pub struct QueryAllArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// A value for the next `?` placeholder, as JSON (`42`, `"2026-06"`, `null`); text that is
    /// not JSON is taken as text. Repeat for each placeholder.
    #[arg(long = "param", value_name = "V")]
    params: Vec<String>,
    /// One read-only SELECT, answered over every shard as one result.
    sql: String,
    #[command(flatten)]
    output: OutputArgs,
}

/// Prints `value` as pretty JSON on stdout.
pub(super) fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|source| Error::Json {
        what: "command output",
        source,
    })?;
    println!("{text}");
    Ok(())
}

fn cell(value: &Value) -> String {
    match value {
        Value::Null => "NULL".to_owned(),
        Value::Integer(v) => v.to_string(),
        Value::Real(v) => v.to_string(),
        Value::Text(v) => v.clone(),
        Value::Blob(v) => format!("<{} byte blob>", v.len()),
    }
}

/// A table with `header`, in the style every command prints.
pub(super) fn table(header: Vec<String>) -> Table {
    let mut table = Table::new();
    table.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
    table.set_header(header);
    table
}

fn print_result(result: &SqlResult) {
    if result.is_query {
        let mut out = table(result.column_names.clone());
        for row in &result.rows {
            out.add_row(row.iter().map(cell).collect::<Vec<_>>());
        }
        println!("{out}");
        println!("{} row(s)", result.rows.len());
    } else {
        println!("{} row(s) affected", result.rows_affected);
    }
}

/// `shardlite resolve`.
pub async fn resolve(args: &ResolveArgs) -> Result<()> {
    let opened = connection::open(&args.connection, args.route.route()?).await?;
    let route = opened.route.clone().ok_or(Error::RouteRequired)?;
    let resolved = opened.admin()?.resolve_route(&route).await?;
    if args.output.json {
        return print_json(&resolved);
    }
    let mut out = table(vec!["field".into(), "value".into()]);
    for (field, value) in [
        ("keyspace", resolved.keyspace.clone()),
        ("key", resolved.key.clone()),
        ("token", resolved.token.to_string()),
        ("tokenHex", resolved.token_hex.clone()),
        ("bucket", resolved.bucket.to_string()),
        ("shard", resolved.shard_id.clone()),
        ("mapVersion", resolved.map_version.to_string()),
        ("source", format!("{:?}", resolved.source)),
    ] {
        out.add_row(vec![field.to_owned(), value]);
    }
    println!("{out}");
    Ok(())
}

/// `shardlite map`.
pub async fn map(args: &AdminArgs) -> Result<()> {
    let opened = connection::open(&args.connection, None).await?;
    let snapshot = opened.admin()?.shard_map().await?;
    if args.output.json {
        return print_json(&snapshot);
    }
    println!(
        "keyspace '{}', map version {}, {} virtual buckets",
        snapshot.keyspace, snapshot.map_version, snapshot.virtual_bucket_count
    );
    let mut shards = table(vec!["shard".into(), "enabled".into(), "role".into(), "target".into()]);
    for shard in &snapshot.shards {
        let target = shard
            .data_source
            .clone()
            .or_else(|| shard.endpoint.clone())
            .unwrap_or_else(|| "(connection string)".to_owned());
        shards.add_row(vec![
            shard.shard_id.clone(),
            shard.enabled.to_string(),
            shard.role.as_str().to_owned(),
            target,
        ]);
    }
    println!("{shards}");
    let mut ranges = table(vec!["buckets".into(), "shard".into()]);
    for range in &snapshot.bucket_ranges {
        ranges.add_row(vec![
            format!("[{}, {})", range.start_bucket_inclusive, range.end_bucket_exclusive),
            range.shard_id.clone(),
        ]);
    }
    println!("{ranges}");
    if !snapshot.exact_key_pins.is_empty() {
        let mut pins = table(vec!["pinned key".into(), "shard".into()]);
        for (key, shard) in &snapshot.exact_key_pins {
            pins.add_row(vec![key.clone(), shard.clone()]);
        }
        println!("{pins}");
    }
    Ok(())
}

/// `shardlite sql`.
pub async fn sql(args: &SqlArgs) -> Result<()> {
    let params = match &args.params {
        Some(json) => serde_json::from_str::<Params>(json).map_err(|source| Error::Json {
            what: "--params",
            source,
        })?,
        None => Params::none(),
    };
    let opened = connection::open(&args.connection, args.route.route()?).await?;
    let result = opened.data()?.execute_sql(&args.sql, params).await?;
    if args.output.json {
        return print_json(&result);
    }
    print_result(&result);
    Ok(())
}

fn print_fan_out(results: &[ShardSqlResult], json: bool) -> Result<()> {
    if json {
        print_json(&results)?;
    } else {
        for shard in results {
            println!("== {}", shard.shard_id);
            match (&shard.result, &shard.error) {
                (Some(result), _) => print_result(result),
                (None, Some(error)) => println!("error: {error}"),
                (None, None) => {}
            }
        }
    }
    let failed: Vec<&str> = results
        .iter()
        .filter(|r| r.error.is_some())
        .map(|r| r.shard_id.as_str())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid_argument(
            "sql",
            format!("failed on shard(s) {}", failed.join(", ")),
        ))
    }
}

/// `shardlite exec-all`.
pub async fn exec_all(args: &FanOutArgs) -> Result<()> {
    let opened = connection::open(&args.connection, None).await?;
    let results = opened.admin()?.execute_sql_on_all_shards(&args.sql).await?;
    print_fan_out(&results, args.output.json)
}

/// `shardlite read-all`.
pub async fn read_all(args: &FanOutArgs) -> Result<()> {
    let opened = connection::open(&args.connection, None).await?;
    let results = opened.admin()?.execute_read_only_sql_on_all_shards(&args.sql).await?;
    print_fan_out(&results, args.output.json)
}

/// `shardlite query-all`.
pub async fn query_all(args: &QueryAllArgs) -> Result<()> {
    let values = args
        .params
        .iter()
        .map(|text| serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::Text(text.clone())))
        .collect();
    let opened = connection::open(&args.connection, None).await?;
    let result = opened
        .admin()?
        .query_all_shards(&args.sql, Params::Positional(values))
        .await?;
    if args.output.json {
        return print_json(&result);
    }
    print_result(&result);
    Ok(())
}
