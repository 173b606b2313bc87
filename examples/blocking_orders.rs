//! The blocking client: no async runtime in the application, SQL on the calling thread.
//!
//! Opens the four-shard `orders_by_month` map over files in a temporary folder, creates the
//! orders table on every shard, then four plain threads each write a month's orders through a
//! route-bound client, one of them inside a transaction whose id names its shard. A read-only
//! fan-out counts the orders on every shard, and each month reads its own back.
//!
//! ```text
//! cargo run --example blocking_orders
//! ```

use std::error::Error;

use shardlite::RouteContext;
use shardlite::client::blocking::ShardedClient;
use shardlite::client::{Params, Value};
use shardlite::map::{ShardDefinition, ShardMap};

use shardlite::demo::{ORDERS_KEYSPACE, orders_map};

fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
    let dir = tempfile::tempdir()?;
    let mut options = orders_map();
    for shard in &mut options.shards {
        let file = dir.path().join(format!("{}.db", shard.shard_id));
        *shard = ShardDefinition::local(shard.shard_id.clone(), file.display().to_string());
    }
    let sharded = ShardedClient::from_map(ShardMap::new(options)?)?;
    for outcome in sharded
        .query()
        .execute_all("CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL, total REAL NOT NULL)")?
    {
        if let Some(error) = outcome.error {
            return Err(format!("schema on {}: {error}", outcome.shard_id).into());
        }
    }

    let months = ["2026-03", "2026-04", "2026-05", "2026-06"];
    std::thread::scope(|scope| -> Result<(), Box<dyn Error + Send + Sync>> {
        let writers: Vec<_> = months
            .iter()
            .enumerate()
            .map(|(n, month)| {
                let client = sharded.for_route(RouteContext::new(ORDERS_KEYSPACE, *month)?);
                Ok(scope.spawn(move || -> Result<(), shardlite::Error> {
                    let insert = "INSERT INTO orders (order_month, total) VALUES (?1, ?2)";
                    for i in 0..=n {
                        let total = 10.0 * (i as f64 + 1.0);
                        client.execute_sql(insert, Params::from(vec![Value::from(*month), Value::Real(total)]))?;
                    }
                    if *month == "2026-06" {
                        let tx = client.begin()?;
                        println!("transaction {} on {}", tx.id(), client.resolve()?.shard_id);
                        tx.execute(insert, Params::from(vec![Value::from(*month), Value::Real(99.5)]))?;
                        tx.commit()?;
                    }
                    Ok(())
                }))
            })
            .collect::<Result<_, shardlite::Error>>()?;
        for writer in writers {
            writer.join().map_err(|_| "a writer thread panicked")??;
        }
        Ok(())
    })?;

    for result in sharded.query().read_all("SELECT count(*) FROM orders")? {
        let count = result
            .result
            .as_ref()
            .and_then(|r| r.rows.first())
            .and_then(|row| row.first());
        println!(
            "{}: {} order(s)",
            result.shard_id,
            count.and_then(Value::as_i64).unwrap_or(0)
        );
    }
    for month in months {
        let client = sharded.for_route(RouteContext::new(ORDERS_KEYSPACE, month)?);
        let orders = client.execute_sql(
            "SELECT count(*), sum(total) FROM orders WHERE order_month = ?1",
            Params::from(vec![month]),
        )?;
        let row = &orders.rows[0];
        println!(
            "{month} on {}: {} order(s), total {}",
            client.resolve()?.shard_id,
            row[0].as_i64().unwrap_or(0),
            row[1].as_f64().unwrap_or(0.0)
        );
    }
    Ok(())
}
