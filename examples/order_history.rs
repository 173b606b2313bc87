//! E-commerce order history routed by month: the story the sharding design is told with.
//!
//! A master catalog plus four shard files; orders are routed by their month (`yyyy-MM`) in
//! keyspace `orders_by_month`. The walk-through seeds the map, creates the schema on every
//! shard, writes orders through routed clients, runs a routed transaction, and then reads
//! history the way an application would: a recent page, an older month, a 10-row page filled
//! across months, a multi-month summary, and per-shard counts.
//!
//! ```sh
//! cargo run --example order_history            # in a temporary folder, removed afterwards
//! cargo run --example order_history -- ./demo  # keeps the files in ./demo
//! ```

mod common;

use std::path::{Path, PathBuf};

use shardlite::catalog::Catalog;
use shardlite::client::{DataClient, Params, Row, ShardedClient, SqlResult, Value};
use shardlite::paging::plan_page;
use shardlite::{RouteContext, RouteSource};

use common::{ORDERS_KEYSPACE as KEYSPACE, orders_map};

const CUSTOMER: &str = "customer-1001";
const CURRENT_MONTH: &str = "2026-06";
const PREVIEW_PAGE_SIZE: u64 = 3;
const HISTORY_PAGE_SIZE: u64 = 10;
const MONTHS_NEWEST_FIRST: [&str; 4] = ["2026-06", "2026-05", "2026-04", "2025-12"];

/// (id, month, customer, order number, order date, amount, status)
type Order = (
    i64,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    f64,
    &'static str,
);

