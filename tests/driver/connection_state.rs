//! Connection-local state on in-process sqlx connections, through the `sqlx` facade: each
//! connection keeps a SQLite connection of its own, so TEMP tables, `last_insert_rowid()` and
//! `changes()` carry from one statement to the next, while the hostile-SQL rules still hold and a
//! pool of writers on one shard never sees "busy".

use std::path::PathBuf;
use std::time::Duration;

use crate::support::{orders_options, seed_master, temp_dir};
use shardlite::client::ShardedClient;
use shardlite::driver::{ShardliteConnection, ShardlitePoolOptions};
use sqlx::Connection;

/// A seeded `orders_by_month` master with an `orders` table on every shard.
async fn master(dir: &std::path::Path) -> PathBuf {
    let master = seed_master(dir, orders_options()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    for outcome in sharded
        .query()
        .execute_all("CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL, note TEXT)")
        .await
        .unwrap()
    {
        assert!(outcome.error.is_none(), "{outcome:?}");
    }
    master
}

fn route_bound(master: &std::path::Path, key: &str) -> String {
    format!(
        "Data Source={};Shard Keyspace=orders_by_month;Shard Key={key}",
        master.display()
    )
}

#[tokio::test]
async fn temp_tables_and_connection_functions_last_for_the_connection() {
    let dir = temp_dir();
    let master = master(dir.path()).await;
    let mut conn = ShardliteConnection::connect(&route_bound(&master, "2026-05"))
        .await
        .unwrap();

    sqlx::query("CREATE TEMP TABLE scratch (n INTEGER)")
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("INSERT INTO scratch VALUES (1), (2), (3)")
        .execute(&mut conn)
        .await
        .unwrap();
    // A read after the write, on the same connection, sees the TEMP table and its rows.
    let total: i64 = sqlx::query_scalar("SELECT sum(n) FROM scratch")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(total, 6);

    sqlx::query("INSERT INTO orders (id, order_month) VALUES (77, '2026-05')")
        .execute(&mut conn)
        .await
        .unwrap();
    let last: i64 = sqlx::query_scalar("SELECT last_insert_rowid()")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(last, 77);
    sqlx::query("UPDATE scratch SET n = n + 1 WHERE n >= 2")
        .execute(&mut conn)
        .await
        .unwrap();
    let changed: i64 = sqlx::query_scalar("SELECT changes()")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(changed, 2);

    // Inside a transaction on the connection too, and what it rolls back is gone.
    let mut tx = conn.begin().await.unwrap();
    assert!(tx.transaction_id().unwrap().starts_with("csdbshard:1:shard-1:"));
    sqlx::query("INSERT INTO scratch VALUES (100)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let inside: i64 = sqlx::query_scalar("SELECT count(*) FROM scratch")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(inside, 4);
    tx.rollback().await.unwrap();
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM scratch")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(after, 3);

    // Another connection to the same shard has none of it.
    let mut other = ShardliteConnection::connect(&route_bound(&master, "2026-05"))
        .await
        .unwrap();
    let err = sqlx::query("SELECT count(*) FROM scratch")
        .fetch_one(&mut other)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no such table: scratch"), "{err}");
    let last: i64 = sqlx::query_scalar("SELECT last_insert_rowid()")
        .fetch_one(&mut other)
        .await
        .unwrap();
    assert_eq!(last, 0);
    // The shard's real table is shared, of course.
    let orders: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&mut other)
        .await
        .unwrap();
    assert_eq!(orders, 1);
    other.close().await.unwrap();
    conn.close().await.unwrap();
}

#[tokio::test]
async fn memory_databases_are_one_per_connection() {
    let mut first = ShardliteConnection::connect("Data Source=:memory:").await.unwrap();
    let mut second = ShardliteConnection::connect("Data Source=:memory:").await.unwrap();
    sqlx::query("CREATE TABLE notes (body TEXT)")
        .execute(&mut first)
        .await
        .unwrap();
    sqlx::query("INSERT INTO notes VALUES ('kept')")
        .execute(&mut first)
        .await
        .unwrap();
    let body: String = sqlx::query_scalar("SELECT body FROM notes")
        .fetch_one(&mut first)
        .await
        .unwrap();
    assert_eq!(body, "kept");
    let err = sqlx::query("SELECT body FROM notes")
        .fetch_one(&mut second)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no such table: notes"), "{err}");
    let mut tx = first.begin().await.unwrap();
    sqlx::query("INSERT INTO notes VALUES ('in a transaction')")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM notes")
        .fetch_one(&mut first)
        .await
        .unwrap();
    assert_eq!(count, 2);
}

#[tokio::test]
async fn hostile_sql_is_still_refused_on_a_connection_of_its_own() {
    let dir = temp_dir();
    let master = master(dir.path()).await;
    let mut conn = ShardliteConnection::connect(&route_bound(&master, "2026-05"))
        .await
        .unwrap();
    let outside = dir.path().join("outside.db");
    for (sql, expected) in [
        (format!("ATTACH DATABASE '{}' AS other", outside.display()), "ATTACH"),
        ("PRAGMA journal_mode = DELETE".to_owned(), "pragma"),
        ("PRAGMA foreign_keys = OFF".to_owned(), "pragma"),
        ("BEGIN".to_owned(), "transaction"),
        ("COMMIT".to_owned(), "transaction"),
        ("SELECT load_extension('x')".to_owned(), "extension"),
    ] {
        let err = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .execute(&mut conn)
            .await
            .unwrap_err();
        assert!(err.to_string().contains(expected), "{sql}: {err}");
    }
    assert!(!outside.exists());
    // A savepoint outside a transaction would leave one open: rolled back and refused.
    let err = sqlx::query("SAVEPOINT mine; INSERT INTO orders (id, order_month) VALUES (1, '2026-05')")
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("left a transaction open"), "{err}");
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(count, 0, "nothing of the refused script stays");
    // Inside a transaction, savepoints are the connection's own business.
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("SAVEPOINT mine").execute(&mut *tx).await.unwrap();
    sqlx::query("INSERT INTO orders (id, order_month) VALUES (2, '2026-05')")
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("ROLLBACK TO mine").execute(&mut *tx).await.unwrap();
    tx.commit().await.unwrap();
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(count, 0, "the insert after the savepoint was rolled back to it");
    // A statement that runs too long is stopped by the time limit.
    let mut limited = ShardliteConnection::connect(&format!("{};Command Timeout=1", route_bound(&master, "2026-05")))
        .await
        .unwrap();
    let err = sqlx::query("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n")
        .fetch_one(&mut limited)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("time"), "{err}");
    let one: i64 = sqlx::query_scalar("SELECT 1").fetch_one(&mut limited).await.unwrap();
    assert_eq!(one, 1, "the connection stays usable");
}

