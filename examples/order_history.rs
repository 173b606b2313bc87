//! E-commerce order history routed by month: the story the sharding design is told with.
//!
//! A master catalog plus four shard files; orders are routed by their month (`yyyy-MM`) in
//! keyspace `orders_by_month`. The walk-through ([`shardlite::demo::order_history`], which
//! `shardlite demo` runs too) seeds the map, creates the schema on every shard, writes orders
//! through routed clients, runs a routed transaction, and then reads history the way an
//! application would: a recent page, an older month, a 10-row page filled across months, a
//! multi-month summary, and per-shard counts.
//!
//! ```sh
//! cargo run --example order_history            # in a temporary folder, removed afterwards
//! cargo run --example order_history -- ./demo  # keeps the files in ./demo
//! cargo run -- demo ./demo                     # the same walk-through from the binary
//! ```

use std::path::PathBuf;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let kept = std::env::args().nth(1).map(PathBuf::from);
    let temp = tempfile::Builder::new().prefix("shardlite-order-history").tempdir()?;
    let root = kept.clone().unwrap_or_else(|| temp.path().to_path_buf());
    shardlite::demo::order_history(&root, &mut std::io::stdout().lock()).await?;
    if let Some(kept) = kept {
        println!();
        println!("Files kept in {}", kept.display());
    }
    Ok(())
}
