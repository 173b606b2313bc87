//! What one client can cost the others on a real daemon (`127.0.0.1:0`, real SQLite files, real
//! HTTP and gRPC clients): runaway SQL stops when its caller gives up or its request times out,
//! saturation and full queues answer `busy` at once, and remote transactions hold the write lock
//! no longer than SQLite and the idle timeout make them.

use std::time::{Duration, Instant};

use prost::Message as _;
use reqwest::StatusCode;
use reqwest::header::RETRY_AFTER;
use serde_json::{Value, json};
use shardlite::ErrorKind;
use shardlite::client::{FanOut, Params, SqlData, Topology, TransactionData};
use shardlite::map::Secret;
use shardlite::server::ServerConfig;
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::grpc::proto::{self as pb, shardlite_client::ShardliteClient};
use shardlite::wire::{ERROR_CODE_METADATA, KEYSPACE_METADATA, SHARD_KEY_METADATA};

use crate::support::daemon::{Daemon, http_client, routed, start_daemon, tx_url};
use crate::support::{Fixture, route};

/// A read that runs for tens of milliseconds: past the inline budget, so it needs a reader thread.
const OVER_INLINE_BUDGET: &str =
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000) SELECT count(*) FROM n";

/// Counts forever; only a time limit or a cancellation stops it.
const RUNAWAY: &str = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c";

/// Long enough that a runaway query is never stopped by the statement timeout during a test.
const LONG: Duration = Duration::from_secs(300);

const ITEMS_DDL: &str = "CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL)";

/// A daemon config whose statements never time out during a test and whose shards have one reader,
/// so a single stuck query would block every other read on its shard.
fn one_reader() -> ServerConfig {
    ServerConfig {
        statement_timeout: Some(LONG),
        readers: 1,
        ..ServerConfig::default()
    }
}

fn sql(http: &reqwest::Client, daemon: &Daemon, key: &str, text: &str) -> reqwest::RequestBuilder {
    routed(http.post(daemon.url("/api/sql/execute")), key).json(&json!({ "sql": text }))
}

fn grpc(daemon: &Daemon) -> GrpcClient {
    GrpcClient::new(RemoteOptions::new(&daemon.base_url)).unwrap()
}

