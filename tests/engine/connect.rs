//! Opening connection strings (`shardlite::client::connect`): which client each form gives.

use std::path::Path;

use crate::support::{orders_options, temp_dir};
use shardlite::client::{LocalClient, Params, RowData};
use shardlite::connect::{ConnectedClient, ConnectionTarget, connect};
use shardlite::map::ShardingOptions;
use shardlite::options::ConnectionOptions;
use shardlite::{Error, ErrorKind, RouteSource};

async fn seed(dir: &Path, options: ShardingOptions) -> String {
    crate::support::seed_master(dir, options).await.display().to_string()
}

fn options(text: &str) -> ConnectionOptions {
    ConnectionOptions::parse(text).unwrap()
}

#[tokio::test]
async fn a_master_with_route_keys_binds_to_the_resolved_shard_file() {
    let dir = temp_dir();
    let master = seed(dir.path(), orders_options()).await;
    let connected = connect(&options(&format!(
        "Data Source={master};Shard Keyspace=orders_by_month;Shard Key=2026-05"
    )))
    .await
    .unwrap();
    let ConnectionTarget::Shard {
        master: seen_master,
        resolution,
        shard_data_source,
    } = connected.target()
    else {
        panic!("expected a shard target, got {:?}", connected.target());
    };
    assert_eq!(seen_master, &master);
    assert_eq!(resolution.shard_id, "shard-1");
    assert_eq!(resolution.source, RouteSource::Pin);
    assert_eq!(resolution.map_version, 1);
    let shard_file = dir.path().join("shard-1.db");
    assert_eq!(shard_data_source.as_deref().map(Path::new), Some(shard_file.as_path()));
    assert_eq!(connected.route().map(|r| r.key()), Some("2026-05"));
    assert!(matches!(&connected, ConnectedClient::Shard { client, .. } if client.sharded().map().version() == 1));
    assert!(connected.admin().is_some());
    assert!(connected.target().to_string().contains("shard-1"));

    let client = connected.client().unwrap();
    client
        .execute_sql("CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('here')", Params::none())
        .await
        .unwrap();
    let tx = client.begin_transaction().await.unwrap();
    assert!(
        tx.transaction_id.starts_with("csdbshard:1:shard-1:"),
        "{}",
        tx.transaction_id
    );
    client
        .execute_in_transaction(&tx.transaction_id, "INSERT INTO t VALUES ('in tx')", Params::none())
        .await
        .unwrap();
    client.commit_transaction(&tx.transaction_id).await.unwrap();

    // The shard file itself holds the rows; its neighbours do not have the table.
    let direct = LocalClient::open(&shard_file).await.unwrap();
    assert_eq!(direct.count_rows("t").await.unwrap(), 2);
    let neighbour = LocalClient::open(dir.path().join("shard-0.db")).await.unwrap();
    assert!(!neighbour.list_tables().await.unwrap().contains(&"t".to_owned()));
}

#[tokio::test]
async fn a_master_without_route_keys_gives_the_sharded_client_and_data_calls_need_a_route() {
    let dir = temp_dir();
    let master = seed(dir.path(), orders_options()).await;
    let connected = connect(&options(&format!("Data Source={master}"))).await.unwrap();
    assert!(
        matches!(
            connected.target(),
            ConnectionTarget::Sharded { keyspace, map_version: 1, .. } if keyspace == "orders_by_month"
        ),
        "{:?}",
        connected.target()
    );
    assert!(connected.route().is_none());
    let ConnectedClient::Sharded { client: sharded, .. } = &connected else {
        panic!("expected the sharded client, got {connected:?}");
    };
    assert_eq!(sharded.shards().status().await.len(), 4);
    // A sharded client is not a data client: without a route there is none to call.
    let err = connected.client().map(drop).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RouteRequired);
}

#[tokio::test]
async fn a_plain_database_is_a_local_connection_and_a_missing_one_is_created() {
    let dir = temp_dir();
    let file = dir.path().join("data/plain.db");
    let connected = connect(&options(&format!("Data Source={}", file.display())))
        .await
        .unwrap();
    assert_eq!(
        connected.target(),
        &ConnectionTarget::Local {
            data_source: file.display().to_string()
        }
    );
    assert!(matches!(connected, ConnectedClient::Local { .. }));
    assert!(connected.admin().is_none());
    connected
        .client()
        .unwrap()
        .execute_sql("CREATE TABLE t (v); INSERT INTO t VALUES (1)", Params::none())
        .await
        .unwrap();
    assert!(file.exists());
    let tx = connected.client().unwrap().begin_transaction().await.unwrap();
    assert!(!tx.transaction_id.starts_with("csdbshard:"));
    connected
        .client()
        .unwrap()
        .rollback_transaction(&tx.transaction_id)
        .await
        .unwrap();
}

