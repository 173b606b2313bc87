//! Every refusal reaches the client whole: 400, 401, 403, 404, 409, 413, 422 and 503, over
//! HTTP/1.1, HTTP/2 over TLS (ALPN `h2`) and cleartext HTTP/2 (prior knowledge), 50 times each,
//! each answered with its status and problem body. An answer the daemon gives before reading the
//! request body does not reset the HTTP/2 stream (which made clients such as curl lose the
//! answer). And SQL sent with a key that holds `read` and not `write` runs read-only over REST
//! and gRPC, a statement that would write being refused naming the `write` scope.
#![cfg(all(feature = "server", feature = "grpc"))]

use std::future::poll_fn;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::task::Poll;

use axum::body::Bytes;
use futures_util::StreamExt as _;
use reqwest::StatusCode;
use serde_json::{Value, json};
use shardlite::server::keys::KeyRing;
use shardlite::server::{KEYSPACE_HEADER, SHARD_KEY_HEADER, ServerConfig, ServerState, ServerTls};
use shardlite::transport::grpc::proto::{self as pb, shardlite_client::ShardliteClient};
use shardlite::wire::{ERROR_CODE_METADATA, KEYSPACE_METADATA, SHARD_KEY_METADATA};
use tokio::io::AsyncWriteExt as _;

use crate::support::Fixture;
use crate::support::daemon::{Daemon, http_client, install_crypto_provider, start_daemon, start_tls_daemon};
use crate::support::tls::TlsFixture;

const KEY_HEADER: &str = "X-CSharpDB-Api-Key";
const READ_KEY: &str = "key-read";
const WRITE_KEY: &str = "key-write";
/// Requests per refusal and protocol.
const REPEATS: usize = 50;
/// Requests in flight at once per refusal and protocol.
const IN_FLIGHT: usize = 10;
/// The body limit of the daemons here: small, so a 413 costs little.
const BODY_LIMIT: usize = 1024;

fn write_keys(path: &Path) {
    let keys = json!([
        {"name": "reader", "key": READ_KEY, "scopes": ["read"], "keyspaces": ["*"]},
        {"name": "writer", "key": WRITE_KEY, "scopes": ["read", "write"], "keyspaces": ["*"]},
    ]);
    std::fs::write(path, serde_json::to_vec(&keys).unwrap()).unwrap();
}

fn config(fixture: &Fixture, max_concurrent_requests: usize) -> ServerConfig {
    let file = fixture.dir.path().join("keys.json");
    write_keys(&file);
    ServerConfig {
        api_keys: Some(KeyRing::load(&file).expect("the key file loads")),
        body_limit: BODY_LIMIT,
        max_concurrent_requests,
        ..ServerConfig::default()
    }
}

/// A daemon over `fixture`'s master, in plain text or with `tls`.
async fn daemon(fixture: &Fixture, tls: Option<&TlsFixture>, max_concurrent_requests: usize) -> Daemon {
    let state = ServerState::open(&fixture.master, config(fixture, max_concurrent_requests))
        .await
        .expect("open the master");
    match tls {
        None => start_daemon(state).await,
        Some(tls) => {
            let files = ServerTls::load(tls.server_files(false)).expect("usable TLS files");
            start_tls_daemon(state, files).await
        }
    }
}

/// Which route headers a request sends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Route {
    /// Both, for `tenant-a`.
    Both,
    /// Only the keyspace: a 400.
    KeyspaceOnly,
    /// None (a query across every shard).
    None,
}

/// One refusal: how to ask for it, and the status and error code it is answered with.
struct Refusal {
    status: StatusCode,
    code: &'static str,
    path: &'static str,
    key: &'static str,
    /// The route headers sent.
    route: Route,
    body: Value,
}