/// Polls `probe` until it returns `Some`, failing the test after `limit`.
async fn eventually<T>(limit: Duration, what: &str, mut probe: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        // The interval between probes, not a wait for anything in particular.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A read on tenant-a's shard that needs its only reader thread answers within `limit` (each
/// attempt bounded by the client): the query is past the inline budget, so it cannot run on the
/// request's own task, and a reader still busy with an earlier statement would hold it back.
async fn shard_answers_within(http: &reqwest::Client, daemon: &Daemon, limit: Duration) -> Duration {
    let started = Instant::now();
    eventually(limit, "a read on the shard's reader answers", async || {
        let response = sql(http, daemon, "tenant-a", OVER_INLINE_BUDGET)
            .timeout(Duration::from_millis(500))
            .send()
            .await
            .ok()?;
        if response.status() != StatusCode::OK {
            return None;
        }
        let body: Value = response.json().await.ok()?;
        assert_eq!(body["rows"], json!([[300_000]]), "{body}");
        Some(())
    })
    .await;
    started.elapsed()
}

/// Shows that the probe of [`shard_answers_within`] can fail: while `hold` keeps a runaway
/// statement on tenant-a's only reader, the probe does not answer. Returns once a probe was
/// seen held back (it gives up after 200 ms, and its queued job is skipped).
async fn probe_is_held_back(http: &reqwest::Client, daemon: &Daemon, what: &str) {
    eventually(Duration::from_secs(3), what, async || {
        let outcome = sql(http, daemon, "tenant-a", OVER_INLINE_BUDGET)
            .timeout(Duration::from_millis(200))
            .send()
            .await;
        outcome.err().filter(reqwest::Error::is_timeout).map(|_| ())
    })
    .await;
}

async fn problem(response: reqwest::Response, status: StatusCode, code: &str) -> Value {
    let actual = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(actual, status, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["errorCode"], code, "{text}");
    body
}

async fn create_items(daemon: &Daemon) {
    grpc(daemon).execute_sql_on_all_shards(ITEMS_DDL).await.unwrap();
}

async fn insert(http: &reqwest::Client, daemon: &Daemon, key: &str, id: i64) -> reqwest::Response {
    routed(http.post(daemon.url("/api/tables/items/rows")), key)
        .json(&json!({ "values": { "id": id, "tenant": key } }))
        .send()
        .await
        .unwrap()
}

fn begin(http: &reqwest::Client, daemon: &Daemon, key: &str) -> reqwest::RequestBuilder {
    routed(http.post(daemon.url("/api/transactions")), key)
}

async fn begun_id(response: reqwest::Response) -> String {
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    body["transactionId"].as_str().unwrap().to_owned()
}

// ---------------------------------------------------------------------------------------------
// Runaway SQL and callers that stop waiting

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_gives_up_frees_the_shards_connection() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start_with(one_reader()).await;
    let http = http_client();
    // While a runaway query holds the shard's only reader, the probe waits behind it.
    let hog = {
        let request = sql(&http, &daemon, "tenant-a", RUNAWAY).timeout(Duration::from_secs(2));
        tokio::spawn(async move { request.send().await })
    };
    probe_is_held_back(&http, &daemon, "the probe waits while the runaway holds the reader").await;
    let err = hog
        .await
        .unwrap()
        .expect_err("the runaway query does not answer in 2 s");
    assert!(err.is_timeout(), "{err}");
    let waited = shard_answers_within(&http, &daemon, Duration::from_secs(3)).await;
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    // Each runaway query takes the shard's only reader until its client stops waiting; were the
    // engine job not cancelled then, the reader would stay busy for the 300 s statement timeout.
    for _ in 0..3 {
        let outcome = sql(&http, &daemon, "tenant-a", RUNAWAY)
            .timeout(Duration::from_millis(300))
            .send()
            .await;
        let err = outcome.expect_err("the runaway query does not answer in 300 ms");
        assert!(err.is_timeout(), "{err}");
    }
    let waited = shard_answers_within(&http, &daemon, Duration::from_secs(3)).await;
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    // And it stays free: reads that need the reader answer one after another.
    for _ in 0..5 {
        let response = sql(&http, &daemon, "tenant-a", OVER_INLINE_BUDGET)
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
    }
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_timeout_answers_408_and_stops_the_statement() {
    let fixture = Fixture::new().await;
    let daemon = fixture
        .start_with(ServerConfig {
            request_timeout: Some(Duration::from_millis(500)),
            ..one_reader()
        })
        .await;
    let http = http_client();
    let started = Instant::now();
    let runaway = {
        let request = sql(&http, &daemon, "tenant-a", RUNAWAY).timeout(Duration::from_secs(10));
        tokio::spawn(async move { request.send().await })
    };
    // Until the daemon's request timeout stops it, the runaway holds the shard's only reader.
    probe_is_held_back(&http, &daemon, "the probe waits while the runaway holds the reader").await;
    let response = runaway.await.unwrap().unwrap();
    let elapsed = started.elapsed();
    let body = problem(response, StatusCode::REQUEST_TIMEOUT, "request_timeout").await;
    assert!(body["detail"].as_str().unwrap().contains("500 ms"), "{body}");
    assert!(
        elapsed >= Duration::from_millis(500) && elapsed < Duration::from_secs(3),
        "answered after {elapsed:?}"
    );
    // The statement was interrupted: the shard's only reader serves the next query.
    let waited = shard_answers_within(&http, &daemon, Duration::from_secs(3)).await;
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_deadlines_are_honoured_and_the_daemon_keeps_serving() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start_with(one_reader()).await;

    // The deadline in `grpc-timeout` alone, from a client that does not enforce it itself (tonic's
    // channel would give up on its own): the daemon answers DEADLINE_EXCEEDED when it passes, well
    // before its own 60 s limit.
    let message = pb::SqlRequest {
        sql: RUNAWAY.into(),
        params: None,
    }
    .encode_to_vec();
    let mut frame = vec![0u8];
    frame.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
    frame.extend_from_slice(&message);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let h2 = reqwest::Client::builder()
        .no_proxy()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let started = Instant::now();
    let response = h2
        .post(daemon.url("/shardlite.v1.Shardlite/ExecuteSql"))
        .header(reqwest::header::CONTENT_TYPE, "application/grpc")
        .header("te", "trailers")
        .header("grpc-timeout", "400m")
        .header(KEYSPACE_METADATA, "tenants")
        .header(SHARD_KEY_METADATA, "tenant-a")
        .body(frame)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("the daemon honours the caller's deadline");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    assert_eq!(header("grpc-status").as_deref(), Some("4"), "DEADLINE_EXCEEDED");
    assert_eq!(header(ERROR_CODE_METADATA).as_deref(), Some("request_timeout"));
    assert!(header("grpc-message").unwrap_or_default().contains("400"));

    // The crate's client with a short request timeout: it hears back promptly.
    let impatient = GrpcClient::new(
        RemoteOptions::new(&daemon.base_url)
            .with_route(route("tenant-a"))
            .with_request_timeout(Duration::from_millis(400)),
    )
    .unwrap();
    let started = Instant::now();
    let err = impatient.execute_sql(RUNAWAY, Params::none()).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        matches!(err.kind(), ErrorKind::RequestTimeout | ErrorKind::Unavailable),
        "{err:?}"
    );

    // Both runaway statements were stopped: the shard's only reader answers again, to a query
    // too long to run on the request's own task.
    let patient = grpc(&daemon).with_route(route("tenant-a"));
    let answer = eventually(
        Duration::from_secs(3),
        "the shard's reader answers over gRPC",
        async || {
            tokio::time::timeout(
                Duration::from_millis(500),
                patient.execute_sql(OVER_INLINE_BUDGET, Params::none()),
            )
            .await
            .ok()?
            .ok()
        },
    )
    .await;
    assert_eq!(answer.rows[0][0], shardlite::client::Value::Integer(300_000));
    daemon.stop().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Saturation

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturated_daemon_answers_busy_at_once_over_rest_and_grpc() {
    let fixture = Fixture::new().await;
    let daemon = fixture
        .start_with(ServerConfig {
            max_concurrent_requests: 1,
            ..one_reader()
        })
        .await;
    let http = http_client();
    // One runaway request takes the daemon's only slot.
    let send_hog = || {
        let request = sql(&http, &daemon, "tenant-a", RUNAWAY).timeout(LONG);
        tokio::spawn(async move { request.send().await })
    };
    let mut hog = send_hog();
    let refused = eventually(
        Duration::from_secs(5),
        "the daemon refuses a second request",
        async || {
            if hog.is_finished() {
                // A probe held the slot when the hog arrived, so the hog was the one refused.
                hog = send_hog();
            }
            let started = Instant::now();
            let response = http.get(daemon.url("/api/sharding/map")).send().await.unwrap();
            (response.status() == StatusCode::SERVICE_UNAVAILABLE).then(|| (response, started.elapsed()))
        },
    )
    .await;
    let (response, took) = refused;
    assert!(took < Duration::from_secs(1), "the refusal took {took:?}");
    assert_eq!(response.headers().get(RETRY_AFTER).unwrap(), "1");
    assert_eq!(
        response.headers().get(reqwest::header::CONTENT_TYPE).unwrap(),
        "application/problem+json"
    );
    let body = problem(response, StatusCode::SERVICE_UNAVAILABLE, "busy").await;
    assert!(body["detail"].as_str().unwrap().contains("1 requests"), "{body}");

    // gRPC shares the limit: UNAVAILABLE with the `busy` code, at once.
    let mut raw = ShardliteClient::connect(daemon.base_url.clone()).await.unwrap();
    let started = Instant::now();
    let status = raw.get_shard_map(pb::Empty {}).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert_eq!(
        status.metadata().get(ERROR_CODE_METADATA).and_then(|v| v.to_str().ok()),
        Some("busy")
    );
    let err = grpc(&daemon).shard_map().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err:?}");

    // The hog's client goes away: its slot and its reader are free again.
    hog.abort();
    let _ = hog.await;
    let waited = shard_answers_within(&http, &daemon, Duration::from_secs(3)).await;
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_engine_queue_answers_busy_at_once() {
    let fixture = Fixture::new().await;
    let daemon = fixture
        .start_with(ServerConfig {
            max_queued_jobs: 1,
            ..one_reader()
        })
        .await;
    let http = http_client();
    let hog = {
        let request = sql(&http, &daemon, "tenant-a", RUNAWAY).timeout(LONG);
        tokio::spawn(async move { request.send().await })
    };
    // With the reader stuck, one read too long to run inline may wait in the queue; another one
    // at the same time is refused at once. Two are sent together, so that the outcome does not
    // depend on when the daemon notices that an earlier probe's client gave up (a probe that got
    // queued gives up after 300 ms).
    let probe = || async {
        let response = sql(&http, &daemon, "tenant-a", OVER_INLINE_BUDGET)
            .timeout(Duration::from_millis(300))
            .send()
            .await
            .ok()?;
        if response.status() != StatusCode::SERVICE_UNAVAILABLE {
            return None;
        }
        let retry_after = response.headers().get(RETRY_AFTER).cloned();
        // The 300 ms limit covers the body too: a refusal whose body was cut off by it on a
        // loaded machine counts as no answer, and the probes go again.
        let text = response.text().await.ok()?;
        Some((retry_after, text))
    };
    let (retry_after, text) = eventually(Duration::from_secs(5), "a read is refused as busy", async || {
        let (first, second) = tokio::join!(probe(), probe());
        first.or(second)
    })
    .await;
    assert_eq!(retry_after.unwrap(), "1");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["errorCode"], "busy", "{text}");
    assert!(body["detail"].as_str().unwrap().contains("waiting"), "{body}");
    // The other shard has its own queue.
    let other = sql(&http, &daemon, "tenant-b", "SELECT 1").send().await.unwrap();
    assert_eq!(other.status(), StatusCode::OK);
    // A short read needs no reader thread at all: it runs on the request's task.
    let short = sql(&http, &daemon, "tenant-a", "SELECT 1").send().await.unwrap();
    assert_eq!(short.status(), StatusCode::OK);

    hog.abort();
    let _ = hog.await;
    let waited = shard_answers_within(&http, &daemon, Duration::from_secs(3)).await;
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    daemon.stop().await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Remote transactions and other writers

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_that_only_began_or_read_cost_other_writers_nothing() {
    let fixture = Fixture::new().await;
    // A long idle timeout: nothing here may depend on a transaction expiring.
    let daemon = fixture
        .start_with(ServerConfig {
            transaction_idle_timeout: Duration::from_secs(60),
            ..ServerConfig::default()
        })
        .await;
    let http = http_client();
    create_items(&daemon).await;
    let idle = begun_id(begin(&http, &daemon, "tenant-a").send().await.unwrap()).await;
    let reader = begun_id(begin(&http, &daemon, "tenant-a").send().await.unwrap()).await;
    let read = http
        .post(tx_url(&daemon, &reader, "execute"))
        .json(&json!({ "sql": "SELECT count(*) FROM items" }))
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), StatusCode::OK);

    // Writers on the same shard go straight through; a held write lock would make each wait for
    // the 5 s busy timeout and then answer 503.
    for id in 1..=5 {
        let started = Instant::now();
        let response = insert(&http, &daemon, "tenant-a", id).await;
        assert_eq!(response.status(), StatusCode::CREATED);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "waited {:?}",
            started.elapsed()
        );
    }
    // Both transactions are still usable, and the reader's snapshot is its own.
    let write = http
        .post(tx_url(&daemon, &idle, "execute"))
        .json(&json!({ "sql": "INSERT INTO items (id, tenant) VALUES (100, 'tx')" }))
        .send()
        .await
        .unwrap();
    assert_eq!(write.status(), StatusCode::OK);
    let committed = http.post(tx_url(&daemon, &idle, "commit")).send().await.unwrap();
    assert_eq!(committed.status(), StatusCode::NO_CONTENT);
    let rolled_back = http.post(tx_url(&daemon, &reader, "rollback")).send().await.unwrap();
    assert_eq!(rolled_back.status(), StatusCode::NO_CONTENT);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_transaction_that_wrote_delays_writers_by_at_most_the_idle_timeout() {
    let idle = Duration::from_secs(1);
    let fixture = Fixture::new().await;
    let daemon = fixture
        .start_with(ServerConfig {
            transaction_idle_timeout: idle,
            ..ServerConfig::default()
        })
        .await;
    let http = http_client();
    create_items(&daemon).await;
    let id = begun_id(begin(&http, &daemon, "tenant-a").send().await.unwrap()).await;
    let wrote = http
        .post(tx_url(&daemon, &id, "execute"))
        .json(&json!({ "sql": "INSERT INTO items (id, tenant) VALUES (1, 'abandoned')" }))
        .send()
        .await
        .unwrap();
    assert_eq!(wrote.status(), StatusCode::OK);
    let last_use = Instant::now();

    // The client vanishes. Writers on the shard wait for the write lock until the idle timeout
    // rolls the transaction back, then all succeed: none waits long enough to answer busy.
    let writers = (2..=5).map(|id| {
        let http = http.clone();
        let url = daemon.url("/api/tables/items/rows");
        tokio::spawn(async move {
            let response = routed(http.post(url), "tenant-a")
                .json(&json!({ "values": { "id": id, "tenant": "tenant-a" } }))
                .send()
                .await
                .unwrap();
            (response.status(), last_use.elapsed())
        })
    });
    for writer in futures_util::future::join_all(writers).await {
        let (status, done_after) = writer.unwrap();
        assert_eq!(status, StatusCode::CREATED);
        // Held by the transaction (so at least most of the idle timeout), and no longer than it
        // plus scheduling.
        assert!(done_after >= idle / 2, "done {done_after:?} after the last use");
        assert!(
            done_after < idle + Duration::from_millis(1500),
            "done {done_after:?} after the last use"
        );
    }
    let late = http
        .post(tx_url(&daemon, &id, "execute"))
        .json(&json!({ "sql": "SELECT 1" }))
        .send()
        .await
        .unwrap();
    problem(late, StatusCode::CONFLICT, "expired").await;
    let abandoned = routed(http.get(daemon.url("/api/tables/items/rows/1")), "tenant-a")
        .send()
        .await
        .unwrap();
    assert_eq!(abandoned.status(), StatusCode::NOT_FOUND);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_transaction_limit_spans_shards_and_answers_busy() {
    const KEY: &str = "limits-key";
    let idle = Duration::from_millis(400);
    let fixture = Fixture::new().await;
    let state = fixture
        .state(ServerConfig {
            api_key: Some(Secret::new(KEY)),
            max_open_transactions_per_key: 2,
            transaction_idle_timeout: idle,
            ..ServerConfig::default()
        })
        .await;
    let daemon = start_daemon(state.clone()).await;
    let http = http_client();
    let keyed = |request: reqwest::RequestBuilder| request.header("X-CSharpDB-Api-Key", KEY);

    // One transaction on each shard: the limit is the key's, not a shard's (8 per shard).
    let on_s0 = begun_id(keyed(begin(&http, &daemon, "tenant-a")).send().await.unwrap()).await;
    let _on_s1 = begun_id(keyed(begin(&http, &daemon, "tenant-b")).send().await.unwrap()).await;
    for key in ["tenant-a", "tenant-b"] {
        let started = Instant::now();
        let refused = keyed(begin(&http, &daemon, key)).send().await.unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "took {:?}",
            started.elapsed()
        );
        assert_eq!(refused.headers().get(RETRY_AFTER).unwrap(), "1");
        let body = problem(refused, StatusCode::SERVICE_UNAVAILABLE, "busy").await;
        assert!(
            body["detail"].as_str().unwrap().contains("2 remote transactions"),
            "{body}"
        );
    }
    let over_grpc = GrpcClient::new(
        RemoteOptions::new(&daemon.base_url)
            .with_api_key(KEY)
            .with_route(route("tenant-a")),
    )
    .unwrap();
    assert_eq!(over_grpc.begin_transaction().await.unwrap_err().kind(), ErrorKind::Busy);
    assert_eq!(state.open_transaction_count(), 2);

    // Ending one frees its place at once.
    let rolled_back = keyed(http.post(tx_url(&daemon, &on_s0, "rollback")))
        .send()
        .await
        .unwrap();
    assert_eq!(rolled_back.status(), StatusCode::NO_CONTENT);
    assert_eq!(state.open_transaction_count(), 1);
    let again = over_grpc.begin_transaction().await.unwrap();
    assert!(
        again.transaction_id.starts_with("csdbshard:1:s0:"),
        "{}",
        again.transaction_id
    );

    // Abandoned ones free theirs after the idle timeout, without anyone touching them again.
    let started = Instant::now();
    eventually(
        Duration::from_secs(5),
        "abandoned transactions leave the table",
        async || (state.open_transaction_count() == 0).then_some(()),
    )
    .await;
    assert!(started.elapsed() >= idle / 2, "reaped after {:?}", started.elapsed());
    let fresh = begun_id(keyed(begin(&http, &daemon, "tenant-b")).send().await.unwrap()).await;
    let committed = keyed(http.post(tx_url(&daemon, &fresh, "commit")))
        .send()
        .await
        .unwrap();
    assert_eq!(committed.status(), StatusCode::NO_CONTENT);
    assert_eq!(state.open_transaction_count(), 0);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemons_transaction_table_stays_bounded_under_churn() {
    let fixture = Fixture::new().await;
    let state = fixture
        .state(ServerConfig {
            max_open_transactions_per_key: 4,
            transaction_idle_timeout: Duration::from_millis(200),
            ..ServerConfig::default()
        })
        .await;
    let daemon = start_daemon(state.clone()).await;
    let http = http_client();
    // Commits, rollbacks and ids the engine no longer knows all leave the table at once.
    for action in ["commit", "rollback"] {
        let id = begun_id(begin(&http, &daemon, "tenant-a").send().await.unwrap()).await;
        let ended = http.post(tx_url(&daemon, &id, action)).send().await.unwrap();
        assert_eq!(ended.status(), StatusCode::NO_CONTENT);
        assert_eq!(state.open_transaction_count(), 0, "after {action}");
    }
    // Clients that begin and vanish, round after round: the table never holds more than the
    // limit, and every round gets its transactions once the last round's have expired.
    let mut begun = 0;
    for round in 0..3 {
        let ids = eventually(Duration::from_secs(5), "a round of begins", async || {
            let mut ids = Vec::new();
            for key in ["tenant-a", "tenant-b", "tenant-c", "tenant-d"] {
                let response = begin(&http, &daemon, key).send().await.unwrap();
                if response.status() == StatusCode::OK {
                    ids.push(begun_id(response).await);
                }
            }
            assert!(state.open_transaction_count() <= 4, "round {round}");
            (!ids.is_empty()).then_some(ids)
        })
        .await;
        begun += ids.len();
    }
    assert!(begun >= 3, "{begun}");
    eventually(Duration::from_secs(5), "the table empties", async || {
        (state.open_transaction_count() == 0).then_some(())
    })
    .await;
    daemon.stop().await.unwrap();
}
