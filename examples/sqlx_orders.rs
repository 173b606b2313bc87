//! The sqlx driver on the order-history sample's files, in-process or through a daemon: the
//! same code, only the connection string changes.
//!
//! Reads the orders of the connection's route month with `query_as`, adds one order in a
//! transaction on the route's shard, and counts the month again.
//!
//! ```sh
//! cargo run --example order_history -- demo    # keeps demo/shards/master.db
//! cargo run --features sqlx --example sqlx_orders -- \
//!   "Data Source=demo/shards/master.db;Shard Keyspace=orders_by_month;Shard Key=2026-05"
//! cargo run --features sqlx,grpc --example sqlx_orders -- \
//!   "Endpoint=http://127.0.0.1:61818;Transport=Grpc;Shard Keyspace=orders_by_month;Shard Key=2026-05"
//! ```

use std::error::Error;

use shardlite::driver::ShardliteConnection;
use shardlite::options::ConnectionOptions;
use sqlx::Connection;

#[derive(Debug, sqlx::FromRow)]
struct Order {
    order_number: String,
    order_date: String,
    amount: f64,
    status: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let connection_string = std::env::args()
        .nth(1)
        .ok_or("usage: sqlx_orders \"CONNECTION STRING\" (with Shard Keyspace and Shard Key)")?;
    let month = ConnectionOptions::parse(&connection_string)?
        .route()
        .map(|route| route.key().to_owned())
        .ok_or("the connection string needs a route: add ;Shard Keyspace=orders_by_month;Shard Key=2026-05")?;

    let mut conn = ShardliteConnection::connect(&connection_string).await?;
    let orders: Vec<Order> = sqlx::query_as(
        "SELECT order_number, order_date, amount, status FROM orders \
         WHERE order_month = ? ORDER BY order_date DESC",
    )
    .bind(&month)
    .fetch_all(&mut conn)
    .await?;
    println!("{month}: {} order(s)", orders.len());
    for order in &orders {
        println!(
            "  {:<16} {:<21} {:>8.2} {}",
            order.order_number, order.order_date, order.amount, order.status
        );
    }

    // One transaction on the route's shard: both statements commit together or not at all.
    let mut tx = conn.begin().await?;
    let next: i64 = sqlx::query_scalar("SELECT count(*) + 1 FROM orders WHERE order_month = ?")
        .bind(&month)
        .fetch_one(&mut *tx)
        .await?;
    let number = format!("SO-{}-SQLX-{next}", month.replace('-', ""));
    sqlx::query(
        "INSERT INTO orders (order_month, customer_id, order_number, order_date, amount, status) \
         VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(&month)
    .bind("customer-1001")
    .bind(&number)
    .bind(format!("{month}-28T12:00:00Z"))
    .bind(19.99)
    .bind("placed")
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;

    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE order_month = ?")
        .bind(&month)
        .fetch_one(&mut conn)
        .await?;
    println!("added {number}; {month} now has {count} order(s)");
    conn.close().await?;
    Ok(())
}
