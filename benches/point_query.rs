//! A routed in-process point query against what users would otherwise run, in the same process:
//! `SELECT id, month, amount FROM orders WHERE id = ?1` on the same WAL file, the row decoded.
//!
//! - raw rusqlite: a cached prepared statement on the caller's thread (one connection per
//!   thread);
//! - sqlx-sqlite: `sqlx::query(...).bind(id).fetch_one(&mut conn)` on sqlx's own SQLite driver;
//! - shardlite blocking: `blocking::RoutedClient::query_row` through the master's map, the row
//!   decoded into the same tuple as the raw baseline's (the target's subject), and
//!   `execute_sql`, which builds an owned `SqlResult` with column names (shown for information
//!   at 1 caller; at 8 callers SPEC section 12 holds it to the same target);
//! - shardlite async: `RoutedClient::query_row` through the master's map, the row decoded into
//!   the same tuple, and `execute_sql`: SPEC section 12 holds both to its target;
//! - shardlite sqlx driver: the same sqlx call on a `ShardliteConnection` bound to the route.
//!
//! At 1 caller it compares latency; at 8 callers (8 threads, or 8 tasks on a runtime with one
//! worker per core) throughput. Ratios and targets are those of SPEC section 12.
//!
//! `cargo bench --all-features --bench point_query`; `SHARDLITE_BENCH_ROUNDS`,
//! `SHARDLITE_BENCH_OPS` and `SHARDLITE_BENCH_PROCESSES` change the rounds (default 7),
//! operations per round and measuring processes (default 5).

mod common;

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use common::{Subject, Target, header, measure, ratio_line, settings, time, time_threads};
use shardlite::RouteContext;
use shardlite::catalog::Catalog;
use shardlite::client::{Params, ShardedClient, Value, blocking};
use shardlite::driver::ShardliteConnection;
use shardlite::map::{ShardDefinition, ShardingOptions};
use sqlx::{Connection, Row};

const ROWS: i64 = 10_000;
const SQL: &str = "SELECT id, month, amount FROM orders WHERE id = ?1";
const SQLX_SQL: &str = "SELECT id, month, amount FROM orders WHERE id = ?";
const CALLERS: u64 = 8;

/// `n` point queries through sqlx on `conn` (any sqlx connection), the row decoded; caller
/// `t` starts at its own key. Evaluates to the time they took.
macro_rules! sqlx_point_queries {
    ($conn:expr, $t:expr, $n:expr) => {{
        let conn = $conn;
        let first = u64::try_from($t).expect("caller index") * 7919;
        let started = Instant::now();
        for i in 0..$n {
            let row = sqlx::query(SQLX_SQL)
                .bind(key(first + i))
                .fetch_one(&mut *conn)
                .await
                .expect("row");
            black_box((row.get::<i64, _>(0), row.get::<String, _>(1), row.get::<f64, _>(2)));
        }
        started.elapsed()
    }};
}

fn key(i: u64) -> i64 {
    i64::try_from(i % ROWS as u64).unwrap_or(0) + 1
}

