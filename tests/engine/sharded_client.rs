//! The sharded client against real SQLite files: routing, fan-out, transactions, status.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::support::{route, temp_dir, tenants_map, tenants_options};
use shardlite::client::ShardedClientOptions;
use shardlite::client::{
    DocumentData, LocalClient, Params, RowData, ShardedClient, SqlData, StoredData, TransactionData, Value,
};
use shardlite::engine::EngineConfig;
use shardlite::map::{BucketRange, ShardDefinition, ShardMap, ShardingOptions};
use shardlite::{Error, ErrorKind, RouteContext};

async fn client(dir: &std::path::Path) -> ShardedClient {
    ShardedClient::from_map(tenants_map(dir)).await.unwrap()
}

async fn client_with(dir: &std::path::Path, engine: EngineConfig) -> ShardedClient {
    ShardedClient::from_map_with(tenants_map(dir), ShardedClientOptions::with_engine(engine))
        .await
        .unwrap()
}

#[tokio::test]
async fn route_bound_client_reaches_a_stable_shard_and_no_route_is_refused() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    let a = sharded.for_route(route("tenant-a"));
    a.execute_sql("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)", Params::none())
        .await
        .unwrap();
    let inserted = a
        .insert_row(
            "items",
            [
                ("id".to_owned(), Value::Integer(1)),
                ("name".to_owned(), "alpha".into()),
            ]
            .into(),
        )
        .await
        .unwrap();
    assert_eq!(inserted, 1);

    let again = sharded.for_route(route(" tenant-a "));
    let row = again.get_row("items", Value::Integer(1)).await.unwrap().unwrap();
    assert_eq!(row["name"], Value::Text("alpha".into()));
    assert_eq!(again.resolve().unwrap().shard_id, "s0");

    // Without a route there is no data client to call: a blank key is refused as a missing route.
    let err = RouteContext::new("tenants", " ").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RouteRequired);
}

#[tokio::test]
async fn a_row_written_through_one_route_is_invisible_from_a_route_on_another_shard() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    let all = sharded
        .query()
        .execute_all("CREATE TABLE t (id INTEGER PRIMARY KEY, tenant TEXT)")
        .await
        .unwrap();
    assert!(all.iter().all(|r| r.error.is_none()), "{all:?}");
    let a = sharded.for_route(route("tenant-a"));
    let b = sharded.for_route(route("tenant-b"));
    a.execute_sql("INSERT INTO t VALUES (1, 'tenant-a')", Params::none())
        .await
        .unwrap();
    assert_eq!(a.count_rows("t").await.unwrap(), 1);
    assert_eq!(b.count_rows("t").await.unwrap(), 0);
    assert!(b.get_row("t", Value::Integer(1)).await.unwrap().is_none());

    // And the row is physically in s0's file only.
    let s0 = LocalClient::open(dir.path().join("s0.db")).await.unwrap();
    let s1 = LocalClient::open(dir.path().join("s1.db")).await.unwrap();
    assert_eq!(s0.count_rows("t").await.unwrap(), 1);
    assert_eq!(s1.count_rows("t").await.unwrap(), 0);
}

#[tokio::test]
async fn read_only_fan_out_returns_per_shard_results_and_rejects_writes() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    sharded
        .query()
        .execute_all("CREATE TABLE fanout_items (id INTEGER PRIMARY KEY)")
        .await
        .unwrap();
    sharded
        .for_route(route("tenant-a"))
        .execute_sql("INSERT INTO fanout_items VALUES (1)", Params::none())
        .await
        .unwrap();
    sharded
        .for_route(route("tenant-b"))
        .execute_sql("INSERT INTO fanout_items VALUES (2)", Params::none())
        .await
        .unwrap();
    let results = sharded
        .query()
        .read_all("SELECT COUNT(*) FROM fanout_items;")
        .await
        .unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].shard_id, "s0");
    assert_eq!(results[1].shard_id, "s1");
    for r in &results {
        assert!(r.error.is_none());
        let result = r.result.as_ref().unwrap();
        assert!(result.is_query);
        assert_eq!(result.rows, vec![vec![Value::Integer(1)]]);
    }
    let err = sharded
        .query()
        .read_all("INSERT INTO fanout_items VALUES (3)")
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ReadOnly);
}

