//! `shardlite directory ...` end to end: every subcommand against a local master, JSON and table
//! output, exit codes and refusals; an import of JSON lines; and the same commands through a
//! daemon over gRPC and REST (feature `server`).

use std::path::Path;

use serde_json::{Value, json};
use shardlite::map::{DirectoryDefinition, DirectoryEntry, EntryState, ShardingOptions};

use crate::support::cli::{json_of, seeded_with, shardlite, stderr, stdout};

/// The test map: writable `orders_by_id` holding SO-1 (tenant-a, s0), read-only `archive_by_id`.
fn directory_map(dir: &Path) -> ShardingOptions {
    let mut map = crate::support::tenants_options(dir);
    map.directories = vec![
        DirectoryDefinition::writable("orders_by_id", "tenants"),
        DirectoryDefinition {
            read_only: true,
            ..DirectoryDefinition::writable("archive_by_id", "tenants")
        },
    ];
    map.directory_entries = vec![DirectoryEntry {
        directory_name: "orders_by_id".into(),
        lookup_key: "SO-1".into(),
        target_keyspace: "tenants".into(),
        route_key: "tenant-a".into(),
        shard_id: "s0".into(),
        map_version: 1,
        state: EntryState::Active,
    }];
    map
}

/// Runs `shardlite directory <words...> -c conn`, expecting success, and returns its JSON output.
fn ok(conn: &str, words: &[&str]) -> Value {
    let mut args = vec!["directory"];
    args.extend_from_slice(words);
    args.extend_from_slice(&["-c", conn, "--json"]);
    let out = shardlite(&args);
    assert!(out.status.success(), "{words:?}: {}", stderr(&out));
    json_of(&out)
}

/// Runs `shardlite directory <words...> -c conn`, expecting failure, and returns stderr.
fn fails(conn: &str, words: &[&str]) -> String {
    let mut args = vec!["directory"];
    args.extend_from_slice(words);
    args.extend_from_slice(&["-c", conn]);
    let out = shardlite(&args);
    assert!(!out.status.success(), "{words:?} succeeded: {}", stdout(&out));
    stderr(&out)
}

