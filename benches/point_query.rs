//! A routed in-process point query against its floor: the same `SELECT ... WHERE id = ?` on
//! the same WAL file through raw rusqlite (a cached statement on one connection, no thread
//! hop), through a `LocalClient`, and through a route-bound client of a `ShardedClient`.
//!
//! The difference between `raw_rusqlite` and `local_client` is the engine's cost (a channel
//! hop to a reader thread and back); between `local_client` and `routed_client` it is routing.

use std::hint::black_box;

use criterion::Criterion;
use shardlite::RouteContext;
use shardlite::client::{DataClient, LocalClient, Params, ShardedClient, Value};
use shardlite::map::{ShardDefinition, ShardMap, ShardingOptions};

const ROWS: i64 = 10_000;

fn point_query(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("shard-0.db");
    let path = file.to_string_lossy().into_owned();

    let sharded = runtime.block_on(async {
        let map = ShardMap::new(ShardingOptions {
            keyspace: "orders_by_month".into(),
            map_version: 1,
            virtual_bucket_count: 16,
            shards: vec![ShardDefinition::local("shard-0", path.clone())],
            bucket_ranges: Vec::new(),
            exact_key_pins: Default::default(),
        })
        .expect("map");
        let sharded = ShardedClient::from_map(map).await.expect("sharded client");
        sharded
            .execute_sql_on_all_shards(
                "CREATE TABLE orders (id INTEGER PRIMARY KEY, month TEXT NOT NULL, amount REAL NOT NULL); \
                 WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000) \
                 INSERT INTO orders SELECT i, '2026-06', i * 1.5 FROM n;",
            )
            .await
            .expect("schema");
        sharded
    });
    let local = runtime.block_on(LocalClient::open(&file)).expect("local client");
    let routed = sharded.for_route(RouteContext::new("orders_by_month", "2026-06").expect("route"));
    let raw = rusqlite::Connection::open(&file).expect("raw connection");

    const SQL: &str = "SELECT id, month, amount FROM orders WHERE id = ?1";
    let mut group = c.benchmark_group("point_query");
    let mut id = 0i64;
    group.bench_function("raw_rusqlite", |b| {
        b.iter(|| {
            id = id % ROWS + 1;
            let mut stmt = raw.prepare_cached(SQL).expect("prepare");
            let row: (i64, String, f64) = stmt
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .expect("row");
            black_box(row)
        });
    });
    group.bench_function("local_client", |b| {
        b.to_async(&runtime).iter(|| {
            id = id % ROWS + 1;
            let local = &local;
            async move {
                black_box(
                    local
                        .execute_sql(SQL, Params::Positional(vec![Value::Integer(id)]))
                        .await
                        .expect("query"),
                )
            }
        });
    });
    group.bench_function("routed_client", |b| {
        b.to_async(&runtime).iter(|| {
            id = id % ROWS + 1;
            let routed = &routed;
            async move {
                black_box(
                    routed
                        .execute_sql(SQL, Params::Positional(vec![Value::Integer(id)]))
                        .await
                        .expect("query"),
                )
            }
        });
    });
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    point_query(&mut criterion);
    criterion.final_summary();
}
