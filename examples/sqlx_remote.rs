//! The sqlx driver over the network: the same route-bound connection strings, through a daemon,
//! over both transports.
//!
//! Seeds a master with the four-shard `orders_by_month` map in a temporary folder, starts the
//! daemon on it (REST and gRPC on one loopback port), then connects with
//! `Endpoint=http://127.0.0.1:PORT;Transport=Grpc;Shard Keyspace=orders_by_month;Shard Key=2026-05`
//! and the same with `Transport=Http`, writes and reads rows with binds and a transaction, and
//! finally opens every shard file directly to show the rows landed only on 2026-05's shard.
//!
//! ```text
//! cargo run --example sqlx_remote --features sqlx,server,http,grpc
//! ```

use std::error::Error;

use shardlite::catalog::Catalog;
use shardlite::client::{LocalClient, Params, SqlData};
use shardlite::driver::ShardliteConnection;
use shardlite::server::{self, ServerConfig, ServerState};
use sqlx::{Connection, Row};

use shardlite::demo::orders_map;

const MONTH: &str = "2026-05";

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let file = |name: &str| dir.path().join(name).display().to_string();
    let map = orders_map();
    let master = file("master.db");
    Catalog::open(&master).await?.seed(map, false).await?;

    // The daemon, on a port the OS picks.
    let state = ServerState::open(&master, ServerConfig::default()).await?;
    for outcome in state
        .sharded()
        .ok_or("the master has no map")?
        .query().execute_all(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL, via TEXT NOT NULL, total REAL NOT NULL)",
        )
        .await?
    {
        if let Some(error) = outcome.error {
            return Err(format!("schema on {}: {error}", outcome.shard_id).into());
        }
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let endpoint = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let daemon = tokio::spawn(server::run(listener, state, async move {
        let _ = stopped.await;
    }));

    for (transport, first_id) in [("Grpc", 1_i64), ("Http", 100)] {
        let connection_string =
            format!("Endpoint={endpoint};Transport={transport};Shard Keyspace=orders_by_month;Shard Key={MONTH}");
        let shown = connection_string.replace(&endpoint, "http://127.0.0.1:PORT");
        println!("{shown}");
        let mut conn = ShardliteConnection::connect(&connection_string).await?;

        sqlx::query("INSERT INTO orders (id, order_month, via, total) VALUES (?, ?, ?, ?)")
            .bind(first_id)
            .bind(MONTH)
            .bind(transport)
            .bind(12.5_f64)
            .execute(&mut conn)
            .await?;
        let mut tx = conn.begin().await?;
        sqlx::query("INSERT INTO orders (id, order_month, via, total) VALUES (?, ?, ?, ?)")
            .bind(first_id + 1)
            .bind(MONTH)
            .bind(transport)
            .bind(30.0_f64)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        let rolled_back = conn.begin().await?;
        drop(rolled_back);

        let rows = sqlx::query("SELECT id, total FROM orders WHERE via = ? ORDER BY id")
            .bind(transport)
            .fetch_all(&mut conn)
            .await?;
        for row in &rows {
            let id: i64 = row.try_get("id")?;
            let total: f64 = row.try_get("total")?;
            println!("  order {id}: {total:.2}");
        }
        let total: f64 = sqlx::query_scalar("SELECT SUM(total) FROM orders WHERE via = ?")
            .bind(transport)
            .fetch_one(&mut conn)
            .await?;
        println!("  {} rows over {transport}, total {total:.2}", rows.len());
        conn.close().await?;
    }

    let _ = stop.send(());
    daemon.await??;

    println!("Rows per shard file:");
    for i in 0..4 {
        let shard = LocalClient::open(file(&format!("shard-{i}.db"))).await?;
        let count = shard
            .execute_sql("SELECT count(*) FROM orders", Params::none())
            .await?
            .rows
            .first()
            .and_then(|row| row.first())
            .and_then(shardlite::client::Value::as_i64)
            .unwrap_or(0);
        println!("  shard-{i}: {count}");
    }
    Ok(())
}
