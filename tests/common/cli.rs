//! Running the built `shardlite` binary from tests.

use std::process::{Command, Output};

/// Runs `shardlite` with `args` (and no connection string from the environment).
pub fn shardlite(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shardlite"))
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