#[tokio::test]
async fn read_only_fan_out_refuses_every_kind_of_write_and_changes_nothing() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    sharded
        .query()
        .execute_all("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'keep');")
        .await
        .unwrap();
    let before_files = crate::support::files_in(dir.path());
    let attach_target = dir.path().join("attached.db");
    let vacuum_target = dir.path().join("vacuumed.db");
    let attempts = [
        "INSERT INTO t VALUES (2, 'x')".to_owned(),
        "SELECT 1; DELETE FROM t".to_owned(),
        "WITH doomed AS (SELECT id FROM t) DELETE FROM t WHERE id IN (SELECT id FROM doomed)".to_owned(),
        "PRAGMA user_version = 1".to_owned(),
        format!("ATTACH DATABASE '{}' AS other", attach_target.display()),
        format!("VACUUM INTO '{}'", vacuum_target.display()),
        "CREATE TABLE sneaky (id INTEGER)".to_owned(),
        "DROP TABLE t".to_owned(),
        "UPDATE t SET v = 'changed'".to_owned(),
        "/* comment */ DELETE FROM t".to_owned(),
        "SELECT * FROM t; PRAGMA journal_mode = DELETE".to_owned(),
    ];
    for sql in &attempts {
        let err = sharded.query().read_all(sql).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ReadOnly, "{sql}: {err}");
    }
    for shard in ["s0", "s1"] {
        let c = sharded.for_shard_id(shard).unwrap();
        let r = c.execute_sql("SELECT id, v FROM t", Params::none()).await.unwrap();
        assert_eq!(r.rows, vec![vec![Value::Integer(1), Value::Text("keep".into())]]);
        let v = c.execute_sql("PRAGMA user_version", Params::none()).await.unwrap();
        assert_eq!(v.rows, vec![vec![Value::Integer(0)]]);
        assert_eq!(c.list_tables().await.unwrap(), vec!["t".to_owned()]);
    }
    assert_eq!(crate::support::files_in(dir.path()), before_files);
    assert!(!attach_target.exists() && !vacuum_target.exists());
}

#[tokio::test]
async fn transactions_route_by_id_without_a_route_and_reject_a_conflicting_route() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    let a = sharded.for_route(route("tenant-a"));
    a.execute_sql(
        "CREATE TABLE tx_items (id INTEGER PRIMARY KEY, name TEXT)",
        Params::none(),
    )
    .await
    .unwrap();
    let info = a.begin_transaction().await.unwrap();
    assert!(
        info.transaction_id.starts_with("csdbshard:1:s0:"),
        "{}",
        info.transaction_id
    );
    assert!(info.expires_at_utc.is_some());

    let b = sharded.for_route(route("tenant-b"));
    let err = b
        .execute_in_transaction(
            &info.transaction_id,
            "INSERT INTO tx_items VALUES (9, 'wrong')",
            Params::none(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(matches!(err, Error::TransactionRouteConflict(ref conflict) if conflict.route_shard_id == "s1"));

    sharded
        .transactions()
        .execute(
            &info.transaction_id,
            "INSERT INTO tx_items VALUES (?1, ?2)",
            Params::from(vec![Value::Integer(1), "committed".into()]),
        )
        .await
        .unwrap();
    sharded.transactions().commit(&info.transaction_id).await.unwrap();
    let r = a
        .execute_sql("SELECT name FROM tx_items WHERE id = 1", Params::none())
        .await
        .unwrap();
    assert_eq!(r.rows, vec![vec![Value::Text("committed".into())]]);
    assert_eq!(b.count_rows("tx_items").await.unwrap_err().kind(), ErrorKind::NotFound);

    // The id is now closed.
    let err = sharded.transactions().commit(&info.transaction_id).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains(&info.transaction_id), "{err}");
}

