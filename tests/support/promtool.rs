//! `promtool check metrics` (Debian's `prometheus` package) on a scrape's text.

use std::io::Write as _;
use std::process::{Command, Stdio};

/// `promtool check metrics` on `text`; `None` when promtool is missing (a failure where
/// `SHARDLITE_REQUIRE_PROMTOOL` is set).
pub fn promtool_check(text: &str) -> Option<String> {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(err) => {
            assert!(
                std::env::var_os("SHARDLITE_REQUIRE_PROMTOOL").is_none(),
                "promtool is required here (apt-get install prometheus; .ci/run does): {err}"
            );
            eprintln!("skipped promtool: it is not installed (apt-get install prometheus)");
            return None;
        }
    };
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics failed:\n{}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}
