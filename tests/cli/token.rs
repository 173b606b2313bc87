//! `shardlite token`: the built binary prints the canonical text, token and bucket of a route,
//! and refuses bad input on stderr with a non-zero exit code.
//!
//! The binary needs the `cli` feature (on by default); without it there is nothing to run.

use crate::support::cli::shardlite;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn json_output_has_canonical_text_token_hex_and_bucket() {
    let out = shardlite(&["token", "orders_by_month", "2026-06", "--buckets", "16", "--json"]);
    assert!(
        out.status.success(),
        "status {:?}, stderr {}",
        out.status,
        text(&out.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&out.stdout)));
    let object = value.as_object().unwrap();
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["bucket", "canonical", "token", "tokenHex"]);
    assert_eq!(value["canonical"], "15:orders_by_month|7:2026-06");
    // A JSON number, exact beyond 2^53.
    assert!(value["token"].is_u64(), "token must be a JSON number: {value}");
    assert_eq!(value["token"].as_u64(), Some(16_474_924_416_982_546_319));
    assert_eq!(value["tokenHex"], "e4a2b07827a7778f");
    assert_eq!(value["bucket"].as_u64(), Some(15));
}

#[test]
fn json_output_trims_the_route_and_uses_the_default_bucket_count() {
    let out = shardlite(&["token", " orders_by_month ", " 2026-06 ", "--json"]);
    assert!(out.status.success(), "stderr {}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["canonical"], "15:orders_by_month|7:2026-06");
    // 16474924416982546319 % 4096, from tests/data/route_tokens.json.
    assert_eq!(value["bucket"].as_u64(), Some(1935));
}

#[test]
fn plain_output_contains_canonical_text_token_and_bucket() {
    let out = shardlite(&["token", "orders_by_month", "2026-06", "--buckets", "16"]);
    assert!(out.status.success(), "stderr {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("15:orders_by_month|7:2026-06"), "{stdout}");
    assert!(stdout.contains("16474924416982546319"), "{stdout}");
    assert!(stdout.contains("e4a2b07827a7778f"), "{stdout}");
    assert!(
        stdout.lines().any(|l| l.starts_with("bucket") && l.contains("15")),
        "{stdout}"
    );
    assert!(
        serde_json::from_str::<serde_json::Value>(&stdout).is_err(),
        "plain output is not JSON"
    );
}

#[test]
fn blank_key_fails_naming_the_key() {
    let out = shardlite(&["token", "orders_by_month", "   ", "--json"]);
    assert!(!out.status.success(), "a blank key must fail");
    assert!(out.stdout.is_empty(), "nothing on stdout: {}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("route key is required"), "{stderr}");
    assert!(
        !stderr.contains("keyspace"),
        "the key, not the keyspace, is blank: {stderr}"
    );
}

#[test]
fn blank_keyspace_fails_naming_the_keyspace() {
    let out = shardlite(&["token", "\t", "2026-06"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("route keyspace is required"), "{stderr}");
}

#[test]
fn zero_buckets_fails_naming_the_option() {
    let out = shardlite(&["token", "orders_by_month", "2026-06", "--buckets", "0"]);
    assert!(!out.status.success(), "--buckets 0 must fail");
    assert!(out.stdout.is_empty(), "nothing on stdout: {}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("--buckets"), "{stderr}");
}

#[test]
fn bucket_count_over_the_cap_fails_naming_the_option() {
    let over = (shardlite::map::MAX_VIRTUAL_BUCKETS + 1).to_string();
    let out = shardlite(&["token", "orders_by_month", "2026-06", "--buckets", &over]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("--buckets"), "{stderr}");
    assert!(stderr.contains(&over), "{stderr}");
}
