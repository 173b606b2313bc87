//! Atomic transactions across shards through the daemon, over REST and gRPC (and the crate's
//! HTTP and gRPC clients): a transfer between accounts on different shards commits on both;
//! bad input (execute after commit, commit twice, an unknown or malformed id, no route, a
//! disabled shard, a participant the map disables before the commit) is a clear 4xx with nothing
//! half-applied; an idle one expires and is rolled
//! back; the `shardlite_atomic_unresolved` gauge counts what recovery has left to do; a shard
//! that opens holding a decided intent is resolved at once.

use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value as Json, json};
use shardlite::ErrorKind;
use shardlite::client::{Params, ShardedClient, SqlData, Value};
use shardlite::data::TransactionData;
use shardlite::server::ServerConfig;
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::http::HttpClient;

use crate::support::daemon::{Daemon, http_client, routed, start_daemon_on, start_metrics, tx_url};
use crate::support::many::{open_account, pinned_tenants};
use crate::support::{route, seed_master, temp_dir};

/// Accounts `0..8` on shards `s0..s7` (tenant `t{i}` on `s{i}`), 100 each; shard `s8` (tenant
/// `t8`) is disabled.
const ACCOUNTS: usize = 8;

async fn accounts_daemon(dir: &Path, config: ServerConfig) -> Daemon {
    let mut map = pinned_tenants(ACCOUNTS + 1, |i| dir.join(format!("s{i}.db")).display().to_string());
    map.shards[ACCOUNTS].enabled = false;
    let master = seed_master(dir, map).await;
    let daemon = start_daemon_on(&master, config).await;
    let sharded = daemon.state.sharded().expect("sharded").clone();
    for i in 0..ACCOUNTS {
        open_account(&sharded, i).await;
    }
    daemon
}

async fn balances(sharded: &ShardedClient) -> Vec<i64> {
    let mut all = Vec::new();
    for i in 0..ACCOUNTS {
        let result = sharded
            .for_route(route(&format!("t{i}")))
            .execute_sql(&format!("SELECT balance FROM accounts WHERE id = {i}"), Params::none())
            .await
            .unwrap();
        match result.rows[0][0] {
            Value::Integer(n) => all.push(n),
            ref other => panic!("balance {other:?}"),
        }
    }
    all
}

fn moved(from: usize, to: usize, amount: i64) -> Vec<i64> {
    let mut expected = vec![100; ACCOUNTS];
    expected[from] -= amount;
    expected[to] += amount;
    expected
}