const ORDERS: [Order; 14] = [
    (
        1001,
        "2026-06",
        CUSTOMER,
        "SO-202606-1001",
        "2026-06-01T10:15:00Z",
        129.95,
        "placed",
    ),
    (
        1002,
        "2026-06",
        CUSTOMER,
        "SO-202606-1002",
        "2026-06-01T09:05:00Z",
        42.50,
        "placed",
    ),
    (
        1003,
        "2026-06",
        CUSTOMER,
        "SO-202606-1003",
        "2026-06-01T08:30:00Z",
        310.00,
        "packed",
    ),
    (
        1004,
        "2026-06",
        CUSTOMER,
        "SO-202606-1004",
        "2026-06-01T07:55:00Z",
        18.75,
        "delivered",
    ),
    (
        1013,
        "2026-06",
        CUSTOMER,
        "SO-202606-1013",
        "2026-06-01T07:15:00Z",
        61.00,
        "delivered",
    ),
    (
        1005,
        "2026-05",
        CUSTOMER,
        "SO-202605-1005",
        "2026-05-29T10:00:00Z",
        88.40,
        "delivered",
    ),
    (
        1006,
        "2026-05",
        CUSTOMER,
        "SO-202605-1006",
        "2026-05-22T10:00:00Z",
        54.10,
        "delivered",
    ),
    (
        1007,
        "2026-05",
        CUSTOMER,
        "SO-202605-1007",
        "2026-05-07T10:00:00Z",
        219.99,
        "returned",
    ),
    (
        1014,
        "2026-05",
        CUSTOMER,
        "SO-202605-1014",
        "2026-05-01T10:00:00Z",
        34.99,
        "delivered",
    ),
    (
        1008,
        "2026-04",
        CUSTOMER,
        "SO-202604-1008",
        "2026-04-17T10:00:00Z",
        73.35,
        "delivered",
    ),
    (
        1009,
        "2026-04",
        CUSTOMER,
        "SO-202604-1009",
        "2026-04-03T10:00:00Z",
        19.99,
        "delivered",
    ),
    (
        1010,
        "2025-12",
        CUSTOMER,
        "SO-202512-1010",
        "2025-12-19T10:00:00Z",
        540.00,
        "delivered",
    ),
    (
        1011,
        "2026-06",
        "customer-2002",
        "SO-202606-2002",
        "2026-06-02T09:00:00Z",
        64.25,
        "placed",
    ),
    (
        1012,
        "2026-05",
        "customer-2002",
        "SO-202605-2002",
        "2026-05-15T09:00:00Z",
        121.00,
        "delivered",
    ),
];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let kept = std::env::args().nth(1).map(PathBuf::from);
    let temp = tempfile::Builder::new().prefix("shardlite-order-history").tempdir()?;
    let root = kept.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let data = root.join("shards");
    if data.exists() {
        std::fs::remove_dir_all(&data)?;
    }
    let master = data.join("master.db");

    let sharded = seed_and_open(&master).await?;
    create_schema(&sharded).await?;
    insert_orders(&sharded).await?;
    let transaction_id = transaction_demo(&sharded).await?;

    section("API-level sharding sample: e-commerce order history");
    println!("Keyspace:        {KEYSPACE}");
    println!("Route key:       order month, yyyy-MM");
    println!("Customer:        {CUSTOMER}");
    println!("Virtual buckets: {}", sharded.map().bucket_count());
    println!("Master catalog:  shards/master.db (shards in shards/)");
    println!("Transaction id:  {transaction_id}");

    section("Month route map");
    for month in MONTHS_NEWEST_FIRST {
        let resolved = sharded.resolve_route(&route(month)?)?;
        let source = match resolved.source {
            RouteSource::Pin => "pin",
            RouteSource::BucketRange => "bucket range",
        };
        println!(
            "{month:<7} bucket={:>2} shard={:<7} token={} ({source})",
            resolved.bucket, resolved.shard_id, resolved.token_hex
        );
    }

    section("Shard admin snapshot");
    let snapshot = sharded.map_snapshot();
    println!("Map version:       {}", snapshot.map_version);
    println!("Shard definitions: {}", snapshot.shards.len());
    println!("Bucket ranges:     {}", snapshot.bucket_ranges.len());
    println!("Exact pins:        {}", snapshot.exact_key_pins.len());
    for status in sharded.status().await {
        let file = status
            .data_source
            .as_deref()
            .and_then(|p| Path::new(p).file_name())
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        println!(
            "{:<7} enabled={:<5} healthy={:<5} source=shards/{file}",
            status.shard_id, status.enabled, status.healthy
        );
    }

    section("Recent orders page (route 2026-06)");
    print_orders(&month_page(&sharded, CURRENT_MONTH, 0, PREVIEW_PAGE_SIZE).await?);

    section("Older history page selected by the user (route 2026-05)");
    print_orders(&month_page(&sharded, "2026-05", 0, PREVIEW_PAGE_SIZE).await?);

    section("Filled cross-month page (page 1, 10 rows, newest month first)");
    let mut counts = Vec::new();
    for month in MONTHS_NEWEST_FIRST {
        let result = sharded
            .for_route(route(month)?)
            .execute_sql(
                "SELECT COUNT(*) FROM orders WHERE order_month = ?1 AND customer_id = ?2",
                Params::from(vec![month, CUSTOMER]),
            )
            .await?;
        counts.push((month, scalar_u64(&result)));
    }
    let plan = plan_page(counts, 1, HISTORY_PAGE_SIZE)?;
    let mut page = Vec::new();
    for slice in &plan.slices {
        let rows = month_page(&sharded, &slice.route_key, slice.offset, slice.limit).await?;
        println!("Route {} supplied {} row(s).", slice.route_key, rows.rows.len());
        for row in rows.rows {
            page.push((slice.route_key.clone(), row));
        }
    }
    for (month, row) in &page {
        print!("{month:<7} ");
        print_order_row(row);
    }
    println!(
        "({} of {} orders, page 1 of {})",
        page.len(),
        plan.total_rows,
        plan.total_pages
    );

    section("Multi-month history summary");
    for month in MONTHS_NEWEST_FIRST {
        let result = sharded
            .for_route(route(month)?)
            .execute_sql(
                "SELECT COUNT(*) AS order_count, COALESCE(SUM(amount), 0.0) AS total_amount \
                 FROM orders WHERE order_month = ?1 AND customer_id = ?2",
                Params::from(vec![month, CUSTOMER]),
            )
            .await?;
        let count = result.value(0, "order_count").and_then(Value::as_i64).unwrap_or(0);
        let total = result.value(0, "total_amount").and_then(Value::as_f64).unwrap_or(0.0);
        println!("{month:<7} orders={count:>2} total={total:>8.2}");
    }

    section("Shard row counts");
    for shard in sharded.map().shards() {
        let rows = sharded.for_shard_id(&shard.id)?.count_rows("orders").await?;
        println!("{:<7} {rows:>2} rows", shard.id);
    }

    section("Missing route behaviour");
    match sharded.execute_sql("SELECT COUNT(*) FROM orders", Params::none()).await {
        Ok(_) => println!("unexpected: a query without a route ran"),
        Err(err) => println!("{err}"),
    }

    if let Some(kept) = kept {
        println!();
        println!("Files kept in {}", kept.display());
    }
    Ok(())
}

