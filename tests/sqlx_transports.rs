//! The sqlx driver, through the `sqlx` facade, on each transport: in-process, over HTTP and over
//! gRPC against a real daemon. Each test runs the same steps on all three.
#![cfg(all(feature = "sqlx", feature = "server", feature = "http", feature = "grpc"))]

mod common;

use std::path::PathBuf;

use common::daemon::{Daemon, start_daemon_on};
use common::{orders_options, seed_master, temp_dir};
use shardlite::client::ShardedClient;
use shardlite::driver::ShardliteConnection;
use shardlite::server::ServerConfig;
use sqlx::{Connection, Row};

const SCHEMA: &str = "CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL, note TEXT);
CREATE TABLE keyed (code TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID;";

/// A seeded `orders_by_month` master with [`SCHEMA`] on every shard, and a daemon serving it.
struct Fixture {
    _dir: tempfile::TempDir,
    master: PathBuf,
    daemon: Daemon,
}

impl Fixture {
    async fn new(schema: &str) -> Self {
        let dir = temp_dir();
        let master = seed_master(dir.path(), orders_options()).await;
        let sharded = ShardedClient::open(&master).await.unwrap();
        for outcome in sharded.execute_sql_on_all_shards(schema).await.unwrap() {
            assert!(outcome.error.is_none(), "{outcome:?}");
        }
        let daemon = start_daemon_on(&master, ServerConfig::default()).await;
        Self {
            _dir: dir,
            master,
            daemon,
        }
    }

    /// `(name, connection string)` bound to `orders_by_month` / `key`, for each transport.
    fn connection_strings(&self, key: &str) -> [(&'static str, String); 3] {
        let route = format!("Shard Keyspace=orders_by_month;Shard Key={key}");
        [
            ("in-process", format!("Data Source={};{route}", self.master.display())),
            (
                "http",
                format!("Endpoint={};Transport=Http;{route}", self.daemon.base_url),
            ),
            (
                "grpc",
                format!("Endpoint={};Transport=Grpc;{route}", self.daemon.base_url),
            ),
        ]
    }
}

#[tokio::test]
async fn last_insert_rowid_is_the_inserted_row_on_every_transport() {
    let fx = Fixture::new(SCHEMA).await;
    for (n, (transport, text)) in fx.connection_strings("2026-05").into_iter().enumerate() {
        let base = i64::try_from(n).unwrap() * 100 + 1000;
        let mut conn = ShardliteConnection::connect(&text).await.unwrap();

        let done = sqlx::query("INSERT INTO orders (id, order_month) VALUES (?, '2026-05')")
            .bind(base)
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(done.last_insert_rowid(), base, "{transport}");
        let done = sqlx::query("INSERT INTO orders (order_month) VALUES ('2026-05')")
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(
            done.last_insert_rowid(),
            base + 1,
            "{transport}: the rowid SQLite chose"
        );

        // Inside a transaction, from the transaction's own connection.
        let mut tx = conn.begin().await.unwrap();
        let done = sqlx::query("INSERT INTO orders (id, order_month, note) VALUES (?, '2026-05', 'tx')")
            .bind(base + 50)
            .execute(&mut *tx)
            .await
            .unwrap();
        assert_eq!(done.last_insert_rowid(), base + 50, "{transport}");
        tx.commit().await.unwrap();

        // Statements that insert nothing report no rowid.
        let done = sqlx::query("UPDATE orders SET note = 'seen' WHERE id = ?")
            .bind(base)
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!((done.rows_affected(), done.last_insert_rowid()), (1, 0), "{transport}");
        let done = sqlx::query("INSERT INTO keyed VALUES ('a', ?)")
            .bind(base)
            .execute(&mut conn)
            .await
            .unwrap();
        assert_eq!(done.rows_affected(), 1, "{transport}");
        let id: i64 = sqlx::query_scalar("SELECT id FROM orders WHERE id = ?")
            .bind(base + 1)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(id, base + 1, "{transport}");
        sqlx::query("DELETE FROM keyed").execute(&mut conn).await.unwrap();
        let seen = sqlx::query("SELECT count(*) AS n FROM orders WHERE id >= ? AND id < ?")
            .bind(base)
            .bind(base + 100)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(seen.get::<i64, _>("n"), 3, "{transport}");
        conn.close().await.unwrap();
    }
}
