//! `shardlite serve --config FILE`: every flag from a TOML file, flags winning over it, and bad
//! files refused naming the key.
#![cfg(all(feature = "cli", feature = "server"))]

use crate::support::cli::{seeded, shardlite, stderr};
use crate::support::daemon::{http_client, routed};
use crate::support::path_str;
use crate::support::serve::ServeProcess;
use crate::support::temp_dir;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_takes_its_flags_from_a_config_file_and_flags_win() {
    let dir = temp_dir();
    seeded(dir.path());
    let keys = dir.path().join("keys.json");
    std::fs::write(
        &keys,
        r#"[{"name": "app", "key": "cfg-key", "scopes": ["read"], "keyspaces": ["*"]}]"#,
    )
    .unwrap();
    let config = dir.path().join("serve.toml");
    // `listen` here could never bind: the command line's --listen must win.
    let toml = format!(
        "master = '{}'\nlisten = '256.0.0.1:1'\nmetrics-listen = '127.0.0.1:0'\napi-keys = '{}'\n\
         max-result-rows = 2\nreaders = 1\n",
        path_str(&dir.path().join("master.db")),
        path_str(&keys)
    );
    std::fs::write(&config, toml).unwrap();
    let daemon = ServeProcess::start(&["--config", &path_str(&config), "--listen", "127.0.0.1:0"]);
    let metrics = daemon.wait_for_stdout("metrics on ");

    // The file's key file is in force.
    let info = http_client().get(daemon.url("/api/info")).send().await.unwrap();
    assert_eq!(info.status(), 401);
    // The file's result limit is in force: three rows are one too many.
    let rows = routed(http_client().post(daemon.url("/api/sql/read-only")), "tenant-a")
        .header("X-CSharpDB-Api-Key", "cfg-key")
        .json(&json!({"sql": "SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3"}))
        .send()
        .await
        .unwrap();
    let body: serde_json::Value = rows.json().await.unwrap();
    assert_eq!(body["errorCode"], "result_too_large", "{body}");
    // The file's metrics listener serves.
    let scraped = http_client().get(&metrics).send().await.unwrap();
    assert_eq!(scraped.status(), 200);
    assert!(scraped.text().await.unwrap().contains("shardlite_requests_total"));
    daemon.stop();
}

#[test]
fn serve_refuses_a_bad_config_file_naming_the_key() {
    let dir = temp_dir();
    seeded(dir.path());
    let master = path_str(&dir.path().join("master.db"));
    let config = dir.path().join("serve.toml");
    let config_text = path_str(&config);
    for (toml, expected) in [
        (format!("master = '{master}'\nreaderz = 2\n"), "unknown key 'readerz'"),
        (format!("master = '{master}'\nreaders = 'two'\n"), "key 'readers'"),
        (
            format!("master = '{master}'\nmax-result-rows = 0\n"),
            "key 'max-result-rows'",
        ),
        (
            format!("master = '{master}'\ncreate = 'yes'\n"),
            "key 'create' must be true or false",
        ),
        ("listen = '127.0.0.1:0'\n".to_owned(), "--master"),
    ] {
        std::fs::write(&config, &toml).unwrap();
        let out = shardlite(&["serve", "--config", &config_text, "--listen", "127.0.0.1:0"]);
        let err = stderr(&out);
        assert!(!out.status.success(), "{toml}: {err}");
        assert!(err.contains(expected), "{toml}: {err}");
        if expected.starts_with("unknown") || expected.starts_with("key") {
            assert!(err.contains(&config_text), "{toml}: {err}");
        }
        assert!(out.stdout.is_empty(), "nothing listened");
    }
}
