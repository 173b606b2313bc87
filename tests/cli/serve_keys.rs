//! `shardlite serve --api-keys FILE`: a bad file refused at start naming the problem, SIGHUP
//! reloading the file (a bad one keeps the old keys), and admin actions logged with the key's
//! name, never the key.
#![cfg(all(feature = "cli", feature = "server"))]

use crate::support::cli::{seeded, shardlite, stderr};
use crate::support::daemon::http_client;
use crate::support::path_str;
use crate::support::serve::ServeProcess;
use crate::support::temp_dir;

const KEY_HEADER: &str = "X-CSharpDB-Api-Key";

#[test]
fn serve_refuses_a_bad_key_file_naming_the_problem() {
    let dir = temp_dir();
    seeded(dir.path());
    let master = path_str(&dir.path().join("master.db"));
    let file = dir.path().join("keys.json");
    let file_text = path_str(&file);
    for (json, expected) in [
        (
            r#"[{"name": "ops", "key": "s3cret-one", "scopes": ["root"], "keyspaces": ["*"]}]"#,
            "unknown scope 'root'",
        ),
        (
            r#"[{"name": "ops", "key": "s3cret-one", "scopes": ["read"]}]"#,
            "missing field `keyspaces`",
        ),
        (r#"{"name": "ops"}"#, "expected a JSON array"),
    ] {
        std::fs::write(&file, json).unwrap();
        let out = shardlite(&[
            "serve",
            "--master",
            &master,
            "--listen",
            "127.0.0.1:0",
            "--api-keys",
            &file_text,
        ]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{json}: {err}");
        assert!(err.contains(expected) && err.contains(&file_text), "{json}: {err}");
        assert!(!err.contains("s3cret-one"), "the key leaked: {err}");
        assert!(out.stdout.is_empty(), "nothing listened");
    }
    let missing = path_str(&dir.path().join("nope.json"));
    let out = shardlite(&[
        "serve",
        "--master",
        &master,
        "--listen",
        "127.0.0.1:0",
        "--api-keys",
        &missing,
    ]);
    assert!(
        !out.status.success() && stderr(&out).contains("nope.json"),
        "{}",
        stderr(&out)
    );
    let out = shardlite(&[
        "serve",
        "--master",
        &master,
        "--listen",
        "127.0.0.1:0",
        "--api-keys",
        &file_text,
        "--api-key",
        "k",
    ]);
    assert!(
        !out.status.success() && stderr(&out).contains("--api-key"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_key_file_and_admin_actions_log_the_key_name() {
    let dir = temp_dir();
    seeded(dir.path());
    let master = path_str(&dir.path().join("master.db"));
    let file = dir.path().join("keys.json");
    std::fs::write(
        &file,
        r#"[{"name": "operator", "key": "op-secret-1", "scopes": ["read", "admin"], "keyspaces": ["*"]}]"#,
    )
    .unwrap();
    let daemon = ServeProcess::start(&[
        "--master",
        &master,
        "--listen",
        "127.0.0.1:0",
        "--api-keys",
        &path_str(&file),
    ]);
    let catalog = |key: &'static str| {
        let url = daemon.url("/api/sharding/catalog");
        async move {
            http_client()
                .get(url)
                .header(KEY_HEADER, key)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(catalog("op-secret-1").await, 200);
    let log = daemon.wait_for_log("admin action");
    let line = log.lines().find(|line| line.contains("admin action")).unwrap();
    assert!(line.contains("operator") && line.contains("GetShardCatalog"), "{line}");

    // A bad file on reload keeps the keys in use, and the log says why.
    std::fs::write(&file, "[{").unwrap();
    daemon.signal("HUP");
    daemon.wait_for_log("kept the previous API keys");
    assert_eq!(catalog("op-secret-1").await, 200);

    std::fs::write(
        &file,
        r#"[{"name": "rotated", "key": "op-secret-2", "scopes": ["read"], "keyspaces": ["tenants"]}]"#,
    )
    .unwrap();
    daemon.signal("HUP");
    daemon.wait_for_log("reloaded the API key file");
    assert_eq!(catalog("op-secret-1").await, 401);
    assert_eq!(catalog("op-secret-2").await, 403, "the new key has no admin scope");
    let log = daemon.stop();
    for secret in ["op-secret-1", "op-secret-2"] {
        assert!(!log.contains(secret), "a key reached the log:\n{log}");
    }
}

/// `shardlite sql` with a key that holds `read` and not `write`: reads run (read-only), and a
/// statement that would write is refused naming the `write` scope, over both transports.
#[test]
fn sql_with_a_read_key_reads_and_is_refused_writing() {
    let dir = temp_dir();
    seeded(dir.path());
    let master = path_str(&dir.path().join("master.db"));
    let file = dir.path().join("keys.json");
    std::fs::write(
        &file,
        r#"[{"name": "dashboard", "key": "read-only-key", "scopes": ["read"], "keyspaces": ["*"]}]"#,
    )
    .unwrap();
    let daemon = ServeProcess::start(&[
        "--master",
        &master,
        "--listen",
        "127.0.0.1:0",
        "--api-keys",
        &path_str(&file),
    ]);
    for transport in ["Http", "Grpc"] {
        let connection = format!(
            "Endpoint={};Transport={transport};Shard Keyspace=tenants;Shard Key=tenant-a;Api Key=read-only-key",
            daemon.base_url
        );
        let out = shardlite(&["sql", "-c", &connection, "SELECT 6 * 7 AS answer"]);
        assert!(out.status.success(), "{transport}: {}", stderr(&out));
        let out = shardlite(&["sql", "-c", &connection, "CREATE TABLE notes (id INTEGER)"]);
        assert!(!out.status.success(), "{transport}: a read key wrote");
        let said = stderr(&out);
        assert!(
            said.contains("'write' scope") && said.contains("'dashboard'"),
            "{transport}: {said}"
        );
    }
}

/// A command refused for a missing or wrong key is told where the key goes, with its own
/// connection string: `Api Key=` in it, and curl's header.
#[test]
fn a_refused_key_gets_hints_that_paste() {
    let dir = temp_dir();
    seeded(dir.path());
    let master = path_str(&dir.path().join("master.db"));
    let daemon = ServeProcess::start(&["--master", &master, "--listen", "127.0.0.1:0", "--api-key", "the-key"]);
    let conn = format!("Endpoint={};Transport=Grpc", daemon.base_url);
    let out = shardlite(&["map", "-c", &conn]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("error: a valid API key is required"), "{err}");
    assert!(
        err.contains(&format!(
            "hint: add 'Api Key=KEY' to the connection string: -c '{conn};Api Key=KEY'"
        )),
        "{err}"
    );
    assert!(err.contains("curl -H 'X-CSharpDB-Api-Key: KEY'"), "{err}");
    // A wrong key in the string is not printed back, and is called wrong.
    let out = shardlite(&["map", "-c", &format!("{conn};Api Key=not-the-key")]);
    let err = stderr(&out);
    assert!(!err.contains("not-the-key"), "{err}");
    assert!(err.contains("'Api Key' is not a key this daemon accepts"), "{err}");
    // A path where a connection string goes is shown as a Data Source.
    let out = shardlite(&["map", "-c", &master]);
    let err = stderr(&out);
    assert!(err.contains(&format!("-c 'Data Source={master}'")), "{err}");
    daemon.stop();
}