#[tokio::test]
async fn an_idle_transaction_expires_and_the_connection_stays_usable() {
    let dir = temp_dir();
    let master = master(dir.path()).await;
    let text = format!("{};Transaction Timeout=1", route_bound(&master, "2026-05"));
    let mut conn = ShardliteConnection::connect(&text).await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("INSERT INTO orders (id, order_month) VALUES (1, '2026-05')")
        .execute(&mut *tx)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let err = sqlx::query("INSERT INTO orders (id, order_month) VALUES (2, '2026-05')")
        .execute(&mut *tx)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("expired"), "{err}");
    drop(tx);
    // The write lock was released: another connection writes at once.
    let mut other = ShardliteConnection::connect(&route_bound(&master, "2026-05"))
        .await
        .unwrap();
    sqlx::query("INSERT INTO orders (id, order_month) VALUES (3, '2026-05')")
        .execute(&mut other)
        .await
        .unwrap();
    sqlx::query("INSERT INTO orders (id, order_month) VALUES (4, '2026-05')")
        .execute(&mut conn)
        .await
        .unwrap();
    let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM orders ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(ids, vec![3, 4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_pooled_connections_write_one_shard_without_busy() {
    let dir = temp_dir();
    let master = master(dir.path()).await;
    // The default busy timeout (5 s); sixteen connections, each with a SQLite connection of its own.
    let pool = ShardlitePoolOptions::new()
        .max_connections(16)
        .min_connections(16)
        .connect(&route_bound(&master, "2026-05"))
        .await
        .unwrap();
    let mut writers = Vec::new();
    for writer in 0..16_i64 {
        let pool = pool.clone();
        writers.push(tokio::spawn(async move {
            let mut conn = pool.acquire().await?;
            for n in 0..40_i64 {
                let id = writer * 1000 + n;
                if n % 4 == 0 {
                    // Read, then write, in one transaction: the case that fails on a stale
                    // snapshot when transactions begin deferred.
                    let mut tx = conn.begin().await?;
                    let _: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
                        .fetch_one(&mut *tx)
                        .await?;
                    sqlx::query("INSERT INTO orders (id, order_month, note) VALUES (?, '2026-05', 'tx')")
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                    tx.commit().await?;
                } else {
                    sqlx::query("INSERT INTO orders (id, order_month) VALUES (?, '2026-05')")
                        .bind(id)
                        .execute(&mut *conn)
                        .await?;
                }
            }
            Ok::<_, sqlx::Error>(())
        }));
    }
    for writer in writers {
        writer.await.unwrap().unwrap();
    }
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(count, 16 * 40);
    assert_eq!(pool.size(), 16);
    pool.close().await;
}
