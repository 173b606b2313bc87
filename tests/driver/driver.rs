//! The sqlx driver through the `sqlx` facade: route-bound connections against a seeded four-shard
//! master, transactions and savepoints, pools, plain databases, errors and value round trips.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::{Fixture, temp_dir};
use shardlite::client::{LocalClient, Params, RowData, SqlData, Value};
use shardlite::connect::ConnectionTarget;
use shardlite::driver::{ShardliteConnectOptions, ShardliteConnection, ShardlitePool};
use sqlx::{Connection, Row};

const ORDERS_SCHEMA: &str = "CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    order_month TEXT NOT NULL,
    customer TEXT NOT NULL,
    total REAL NOT NULL CHECK (total >= 0),
    note TEXT
)";

/// What the tests read from the shard files of a [`Fixture`], directly (not through the driver).
trait ShardFiles {
    async fn per_shard(&self, sql: &str) -> BTreeMap<String, Vec<Vec<Value>>>;
    async fn counts(&self) -> BTreeMap<String, i64>;
    async fn ids_in(&self, shard: &str) -> Vec<i64>;
}

impl ShardFiles for Fixture {
    /// `SELECT expr FROM orders` on every shard, opened directly (not through the driver).
    async fn per_shard(&self, sql: &str) -> BTreeMap<String, Vec<Vec<Value>>> {
        let mut out = BTreeMap::new();
        for shard in 0..4 {
            let file = LocalClient::open(self.shard_file(&format!("shard-{shard}")))
                .await
                .unwrap();
            let result = file.execute_sql(sql, Params::none()).await.unwrap();
            out.insert(format!("shard-{shard}"), result.rows);
        }
        out
    }

    /// How many orders each shard file holds.
    async fn counts(&self) -> BTreeMap<String, i64> {
        self.per_shard("SELECT count(*) FROM orders")
            .await
            .into_iter()
            .map(|(shard, rows)| (shard, rows[0][0].as_i64().unwrap()))
            .collect()
    }

    /// The ids in one shard file, in order.
    async fn ids_in(&self, shard: &str) -> Vec<i64> {
        self.per_shard("SELECT id FROM orders ORDER BY id").await[shard]
            .iter()
            .map(|row| row[0].as_i64().unwrap())
            .collect()
    }
}

fn counts(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    let mut all: BTreeMap<String, i64> = (0..4).map(|i| (format!("shard-{i}"), 0)).collect();
    for (shard, n) in pairs {
        all.insert((*shard).to_owned(), *n);
    }
    all
}

#[derive(Debug, PartialEq, sqlx::FromRow)]
struct Order {
    id: i64,
    order_month: String,
    customer: String,
    total: f64,
    note: Option<String>,
}

