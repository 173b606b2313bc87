//! The order-history sample: the story shardlite's design is told with, as a map, its orders
//! and a walk-through that `shardlite demo` and `examples/order_history.rs` both run.
//!
//! A master catalog plus four shard files; orders are routed by their month (`yyyy-MM`) in
//! keyspace `orders_by_month`. The walk-through seeds the map, creates the schema on every
//! shard, writes orders through routed clients, runs a routed transaction, and then reads
//! history the way an application would: a recent page, an older month, a 10-row page filled
//! across months, a multi-month summary, and per-shard counts.

use std::io::Write;
use std::path::Path;

use crate::catalog::Catalog;
use crate::client::{Params, Row, RowData, ShardedClient, SqlData, SqlResult, TransactionData, Value};
use crate::error::{Error, Result};
use crate::map::{BucketRange, ShardDefinition, ShardingOptions};
use crate::paging::plan_page;
use crate::{RouteContext, RouteSource};

/// The keyspace of the order-history map.
pub const ORDERS_KEYSPACE: &str = "orders_by_month";

const CUSTOMER: &str = "customer-1001";
const CURRENT_MONTH: &str = "2026-06";
const PREVIEW_PAGE_SIZE: u64 = 3;
const HISTORY_PAGE_SIZE: u64 = 10;
const MONTHS_NEWEST_FIRST: [&str; 4] = ["2026-06", "2026-05", "2026-04", "2025-12"];

/// One order: (id, month, customer, order number, order date, amount, status).
type Order = (
    i64,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    f64,
    &'static str,
);

#[rustfmt::skip]
const ORDERS: [Order; 14] = [
    (1001, "2026-06", CUSTOMER, "SO-202606-1001", "2026-06-01T10:15:00Z", 129.95, "placed"),
    (1002, "2026-06", CUSTOMER, "SO-202606-1002", "2026-06-01T09:05:00Z", 42.50, "placed"),
    (1003, "2026-06", CUSTOMER, "SO-202606-1003", "2026-06-01T08:30:00Z", 310.00, "packed"),
    (1004, "2026-06", CUSTOMER, "SO-202606-1004", "2026-06-01T07:55:00Z", 18.75, "delivered"),
    (1013, "2026-06", CUSTOMER, "SO-202606-1013", "2026-06-01T07:15:00Z", 61.00, "delivered"),
    (1005, "2026-05", CUSTOMER, "SO-202605-1005", "2026-05-29T10:00:00Z", 88.40, "delivered"),
    (1006, "2026-05", CUSTOMER, "SO-202605-1006", "2026-05-22T10:00:00Z", 54.10, "delivered"),
    (1007, "2026-05", CUSTOMER, "SO-202605-1007", "2026-05-07T10:00:00Z", 219.99, "returned"),
    (1014, "2026-05", CUSTOMER, "SO-202605-1014", "2026-05-01T10:00:00Z", 34.99, "delivered"),
    (1008, "2026-04", CUSTOMER, "SO-202604-1008", "2026-04-17T10:00:00Z", 73.35, "delivered"),
    (1009, "2026-04", CUSTOMER, "SO-202604-1009", "2026-04-03T10:00:00Z", 19.99, "delivered"),
    (1010, "2025-12", CUSTOMER, "SO-202512-1010", "2025-12-19T10:00:00Z", 540.00, "delivered"),
    (1011, "2026-06", "customer-2002", "SO-202606-2002", "2026-06-02T09:00:00Z", 64.25, "placed"),
    (1012, "2026-05", "customer-2002", "SO-202605-2002", "2026-05-15T09:00:00Z", 121.00, "delivered"),
];

