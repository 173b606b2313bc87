//! The README runs as written: its "First hour" walk-through, and the operator's walk-through of
//! every section after it (from "A shard map" on: every `sh` block, in order, in one shell), are
//! extracted from README.md and run in a temporary folder against the real binary, so changing
//! the README without keeping it working fails here. The flags of `serve` and the `catalog`
//! commands are checked to be documented.
//!
//! The walk-through's `cargo` commands stand for artifacts `cargo test` has already built: in the
//! test shell `cargo install` is a no-op (the `shardlite` under test is first on `PATH`) and
//! `cargo run --example NAME -- ARGS` runs the built example. Its fixed ports are replaced by
//! free ones; nothing else is changed.
#![cfg(all(feature = "cli", feature = "server", feature = "sqlx", feature = "grpc"))]

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const README: &str = include_str!("../../README.md");
const WALKTHROUGH: &str = "## First hour";
const MAP_SECTION: &str = "## A shard map";
/// The ports the README's daemons listen on (the second is the operator walk-through's TLS one).
const README_PORTS: [&str; 2] = ["127.0.0.1:61818", "127.0.0.1:61819"];

/// The README from the section whose heading starts with `heading` to its end.
fn from_section(heading: &str) -> &'static str {
    let start = README
        .find(&format!("\n{heading}"))
        .unwrap_or_else(|| panic!("README has no section '{heading}'"));
    &README[start + 1..]
}

/// The text of the README section whose heading starts with `heading`, up to the next `## `.
fn section(heading: &str) -> &'static str {
    let start = README
        .find(&format!("\n{heading}"))
        .unwrap_or_else(|| panic!("README has no section '{heading}'"));
    let body = &README[start + 1..];
    let end = body[3..].find("\n## ").map_or(body.len(), |i| i + 3);
    &body[..end]
}

/// The fenced blocks of `text` whose info string starts with `lang`.
fn fenced(text: &str, lang: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    // `None` outside a block; `Some(None)` inside a block of another language.
    let mut current: Option<Option<String>> = None;
    for line in text.lines() {
        let fence = line.strip_prefix("```");
        match (&mut current, fence) {
            (None, Some(info)) => {
                let wanted = info.split_whitespace().next() == Some(lang);
                current = Some(wanted.then(String::new));
            }
            (Some(block), Some("")) => {
                blocks.extend(block.take());
                current = None;
            }
            (Some(Some(block)), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (Some(None), _) | (None, None) => {}
        }
    }
    assert!(current.is_none(), "an unclosed ``` block");
    blocks
}

/// Stands in for cargo in the README's shell (see the module docs).
const CARGO_STAND_IN: &str = r#"
cargo() {
  case "${1:-}" in
    install) echo "cargo install: the shardlite under test is on PATH" ;;
    run)
      shift
      local example=""
      while [ $# -gt 0 ]; do
        case "$1" in
          --example) example="$2"; shift 2 ;;
          --) shift; break ;;
          *) shift ;;
        esac
      done
      if [ -z "$example" ]; then
        echo "README test: only 'cargo run --example NAME' runs here" >&2
        return 2
      fi
      "$README_EXAMPLES/$example" "$@" ;;
    *) echo "README test: 'cargo ${1:-}' does not run here" >&2; return 2 ;;
  esac
}
"#;

struct Run {
    success: bool,
    stdout: String,
    stderr: String,
}

