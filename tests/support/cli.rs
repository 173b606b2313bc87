//! Running the built `shardlite` binary from tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use shardlite::map::ShardingOptions;

/// The `shardlite` binary, which `cargo test` builds next to the test binaries (the path
/// `CARGO_BIN_EXE_shardlite` names; looked up here so one definition serves every binary).
pub fn binary() -> PathBuf {
    super::built_binary("", "shardlite")
}

/// Runs `shardlite` with `args` (and no connection string from the environment).
pub fn shardlite(args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .env_remove("SHARDLITE_CONNECTION")
        .output()
        .unwrap_or_else(|e| panic!("cannot run shardlite {args:?}: {e}"))
}

/// What a run printed on stdout.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What a run printed on stderr.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// [`super::tenants_options`] seeded through `shardlite seed` (see [`seeded_with`]).
pub fn seeded(dir: &Path) -> String {
    seeded_with(dir, &super::tenants_options(dir))
}

/// Writes `map` as `dir/map.json`, seeds `dir/master.db` with it through `shardlite seed`, and
/// returns the master's connection string.
pub fn seeded_with(dir: &Path, map: &ShardingOptions) -> String {
    let map_file = dir.join("map.json");
    std::fs::write(&map_file, serde_json::to_string(map).expect("map as JSON")).expect("write the map");
    let master = dir.join("master.db");
    let out = shardlite(&[
        "seed",
        "--master",
        master.to_str().expect("utf-8 temp path"),
        "--map",
        map_file.to_str().expect("utf-8 temp path"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    format!("Data Source={}", master.display())
}

/// What a run printed on stdout, as JSON; anything else fails the test showing both streams.
pub fn json_of(out: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|_| panic!("not JSON: {}\n{}", stdout(out), stderr(out)))
}