/// The four-shard `orders_by_month` map: 16 buckets, `shard-N` owning buckets `[4N, 4N+4)`, and
/// four months pinned to a shard each. Its shard files, `shard-0.db` .. `shard-3.db`, are
/// relative paths, so they live beside whichever master catalog the map is seeded into.
pub fn orders_map() -> ShardingOptions {
    ShardingOptions {
        keyspace: ORDERS_KEYSPACE.to_owned(),
        map_version: 1,
        virtual_bucket_count: 16,
        shards: (0..4)
            .map(|i| ShardDefinition::local(format!("shard-{i}"), format!("shard-{i}.db")))
            .collect(),
        bucket_ranges: (0..4)
            .map(|i| BucketRange::new(i * 4, i * 4 + 4, format!("shard-{i}")))
            .collect(),
        exact_key_pins: [
            ("2026-06", "shard-0"),
            ("2026-05", "shard-1"),
            ("2026-04", "shard-2"),
            ("2025-12", "shard-3"),
        ]
        .into_iter()
        .map(|(key, shard)| (key.to_owned(), shard.to_owned()))
        .collect(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    }
}

/// Runs the order-history walk-through in `root` (its files go to `root/shards/`, replacing
/// any there), writing what it shows to `out`.
///
/// ```no_run
/// # async fn run() -> shardlite::Result<()> {
/// shardlite::demo::order_history(std::path::Path::new("demo"), &mut std::io::stdout()).await?;
/// # Ok(()) }
/// ```
pub async fn order_history(root: &Path, out: &mut dyn Write) -> Result<()> {
    let data = root.join("shards");
    if data.exists() {
        std::fs::remove_dir_all(&data).map_err(|source| io("the sample's shards folder", source))?;
    }
    let master = data.join("master.db");
    Catalog::open(&master).await?.seed(orders_map(), false).await?;
    let sharded = ShardedClient::open(&master).await?;
    create_schema(&sharded).await?;
    insert_orders(&sharded).await?;
    let transaction_id = transaction_demo(&sharded).await?;
    let master = root.join("shards").join("master.db");
    tour(&sharded, &master, &transaction_id, out)
        .await
        .map_err(|err| match err {
            Tour::Shardlite(err) => err,
            Tour::Output(source) => io("the sample's output", source),
        })
}

/// What can stop the tour: shardlite, or the output it writes to.
enum Tour {
    Shardlite(Error),
    Output(std::io::Error),
}

impl From<Error> for Tour {
    fn from(err: Error) -> Self {
        Self::Shardlite(err)
    }
}

impl From<std::io::Error> for Tour {
    fn from(err: std::io::Error) -> Self {
        Self::Output(err)
    }
}

async fn tour(sharded: &ShardedClient, master: &Path, transaction_id: &str, out: &mut dyn Write) -> Result<(), Tour> {
    section(out, "API-level sharding sample: e-commerce order history")?;
    writeln!(out, "Keyspace:        {ORDERS_KEYSPACE}")?;
    writeln!(out, "Route key:       order month, yyyy-MM")?;
    writeln!(out, "Customer:        {CUSTOMER}")?;
    writeln!(out, "Virtual buckets: {}", sharded.map().bucket_count())?;
    writeln!(out, "Master catalog:  {} (shards beside it)", master.display())?;
    writeln!(out, "Transaction id:  {transaction_id}")?;

    section(out, "Month route map")?;
    for month in MONTHS_NEWEST_FIRST {
        let resolved = sharded.resolve_route(&route(month)?)?;
        let source = match resolved.source {
            RouteSource::Pin => "pin",
            RouteSource::BucketRange => "bucket range",
        };
        writeln!(
            out,
            "{month:<7} bucket={:>2} shard={:<7} token={} ({source})",
            resolved.bucket, resolved.shard_id, resolved.token_hex
        )?;
    }

    section(out, "Shard admin snapshot")?;
    let snapshot = sharded.map_snapshot();
    writeln!(out, "Map version:       {}", snapshot.map_version)?;
    writeln!(out, "Shard definitions: {}", snapshot.shards.len())?;
    writeln!(out, "Bucket ranges:     {}", snapshot.bucket_ranges.len())?;
    writeln!(out, "Exact pins:        {}", snapshot.exact_key_pins.len())?;
    for status in sharded.shards().status().await {
        let file = status
            .data_source
            .as_deref()
            .and_then(|p| Path::new(p).file_name())
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        writeln!(
            out,
            "{:<7} enabled={:<5} healthy={:<5} source=shards/{file}",
            status.shard_id, status.enabled, status.healthy
        )?;
    }

    section(out, "Recent orders page (route 2026-06)")?;
    print_orders(out, &month_page(sharded, CURRENT_MONTH, 0, PREVIEW_PAGE_SIZE).await?)?;
    section(out, "Older history page selected by the user (route 2026-05)")?;
    print_orders(out, &month_page(sharded, "2026-05", 0, PREVIEW_PAGE_SIZE).await?)?;

    section(out, "Filled cross-month page (page 1, 10 rows, newest month first)")?;
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
        let rows = month_page(sharded, &slice.route_key, slice.offset, slice.limit).await?;
        writeln!(out, "Route {} supplied {} row(s).", slice.route_key, rows.rows.len())?;
        page.extend(rows.rows.into_iter().map(|row| (slice.route_key.clone(), row)));
    }
    for (month, row) in &page {
        write!(out, "{month:<7} ")?;
        print_order_row(out, row)?;
    }
    writeln!(
        out,
        "({} of {} orders, page 1 of {})",
        page.len(),
        plan.total_rows,
        plan.total_pages
    )?;

    section(out, "Multi-month history summary")?;
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
        writeln!(out, "{month:<7} orders={count:>2} total={total:>8.2}")?;
    }

    section(out, "Shard row counts")?;
    for shard in sharded.map().shards() {
        let rows = sharded.for_shard_id(&shard.id)?.count_rows("orders").await?;
        writeln!(out, "{:<7} {rows:>2} rows", shard.id)?;
    }

    // The sharded client has no `execute_sql`: SQL runs on a route's client. A connection
    // string without a route shows what a caller reaching for one without a route is told.
    section(out, "Missing route behaviour")?;
    let master = sharded
        .catalog()
        .master()
        .map(|catalog| catalog.path().display().to_string());
    let unrouted = crate::options::ConnectionOptions::new().with_data_source(master.unwrap_or_default());
    match crate::connect::connect(&unrouted).await?.client() {
        Ok(_) => writeln!(out, "unexpected: a connection without a route has a data client")?,
        Err(err) => writeln!(out, "{err}")?,
    }
    Ok(())
}