#[tokio::test]
async fn stale_and_malformed_transaction_ids_are_refused_before_reaching_a_shard() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    let err = sharded
        .transactions()
        .execute("csdbshard:2:s0:abc", "SELECT 1", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StaleMapVersion);
    assert!(err.to_string().contains("version 2"), "{err}");
    for bad in ["", "nope", "csdbshard:x:s0:abc", "csdbshard:1:s0:", "csdbshard:1::abc"] {
        let err = sharded.transactions().rollback(bad).await.unwrap_err();
        assert!(matches!(err, Error::MalformedTransactionId { .. }), "{bad}: {err}");
    }
    let err = sharded.transactions().commit("csdbshard:1:s9:abc").await.unwrap_err();
    assert!(matches!(err, Error::UnknownShard { .. }), "{err}");
}

#[tokio::test]
async fn guard_commit_persists_while_rollback_and_drop_discard() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    let a = sharded.for_route(route("tenant-a"));
    a.execute_sql("CREATE TABLE g (id INTEGER PRIMARY KEY)", Params::none())
        .await
        .unwrap();

    let tx = a.begin().await.unwrap();
    tx.execute("INSERT INTO g VALUES (1)", Params::none()).await.unwrap();
    tx.commit().await.unwrap();

    let tx = a.begin().await.unwrap();
    tx.execute("INSERT INTO g VALUES (2)", Params::none()).await.unwrap();
    tx.rollback().await.unwrap();

    let tx = a.begin().await.unwrap();
    tx.execute("INSERT INTO g VALUES (3)", Params::none()).await.unwrap();
    drop(tx);

    // The next transaction can only begin once the dropped one released the write lock.
    let tx = a.begin().await.unwrap();
    tx.execute("INSERT INTO g VALUES (4)", Params::none()).await.unwrap();
    tx.commit().await.unwrap();
    let r = a
        .execute_sql("SELECT id FROM g ORDER BY id", Params::none())
        .await
        .unwrap();
    assert_eq!(r.rows, vec![vec![Value::Integer(1)], vec![Value::Integer(4)]]);
}

#[tokio::test]
async fn an_idle_transaction_expires_releases_the_lock_and_another_writer_succeeds() {
    let dir = temp_dir();
    let engine = EngineConfig {
        transaction_idle_timeout: Some(Duration::from_millis(300)),
        busy_timeout: Duration::from_secs(10),
        ..EngineConfig::default()
    };
    let sharded = client_with(dir.path(), engine).await;
    let a = sharded.for_route(route("tenant-a"));
    a.execute_sql("CREATE TABLE e (id INTEGER PRIMARY KEY)", Params::none())
        .await
        .unwrap();
    let abandoned = a.begin_transaction().await.unwrap();
    a.execute_in_transaction(&abandoned.transaction_id, "INSERT INTO e VALUES (1)", Params::none())
        .await
        .unwrap();

    // This writer waits on the abandoned transaction's lock, which the idle timeout releases.
    a.execute_sql("INSERT INTO e VALUES (2)", Params::none()).await.unwrap();

    let err = a
        .execute_in_transaction(&abandoned.transaction_id, "INSERT INTO e VALUES (3)", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Expired, "{err}");
    let r = a.execute_sql("SELECT id FROM e", Params::none()).await.unwrap();
    assert_eq!(r.rows, vec![vec![Value::Integer(2)]]);
}

#[tokio::test]
async fn the_open_transaction_cap_answers_busy_instead_of_hanging() {
    let dir = temp_dir();
    let engine = EngineConfig {
        max_open_transactions: 1,
        ..EngineConfig::default()
    };
    let sharded = client_with(dir.path(), engine).await;
    let a = sharded.for_route(route("tenant-a"));
    let first = a.begin().await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(2), a.begin())
        .await
        .expect("begin must answer, not hang")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Busy);
    assert!(err.to_string().contains("s0"), "{err}");
    first.rollback().await.unwrap();
    a.begin().await.unwrap().rollback().await.unwrap();
}

