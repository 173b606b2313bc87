//! The README and the guide under `docs/` run as written: the README's "First hour"
//! walk-through, and the operator's walk-through of the guide (from "A shard map" on, every `sh`
//! block of every page, the pages in reading order, in one shell), are extracted from the
//! Markdown and run in a temporary folder against the real binary, so changing a page without
//! keeping it working fails here, naming the page and the block. The flags of `serve` and the
//! `catalog` commands are checked to be documented, and every link between the pages to lead to
//! a page and a heading that exist.
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

/// A page of the documentation: its path from the crate's root, and its text.
struct Page {
    path: &'static str,
    text: &'static str,
}

const README: Page = Page {
    path: "README.md",
    text: include_str!("../../README.md"),
};

/// The guide's pages in reading order, which is the order the operator's walk-through runs
/// their `sh` blocks in: a later page's blocks use the files and the daemon an earlier page's
/// made.
const GUIDE: [Page; 8] = [
    Page {
        path: "docs/routing.md",
        text: include_str!("../../docs/routing.md"),
    },
    Page {
        path: "docs/clients.md",
        text: include_str!("../../docs/clients.md"),
    },
    Page {
        path: "docs/daemon.md",
        text: include_str!("../../docs/daemon.md"),
    },
    Page {
        path: "docs/moves.md",
        text: include_str!("../../docs/moves.md"),
    },
    Page {
        path: "docs/directories.md",
        text: include_str!("../../docs/directories.md"),
    },
    Page {
        path: "docs/scale.md",
        text: include_str!("../../docs/scale.md"),
    },
    Page {
        path: "docs/backups.md",
        text: include_str!("../../docs/backups.md"),
    },
    Page {
        path: "docs/performance.md",
        text: include_str!("../../docs/performance.md"),
    },
];

const WALKTHROUGH: &str = "## First hour";
const MAP_SECTION: &str = "## A shard map";
const COMMAND_LINE: &str = "## Command line";
/// The ports the walk-throughs' daemons listen on (the second is the operator walk-through's TLS
/// one).
const README_PORTS: [&str; 2] = ["127.0.0.1:61818", "127.0.0.1:61819"];

/// The guide's page that holds the section whose heading starts with `heading`.
fn guide_page_with(heading: &str) -> usize {
    GUIDE
        .iter()
        .position(|page| page.text.contains(&format!("\n{heading}")))
        .unwrap_or_else(|| panic!("no page of the guide has a section '{heading}'"))
}

/// Where in `page` the section whose heading starts with `heading` begins (its line's offset).
fn section_start(page: &Page, heading: &str) -> usize {
    page.text
        .find(&format!("\n{heading}"))
        .unwrap_or_else(|| panic!("{} has no section '{heading}'", page.path))
        + 1
}

/// The text of `page`'s section whose heading starts with `heading`, up to the next `## `.
fn section(page: &Page, heading: &str) -> &'static str {
    let body = &page.text[section_start(page, heading)..];
    let end = body[3..].find("\n## ").map_or(body.len(), |i| i + 3);
    &body[..end]
}

/// A fenced block to run, named by its page and place so that a failure says which one it was.
struct Block {
    label: String,
    /// The line of its opening fence, from 1.
    line: usize,
    code: String,
}

/// The fenced blocks whose info string starts with `lang` in `page` from byte `from` on, each
/// labelled with the page, its number among the page's `lang` blocks and its first line.
fn fenced(page: &Page, from: usize, lang: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    // `None` outside a block; `Some(None)` inside a block of another language.
    let mut current: Option<Option<Block>> = None;
    let mut counted = 0;
    for (number, line) in page.text.lines().enumerate() {
        let fence = line.strip_prefix("```");
        match (&mut current, fence) {
            (None, Some(info)) => {
                let wanted = info.split_whitespace().next() == Some(lang);
                counted += usize::from(wanted);
                current = Some(wanted.then(|| Block {
                    label: format!("{}, {lang} block {counted} (line {})", page.path, number + 1),
                    line: number + 1,
                    code: String::new(),
                }));
            }
            (Some(block), Some("")) => {
                blocks.extend(block.take());
                current = None;
            }
            (Some(Some(block)), _) => {
                block.code.push_str(line);
                block.code.push('\n');
            }
            (Some(None), _) | (None, None) => {}
        }
    }
    assert!(current.is_none(), "{}: an unclosed ``` block", page.path);
    // Keep the blocks that open after the line `from` starts.
    let lines_before = page.text[..from].lines().count();
    blocks.retain(|block| block.line > lines_before);
    blocks
}

