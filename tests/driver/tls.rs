//! The sqlx driver over TLS: route-bound connections and a pool to a daemon that requires client
//! certificates, over REST and gRPC, in the ADO.NET and the URL form; and the failures it names.
#![cfg(all(feature = "sqlx", feature = "server", feature = "http", feature = "grpc"))]

use crate::support::Fixture;
use crate::support::daemon::start_tls_daemon;
use crate::support::tls::TlsFixture;
use shardlite::driver::{ShardliteConnection, ShardlitePool};
use shardlite::server::ServerTls;
use sqlx::Connection;

const SCHEMA: &str = "CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL);";

/// `path` percent-encoded for a URL query value.
fn query_value(path: &std::path::Path) -> String {
    path.display()
        .to_string()
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn the_driver_speaks_mutual_tls_over_rest_and_grpc() {
    let fixture = Fixture::orders_with(SCHEMA).await;
    let tls = TlsFixture::new(fixture.dir.path());
    let server = ServerTls::load(tls.server_files(true)).expect("TLS files");
    let daemon = start_tls_daemon(fixture.state(Default::default()).await, server).await;
    let route = "Shard Keyspace=orders_by_month;Shard Key=2026-07";
    let keys = tls.connection_keys(true);
    let url_keys = format!(
        "shard_keyspace=orders_by_month&shard_key=2026-07&server_ca={}&client_certificate={}&client_key={}",
        query_value(&tls.ca),
        query_value(&tls.client_cert),
        query_value(&tls.client_key)
    );
    let authority = daemon.base_url.trim_start_matches("https://");
    let texts = [
        (
            "http",
            format!("Endpoint={};Transport=Http;{route}{keys}", daemon.base_url),
        ),
        (
            "grpc",
            format!("Endpoint={};Transport=Grpc;{route}{keys}", daemon.base_url),
        ),
        ("https URL", format!("shardlite+https://{authority}?{url_keys}")),
        ("grpcs URL", format!("shardlite+grpcs://{authority}?{url_keys}")),
    ];
    for (n, (form, text)) in texts.iter().enumerate() {
        let id = i64::try_from(n).unwrap() + 1;
        let mut conn = ShardliteConnection::connect(text)
            .await
            .unwrap_or_else(|err| panic!("{form}: {err}"));
        sqlx::query("INSERT INTO orders (id, order_month) VALUES (?, '2026-07')")
            .bind(id)
            .execute(&mut conn)
            .await
            .unwrap_or_else(|err| panic!("{form}: {err}"));
        let seen: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(seen, id, "{form}");
        conn.close().await.unwrap();
    }
    let pool = ShardlitePool::connect(&texts[1].1)
        .await
        .expect("a pool over gRPC and TLS");
    let seen: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(seen, 4);
    pool.close().await;

    // Without the client certificate, the daemon's refusal is named, every time and over both
    // transports (with TLS 1.3 its alert may come after the request was sent).
    for round in 0..20 {
        for transport in ["Grpc", "Http"] {
            let without = format!(
                "Endpoint={};Transport={transport};{route};Server CA={}",
                daemon.base_url,
                tls.ca.display()
            );
            let err = match ShardliteConnection::connect(&without).await {
                Ok(mut conn) => sqlx::query("SELECT 1")
                    .execute(&mut conn)
                    .await
                    .map(|_| ())
                    .unwrap_err(),
                Err(err) => err,
            };
            assert!(
                err.to_string().contains("requires a client certificate"),
                "{transport}, round {round}: {err}"
            );
        }
    }
    let without = format!(
        "Endpoint={};Transport=Grpc;{route};Server CA={}",
        daemon.base_url,
        tls.ca.display()
    );
    // A missing file is refused before connecting, naming the key and the file.
    let missing = fixture.dir.path().join("nowhere.pem");
    let text = format!(
        "{without};Client Certificate={};Client Key={}",
        missing.display(),
        tls.client_key.display()
    );
    let err = ShardliteConnection::connect(&text)
        .await
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'Client Certificate'") && err.contains("nowhere.pem"),
        "{err}"
    );
}