/// Runs `blocks` in order in one `bash -euo pipefail` in `dir`, killing everything it started
/// (the daemon too) at the end or after `limit`.
fn run_blocks(dir: &Path, blocks: &[String], limit: Duration) -> Run {
    let binary = Path::new(env!("CARGO_BIN_EXE_shardlite"));
    let examples = crate::support::example_binary("order_history");
    let mut script = String::from("set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n");
    script.push_str(CARGO_STAND_IN);
    for (i, block) in blocks.iter().enumerate() {
        script.push_str(&format!("echo '### README step {}'\n", i + 1));
        script.push_str(block);
    }
    // Each listener stays bound until every port is chosen, so the two differ.
    let listeners: Vec<TcpListener> = README_PORTS
        .iter()
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    for (fixed, listener) in README_PORTS.iter().zip(&listeners) {
        let port = listener.local_addr().expect("its address").to_string();
        script = script.replace(fixed, &port);
    }
    drop(listeners);

    let path = format!(
        "{}:{}",
        binary.parent().expect("binary folder").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let stdout_file = dir.join(".stdout");
    let stderr_file = dir.join(".stderr");
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir)
        .env("PATH", path)
        .env("README_EXAMPLES", examples.parent().expect("examples folder"))
        .env_remove("SHARDLITE_CONNECTION")
        .env_remove("SHARDLITE_API_KEY")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(File::create(&stdout_file).expect("stdout file"))
        .stderr(File::create(&stderr_file).expect("stderr file"))
        .process_group(0)
        .spawn()
        .expect("run bash");
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for bash") {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Whatever happened, nothing the script started outlives the test. The `--` matters: without
    // it procps' kill reads a negative process-group id as signal options.
    let _ = Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.wait();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    Run {
        success: status.is_some_and(|s| s.success()),
        stdout: read(&stdout_file),
        stderr: read(&stderr_file),
    }
}

fn assert_contains_in_order(haystack: &str, needles: &[&str]) {
    let mut rest = haystack;
    for needle in needles {
        let at = rest
            .find(needle)
            .unwrap_or_else(|| panic!("missing '{needle}' (in this order) in:\n{haystack}"));
        rest = &rest[at + needle.len()..];
    }
}

#[test]
fn first_hour_walkthrough_runs_as_written() {
    let blocks = fenced(section(WALKTHROUGH), "sh");
    assert!(blocks.len() >= 6, "the walk-through lost its steps: {blocks:?}");
    let dir = crate::support::temp_dir();
    let run = run_blocks(dir.path(), &blocks, Duration::from_secs(240));
    assert!(
        run.success,
        "the walk-through failed\n--- stdout\n{}\n--- stderr\n{}",
        run.stdout, run.stderr
    );

    assert_contains_in_order(
        &run.stdout,
        &[
            "Files kept in demo",
            // map, status, resolve
            "orders_by_month",
            "shard-3",
            "e4a2b07827a7778f",
            // the admin page
            "<title>shardlite admin</title>",
            // the routed query, the transaction, the sqlx driver in-process and over gRPC
            "SO-202606-1001",
            "csdbshard:1:shard-0:",
            "commit: 204",
            "2026-05: 5 order(s)",
            "2026-05 now has 6 order(s)",
            "2026-05: 6 order(s)",
            "2026-05 now has 7 order(s)",
            // the map change
            "map version 2 is the pending map",
            "map version 2 is active",
            "shard-4",
            "== shard-4",
            // the migration: May moves to shard-4 under map version 3
            "move-may",
            "2026-05",
            "shard-4",
        ],
    );

    // The files say the same: the transaction committed on June's shard, July's order is on the
    // new shard, and May's seven orders (five from the sample, two from sqlx) moved there too,
    // leaving none on shard-1.
    let shards = dir.path().join("demo").join("shards");
    let query = |file: &str, sql: &str| -> String {
        let conn = rusqlite::Connection::open(shards.join(file)).expect("open shard");
        conn.query_row(sql, [], |row| row.get(0)).expect("query shard")
    };
    assert_eq!(
        query(
            "shard-0.db",
            "SELECT status FROM orders WHERE order_number = 'SO-202606-1001'"
        ),
        "shipped"
    );
    assert_eq!(
        query(
            "shard-4.db",
            "SELECT group_concat(order_number) FROM orders WHERE order_month = '2026-07'"
        ),
        "SO-202607-0001"
    );
    assert_eq!(
        query(
            "shard-4.db",
            "SELECT count(*) || ' ' || group_concat(order_number) FROM orders \
             WHERE order_month = '2026-05' AND order_number LIKE '%SQLX%'"
        ),
        "2 SO-202605-SQLX-6,SO-202605-SQLX-7"
    );
    assert_eq!(
        query(
            "shard-4.db",
            "SELECT count(*) || '' FROM orders WHERE order_month = '2026-05'"
        ),
        "7"
    );
    assert_eq!(
        query(
            "shard-1.db",
            "SELECT count(*) || '' FROM orders WHERE order_month = '2026-05'"
        ),
        "0"
    );
}