/// The `sh` blocks of `page`'s section whose heading starts with `heading`.
fn section_blocks(page: &Page, heading: &str) -> Vec<Block> {
    let start = section_start(page, heading);
    let last_line = page.text[..start + section(page, heading).len()].lines().count();
    let mut blocks = fenced(page, start, "sh");
    blocks.retain(|block| block.line <= last_line);
    blocks
}

/// The lines of `text` outside fenced blocks.
fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut in_fence = false;
    text.lines().filter(move |line| {
        if line.starts_with("```") {
            in_fence = !in_fence;
            return false;
        }
        !in_fence
    })
}

/// The targets of the Markdown links and images in `text`'s prose, code spans left out.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose_lines(text) {
        // The parts between backticks are code spans.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            targets.push(after[..end].to_owned());
            rest = &after[end..];
        }
    }
    targets
}

/// The anchors of `text`'s headings, as the renderers make them: lower case, punctuation
/// dropped, spaces made hyphens.
fn heading_anchors(text: &str) -> Vec<String> {
    prose_lines(text)
        .filter(|line| line.starts_with('#'))
        .map(|line| {
            line.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect()
}

/// `path` (relative to the crate's root, `/`-separated) with its `..` parts resolved.
fn normalised(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// Stands in for cargo in the walk-throughs' shell (see the module docs).
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

impl Run {
    /// The block the run was in when it ended: the label of the last one that started.
    fn last_block(&self) -> &str {
        self.stdout
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix(STEP_MARK))
            .unwrap_or("none (the shell failed before the first block)")
    }

    /// Fails the test unless the run succeeded, naming `what`, the block it stopped in, and
    /// its output.
    fn assert_success(&self, what: &str) {
        assert!(
            self.success,
            "{what} failed in {}\n--- stdout\n{}\n--- stderr\n{}",
            self.last_block(),
            self.stdout,
            self.stderr
        );
    }
}

/// What the shell prints before each block, followed by the block's label.
const STEP_MARK: &str = "### running ";

/// Runs `blocks` in order in one `bash -euo pipefail` in `dir`, killing everything it started
/// (the daemon too) at the end or after `limit`.
fn run_blocks(dir: &Path, blocks: &[Block], limit: Duration) -> Run {
    let binary = Path::new(env!("CARGO_BIN_EXE_shardlite"));
    let examples = crate::support::example_binary("order_history");
    let mut script = String::from("set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n");
    script.push_str(CARGO_STAND_IN);
    for block in blocks {
        script.push_str(&format!("echo '{STEP_MARK}{}'\n", block.label));
        script.push_str(&block.code);
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
    let blocks = section_blocks(&README, WALKTHROUGH);
    assert!(
        blocks.len() >= 6,
        "the walk-through lost its steps: {} left",
        blocks.len()
    );
    let dir = crate::support::temp_dir();
    let run = run_blocks(dir.path(), &blocks, Duration::from_secs(240));
    run.assert_success("the README's first hour");

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
    let mut blocks = section_blocks(&GUIDE[guide_page_with(MAP_SECTION)], MAP_SECTION);
    assert!(!blocks.is_empty(), "the map section lost its seed command");
    blocks.push(Block {
        label: "the map the seed stored".to_owned(),
        line: 0,
        code: "shardlite map -c 'Data Source=data/master.db'\n".to_owned(),
    });
    let dir = crate::support::temp_dir();
    let run = run_blocks(dir.path(), &blocks, Duration::from_secs(60));
    run.assert_success("seeding the guide's map");
    for shard in ["shard-0.db", "shard-1.db", "shard-2.db"] {
        assert!(dir.path().join("data").join(shard).exists(), "{shard} was not created");
    }
    assert_contains_in_order(&run.stdout, &["seeded", "shard-0", "shard-1", "shard-2"]);
}

/// The guide as an operator pastes it: every `sh` block from "A shard map" on, page after page in
/// reading order, in one shell, on the files the blocks before made (a map, a daemon with a key,
/// TLS with certificates made by openssl, a key file, a map change over the CLI and REST, schema
/// migrations, data migrations).
#[test]
fn operator_walkthrough_runs_as_written() {
    let first = guide_page_with(MAP_SECTION);
    let mut blocks = fenced(&GUIDE[first], section_start(&GUIDE[first], MAP_SECTION), "sh");
    for page in &GUIDE[first + 1..] {
        blocks.extend(fenced(page, 0, "sh"));
    }
    assert!(
        blocks.len() >= 10,
        "the walk-through lost its steps: {} left",
        blocks.len()
    );
    for path in ["docs/routing.md", "docs/daemon.md", "docs/moves.md"] {
        assert!(
            blocks.iter().any(|block| block.label.starts_with(path)),
            "{path} has no step of the walk-through left"
        );
    }
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
    run.assert_success("the guide's operator walk-through");
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

/// Every flag of `serve` is in the README or the guide, and every `catalog` command in the
/// guide's command table.
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
    let pages: Vec<&Page> = std::iter::once(&README).chain(&GUIDE).collect();
    for flag in flags {
        assert!(
            pages.iter().any(|page| page.text.contains(&format!("--{flag}"))),
            "`serve --{flag}` is in neither the README nor the guide"
        );
    }
    let page = &GUIDE[guide_page_with(COMMAND_LINE)];
    let table = section(page, COMMAND_LINE);
    for command in ["show", "validate", "apply", "activate", "export", "import"] {
        assert!(
            table.contains(command),
            "`catalog {command}` is not in the command table of {}",
            page.path
        );
    }
    for page in pages {
        assert!(
            !page.text.contains("the daemon has one key"),
            "{} still says the daemon has one key",
            page.path
        );
    }
}

/// Every link of the README and the guide leads to a file that exists and, where it names one,
/// to a heading of that page; and every page in `docs/` is in the guide's list, so that its
/// blocks run.
#[test]
fn links_between_pages_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages: Vec<&Page> = std::iter::once(&README).chain(&GUIDE).collect();
    for entry in std::fs::read_dir(root.join("docs")).expect("read docs/") {
        let name = entry.expect("a docs/ entry").file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            let path = format!("docs/{name}");
            assert!(
                GUIDE.iter().any(|page| page.path == path),
                "{path} is not in the guide's list of pages (GUIDE in this file)"
            );
        }
    }
    let mut checked = 0;
    for page in &pages {
        let folder = page.path.rsplit_once('/').map_or("", |(folder, _)| folder);
        for target in link_targets(page.text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                page.path.to_owned()
            } else {
                normalised(&format!("{folder}/{file}"))
            };
            assert!(
                root.join(&path).exists(),
                "{}: the link to '{target}' leads to no file",
                page.path
            );
            if !anchor.is_empty() {
                let linked = pages
                    .iter()
                    .find(|page| page.path == path)
                    .unwrap_or_else(|| panic!("{}: '{target}' names a heading of a file that is no page", page.path));
                assert!(
                    heading_anchors(linked.text).iter().any(|a| a == anchor),
                    "{}: the link to '{target}' names no heading of {}",
                    page.path,
                    linked.path
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 20,
        "only {checked} links were found: is the reading of links broken?"
    );
}