#[tokio::test]
async fn a_route_to_a_disabled_shard_is_rejected() {
    let dir = temp_dir();
    let mut disabled = ShardDefinition::local("disabled", crate::support::path_str(&dir.path().join("d.db")));
    disabled.enabled = false;
    let map = ShardMap::new(ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 1,
        shards: vec![
            disabled,
            ShardDefinition::local("active", crate::support::path_str(&dir.path().join("a.db"))),
        ],
        bucket_ranges: vec![BucketRange::new(0, 1, "disabled")],
        exact_key_pins: Default::default(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    })
    .unwrap();
    let sharded = ShardedClient::from_map(map).await.unwrap();
    let err = sharded.resolve_route(&route("any")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(err.to_string().contains("disabled"), "{err}");
    let err = sharded
        .for_route(route("any"))
        .execute_sql("SELECT 1", Params::none())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::ShardDisabled { .. }));
    assert!(matches!(
        sharded.for_shard_id("disabled"),
        Err(Error::ShardIsDisabled { .. })
    ));
    let status = sharded.shards().status().await;
    assert!(!status[0].enabled && !status[0].healthy && status[0].error.is_some());
    assert!(status[1].healthy);
    // A disabled shard's file is never created.
    assert!(!dir.path().join("d.db").exists());
}

#[tokio::test]
async fn unknown_keyspace_is_a_typed_error() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    let err = sharded
        .for_route(RouteContext::new("other", "x").unwrap())
        .execute_sql("SELECT 1", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnknownKeyspace);
    assert!(
        err.to_string().contains("'other'") && err.to_string().contains("'tenants'"),
        "{err}"
    );
    // Case differences in the keyspace are accepted.
    let r = sharded
        .resolve_route(&RouteContext::new("TENANTS", "tenant-b").unwrap())
        .unwrap();
    assert_eq!(r.shard_id, "s1");
    assert_eq!(r.keyspace, "tenants");
}

#[tokio::test]
async fn status_probes_each_shard_and_reports_replica_metadata() {
    let dir = temp_dir();
    let mut options = tenants_options(dir.path());
    let mut replica = ShardDefinition::local("s1-replica", crate::support::path_str(&dir.path().join("s1r.db")));
    replica.role = Some("Replica".into());
    replica.replica.primary_shard_id = Some("s1".into());
    replica.replica.promotion_eligible = true;
    replica.replica.replication_lag_bytes = Some(128);
    replica.replica.last_replicated_utc = Some("2026-06-01T12:30:00Z".into());
    options.shards.push(replica);
    let sharded = ShardedClient::from_map(ShardMap::new(options).unwrap()).await.unwrap();
    let status = sharded.shards().status().await;
    assert_eq!(
        status.iter().map(|s| s.shard_id.as_str()).collect::<Vec<_>>(),
        ["s0", "s1", "s1-replica"]
    );
    assert!(
        status
            .iter()
            .all(|s| s.healthy && s.info.is_some() && s.error.is_none())
    );
    let r = &status[2];
    assert!(r.can_promote);
    assert_eq!(r.replica.primary_shard_id.as_deref(), Some("s1"));
    assert_eq!(r.replica.replication_lag_bytes, Some(128));
    assert!(!status[0].can_promote);

    // Break a shard file behind the client's back: status reports it, others stay healthy.
    let broken = temp_dir();
    let mut options = tenants_options(broken.path());
    options.shards[1].data_source = Some(crate::support::path_str(broken.path()));
    let sharded = ShardedClient::from_map(ShardMap::new(options).unwrap()).await.unwrap();
    let status = sharded.shards().status().await;
    assert!(status[0].healthy);
    assert!(!status[1].healthy && status[1].error.is_some(), "{:?}", status[1]);
    let err = sharded
        .for_route(route("tenant-b"))
        .execute_sql("SELECT 1", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    sharded
        .for_route(route("tenant-a"))
        .execute_sql("SELECT 1", Params::none())
        .await
        .unwrap();
}

#[tokio::test]
async fn execute_on_all_shards_reports_each_shard_and_one_failure_does_not_stop_the_others() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    sharded
        .for_shard_id("s1")
        .unwrap()
        .execute_sql("CREATE TABLE only_on_s1 (id INTEGER)", Params::none())
        .await
        .unwrap();
    let results = sharded
        .query()
        .execute_all("CREATE TABLE only_on_s1 (id INTEGER)")
        .await
        .unwrap();
    assert!(results[0].error.is_none());
    assert!(results[1].error.as_deref().unwrap().contains("already exists"));
    assert_eq!(results[1].error_code.as_deref(), Some("sql"));
    assert!(sharded.query().execute_all("  ").await.is_err());
}