#[test]
fn shard_map_example_seeds_as_written() {
    let section = section(MAP_SECTION);
    let dir = crate::support::temp_dir();
    let mut blocks = fenced(section, "sh");
    assert!(!blocks.is_empty(), "the map section lost its seed command");
    blocks.push("shardlite map -c 'Data Source=data/master.db'\n".to_owned());
    let run = run_blocks(dir.path(), &blocks, Duration::from_secs(60));
    assert!(
        run.success,
        "seeding the README's map failed\n{}\n{}",
        run.stdout, run.stderr
    );
    for shard in ["shard-0.db", "shard-1.db", "shard-2.db"] {
        assert!(dir.path().join("data").join(shard).exists(), "{shard} was not created");
    }
    assert_contains_in_order(&run.stdout, &["seeded", "shard-0", "shard-1", "shard-2"]);
}

/// Every section after the first hour, as an operator pastes it: every `sh` block from "A shard
/// map" to the end, in order, in one shell, on the files the blocks before made (a map, a daemon
/// with a key, TLS with certificates made by openssl, a key file, a map change over the CLI and
/// REST, schema migrations, data migrations).
#[test]
fn operator_walkthrough_runs_as_written() {
    let blocks = fenced(from_section(MAP_SECTION), "sh");
    assert!(blocks.len() >= 10, "the walk-through lost its steps: {blocks:?}");
    if Command::new("openssl").arg("version").output().is_err() {
        assert!(
            std::env::var_os("SHARDLITE_REQUIRE_OPENSSL").is_none(),
            "openssl is required here (apt-get install openssl)"
        );
        eprintln!("skipped: openssl is not installed (the TLS steps make certificates with it)");
        return;
    }
    let dir = crate::support::temp_dir();
    let run = run_blocks(dir.path(), &blocks, Duration::from_secs(300));
    assert!(
        run.success,
        "the operator walk-through failed\n--- stdout\n{}\n--- stderr\n{}",
        run.stdout, run.stderr
    );
    assert_contains_in_order(
        &run.stdout,
        &[
            "seeded data/master.db",
            // the daemon: a routed count, and a refused key told where the key goes
            "[[3]]",
            "a valid API key is required: send it in the 'X-CSharpDB-Api-Key' header",
            // TLS with a v3 certificate
            "Version: 3",
            "shard-2",
            // the key file: the dashboard reads, and may not write
            "refused: the dashboard's key has no admin scope",
            // the map change, with the next command carrying the connection string
            "`shardlite catalog activate -c \"$SHARDLITE_CONNECTION\" --expected-version 2`",
            "map version 2 is active",
            "\"activeMapVersion\":3",
            // May's orders move to shard-3, then buckets 8..12
            "move-may",
            "shard-3",
        ],
    );
    let shards = dir.path().join("data");
    let count = |file: &str, sql: &str| -> i64 {
        let conn = rusqlite::Connection::open(shards.join(file)).expect("open shard");
        conn.query_row(sql, [], |row| row.get(0)).expect("query shard")
    };
    assert_eq!(
        count(
            "shard-3.db",
            "SELECT count(*) FROM orders WHERE order_month = '2026-05'"
        ),
        3
    );
}

/// Every flag of `serve` is in the README, and so is every `catalog` command in its command table.
#[test]
fn serve_flags_and_catalog_commands_are_documented() {
    let binary = env!("CARGO_BIN_EXE_shardlite");
    let help = Command::new(binary)
        .args(["serve", "--help"])
        .output()
        .expect("serve --help");
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let flags: Vec<&str> = help
        .lines()
        .filter_map(|line| line.trim_start().split_once("--").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).next())
        .filter(|flag| !flag.is_empty())
        .collect();
    assert!(flags.len() > 20, "{help}");
    for flag in flags {
        assert!(
            README.contains(&format!("--{flag}")),
            "`serve --{flag}` is not in the README"
        );
    }
    let table = section("## Command line");
    for command in ["show", "validate", "apply", "activate", "export", "import"] {
        assert!(
            table.contains(command),
            "`catalog {command}` is not in the README's command table"
        );
    }
    assert!(
        !README.contains("the daemon has one key"),
        "the README still says the daemon has one key"
    );
}
