//! Atomic transactions whose participants include a data host's shard (`remoteShardId`, another
//! daemon on 127.0.0.1:0), each test run with that shard reached over REST and over gRPC
//! (`name::http`, `name::grpc`): a transfer across a local shard and the host's commits on both,
//! with either one first (holding the decision), in-process and through a daemon coordinating a
//! REST atomic transaction; rollback and drop leave nothing; a conflicting writer on the remote
//! participant gets `row_locked` while the commit is held, and a writer of another row there goes
//! through; a coordinator stopped after every named step is finished by recovery (the total
//! unchanged, no intent, record or lock left on either side), and what it left on the host alone
//! is found by the background resolver of a restarted client; bad input (an unknown participant
//! session, executing after prepare or commit, a malformed id, the participant session limit
//! shared by both surfaces, participant calls to a daemon that serves a shard map) is a clear
//! 4xx over REST and the matching status over gRPC.
#![cfg(all(feature = "server", feature = "http", feature = "grpc"))]

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value as Json, json};
use shardlite::ErrorKind;
use shardlite::client::{AtomicStep, Params, ShardedClient, ShardedClientOptions, SqlData, UnresolvedState};
use shardlite::engine::EngineConfig;
use shardlite::server::{ServerConfig, ServerState};
use shardlite::wire::proto as pb;
use shardlite::wire::{ERROR_CODE_METADATA, SHARD_HEADER, SHARD_METADATA};

use crate::support::daemon::{Daemon, http_client, remote_shard, routed, start_daemon, start_daemon_on, tx_url};
use crate::support::many::{balance, open_account, pinned_tenants};
use crate::support::{route, seed_master, temp_dir};

/// Account `i` lives on tenant `t{i}`: `t0` on the local shard `s0`, `t1` on the host's `h-1`,
/// reached over the setup's transport.
struct Setup {
    dir: tempfile::TempDir,
    host: Daemon,
    sharded: ShardedClient,
}

async fn start_host(dir: &Path, config: ServerConfig) -> Daemon {
    let folder = dir.join("host");
    std::fs::create_dir_all(&folder).unwrap();
    let state = ServerState::open_shard_dir(&folder, config).expect("a data host");
    state.host().unwrap().create_shard("h-1").await.unwrap();
    start_daemon(state).await
}

fn client_options(abandon: Duration) -> ShardedClientOptions {
    ShardedClientOptions::with_engine(EngineConfig {
        atomic_abandon_age: abandon,
        ..EngineConfig::default()
    })
}

/// The host's shard `h-1` is the map's `s1`, reached over `transport` (`http` or `grpc`).
async fn setup_with(transport: &str, host_config: ServerConfig) -> Setup {
    let dir = temp_dir();
    let host = start_host(dir.path(), host_config).await;
    let mut map = pinned_tenants(2, |i| dir.path().join(format!("s{i}.db")).display().to_string());
    let mut shard = remote_shard("s1", &host, transport);
    shard.remote_shard_id = Some("h-1".into());
    map.shards[1] = shard;
    let master = seed_master(dir.path(), map).await;
    let sharded = ShardedClient::open_with(&master, client_options(Duration::from_secs(30)))
        .await
        .unwrap();
    for i in 0..2 {
        open_account(&sharded, i).await;
    }
    Setup { dir, host, sharded }
}

async fn setup(transport: &str) -> Setup {
    setup_with(transport, ServerConfig::default()).await
}