#[tokio::test]
async fn concurrent_routed_inserts_are_all_present_exactly_once() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    sharded
        .query()
        .execute_all("CREATE TABLE c (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL)")
        .await
        .unwrap();
    let sharded = Arc::new(sharded);
    let mut tasks = Vec::new();
    for task in 0..32i64 {
        let sharded = Arc::clone(&sharded);
        tasks.push(tokio::spawn(async move {
            for n in 0..200i64 {
                let id = task * 1000 + n;
                let key = format!("tenant-{}", id % 37);
                let routed = sharded.for_route(RouteContext::new("tenants", &key).unwrap());
                routed
                    .execute_sql(
                        "INSERT INTO c (id, tenant) VALUES (?1, ?2)",
                        Params::from(vec![Value::Integer(id), Value::Text(key)]),
                    )
                    .await
                    .map_err(|e| format!("insert {id}: {e}"))?;
            }
            Ok::<_, String>(())
        }));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let mut seen = HashSet::new();
    let mut total = 0;
    for r in sharded.query().read_all("SELECT id, tenant FROM c").await.unwrap() {
        let shard = r.shard_id.clone();
        for row in r.result.unwrap().rows {
            total += 1;
            let id = row[0].as_i64().unwrap();
            assert!(seen.insert(id), "row {id} present twice");
            // Each row lives on the shard its route resolves to.
            let key = row[1].as_str().unwrap();
            let expected = sharded
                .resolve_route(&RouteContext::new("tenants", key).unwrap())
                .unwrap();
            assert_eq!(expected.shard_id, shard);
        }
    }
    assert_eq!(total, 32 * 200);
}

#[tokio::test]
async fn values_round_trip_exactly() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    let a = sharded.for_route(route("tenant-a"));
    a.execute_sql("CREATE TABLE v (id INTEGER PRIMARY KEY, x)", Params::none())
        .await
        .unwrap();
    let values = vec![
        Value::Null,
        Value::Integer(i64::MIN),
        Value::Integer(i64::MAX),
        Value::Integer((1 << 53) + 1),
        Value::Real(-0.0),
        Value::Real(f64::MIN_POSITIVE / 8.0),
        Value::Real(f64::from_bits(1)),
        Value::Real(0.1),
        Value::Real(f64::MAX),
        Value::Text("nul\0inside, emoji 🙂, 日本".into()),
        Value::Blob(vec![0, 1, 2, 255, 0]),
        Value::Blob(Vec::new()),
    ];
    for (i, value) in values.iter().enumerate() {
        a.execute_sql(
            "INSERT INTO v (id, x) VALUES (?1, ?2)",
            Params::from(vec![Value::Integer(i64::try_from(i).unwrap()), value.clone()]),
        )
        .await
        .unwrap();
    }
    let r = a
        .execute_sql("SELECT x FROM v ORDER BY id", Params::none())
        .await
        .unwrap();
    for (row, expected) in r.rows.iter().zip(&values) {
        match (&row[0], expected) {
            (Value::Real(got), Value::Real(want)) => assert_eq!(got.to_bits(), want.to_bits(), "{want}"),
            (got, want) => assert_eq!(got, want),
        }
    }
    // And through JSON, as every transport carries them.
    let json = serde_json::to_string(&r).unwrap();
    let back: shardlite::client::SqlResult = serde_json::from_str(&json).unwrap();
    for (row, expected) in back.rows.iter().zip(&values) {
        match (&row[0], expected) {
            (Value::Real(got), Value::Real(want)) => assert_eq!(got.to_bits(), want.to_bits()),
            (got, want) => assert_eq!(got, want),
        }
    }
}

