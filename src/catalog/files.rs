//! A map's shard files on disk, seen from its master catalog: where each one is, and the checks
//! that need the master's path and the file system.
//!
//! Relative paths are resolved against the master's folder ([`resolve_data_source`]). Two paths
//! are the same file when their canonical forms match (both files exist) or, failing that, when
//! their absolute, lexically normalised forms match ([`normalize_path`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::map::{MapError, Shard, ShardMap, ShardTarget, normalize_path, resolve_data_source};
use crate::options::ConnectionOptions;

/// The local file of `shard` for the master catalog at `master`: its `dataSource`, or the
/// `Data Source` of its connection string, a relative path resolved against the master's folder.
///
/// `None` for a shard reached through a daemon, and for a connection string that does not parse
/// (opening that shard reports why).
///
/// ```
/// use std::path::Path;
/// use shardlite::catalog::shard_file;
/// use shardlite::map::{ShardDefinition, ShardMap, ShardingOptions};
///
/// let map = ShardMap::new(ShardingOptions {
///     keyspace: "tenants".into(),
///     map_version: 1,
///     virtual_bucket_count: 1,
///     shards: vec![ShardDefinition::local("s0", "s0.db")],
///     bucket_ranges: vec![],
///     exact_key_pins: Default::default(),
///     directories: vec![],
///     directory_entries: vec![],
/// })?;
/// let file = shard_file(Path::new("/srv/tenants/master.db"), &map.shards()[0]);
/// assert_eq!(file.as_deref(), Some(Path::new("/srv/tenants/s0.db")));
/// # Ok::<(), shardlite::Error>(())
/// ```
pub fn shard_file(master: &Path, shard: &Shard) -> Option<PathBuf> {
    match &shard.target {
        ShardTarget::DataSource(path) => Some(resolve_data_source(master, path)),
        ShardTarget::ConnectionString(secret) => {
            let options = ConnectionOptions::parse(secret.expose()).ok()?;
            options.data_source().map(|path| resolve_data_source(master, path))
        }
        ShardTarget::Endpoint { .. } => None,
    }
}

/// Checks the files of `map` against the master catalog at `master`, which need not exist yet:
/// no shard's file is the master itself ([`MapError::ShardIsMasterCatalog`]), and no two shards
/// share a file once relative paths are resolved ([`MapError::DuplicateShardFile`]), whatever the
/// spelling (an absolute path and a relative one, or a path through a symbolic link).
///
/// Opening a master ([`ShardedClient::open`](crate::client::ShardedClient::open)) and seeding one
/// ([`Catalog::seed`](super::Catalog::seed)) run this before they open any shard file.
pub async fn check_shard_files(master: &Path, map: &ShardMap) -> Result<()> {
    let files: Vec<(usize, PathBuf)> = map
        .shards()
        .iter()
        .enumerate()
        .filter_map(|(index, shard)| shard_file(master, shard).map(|file| (index, file)))
        .collect();
    // One blocking task for every path: a map may name ten thousand files.
    let master_path = master.to_path_buf();
    let (master_identity, identities) = tokio::task::spawn_blocking(move || {
        let identities: Vec<(usize, PathBuf, PathBuf)> = files
            .into_iter()
            .map(|(index, file)| (index, identity(&file), file))
            .collect();
        (identity(&master_path), identities)
    })
    .await
    .map_err(|_| crate::Error::Io {
        what: "the shard files of the map".to_owned(),
        source: std::io::Error::other("the task checking them stopped"),
    })?;
    let mut seen: HashMap<&Path, &Shard> = HashMap::with_capacity(identities.len());
    for (index, file_identity, file) in &identities {
        let shard = &map.shards()[*index];
        if *file_identity == master_identity {
            return Err(MapError::ShardIsMasterCatalog {
                shard_id: shard.id.clone(),
                file: file.display().to_string(),
            }
            .into());
        }
        if let Some(first) = seen.insert(file_identity, shard) {
            return Err(MapError::DuplicateShardFile {
                first: first.id.clone(),
                second: shard.id.clone(),
                file: file.display().to_string(),
            }
            .into());
        }
    }
    Ok(())
}

/// What a path is compared by: its canonical form when the file exists, else its absolute,
/// normalised form. A file that exists and one that does not can never be the same, so mixing the
/// two forms is safe.
fn identity(path: &Path) -> PathBuf {
    match std::fs::canonicalize(path) {
        Ok(canonical) => canonical,
        Err(_) => normalize_path(&std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())),
    }
}