fn io(what: &str, source: std::io::Error) -> Error {
    Error::Io {
        what: what.to_owned(),
        source,
    }
}

fn section(out: &mut dyn Write, title: &str) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(out, "{title}")?;
    writeln!(out, "{}", "-".repeat(title.chars().count()))
}

fn route(month: &str) -> Result<RouteContext> {
    RouteContext::new(ORDERS_KEYSPACE, month)
}

async fn create_schema(sharded: &ShardedClient) -> Result<()> {
    for sql in [
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL, customer_id TEXT NOT NULL, \
         order_number TEXT NOT NULL, order_date TEXT NOT NULL, amount REAL NOT NULL, status TEXT NOT NULL)",
        "CREATE INDEX idx_orders_customer_date ON orders (customer_id, order_date)",
    ] {
        for result in sharded.query().execute_all(sql).await? {
            if let Some(error) = result.error {
                return Err(Error::invalid_argument(
                    "sample schema",
                    format!("shard '{}' failed: {error}", result.shard_id),
                ));
            }
        }
    }
    Ok(())
}

async fn insert_orders(sharded: &ShardedClient) -> Result<()> {
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
async fn transaction_demo(sharded: &ShardedClient) -> Result<String> {
    let begun = sharded.for_route(route(CURRENT_MONTH)?).begin_transaction().await?;
    sharded
        .transactions()
        .execute(
            &begun.transaction_id,
            "INSERT INTO orders VALUES (2000, '2026-06', 'customer-1001', 'SO-202606-TX', \
             '2026-06-01T12:05:00Z', 27.25, 'placed')",
            Params::none(),
        )
        .await?;
    sharded.transactions().commit(&begun.transaction_id).await?;
    // The inner id is random; the shard prefix is what routes it.
    let prefix_len = begun.transaction_id.rfind(':').map_or(0, |i| i + 1);
    Ok(format!("{}<inner id> (committed)", &begun.transaction_id[..prefix_len]))
}

async fn month_page(sharded: &ShardedClient, month: &str, offset: u64, limit: u64) -> Result<SqlResult> {
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

fn print_orders(out: &mut dyn Write, result: &SqlResult) -> std::io::Result<()> {
    result.rows.iter().try_for_each(|row| print_order_row(out, row))
}

fn print_order_row(out: &mut dyn Write, row: &[Value]) -> std::io::Result<()> {
    let text = |i: usize| row.get(i).and_then(Value::as_str).unwrap_or("");
    let amount = row.get(2).and_then(Value::as_f64).unwrap_or(0.0);
    writeln!(
        out,
        "{:<15} {:<20} {:>8} {}",
        text(0),
        text(1),
        format!("${amount:.2}"),
        text(3)
    )
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