#[tokio::test]
async fn collections_saved_queries_and_procedures_live_per_shard_and_stay_out_of_table_lists() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    let a = sharded.for_route(route("tenant-a"));
    let b = sharded.for_route(route("tenant-b"));
    a.put_document("orders", "doc-1", serde_json::json!({"status": "paid"}))
        .await
        .unwrap();
    assert_eq!(
        a.get_document("orders", "doc-1").await.unwrap().unwrap()["status"],
        "paid"
    );
    assert!(b.get_document("orders", "doc-1").await.unwrap().is_none());
    assert_eq!(a.list_collections().await.unwrap(), vec!["orders".to_owned()]);
    assert_eq!(a.count_documents("orders").await.unwrap(), 1);
    let page = a.browse_documents("orders", 1, 10).await.unwrap();
    assert_eq!(page.documents.len(), 1);

    a.put_saved_query("recent", "SELECT 1").await.unwrap();
    assert_eq!(a.get_saved_query("recent").await.unwrap().unwrap().sql_text, "SELECT 1");
    assert!(b.get_saved_query("recent").await.unwrap().is_none());

    a.execute_sql(
        "CREATE TABLE acct (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)",
        Params::none(),
    )
    .await
    .unwrap();
    a.execute_sql("INSERT INTO acct VALUES (1, 100), (2, 0)", Params::none())
        .await
        .unwrap();
    let transfer: shardlite::client::ProcedureDefinition = serde_json::from_value(serde_json::json!({
        "name": "transfer",
        "bodySql": "UPDATE acct SET balance = balance - :amount WHERE id = :from; \
                    UPDATE acct SET balance = balance + :amount WHERE id = :to; \
                    SELECT balance FROM acct WHERE id = :to",
        "parameters": [{"name": "from"}, {"name": "to"}, {"name": "amount"}]
    }))
    .unwrap();
    a.put_procedure(transfer).await.unwrap();
    let r = a
        .execute_procedure("transfer", Params::named([("from", 1), ("to", 2), ("amount", 30)]))
        .await
        .unwrap();
    assert_eq!(r.rows, vec![vec![Value::Integer(30)]]);
    // Positional arguments follow declaration order; a failing statement undoes the whole body.
    let err = a
        .execute_procedure(
            "transfer",
            Params::from(vec![Value::Integer(1), Value::Integer(99), Value::Null]),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Constraint, "{err}");
    let balances = a
        .execute_sql("SELECT balance FROM acct ORDER BY id", Params::none())
        .await
        .unwrap();
    assert_eq!(balances.rows, vec![vec![Value::Integer(70)], vec![Value::Integer(30)]]);
    let err = a
        .execute_procedure("transfer", Params::named([("from", 1)]))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("'to'"), "{err}");
    assert!(a.execute_procedure("missing", Params::none()).await.unwrap_err().kind() == ErrorKind::NotFound);

    assert_eq!(a.list_tables().await.unwrap(), vec!["acct".to_owned()]);
    let info = a.info().await.unwrap();
    assert_eq!(
        (
            info.table_count,
            info.collection_count,
            info.saved_query_count,
            info.procedure_count
        ),
        (1, 1, 1, 1)
    );
    let total = sharded.shards().info().await.unwrap();
    assert_eq!(total.data_source, "sharded://tenants?version=1");
    assert_eq!(total.table_count, 1);
}