fn refusals() -> Vec<Refusal> {
    let sql = |text: &str| json!({"sql": text});
    let refusal = |status, code, path, key, route, body| Refusal {
        status,
        code,
        path,
        key,
        route,
        body,
    };
    vec![
        refusal(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            "/api/sql/execute",
            WRITE_KEY,
            Route::KeyspaceOnly,
            sql("SELECT 1"),
        ),
        refusal(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "/api/sql/execute",
            "key-nobody",
            Route::Both,
            sql("SELECT 1"),
        ),
        refusal(
            StatusCode::FORBIDDEN,
            "permission_denied",
            "/api/sharding/sql/execute-all",
            READ_KEY,
            Route::Both,
            sql("SELECT 1"),
        ),
        refusal(
            StatusCode::NOT_FOUND,
            "not_found",
            "/api/no-such-endpoint",
            WRITE_KEY,
            Route::Both,
            sql("SELECT 1"),
        ),
        refusal(
            StatusCode::CONFLICT,
            "constraint",
            "/api/sql/execute",
            WRITE_KEY,
            Route::Both,
            sql("INSERT INTO notes VALUES (1, 'again')"),
        ),
        refusal(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "/api/sql/execute",
            WRITE_KEY,
            Route::Both,
            sql(&format!("SELECT '{}'", "x".repeat(4 * BODY_LIMIT))),
        ),
        refusal(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unsupported_cross_shard_query",
            "/api/sharding/query",
            READ_KEY,
            Route::None,
            sql("SELECT random() FROM notes"),
        ),
    ]
}

