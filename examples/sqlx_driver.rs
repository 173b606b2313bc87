//! The sqlx driver: connection strings bound to one route each, used through the `sqlx` facade.
//!
//! Seeds a master catalog with a two-shard `orders_by_month` map in a temporary folder, creates an
//! `orders` table on every shard, then for three months connects with
//! `Data Source=…;Shard Keyspace=orders_by_month;Shard Key=<month>` and runs queries with binds,
//! `fetch_all`, `query_as`, `query_scalar`, a committed and a rolled-back transaction, and a pool.
//! Finally it opens each shard file directly and prints which months' rows it holds.
//!
//! ```text
//! cargo run --example sqlx_driver --features sqlx
//! ```

use std::error::Error;

use shardlite::catalog::Catalog;
use shardlite::client::{LocalClient, Params, ShardedClient, SqlData};
use shardlite::connect::ConnectionTarget;
use shardlite::driver::{ShardliteConnection, ShardlitePool};
use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};
use sqlx::Connection;

const SCHEMA: &str = "CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    order_month TEXT NOT NULL,
    customer TEXT NOT NULL,
    total REAL NOT NULL
)";

#[derive(Debug, sqlx::FromRow)]
struct Order {
    id: i64,
    customer: String,
    total: f64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let file = |name: &str| dir.path().join(name).display().to_string();

    // A two-shard map: buckets split in half, and June pinned to shard-a (its bucket, 15, is shard-b's).
    let map = ShardingOptions {
        keyspace: "orders_by_month".into(),
        map_version: 1,
        virtual_bucket_count: 16,
        shards: vec![
            ShardDefinition::local("shard-a", file("shard-a.db")),
            ShardDefinition::local("shard-b", file("shard-b.db")),
        ],
        bucket_ranges: vec![BucketRange::new(0, 8, "shard-a"), BucketRange::new(8, 16, "shard-b")],
        exact_key_pins: [("2026-06".to_owned(), "shard-a".to_owned())].into(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    };
    let master = file("master.db");
    Catalog::open(&master).await?.seed(map, false).await?;
    for outcome in ShardedClient::open(&master).await?.query().execute_all(SCHEMA).await? {
        if let Some(error) = outcome.error {
            return Err(format!("schema on {}: {error}", outcome.shard_id).into());
        }
    }

    let mut next_id = 1_i64;
    for month in ["2026-03", "2026-04", "2026-06"] {
        let connection_string = format!("Data Source={master};Shard Keyspace=orders_by_month;Shard Key={month}");
        let mut conn = ShardliteConnection::connect(&connection_string).await?;
        if let ConnectionTarget::Shard { resolution, .. } = conn.target() {
            println!(
                "{month}: bound to {} (bucket {}, chosen by {:?})",
                resolution.shard_id, resolution.bucket, resolution.source
            );
        }

        for (customer, total) in [("ada", 12.5), ("bob", 30.0)] {
            sqlx::query("INSERT INTO orders (id, order_month, customer, total) VALUES (?, ?, ?, ?)")
                .bind(next_id)
                .bind(month)
                .bind(customer)
                .bind(total)
                .execute(&mut conn)
                .await?;
            next_id += 1;
        }

        let rows = sqlx::query("SELECT customer FROM orders WHERE order_month = ? ORDER BY id")
            .bind(month)
            .fetch_all(&mut conn)
            .await?;
        let customers: Vec<String> = rows
            .iter()
            .map(|row| sqlx::Row::try_get(row, "customer"))
            .collect::<Result<_, _>>()?;
        println!("  customers: {}", customers.join(", "));

        let big: Vec<Order> =
            sqlx::query_as("SELECT id, customer, total FROM orders WHERE order_month = ? AND total > ?")
                .bind(month)
                .bind(20.0)
                .fetch_all(&mut conn)
                .await?;
        for order in &big {
            println!("  big order: #{} {} {:.2}", order.id, order.customer, order.total);
        }

        // A transaction: one order committed, one rolled back.
        let mut tx = conn.begin().await?;
        let id = tx.transaction_id().unwrap_or_default().to_owned();
        let prefix: Vec<&str> = id.splitn(4, ':').take(3).collect();
        println!("  transaction id: {}:…", prefix.join(":"));
        sqlx::query("INSERT INTO orders (id, order_month, customer, total) VALUES (?, ?, 'cy', 5)")
            .bind(next_id)
            .bind(month)
            .execute(&mut *tx)
            .await?;
        next_id += 1;
        tx.commit().await?;
        let mut tx = conn.begin().await?;
        sqlx::query("DELETE FROM orders WHERE order_month = ?")
            .bind(month)
            .execute(&mut *tx)
            .await?;
        tx.rollback().await?;

        let (count, sum): (i64, f64) = sqlx::query_as("SELECT count(*), sum(total) FROM orders WHERE order_month = ?")
            .bind(month)
            .fetch_one(&mut conn)
            .await?;
        println!("  {count} orders, total {sum:.2}");
        conn.close().await?;
    }

    // A pool over one route: four tasks writing at once.
    let pool = ShardlitePool::connect(&format!(
        "Data Source={master};Shard Keyspace=orders_by_month;Shard Key=2026-06"
    ))
    .await?;
    let mut tasks = Vec::new();
    for task in 0..4_i64 {
        let pool = pool.clone();
        tasks.push(tokio::spawn(async move {
            sqlx::query("INSERT INTO orders (id, order_month, customer, total) VALUES (?, '2026-06', ?, 1)")
                .bind(1000 + task)
                .bind(format!("pool-{task}"))
                .execute(&pool)
                .await
        }));
    }
    for task in tasks {
        task.await??;
    }
    let june: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE order_month = '2026-06'")
        .fetch_one(&pool)
        .await?;
    println!("2026-06 after the pool: {june} orders");
    pool.close().await;

    // Where the rows landed, read from each shard file directly.
    for shard in ["shard-a", "shard-b"] {
        let db = LocalClient::open(file(&format!("{shard}.db"))).await?;
        let result = db
            .execute_sql(
                "SELECT order_month, count(*) FROM orders GROUP BY order_month ORDER BY order_month",
                Params::none(),
            )
            .await?;
        let months: Vec<String> = result
            .rows
            .iter()
            .map(|row| {
                let month = row.first().and_then(|v| v.as_str()).unwrap_or("?");
                let count = row.get(1).and_then(|v| v.as_i64()).unwrap_or(0);
                format!("{month} x{count}")
            })
            .collect();
        let listing = if months.is_empty() {
            "nothing".to_owned()
        } else {
            months.join(", ")
        };
        println!("{shard}.db holds: {listing}");
    }
    Ok(())
}