#[tokio::test]
async fn row_operations_by_primary_key_use_the_schema() {
    let dir = temp_dir();
    let sharded = client(dir.path()).await;
    let a = sharded.for_route(route("tenant-a"));
    a.execute_sql(
        "CREATE TABLE \"odd \"\"name\" (code TEXT PRIMARY KEY, qty INTEGER)",
        Params::none(),
    )
    .await
    .unwrap();
    let table = "odd \"name";
    assert_eq!(a.table_schema(table).await.unwrap().primary_key, "code");
    a.insert_row(
        table,
        [("code".to_owned(), "x".into()), ("qty".to_owned(), Value::Integer(1))].into(),
    )
    .await
    .unwrap();
    assert_eq!(
        a.update_row(table, "x".into(), [("qty".to_owned(), Value::Integer(5))].into())
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        a.get_row(table, "x".into()).await.unwrap().unwrap()["qty"],
        Value::Integer(5)
    );
    let page = a.browse_rows(table, 1, 10).await.unwrap();
    assert_eq!((page.total_rows, page.total_pages, page.rows.len()), (1, 1, 1));
    let err = a
        .insert_row(table, [("nope".to_owned(), Value::Integer(1))].into())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("'nope'"), "{err}");
    assert_eq!(a.delete_row(table, "x".into()).await.unwrap(), 1);
    assert_eq!(a.delete_row(table, "x".into()).await.unwrap(), 0);
    assert_eq!(a.count_rows("missing").await.unwrap_err().kind(), ErrorKind::NotFound);
    assert!(a.browse_rows(table, 0, 10).await.is_err());
}

#[tokio::test]
async fn a_connection_string_shard_opens_its_data_source_and_a_bad_one_is_reported_in_status() {
    let dir = temp_dir();
    let mut options = tenants_options(dir.path());
    let s1 = crate::support::path_str(&dir.path().join("s1-by-string.db"));
    options.shards[1].data_source = None;
    options.shards[1].connection_string = Some(shardlite::map::Secret::new(format!(
        "Data Source='{s1}';Busy Timeout=2000"
    )));
    let sharded = ShardedClient::from_map(ShardMap::new(options.clone()).unwrap())
        .await
        .unwrap();
    let b = sharded.for_route(route("tenant-b"));
    b.execute_sql("CREATE TABLE t (id INTEGER)", Params::none())
        .await
        .unwrap();
    assert!(std::path::Path::new(&s1).exists());
    let snapshot = serde_json::to_string(&sharded.map_snapshot()).unwrap();
    assert!(!snapshot.contains("s1-by-string"), "{snapshot}");
    assert!(snapshot.contains("\"hasConnectionString\":true"));

    options.shards[1].connection_string = Some(shardlite::map::Secret::new("Data Sorce=x.db;Api Key=hunter2"));
    let sharded = ShardedClient::from_map(ShardMap::new(options).unwrap()).await.unwrap();
    let status = sharded.shards().status().await;
    let error = status[1].error.as_deref().unwrap();
    assert!(!status[1].healthy && error.contains("Data Sorce"), "{error}");
    assert!(!error.contains("hunter2"));
    assert!(status[1].data_source.is_none());
}

