//! An atomic commit stalled mid-protocol in a real daemon: the coordinator is held right after
//! its decision (by the daemon's step hook, the same one `SHARDLITE_ATOMIC_STOP_AT` installs in
//! the binary), the first participant applied (in the decision's local commit) and the second
//! prepared with its rows locked. Meanwhile writers of a locked row are refused with
//! `row_locked` (409 over REST, the typed error over gRPC), writers of other rows on the same
//! shard go through, and readers see the last committed values; once the coordinator goes on,
//! the commit is acknowledged and applied everywhere. The same commit
//! on a catalog in a 3-member etcd cluster, with the cluster's leader killed while it is
//! stalled, completes the same way, and so does the next one.

use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value as Json, json};
use shardlite::ErrorKind;
use shardlite::client::{AtomicStep, AtomicStepHook, Params, ShardedClient, SqlData, Value};
use shardlite::server::{ServerConfig, ServerState};
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;

use crate::support::daemon::{Daemon, http_client, routed, start_daemon, tx_url};
use crate::support::{route, seed_master, temp_dir, tenants_options};

/// Holds the first commit that reaches its decision until released.
struct Stall {
    reached: Mutex<Option<mpsc::Sender<()>>>,
    released: Mutex<bool>,
    wake: Condvar,
}

impl Stall {
    fn new() -> (Arc<Self>, mpsc::Receiver<()>) {
        let (tx, rx) = mpsc::channel();
        let stall = Arc::new(Self {
            reached: Mutex::new(Some(tx)),
            released: Mutex::new(false),
            wake: Condvar::new(),
        });
        (stall, rx)
    }

    /// The step hook: at the first decision, says so and waits (at most 60 s) for [`release`].
    fn hook(self: &Arc<Self>) -> AtomicStepHook {
        let stall = Arc::clone(self);
        AtomicStepHook(Arc::new(move |step| {
            if step != AtomicStep::Decided {
                return;
            }
            let Some(reached) = stall.reached.lock().unwrap_or_else(PoisonError::into_inner).take() else {
                return;
            };
            let _ = reached.send(());
            let released = stall.released.lock().unwrap_or_else(PoisonError::into_inner);
            let _ = stall
                .wake
                .wait_timeout_while(released, Duration::from_secs(60), |released| !*released);
        }))
    }

    fn release(&self) {
        *self.released.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.wake.notify_all();
    }
}

