//! `shardlite host shards|create-shard -c CONN`: a data host's shard files (a daemon started with
//! `serve --shard-dir DIR`).
//!
//! `shards` prints how many shard files the host has and how many are open, and one page of
//! their ids; `create-shard ID...` creates the files of new shards (idempotent), which a data
//! request never does: create a shard's file before a map names it with `remoteShardId`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use clap::{Args, Subcommand};

use super::connection::ConnectionArgs;
use super::data::{OutputArgs, print_json, table};
use crate::data::{HostAdmin, HostShardQuery, MAX_HOST_SHARD_PAGE};
use crate::error::{Error, Result};
use crate::map::{ShardMap, ShardTarget, Transport};
use crate::options::ConnectionOptions;
use crate::transport::RemoteOptions;

/// The `host` subcommands.
#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// Count the host's shard files (and the open ones) and list a page of their ids.
    #[command(after_help = "Example: shardlite host shards -c \"Endpoint=http://10.0.0.5:61818;Transport=Http\"")]
    Shards(ShardsArgs),
    /// Create shard files on the host (existing ones are left as they are).
    #[command(
        after_help = "Example: shardlite host create-shard -c \"Endpoint=http://10.0.0.5:61818;Transport=Grpc\" orders-1 orders-2"
    )]
    CreateShard(CreateShardArgs),
}

/// Arguments of `shardlite host shards`.
#[derive(Debug, Args)]
pub struct ShardsArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// Skip this many shard ids (in byte order).
    #[arg(long, value_name = "N", default_value_t = 0)]
    offset: u64,
    /// List at most this many ids (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = HostShardQuery::DEFAULT_LIMIT,
        value_parser = clap::value_parser!(u32).range(1..=i64::try_from(MAX_HOST_SHARD_PAGE).unwrap_or(1000)))]
    limit: u32,
    #[command(flatten)]
    output: OutputArgs,
}

/// Arguments of `shardlite host create-shard`.
#[derive(Debug, Args)]
pub struct CreateShardArgs {
    #[command(flatten)]
    connection: ConnectionArgs,
    /// The shard ids (ASCII letters, digits, `_`, `-`, `.`; not starting with `.`).
    #[arg(required = true, value_name = "ID")]
    shard_ids: Vec<String>,
    #[command(flatten)]
    output: OutputArgs,
}

/// Runs a `host` subcommand.
pub async fn run(command: &HostCommand) -> Result<()> {
    match command {
        HostCommand::Shards(args) => {
            let host = open(&args.connection)?;
            let query = HostShardQuery {
                offset: args.offset,
                limit: Some(args.limit),
            };
            let page = host.list_host_shards(&query).await?;
            if args.output.json {
                return print_json(&page);
            }
            println!(
                "{} shard file(s), {} open (at most {} at once)",
                page.shard_count, page.open_shards, page.max_open_shards
            );
            if !page.shard_ids.is_empty() {
                let mut out = table(vec!["shard".to_owned()]);
                for id in &page.shard_ids {
                    out.add_row(vec![id.clone()]);
                }
                println!("{out}");
            }
            if let Some(next) = page.next_offset {
                println!("more: --offset {next}");
            }
            Ok(())
        }
        HostCommand::CreateShard(args) => {
            let host = open(&args.connection)?;
            let mut created = Vec::new();
            for id in &args.shard_ids {
                created.push(host.create_host_shard(id).await?);
            }
            if args.output.json {
                return print_json(&created);
            }
            for shard in &created {
                let what = if shard.created { "created" } else { "exists already" };
                println!("{}: {what}", shard.shard_id);
            }
            Ok(())
        }
    }
}

/// Creates, on its data host, the file of every shard of `map` that names one (`remoteShardId`),
/// with the shard's API key; files that exist are left as they are. Stops at the first host that
/// refuses or cannot be reached, naming the shard and the endpoint. Returns how many files were
/// created.
pub(super) async fn create_map_host_shards(map: &ShardMap) -> Result<usize> {
    let mut created = 0;
    for shard in map.shards() {
        let ShardTarget::Endpoint {
            endpoint,
            transport,
            remote_shard_id: Some(remote_id),
        } = &shard.target
        else {
            continue;
        };
        let mut options = RemoteOptions::new(endpoint.clone());
        if let Some(key) = &shard.api_key {
            options = options.with_api_key(key.expose());
        }
        if let Some(header) = &shard.api_key_header_name {
            options = options.with_api_key_header(header.clone());
        }
        let failed = |err: Error| {
            Error::invalid_argument(
                "--create-host-shards",
                format!("shard '{}' ('{remote_id}' on {endpoint}): {err}", shard.id),
            )
        };
        let answer = client(options, Some(*transport))
            .map_err(failed)?
            .create_host_shard(remote_id)
            .await
            .map_err(failed)?;
        let what = if answer.created { "created" } else { "exists already" };
        println!("shard '{}': file '{remote_id}' on {endpoint} {what}", shard.id);
        created += usize::from(answer.created);
    }
    Ok(created)
}

