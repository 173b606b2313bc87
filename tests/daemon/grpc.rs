//! The daemon's gRPC surface, exercised with the real tonic client ([`GrpcClient`]) against the
//! real daemon (`server::run`, REST and gRPC on one port) on `127.0.0.1:0`: every RPC group,
//! exact value round trips, routing and transaction errors decoded to the same [`ErrorKind`] as
//! in-process, API keys, unsharded mode, and clear errors within the timeout for daemons that are
//! gone or stalled.

use std::path::Path;
use std::time::{Duration, Instant};

use shardlite::client::{
    CatalogAdmin, DocumentData, FanOut, Params, ProcedureDefinition, ProcedureParameter, RowData, SqlData, StoredData,
    Topology, TransactionData, Value,
};
use shardlite::map::Secret;
use shardlite::routing::RouteSource;
use shardlite::server::{ServerConfig, ServerState};
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::grpc::proto::{self as pb, shardlite_client::ShardliteClient};
use shardlite::wire::{ERROR_CODE_METADATA, KEYSPACE_METADATA, SQLITE_CODE_METADATA};
use shardlite::{Error, ErrorKind, RouteContext};
use tokio::net::TcpListener;

use crate::support::daemon::{Daemon, start_daemon};
use crate::support::{route, seeded_master};

fn options(daemon: &Daemon) -> RemoteOptions {
    RemoteOptions::new(&daemon.base_url)
}

fn client(daemon: &Daemon) -> GrpcClient {
    GrpcClient::new(options(daemon)).unwrap()
}

/// The generated tonic client, for what [`GrpcClient`] cannot send (half a route).
async fn raw(daemon: &Daemon) -> ShardliteClient<tonic::transport::Channel> {
    ShardliteClient::connect(daemon.base_url.clone()).await.unwrap()
}

/// A daemon over the two-shard `tenants` map (tenant-a pinned to s0, tenant-b pinned to s1).
async fn sharded_daemon(dir: &Path, config: ServerConfig) -> Daemon {
    let master = seeded_master(dir).await;
    start_daemon(ServerState::open(&master, config).await.unwrap()).await
}

fn kind_of<T: std::fmt::Debug>(outcome: shardlite::Result<T>) -> ErrorKind {
    outcome.expect_err("the call should fail").kind()
}

