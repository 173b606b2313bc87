//! `shardlite serve` on a master that does not exist: refused unless `--create` asks for a new,
//! empty database.
#![cfg(all(feature = "cli", feature = "server"))]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::temp_dir;

#[test]
fn serve_refuses_a_missing_master_and_says_how_to_make_one() {
    let dir = temp_dir();
    let master = dir.path().join("typo/master.db");
    let out = Command::new(env!("CARGO_BIN_EXE_shardlite"))
        .args(["serve", "--master"])
        .arg(&master)
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .expect("run shardlite");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "serve should fail: {stderr}");
    for needle in [master.to_str().unwrap(), "does not exist", "shardlite seed", "--create"] {
        assert!(stderr.contains(needle), "stderr should mention {needle:?}: {stderr}");
    }
    assert!(String::from_utf8_lossy(&out.stdout).is_empty(), "nothing listened");
    assert!(!master.exists(), "no file was created");
    assert!(!dir.path().join("typo").exists(), "no folder was created");
}

#[test]
fn serve_with_create_starts_on_a_new_empty_database() {
    let dir = temp_dir();
    let master = dir.path().join("new/master.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardlite"))
        .args(["serve", "--create", "--master"])
        .arg(&master)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run shardlite");
    let stdout = child.stdout.take().expect("piped stdout");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = sender.send(line);
    });
    let line = receiver.recv_timeout(Duration::from_secs(60));
    // Stop the daemon before asserting, so a failure does not leave it running.
    child.kill().expect("stop the daemon");
    child.wait().expect("reap the daemon");
    let line = line.expect("the daemon prints its address");
    assert!(line.starts_with("listening on http://127.0.0.1:"), "{line:?}");
    assert!(master.exists(), "--create made the master file");
}

#[test]
fn serve_refuses_max_open_shards_of_zero_or_above_the_descriptor_limit() {
    let dir = temp_dir();
    let master = dir.path().join("master.db");
    for (value, needle) in [("0", "at least 1"), ("999999999", "descriptor limit")] {
        let out = Command::new(env!("CARGO_BIN_EXE_shardlite"))
            .args([
                "serve",
                "--create",
                "--listen",
                "127.0.0.1:0",
                "--max-open-shards",
                value,
                "--master",
            ])
            .arg(&master)
            .output()
            .expect("run shardlite");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "--max-open-shards {value} should be refused: {stderr}"
        );
        assert!(stderr.contains(needle), "--max-open-shards {value}: {stderr}");
        assert!(String::from_utf8_lossy(&out.stdout).is_empty(), "nothing listened");
    }
}
