//! The daemon and its `/openapi.json` agree. schemathesis (from PyPI: `.ci/run` installs it in a
//! virtual environment and names it in `SHARDLITE_SCHEMATHESIS`) calls every operation of the
//! sample's sharded daemon, of a plain one and of a data host, with a bounded number of generated
//! requests (every phase on the sharded daemon; the plain daemon and the data host, which answer
//! the same operations or refuse them, skip the randomised fuzzing phase, whose generation is
//! most of the run's CPU), and fails on a server error, a response its schema does not allow, a schema-violating request
//! accepted, a missing required header accepted, and every other check it has except one:
//! "a schema-valid request rejected", since no schema can say which SQL parses, which table exists
//! or which key is stored.
#![cfg(feature = "server")]

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::support::daemon::start_daemon_on;
use crate::support::temp_dir;
use shardlite::server::ServerConfig;

/// The schemathesis command: `SHARDLITE_SCHEMATHESIS`, else `schemathesis` on the PATH; `None`
/// when there is none, which fails the test where `SHARDLITE_REQUIRE_SCHEMATHESIS` is set (CI).
fn schemathesis() -> Option<PathBuf> {
    let command =
        std::env::var_os("SHARDLITE_SCHEMATHESIS").map_or_else(|| PathBuf::from("schemathesis"), PathBuf::from);
    let found = Command::new(&command)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some(command);
    }
    assert!(
        std::env::var_os("SHARDLITE_REQUIRE_SCHEMATHESIS").is_none(),
        "schemathesis is required here (pip install schemathesis; .ci/run does)"
    );
    eprintln!("skipped: schemathesis is not installed (pip install schemathesis)");
    None
}

/// Every schemathesis phase.
const ALL_PHASES: &str = "examples,coverage,fuzzing,stateful";
/// Every phase but fuzzing: the schema's examples, the coverage cases built from each
/// parameter's bounds and types, and the stateful sequences along the document's links.
const WITHOUT_FUZZING: &str = "examples,coverage,stateful";

fn run(schemathesis: &PathBuf, base_url: &str, phases: &str) {
    let output = Command::new(schemathesis)
        .args([
            "run",
            &format!("{base_url}/openapi.json"),
            "--checks",
            "all",
            "--exclude-checks",
            "positive_data_acceptance",
            "--max-examples",
            "15",
            "--no-color",
            "--phases",
            phases,
        ])
        .output()
        .expect("run schemathesis");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "schemathesis found disagreements at {base_url}:\n{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_disagreement_on_a_sharded_a_plain_and_a_data_host_daemon() {
    let Some(schemathesis) = schemathesis() else {
        return;
    };
    let dir = temp_dir();
    shardlite::demo::order_history(dir.path(), &mut std::io::sink())
        .await
        .expect("the sample");
    // Generated requests open transactions they never end: they expire within a second, and the
    // limits leave room for them, so `busy` (a documented 503) does not stand in for a failure.
    let config = ServerConfig {
        transaction_idle_timeout: Duration::from_secs(1),
        max_open_transactions: 256,
        max_open_transactions_per_key: 1024,
        ..ServerConfig::default()
    };
    let sharded = start_daemon_on(&dir.path().join("shards/master.db"), config.clone()).await;
    let plain_master = dir.path().join("plain.db");
    shardlite::engine::Database::open(&plain_master, "plain", Default::default())
        .await
        .expect("a plain database");
    let plain = start_daemon_on(&plain_master, config.clone()).await;
    let folder = dir.path().join("host");
    std::fs::create_dir(&folder).unwrap();
    let host_state = shardlite::server::ServerState::open_shard_dir(&folder, config).expect("a data host");
    host_state.host().expect("a host").create_shard("s1").await.unwrap();
    let host = crate::support::daemon::start_daemon(host_state).await;
    // The three runs go at once: each is mostly Python generating requests, one process each.
    let runs: Vec<_> = [
        (&sharded, ALL_PHASES),
        (&plain, WITHOUT_FUZZING),
        (&host, WITHOUT_FUZZING),
    ]
    .into_iter()
    .map(|(daemon, phases)| {
        let base_url = daemon.url("");
        let schemathesis = schemathesis.clone();
        tokio::task::spawn_blocking(move || run(&schemathesis, base_url.trim_end_matches('/'), phases))
    })
    .collect();
    for run in runs {
        run.await.expect("schemathesis run");
    }
    sharded.stop().await.unwrap();
    plain.stop().await.unwrap();
    host.stop().await.unwrap();
}