#[tokio::test]
async fn route_keys_need_a_master_with_a_map() {
    let dir = temp_dir();
    let plain = dir.path().join("plain.db");
    LocalClient::open(&plain).await.unwrap();
    let err = connect(&options(&format!(
        "Data Source={};Shard Keyspace=orders_by_month;Shard Key=2026-05",
        plain.display()
    )))
    .await
    .unwrap_err();
    assert!(matches!(err, Error::ConnectionString { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("'Shard Keyspace'") && text.contains("no shard map"),
        "{text}"
    );

    // A missing file is not created for a route-bound string.
    let missing = dir.path().join("missing/master.db");
    let err = connect(&options(&format!(
        "Data Source={};Shard Keyspace=orders_by_month;Shard Key=2026-05",
        missing.display()
    )))
    .await
    .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(!dir.path().join("missing").exists());
}

#[tokio::test]
async fn routes_the_map_cannot_serve_fail_at_connect() {
    let dir = temp_dir();
    let mut map = orders_options();
    map.shards[3].enabled = false;
    map.bucket_ranges.retain(|range| range.shard_id != "shard-3");
    map.bucket_ranges[2].end_bucket_exclusive = 16;
    let master = seed(dir.path(), map).await;

    let err = connect(&options(&format!(
        "Data Source={master};Shard Keyspace=tenants;Shard Key=2026-05"
    )))
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnknownKeyspace, "{err}");

    // 2025-12 is pinned to shard-3, which is disabled.
    let err = connect(&options(&format!(
        "Data Source={master};Shard Keyspace=orders_by_month;Shard Key=2025-12"
    )))
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("shard-3"), "{err}");
}

#[tokio::test]
async fn timeouts_flow_into_the_engine() {
    let dir = temp_dir();
    let master = seed(dir.path(), orders_options()).await;
    let route = "Shard Keyspace=orders_by_month;Shard Key=2026-06";

    let never = connect(&options(&format!(
        "Data Source={master};{route};Transaction Timeout=0;Busy Timeout=100"
    )))
    .await
    .unwrap();
    let tx = never.client().unwrap().begin_transaction().await.unwrap();
    assert_eq!(tx.expires_at_utc, None, "Transaction Timeout=0 never expires");
    never
        .client()
        .unwrap()
        .rollback_transaction(&tx.transaction_id)
        .await
        .unwrap();

    let default = connect(&options(&format!("Data Source={master};{route}")))
        .await
        .unwrap();
    let tx = default.client().unwrap().begin_transaction().await.unwrap();
    assert!(tx.expires_at_utc.is_some());
    default
        .client()
        .unwrap()
        .rollback_transaction(&tx.transaction_id)
        .await
        .unwrap();
}

#[tokio::test]
async fn command_timeout_interrupts_a_runaway_statement_on_a_route_bound_connection() {
    let dir = temp_dir();
    let master = seed(dir.path(), orders_options()).await;
    let connected = connect(&options(&format!(
        "Data Source={master};Shard Keyspace=orders_by_month;Shard Key=2026-06;Command Timeout=1"
    )))
    .await
    .unwrap();

    // Without the key the engine's default limit (30 s) would apply; the bound below is far shorter.
    let started = std::time::Instant::now();
    let client = connected.client().unwrap();
    let runaway = client.execute_sql(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c",
        Params::none(),
    );
    let err = tokio::time::timeout(std::time::Duration::from_secs(10), runaway)
        .await
        .expect("Command Timeout=1 should interrupt the statement within seconds")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );

    // The shard's writer is free again.
    let result = connected
        .client()
        .unwrap()
        .execute_sql("SELECT 1", Params::none())
        .await
        .unwrap();
    assert_eq!(result.rows.len(), 1);
}

#[cfg(feature = "http")]
#[tokio::test]
async fn an_http_string_to_an_unreachable_daemon_fails_at_connect_naming_it() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = connect(&options(&format!(
        "Endpoint=http://127.0.0.1:{port};Transport=Http;Shard Keyspace=orders_by_month;Shard Key=2026-05;\
         Connect Timeout=5"
    )))
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains(&port.to_string()), "{err}");
}

#[cfg(feature = "grpc")]
#[tokio::test]
async fn a_grpc_string_connects_now_and_an_unreachable_daemon_fails_at_connect() {
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = connect(&options(&format!(
        "Endpoint=http://127.0.0.1:{port};Transport=Grpc;Shard Keyspace=orders_by_month;Shard Key=2026-05;\
         Connect Timeout=5"
    )))
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains(&port.to_string()), "{err}");
}
