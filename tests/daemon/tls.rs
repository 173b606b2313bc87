//! TLS on the daemon's port, with certificates made in the test: REST (HTTP/1.1 and HTTP/2) and
//! gRPC over one rustls acceptor, mutual TLS, the failures a client must name (plain HTTP to the
//! TLS port, an expired, untrusted or wrong-host certificate, a missing or unknown client
//! certificate), and a remote shard behind TLS.
#![cfg(all(feature = "server", feature = "http", feature = "grpc"))]

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::daemon::{Daemon, start_tls_daemon};
use crate::support::tls::TlsFixture;
use crate::support::{route, temp_dir};
use shardlite::ErrorKind;
use shardlite::client::{DataClient, Params, ShardedClient, SqlData, Value};
use shardlite::map::{BucketRange, Secret, ShardDefinition, ShardMap, ShardingOptions};
use shardlite::options::ConnectionOptions;
use shardlite::server::{ServerConfig, ServerState, ServerTls, TlsFiles};
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::http::HttpClient;
use shardlite::transport::tls::TLS_REQUIRED_REPLY;

/// A daemon over a new plain database `name` in `dir`, serving TLS with `files`.
async fn tls_daemon(dir: &Path, name: &str, files: TlsFiles) -> Daemon {
    let state = ServerState::open(dir.join(name), ServerConfig::default())
        .await
        .expect("open the database");
    start_tls_daemon(state, ServerTls::load(files).expect("usable TLS files")).await
}

/// Options for `daemon` over `transport` with the connection-string TLS keys of `tls`.
fn remote(daemon: &Daemon, transport: &str, tls: &TlsFixture, mutual: bool) -> RemoteOptions {
    let text = format!(
        "Endpoint={};Transport={transport}{}",
        daemon.base_url,
        tls.connection_keys(mutual)
    );
    let options = ConnectionOptions::parse(&text).expect("connection string");
    RemoteOptions::from_connection_options(&options).expect("TLS files read")
}

