//! The data commands (`resolve`, `map`, `status`, `sql`, `exec-all`, `read-all`) end to end
//! against a local master.

use crate::support::cli::{seeded, shardlite, stderr, stdout};

use std::path::Path;

#[test]
fn data_commands_work_against_a_local_master() {
    let dir = crate::support::temp_dir();
    let conn = seeded(dir.path());

    let out = shardlite(&[
        "exec-all",
        "-c",
        &conn,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let results: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(results.as_array().unwrap().len(), 2);

    let routed = format!("{conn};Shard Keyspace=tenants;Shard Key=tenant-a");
    let out = shardlite(&[
        "sql",
        "-c",
        &routed,
        "INSERT INTO t (id, v) VALUES (?1, ?2)",
        "--params",
        r#"[1, "a"]"#,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("1 row(s) affected"));

    // Route from flags overrides; tenant-b lives on the other shard and sees nothing.
    let out = shardlite(&[
        "sql",
        "-c",
        &conn,
        "--keyspace",
        "tenants",
        "--key",
        "tenant-b",
        "SELECT count(*) AS n FROM t",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(result["rows"], serde_json::json!([[0]]));
    let out = shardlite(&["sql", "-c", &routed, "SELECT v FROM t"]);
    assert!(stdout(&out).contains("│ a"), "{}", stdout(&out));

    let out = shardlite(&[
        "resolve",
        "-c",
        &conn,
        "--keyspace",
        "tenants",
        "--key",
        "tenant-a",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let resolved: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (resolved["shardId"].as_str(), resolved["bucket"].as_u64()),
        (Some("s0"), Some(3))
    );
    assert_eq!(resolved["source"], "pin");

    let out = shardlite(&["map", "-c", &conn]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("[0, 2)") && stdout(&out).contains("tenant-a"));

    let out = shardlite(&["status", "-c", &conn, "--json"]);
    let status: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(status.as_array().unwrap().iter().all(|s| s["healthy"] == true));

    let out = shardlite(&["read-all", "-c", &conn, "SELECT count(*) FROM t"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("== s0") && stdout(&out).contains("== s1"));
}

#[test]
fn data_commands_fail_clearly_with_non_zero_exit() {
    let dir = crate::support::temp_dir();
    let conn = seeded(dir.path());
    for (args, needle) in [
        (
            vec!["read-all", "-c", &conn, "CREATE TABLE x (id INTEGER)"],
            "read-only",
        ),
        (vec!["sql", "-c", &conn, "SELECT 1"], "route is required"),
        (vec!["sql", "-c", "Data Sorce=x.db", "SELECT 1"], "Data Sorce"),
        (
            vec!["sql", "-c", "Data Source=does-not-exist.db", "SELECT 1"],
            "does not exist",
        ),
        (
            vec![
                "exec-all",
                "-c",
                &conn,
                "CREATE TABLE dup (id INTEGER); CREATE TABLE dup (id INTEGER)",
            ],
            "failed on shard(s) s0, s1",
        ),
        (
            vec!["sql", "-c", &conn, "--keyspace", "other", "--key", "k", "SELECT 1"],
            "'other'",
        ),
        (
            vec![
                "sql",
                "-c",
                &conn,
                "--keyspace",
                "tenants",
                "--key",
                "k",
                "SELECT ?",
                "--params",
                "[1,",
            ],
            "--params",
        ),
    ] {
        let out = shardlite(&args);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            stderr(&out).contains(needle),
            "{args:?}: expected '{needle}' in {}",
            stderr(&out)
        );
    }
    assert!(!Path::new("does-not-exist.db").exists());

    // Shard commands on a plain database say so.
    let plain = dir.path().join("plain.db");
    let out = shardlite(&["sql", "-c", &format!("Data Source={}", plain.display()), "SELECT 1"]);
    assert!(!out.status.success());
    std::fs::write(&plain, b"").unwrap();
    let conn = format!("Data Source={}", plain.display());
    let out = shardlite(&["sql", "-c", &conn, "SELECT 41 + 1 AS answer", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = shardlite(&["status", "-c", &conn]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("without a shard map"), "{}", stderr(&out));
}

/// The same commands against a running daemon, over both transports.
#[cfg(all(feature = "server", feature = "http", feature = "grpc"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_commands_work_against_a_running_daemon() {
    let dir = crate::support::temp_dir();
    let master = crate::support::seeded_master(dir.path()).await;
    let daemon = crate::support::daemon::start_daemon_on(&master, shardlite::server::ServerConfig::default()).await;
    let run = |args: Vec<String>| async move {
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            shardlite(&args)
        })
        .await
        .unwrap()
    };
    let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();

    for transport in ["Grpc", "Http"] {
        let conn = format!("Endpoint={};Transport={transport}", daemon.base_url);
        let table = format!("t_{}", transport.to_ascii_lowercase());
        let out = run(own(&[
            "exec-all",
            "-c",
            &conn,
            &format!("CREATE TABLE {table} (id INTEGER PRIMARY KEY)"),
        ]))
        .await;
        assert!(out.status.success(), "{transport}: {}", stderr(&out));

        let routed = format!("{conn};Shard Keyspace=tenants;Shard Key=tenant-b");
        let out = run(own(&[
            "sql",
            "-c",
            &routed,
            &format!("INSERT INTO {table} VALUES (?1)"),
            "--params",
            "[7]",
        ]))
        .await;
        assert!(out.status.success(), "{transport}: {}", stderr(&out));
        let out = run(own(&[
            "sql",
            "-c",
            &routed,
            &format!("SELECT id FROM {table}"),
            "--json",
        ]))
        .await;
        let result: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(result["rows"], serde_json::json!([[7]]), "{transport}");

        let out = run(own(&[
            "resolve",
            "-c",
            &conn,
            "--keyspace",
            "tenants",
            "--key",
            "tenant-b",
            "--json",
        ]))
        .await;
        let resolved: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(resolved["shardId"], "s1", "{transport}");

        let out = run(own(&["status", "-c", &conn, "--json"])).await;
        let status: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(status.as_array().unwrap().len(), 2, "{transport}");

        let out = run(own(&["map", "-c", &conn, "--json"])).await;
        let map: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(map["keyspace"], "tenants");

        let out = run(own(&[
            "read-all",
            "-c",
            &conn,
            &format!("SELECT count(*) FROM {table}"),
            "--json",
        ]))
        .await;
        let counts: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(counts[1]["result"]["rows"], serde_json::json!([[1]]), "{transport}");

        // Errors keep their meaning and exit non-zero.
        let out = run(own(&["sql", "-c", &conn, "SELECT 1"])).await;
        assert!(!out.status.success());
        assert!(
            stderr(&out).contains("route is required"),
            "{transport}: {}",
            stderr(&out)
        );
        let out = run(own(&["read-all", "-c", &conn, "DROP TABLE x"])).await;
        assert!(!out.status.success());
    }
    let gone = "Endpoint=http://127.0.0.1:9;Transport=Http;Connect Timeout=2";
    let out = run(own(&["status", "-c", gone])).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("127.0.0.1:9"), "{}", stderr(&out));
}