/// Waits (at most 30 s) until the stalled commit has reached its decision.
async fn wait_for(reached: mpsc::Receiver<()>) {
    tokio::task::spawn_blocking(move || reached.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("the commit reached its decision");
}

/// Accounts: `tenant-a` (id 1) and `other-a` (id 3) on shard `s0`, `tenant-b` (id 2) on `s1`.
async fn accounts(sharded: &ShardedClient) {
    for (tenant, rows) in [("tenant-a", "(1, 100), (3, 50)"), ("tenant-b", "(2, 100)")] {
        sharded
            .for_route(route(tenant))
            .execute_sql(
                &format!(
                    "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL); \
                     INSERT INTO accounts VALUES {rows}"
                ),
                Params::none(),
            )
            .await
            .unwrap();
    }
}

async fn balances(sharded: &ShardedClient) -> [i64; 3] {
    let mut out = [0; 3];
    for (slot, (tenant, id)) in [("tenant-a", 1), ("tenant-b", 2), ("tenant-a", 3)]
        .into_iter()
        .enumerate()
    {
        let result = sharded
            .for_route(route(tenant))
            .execute_sql(&format!("SELECT balance FROM accounts WHERE id = {id}"), Params::none())
            .await
            .unwrap();
        out[slot] = match result.rows[0][0] {
            Value::Integer(n) => n,
            ref other => panic!("balance {other:?}"),
        };
    }
    out
}

/// `POST` `body` to `url` on `tenant`'s route: the status and the body.
async fn post(url: String, tenant: Option<&str>, body: Json) -> (StatusCode, Json) {
    let mut request = http_client().post(url).json(&body);
    if let Some(tenant) = tenant {
        request = routed(request, tenant);
    }
    let response = request.send().await.unwrap();
    (response.status(), response.json().await.unwrap_or(Json::Null))
}

/// Begins an atomic transfer of 10 from `tenant-a` to `tenant-b` over REST and commits it in a
/// task of its own; returns the id and the commit's status once it answers.
async fn transfer(daemon: &Daemon) -> (String, tokio::task::JoinHandle<StatusCode>) {
    let (status, info) = post(daemon.url("/api/transactions"), None, json!({ "atomic": true })).await;
    assert_eq!(status, StatusCode::OK, "{info}");
    let id = info["transactionId"].as_str().unwrap().to_owned();
    // `tenant-b`'s shard is the first participant: it applies with the decision.
    for (tenant, sql) in [
        ("tenant-b", "UPDATE accounts SET balance = balance + 10 WHERE id = 2"),
        ("tenant-a", "UPDATE accounts SET balance = balance - 10 WHERE id = 1"),
    ] {
        let (status, body) = post(tx_url(daemon, &id, "execute"), Some(tenant), json!({ "sql": sql })).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let commit_url = tx_url(daemon, &id, "commit");
    let commit = tokio::spawn(async move { http_client().post(commit_url).send().await.unwrap().status() });
    (id, commit)
}

/// While the commit is stalled: the second participant's locked row refuses writers over REST
/// and gRPC with `row_locked`, another row of the same shard takes a write, readers see its old
/// value and the first participant's applied one.
async fn check_while_stalled(daemon: &Daemon, sharded: &ShardedClient) {
    let sql_url = daemon.url("/api/sql/execute");
    let (status, problem) = post(
        sql_url.clone(),
        Some("tenant-a"),
        json!({ "sql": "UPDATE accounts SET balance = 0 WHERE id = 1" }),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{problem}");
    assert_eq!(problem["errorCode"], "row_locked", "{problem}");
    let grpc = GrpcClient::new(RemoteOptions::new(&daemon.base_url)).unwrap();
    let refused = grpc
        .with_route(route("tenant-a"))
        .execute_sql("UPDATE accounts SET balance = 0 WHERE id = 1", Params::none())
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::RowLocked, "{refused}");
    let (status, body) = post(
        sql_url,
        Some("tenant-a"),
        json!({ "sql": "UPDATE accounts SET balance = balance + 1 WHERE id = 3" }),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a row no transaction holds, on the same shard: {body}"
    );
    assert_eq!(
        balances(sharded).await,
        [100, 110, 51],
        "readers see the last committed values"
    );
}

async fn finish_and_check(daemon: &Daemon, sharded: &ShardedClient, commit: tokio::task::JoinHandle<StatusCode>) {
    assert_eq!(commit.await.unwrap(), StatusCode::NO_CONTENT);
    assert_eq!(balances(sharded).await, [90, 110, 51]);
    let (status, body) = post(
        daemon.url("/api/sql/execute"),
        Some("tenant-a"),
        json!({ "sql": "UPDATE accounts SET balance = balance WHERE id = 1" }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "the lock is released: {body}");
    let unresolved = sharded.atomic_recovery().unresolved().await.unwrap();
    assert!(unresolved.is_empty(), "{unresolved:?}");
}

async fn stalled_daemon(master: &Path, stall: &Arc<Stall>) -> (Daemon, ShardedClient) {
    let config = ServerConfig {
        atomic_step_hook: Some(stall.hook()),
        ..ServerConfig::default()
    };
    let state = ServerState::open(master, config).await.expect("open the catalog");
    let daemon = start_daemon(state).await;
    let sharded = daemon.state.sharded().unwrap().clone();
    accounts(&sharded).await;
    (daemon, sharded)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stalled_commit_refuses_writers_of_its_rows_with_row_locked_and_lets_other_rows_through() {
    let dir = temp_dir();
    let master = seed_master(dir.path(), tenants_options(dir.path())).await;
    let (stall, reached) = Stall::new();
    let (daemon, sharded) = stalled_daemon(&master, &stall).await;

    let (_, commit) = transfer(&daemon).await;
    wait_for(reached).await;
    check_while_stalled(&daemon, &sharded).await;
    assert!(!commit.is_finished(), "the commit is still stalled");
    stall.release();
    finish_and_check(&daemon, &sharded, commit).await;
}

#[cfg(feature = "etcd")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_commit_on_an_etcd_catalog_completes_with_the_leader_killed_while_it_is_stalled() {
    use crate::support::etcd::EtcdCluster;

    let Some(mut cluster) = EtcdCluster::start(3) else {
        return;
    };
    let dir = temp_dir();
    let url = cluster.url("atomic");
    let catalog = shardlite::catalog::Catalog::open(&url).await.unwrap();
    catalog.seed(tenants_options(dir.path()), false).await.unwrap();
    let (stall, reached) = Stall::new();
    let (daemon, sharded) = stalled_daemon(Path::new(&url), &stall).await;

    let (_, commit) = transfer(&daemon).await;
    wait_for(reached).await;
    // Checked before the leader goes: finding and killing it can outlast a round of the
    // daemon's resolver (5 s), which finishes a decided commit whatever its coordinator does.
    check_while_stalled(&daemon, &sharded).await;
    let leader = leader_of(&cluster, 3).await;
    cluster.kill_member(leader);
    assert!(!commit.is_finished(), "the commit is still stalled");
    stall.release();
    finish_and_check(&daemon, &sharded, commit).await;

    // The next commit, on what is left of the cluster, goes through too; the map is still served.
    let (_, commit) = transfer(&daemon).await;
    assert_eq!(commit.await.unwrap(), StatusCode::NO_CONTENT);
    assert_eq!(balances(&sharded).await, [80, 120, 51]);
    let map = http_client().get(daemon.url("/api/sharding/map")).send().await.unwrap();
    assert_eq!(map.status(), StatusCode::OK);
}

/// The index of the cluster's leader, as its members' status reports it.
#[cfg(feature = "etcd")]
async fn leader_of(cluster: &crate::support::etcd::EtcdCluster, size: usize) -> usize {
    for index in 0..size {
        let status: Json = http_client()
            .post(format!("{}/v3/maintenance/status", cluster.endpoint(index)))
            .json(&json!({}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if status["header"]["member_id"] == status["leader"] {
            return index;
        }
    }
    panic!("no member reports itself the leader");
}