fn metadata_text<'a>(status: &'a tonic::Status, key: &str) -> Option<&'a str> {
    status.metadata().get(key).and_then(|v| v.to_str().ok())
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Real(x), Value::Real(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

const ITEMS: &str = "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER, price REAL, data BLOB)";

#[tokio::test]
async fn sql_values_round_trip_exactly_with_positional_and_named_parameters() {
    let dir = crate::support::temp_dir();
    let daemon = sharded_daemon(dir.path(), ServerConfig::default()).await;
    let client = client(&daemon);
    client.execute_sql_on_all_shards(ITEMS).await.unwrap();
    let a = client.with_route(route("tenant-a"));

    let values = vec![
        Value::Integer(i64::MIN),
        Value::Integer(i64::MAX),
        Value::Integer((1 << 53) + 1),
        Value::Real(-0.0),
        Value::Real(f64::from_bits(1)),
        Value::Real(f64::INFINITY),
        Value::Text("nul\0inside 🙂".into()),
        Value::Blob(vec![0, 1, 127, 128, 255]),
        Value::Null,
    ];
    let echoed = a
        .execute_sql(
            "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9",
            Params::Positional(values.clone()),
        )
        .await
        .unwrap();
    assert!(echoed.is_query);
    assert_eq!(echoed.rows.len(), 1);
    for (sent, back) in values.iter().zip(&echoed.rows[0]) {
        assert!(same_value(sent, back), "{sent:?} came back as {back:?}");
    }

    let inserted = a
        .execute_sql(
            "INSERT INTO items VALUES (?1, ?2, ?3, ?4, ?5)",
            // Not -0.0 here: SQLite itself stores an integral REAL as an integer, so a stored -0.0
            // reads back as 0.0 in-process too. The echo above proves the wire keeps its sign.
            Params::from(vec![
                Value::Integer(1),
                Value::Text("a\0b".into()),
                Value::Integer(i64::MIN),
                Value::Real(-f64::from_bits(3)),
                Value::Blob(vec![255, 0]),
            ]),
        )
        .await
        .unwrap();
    assert_eq!(inserted.rows_affected, 1);
    let named = a
        .execute_sql(
            "INSERT INTO items (id, name, qty, price) VALUES (:id, @name, $qty, :price)",
            Params::named([
                ("id", Value::Integer(2)),
                ("name", "beta".into()),
                ("qty", Value::Integer(i64::MAX)),
                ("price", Value::Real(f64::MIN_POSITIVE / 4.0)),
            ]),
        )
        .await
        .unwrap();
    assert_eq!(named.rows_affected, 1);

    let stored = a
        .execute_read_only_sql("SELECT * FROM items WHERE id = :id", Params::named([("id", 1)]))
        .await
        .unwrap();
    assert_eq!(stored.column_names, ["id", "name", "qty", "price", "data"]);
    let expected = [
        Value::Integer(1),
        Value::Text("a\0b".into()),
        Value::Integer(i64::MIN),
        Value::Real(-f64::from_bits(3)),
        Value::Blob(vec![255, 0]),
    ];
    for (want, got) in expected.iter().zip(&stored.rows[0]) {
        assert!(same_value(want, got), "{want:?} came back as {got:?}");
    }
    let beta = a
        .execute_sql("SELECT qty, price FROM items WHERE id = 2", Params::none())
        .await
        .unwrap();
    assert_eq!(beta.rows[0][0], Value::Integer(i64::MAX));
    assert!(same_value(&beta.rows[0][1], &Value::Real(f64::MIN_POSITIVE / 4.0)));

    // The other shard does not see tenant-a's rows.
    let b = client.with_route(route("tenant-b"));
    let count = b
        .execute_sql("SELECT count(*) FROM items", Params::none())
        .await
        .unwrap();
    assert_eq!(count.rows[0][0], Value::Integer(0));

    // SQL errors keep their kind and SQLite code.
    let syntax = a.execute_sql("SELEC 1", Params::none()).await.unwrap_err();
    assert_eq!(syntax.kind(), ErrorKind::Sql);
    assert_eq!(syntax.sqlite_code(), Some(1));
    let duplicate = a
        .execute_sql("INSERT INTO items (id) VALUES (1)", Params::none())
        .await
        .unwrap_err();
    assert_eq!(duplicate.kind(), ErrorKind::Constraint);
    assert_eq!(duplicate.sqlite_code(), Some(1555), "{duplicate}");
    assert_eq!(
        kind_of(a.execute_read_only_sql("DELETE FROM items", Params::none()).await),
        ErrorKind::ReadOnly
    );
    assert_eq!(
        kind_of(a.execute_sql("SELECT :missing", Params::none()).await),
        ErrorKind::InvalidInput
    );
}

#[tokio::test]
async fn rows_tables_and_info() {
    let dir = crate::support::temp_dir();
    let daemon = sharded_daemon(dir.path(), ServerConfig::default()).await;
    let client = client(&daemon);
    client.execute_sql_on_all_shards(ITEMS).await.unwrap();
    let a = client.with_route(route("tenant-a"));

    assert_eq!(a.list_tables().await.unwrap(), ["items"]);
    let schema = a.table_schema("items").await.unwrap();
    assert_eq!(schema.name, "items");
    assert_eq!(schema.primary_key, "id");
    assert_eq!(schema.columns.len(), 5);
    assert_eq!(schema.columns[0].primary_key_position, 1);

    let row = [
        ("id".to_owned(), Value::Integer(7)),
        ("name".to_owned(), Value::Text("seven".into())),
        ("data".to_owned(), Value::Blob(vec![7; 3])),
    ]
    .into();
    assert_eq!(a.insert_row("items", row).await.unwrap(), 1);
    assert_eq!(a.count_rows("items").await.unwrap(), 1);
    let got = a.get_row("items", Value::Integer(7)).await.unwrap().expect("row 7");
    assert_eq!(got["name"], Value::Text("seven".into()));
    assert_eq!(got["data"], Value::Blob(vec![7; 3]));
    assert_eq!(got["qty"], Value::Null);
    assert_eq!(a.get_row("items", Value::Integer(8)).await.unwrap(), None);

    let update = [("qty".to_owned(), Value::Integer(-3))].into();
    assert_eq!(a.update_row("items", Value::Integer(7), update).await.unwrap(), 1);
    let page = a.browse_rows("items", 1, 10).await.unwrap();
    assert_eq!(
        (page.total_rows, page.page, page.page_size, page.total_pages),
        (1, 1, 10, 1)
    );
    assert_eq!(page.column_names, ["id", "name", "qty", "price", "data"]);
    assert_eq!(page.rows[0][2], Value::Integer(-3));
    assert_eq!(a.delete_row("items", Value::Integer(7)).await.unwrap(), 1);
    assert_eq!(a.delete_row("items", Value::Integer(7)).await.unwrap(), 0);
    assert_eq!(kind_of(a.table_schema("nope").await), ErrorKind::NotFound);
    assert_eq!(kind_of(a.browse_rows("items", 0, 10).await), ErrorKind::InvalidInput);

    let info = a.info().await.unwrap();
    assert_eq!(info.table_count, 1);
    // Without a route, info aggregates over the shards.
    let all = client.info().await.unwrap();
    assert_eq!(all.table_count, 2);
    assert!(all.data_source.starts_with("sharded://tenants"), "{}", all.data_source);
}

#[tokio::test]
async fn collections_of_documents() {
    let dir = crate::support::temp_dir();
    let daemon = sharded_daemon(dir.path(), ServerConfig::default()).await;
    let a = client(&daemon).with_route(route("tenant-a"));
    let b = client(&daemon).with_route(route("tenant-b"));

    let document = serde_json::json!({"name": "Ada", "big": 9_007_199_254_740_993_u64, "tags": ["x", null], "nested": {"ok": true}});
    a.put_document("people", "ada", document.clone()).await.unwrap();
    a.put_document("people", "bob", serde_json::json!({"name": "Bob"}))
        .await
        .unwrap();
    assert_eq!(a.list_collections().await.unwrap(), ["people"]);
    assert_eq!(a.count_documents("people").await.unwrap(), 2);
    assert_eq!(a.get_document("people", "ada").await.unwrap(), Some(document));
    assert_eq!(a.get_document("people", "zed").await.unwrap(), None);
    let page = a.browse_documents("people", 1, 1).await.unwrap();
    assert_eq!(page.collection_name, "people");
    assert_eq!((page.total_count, page.total_pages), (2, 2));
    assert_eq!(page.documents[0].key, "ada");
    assert_eq!(b.count_documents("people").await.unwrap(), 0);
    assert!(a.delete_document("people", "bob").await.unwrap());
    assert!(!a.delete_document("people", "bob").await.unwrap());
    assert!(a.drop_collection("people").await.unwrap());
    assert_eq!(a.count_documents("people").await.unwrap(), 0);
}

#[tokio::test]
async fn saved_queries_and_procedures() {
    let dir = crate::support::temp_dir();
    let daemon = sharded_daemon(dir.path(), ServerConfig::default()).await;
    let client = client(&daemon);
    client.execute_sql_on_all_shards(ITEMS).await.unwrap();
    let a = client.with_route(route("tenant-a"));

    let saved = a.put_saved_query("all items", "SELECT * FROM items").await.unwrap();
    assert_eq!(saved.sql_text, "SELECT * FROM items");
    assert!(!saved.created_utc.is_empty());
    assert_eq!(a.get_saved_query("all items").await.unwrap(), Some(saved.clone()));
    assert_eq!(a.list_saved_queries().await.unwrap(), [saved]);
    assert_eq!(a.get_saved_query("missing").await.unwrap(), None);
    assert!(a.delete_saved_query("all items").await.unwrap());
    assert!(!a.delete_saved_query("all items").await.unwrap());

    let definition = ProcedureDefinition {
        name: "add_item".into(),
        body_sql: "INSERT INTO items (id, name, qty) VALUES (:id, :name, :qty); \
                   SELECT qty FROM items WHERE id = :id"
            .into(),
        parameters: vec![
            ProcedureParameter {
                name: "id".into(),
                required: true,
                default: Value::Null,
            },
            ProcedureParameter {
                name: "name".into(),
                required: false,
                default: Value::Text("unnamed".into()),
            },
            ProcedureParameter {
                name: "qty".into(),
                required: false,
                default: Value::Integer(i64::MIN),
            },
        ],
        description: Some("adds one item".into()),
    };
    assert_eq!(a.put_procedure(definition.clone()).await.unwrap(), definition);
    assert_eq!(a.get_procedure("add_item").await.unwrap(), Some(definition.clone()));
    assert_eq!(a.list_procedures().await.unwrap(), [definition]);
    let result = a
        .execute_procedure("add_item", Params::named([("id", 5)]))
        .await
        .unwrap();
    assert_eq!(result.rows, [[Value::Integer(i64::MIN)]]);
    let name = a
        .execute_sql("SELECT name FROM items WHERE id = 5", Params::none())
        .await
        .unwrap();
    assert_eq!(name.rows[0][0], Value::Text("unnamed".into()));
    let positional = a
        .execute_procedure(
            "add_item",
            Params::from(vec![Value::Integer(6), "six".into(), Value::Integer(6)]),
        )
        .await
        .unwrap();
    assert_eq!(positional.rows, [[Value::Integer(6)]]);
    assert_eq!(
        kind_of(a.execute_procedure("add_item", Params::none()).await),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        kind_of(a.execute_procedure("nope", Params::none()).await),
        ErrorKind::NotFound
    );
    assert!(a.delete_procedure("add_item").await.unwrap());
    assert_eq!(a.get_procedure("add_item").await.unwrap(), None);
}

#[tokio::test]
async fn transactions_commit_roll_back_and_refuse_conflicting_routes() {
    let dir = crate::support::temp_dir();
    let daemon = sharded_daemon(dir.path(), ServerConfig::default()).await;
    let client = client(&daemon);
    client.execute_sql_on_all_shards(ITEMS).await.unwrap();
    let a = client.with_route(route("tenant-a"));
    let b = client.with_route(route("tenant-b"));

    // Begin needs a route.
    assert_eq!(kind_of(client.begin_transaction().await), ErrorKind::RouteRequired);

    // Commit: the id is the shard-prefixed id, passed back unchanged, and routes by itself.
    let tx = a.begin_transaction().await.unwrap();
    assert!(
        tx.transaction_id.starts_with("csdbshard:1:s0:"),
        "{}",
        tx.transaction_id
    );
    assert!(tx.expires_at_utc.is_some());
    let inside = a
        .execute_in_transaction(
            &tx.transaction_id,
            "INSERT INTO items (id, name) VALUES (?1, ?2)",
            Params::from(vec![Value::Integer(10), "tx".into()]),
        )
        .await
        .unwrap();
    assert_eq!(inside.rows_affected, 1);
    client
        .execute_in_transaction(
            &tx.transaction_id,
            "UPDATE items SET qty = 1 WHERE id = 10",
            Params::none(),
        )
        .await
        .unwrap();
    client.commit_transaction(&tx.transaction_id).await.unwrap();
    assert_eq!(
        a.get_row("items", Value::Integer(10))
            .await
            .unwrap()
            .expect("committed")["qty"],
        Value::Integer(1)
    );
    assert_eq!(
        kind_of(client.commit_transaction(&tx.transaction_id).await),
        ErrorKind::NotFound
    );

    // Rollback.
    let tx = a.begin_transaction().await.unwrap();
    a.execute_in_transaction(&tx.transaction_id, "INSERT INTO items (id) VALUES (11)", Params::none())
        .await
        .unwrap();
    a.rollback_transaction(&tx.transaction_id).await.unwrap();
    assert_eq!(a.get_row("items", Value::Integer(11)).await.unwrap(), None);

    // A route that resolves to another shard is refused, and nothing reaches either shard.
    let tx = a.begin_transaction().await.unwrap();
    let conflict = b.commit_transaction(&tx.transaction_id).await.unwrap_err();
    assert_eq!(conflict.kind(), ErrorKind::Conflict, "{conflict}");
    assert!(matches!(conflict, Error::Remote { .. }));
    assert_eq!(
        kind_of(
            b.execute_in_transaction(&tx.transaction_id, "SELECT 1", Params::none())
                .await
        ),
        ErrorKind::Conflict
    );
    a.rollback_transaction(&tx.transaction_id).await.unwrap();

    // Another map version, and ids that are not ids.
    assert_eq!(
        kind_of(client.commit_transaction("csdbshard:99:s0:whatever").await),
        ErrorKind::StaleMapVersion
    );
    assert_eq!(
        kind_of(client.commit_transaction("nope").await),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        kind_of(client.rollback_transaction("csdbshard:1:s9:x").await),
        ErrorKind::NotFound
    );
}

#[tokio::test]
async fn shard_admin_map_resolve_status_fan_out_and_catalog() {
    let dir = crate::support::temp_dir();
    let daemon = sharded_daemon(dir.path(), ServerConfig::default()).await;
    // Shard-admin calls ignore the route a client is bound to.
    let admin = client(&daemon).with_route(route("tenant-a"));

    let map = admin.shard_map().await.unwrap();
    assert_eq!(
        (map.keyspace.as_str(), map.map_version, map.virtual_bucket_count),
        ("tenants", 1, 4)
    );
    assert_eq!(
        map.shards.iter().map(|s| s.shard_id.as_str()).collect::<Vec<_>>(),
        ["s0", "s1"]
    );
    assert_eq!(map.bucket_ranges.len(), 2);
    assert_eq!(map.exact_key_pins["tenant-b"], "s1");
    assert!(!map.shards[0].has_api_key);

    let resolved = admin.resolve_route(&route("tenant-b")).await.unwrap();
    assert_eq!(resolved.shard_id, "s1");
    assert_eq!(resolved.source, RouteSource::Pin);
    assert_eq!(resolved.bucket, 0);
    assert_eq!(resolved.map_version, 1);
    assert_eq!(resolved.token_hex, format!("{:016x}", resolved.token));
    let in_process = shardlite::routing::route_token("tenants", "tenant-b").unwrap();
    assert_eq!(resolved.token, in_process.0);
    assert_eq!(
        kind_of(admin.resolve_route(&RouteContext::new("other", "k").unwrap()).await),
        ErrorKind::UnknownKeyspace
    );

    let status = admin.shard_status().await.unwrap();
    assert_eq!(status.len(), 2);
    assert!(
        status
            .iter()
            .all(|s| s.enabled && s.healthy && s.error.is_none() && s.info.is_some())
    );

    let created = admin.execute_sql_on_all_shards(ITEMS).await.unwrap();
    assert_eq!(
        created.iter().map(|r| r.shard_id.as_str()).collect::<Vec<_>>(),
        ["s0", "s1"]
    );
    assert!(created.iter().all(|r| r.result.is_some() && r.error.is_none()));
    admin
        .with_route(route("tenant-b"))
        .execute_sql("INSERT INTO items (id) VALUES (1), (2)", Params::none())
        .await
        .unwrap();
    let counts = admin
        .execute_read_only_sql_on_all_shards("SELECT count(*) AS n FROM items")
        .await
        .unwrap();
    let per_shard: Vec<_> = counts
        .iter()
        .map(|r| (r.shard_id.as_str(), r.result.as_ref().unwrap().rows[0][0].clone()))
        .collect();
    assert_eq!(per_shard, [("s0", Value::Integer(0)), ("s1", Value::Integer(2))]);
    assert_eq!(
        kind_of(admin.execute_read_only_sql_on_all_shards("DELETE FROM items").await),
        ErrorKind::ReadOnly
    );
    let failing = admin.execute_sql_on_all_shards("SELEC 1").await.unwrap();
    assert!(
        failing.iter().all(|r| r.error_code.as_deref() == Some("sql")),
        "{failing:?}"
    );

    let catalog = admin.catalog_state().await.unwrap();
    assert_eq!(catalog.source, "master-catalog");
    assert!(catalog.is_catalog_enabled);
    assert_eq!(catalog.active_map, map);
    assert_eq!(catalog.pending_map, None);
}

#[tokio::test]
async fn route_metadata_errors() {
    let dir = crate::support::temp_dir();
    let daemon = sharded_daemon(dir.path(), ServerConfig::default()).await;
    let client = client(&daemon);
    client.execute_sql_on_all_shards(ITEMS).await.unwrap();

    let no_route = client.execute_sql("SELECT 1", Params::none()).await.unwrap_err();
    assert_eq!(no_route.kind(), ErrorKind::RouteRequired);
    assert!(no_route.to_string().contains("route is required"), "{no_route}");
    assert_eq!(kind_of(client.list_tables().await), ErrorKind::RouteRequired);

    let unknown = client.with_route(RouteContext::new("customers", "c-1").unwrap());
    assert_eq!(
        kind_of(unknown.execute_sql("SELECT 1", Params::none()).await),
        ErrorKind::UnknownKeyspace
    );
    // The keyspace matches ignoring case.
    let shouting = client.with_route(RouteContext::new("TENANTS", "tenant-a").unwrap());
    shouting.execute_sql("SELECT 1", Params::none()).await.unwrap();

    // A key that is not ASCII travels in binary metadata and routes like in-process.
    let munich = client.with_route(route("münchen-ü"));
    munich
        .execute_sql("INSERT INTO items (id) VALUES (42)", Params::none())
        .await
        .unwrap();
    let expected = client.resolve_route(&route("münchen-ü")).await.unwrap().shard_id;
    let on_shard = client
        .execute_read_only_sql_on_all_shards("SELECT count(*) FROM items WHERE id = 42")
        .await
        .unwrap();
    for shard in on_shard {
        let count = shard.result.unwrap().rows[0][0].clone();
        let want = if shard.shard_id == expected { 1 } else { 0 };
        assert_eq!(count, Value::Integer(want), "{}", shard.shard_id);
    }

    // Exactly one route entry: INVALID_ARGUMENT naming the missing one.
    let mut raw = raw(&daemon).await;
    let mut request = tonic::Request::new(pb::SqlRequest {
        sql: "SELECT 1".into(),
        params: None,
    });
    request
        .metadata_mut()
        .insert(KEYSPACE_METADATA, "tenants".parse().unwrap());
    let status = raw.execute_sql(request).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert_eq!(metadata_text(&status, ERROR_CODE_METADATA), Some("invalid_input"));
    assert!(
        status.message().contains("x-csharpdb-shard-key"),
        "{}",
        status.message()
    );

    // A blank entry counts as absent.
    let mut request = tonic::Request::new(pb::SqlRequest {
        sql: "SELECT 1".into(),
        params: None,
    });
    request.metadata_mut().insert(KEYSPACE_METADATA, " ".parse().unwrap());
    let status = raw.execute_sql(request).await.unwrap_err();
    assert_eq!(metadata_text(&status, ERROR_CODE_METADATA), Some("route_required"));

    // SQL errors carry the SQLite code on the wire.
    let mut request = tonic::Request::new(pb::SqlRequest {
        sql: "SELEC 1".into(),
        params: None,
    });
    request
        .metadata_mut()
        .insert(KEYSPACE_METADATA, "tenants".parse().unwrap());
    request
        .metadata_mut()
        .insert(shardlite::wire::SHARD_KEY_METADATA, "tenant-a".parse().unwrap());
    let status = raw.execute_sql(request).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert_eq!(metadata_text(&status, ERROR_CODE_METADATA), Some("sql"));
    assert_eq!(metadata_text(&status, SQLITE_CODE_METADATA), Some("1"));
}

#[tokio::test]
async fn api_key_is_required_on_every_rpc_when_configured() {
    let dir = crate::support::temp_dir();
    let config = ServerConfig {
        api_key: Some(Secret::new("c2VjcmV0==")),
        api_key_header: "X-Team-Key".into(),
        ..ServerConfig::default()
    };
    let daemon = sharded_daemon(dir.path(), config).await;

    let anonymous = client(&daemon);
    assert_eq!(kind_of(anonymous.shard_map().await), ErrorKind::Unauthenticated);
    assert_eq!(kind_of(anonymous.info().await), ErrorKind::Unauthenticated);
    let wrong = GrpcClient::new(
        options(&daemon)
            .with_api_key("c2VjcmV0")
            .with_api_key_header("X-Team-Key"),
    )
    .unwrap();
    let err = wrong.shard_status().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unauthenticated);
    assert!(!err.to_string().contains("c2VjcmV0"), "{err}");
    // The right key under the default header name is still no key.
    let wrong_header = GrpcClient::new(options(&daemon).with_api_key("c2VjcmV0==")).unwrap();
    assert_eq!(kind_of(wrong_header.info().await), ErrorKind::Unauthenticated);

    let mut raw = raw(&daemon).await;
    let status = raw.get_shard_map(pb::Empty {}).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    assert_eq!(metadata_text(&status, ERROR_CODE_METADATA), Some("unauthenticated"));

    let keyed = GrpcClient::new(
        options(&daemon)
            .with_api_key("c2VjcmV0==")
            .with_api_key_header("x-team-key"),
    )
    .unwrap();
    assert_eq!(keyed.shard_map().await.unwrap().keyspace, "tenants");
    keyed.execute_sql_on_all_shards(ITEMS).await.unwrap();
    let a = keyed.with_route(route("tenant-a"));
    assert_eq!(a.list_tables().await.unwrap(), ["items"]);
}