fn section(title: &str) {
    println!();
    println!("{title}");
    println!("{}", "-".repeat(title.chars().count()));
}

fn route(month: &str) -> shardlite::Result<RouteContext> {
    RouteContext::new(KEYSPACE, month)
}

/// Seeds the map into `master`; its shard files are created in the same folder.
async fn seed_and_open(master: &Path) -> shardlite::Result<ShardedClient> {
    Catalog::open(master).await?.seed(orders_map(), false).await?;
    ShardedClient::open(master).await
}

async fn create_schema(sharded: &ShardedClient) -> Result<(), Box<dyn std::error::Error>> {
    for sql in [
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL, customer_id TEXT NOT NULL, \
         order_number TEXT NOT NULL, order_date TEXT NOT NULL, amount REAL NOT NULL, status TEXT NOT NULL)",
        "CREATE INDEX idx_orders_customer_date ON orders (customer_id, order_date)",
    ] {
        for result in sharded.execute_sql_on_all_shards(sql).await? {
            if let Some(error) = result.error {
                return Err(format!("shard '{}' failed: {error}", result.shard_id).into());
            }
        }
    }
    Ok(())
}

async fn insert_orders(sharded: &ShardedClient) -> shardlite::Result<()> {
    for (id, month, customer, number, date, amount, status) in ORDERS {
        let row: Row = [
            ("id", Value::Integer(id)),
            ("order_month", month.into()),
            ("customer_id", customer.into()),
            ("order_number", number.into()),
            ("order_date", date.into()),
            ("amount", amount.into()),
            ("status", status.into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        sharded.for_route(route(month)?).insert_row("orders", row).await?;
    }
    Ok(())
}

/// Begins on the current month's route, then writes and commits through the id alone.
async fn transaction_demo(sharded: &ShardedClient) -> shardlite::Result<String> {
    let begun = sharded.for_route(route(CURRENT_MONTH)?).begin_transaction().await?;
    sharded
        .execute_in_transaction(
            &begun.transaction_id,
            "INSERT INTO orders VALUES (2000, '2026-06', 'customer-1001', 'SO-202606-TX', \
             '2026-06-01T12:05:00Z', 27.25, 'placed')",
            Params::none(),
        )
        .await?;
    sharded.commit_transaction(&begun.transaction_id).await?;
    // The inner id is random; the shard prefix is what routes it.
    let prefix_len = begun.transaction_id.rfind(':').map_or(0, |i| i + 1);
    Ok(format!("{}<inner id> (committed)", &begun.transaction_id[..prefix_len]))
}

async fn month_page(sharded: &ShardedClient, month: &str, offset: u64, limit: u64) -> shardlite::Result<SqlResult> {
    let to_value = |n: u64| Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    sharded
        .for_route(route(month)?)
        .execute_sql(
            "SELECT order_number, order_date, amount, status FROM orders \
             WHERE order_month = ?1 AND customer_id = ?2 \
             ORDER BY order_date DESC LIMIT ?3 OFFSET ?4",
            Params::from(vec![month.into(), CUSTOMER.into(), to_value(limit), to_value(offset)]),
        )
        .await
}

fn print_orders(result: &SqlResult) {
    for row in &result.rows {
        print_order_row(row);
    }
}

fn print_order_row(row: &[Value]) {
    let text = |i: usize| row.get(i).and_then(Value::as_str).unwrap_or("");
    let amount = row.get(2).and_then(Value::as_f64).unwrap_or(0.0);
    println!(
        "{:<15} {:<20} {:>8} {}",
        text(0),
        text(1),
        format!("${amount:.2}"),
        text(3)
    );
}

fn scalar_u64(result: &SqlResult) -> u64 {
    result
        .rows
        .first()
        .and_then(|r| r.first())
        .and_then(Value::as_i64)
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0)
}
