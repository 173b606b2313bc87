//! A data host that is an atomic transaction's participant (reached over REST, and over gRPC),
//! killed with SIGKILL mid-commit as a real `shardlite serve --shard-dir` process, then
//! restarted on the same port and files: a
//! commit acknowledged before the kill (the host died after the decision, before its commit
//! step) is applied there by recovery; a commit whose decision lived on the host, killed before
//! the decision, is aborted on both shards by presumed abort. Either way the total is unchanged
//! and no intent, decision record or lock is left on either side.
#![cfg(all(feature = "server", feature = "http", feature = "grpc"))]

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value as Json;
use shardlite::client::{AtomicStep, AtomicStepHook, Params, ShardedClient, ShardedClientOptions, SqlData};
use shardlite::engine::EngineConfig;
use shardlite::map::ShardDefinition;
use shardlite::server::{ServerConfig, ServerState};
use shardlite::wire::SHARD_HEADER;

use crate::support::daemon::http_client;
use crate::support::many::{balance, open_account, pinned_tenants};
use crate::support::serve::ServeProcess;
use crate::support::{path_str, route, seed_master, temp_dir};

fn start_host(folder: &Path, listen: &str) -> ServeProcess {
    let folder = path_str(folder);
    ServeProcess::start(&["--shard-dir", folder.as_str(), "--listen", listen])
}

/// Kills the host (by the pid in `pid`) the first time the commit reaches `at`.
fn killer(at: AtomicStep, pid: Arc<AtomicU32>) -> AtomicStepHook {
    let done = AtomicBool::new(false);
    AtomicStepHook(Arc::new(move |step| {
        if step == at && !done.swap(true, Ordering::SeqCst) {
            let status = Command::new("kill")
                .arg("-KILL")
                .arg(pid.load(Ordering::SeqCst).to_string())
                .status()
                .expect("run kill");
            assert!(status.success());
        }
    }))
}

async fn client(master: &Path, abandon: Duration, hook: Option<AtomicStepHook>) -> ShardedClient {
    let mut options = ShardedClientOptions::with_engine(EngineConfig {
        atomic_abandon_age: abandon,
        ..EngineConfig::default()
    });
    options.atomic_step_hook = hook;
    ShardedClient::open_with(master, options).await.unwrap()
}

/// Kills the host when a transfer of 10 from account `from` to `to` (the first holds the
/// decision; `t0` is local, `t1` on the host, reached over `transport`) reaches `at`, restarts
/// it and recovers; returns the balances and whether the commit was acknowledged.
async fn killed_at(transport: &str, from: usize, to: usize, at: AtomicStep) -> ((i64, i64), bool) {
    let dir = temp_dir();
    let folder = dir.path().join("host");
    std::fs::create_dir_all(&folder).unwrap();
    let files = ServerState::open_shard_dir(&folder, ServerConfig::default()).unwrap();
    files.host().unwrap().create_shard("h-1").await.unwrap();
    let host = start_host(&folder, "127.0.0.1:0");
    let pid = Arc::new(AtomicU32::new(host.pid()));
    let host = Arc::new(Mutex::new(Some(host)));
    let base_url = host.lock().unwrap().as_ref().unwrap().base_url.clone();

    let mut map = pinned_tenants(2, |i| dir.path().join(format!("s{i}.db")).display().to_string());
    let mut remote = ShardDefinition::local("s1", "");
    remote.data_source = None;
    remote.endpoint = Some(base_url.clone());
    remote.transport = Some(transport.into());
    remote.remote_shard_id = Some("h-1".into());
    map.shards[1] = remote;
    let master = seed_master(dir.path(), map).await;
    let sharded = client(&master, Duration::from_secs(30), Some(killer(at, Arc::clone(&pid)))).await;
    for i in 0..2 {
        open_account(&sharded, i).await;
    }

    let mut tx = sharded.begin_atomic();
    for (i, delta) in [(from, -10), (to, 10)] {
        tx.execute(
            &route(&format!("t{i}")),
            &format!("UPDATE accounts SET balance = balance + ({delta}) WHERE id = {i}"),
            Params::none(),
        )
        .await
        .unwrap();
    }
    let acknowledged = tx.commit().await.is_ok();
    drop(sharded);
    // The killed host is reaped, and a new one serves the same files on the same port.
    drop(host.lock().unwrap().take());
    let listen = base_url.trim_start_matches("http://").to_owned();
    let restarted = start_host(&folder, &listen);

    let recovered = client(&master, Duration::ZERO, None).await;
    recovered.atomic_recovery().resolve().await.unwrap();
    assert!(recovered.atomic_recovery().unresolved().await.unwrap().is_empty());
    // A record that recovery decided is forgotten by a later pass (its deletion is queued, not
    // a local commit of its own): recovery runs until the host holds nothing.
    let waited = std::time::Instant::now();
    loop {
        let state: Json = http_client()
            .get(restarted.url("/api/atomic/state"))
            .header(SHARD_HEADER, "h-1")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(state["intents"], Json::Array(Vec::new()), "after {at:?}: {state}");
        if state["decisions"] == Json::Array(Vec::new()) {
            break;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "after {at:?}, recovery left a record: {state}"
        );
        recovered.atomic_recovery().resolve().await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for i in 0..2 {
        recovered
            .for_route(route(&format!("t{i}")))
            .execute_sql(
                &format!("UPDATE accounts SET balance = balance WHERE id = {i}"),
                Params::none(),
            )
            .await
            .unwrap_or_else(|err| panic!("after {at:?}, account {i} is still locked: {err}"));
    }
    let balances = (balance(&recovered, 0).await, balance(&recovered, 1).await);
    assert_eq!(balances.0 + balances.1, 200, "after {at:?}");
    drop(restarted);
    (balances, acknowledged)
}

async fn a_data_host_killed_mid_commit_loses_no_acknowledged_commit_and_leaves_no_lock(transport: &str) {
    // The local shard holds the decision; the host dies once it is taken, before its commit step.
    let (balances, acknowledged) = killed_at(transport, 0, 1, AtomicStep::Decided).await;
    assert!(acknowledged, "the decision was taken before the host died");
    assert_eq!(
        balances,
        (90, 110),
        "recovery applied the acknowledged commit on the host"
    );
    // The host holds the decision and dies once it created it: the commit point is gone.
    let (balances, acknowledged) = killed_at(transport, 1, 0, AtomicStep::DecisionCreated).await;
    assert!(!acknowledged, "no decision could be taken");
    assert_eq!(balances, (100, 100), "presumed abort on both shards");
    // Both prepared, the host holding the decision, killed before it.
    let (balances, acknowledged) = killed_at(transport, 1, 0, AtomicStep::Prepared(1)).await;
    assert!(!acknowledged);
    assert_eq!(balances, (100, 100));
}

/// The host reached over REST (`::http`) and over gRPC (`::grpc`).
mod a_data_host_killed_mid_commit_loses_no_acknowledged_commit_and_leaves_no_lock {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn http() {
        super::a_data_host_killed_mid_commit_loses_no_acknowledged_commit_and_leaves_no_lock("http").await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn grpc() {
        super::a_data_host_killed_mid_commit_loses_no_acknowledged_commit_and_leaves_no_lock("grpc").await;
    }
}