/// The scenario every target runs: each change, its no-op, a refusal, resolve and entries.
fn directory_commands(conn: &str) {
    let d = ["--directory", "orders_by_id"];
    let reserved = ok(
        conn,
        &[
            &["reserve"][..],
            &d,
            &["SO-2", "--route-key", "tenant-b", "--operator", "ada"],
        ]
        .concat(),
    );
    assert_eq!(
        (&reserved["status"], &reserved["pendingMapVersion"]),
        (&json!("Reserved"), &json!(2))
    );
    assert_eq!(reserved["requiresActivation"], true);
    let again = ok(
        conn,
        &[&["reserve"][..], &d, &["SO-2", "--route-key", "tenant-b"]].concat(),
    );
    assert_eq!(again["status"], "AlreadyReserved");
    let activated = ok(conn, &[&["activate"][..], &d, &["SO-2", "--activate"]].concat());
    assert_eq!(
        (&activated["status"], &activated["requiresActivation"]),
        (&json!("Activated"), &json!(false))
    );

    let found = ok(conn, &[&["resolve"][..], &d, &["SO-2"]].concat());
    assert_eq!(found["routeResolution"]["shardId"], "s1", "{found}");
    let out = shardlite(&["directory", "resolve", "-c", conn, "-d", "orders_by_id", "SO-2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("route tenants/tenant-b resolves to shard s1"),
        "{}",
        stdout(&out)
    );

    let upserted = ok(
        conn,
        &[
            &["upsert"][..],
            &d,
            &["SO-3", "--route-key", "tenant-a", "--state", "Disabled", "--activate"],
        ]
        .concat(),
    );
    assert_eq!(upserted["status"], "Upserted");
    assert_eq!(
        ok(conn, &[&["disable"][..], &d, &["SO-3"]].concat())["status"],
        "AlreadyDisabled"
    );
    assert_eq!(
        ok(conn, &[&["mark-stale"][..], &d, &["SO-3", "--activate"]].concat())["status"],
        "MarkedStale"
    );
    assert!(fails(conn, &[&["resolve"][..], &d, &["SO-3"]].concat()).contains("is Stale, not Active"));
    let stale = ok(conn, &[&["resolve"][..], &d, &["SO-3", "--include-inactive"]].concat());
    assert_eq!(stale["entry"]["state"], "Stale");
    assert_eq!(
        ok(conn, &[&["delete"][..], &d, &["SO-3", "--activate"]].concat())["status"],
        "Deleted"
    );
    assert_eq!(
        ok(
            conn,
            &[&["delete"][..], &d, &["SO-3", "--remove", "--activate"]].concat()
        )["status"],
        "Removed"
    );

    // Refusals exit non-zero naming the problem, and write nothing.
    let read_only = fails(
        conn,
        &["upsert", "-d", "archive_by_id", "AR-1", "--route-key", "tenant-a"],
    );
    assert!(read_only.contains("directory-read-only"), "{read_only}");
    let stale_version = fails(
        conn,
        &[&["disable"][..], &d, &["SO-2", "--expected-version", "1"]].concat(),
    );
    assert!(stale_version.contains("map-version-mismatch"), "{stale_version}");
    let unknown = fails(conn, &["entries", "-d", "nope"]);
    assert!(unknown.contains("'nope' is not configured"), "{unknown}");
    let limit = fails(conn, &[&["entries"][..], &d, &["--limit", "0"]].concat());
    assert!(limit.contains("limit"), "{limit}");

    let page = ok(conn, &[&["entries"][..], &d, &["--limit", "1"]].concat());
    assert_eq!(
        (&page["entryCount"], &page["nextAfter"]),
        (&json!(2), &json!("SO-1")),
        "{page}"
    );
    let rest = ok(conn, &[&["entries"][..], &d, &["--after", "SO-1"]].concat());
    assert_eq!(rest["entries"][0]["lookupKey"], "SO-2", "{rest}");
    let out = shardlite(&["directory", "entries", "-c", conn, "-d", "orders_by_id"]);
    assert!(stdout(&out).contains("orders_by_id: 2 entries"), "{}", stdout(&out));
}

/// Imports JSON lines: new, repaired and unchanged entries, then a bad line named by number.
fn import_commands(conn: &str, dir: &Path) {
    let file = dir.join("orders.jsonl");
    let lines = [
        r#"{"lookupKey": "SO-10", "routeKey": "tenant-a"}"#,
        "",
        r#"{"lookupKey": "SO-11", "routeKey": "tenant-b", "state": "Reserved"}"#,
        r#"{"lookupKey": "SO-1", "routeKey": "tenant-a"}"#,
        r#"{"lookupKey": "SO-2", "routeKey": "tenant-a"}"#,
    ];
    std::fs::write(&file, lines.join("\n")).unwrap();
    let path = file.to_str().unwrap();
    let report = ok(
        conn,
        &["import", "-d", "orders_by_id", path, "--activate", "--operator", "ada"],
    );
    assert_eq!(report["lines"], 4, "{report}");
    assert_eq!(
        report["statuses"],
        json!({"AlreadyUpToDate": 1, "Repaired": 1, "Upserted": 2}),
        "{report}"
    );
    assert_eq!(report["activated"], true, "{report}");
    let moved = ok(conn, &["resolve", "-d", "orders_by_id", "SO-2"]);
    assert_eq!(moved["routeResolution"]["shardId"], "s0", "{moved}");
    assert_eq!(ok(conn, &["entries", "-d", "orders_by_id"])["entryCount"], 4);

    std::fs::write(
        &file,
        "{\"lookupKey\": \"SO-12\", \"routeKey\": \"tenant-a\"}\n{\"lookupKey\": \"SO-13\", \"shard\": \"s0\"}\n",
    )
    .unwrap();
    let bad = fails(conn, &["import", "-d", "orders_by_id", path]);
    assert!(bad.contains("line 2") && bad.contains("unknown field `shard`"), "{bad}");
    std::fs::write(
        &file,
        "{\"lookupKey\": \"SO-14\", \"routeKey\": \"tenant-a\", \"state\": \"Gone\"}\n",
    )
    .unwrap();
    let refused = fails(conn, &["import", "-d", "orders_by_id", path]);
    assert!(
        refused.contains("line 1") && refused.contains("invalid-state"),
        "{refused}"
    );
}

/// Through a daemon: the file goes in one request as one change, or in `--batch` entries per
/// request, each one change chained on the version the previous one wrote; a refused line stops
/// the import, and the batches before its own stay written.
fn import_in_batches(conn: &str, dir: &Path) {
    let map_version = |conn: &str| {
        let out = shardlite(&["catalog", "show", "-c", conn, "--json"]);
        let shown = json_of(&out);
        shown["pendingMap"]["mapVersion"]
            .as_u64()
            .or_else(|| shown["activeMap"]["mapVersion"].as_u64())
            .unwrap_or_else(|| panic!("{shown}"))
    };
    let file = dir.join("batches.jsonl");
    let lines = |keys: &[&str]| {
        keys.iter()
            .map(|key| format!("{{\"lookupKey\": \"{key}\", \"routeKey\": \"tenant-a\"}}\n"))
            .collect::<String>()
    };
    let path = file.to_str().unwrap();
    let before = map_version(conn);
    std::fs::write(&file, lines(&["SO-30", "SO-31", "SO-32"])).unwrap();
    let report = ok(conn, &["import", "-d", "orders_by_id", path]);
    assert_eq!(
        (&report["changes"], &report["lines"]),
        (&json!(1), &json!(3)),
        "{report}"
    );
    assert_eq!(map_version(conn), before + 1);

    std::fs::write(&file, lines(&["SO-33", "SO-34", "SO-35"])).unwrap();
    let report = ok(
        conn,
        &["import", "-d", "orders_by_id", path, "--batch", "2", "--activate"],
    );
    assert_eq!(
        (&report["changes"], &report["activated"]),
        (&json!(2), &json!(true)),
        "{report}"
    );
    assert_eq!(map_version(conn), before + 3);

    let mut text = lines(&["SO-36", "SO-37"]);
    text.push_str("{\"lookupKey\": \"SO-38\", \"routeKey\": \"tenant-a\", \"state\": \"Gone\"}\n");
    std::fs::write(&file, text).unwrap();
    let refused = fails(conn, &["import", "-d", "orders_by_id", path, "--batch", "2"]);
    assert!(
        refused.contains("line 3") && refused.contains("invalid-state") && refused.contains("batches before it"),
        "{refused}"
    );
    assert_eq!(map_version(conn), before + 4, "the first batch stays written");
    let refused = fails(conn, &["import", "-d", "orders_by_id", path]);
    assert!(refused.contains("nothing was written"), "{refused}");
    assert_eq!(map_version(conn), before + 4);
}

#[test]
fn directory_commands_work_on_a_local_master() {
    let dir = crate::support::temp_dir();
    let conn = seeded_with(dir.path(), &directory_map(dir.path()));
    directory_commands(&conn);
    let version =
        |conn: &str| ok(conn, &["resolve", "-d", "orders_by_id", "SO-1"])["routeResolution"]["mapVersion"].clone();
    let before = version(&conn).as_u64().unwrap();
    import_commands(&conn, dir.path());
    // On a master file the import is one change: three entries written, one map version.
    assert_eq!(version(&conn), json!(before + 1));

    // A refused line refuses the whole file: the good line before it is not written either.
    let file = dir.path().join("partly.jsonl");
    std::fs::write(
        &file,
        "{\"lookupKey\": \"SO-20\", \"routeKey\": \"tenant-a\"}\n{\"lookupKey\": \"SO-20\", \"routeKey\": \"tenant-b\"}\n",
    )
    .unwrap();
    let refused = fails(&conn, &["import", "-d", "orders_by_id", file.to_str().unwrap()]);
    assert!(
        refused.contains("line 2") && refused.contains("given twice") && refused.contains("nothing was written"),
        "{refused}"
    );
    assert_eq!(ok(&conn, &["entries", "-d", "orders_by_id"])["entryCount"], 4);
    assert_eq!(version(&conn), json!(before + 1));
}

#[cfg(feature = "server")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_commands_work_through_a_daemon_over_grpc_and_rest() {
    use crate::support::daemon::start_daemon_on;
    use shardlite::server::ServerConfig;

    for transport in ["Grpc", "Http"] {
        let dir = crate::support::temp_dir();
        let master = crate::support::seed_master(dir.path(), directory_map(dir.path())).await;
        let daemon = start_daemon_on(&master, ServerConfig::default()).await;
        let conn = format!("Endpoint={};Transport={transport}", daemon.base_url);
        let path = dir.path().to_owned();
        tokio::task::spawn_blocking(move || {
            directory_commands(&conn);
            import_commands(&conn, &path);
            import_in_batches(&conn, &path);
        })
        .await
        .unwrap();
        daemon.stop().await.unwrap();
    }
}