/// Checks that every data-host shard of `map` (`remoteShardId`) has its file on its host, so
/// that a map naming a file that does not exist is refused at `seed` rather than found unhealthy
/// later. A host that cannot be reached is reported on stderr and not held against the map
/// (hosts may start after the map is stored).
pub(super) async fn check_map_host_shards(map: &ShardMap) -> Result<()> {
    let mut known: HashMap<String, Option<HashSet<String>>> = HashMap::new();
    let mut missing = Vec::new();
    for shard in map.shards() {
        let ShardTarget::Endpoint {
            endpoint,
            transport,
            remote_shard_id: Some(remote_id),
        } = &shard.target
        else {
            continue;
        };
        if !known.contains_key(endpoint) {
            let mut options = RemoteOptions::new(endpoint.clone());
            if let Some(key) = &shard.api_key {
                options = options.with_api_key(key.expose());
            }
            if let Some(header) = &shard.api_key_header_name {
                options = options.with_api_key_header(header.clone());
            }
            let ids = match client(options, Some(*transport)) {
                Ok(host) => every_host_shard(host.as_ref()).await,
                Err(err) => Err(err),
            };
            let ids = ids
                .map_err(|err| eprintln!("warning: could not list the shard files of the data host {endpoint}: {err}"))
                .ok();
            known.insert(endpoint.clone(), ids);
        }
        if let Some(Some(ids)) = known.get(endpoint)
            && !ids.contains(remote_id)
        {
            missing.push(format!("shard '{}' ('{remote_id}' on {endpoint})", shard.id));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::invalid_argument(
        "--map",
        format!(
            "the data host has no file for {}: create them with `shardlite seed ... --create-host-shards` \
             (or `shardlite host create-shard -c 'Endpoint=...' ID`), or fix 'remoteShardId'",
            missing.join(", ")
        ),
    ))
}

/// Every shard id of a data host, a page at a time.
async fn every_host_shard(host: &dyn HostAdmin) -> Result<HashSet<String>> {
    let mut ids = HashSet::new();
    let mut offset = 0;
    loop {
        let query = HostShardQuery {
            offset,
            limit: u32::try_from(MAX_HOST_SHARD_PAGE).ok(),
        };
        let page = host.list_host_shards(&query).await?;
        ids.extend(page.shard_ids);
        match page.next_offset {
            Some(next) if next > offset => offset = next,
            _ => return Ok(ids),
        }
    }
}

/// The remote client a connection string names; a data host is only reached over a daemon.
fn open(args: &ConnectionArgs) -> Result<Arc<dyn HostAdmin>> {
    let options = ConnectionOptions::parse(&args.connection)?;
    let remote = RemoteOptions::from_connection_options(&options).map_err(|_| {
        Error::invalid_argument(
            "--connection",
            "host commands talk to a data host's daemon: give 'Endpoint=http://HOST:PORT;Transport=Http' (or Grpc)",
        )
    })?;
    client(remote, options.transport())
}

/// A client of the daemon `remote` names, over `transport`.
fn client(remote: RemoteOptions, transport: Option<Transport>) -> Result<Arc<dyn HostAdmin>> {
    match transport {
        #[cfg(feature = "grpc")]
        Some(Transport::Grpc) => Ok(Arc::new(crate::transport::grpc::GrpcClient::new(remote)?)),
        #[cfg(feature = "http")]
        Some(Transport::Http) => Ok(Arc::new(crate::transport::http::HttpClient::new(remote)?)),
        other => Err(Error::invalid_argument(
            "--connection",
            format!(
                "transport {} is not available in this build (it needs the matching feature)",
                other.map_or("(none)", Transport::as_str)
            ),
        )),
    }
}