fn main() {
    let (rounds, ops) = settings(20_000);
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let master = dir.path().join("master.db");
    let file = dir.path().join("shard-0.db");
    let route = RouteContext::new("orders_by_month", "2026-06").expect("route");

    let sharded = runtime.block_on(async {
        let catalog = Catalog::open(&master).await.expect("catalog");
        catalog
            .seed(
                ShardingOptions {
                    keyspace: "orders_by_month".into(),
                    map_version: 1,
                    virtual_bucket_count: 16,
                    shards: vec![ShardDefinition::local("shard-0", "shard-0.db")],
                    bucket_ranges: Vec::new(),
                    exact_key_pins: Default::default(),
                    directories: Vec::new(),
                    directory_entries: Vec::new(),
                },
                false,
            )
            .await
            .expect("seed");
        let sharded = ShardedClient::open(&master).await.expect("sharded client");
        sharded
            .query()
            .execute_all(
                "CREATE TABLE orders (id INTEGER PRIMARY KEY, month TEXT NOT NULL, amount REAL NOT NULL); \
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) \
                 INSERT INTO orders SELECT i, '2026-06', i * 1.5 FROM n;",
            )
            .await
            .expect("schema");
        sharded
    });
    let routed = sharded.for_route(route.clone());
    let blocking_client = blocking::ShardedClient::open(&master).expect("blocking client");
    let blocking_routed = blocking_client.for_route(route.clone());
    let sqlite_url = format!("sqlite://{}", file.display());
    let shardlite_cs = format!(
        "Data Source={};Shard Keyspace=orders_by_month;Shard Key=2026-06",
        master.display()
    );

    // One connection per caller thread; the lock is never contended.
    let raw_connections: Vec<std::sync::Mutex<rusqlite::Connection>> = (0..CALLERS)
        .map(|_| std::sync::Mutex::new(rusqlite::Connection::open(&file).expect("raw connection")))
        .collect();
    let raw_one = |conn: &rusqlite::Connection, id: i64| {
        let mut stmt = conn.prepare_cached(SQL).expect("prepare");
        let row: (i64, String, f64) = stmt
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("row");
        black_box(row);
    };
    let blocking_one = |client: &blocking::RoutedClient, id: i64| {
        black_box(
            client
                .execute_sql(SQL, Params::Positional(vec![Value::Integer(id)]))
                .expect("query"),
        );
    };
    // The same work as the raw baseline: the row decoded into a tuple in place.
    let blocking_row = |client: &blocking::RoutedClient, id: i64| {
        let row: (i64, String, f64) = client
            .query_row(SQL, Params::Positional(vec![Value::Integer(id)]), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .expect("query")
            .expect("row");
        black_box(row);
    };

    // The async client doing the raw baseline's work: the row decoded into a tuple in place.
    async fn async_row(client: &shardlite::client::RoutedClient, id: i64) {
        let row: (i64, String, f64) = client
            .query_row(SQL, Params::Positional(vec![Value::Integer(id)]), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .await
            .expect("query")
            .expect("row");
        black_box(row);
    }

    let (mut sqlite_conns, mut shardlite_conns) = runtime.block_on(async {
        let mut sqlite = Vec::new();
        let mut ours = Vec::new();
        for _ in 0..CALLERS {
            sqlite.push(
                sqlx_sqlite::SqliteConnection::connect(&sqlite_url)
                    .await
                    .expect("sqlx-sqlite"),
            );
            ours.push(
                ShardliteConnection::connect(&shardlite_cs)
                    .await
                    .expect("shardlite sqlx"),
            );
        }
        (sqlite, ours)
    });

    // One caller: latency.
    let results = {
        let mut subjects = vec![
            Subject::new("raw rusqlite", |ops| {
                let conn = raw_connections[0].lock().expect("connection");
                time(ops, |i| raw_one(&conn, key(i)))
            }),
            Subject::new("blocking query_row", |ops| {
                time(ops, |i| blocking_row(&blocking_routed, key(i)))
            }),
            Subject::new("blocking execute_sql", |ops| {
                time(ops, |i| blocking_one(&blocking_routed, key(i)))
            }),
            Subject::new("async query_row", |ops| {
                runtime.block_on(async {
                    let started = Instant::now();
                    for i in 0..ops {
                        async_row(&routed, key(i)).await;
                    }
                    started.elapsed()
                })
            }),
            Subject::new("async execute_sql", |ops| {
                runtime.block_on(async {
                    let started = Instant::now();
                    for i in 0..ops {
                        black_box(
                            shardlite::client::SqlData::execute_sql(
                                &routed,
                                SQL,
                                Params::Positional(vec![Value::Integer(key(i))]),
                            )
                            .await
                            .expect("query"),
                        );
                    }
                    started.elapsed()
                })
            }),
        ];
        let mut results = measure(rounds, ops, &mut subjects);
        drop(subjects);
        let sqlx_results = {
            let sqlite = &mut sqlite_conns[0];
            let ours_conn = &mut shardlite_conns[0];
            let runtime = &runtime;
            let mut subjects = vec![
                Subject::new("sqlx-sqlite", move |ops| {
                    runtime.block_on(async { sqlx_point_queries!(&mut *sqlite, 0, ops) })
                }),
                Subject::new("sqlx driver routed", move |ops| {
                    runtime.block_on(async { sqlx_point_queries!(&mut *ours_conn, 0, ops) })
                }),
            ];
            measure(rounds, ops, &mut subjects)
        };
        results.extend(sqlx_results);
        results
    };
    header("point query, 1 caller (latency)", "ns/op");
    ratio_line(
        &results,
        "blocking query_row",
        "raw rusqlite",
        Target::AtMost(1.2),
        false,
    );
    ratio_line(&results, "blocking execute_sql", "raw rusqlite", Target::None, false);
    ratio_line(&results, "async query_row", "raw rusqlite", Target::AtMost(1.5), false);
    ratio_line(
        &results,
        "async execute_sql",
        "raw rusqlite",
        Target::AtMost(1.5),
        false,
    );
    ratio_line(
        &results,
        "sqlx driver routed",
        "sqlx-sqlite",
        Target::AtMost(1.0),
        false,
    );
    ratio_line(&results, "sqlx driver routed", "raw rusqlite", Target::None, false);
    ratio_line(&results, "sqlx-sqlite", "raw rusqlite", Target::None, false);

    // Eight callers: throughput.
    let results = {
        let routed = Arc::new(routed);
        let mut subjects = vec![
            Subject::new("raw rusqlite x8", |ops| {
                time_threads(CALLERS, ops, |t, n| {
                    let conn = raw_connections[usize::try_from(t).expect("caller index")]
                        .lock()
                        .expect("connection");
                    for i in 0..n {
                        raw_one(&conn, key(t * 7919 + i));
                    }
                })
            }),
            Subject::new("blocking query_row x8", |ops| {
                time_threads(CALLERS, ops, |t, n| {
                    for i in 0..n {
                        blocking_row(&blocking_routed, key(t * 7919 + i));
                    }
                })
            }),
            Subject::new("blocking execute_sql x8", |ops| {
                time_threads(CALLERS, ops, |t, n| {
                    for i in 0..n {
                        blocking_one(&blocking_routed, key(t * 7919 + i));
                    }
                })
            }),
            Subject::new("async query_row x8", |ops| {
                let routed = Arc::clone(&routed);
                runtime.block_on(async move {
                    let started = Instant::now();
                    let tasks: Vec<_> = (0..CALLERS)
                        .map(|t| {
                            let routed = Arc::clone(&routed);
                            tokio::spawn(async move {
                                for i in 0..ops / CALLERS {
                                    async_row(&routed, key(t * 7919 + i)).await;
                                }
                            })
                        })
                        .collect();
                    for task in tasks {
                        task.await.expect("task");
                    }
                    started.elapsed()
                })
            }),
            Subject::new("async execute_sql x8", |ops| {
                let routed = Arc::clone(&routed);
                runtime.block_on(async move {
                    let started = Instant::now();
                    let tasks: Vec<_> = (0..CALLERS)
                        .map(|t| {
                            let routed = Arc::clone(&routed);
                            tokio::spawn(async move {
                                for i in 0..ops / CALLERS {
                                    black_box(
                                        shardlite::client::SqlData::execute_sql(
                                            &*routed,
                                            SQL,
                                            Params::Positional(vec![Value::Integer(key(t * 7919 + i))]),
                                        )
                                        .await
                                        .expect("query"),
                                    );
                                }
                            })
                        })
                        .collect();
                    for task in tasks {
                        task.await.expect("task");
                    }
                    started.elapsed()
                })
            }),
        ];
        let mut results = measure(rounds, ops, &mut subjects);
        drop(subjects);
        let sqlx_results = {
            let runtime = &runtime;
            let sqlite_conns = &mut sqlite_conns;
            let shardlite_conns = &mut shardlite_conns;
            let mut subjects = vec![
                Subject::new("sqlx-sqlite x8", move |ops| {
                    runtime.block_on(async {
                        let started = Instant::now();
                        let calls = sqlite_conns
                            .iter_mut()
                            .enumerate()
                            .map(|(t, conn)| async move { sqlx_point_queries!(conn, t, ops / CALLERS) });
                        futures_util::future::join_all(calls).await;
                        started.elapsed()
                    })
                }),
                Subject::new("sqlx driver routed x8", move |ops| {
                    runtime.block_on(async {
                        let started = Instant::now();
                        let calls = shardlite_conns
                            .iter_mut()
                            .enumerate()
                            .map(|(t, conn)| async move { sqlx_point_queries!(conn, t, ops / CALLERS) });
                        futures_util::future::join_all(calls).await;
                        started.elapsed()
                    })
                }),
            ];
            measure(rounds, ops, &mut subjects)
        };
        results.extend(sqlx_results);
        results
    };
    header(&format!("point query, {CALLERS} callers (throughput)"), "ops/s");
    ratio_line(
        &results,
        "blocking query_row x8",
        "raw rusqlite x8",
        Target::AtLeast(0.8),
        true,
    );
    ratio_line(
        &results,
        "blocking execute_sql x8",
        "raw rusqlite x8",
        Target::AtLeast(0.8),
        true,
    );
    ratio_line(
        &results,
        "async query_row x8",
        "raw rusqlite x8",
        Target::AtLeast(0.8),
        true,
    );
    ratio_line(
        &results,
        "async execute_sql x8",
        "raw rusqlite x8",
        Target::AtLeast(0.8),
        true,
    );
    ratio_line(
        &results,
        "sqlx driver routed x8",
        "sqlx-sqlite x8",
        Target::AtLeast(1.0),
        true,
    );
    ratio_line(&results, "sqlx driver routed x8", "raw rusqlite x8", Target::None, true);
}