/// Runs each named test once with the remote participant reached over REST (`name::http`) and
/// once over gRPC (`name::grpc`).
macro_rules! by_transport {
    ($($test:ident),* $(,)?) => {
        $(mod $test {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn http() {
                super::$test("http").await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn grpc() {
                super::$test("grpc").await;
            }
        })*
    };
}

by_transport!(
    a_transfer_across_a_local_and_a_data_host_shard_commits_on_both,
    a_daemon_coordinates_a_rest_atomic_transaction_with_a_data_host_participant,
    rollback_and_drop_leave_nothing_on_either_shard,
    a_conflicting_writer_on_the_remote_participant_gets_row_locked_while_the_commit_is_held,
    recovery_finishes_a_coordinator_stopped_after_every_step_with_a_data_host_participant,
    the_background_resolver_finishes_what_a_crash_left_on_the_remote_shard_alone,
);

impl Setup {
    fn master(&self) -> PathBuf {
        self.dir.path().join("master.db")
    }

    /// The host's shard `h-1`, read in its process.
    fn remote_db(&self) -> shardlite::engine::Database {
        let client = self.host.state.host().unwrap().client("h-1").unwrap();
        client.database().clone()
    }

    /// The intents and decision records left on the host's `h-1`.
    async fn remote_leftovers(&self) -> usize {
        let db = self.remote_db();
        db.atomic().intents().await.unwrap().len() + db.atomic().decisions().await.unwrap().len()
    }
}

async fn balances(sharded: &ShardedClient) -> (i64, i64) {
    (balance(sharded, 0).await, balance(sharded, 1).await)
}

/// An atomic transfer of `amount` from account `from` to `to`, executed but not committed.
async fn transfer(
    sharded: &ShardedClient,
    from: usize,
    to: usize,
    amount: i64,
) -> shardlite::client::AtomicTransaction {
    let mut tx = sharded.begin_atomic();
    for (i, delta) in [(from, -amount), (to, amount)] {
        tx.execute(
            &route(&format!("t{i}")),
            &format!("UPDATE accounts SET balance = balance + ({delta}) WHERE id = {i}"),
            Params::none(),
        )
        .await
        .unwrap();
    }
    tx
}

/// Writes both accounts back to themselves: fails while a lock is held.
async fn both_writable(sharded: &ShardedClient) -> shardlite::Result<()> {
    for i in 0..2 {
        sharded
            .for_route(route(&format!("t{i}")))
            .execute_sql(
                &format!("UPDATE accounts SET balance = balance WHERE id = {i}"),
                Params::none(),
            )
            .await?;
    }
    Ok(())
}

async fn a_transfer_across_a_local_and_a_data_host_shard_commits_on_both(transport: &str) {
    let setup = setup(transport).await;
    let sharded = &setup.sharded;
    let tx = transfer(sharded, 0, 1, 10).await;
    assert_eq!(tx.participants(), ["s0", "s1"]);
    tx.commit().await.unwrap();
    assert_eq!(balances(sharded).await, (90, 110));
    // The host's shard first: it holds the decision.
    let tx = transfer(sharded, 1, 0, 25).await;
    assert_eq!(tx.participants(), ["s1", "s0"]);
    tx.commit().await.unwrap();
    assert_eq!(balances(sharded).await, (115, 85));
    // One remote participant alone runs the protocol with that one.
    let mut tx = sharded.begin_atomic();
    tx.execute(
        &route("t1"),
        "UPDATE accounts SET balance = balance + 1 WHERE id = 1",
        Params::none(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(balances(sharded).await, (115, 86));
    assert!(setup.remote_db().atomic().intents().await.unwrap().is_empty());
    assert!(sharded.atomic_recovery().unresolved().await.unwrap().is_empty());
    both_writable(sharded).await.unwrap();
}

async fn a_daemon_coordinates_a_rest_atomic_transaction_with_a_data_host_participant(transport: &str) {
    let setup = setup(transport).await;
    let router = start_daemon_on(&setup.master(), ServerConfig::default()).await;
    let begun: Json = http_client()
        .post(router.url("/api/transactions"))
        .json(&json!({ "atomic": true }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = begun["transactionId"].as_str().unwrap().to_owned();
    for (tenant, sql) in [
        ("t1", "UPDATE accounts SET balance = balance - 30 WHERE id = 1"),
        ("t0", "UPDATE accounts SET balance = balance + 30 WHERE id = 0"),
    ] {
        let response = routed(http_client().post(tx_url(&router, &id, "execute")), tenant)
            .json(&json!({ "sql": sql }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{}", response.text().await.unwrap());
    }
    let response = http_client().post(tx_url(&router, &id, "commit")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    assert_eq!(balances(&setup.sharded).await, (130, 70));
    assert_eq!(setup.remote_db().atomic().intents().await.unwrap().len(), 0);
    router.stop().await.unwrap();
}

async fn rollback_and_drop_leave_nothing_on_either_shard(transport: &str) {
    let setup = setup(transport).await;
    let sharded = &setup.sharded;
    transfer(sharded, 0, 1, 10).await.rollback().await.unwrap();
    assert_eq!(balances(sharded).await, (100, 100));
    drop(transfer(sharded, 1, 0, 10).await);
    // The drop rolls the remote session back in the background; the writes below wait for it.
    both_writable(sharded).await.unwrap();
    assert_eq!(balances(sharded).await, (100, 100));
    assert_eq!(setup.remote_leftovers().await, 0);
}

async fn a_conflicting_writer_on_the_remote_participant_gets_row_locked_while_the_commit_is_held(transport: &str) {
    let setup = setup(transport).await;
    let sharded = &setup.sharded;
    let mut tx = transfer(sharded, 0, 1, 10).await;
    tx.commit_until(Some(AtomicStep::Prepared(1))).await.unwrap();
    drop(tx);
    let remote = sharded.for_route(route("t1"));
    let err = remote
        .execute_sql("UPDATE accounts SET balance = 0 WHERE id = 1", Params::none())
        .await
        .expect_err("the row is locked");
    assert_eq!(err.kind(), ErrorKind::RowLocked, "{err:?}");
    remote
        .execute_sql("INSERT INTO accounts VALUES (101, 0)", Params::none())
        .await
        .expect("another row of the same shard is writable");
    assert_eq!(
        balances(sharded).await,
        (100, 100),
        "readers see the last committed values"
    );
    let unresolved = sharded.atomic_recovery().unresolved().await.unwrap();
    assert!(
        unresolved
            .iter()
            .any(|u| u.shard_id == "s1" && u.state == UnresolvedState::Prepared && u.participants == ["s0", "s1"]),
        "the remote intent is listed: {unresolved:?}"
    );
    let recovered = ShardedClient::open_with(&setup.master(), client_options(Duration::ZERO))
        .await
        .unwrap();
    recovered.atomic_recovery().resolve().await.unwrap();
    assert_eq!(balances(&recovered).await, (100, 100), "presumed abort");
    assert_eq!(setup.remote_leftovers().await, 0);
    both_writable(&recovered).await.unwrap();
}

/// Stops a transfer from `from` to `to` (the first holds the decision) after `step`, then
/// recovers with a client whose abandon age has passed; returns the balances.
async fn stop_and_recover(transport: &str, from: usize, to: usize, step: AtomicStep) -> (i64, i64) {
    let setup = setup(transport).await;
    let mut tx = transfer(&setup.sharded, from, to, 10).await;
    tx.commit_until(Some(step)).await.unwrap();
    drop(tx);
    let recovered = ShardedClient::open_with(&setup.master(), client_options(Duration::ZERO))
        .await
        .unwrap();
    let context = format!("{from}->{to} after {step:?} over {transport}");
    // The restarted client's own resolver may be finishing the same transaction beside this
    // resolve (a tombstone it writes is forgotten by its next step): resolve until nothing is left.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        recovered.atomic_recovery().resolve().await.unwrap();
        let unresolved = recovered.atomic_recovery().unresolved().await.unwrap();
        let left = setup.remote_leftovers().await;
        if unresolved.is_empty() && left == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{context}: {unresolved:?}, {left} left on the host"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    both_writable(&recovered)
        .await
        .unwrap_or_else(|err| panic!("{context}: still locked: {err}"));
    let (a, b) = balances(&recovered).await;
    assert_eq!(a + b, 200, "{context}");
    (a, b)
}

async fn recovery_finishes_a_coordinator_stopped_after_every_step_with_a_data_host_participant(transport: &str) {
    for (from, to) in [(0, 1), (1, 0)] {
        for (step, lands) in [
            (AtomicStep::DecisionCreated, false),
            (AtomicStep::PreparedBeforeRecord(1), false),
            (AtomicStep::Prepared(1), false),
            (AtomicStep::Decided, true),
            (AtomicStep::Applied(1), true),
            (AtomicStep::Applied(2), true),
        ] {
            let (a, b) = stop_and_recover(transport, from, to, step).await;
            let landed = if from == 0 {
                (a, b) == (90, 110)
            } else {
                (a, b) == (110, 90)
            };
            assert_eq!(landed, lands, "{from}->{to} after {step:?}: ({a}, {b})");
        }
    }
}

async fn the_background_resolver_finishes_what_a_crash_left_on_the_remote_shard_alone(transport: &str) {
    let setup = setup(transport).await;
    let mut tx = transfer(&setup.sharded, 0, 1, 10).await;
    // The host prepared; the local first participant never did: nothing here refers to it.
    tx.commit_until(Some(AtomicStep::PreparedBeforeRecord(1)))
        .await
        .unwrap();
    drop(tx);
    assert_eq!(setup.remote_leftovers().await, 1, "an intent on the host alone");
    let mut options = client_options(Duration::from_millis(300));
    options.atomic_resolver_period = Some(Duration::from_millis(50));
    let restarted = ShardedClient::open_with(&setup.master(), options).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while setup.remote_leftovers().await > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the resolver left the host's intent"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    both_writable(&restarted).await.unwrap();
    assert_eq!(balances(&restarted).await, (100, 100), "presumed abort");
    assert!(restarted.atomic_recovery().unresolved().await.unwrap().is_empty());
}

async fn post(host: &Daemon, path: &str, body: Json) -> (StatusCode, Json) {
    let response = http_client()
        .post(host.url(path))
        .header(SHARD_HEADER, "h-1")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Json::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_clear_4xx_and_the_session_limit_answers_busy() {
    let config = ServerConfig {
        max_atomic_participant_sessions: 1,
        ..ServerConfig::default()
    };
    let setup = setup_with("http", config).await;
    let host = &setup.host;
    let unknown = "0123456789abcdef0123456789abcdef";
    let (status, body) = post(
        host,
        &format!("/api/atomic/sessions/{unknown}/execute"),
        json!({"sql": "SELECT 1"}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    let (status, body) = post(host, "/api/atomic/sessions", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let session = body["transactionId"].as_str().unwrap().to_owned();
    let (status, body) = post(host, "/api/atomic/sessions", json!({})).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "past the limit: {body}");
    assert_eq!(body["errorCode"], "busy", "{body}");

    let execute = format!("/api/atomic/sessions/{session}/execute");
    let (status, body) = post(
        host,
        &execute,
        json!({"sql": "UPDATE accounts SET balance = 7 WHERE id = 1"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let prepare = format!("/api/atomic/sessions/{session}/prepare");
    let bad = json!({"transactionId": "csdbatomic:nothex", "participants": ["s1"], "holdsDecision": true, "startedUnixMs": 0});
    let (status, body) = post(host, &prepare, bad).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a malformed transaction id: {body}");
    let (status, body) = post(host, &format!("/api/atomic/sessions/{session}/rollback"), json!({})).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, body) = post(host, &execute, json!({"sql": "SELECT 1"})).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "executing after the session ended: {body}"
    );
    let (status, body) = post(
        host,
        "/api/atomic/transactions/csdbatomic:zz/steps",
        json!({"step": "apply"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(balance(&setup.sharded, 1).await, 100, "nothing was applied");

    executing_after_commit_is_not_found(&setup.sharded).await;
}

/// Through the coordinator: a statement after commit finds no transaction, and nothing more
/// changes.
async fn executing_after_commit_is_not_found(sharded: &ShardedClient) {
    let mut tx = transfer(sharded, 0, 1, 10).await;
    tx.commit_until(None).await.unwrap();
    let err = tx.execute(&route("t1"), "SELECT 1", Params::none()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err:?}");
    drop(tx);
    assert_eq!(balances(sharded).await, (90, 110));
}

type Grpc = pb::shardlite_client::ShardliteClient<tonic::transport::Channel>;

/// `message` addressed to the data host's shard `h-1`.
fn on_h1<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(SHARD_METADATA, "h-1".parse().unwrap());
    request
}

/// The status's code and its error-code trailer.
fn refusal<T: std::fmt::Debug>(outcome: Result<tonic::Response<T>, tonic::Status>) -> (tonic::Code, String) {
    let status = outcome.expect_err("refused");
    let code = status.metadata().get(ERROR_CODE_METADATA).and_then(|v| v.to_str().ok());
    (status.code(), code.unwrap_or_default().to_owned())
}

fn session_sql(session: &str, sql: &str) -> pb::AtomicSessionSqlRequest {
    pb::AtomicSessionSqlRequest {
        session_id: session.to_owned(),
        sql: sql.to_owned(),
        params: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_over_grpc_answers_its_status_and_the_session_limit_is_shared_with_rest() {
    use tonic::Code;
    let config = ServerConfig {
        max_atomic_participant_sessions: 1,
        ..ServerConfig::default()
    };
    let setup = setup_with("grpc", config).await;
    let mut grpc = Grpc::connect(setup.host.base_url.clone()).await.unwrap();
    let unknown = "0123456789abcdef0123456789abcdef";
    let outcome = grpc
        .execute_in_atomic_session(on_h1(session_sql(unknown, "SELECT 1")))
        .await;
    assert_eq!(refusal(outcome), (Code::NotFound, "not_found".into()));
    let outcome = grpc
        .rollback_atomic_session(on_h1(pb::AtomicSessionRequest {
            session_id: unknown.into(),
        }))
        .await;
    assert_eq!(refusal(outcome), (Code::NotFound, "not_found".into()));

    // One table of participant sessions: a REST begin takes the only place.
    let (status, body) = post(&setup.host, "/api/atomic/sessions", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let outcome = grpc.begin_atomic_session(on_h1(pb::Empty {})).await;
    assert_eq!(refusal(outcome), (Code::Unavailable, "busy".into()), "past the limit");
    let rest_session = body["transactionId"].as_str().unwrap().to_owned();
    grpc.rollback_atomic_session(on_h1(pb::AtomicSessionRequest {
        session_id: rest_session,
    }))
    .await
    .expect("a REST session rolled back over gRPC");

    let session = grpc
        .begin_atomic_session(on_h1(pb::Empty {}))
        .await
        .unwrap()
        .into_inner()
        .transaction_id;
    let write = session_sql(&session, "UPDATE accounts SET balance = 7 WHERE id = 1");
    grpc.execute_in_atomic_session(on_h1(write)).await.unwrap();
    let prepare = pb::PrepareAtomicSessionRequest {
        session_id: session.clone(),
        transaction_id: "csdbatomic:nothex".into(),
        participants: vec!["s1".into()],
        holds_decision: true,
        started_unix_ms: 0,
    };
    let outcome = grpc.prepare_atomic_session(on_h1(prepare)).await;
    assert_eq!(refusal(outcome), (Code::InvalidArgument, "invalid_input".into()));
    // A malformed transaction id, and a step the daemon does not know.
    let valid_id = format!("csdbatomic:{unknown}");
    for (id, step) in [
        ("csdbatomic:zz", pb::AtomicStepKind::Apply),
        (valid_id.as_str(), pb::AtomicStepKind::Unspecified),
    ] {
        let request = pb::AtomicStepRequest {
            transaction_id: id.into(),
            step: step as i32,
            ..pb::AtomicStepRequest::default()
        };
        let outcome = grpc.run_atomic_step(on_h1(request)).await;
        assert_eq!(
            refusal(outcome),
            (Code::InvalidArgument, "invalid_input".into()),
            "{step:?} {id}"
        );
    }
    let request = pb::AtomicDecisionRequest {
        transaction_id: "csdbatomic:zz".into(),
    };
    let outcome = grpc.get_atomic_decision(on_h1(request)).await;
    assert_eq!(refusal(outcome), (Code::InvalidArgument, "invalid_input".into()));
    // No shard named on a data host.
    let outcome = grpc.get_atomic_state(pb::Empty {}).await;
    assert_eq!(refusal(outcome), (Code::InvalidArgument, "invalid_input".into()));
    grpc.rollback_atomic_session(on_h1(pb::AtomicSessionRequest {
        session_id: session.clone(),
    }))
    .await
    .unwrap();
    let outcome = grpc
        .execute_in_atomic_session(on_h1(session_sql(&session, "SELECT 1")))
        .await;
    assert_eq!(refusal(outcome), (Code::NotFound, "not_found".into()), "after it ended");
    assert_eq!(balance(&setup.sharded, 1).await, 100, "nothing was applied");

    // A daemon that serves a shard map coordinates its own: participant calls are refused.
    let router = start_daemon_on(&setup.master(), ServerConfig::default()).await;
    let mut coordinating = Grpc::connect(router.base_url.clone()).await.unwrap();
    let outcome = coordinating.begin_atomic_session(pb::Empty {}).await;
    let (code, error) = refusal(outcome);
    assert_eq!((code, error.as_str()), (Code::InvalidArgument, "invalid_input"));
    let outcome = coordinating.get_atomic_state(pb::Empty {}).await;
    assert_eq!(refusal(outcome), (Code::InvalidArgument, "invalid_input".into()));
    router.stop().await.unwrap();

    executing_after_commit_is_not_found(&setup.sharded).await;
}