async fn begin(daemon: &Daemon) -> String {
    let response = http_client()
        .post(daemon.url("/api/transactions"))
        .json(&json!({ "atomic": true }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let info: Json = response.json().await.unwrap();
    let id = info["transactionId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("csdbatomic:"), "{id}");
    assert!(info["expiresAtUtc"].is_string(), "{info}");
    id
}

/// Executes `sql` in `id` on tenant `t{account}`'s route: the status and the body.
async fn execute(daemon: &Daemon, id: &str, account: usize, sql: &str) -> (StatusCode, Json) {
    let request = http_client().post(tx_url(daemon, id, "execute"));
    let response = routed(request, &format!("t{account}"))
        .json(&json!({ "sql": sql }))
        .send()
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap_or(Json::Null))
}

async fn end(daemon: &Daemon, id: &str, action: &str) -> (StatusCode, Json) {
    let response = http_client().post(tx_url(daemon, id, action)).send().await.unwrap();
    (response.status(), response.json().await.unwrap_or(Json::Null))
}

fn debit(account: usize, amount: i64) -> String {
    format!("UPDATE accounts SET balance = balance - {amount} WHERE id = {account}")
}

fn credit(account: usize, amount: i64) -> String {
    format!("UPDATE accounts SET balance = balance + {amount} WHERE id = {account}")
}

fn assert_problem(answer: &(StatusCode, Json), status: StatusCode, code: &str, detail: &str) {
    let (got, problem) = answer;
    assert_eq!(*got, status, "{problem}");
    assert_eq!(problem["errorCode"], code, "{problem}");
    let text = problem["detail"].as_str().unwrap_or_default();
    assert!(text.contains(detail), "'{detail}' not in {problem}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rest_transfer_commits_on_both_shards_and_bad_input_is_refused_with_nothing_half_applied() {
    let dir = temp_dir();
    let daemon = accounts_daemon(dir.path(), ServerConfig::default()).await;
    let sharded = daemon.state.sharded().unwrap().clone();

    let id = begin(&daemon).await;
    assert_eq!(execute(&daemon, &id, 0, &debit(0, 10)).await.0, StatusCode::OK);
    assert_eq!(execute(&daemon, &id, 3, &credit(3, 10)).await.0, StatusCode::OK);
    assert_eq!(
        balances(&sharded).await,
        vec![100; ACCOUNTS],
        "nothing shows before commit"
    );
    assert_eq!(end(&daemon, &id, "commit").await.0, StatusCode::NO_CONTENT);
    assert_eq!(balances(&sharded).await, moved(0, 3, 10));

    // After commit: execute, commit and rollback say it was committed.
    let after = execute(&daemon, &id, 1, &debit(1, 1)).await;
    assert_problem(&after, StatusCode::CONFLICT, "conflict", "was committed");
    assert_problem(
        &end(&daemon, &id, "commit").await,
        StatusCode::CONFLICT,
        "conflict",
        "was committed",
    );
    assert_problem(
        &end(&daemon, &id, "rollback").await,
        StatusCode::CONFLICT,
        "conflict",
        "was committed",
    );

    // Unknown and malformed ids.
    let unknown = "csdbatomic:0123456789abcdef0123456789abcdef";
    assert_problem(
        &execute(&daemon, unknown, 0, &debit(0, 1)).await,
        StatusCode::NOT_FOUND,
        "not_found",
        unknown,
    );
    assert_problem(
        &end(&daemon, unknown, "commit").await,
        StatusCode::NOT_FOUND,
        "not_found",
        unknown,
    );
    // A data host's shard header names no atomic transaction's home: refused, whatever it says.
    let response = http_client()
        .post(tx_url(&daemon, unknown, "commit"))
        .header("X-Shardlite-Shard", "9%X :S")
        .send()
        .await
        .unwrap();
    let answer = (response.status(), response.json().await.unwrap_or(Json::Null));
    assert_problem(&answer, StatusCode::BAD_REQUEST, "invalid_input", "X-Shardlite-Shard");
    let malformed = execute(&daemon, "csdbatomic:xyz", 0, &debit(0, 1)).await;
    assert_problem(
        &malformed,
        StatusCode::BAD_REQUEST,
        "invalid_input",
        "32 lowercase hex digits",
    );
    assert_problem(
        &end(&daemon, "csdbatomic:XYZ", "commit").await,
        StatusCode::BAD_REQUEST,
        "invalid_input",
        "csdbatomic",
    );

    // No route, and a disabled shard: refused, and the rest of the transaction rolls back whole.
    let id = begin(&daemon).await;
    assert_eq!(execute(&daemon, &id, 1, &debit(1, 7)).await.0, StatusCode::OK);
    let response = http_client()
        .post(tx_url(&daemon, &id, "execute"))
        .json(&json!({ "sql": credit(2, 7) }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let problem: Json = response.json().await.unwrap();
    assert_eq!(problem["errorCode"], "route_required", "{problem}");
    let disabled = execute(&daemon, &id, ACCOUNTS, "UPDATE accounts SET balance = 0").await;
    assert_problem(
        &disabled,
        StatusCode::BAD_REQUEST,
        "invalid_input",
        "shard 's8', which the map disables",
    );
    assert_eq!(end(&daemon, &id, "rollback").await.0, StatusCode::NO_CONTENT);
    assert_problem(
        &end(&daemon, &id, "commit").await,
        StatusCode::CONFLICT,
        "conflict",
        "was rolled back",
    );
    assert_eq!(
        balances(&sharded).await,
        moved(0, 3, 10),
        "the rolled back debit left nothing"
    );
    let unresolved = sharded.atomic_recovery().unresolved().await.unwrap();
    assert!(unresolved.is_empty(), "{unresolved:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_atomic_transaction_expires_and_nothing_of_it_is_applied() {
    let dir = temp_dir();
    let config = ServerConfig {
        transaction_idle_timeout: Duration::from_millis(1500),
        ..ServerConfig::default()
    };
    let daemon = accounts_daemon(dir.path(), config).await;
    let sharded = daemon.state.sharded().unwrap().clone();
    let id = begin(&daemon).await;
    let debited = execute(&daemon, &id, 4, &debit(4, 50)).await;
    assert_eq!(debited.0, StatusCode::OK, "{}", debited.1);
    let credited = execute(&daemon, &id, 5, &credit(5, 50)).await;
    assert_eq!(credited.0, StatusCode::OK, "{}", credited.1);
    // Idle past the timeout: what is being tested is the timeout itself.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_problem(
        &end(&daemon, &id, "commit").await,
        StatusCode::CONFLICT,
        "expired",
        "expired",
    );
    assert_eq!(balances(&sharded).await, vec![100; ACCOUNTS]);
    // The rows it wrote are free again.
    sharded
        .for_route(route("t4"))
        .execute_sql(&debit(4, 1), Params::none())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_and_grpc_clients_run_atomic_transfers() {
    let dir = temp_dir();
    let daemon = accounts_daemon(dir.path(), ServerConfig::default()).await;
    let sharded = daemon.state.sharded().unwrap().clone();
    let options = RemoteOptions::new(&daemon.base_url);

    let http = HttpClient::new(options.clone()).unwrap();
    let mut transfer = http.begin_atomic().await.unwrap();
    transfer
        .execute(&route("t0"), &debit(0, 5), Params::none())
        .await
        .unwrap();
    transfer
        .execute(&route("t1"), &credit(1, 5), Params::none())
        .await
        .unwrap();
    transfer.commit().await.unwrap();
    assert_eq!(balances(&sharded).await, moved(0, 1, 5));

    let grpc = GrpcClient::new(options).unwrap();
    let mut transfer = grpc.begin_atomic().await.unwrap();
    let id = transfer.id().to_owned();
    transfer
        .execute(&route("t1"), &debit(1, 5), Params::none())
        .await
        .unwrap();
    transfer
        .execute(&route("t0"), &credit(0, 5), Params::none())
        .await
        .unwrap();
    transfer.commit().await.unwrap();
    assert_eq!(balances(&sharded).await, vec![100; ACCOUNTS]);

    // Over gRPC too: a call after commit is a conflict, on a disabled shard invalid input.
    let late = grpc
        .with_route(route("t2"))
        .execute_in_transaction(&id, &debit(2, 1), Params::none())
        .await
        .unwrap_err();
    assert_eq!(late.kind(), ErrorKind::Conflict, "{late}");
    assert_eq!(
        grpc.commit_transaction(&id).await.unwrap_err().kind(),
        ErrorKind::Conflict
    );
    let mut transfer = grpc.begin_atomic().await.unwrap();
    transfer
        .execute(&route("t2"), &debit(2, 9), Params::none())
        .await
        .unwrap();
    let disabled = transfer
        .execute(&route(&format!("t{ACCOUNTS}")), "SELECT 1", Params::none())
        .await
        .unwrap_err();
    assert_eq!(disabled.kind(), ErrorKind::InvalidInput, "{disabled}");
    assert!(disabled.to_string().contains("which the map disables"), "{disabled}");
    transfer.rollback().await.unwrap();
    let malformed = grpc.commit_transaction("csdbatomic:nope").await.unwrap_err();
    assert_eq!(malformed.kind(), ErrorKind::InvalidInput, "{malformed}");

    // A handle dropped without commit is rolled back: its row is writable again.
    let mut transfer = http.begin_atomic().await.unwrap();
    transfer
        .execute(&route("t3"), &debit(3, 9), Params::none())
        .await
        .unwrap();
    drop(transfer);
    assert_eq!(balances(&sharded).await, vec![100; ACCOUNTS]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unresolved_gauge_counts_what_recovery_has_left() {
    let dir = temp_dir();
    let config = ServerConfig {
        metrics: true,
        ..ServerConfig::default()
    };
    let daemon = accounts_daemon(dir.path(), config).await;
    let sharded = daemon.state.sharded().unwrap().clone();
    let metrics = start_metrics(&daemon.state).await;
    let gauge = || async {
        let text = http_client().get(&metrics).send().await.unwrap().text().await.unwrap();
        text.lines()
            .find_map(|line| line.strip_prefix("shardlite_atomic_unresolved "))
            .map(|v| v.trim().parse::<f64>().unwrap())
    };
    assert_eq!(gauge().await, Some(0.0));

    // A coordinator that stops after the decision leaves one transaction on two shards.
    let mut transfer = sharded.begin_atomic();
    transfer
        .execute(&route("t6"), &debit(6, 1), Params::none())
        .await
        .unwrap();
    transfer
        .execute(&route("t7"), &credit(7, 1), Params::none())
        .await
        .unwrap();
    transfer
        .commit_until(Some(shardlite::client::AtomicStep::Decided))
        .await
        .unwrap();
    drop(transfer);
    assert_eq!(gauge().await, Some(1.0));
    sharded.atomic_recovery().resolve().await.unwrap();
    assert_eq!(gauge().await, Some(0.0));
    assert_eq!(balances(&sharded).await, moved(6, 7, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_participant_the_map_disables_before_commit_is_refused_with_nothing_applied() {
    use shardlite::data::{ActivationRequest, Audit, CatalogUpdateRequest};

    let dir = temp_dir();
    let daemon = accounts_daemon(dir.path(), ServerConfig::default()).await;
    let sharded = daemon.state.sharded().unwrap().clone();
    let id = begin(&daemon).await;
    assert_eq!(execute(&daemon, &id, 0, &debit(0, 10)).await.0, StatusCode::OK);
    assert_eq!(execute(&daemon, &id, 1, &credit(1, 10)).await.0, StatusCode::OK);

    // An operator disables s1, a participant, before the commit.
    let mut v2 = pinned_tenants(ACCOUNTS + 1, |i| {
        dir.path().join(format!("s{i}.db")).display().to_string()
    });
    v2.shards[ACCOUNTS].enabled = false;
    v2.shards[1].enabled = false;
    v2.map_version = 2;
    let mut request = CatalogUpdateRequest::new(v2);
    request.expected_current_map_version = Some(1);
    request.allow_ownership_change = true;
    assert!(sharded.catalog().apply(&request).await.unwrap().applied);
    sharded
        .catalog()
        .activate(&ActivationRequest::new(2).audit(Audit::by("test")))
        .await
        .unwrap();

    assert_problem(
        &end(&daemon, &id, "commit").await,
        StatusCode::BAD_REQUEST,
        "invalid_input",
        "shard 's1', which the map disables",
    );
    assert_eq!(balances_enabled(&sharded).await, [100], "nothing applied on s0");
    let unresolved = sharded.atomic_recovery().unresolved().await.unwrap();
    assert!(unresolved.is_empty(), "{unresolved:?}");
    assert_eq!(
        execute_plain(&daemon, 0, &debit(0, 1)).await,
        StatusCode::OK,
        "s0's row is free"
    );
}

/// Account 0's balance (shard `s0` stays enabled).
async fn balances_enabled(sharded: &ShardedClient) -> [i64; 1] {
    let result = sharded
        .for_route(route("t0"))
        .execute_sql("SELECT balance FROM accounts WHERE id = 0", Params::none())
        .await
        .unwrap();
    match result.rows[0][0] {
        Value::Integer(n) => [n],
        ref other => panic!("balance {other:?}"),
    }
}

/// Executes `sql` outside any transaction on tenant `t{account}`'s route: the status.
async fn execute_plain(daemon: &Daemon, account: usize, sql: &str) -> StatusCode {
    let request = http_client().post(daemon.url("/api/sql/execute"));
    routed(request, &format!("t{account}"))
        .json(&json!({ "sql": sql }))
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_resolves_a_shard_that_opens_holding_a_committed_intent() {
    use shardlite::client::AtomicStep;
    use std::time::Instant;

    let dir = temp_dir();
    let map = pinned_tenants(2, |i| dir.path().join(format!("s{i}.db")).display().to_string());
    let master = seed_master(dir.path(), map).await;
    // A coordinator in another process stopped after its decision: both intents are left.
    let coordinator = ShardedClient::open(&master).await.unwrap();
    for i in 0..2 {
        open_account(&coordinator, i).await;
    }
    let mut transfer = coordinator.begin_atomic();
    transfer
        .execute(&route("t0"), &debit(0, 30), Params::none())
        .await
        .unwrap();
    transfer
        .execute(&route("t1"), &credit(1, 30), Params::none())
        .await
        .unwrap();
    transfer.commit_until(Some(AtomicStep::Decided)).await.unwrap();
    drop((transfer, coordinator));

    // The daemon's rounds come every 5 s (a quarter of the 30 s abandon age, at most 5 s): a
    // write through it that opens s1 finds the row free well before, by the pass at open.
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let started = Instant::now();
    while execute_plain(&daemon, 1, &credit(1, 0)).await != StatusCode::OK {
        assert!(started.elapsed() < Duration::from_secs(2), "still locked");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let sharded = daemon.state.sharded().unwrap().clone();
    // The pass is counted once it has finished the shard, a little after it freed the row.
    while sharded.atomic_recovery().open_passes() == 0 {
        assert!(started.elapsed() < Duration::from_secs(2), "no pass at open");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let result = sharded
        .for_route(route("t1"))
        .execute_sql("SELECT balance FROM accounts WHERE id = 1", Params::none())
        .await
        .unwrap();
    assert_eq!(result.rows[0][0], Value::Integer(130), "the committed value");
    assert_eq!(balances_enabled(&sharded).await, [70]);
}
