//! `shardlite seed --master PATH --map MAP.json [--replace] [--create-host-shards]`.

use std::path::PathBuf;

use clap::Args;

use crate::catalog::{Catalog, CatalogLocation, check_shard_files};
use crate::error::{Error, Result};
use crate::map::{ShardMap, ShardingOptions};

/// Arguments of `shardlite seed`.
#[derive(Debug, Args)]
pub struct SeedArgs {
    /// The master catalog file to create or update (relative `dataSource` paths in the map are
    /// files in its folder), or a catalog in etcd: `etcd://HOST:PORT[,HOST:PORT…]/PREFIX`
    /// (relative paths are then files in the working directory).
    #[arg(long)]
    master: PathBuf,
    /// The shard map (JSON, camelCase).
    #[arg(long)]
    map: PathBuf,
    /// Replace a different active map (this reroutes keys away from their data).
    #[arg(long)]
    replace: bool,
    /// Create the file of every shard the map names on a data host (`remoteShardId`), on that
    /// host, before storing the map (existing files are left as they are).
    #[arg(long)]
    create_host_shards: bool,
}

pub async fn run(args: &SeedArgs) -> Result<()> {
    let json = tokio::fs::read_to_string(&args.map).await.map_err(|source| Error::Io {
        what: format!("map file '{}'", args.map.display()),
        source,
    })?;
    let options = ShardingOptions::from_json(&json)?;
    // Validate before touching the master, so a broken map leaves no file behind.
    let map = ShardMap::new(options.clone())?;
    let location = CatalogLocation::of_path(&args.master)?;
    check_shard_files(&location.anchor(), &map).await?;
    if args.create_host_shards {
        create_host_shards(&map).await?;
    } else {
        check_host_shards(&map).await?;
    }
    let catalog = Catalog::open(&args.master).await?;
    let map = catalog.seed(options, args.replace).await?;
    println!(
        "seeded {} with keyspace '{}', map version {}, {} shard(s), {} bucket(s)",
        args.master.display(),
        map.keyspace(),
        map.version(),
        map.shards().len(),
        map.bucket_count()
    );
    Ok(())
}

#[cfg(any(feature = "grpc", feature = "http"))]
async fn create_host_shards(map: &ShardMap) -> Result<()> {
    super::host::create_map_host_shards(map).await.map(drop)
}

#[cfg(any(feature = "grpc", feature = "http"))]
async fn check_host_shards(map: &ShardMap) -> Result<()> {
    super::host::check_map_host_shards(map).await
}

/// Without a remote transport a data host cannot be asked; connecting to the map fails later
/// anyway, naming the missing feature.
#[cfg(not(any(feature = "grpc", feature = "http")))]
async fn check_host_shards(_map: &ShardMap) -> Result<()> {
    Ok(())
}

#[cfg(not(any(feature = "grpc", feature = "http")))]
async fn create_host_shards(_map: &ShardMap) -> Result<()> {
    Err(Error::invalid_argument(
        "--create-host-shards",
        "reaching data hosts needs a build with the 'http' or 'grpc' feature",
    ))
}
