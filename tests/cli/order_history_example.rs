//! Runs `examples/order_history.rs` (built by `cargo test`) and checks the story it tells.

#[test]
fn order_history_sample_tells_the_seed_story() {
    let kept = tempfile::tempdir().expect("temp dir");
    let stdout = crate::support::run_example("order_history", &[kept.path().as_ref()]);

    for expected in [
        "2026-06 bucket=15 shard=shard-0 token=e4a2b07827a7778f (pin)",
        "2026-05 bucket=13 shard=shard-1 token=369a85e13fcf7cad (pin)",
        "2025-12 bucket= 7 shard=shard-3 token=470734adacf32007 (pin)",
        "Transaction id:  csdbshard:1:shard-0:",
        "Route 2026-06 supplied 6 row(s).",
        "Route 2026-05 supplied 4 row(s).",
        "2026-06 orders= 6 total=  589.45",
        "2026-05 orders= 4 total=  397.48",
        "shard-0  7 rows",
        "shard-1  5 rows",
        "shard-2  2 rows",
        "shard-3  1 rows",
        "a route is required for this operation",
    ] {
        assert!(stdout.contains(expected), "missing '{expected}' in:\n{stdout}");
    }
    // The filled page is exactly June's six then May's first four, newest first.
    let page: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("2026-06 SO-") || l.starts_with("2026-05 SO-"))
        .map(|l| l.split_whitespace().nth(1).unwrap_or(""))
        .collect();
    assert_eq!(
        page,
        [
            "SO-202606-TX",
            "SO-202606-1001",
            "SO-202606-1002",
            "SO-202606-1003",
            "SO-202606-1004",
            "SO-202606-1013",
            "SO-202605-1005",
            "SO-202605-1006",
            "SO-202605-1007",
            "SO-202605-1014"
        ]
    );
    // The shard files exist where the sample said, and hold the orders.
    for i in 0..4 {
        assert!(kept.path().join(format!("shards/shard-{i}.db")).exists());
    }
}

/// `shardlite demo DIR` tells the same story as the example, from the one implementation both
/// run, and leaves the same files; without a folder it cleans up after itself.
#[cfg(feature = "cli")]
#[test]
fn the_demo_command_prints_what_the_example_prints() {
    use crate::support::cli::{shardlite, stderr, stdout};

    let from_example = tempfile::tempdir().expect("temp dir");
    let from_binary = tempfile::tempdir().expect("temp dir");
    let example = crate::support::run_example("order_history", &[from_example.path().as_ref()]);
    let demo = shardlite(&["demo", &crate::support::path_str(from_binary.path())]);
    assert!(demo.status.success(), "{}", stderr(&demo));
    // The same but for the folder, which the master catalog's line names too.
    let without_last_line = |text: &str, dir: &std::path::Path| {
        let kept = format!("Files kept in {}", dir.display());
        assert!(text.trim_end().ends_with(&kept), "{text}");
        let master = format!("Master catalog:  {}", dir.join("shards").join("master.db").display());
        assert!(text.contains(&master), "the master's real path: {text}");
        text.trim_end()
            .trim_end_matches(&kept)
            .replace(&dir.display().to_string(), "DIR")
    };
    assert_eq!(
        without_last_line(&stdout(&demo), from_binary.path()),
        without_last_line(&example, from_example.path())
    );
    let databases: Vec<_> = crate::support::files_in(&from_binary.path().join("shards"))
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "db"))
        .collect();
    assert_eq!(databases.len(), 5, "a master and four shards: {databases:?}");

    let temporary = shardlite(&["demo"]);
    assert!(temporary.status.success(), "{}", stderr(&temporary));
    assert!(stdout(&temporary).contains("2026-06 orders= 6 total=  589.45"));
    assert!(!stdout(&temporary).contains("Files kept in"));
    // The temporary folder is gone: the output says so, and names no path as if it stayed.
    assert!(!stdout(&temporary).contains("Master catalog:  shards/master.db"));
    assert!(
        stdout(&temporary).contains("removed now; `shardlite demo demo` keeps them"),
        "{}",
        stdout(&temporary)
    );
}