/// The three ways a client reaches a daemon: HTTP/1.1, HTTP/2 over TLS, cleartext HTTP/2.
fn clients(tls: &TlsFixture) -> [(&'static str, reqwest::Client, bool); 3] {
    install_crypto_provider();
    let http1 = reqwest::Client::builder().no_proxy().http1_only().build().unwrap();
    let h2c = reqwest::Client::builder()
        .no_proxy()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let h2 = TlsFixture::https_client(&tls.ca, None);
    [
        ("HTTP/1.1", http1, false),
        ("HTTP/2 over TLS", h2, true),
        ("cleartext HTTP/2", h2c, false),
    ]
}

/// Sends `refusal` [`REPEATS`] times through `client` and checks every answer: its status, and
/// a problem body with its error code. Returns how many were answered so.
async fn ask(client: &reqwest::Client, base: &str, refusal: &Refusal, expect_h2: bool) -> usize {
    let answers = futures_util::stream::iter(0..REPEATS)
        .map(|_| async move {
            let mut request = client
                .post(format!("{base}{}", refusal.path))
                .header(KEY_HEADER, refusal.key)
                .json(&refusal.body);
            if refusal.route != Route::None {
                request = request.header(KEYSPACE_HEADER, "tenants");
            }
            if refusal.route == Route::Both {
                request = request.header(SHARD_KEY_HEADER, "tenant-a");
            }
            let response = request.send().await.ok()?;
            assert_eq!(response.version() == reqwest::Version::HTTP_2, expect_h2);
            let status = response.status();
            let problem: Value = response.json().await.ok()?;
            (status == refusal.status && problem["errorCode"] == refusal.code && problem["status"] == status.as_u16())
                .then_some(())
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
    answers.iter().filter(|answer| answer.is_some()).count()
}

/// Holds the only request slot of `daemon` with an HTTP/1.1 request whose body never arrives;
/// returns once the daemon answers others `busy`. Dropping the stream frees the slot.
///
/// A probe that the daemon is serving when the held request arrives makes the held request the
/// one answered `busy` (it then holds nothing): so the probes leave the daemon a moment first,
/// and the request is sent again until it holds the slot.
async fn hold_the_slot(
    daemon: &Daemon,
    tls: Option<&TlsFixture>,
    client: &reqwest::Client,
) -> Box<dyn std::any::Any + Send> {
    let base = daemon.base_url.replace("127.0.0.1", "localhost");
    // Bounded, so that a daemon that never takes the slot fails the test instead of hanging it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the held request did not take the daemon's only slot within 60 s"
        );
        let held = send_a_head(daemon, tls).await;
        for _ in 0..20 {
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
            let answer = client
                .get(format!("{base}/api/info"))
                .header(KEY_HEADER, READ_KEY)
                .send()
                .await
                .expect("the daemon answers");
            if answer.status() == StatusCode::SERVICE_UNAVAILABLE {
                return held;
            }
        }
    }
}

/// Sends the head of a request whose body never arrives; the open stream.
async fn send_a_head(daemon: &Daemon, tls: Option<&TlsFixture>) -> Box<dyn std::any::Any + Send> {
    let tcp = tokio::net::TcpStream::connect(daemon.addr).await.unwrap();
    let head = format!(
        "POST /api/sql/execute HTTP/1.1\r\nhost: localhost\r\n{KEY_HEADER}: {WRITE_KEY}\r\n\
         content-type: application/json\r\ncontent-length: 100\r\n\r\n{{"
    );
    match tls {
        None => {
            let mut tcp = tcp;
            tcp.write_all(head.as_bytes()).await.unwrap();
            Box::new(tcp)
        }
        Some(tls) => {
            use rustls_pki_types::pem::PemObject as _;
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls_pki_types::CertificateDer::pem_file_iter(&tls.ca).unwrap() {
                roots.add(cert.unwrap()).unwrap();
            }
            let config = rustls::ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth();
            let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
            let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
            let mut stream = connector.connect(name, tcp).await.expect("TLS handshake");
            stream.write_all(head.as_bytes()).await.unwrap();
            stream.flush().await.unwrap();
            Box::new(stream)
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_reaches_every_protocol_whole() {
    let fixture = Fixture::new().await;
    fixture.by_hand(
        "s0",
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes VALUES (1, 'one');",
    );
    fixture.by_hand("s1", "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);");
    let tls = TlsFixture::new(fixture.dir.path());
    let plain = daemon(&fixture, None, 256).await;
    let secure = daemon(&fixture, Some(&tls), 256).await;
    let busy_plain = daemon(&fixture, None, 1).await;
    let busy_secure = daemon(&fixture, Some(&tls), 1).await;
    let [(_, http1, _), (_, h2, _), _] = clients(&tls);
    let _held_plain = hold_the_slot(&busy_plain, None, &http1).await;
    let _held_secure = hold_the_slot(&busy_secure, Some(&tls), &h2).await;
    let busy = Refusal {
        status: StatusCode::SERVICE_UNAVAILABLE,
        code: "busy",
        path: "/api/sql/execute",
        key: WRITE_KEY,
        route: Route::Both,
        body: json!({"sql": "SELECT 1"}),
    };

    let mut failures = Vec::new();
    for (protocol, client, secure_protocol) in clients(&tls) {
        let (base, busy_base) = if secure_protocol {
            (&secure.base_url, &busy_secure.base_url)
        } else {
            (&plain.base_url, &busy_plain.base_url)
        };
        let base = base.replace("127.0.0.1", "localhost");
        let busy_base = busy_base.replace("127.0.0.1", "localhost");
        let all = refusals();
        let cases = all
            .iter()
            .map(|refusal| (refusal, base.as_str()))
            .chain([(&busy, busy_base.as_str())]);
        for (refusal, base) in cases {
            let answered = ask(&client, base, refusal, protocol != "HTTP/1.1").await;
            if answered != REPEATS {
                failures.push(format!("{protocol} {}: {answered}/{REPEATS} answered", refusal.status));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // Nothing was written by the refused INSERTs.
    let rows = rusqlite::Connection::open(fixture.shard_file("s0"))
        .unwrap()
        .query_row("SELECT count(*) FROM notes", [], |row| row.get::<_, i64>(0))
        .unwrap();
    assert_eq!(rows, 1);
}

/// An HTTP/2 client that sends the body only after the answer, on its own connection, and says
/// whether the daemon reset the stream before the body came (it must not: clients still sending
/// lose the answer).
async fn early_answer_without_reset(addr: SocketAddr, path: &str, key: &str, route: bool) -> (u16, Value) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, mut connection) = h2::client::handshake(tcp).await.expect("HTTP/2 handshake");
    let mut ping_pong = connection.ping_pong().expect("ping-pong");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut client = client.ready().await.unwrap();
    let body = Bytes::from(json!({"sql": "SELECT 1"}).to_string());
    let mut request = axum::http::Request::post(format!("http://{addr}{path}"))
        .header(KEY_HEADER, key)
        .header("content-type", "application/json")
        .header("content-length", body.len())
        .header(KEYSPACE_HEADER, "tenants");
    if route {
        request = request.header(SHARD_KEY_HEADER, "tenant-a");
    }
    let (answer, mut send) = client.send_request(request.body(()).unwrap(), false).unwrap();
    let answer = answer.await.expect("an answer before the body");
    let status = answer.status().as_u16();
    let mut received = answer.into_body();
    let mut problem = Vec::new();
    while let Some(chunk) = received.data().await {
        let chunk = chunk.expect("the whole answer");
        let _ = received.flow_control().release_capacity(chunk.len());
        problem.extend_from_slice(&chunk);
    }
    // The daemon handles frames in order: a reset sent with the answer arrives before the pong.
    ping_pong.ping(h2::Ping::opaque()).await.expect("pong");
    let reset = poll_fn(|cx| Poll::Ready(send.poll_reset(cx))).await;
    assert!(
        reset.is_pending(),
        "{path} ({status}): the stream was reset after the answer: {reset:?}"
    );
    send.send_data(body, true).expect("the body is still taken");
    (status, serde_json::from_slice(&problem).expect("a problem body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_before_the_body_does_not_reset_the_http2_stream() {
    let fixture = Fixture::new().await;
    let plain = daemon(&fixture, None, 256).await;
    let busy = daemon(&fixture, None, 1).await;
    let [(_, http1, _), ..] = clients(&TlsFixture::new(fixture.dir.path()));
    let _held = hold_the_slot(&busy, None, &http1).await;
    for (addr, path, key, route, status) in [
        (plain.addr, "/api/sql/execute", "key-nobody", true, 401),
        (plain.addr, "/api/sharding/sql/execute-all", READ_KEY, true, 403),
        (plain.addr, "/api/sql/execute", WRITE_KEY, false, 400),
        (plain.addr, "/api/no-such-endpoint", WRITE_KEY, true, 404),
        (busy.addr, "/api/sql/execute", WRITE_KEY, true, 503),
    ] {
        let (answered, problem) = early_answer_without_reset(addr, path, key, route).await;
        assert_eq!(answered, status, "{path}: {problem}");
        assert_eq!(problem["status"], status, "{problem}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_key_runs_sql_read_only_over_rest_and_grpc() {
    let fixture = Fixture::new().await;
    fixture.by_hand(
        "s0",
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes VALUES (1, 'one');",
    );
    let daemon = daemon(&fixture, None, 256).await;
    let client = http_client();
    let rest = |key: &str, sql: &str| {
        client
            .post(daemon.url("/api/sql/execute"))
            .header(KEY_HEADER, key)
            .header(KEYSPACE_HEADER, "tenants")
            .header(SHARD_KEY_HEADER, "tenant-a")
            .json(&json!({"sql": sql}))
            .send()
    };
    let read = rest(READ_KEY, "SELECT count(*) AS n FROM notes").await.unwrap();
    assert_eq!(read.status(), StatusCode::OK);
    let result: Value = read.json().await.unwrap();
    assert_eq!(result["rows"], json!([[1]]), "{result}");
    for writing in [
        "INSERT INTO notes VALUES (2, 'two')",
        "SELECT 1; DELETE FROM notes",
        "WITH gone AS (SELECT 1) DELETE FROM notes",
    ] {
        let refused = rest(READ_KEY, writing).await.unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "{writing}");
        let problem: Value = refused.json().await.unwrap();
        assert_eq!(problem["errorCode"], "permission_denied", "{problem}");
        let detail = problem["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains("'write' scope") && detail.contains("'reader'"),
            "{detail}"
        );
    }
    // The write key still writes.
    let written = rest(WRITE_KEY, "INSERT INTO notes VALUES (3, 'three')").await.unwrap();
    assert_eq!(written.status(), StatusCode::OK);

    // gRPC: the same two answers.
    let mut grpc = ShardliteClient::connect(daemon.base_url.clone())
        .await
        .expect("connect");
    let call = |key: &'static str, sql: &str| {
        let mut request = tonic::Request::new(pb::SqlRequest {
            sql: sql.to_owned(),
            ..Default::default()
        });
        let metadata = request.metadata_mut();
        metadata.insert("x-csharpdb-api-key", key.parse().unwrap());
        metadata.insert(KEYSPACE_METADATA, "tenants".parse().unwrap());
        metadata.insert(SHARD_KEY_METADATA, "tenant-a".parse().unwrap());
        request
    };
    let read = grpc
        .execute_sql(call(READ_KEY, "SELECT count(*) FROM notes"))
        .await
        .expect("a read key reads over gRPC")
        .into_inner();
    assert_eq!(read.rows.len(), 1);
    let refused = grpc
        .execute_sql(call(READ_KEY, "DELETE FROM notes"))
        .await
        .expect_err("a read key does not write over gRPC");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    assert_eq!(
        refused
            .metadata()
            .get(ERROR_CODE_METADATA)
            .and_then(|v| v.to_str().ok()),
        Some("permission_denied")
    );
    assert!(refused.message().contains("'write' scope"), "{refused:?}");

    let rows = rusqlite::Connection::open(fixture.shard_file("s0"))
        .unwrap()
        .query_row("SELECT count(*) FROM notes", [], |row| row.get::<_, i64>(0))
        .unwrap();
    assert_eq!(rows, 2, "only the write key's row was added");
    daemon.stop().await.unwrap();
}