/// A REST and a gRPC client of `daemon`.
async fn clients(options: &RemoteOptions) -> [(&'static str, Box<dyn DataClient>); 2] {
    let options = options.clone().with_request_timeout(Duration::from_secs(10));
    [
        ("http", Box::new(HttpClient::new(options.clone()).expect("http client"))),
        ("grpc", Box::new(GrpcClient::new(options).expect("grpc client"))),
    ]
}

/// Times each refused handshake is tried, each time on new connections: with TLS 1.3 the
/// daemon's alert may arrive after the client sent its request, and must be named every time.
const HANDSHAKE_ROUNDS: usize = 20;

/// Calls the daemon of `options` [`HANDSHAKE_ROUNDS`] times over REST and gRPC, each time with
/// new clients, and checks that every failure names `expected`.
async fn named_every_time(options: &RemoteOptions, case: &str, expected: &str) {
    for round in 0..HANDSHAKE_ROUNDS {
        for (transport, client) in clients(options).await {
            let message = failure(client.as_ref()).await;
            assert!(
                message.contains(expected),
                "{case} over {transport}, round {round}: {message}"
            );
            assert!(message.contains(options.endpoint()), "{transport}: {message}");
        }
    }
}

/// What a call through `client` fails with, as text; the call must fail as a transport error.
async fn failure(client: &dyn DataClient) -> String {
    let err = client
        .execute_sql("SELECT 1", Params::none())
        .await
        .expect_err("the call must fail");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
    err.to_string()
}

#[tokio::test]
async fn rest_and_grpc_share_the_tls_port() {
    let dir = temp_dir();
    let tls = TlsFixture::new(dir.path());
    let daemon = tls_daemon(dir.path(), "plain.db", tls.server_files(false)).await;

    // ALPN offers both HTTP versions on the one port.
    let h2 = TlsFixture::https_client(&tls.ca, None);
    let answer = h2.get(daemon.url("/healthz")).send().await.expect("HTTPS over HTTP/2");
    assert_eq!(answer.version(), reqwest::Version::HTTP_2);
    assert!(answer.status().is_success());
    let h1 = reqwest::Client::builder()
        .http1_only()
        .tls_certs_only([reqwest::Certificate::from_pem(&std::fs::read(&tls.ca).unwrap()).unwrap()])
        .build()
        .unwrap();
    let answer = h1
        .get(daemon.url("/healthz"))
        .send()
        .await
        .expect("HTTPS over HTTP/1.1");
    assert_eq!(answer.version(), reqwest::Version::HTTP_11);
    assert!(answer.status().is_success());

    // The library's clients, configured from a connection string, in both transports.
    let options = remote(&daemon, "Http", &tls, false);
    let [(_, http), (_, grpc)] = clients(&options).await;
    http.execute_sql("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", Params::none())
        .await
        .expect("REST over TLS");
    grpc.execute_sql("INSERT INTO notes VALUES (1, 'over gRPC')", Params::none())
        .await
        .expect("gRPC over TLS");
    let rows = http
        .execute_sql("SELECT body FROM notes", Params::none())
        .await
        .expect("REST reads gRPC's row");
    assert_eq!(rows.rows, vec![vec![Value::Text("over gRPC".into())]]);
    daemon.stop().await.expect("graceful stop");
}

#[tokio::test]
async fn mutual_tls_admits_a_client_the_ca_signed_and_refuses_others() {
    let dir = temp_dir();
    let tls = TlsFixture::new(dir.path());
    let daemon = tls_daemon(dir.path(), "plain.db", tls.server_files(true)).await;

    for (transport, client) in clients(&remote(&daemon, "Http", &tls, true)).await {
        let rows = client
            .execute_sql("SELECT 40 + 2", Params::none())
            .await
            .unwrap_or_else(|err| panic!("{transport} with a client certificate: {err}"));
        assert_eq!(rows.rows, vec![vec![Value::Integer(42)]], "{transport}");
    }
    let without = remote(&daemon, "Http", &tls, false);
    named_every_time(&without, "no client certificate", "requires a client certificate").await;
    let rogue = remote(&daemon, "Http", &tls, false).with_client_identity_pem(
        std::fs::read(&tls.rogue_client_cert).unwrap(),
        std::fs::read_to_string(&tls.rogue_client_key).unwrap(),
    );
    named_every_time(&rogue, "unknown CA", "refused the client certificate").await;
    // A plain HTTPS client without a certificate gets no answer either.
    let anonymous = TlsFixture::https_client(&tls.ca, None);
    assert!(anonymous.get(daemon.url("/healthz")).send().await.is_err());
}

#[tokio::test]
async fn clients_name_an_expired_an_untrusted_and_a_wrong_host_certificate() {
    let dir = temp_dir();
    let tls = TlsFixture::new(dir.path());
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let expired = tls.authority.expired_server(&["127.0.0.1"]);
    let expired = TlsFiles {
        certificate: write("expired.pem", &expired.certificate),
        key: write("expired.key", &expired.key),
        client_ca: None,
    };
    let elsewhere = tls.authority.server(&["db.elsewhere.test"]);
    let elsewhere = TlsFiles {
        certificate: write("elsewhere.pem", &elsewhere.certificate),
        key: write("elsewhere.key", &elsewhere.key),
        client_ca: None,
    };
    let cases = [
        ("expired", tls_daemon(dir.path(), "a.db", expired).await, "has expired"),
        (
            "wrong host",
            tls_daemon(dir.path(), "b.db", elsewhere).await,
            "not valid for the endpoint's host name",
        ),
    ];
    for (case, daemon, expected) in &cases {
        named_every_time(&remote(daemon, "Http", &tls, false), case, expected).await;
    }
    // A daemon whose CA the client was not told about: the system's roots do not know it.
    let daemon = tls_daemon(dir.path(), "c.db", tls.server_files(false)).await;
    let untrusted = RemoteOptions::new(daemon.base_url.clone());
    named_every_time(
        &untrusted,
        "unknown CA",
        "not signed by a trusted CA: name the CA that signed it in 'Server CA'",
    )
    .await;
}

#[tokio::test]
async fn plain_http_to_the_tls_port_is_answered_at_once() {
    let dir = temp_dir();
    let tls = TlsFixture::new(dir.path());
    let daemon = tls_daemon(dir.path(), "plain.db", tls.server_files(false)).await;
    let plain_url = daemon.base_url.replace("https://", "http://");

    let started = Instant::now();
    let answer = crate::support::daemon::http_client()
        .get(format!("{plain_url}/healthz"))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .expect("an answer, not a hang");
    assert_eq!(answer.status(), reqwest::StatusCode::BAD_REQUEST);
    assert_eq!(answer.text().await.unwrap(), TLS_REQUIRED_REPLY);

    // The library's clients pointed at http:// say to use https://, over HTTP/1 and HTTP/2.
    for (transport, client) in clients(&RemoteOptions::new(plain_url.clone())).await {
        let message = failure(client.as_ref()).await;
        assert!(message.contains("use an https:// endpoint"), "{transport}: {message}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    // The daemon still serves TLS afterwards, and a client that connects and says nothing does
    // not hold up the handshakes of others.
    let _silent = tokio::net::TcpStream::connect(daemon.addr).await.unwrap();
    let https = TlsFixture::https_client(&tls.ca, None);
    let answer = https
        .get(daemon.url("/healthz"))
        .timeout(Duration::from_secs(3))
        .send()
        .await
        .expect("served beside a silent connection");
    assert!(answer.status().is_success());
}

#[tokio::test]
async fn a_remote_shard_behind_mutual_tls_is_reached_through_its_connection_string() {
    let dir = temp_dir();
    let tls = TlsFixture::new(dir.path());
    let d0 = tls_daemon(dir.path(), "remote-0.db", tls.server_files(true)).await;
    let d1 = tls_daemon(dir.path(), "remote-1.db", tls.server_files(true)).await;
    let shard = |id: &str, daemon: &Daemon, transport: &str| {
        let mut shard = ShardDefinition::local(id, "");
        shard.data_source = None;
        shard.connection_string = Some(Secret::new(format!(
            "Endpoint={};Transport={transport}{}",
            daemon.base_url,
            tls.connection_keys(true)
        )));
        shard
    };
    let map = ShardMap::new(ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 2,
        shards: vec![shard("s0", &d0, "Grpc"), shard("s1", &d1, "Http")],
        bucket_ranges: vec![BucketRange::new(0, 1, "s0"), BucketRange::new(1, 2, "s1")],
        exact_key_pins: [("tenant-0", "s0"), ("tenant-1", "s1")]
            .map(|(key, shard)| (key.to_owned(), shard.to_owned()))
            .into(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    })
    .expect("valid map");
    let sharded = ShardedClient::from_map(map).await.expect("open the map");
    let created = sharded
        .query()
        .execute_all("CREATE TABLE t (tenant TEXT)")
        .await
        .unwrap();
    assert!(created.iter().all(|r| r.error.is_none()), "{created:?}");
    for tenant in ["tenant-0", "tenant-1"] {
        sharded
            .for_route(route(tenant))
            .execute_sql("INSERT INTO t VALUES (?1)", Params::from(vec![tenant]))
            .await
            .unwrap();
    }
    // Each daemon's own file holds its tenant's row.
    for (daemon, tenant) in [(&d0, "tenant-0"), (&d1, "tenant-1")] {
        let direct = HttpClient::new(remote(daemon, "Http", &tls, true)).unwrap();
        let rows = direct
            .execute_sql("SELECT tenant FROM t", Params::none())
            .await
            .unwrap();
        assert_eq!(rows.rows, vec![vec![Value::Text(tenant.into())]]);
    }
    assert!(sharded.shards().status().await.iter().all(|s| s.healthy));

    // A shard whose CA file is missing is unavailable, naming the key and the file.
    let mut broken = shard("s0", &d0, "Grpc");
    let missing = dir.path().join("missing-ca.pem");
    broken.connection_string = Some(Secret::new(format!(
        "Endpoint={};Transport=Grpc;Server CA={}",
        d0.base_url,
        missing.display()
    )));
    let map = ShardMap::new(ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 1,
        shards: vec![broken],
        bucket_ranges: vec![BucketRange::new(0, 1, "s0")],
        exact_key_pins: Default::default(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    })
    .unwrap();
    let sharded = ShardedClient::from_map(map).await.unwrap();
    let status = sharded.shards().status().await;
    let error = status[0].error.as_deref().unwrap_or_default();
    assert!(!status[0].healthy);
    assert!(
        error.contains("'Server CA'") && error.contains("missing-ca.pem"),
        "{error}"
    );
}

#[tokio::test]
async fn unusable_tls_files_are_refused_naming_the_file() {
    let dir = temp_dir();
    let tls = TlsFixture::new(dir.path());
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(
        &garbage,
        "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5!!\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    let none = dir.path().join("none.pem");
    // (certificate, key, client CA, the flag and the file the message must name)
    let cases = [
        (&tls.server_cert, &garbage, None, "--tls-key", &garbage),
        (&garbage, &tls.server_key, None, "--tls-cert", &garbage),
        (&none, &tls.server_key, None, "--tls-cert", &none),
        (&tls.server_cert, &tls.client_key, None, "--tls-key", &tls.client_key),
        (
            &tls.server_cert,
            &tls.server_key,
            Some(&garbage),
            "--tls-client-ca",
            &garbage,
        ),
    ];
    for (certificate, key, client_ca, flag, named) in cases {
        let files = TlsFiles {
            certificate: certificate.clone(),
            key: key.clone(),
            client_ca: client_ca.cloned(),
        };
        let message = ServerTls::load(files).expect_err(flag).to_string();
        assert!(message.contains(flag), "{message}");
        assert!(message.contains(&named.display().to_string()), "{flag}: {message}");
        assert!(!message.contains("bm90IGEga2V5"), "{message}");
    }
    // A client's files too, naming the connection-string key and the file.
    for (key, path) in [("Server CA", &garbage), ("Client Key", &garbage)] {
        let text = format!(
            "Endpoint=https://127.0.0.1:1;Transport=Grpc;Server CA={};Client Certificate={};Client Key={}",
            if key == "Server CA" { path } else { &tls.ca }.display(),
            tls.client_cert.display(),
            if key == "Client Key" { path } else { &tls.client_key }.display(),
        );
        let err = RemoteOptions::from_connection_options(&ConnectionOptions::parse(&text).unwrap()).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(&format!("'{key}'")) && message.contains("garbage.pem"),
            "{message}"
        );
    }
}