async fn insert(conn: &mut ShardliteConnection, id: i64, customer: &str) {
    sqlx::query("INSERT INTO orders (id, order_month, customer, total) VALUES (?, '2026-05', ?, 10)")
        .bind(id)
        .bind(customer)
        .execute(&mut *conn)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_route_bound_connection_reads_and_writes_only_the_resolved_shard() {
    let fx = Fixture::orders_with(ORDERS_SCHEMA).await;
    let mut conn = ShardliteConnection::connect(&fx.connection_string("2026-05"))
        .await
        .unwrap();
    match conn.target() {
        ConnectionTarget::Shard {
            resolution,
            shard_data_source,
            ..
        } => {
            assert_eq!(resolution.shard_id, "shard-1", "2026-05 is pinned to shard-1");
            assert_eq!(
                shard_data_source.as_deref().map(Path::new),
                Some(fx.shard_file("shard-1").as_path())
            );
        }
        other => panic!("expected a shard target, got {other:?}"),
    }

    let done = sqlx::query("INSERT INTO orders (id, order_month, customer, total, note) VALUES (?, ?, ?, ?, ?)")
        .bind(1_i64)
        .bind("2026-05")
        .bind("ada")
        .bind(12.5_f64)
        .bind(Some("gift wrap"))
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(done.rows_affected(), 1);
    let done = sqlx::query(
        "INSERT INTO orders (id, order_month, customer, total) VALUES (2, '2026-05', 'bob', 3), (3, '2026-05', 'cy', 7)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(done.rows_affected(), 2);

    let rows = sqlx::query("SELECT id, customer FROM orders WHERE total > ? ORDER BY id")
        .bind(5)
        .fetch_all(&mut conn)
        .await
        .unwrap();
    let seen: Vec<(i64, String)> = rows.iter().map(|r| (r.get("id"), r.get("customer"))).collect();
    assert_eq!(seen, vec![(1, "ada".to_owned()), (3, "cy".to_owned())]);
    assert_eq!(rows[0].columns().len(), 2);

    let one = sqlx::query("SELECT customer FROM orders WHERE id = ?")
        .bind(2)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(one.get::<String, _>(0), "bob");
    let numbered: String = sqlx::query_scalar("SELECT customer FROM orders WHERE total > $2 AND id = $1")
        .bind(3_i64)
        .bind(5)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(numbered, "cy");
    let missing = sqlx::query("SELECT customer FROM orders WHERE id = ?")
        .bind(99)
        .fetch_optional(&mut conn)
        .await
        .unwrap();
    assert!(missing.is_none());
    let err = sqlx::query("SELECT customer FROM orders WHERE id = 99")
        .fetch_one(&mut conn)
        .await
        .unwrap_err();
    assert!(matches!(err, sqlx::Error::RowNotFound), "{err}");

    let orders: Vec<Order> = sqlx::query_as("SELECT id, order_month, customer, total, note FROM orders ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(orders.len(), 3);
    assert_eq!(
        orders[0],
        Order {
            id: 1,
            order_month: "2026-05".into(),
            customer: "ada".into(),
            total: 12.5,
            note: Some("gift wrap".into()),
        }
    );
    assert_eq!(orders[1].note, None);
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(count, 3);
    let total: f64 = sqlx::query_scalar("SELECT sum(total) FROM orders WHERE customer <> ?")
        .bind("ada")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert!((total - 10.0).abs() < f64::EPSILON);

    // The rows are in shard-1's file and nowhere else.
    assert_eq!(fx.counts().await, counts(&[("shard-1", 3)]));

    // Another route lands in its own shard, and each connection sees only its shard.
    let mut june = ShardliteConnection::connect(&fx.connection_string("2026-06"))
        .await
        .unwrap();
    sqlx::query("INSERT INTO orders (id, order_month, customer, total) VALUES (10, '2026-06', 'dee', 1)")
        .execute(&mut june)
        .await
        .unwrap();
    let june_count: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&mut june)
        .await
        .unwrap();
    assert_eq!(june_count, 1);
    assert_eq!(fx.counts().await, counts(&[("shard-0", 1), ("shard-1", 3)]));
    june.close().await.unwrap();
    conn.close().await.unwrap();
}

#[tokio::test]
async fn the_url_form_connects_like_the_ado_form() {
    let fx = Fixture::orders_with(ORDERS_SCHEMA).await;
    let url = format!(
        "shardlite://{}?shard_keyspace=orders_by_month&shard_key=2026-05",
        fx.master.display()
    );
    let mut conn = ShardliteConnection::connect(&url).await.unwrap();
    insert(&mut conn, 1, "ada").await;
    assert_eq!(fx.counts().await, counts(&[("shard-1", 1)]));

    let options: ShardliteConnectOptions = fx.connection_string("2026-05").parse().unwrap();
    let mut again = ShardliteConnection::connect_with(&options).await.unwrap();
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&mut again)
        .await
        .unwrap();
    assert_eq!(count, 1);
}

#[tokio::test]
async fn commit_persists_while_rollback_and_drop_discard() {
    let fx = Fixture::orders_with(ORDERS_SCHEMA).await;
    let mut conn = ShardliteConnection::connect(&fx.connection_string("2026-05"))
        .await
        .unwrap();

    let mut tx = conn.begin().await.unwrap();
    let id = tx.transaction_id().unwrap().to_owned();
    assert!(id.starts_with("csdbshard:1:shard-1:"), "{id}");
    insert(&mut tx, 1, "committed").await;
    // Inside the transaction its own rows are visible.
    let inside: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(inside, 1);
    tx.commit().await.unwrap();
    assert!(conn.transaction_id().is_none());
    assert_eq!(fx.ids_in("shard-1").await, vec![1]);

    let mut tx = conn.begin().await.unwrap();
    insert(&mut tx, 2, "rolled back").await;
    tx.rollback().await.unwrap();
    assert_eq!(fx.ids_in("shard-1").await, vec![1]);

    let mut tx = conn.begin().await.unwrap();
    insert(&mut tx, 3, "dropped").await;
    drop(tx);
    // The next statement on the connection runs after the pending rollback, outside any transaction.
    insert(&mut conn, 4, "after drop").await;
    assert_eq!(fx.ids_in("shard-1").await, vec![1, 4]);

    // begin_with takes BEGIN forms (the engine always begins IMMEDIATE) and refuses anything else.
    let tx = conn.begin_with("BEGIN IMMEDIATE").await.unwrap();
    tx.commit().await.unwrap();
    let err = conn.begin_with("SAVEPOINT mine").await.unwrap_err();
    assert!(err.to_string().contains("SAVEPOINT mine"), "{err}");
    assert!(!conn.is_in_transaction());
    insert(&mut conn, 5, "still usable").await;
    assert_eq!(fx.ids_in("shard-1").await, vec![1, 4, 5]);
    assert_eq!(fx.counts().await, counts(&[("shard-1", 3)]));
}

#[tokio::test]
async fn a_dropped_savepoint_neither_loses_nor_keeps_the_wrong_rows() {
    let fx = Fixture::orders_with(ORDERS_SCHEMA).await;
    let mut conn = ShardliteConnection::connect(&fx.connection_string("2026-05"))
        .await
        .unwrap();

    // The trap: a savepoint dropped right before the outer commit.
    let mut outer = conn.begin().await.unwrap();
    insert(&mut outer, 1, "outer").await;
    let mut inner = outer.begin().await.unwrap();
    insert(&mut inner, 2, "inner, dropped").await;
    drop(inner);
    outer.commit().await.unwrap();
    assert_eq!(fx.ids_in("shard-1").await, vec![1]);

    // Savepoints committed, rolled back and dropped, two deep, with work in between.
    let mut outer = conn.begin().await.unwrap();
    insert(&mut outer, 10, "outer").await;
    {
        let mut kept = outer.begin().await.unwrap();
        insert(&mut kept, 11, "released savepoint").await;
        {
            let mut deeper = kept.begin().await.unwrap();
            insert(&mut deeper, 12, "dropped two deep").await;
        }
        insert(&mut kept, 13, "after the deeper drop").await;
        kept.commit().await.unwrap();
    }
    {
        let mut undone = outer.begin().await.unwrap();
        insert(&mut undone, 14, "rolled back savepoint").await;
        undone.rollback().await.unwrap();
    }
    {
        let mut dropped = outer.begin().await.unwrap();
        insert(&mut dropped, 15, "dropped savepoint").await;
    }
    insert(&mut outer, 16, "outer again").await;
    let seen: Vec<i64> = sqlx::query_scalar("SELECT id FROM orders WHERE id >= 10 ORDER BY id")
        .fetch_all(&mut *outer)
        .await
        .unwrap();
    assert_eq!(seen, vec![10, 11, 13, 16]);
    outer.commit().await.unwrap();
    assert_eq!(fx.ids_in("shard-1").await, vec![1, 10, 11, 13, 16]);

    // A whole transaction dropped with a savepoint open discards both.
    {
        let mut outer = conn.begin().await.unwrap();
        insert(&mut outer, 20, "outer, dropped").await;
        let mut inner = outer.begin().await.unwrap();
        insert(&mut inner, 21, "inner, dropped").await;
    }
    assert!(!conn.is_in_transaction());
    conn.ping().await.unwrap();
    assert_eq!(fx.ids_in("shard-1").await, vec![1, 10, 11, 13, 16]);
    assert_eq!(fx.counts().await, counts(&[("shard-1", 5)]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_serves_concurrent_writers_without_losing_rows() {
    let fx = Fixture::orders_with(ORDERS_SCHEMA).await;
    let pool = ShardlitePool::connect(&fx.connection_string("2026-05")).await.unwrap();
    let mut tasks = Vec::new();
    for task in 0..8_i64 {
        let pool = pool.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..25_i64 {
                let id = task * 100 + n;
                let insert = sqlx::query("INSERT INTO orders (id, order_month, customer, total) VALUES (?, ?, ?, ?)")
                    .bind(id)
                    .bind("2026-05")
                    .bind(format!("task-{task}"))
                    .bind(1.0);
                if n % 5 == 0 {
                    // Some rows go through a transaction of their own.
                    let mut tx = pool.begin().await.unwrap();
                    insert.execute(&mut *tx).await.unwrap();
                    tx.commit().await.unwrap();
                } else {
                    insert.execute(&pool).await.unwrap();
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let total: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(total, 200);
    let per_task: Vec<(String, i64)> =
        sqlx::query_as("SELECT customer, count(*) FROM orders GROUP BY customer ORDER BY customer")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(per_task.len(), 8);
    assert!(per_task.iter().all(|(_, n)| *n == 25), "{per_task:?}");

    // A transaction dropped on a pooled connection is rolled back before the connection is reused.
    {
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("DELETE FROM orders").execute(&mut *tx).await.unwrap();
    }
    let total: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(total, 200);
    pool.close().await;
    assert_eq!(fx.counts().await, counts(&[("shard-1", 200)]));
}

#[tokio::test]
async fn a_plain_database_is_an_ordinary_connection() {
    let dir = temp_dir();
    let file = dir.path().join("plain.db");
    let text = format!("Data Source={}", file.display());
    let mut conn = ShardliteConnection::connect(&text).await.unwrap();
    assert!(
        matches!(conn.target(), ConnectionTarget::Local { .. }),
        "{:?}",
        conn.target()
    );
    sqlx::query("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        .execute(&mut conn)
        .await
        .unwrap();
    let mut tx = conn.begin().await.unwrap();
    assert!(!tx.transaction_id().unwrap().starts_with("csdbshard:"));
    sqlx::query("INSERT INTO notes (body) VALUES (?), (?)")
        .bind("one")
        .bind("two")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let bodies: Vec<String> = sqlx::query_scalar("SELECT body FROM notes ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(bodies, ["one", "two"]);
    conn.close().await.unwrap();

    let direct = LocalClient::open(&file).await.unwrap();
    let count = direct.count_rows("notes").await.unwrap();
    assert_eq!(count, 2);
}

#[tokio::test]
async fn constraint_violations_map_to_sqlx_error_kinds() {
    let fx = Fixture::orders_with(ORDERS_SCHEMA).await;
    let mut conn = ShardliteConnection::connect(&fx.connection_string("2026-05"))
        .await
        .unwrap();
    insert(&mut conn, 1, "ada").await;

    let err = sqlx::query("INSERT INTO orders (id, order_month, customer, total) VALUES (1, '2026-05', 'x', 1)")
        .execute(&mut conn)
        .await
        .unwrap_err();
    let db = err.as_database_error().expect("a database error");
    assert!(db.is_unique_violation(), "{err}");
    assert_eq!(db.code().as_deref(), Some("1555"));

    sqlx::query("CREATE UNIQUE INDEX orders_customer ON orders (customer)")
        .execute(&mut conn)
        .await
        .unwrap();
    let err = sqlx::query("INSERT INTO orders (id, order_month, customer, total) VALUES (2, '2026-05', 'ada', 1)")
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert!(err.as_database_error().unwrap().is_unique_violation(), "{err}");
    assert_eq!(err.as_database_error().unwrap().code().as_deref(), Some("2067"));

    let err = sqlx::query("INSERT INTO orders (id, order_month, customer, total) VALUES (3, '2026-05', NULL, 1)")
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert_eq!(
        err.as_database_error().unwrap().kind(),
        sqlx::error::ErrorKind::NotNullViolation,
        "{err}"
    );
    let err = sqlx::query("INSERT INTO orders (id, order_month, customer, total) VALUES (4, '2026-05', 'neg', -1)")
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert!(err.as_database_error().unwrap().is_check_violation(), "{err}");

    sqlx::query("CREATE TABLE lines (order_id INTEGER NOT NULL REFERENCES orders (id), sku TEXT)")
        .execute(&mut conn)
        .await
        .unwrap();
    let err = sqlx::query("INSERT INTO lines (order_id, sku) VALUES (?, 'x')")
        .bind(404)
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert!(err.as_database_error().unwrap().is_foreign_key_violation(), "{err}");

    // A constraint error inside a transaction leaves the transaction usable, as in SQLite.
    let mut tx = conn.begin().await.unwrap();
    let err = sqlx::query("INSERT INTO orders (id, order_month, customer, total) VALUES (1, '2026-05', 'dup', 1)")
        .execute(&mut *tx)
        .await
        .unwrap_err();
    assert!(err.as_database_error().unwrap().is_unique_violation());
    insert(&mut tx, 5, "after the error").await;
    tx.commit().await.unwrap();
    assert_eq!(fx.ids_in("shard-1").await, vec![1, 5]);

    // Other failures keep shardlite's error underneath.
    let err = sqlx::query("SELEC 1").execute(&mut conn).await.unwrap_err();
    let db = err.as_database_error().unwrap();
    assert_eq!(db.kind(), sqlx::error::ErrorKind::Other);
    let shardlite_err = db.downcast_ref::<shardlite::driver::ShardliteDatabaseError>();
    assert_eq!(shardlite_err.shardlite_error().kind(), shardlite::ErrorKind::Sql);
}

#[tokio::test]
async fn bad_connection_strings_are_refused_naming_the_key() {
    let fx = Fixture::orders_with(ORDERS_SCHEMA).await;
    let master = fx.master.display().to_string();
    let refused = |text: String| async move {
        ShardliteConnection::connect(&text)
            .await
            .expect_err("the connection string should be refused")
            .to_string()
    };

    let err = refused(format!("Data Source={master};Shard Kye=2026-05")).await;
    assert!(err.contains("Shard Kye"), "{err}");
    let err = refused(format!("Data Source={master};Shard Key=2026-05")).await;
    assert!(err.contains("Shard Keyspace"), "{err}");
    let err = refused(format!("Data Source={master};Busy Timeout=soon")).await;
    assert!(err.contains("Busy Timeout"), "{err}");
    let err = refused("shardlite+ftp://host/x".to_owned()).await;
    assert!(!err.is_empty());

    // A master with a map needs a route; a route needs a map; the map must serve the keyspace.
    let err = refused(format!("Data Source={master}")).await;
    assert!(err.contains("Shard Keyspace") && err.contains("Shard Key"), "{err}");
    let plain = fx.dir.path().join("plain.db");
    LocalClient::open(&plain).await.unwrap();
    let err = refused(format!(
        "Data Source={};Shard Keyspace=orders_by_month;Shard Key=2026-05",
        plain.display()
    ))
    .await;
    assert!(err.contains("no shard map"), "{err}");
    let err = refused(format!("Data Source={master};Shard Keyspace=tenants;Shard Key=a")).await;
    assert!(err.contains("tenants") && err.contains("orders_by_month"), "{err}");

    // A route-bound string with a missing file fails without creating it.
    let missing = fx.dir.path().join("typo/master.db");
    let err = refused(format!(
        "Data Source={};Shard Keyspace=orders_by_month;Shard Key=2026-05",
        missing.display()
    ))
    .await;
    assert!(err.contains("does not exist"), "{err}");
    assert!(!missing.exists() && !fx.dir.path().join("typo").exists());

    // A daemon that is not there is named in the error.
    let err = refused("Endpoint=http://127.0.0.1:9;Transport=Http;Shard Keyspace=k;Shard Key=v".to_owned()).await;
    assert!(err.contains("http://127.0.0.1:9"), "{err}");
}

#[tokio::test]
async fn optional_values_bind_and_read_null() {
    let fx = Fixture::orders_with(ORDERS_SCHEMA).await;
    let mut conn = ShardliteConnection::connect(&fx.connection_string("2026-05"))
        .await
        .unwrap();
    sqlx::query("INSERT INTO orders (id, order_month, customer, total, note) VALUES (?, '2026-05', ?, ?, ?)")
        .bind(Some(1_i64))
        .bind("ada")
        .bind(1.5_f64)
        .bind(None::<String>)
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("INSERT INTO orders (id, order_month, customer, total, note) VALUES (?, '2026-05', ?, ?, ?)")
        .bind(2_i64)
        .bind("bob")
        .bind(2.5_f64)
        .bind(Some("hello".to_owned()))
        .execute(&mut conn)
        .await
        .unwrap();
    let notes: Vec<Option<String>> = sqlx::query_scalar("SELECT note FROM orders ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(notes, vec![None, Some("hello".to_owned())]);
    let null_count: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE note IS ?")
        .bind(None::<&str>)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(null_count, 1);
    // NULL into a non-Option type is an error, not a default.
    let err = sqlx::query_scalar::<_, String>("SELECT note FROM orders WHERE id = 1")
        .fetch_one(&mut conn)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unexpected null"), "{err}");
    let missing: Option<String> = sqlx::query_scalar("SELECT note FROM orders WHERE id = 1")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(missing, None);
}

/// id, big, small, flag, real, text, data.
type Sample<'a> = (i64, i64, i8, bool, f64, &'a str, &'a [u8]);

#[tokio::test]
async fn extreme_integers_floats_text_and_blobs_round_trip() {
    let fx = Fixture::orders_with(ORDERS_SCHEMA).await;
    let mut conn = ShardliteConnection::connect(&fx.connection_string("2026-05"))
        .await
        .unwrap();
    sqlx::query(
        "CREATE TABLE samples (id INTEGER PRIMARY KEY, big INTEGER, small INTEGER, flag INTEGER, \
         real REAL, text TEXT, data BLOB)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    let all_bytes: Vec<u8> = (0..=255).collect();
    let cases: [Sample<'_>; 3] = [
        (
            1,
            i64::MIN,
            i8::MIN,
            true,
            f64::MIN_POSITIVE,
            "naïve 🙂 text",
            &all_bytes,
        ),
        (2, i64::MAX, i8::MAX, false, -2.5, "", &[]),
        (3, (1 << 53) + 1, 0, true, 1e300, "nul\0inside", &[0, 0, 0]),
    ];
    for (id, big, small, flag, real, text, data) in cases {
        sqlx::query("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?)")
            .bind(id)
            .bind(big)
            .bind(small)
            .bind(flag)
            .bind(real)
            .bind(text)
            .bind(data)
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let rows = sqlx::query("SELECT * FROM samples ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    for (row, (id, big, small, flag, real, text, data)) in rows.iter().zip(cases) {
        assert_eq!(row.get::<i64, _>("id"), id);
        assert_eq!(row.get::<i64, _>("big"), big);
        assert_eq!(row.get::<i8, _>("small"), small);
        assert_eq!(row.get::<i32, _>("small"), i32::from(small));
        assert_eq!(row.get::<bool, _>("flag"), flag);
        assert_eq!(row.get::<f64, _>("real").to_bits(), real.to_bits());
        assert_eq!(row.get::<&str, _>("text"), text);
        assert_eq!(row.get::<String, _>("text"), text);
        assert_eq!(row.get::<&[u8], _>("data"), data);
        assert_eq!(row.get::<Vec<u8>, _>("data"), data.to_vec());
    }
    // Narrow integer types refuse values they cannot hold instead of truncating.
    let err = rows[0].try_get::<i16, _>("big").unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
    // Type checks: text is not an integer.
    assert!(rows[0].try_get::<i64, _>("text").is_err());
    assert!(matches!(
        rows[0].try_get::<i64, _>("nope"),
        Err(sqlx::Error::ColumnNotFound(_))
    ));

    let echoed: (i64, i64, Vec<u8>) = sqlx::query_as("SELECT ?, ?, ?")
        .bind(i64::MIN)
        .bind(i64::MAX)
        .bind(all_bytes.clone())
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(echoed, (i64::MIN, i64::MAX, all_bytes));
}