#[tokio::test]
async fn with_attach_disallowed_sql_cannot_reach_other_files() {
    let dir = temp_dir();
    let engine = EngineConfig {
        allow_attach: false,
        ..EngineConfig::default()
    };
    let db = LocalClient::open_with(dir.path().join("shard.db"), "shard", engine)
        .await
        .unwrap();
    db.execute_sql(
        "CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1)",
        Params::none(),
    )
    .await
    .unwrap();
    let other = dir.path().join("other.db");
    let copy = dir.path().join("copy.db");
    for sql in [
        format!("ATTACH DATABASE '{}' AS other", other.display()),
        format!("VACUUM INTO '{}'", copy.display()),
    ] {
        let err = db.execute_sql(&sql, Params::none()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Forbidden, "{sql}: {err}");
        let tx = db.begin_transaction().await.unwrap();
        assert!(
            db.execute_in_transaction(&tx.transaction_id, &sql, Params::none())
                .await
                .is_err()
        );
        db.rollback_transaction(&tx.transaction_id).await.unwrap();
    }
    assert!(!other.exists() && !copy.exists());
    // Ordinary maintenance still works.
    db.execute_sql("VACUUM", Params::none()).await.unwrap();
    assert_eq!(db.count_rows("t").await.unwrap(), 1);

    // The default refuses it in-process too; an application that attaches its own files opts in.
    let default = LocalClient::open(dir.path().join("default.db")).await.unwrap();
    let attach = format!("ATTACH DATABASE '{}' AS other", other.display());
    let err = default.execute_sql(&attach, Params::none()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    let opted_in = EngineConfig {
        allow_attach: true,
        ..EngineConfig::default()
    };
    let open = LocalClient::open_with(dir.path().join("open.db"), "open", opted_in)
        .await
        .unwrap();
    open.execute_sql(&attach, Params::none()).await.unwrap();
}

/// Routed calls count in the client's heat, in process and through the blocking client: every
/// call a request, with the rows it returned or changed; a pinned key heats its pin's shard.
#[tokio::test]
async fn routed_calls_count_in_the_heat_in_process() {
    let dir = temp_dir();
    let master = crate::support::seeded_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    for outcome in sharded
        .query()
        .execute_all("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
        .await
        .unwrap()
    {
        assert!(outcome.error.is_none(), "{outcome:?}");
    }
    assert_eq!(sharded.shards().heat().total_requests, 0.0, "fan-out is not routed");
    let a = sharded.for_route(route("tenant-a"));
    for _ in 0..5 {
        a.execute_sql("INSERT INTO notes(body) VALUES ('x')", Params::default())
            .await
            .unwrap();
    }
    let ids = a
        .query_map("SELECT id FROM notes", Params::default(), |row| row.get::<i64>(0))
        .await
        .unwrap();
    assert_eq!(ids.len(), 5);
    assert_eq!(a.count_rows("notes").await.unwrap(), 5);
    sharded
        .for_route(route("tenant-c"))
        .execute_sql("SELECT 1", Params::default())
        .await
        .unwrap();

    let heat = sharded.shards().heat();
    let hot = &heat.keys[0];
    assert_eq!(
        (hot.key.as_str(), hot.shard_id.as_str(), hot.pinned),
        ("tenant-a", "s0", true)
    );
    assert!((hot.requests - 7.0).abs() < 0.01, "{hot:?}");
    assert!((hot.rows - 10.0).abs() < 0.01, "five inserted, five read: {hot:?}");
    assert!((heat.total_requests - 8.0).abs() < 0.01, "{heat:?}");
    // tenant-a hashes to bucket 3 of s1 but is pinned to s0, which serves it and is credited, in
    // the bucket table as in the shard table, as is tenant-c's bucket 0.
    assert_eq!(
        (heat.buckets[0].bucket, heat.buckets[0].shard_id.as_str()),
        (3, "s0"),
        "{heat:?}"
    );
    assert!(heat.buckets.iter().all(|b| b.shard_id == "s0"), "{heat:?}");
    assert_eq!(heat.shards[0].shard_id, "s0");
    assert!((heat.shards[0].requests - 8.0).abs() < 0.01, "{heat:?}");
    assert_eq!(heat.shards[1].requests, 0.0, "{heat:?}");

    let blocking_heat = std::thread::spawn(move || {
        let sharded = shardlite::client::blocking::ShardedClient::open(&master).unwrap();
        let b = sharded.for_route(route("tenant-b"));
        b.execute_sql("INSERT INTO notes(body) VALUES ('y')", Params::default())
            .unwrap();
        let read: Option<i64> = b
            .query_row("SELECT count(*) FROM notes", Params::default(), |row| row.get(0))
            .unwrap();
        assert_eq!(read, Some(1));
        sharded.shards().heat()
    })
    .join()
    .unwrap();
    let hot = &blocking_heat.keys[0];
    assert_eq!((hot.key.as_str(), hot.shard_id.as_str()), ("tenant-b", "s1"));
    assert!(
        (hot.requests - 2.0).abs() < 0.01 && (hot.rows - 2.0).abs() < 0.01,
        "{hot:?}"
    );
}
