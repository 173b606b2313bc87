//! What a first-time user of the command line meets: every command's help ends with an example,
//! and the common first mistakes say what to run next.

use crate::support::cli::{shardlite, stderr, stdout};

/// The subcommand names a `--help` text lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_command_help_ends_with_an_example_of_itself() {
    let top = shardlite(&["--help"]);
    assert!(top.status.success());
    let top_help = stdout(&top);
    assert!(top_help.contains("Example: shardlite "), "{top_help}");

    let mut pending: Vec<Vec<String>> = subcommands(&top_help).into_iter().map(|c| vec![c]).collect();
    assert!(pending.len() >= 9, "too few commands found in:\n{top_help}");
    let mut checked = 0;
    while let Some(path) = pending.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let out = shardlite(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let help = stdout(&out);
        let example = format!("Example: shardlite {}", path.join(" "));
        assert!(
            help.contains(&example),
            "`{}` lacks '{example}':\n{help}",
            args.join(" ")
        );
        for child in subcommands(&help) {
            let mut deeper = path.clone();
            deeper.push(child);
            pending.push(deeper);
        }
        checked += 1;
    }
    assert!(checked >= 13, "only {checked} commands checked");
}

#[test]
fn a_missing_master_says_how_to_make_one() {
    let dir = crate::support::temp_dir();
    let missing = dir.path().join("master.db");
    let conn = format!("Data Source={}", missing.display());
    let out = shardlite(&["status", "-c", &conn]);
    assert!(!out.status.success());
    let err = stderr(&out);
    for needle in [
        "does not exist",
        &format!("shardlite seed --master {}", missing.display()),
        "shardlite demo demo",
    ] {
        assert!(err.contains(needle), "missing '{needle}' in: {err}");
    }
    assert!(!missing.exists(), "a failed command must not leave a file behind");
}

#[test]
fn a_master_without_a_map_says_how_to_store_one() {
    let dir = crate::support::temp_dir();
    let plain = dir.path().join("plain.db");
    rusqlite::Connection::open(&plain)
        .and_then(|c| c.execute_batch("CREATE TABLE t (x)"))
        .expect("plain database");
    let out = shardlite(&["status", "-c", &format!("Data Source={}", plain.display())]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("plain database without a shard map"), "{err}");
    assert!(
        err.contains(&format!("shardlite seed --master {} --map MAP.json", plain.display())),
        "{err}"
    );
}

#[tokio::test]
async fn a_wrong_keyspace_or_a_missing_route_names_what_to_pass() {
    let dir = crate::support::temp_dir();
    let master = crate::support::seed_master(dir.path(), crate::support::orders_options()).await;
    let conn = format!("Data Source={}", master.display());

    let out = shardlite(&[
        "sql",
        "-c",
        &conn,
        "--keyspace",
        "orders",
        "--key",
        "2026-06",
        "SELECT 1",
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("'orders' does not match the shard map keyspace 'orders_by_month'"),
        "{err}"
    );
    assert!(
        err.contains("hint: this map's keyspace is 'orders_by_month': pass --keyspace orders_by_month"),
        "{err}"
    );

    let out = shardlite(&["sql", "-c", &conn, "SELECT 1"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("a route is required"), "{err}");
    assert!(err.contains("hint: pass --keyspace KEYSPACE --key KEY"), "{err}");
}
