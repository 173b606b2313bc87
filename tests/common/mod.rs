//! Shared fixtures: temp dirs and the reference two-shard `tenants` map.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "server")]
pub mod daemon;
pub mod migrate;
pub mod old_sqlite;

use std::path::{Path, PathBuf};

use shardlite::map::{BucketRange, ShardDefinition, ShardMap, ShardingOptions};

/// A fresh temp dir for one test.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("shardlite-test")
        .tempdir()
        .expect("temp dir")
}

pub fn path_str(path: &Path) -> String {
    path.to_str().expect("utf-8 temp path").to_owned()
}

/// Keyspace `tenants`, version 1, four buckets, s0 owns [0,2), s1 owns [2,4),
/// pins tenant-a -> s0 (its bucket 3 belongs to s1) and tenant-b -> s1 (bucket 0 belongs to s0).
pub fn tenants_options(dir: &Path) -> ShardingOptions {
    ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 4,
        shards: vec![
            ShardDefinition::local("s0", path_str(&dir.join("s0.db"))),
            ShardDefinition::local("s1", path_str(&dir.join("s1.db"))),
        ],
        bucket_ranges: vec![BucketRange::new(0, 2, "s0"), BucketRange::new(2, 4, "s1")],
        exact_key_pins: [
            ("tenant-a".to_owned(), "s0".to_owned()),
            ("tenant-b".to_owned(), "s1".to_owned()),
        ]
        .into(),
    }
}

pub fn tenants_map(dir: &Path) -> ShardMap {
    ShardMap::new(tenants_options(dir)).expect("valid fixture map")
}

/// The seed's four-shard `orders_by_month` map (the examples' own map): its shard files,
/// `shard-0.db` .. `shard-3.db`, are created beside the master it is seeded into.
pub fn orders_options() -> ShardingOptions {
    shardlite::demo::orders_map()
}

pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// The binary of example `name`, which `cargo test` builds next to the test binaries.
pub fn example_binary(name: &str) -> PathBuf {
    // target/<profile>/deps/<test binary> -> target/<profile>/examples/<name>
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("target profile dir");
    let binary = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} missing: run through `cargo test`, which builds examples",
        binary.display()
    );
    binary
}

/// Runs example `name` with `args`, fails the test unless it succeeds, and returns its output.
pub fn run_example(name: &str, args: &[&std::ffi::OsStr]) -> String {
    let output = std::process::Command::new(example_binary(name))
        .args(args)
        .output()
        .expect("run example");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "exit {:?}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Seeds `dir/master.db` with `map` and returns the master's path.
pub async fn seed_master(dir: &Path, map: ShardingOptions) -> PathBuf {
    let master = dir.join("master.db");
    shardlite::catalog::Catalog::open(&master)
        .await
        .expect("open the master")
        .seed(map, false)
        .await
        .expect("seed the master");
    master
}
