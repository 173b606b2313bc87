//! One sqlx pool for many routes, and sqlx's `Any` driver.
//!
//! Seeds a master with the four-shard `orders_by_month` map in a temporary folder, then opens a
//! `ShardedPool` on it without route keys (`Data Source=…;Max Pool Size=2`) and writes one order for
//! each month of 2026, each through a connection acquired for that month's route: every row lands
//! on its month's shard, and no shard ever has more than two connections open. Finally it installs
//! shardlite's `Any` driver and reads one month back through `AnyPool` with a
//! `shardlite:///…?shard_keyspace=…&shard_key=…` URL.
//!
//! ```text
//! cargo run --example sqlx_many_routes --features sqlx
//! ```

use std::collections::BTreeMap;
use std::error::Error;

use shardlite::RouteContext;
use shardlite::catalog::Catalog;
use shardlite::client::ShardedClient;
use shardlite::driver::ShardedPool;
use sqlx::Connection;

use shardlite::demo::orders_map;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
    let dir = tempfile::tempdir()?;
    let master = dir.path().join("master.db").display().to_string();
    Catalog::open(&master).await?.seed(orders_map(), false).await?;
    let sharded = ShardedClient::open(&master).await?;
    for outcome in sharded
        .query()
        .execute_all("CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL, total REAL NOT NULL)")
        .await?
    {
        if let Some(error) = outcome.error {
            return Err(format!("schema on {}: {error}", outcome.shard_id).into());
        }
    }

    // One pool, every month.
    let pool = ShardedPool::connect(&format!("Data Source={master};Max Pool Size=2")).await?;
    let mut per_shard: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for month in 1..=12 {
        let month = format!("2026-{month:02}");
        let route = RouteContext::new("orders_by_month", &month)?;
        let mut conn = pool.acquire(route.clone()).await?;
        let mut tx = conn.begin().await?;
        let done = sqlx::query("INSERT INTO orders (order_month, total) VALUES (?, ?)")
            .bind(&month)
            .bind(10.0)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        let shard = sharded.resolve_route(&route)?.shard_id;
        println!("{month}: order {} on {shard}", done.last_insert_rowid());
        per_shard.entry(shard).or_default().push(month);
    }
    for (shard, months) in &per_shard {
        println!("{shard}: {}", months.join(", "));
    }
    let most_open = pool.open_connections().values().copied().max().unwrap_or(0);
    println!("most connections open on one shard: {most_open}");

    // The same data through sqlx's Any driver.
    sqlx::any::install_drivers(&[shardlite::driver::any::DRIVER])?;
    let url = format!("shardlite://{master}?shard_keyspace=orders_by_month&shard_key=2026-06");
    let any = sqlx::AnyPool::connect(&url).await?;
    let june: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE order_month = ?")
        .bind("2026-06")
        .fetch_one(&any)
        .await?;
    println!("AnyPool on 2026-06's shard: {june} order(s) for 2026-06");
    any.close().await;
    pool.close().await;
    Ok(())
}