#[tokio::test]
async fn unsharded_daemon_serves_data_and_refuses_shard_admin() {
    let dir = crate::support::temp_dir();
    let state = ServerState::open(dir.path().join("plain.db"), ServerConfig::default())
        .await
        .unwrap();
    let daemon = start_daemon(state).await;
    let client = client(&daemon);

    let err = client.shard_map().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotSharded, "{err}");
    assert_eq!(kind_of(client.shard_status().await), ErrorKind::NotSharded);
    assert_eq!(kind_of(client.catalog_state().await), ErrorKind::NotSharded);
    assert_eq!(
        kind_of(client.resolve_route(&route("tenant-a")).await),
        ErrorKind::NotSharded
    );
    assert_eq!(
        kind_of(client.execute_sql_on_all_shards("SELECT 1").await),
        ErrorKind::NotSharded
    );
    let mut raw = raw(&daemon).await;
    let status = raw.get_shard_status(pb::Empty {}).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert_eq!(metadata_text(&status, ERROR_CODE_METADATA), Some("not_sharded"));

    client
        .execute_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)", Params::none())
        .await
        .unwrap();
    client
        .execute_sql("INSERT INTO t (v) VALUES (?1)", Params::from(vec!["x"]))
        .await
        .unwrap();
    // A route is accepted and ignored by a plain database.
    let routed = client.with_route(route("tenant-b"));
    assert_eq!(routed.count_rows("t").await.unwrap(), 1);
    let tx = client.begin_transaction().await.unwrap();
    client
        .execute_in_transaction(&tx.transaction_id, "DELETE FROM t", Params::none())
        .await
        .unwrap();
    client.commit_transaction(&tx.transaction_id).await.unwrap();
    assert_eq!(client.count_rows("t").await.unwrap(), 0);
}

#[tokio::test]
async fn unreachable_and_stalled_daemons_fail_clearly_within_the_timeout() {
    // A port nobody listens on any more.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let timeout = Duration::from_secs(3);
    let client = GrpcClient::new(RemoteOptions::new(&gone).with_request_timeout(timeout)).unwrap();
    let started = Instant::now();
    let err = client.info().await.unwrap_err();
    assert!(
        started.elapsed() < timeout + Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(err.to_string().contains(&gone), "{err}");
    let err = GrpcClient::connect(RemoteOptions::new(&gone)).await.unwrap_err();
    assert!(err.to_string().contains(&gone), "{err}");

    // A daemon that accepts connections but never answers: the request timeout ends the call.
    let stalled = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", stalled.local_addr().unwrap());
    let limit = Duration::from_millis(800);
    let client = GrpcClient::new(RemoteOptions::new(&endpoint).with_request_timeout(limit)).unwrap();
    let started = Instant::now();
    let err = client.shard_map().await.unwrap_err();
    assert!(
        started.elapsed() < limit + Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(err.to_string().contains(&endpoint), "{err}");
    drop(stalled);

    // Endpoints that cannot be used are refused up front, naming the problem.
    for bad in ["ftp://127.0.0.1:1", "127.0.0.1:61818", "http://user:secret@127.0.0.1:1"] {
        let err = GrpcClient::new(RemoteOptions::new(bad)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad}: {err}");
        assert!(!err.to_string().contains("secret"), "{err}");
    }
}

#[tokio::test]
async fn connection_strings_open_grpc_clients() {
    let dir = crate::support::temp_dir();
    let daemon = sharded_daemon(dir.path(), ServerConfig::default()).await;
    client(&daemon).execute_sql_on_all_shards(ITEMS).await.unwrap();
    let text = format!(
        "Endpoint={};Transport=Grpc;Shard Keyspace=tenants;Shard Key=tenant-b;Command Timeout=5",
        daemon.base_url
    );
    let options = shardlite::options::ConnectionOptions::parse(&text).unwrap();
    let grpc = RemoteOptions::from_connection_options(&options).unwrap();
    assert_eq!(grpc.request_timeout(), Duration::from_secs(5));
    let client = GrpcClient::connect(grpc).await.unwrap();
    assert_eq!(client.route(), Some(&route("tenant-b")));
    let tx = client.begin_transaction().await.unwrap();
    assert!(
        tx.transaction_id.starts_with("csdbshard:1:s1:"),
        "{}",
        tx.transaction_id
    );
    client.rollback_transaction(&tx.transaction_id).await.unwrap();

    let local = shardlite::options::ConnectionOptions::parse("Data Source=local.db").unwrap();
    let err = RemoteOptions::from_connection_options(&local).unwrap_err();
    assert!(err.to_string().contains("Endpoint"), "{err}");
}

#[tokio::test]
async fn rest_and_grpc_share_one_port() {
    let dir = crate::support::temp_dir();
    let daemon = sharded_daemon(dir.path(), ServerConfig::default()).await;
    client(&daemon).execute_sql_on_all_shards(ITEMS).await.unwrap();
    let over_grpc = client(&daemon).info().await.unwrap();
    let http = crate::support::daemon::http_client();
    let over_rest: serde_json::Value = http
        .get(daemon.url("/api/info"))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(over_rest["tableCount"], over_grpc.table_count);
    assert_eq!(over_grpc.table_count, 2);
    // Mounting the gRPC routes leaves REST's own 404 for unknown paths alone.
    let missing = http.get(daemon.url("/api/no-such-endpoint")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
}

#[tokio::test]
async fn messages_over_the_body_limit_are_refused_and_the_daemon_keeps_serving() {
    let dir = crate::support::temp_dir();
    let config = ServerConfig {
        body_limit: 4096,
        ..ServerConfig::default()
    };
    let daemon = sharded_daemon(dir.path(), config).await;
    let a = client(&daemon).with_route(route("tenant-a"));
    let big = Value::Blob(vec![7; 8192]);
    let err = a
        .execute_sql("SELECT length(?1)", Params::from(vec![big]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("4096"), "{err}");
    let small = a
        .execute_sql("SELECT length(?1)", Params::from(vec![Value::Blob(vec![7; 100])]))
        .await
        .unwrap();
    assert_eq!(small.rows[0][0], Value::Integer(100));
}
