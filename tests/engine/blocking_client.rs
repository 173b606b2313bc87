//! The blocking client on real files: it runs on plain threads, shares files and map with the
//! async client, follows activations, keeps the engine's limits and hostile-SQL rules on the
//! calling thread, and its writes are serialised with every other writer of the process. Also
//! the async client's inline reads: a read too long for the inline budget moves to a reader
//! thread and still answers right, and the async `query_row` and `query_map` lend rows under
//! the rules of `execute_sql`.

use std::time::{Duration, Instant};

use crate::support::route;
use shardlite::ErrorKind;
use shardlite::client::blocking;
use shardlite::client::{Params, ShardedClient, ShardedClientOptions, SqlData, Value};
use shardlite::data::{ActivationRequest, CatalogUpdateRequest};
use shardlite::engine::EngineConfig;

const ITEMS: &str = "CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER)";
const COUNT_TO_A_MILLION: &str =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000) SELECT count(*) FROM c";

/// A seeded master in a temporary folder, with the items table on every shard.
fn fixture() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = crate::support::temp_dir();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let master = runtime.block_on(async {
        let master = crate::support::seed_master(dir.path(), crate::support::tenants_options(dir.path())).await;
        let sharded = ShardedClient::open(&master).await.unwrap();
        for result in sharded.query().execute_all(ITEMS).await.unwrap() {
            assert!(result.error.is_none(), "{result:?}");
        }
        master
    });
    (dir, master)
}

/// A blocking client whose statements may run for 200 ms.
fn with_200ms_statements(master: &std::path::Path) -> blocking::ShardedClient {
    let options = ShardedClientOptions::with_engine(EngineConfig {
        statement_timeout: Some(Duration::from_millis(200)),
        ..EngineConfig::default()
    });
    blocking::ShardedClient::open_with(master, options).unwrap()
}

fn count(client: &blocking::RoutedClient) -> i64 {
    client
        .execute_sql("SELECT count(*) FROM items", Params::none())
        .unwrap()
        .rows[0][0]
        .as_i64()
        .unwrap()
}

#[test]
fn a_route_runs_on_its_shard_and_the_files_agree_with_the_async_client() {
    let (dir, master) = fixture();
    let sharded = blocking::ShardedClient::open(&master).unwrap();
    let a = sharded.for_route(route("tenant-a"));
    let b = sharded.for_route(route("tenant-b"));
    assert_eq!(a.resolve().unwrap().shard_id, "s0");
    assert_eq!(b.resolve().unwrap().shard_id, "s1");

    let inserted = a
        .execute_sql(
            "INSERT INTO items (tenant, n) VALUES (?1, ?2)",
            Params::from(vec![Value::from("tenant-a"), Value::Integer(7)]),
        )
        .unwrap();
    assert_eq!(inserted.rows_affected, 1);
    assert_eq!(inserted.last_insert_rowid, Some(1));
    assert_eq!(count(&a), 1);
    assert_eq!(count(&b), 0);

    // The row is in s0's file, read with plain rusqlite.
    let s0 = rusqlite::Connection::open(dir.path().join("s0.db")).unwrap();
    let n: i64 = s0
        .query_row("SELECT n FROM items WHERE tenant = 'tenant-a'", [], |row| row.get(0))
        .unwrap();
    assert_eq!(n, 7);

    // Read-only SQL refuses a write before anything runs.
    let err = a
        .execute_read_only_sql("DELETE FROM items", Params::none())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ReadOnly, "{err}");
    assert_eq!(count(&a), 1);

    // Fan-out and status from the blocking client.
    let counts = sharded.query().read_all("SELECT count(*) FROM items").unwrap();
    assert_eq!(counts.len(), 2);
    assert!(
        sharded.shards().status().iter().all(|s| s.healthy),
        "{:?}",
        sharded.shards().status()
    );
}

#[test]
fn transactions_carry_shard_ids_and_roll_back_when_dropped() {
    let (_dir, master) = fixture();
    let sharded = blocking::ShardedClient::open(&master).unwrap();
    let a = sharded.for_route(route("tenant-a"));

    let tx = a.begin().unwrap();
    assert!(tx.id().to_string().starts_with("csdbshard:1:s0:"), "{}", tx.id());
    tx.execute("INSERT INTO items (tenant, n) VALUES ('tenant-a', 1)", Params::none())
        .unwrap();
    // Not visible outside the transaction until it commits.
    assert_eq!(count(&a), 0);
    tx.commit().unwrap();
    assert_eq!(count(&a), 1);

    {
        let tx = a.begin().unwrap();
        tx.execute("INSERT INTO items (tenant, n) VALUES ('tenant-a', 2)", Params::none())
            .unwrap();
    }
    // The dropped transaction rolled back and let go of the write lock.
    let written = a.execute_sql("INSERT INTO items (tenant, n) VALUES ('tenant-a', 3)", Params::none());
    assert!(written.is_ok(), "{written:?}");
    assert_eq!(count(&a), 2);

    // Id-routed calls: the id alone finds the shard, and a route of another shard is refused.
    let info = a.begin_transaction().unwrap();
    let b = sharded.for_route(route("tenant-b"));
    let err = b
        .execute_in_transaction(&info.transaction_id, "SELECT 1", Params::none())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    sharded
        .transactions()
        .execute(&info.transaction_id, "DELETE FROM items", Params::none())
        .unwrap();
    sharded.transactions().rollback(&info.transaction_id).unwrap();
    assert_eq!(count(&a), 2);
    let err = sharded.transactions().commit(&info.transaction_id).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
}

#[test]
fn hostile_sql_is_refused_on_the_calling_thread() {
    let (dir, master) = fixture();
    let sharded = blocking::ShardedClient::open(&master).unwrap();
    let a = sharded.for_route(route("tenant-a"));
    let other = dir.path().join("elsewhere.db");
    let attach = format!("ATTACH DATABASE '{}' AS x", other.display());
    for (sql, kind) in [
        (attach.as_str(), ErrorKind::Forbidden),
        ("SELECT 1; ATTACH 'x.db' AS y", ErrorKind::Forbidden),
        ("PRAGMA journal_mode = DELETE", ErrorKind::Forbidden),
        ("PRAGMA synchronous = OFF", ErrorKind::Forbidden),
        ("BEGIN", ErrorKind::TransactionControl),
        (
            "INSERT INTO items (tenant) VALUES ('x'); COMMIT",
            ErrorKind::TransactionControl,
        ),
        ("SELECT load_extension('x')", ErrorKind::Forbidden),
        ("VACUUM INTO 'copy.db'", ErrorKind::Forbidden),
    ] {
        let err = a.execute_sql(sql, Params::none()).unwrap_err();
        assert_eq!(err.kind(), kind, "{sql}: {err}");
    }
    assert!(!other.exists(), "nothing was attached");
    assert_eq!(count(&a), 0, "no statement of a refused script ran");
    // The connection is still usable, and the engine still allows harmless pragmas.
    assert!(a.execute_sql("PRAGMA table_info(items)", Params::none()).is_ok());
}

#[test]
fn the_statement_time_limit_holds_on_the_calling_thread() {
    let (_dir, master) = fixture();
    let sharded = with_200ms_statements(&master);
    let a = sharded.for_route(route("tenant-a"));
    let started = Instant::now();
    let err = a
        .execute_sql(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
            Params::none(),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // A write that runs too long is stopped too, and leaves nothing behind.
    let err = a
        .execute_sql(
            "INSERT INTO items (tenant, n) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) \
             SELECT 'tenant-a', x FROM c",
            Params::none(),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_eq!(count(&a), 0);
}

#[test]
fn blocking_threads_and_async_tasks_write_together_without_busy_errors() {
    let (_dir, master) = fixture();
    let sharded = blocking::ShardedClient::open(&master).unwrap();
    let a = sharded.for_route(route("tenant-a"));
    std::thread::scope(|scope| {
        for t in 0..4 {
            let a = a.clone();
            scope.spawn(move || {
                for i in 0..100 {
                    a.execute_sql(
                        "INSERT INTO items (tenant, n) VALUES ('tenant-a', ?1)",
                        Params::from(vec![Value::Integer(t * 1000 + i)]),
                    )
                    .unwrap();
                }
            });
        }
        // Async writers on the same shard, through the same engine.
        let routed = a.as_async().clone();
        scope.spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                let writers = (0..4).map(|t| {
                    let routed = routed.clone();
                    async move {
                        for i in 0..100 {
                            routed
                                .execute_sql(
                                    "INSERT INTO items (tenant, n) VALUES ('tenant-a', ?1)",
                                    Params::from(vec![Value::Integer(10_000 + t * 1000 + i)]),
                                )
                                .await
                                .unwrap();
                        }
                    }
                });
                futures_util::future::join_all(writers).await;
            });
        });
    });
    assert_eq!(count(&a), 800);
}

#[test]
fn an_activation_moves_the_route_for_blocking_callers() {
    let (dir, master) = fixture();
    let options = ShardedClientOptions {
        refresh_interval: Duration::from_millis(10),
        ..ShardedClientOptions::default()
    };
    let sharded = blocking::ShardedClient::open_with(&master, options).unwrap();
    let a = sharded.for_route(route("tenant-a"));
    assert_eq!(a.resolve().unwrap().shard_id, "s0");
    a.execute_sql("INSERT INTO items (tenant, n) VALUES ('tenant-a', 1)", Params::none())
        .unwrap();

    // Another process (here: another client on the same master) pins tenant-a to s1.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let operator = ShardedClient::open(&master).await.unwrap();
        let mut next = crate::support::tenants_options(dir.path());
        next.map_version = 2;
        next.exact_key_pins.insert("tenant-a".into(), "s1".into());
        // A metadata-only move: the test only watches where the route goes.
        let mut request = CatalogUpdateRequest::new(next);
        request.allow_ownership_change = true;
        let applied = operator.catalog().apply(&request).await.unwrap();
        assert!(applied.applied, "{applied:?}");
        operator.catalog().activate(&ActivationRequest::new(2)).await.unwrap();
    });

    std::thread::sleep(Duration::from_millis(50));
    // The next call notices the new map: the route now runs on s1, which has no rows yet.
    assert_eq!(count(&a), 0);
    assert_eq!(a.resolve().unwrap().shard_id, "s1");
    assert_eq!(sharded.map_snapshot().map_version, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_past_the_inline_budget_moves_to_a_reader_and_answers() {
    let (_dir, master) = tokio::task::spawn_blocking(fixture).await.unwrap();
    for budget in [Some(Duration::from_micros(1)), Some(Duration::from_millis(1)), None] {
        let options = ShardedClientOptions::with_engine(EngineConfig {
            inline_read_budget: budget,
            ..EngineConfig::default()
        });
        let sharded = ShardedClient::open_with(&master, options).await.unwrap();
        let a = sharded.for_route(route("tenant-a"));
        let counted = a.execute_sql(COUNT_TO_A_MILLION, Params::none()).await.unwrap();
        assert_eq!(counted.rows[0][0], Value::Integer(1_000_000), "budget {budget:?}");
        let counted = a
            .execute_read_only_sql(COUNT_TO_A_MILLION, Params::none())
            .await
            .unwrap();
        assert_eq!(counted.rows[0][0], Value::Integer(1_000_000), "budget {budget:?}");
        // A read that turns out to write still goes to the writer.
        let written = a
            .execute_sql(
                "WITH v(t) AS (SELECT 'tenant-a') INSERT INTO items (tenant) SELECT t FROM v",
                Params::none(),
            )
            .await
            .unwrap();
        assert_eq!(written.rows_affected, 1, "budget {budget:?}");
    }
}

#[test]
fn an_inline_budget_longer_than_the_limit_is_refused_by_name() {
    let config = EngineConfig {
        inline_read_budget: Some(Duration::from_secs(5)),
        ..EngineConfig::default()
    };
    let err = config.validate().unwrap_err();
    assert!(err.to_string().contains("inline read budget"), "{err}");
}

#[test]
fn query_row_and_query_map_lend_rows_in_place_under_the_same_rules() {
    let (dir, master) = fixture();
    let sharded = blocking::ShardedClient::open(&master).unwrap();
    let a = sharded.for_route(route("tenant-a"));
    for n in 1..=3 {
        a.execute_sql(
            "INSERT INTO items (tenant, n) VALUES ('tenant-a', ?1)",
            Params::from(vec![n]),
        )
        .unwrap();
    }

    // The first row, mapped; none when there is no row.
    let first: Option<(i64, String, Option<i64>)> = a
        .query_row(
            "SELECT id, tenant, n FROM items WHERE n >= ?1 ORDER BY n",
            Params::from(vec![2]),
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert_eq!(first, Some((2, "tenant-a".to_owned(), Some(2))));
    let none = a
        .query_row("SELECT n FROM items WHERE n > 99", Params::none(), |row| {
            row.get::<i64>(0)
        })
        .unwrap();
    assert_eq!(none, None);

    // Every row, in order.
    let all = a
        .query_map("SELECT n FROM items ORDER BY n DESC", Params::none(), |row| {
            row.get::<i64>(0)
        })
        .unwrap();
    assert_eq!(all, vec![3, 2, 1]);

    // A statement that writes runs on the writer, and its rows reach the closure.
    let returned = a
        .query_row(
            "INSERT INTO items (tenant, n) VALUES ('tenant-a', 4) RETURNING n * 10",
            Params::none(),
            |row| row.get::<i64>(0),
        )
        .unwrap();
    assert_eq!(returned, Some(40));
    assert_eq!(count(&a), 4);

    // A closure may query and write again while it holds a row.
    let doubled = a
        .query_map("SELECT id, n FROM items ORDER BY id", Params::none(), |row| {
            let n: i64 = row.get(1)?;
            a.execute_sql(
                "UPDATE items SET n = ?1 WHERE id = ?2",
                Params::from(vec![n * 2, row.get::<i64>(0)?]),
            )?;
            Ok(n)
        })
        .unwrap();
    assert_eq!(doubled, vec![1, 2, 3, 4]);
    let sum = a
        .query_row("SELECT sum(n) FROM items", Params::none(), |row| row.get::<i64>(0))
        .unwrap();
    assert_eq!(sum, Some(20));

    // Errors name the problem, and nothing runs when the statement or its values are wrong.
    let mismatch = a
        .query_row("SELECT tenant FROM items", Params::none(), |row| row.get::<i64>(0))
        .unwrap_err();
    assert_eq!(mismatch.kind(), ErrorKind::InvalidInput);
    assert!(
        mismatch.to_string().contains("column 0: TEXT does not convert to i64"),
        "{mismatch}"
    );
    let past = a
        .query_row("SELECT tenant FROM items", Params::none(), |row| row.get::<String>(1))
        .unwrap_err();
    assert!(past.to_string().contains("column 1 is out of range"), "{past}");
    let script = a
        .query_map("SELECT 1; DELETE FROM items", Params::none(), |row| row.get::<i64>(0))
        .unwrap_err();
    assert!(script.to_string().contains("takes one statement"), "{script}");
    let unused = a
        .query_map(
            "DELETE FROM items WHERE n = :n",
            Params::named([("n", Value::Integer(2)), ("extra", Value::Integer(1))]),
            |row| row.get::<i64>(0),
        )
        .unwrap_err();
    assert!(unused.to_string().contains("'extra'"), "{unused}");
    let surplus = a
        .execute_sql("DELETE FROM items WHERE n = ?1", Params::from(vec![2, 3]))
        .unwrap_err();
    assert_eq!(surplus.kind(), ErrorKind::InvalidInput, "{surplus}");
    assert_eq!(count(&a), 4, "nothing ran");

    // Hostile SQL is refused as by execute_sql.
    let other = dir.path().join("elsewhere.db");
    let attach = format!("ATTACH DATABASE '{}' AS x", other.display());
    for (sql, kind) in [
        (attach.as_str(), ErrorKind::Forbidden),
        ("PRAGMA journal_mode = DELETE", ErrorKind::Forbidden),
        ("BEGIN", ErrorKind::TransactionControl),
        ("SELECT load_extension('x')", ErrorKind::Forbidden),
    ] {
        let err = a.query_row(sql, Params::none(), |row| row.get::<Value>(0)).unwrap_err();
        assert_eq!(err.kind(), kind, "{sql}: {err}");
    }
    assert!(!other.exists());
}

#[test]
fn the_statement_time_limit_holds_for_row_closures_that_query_again() {
    let (_dir, master) = fixture();
    let sharded = with_200ms_statements(&master);
    let a = sharded.for_route(route("tenant-a"));
    let started = Instant::now();
    // Every row runs a query of its own; the outer statement keeps its own deadline.
    let err = a
        .query_map(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
            Params::none(),
            |row| {
                a.query_row("SELECT count(*) FROM items", Params::none(), |inner| {
                    inner.get::<i64>(0)
                })?;
                row.get::<i64>(0)
            },
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_query_row_and_query_map_lend_rows_under_the_rules_of_execute_sql() {
    let (dir, master) = tokio::task::spawn_blocking(fixture).await.unwrap();
    let sharded = ShardedClient::open(&master).await.unwrap();
    let a = sharded.for_route(route("tenant-a"));
    for n in 1..=3 {
        a.execute_sql(
            "INSERT INTO items (tenant, n) VALUES ('tenant-a', ?1)",
            Params::from(vec![n]),
        )
        .await
        .unwrap();
    }

    // The first row, mapped; none when there is no row; every row, in order.
    let first: Option<(i64, String, Option<i64>)> = a
        .query_row(
            "SELECT id, tenant, n FROM items WHERE n >= ?1 ORDER BY n",
            Params::from(vec![2]),
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .await
        .unwrap();
    assert_eq!(first, Some((2, "tenant-a".to_owned(), Some(2))));
    let none = a
        .query_row("SELECT n FROM items WHERE n > 99", Params::none(), |row| {
            row.get::<i64>(0)
        })
        .await
        .unwrap();
    assert_eq!(none, None);
    let all = a
        .query_map("SELECT n FROM items ORDER BY n DESC", Params::none(), |row| {
            row.get::<i64>(0)
        })
        .await
        .unwrap();
    assert_eq!(all, vec![3, 2, 1]);

    // A statement that writes runs on the writer, and its rows reach the closure.
    let returned = a
        .query_row(
            "INSERT INTO items (tenant, n) VALUES ('tenant-a', 4) RETURNING n * 10",
            Params::none(),
            |row| row.get::<i64>(0),
        )
        .await
        .unwrap();
    assert_eq!(returned, Some(40));
    let through_with = a
        .query_map(
            "WITH v(n) AS (SELECT 5) INSERT INTO items (tenant, n) SELECT 'tenant-a', n FROM v RETURNING n",
            Params::none(),
            |row| row.get::<i64>(0),
        )
        .await
        .unwrap();
    assert_eq!(through_with, vec![5]);
    let count = || async {
        a.query_row("SELECT count(*) FROM items", Params::none(), |row| row.get::<i64>(0))
            .await
            .unwrap()
    };
    assert_eq!(count().await, Some(5));

    // Errors name the problem, and nothing runs when the statement or its values are wrong.
    let mismatch = a
        .query_row("SELECT tenant FROM items", Params::none(), |row| row.get::<i64>(0))
        .await
        .unwrap_err();
    assert_eq!(mismatch.kind(), ErrorKind::InvalidInput);
    assert!(
        mismatch.to_string().contains("column 0: TEXT does not convert to i64"),
        "{mismatch}"
    );
    let past = a
        .query_row("SELECT tenant FROM items", Params::none(), |row| row.get::<String>(1))
        .await
        .unwrap_err();
    assert!(past.to_string().contains("column 1 is out of range"), "{past}");
    for script in ["SELECT 1; DELETE FROM items", "DELETE FROM items; SELECT 1"] {
        let err = a
            .query_map(script, Params::none(), |row| row.get::<i64>(0))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("takes one statement"), "{script}: {err}");
    }
    let unused = a
        .query_map(
            "DELETE FROM items WHERE n = :n",
            Params::named([("n", Value::Integer(2)), ("extra", Value::Integer(1))]),
            |row| row.get::<i64>(0),
        )
        .await
        .unwrap_err();
    assert!(unused.to_string().contains("'extra'"), "{unused}");
    assert_eq!(count().await, Some(5), "nothing ran");

    // Hostile SQL is refused as by execute_sql.
    let other = dir.path().join("elsewhere.db");
    let attach = format!("ATTACH DATABASE '{}' AS x", other.display());
    for (sql, kind) in [
        (attach.as_str(), ErrorKind::Forbidden),
        ("PRAGMA journal_mode = DELETE", ErrorKind::Forbidden),
        ("BEGIN", ErrorKind::TransactionControl),
        ("SELECT load_extension('x')", ErrorKind::Forbidden),
    ] {
        let err = a
            .query_row(sql, Params::none(), |row| row.get::<Value>(0))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), kind, "{sql}: {err}");
    }
    assert!(!other.exists());
    // The futures are Send: they run on spawned tasks.
    let spawned = {
        let a = a.clone();
        tokio::spawn(async move {
            a.query_map("SELECT n FROM items ORDER BY n", Params::none(), |row| {
                row.get::<i64>(0)
            })
            .await
        })
    };
    assert_eq!(spawned.await.unwrap().unwrap(), vec![1, 2, 3, 4, 5]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_row_queries_past_the_inline_budget_start_over_and_return_each_row_once() {
    const ROWS: i64 = 20_000;
    let sql =
        format!("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {ROWS}) SELECT x FROM c");
    let (_dir, master) = tokio::task::spawn_blocking(fixture).await.unwrap();
    for budget in [Some(Duration::from_micros(1)), Some(Duration::from_millis(1)), None] {
        let options = ShardedClientOptions::with_engine(EngineConfig {
            inline_read_budget: budget,
            ..EngineConfig::default()
        });
        let sharded = ShardedClient::open_with(&master, options).await.unwrap();
        let a = sharded.for_route(route("tenant-a"));
        // The shard file opens on its first use, off the caller's task; from then on queries
        // start on the caller's task.
        a.execute_read_only_sql("SELECT 1", Params::none()).await.unwrap();
        let mut seen = 0;
        let rows = a
            .query_map(&sql, Params::none(), |row| {
                seen += 1;
                row.get::<i64>(0)
            })
            .await
            .unwrap();
        assert_eq!(rows.len(), 20_000, "budget {budget:?}");
        assert!(
            rows.iter().copied().eq(1..=ROWS),
            "budget {budget:?}: each row once, in order"
        );
        if budget == Some(Duration::from_millis(1)) {
            // 20,000 rows take longer than 1 ms: the closure saw some of them inline, then all
            // of them again when the query started over on a reader.
            assert!(seen > ROWS, "budget {budget:?}: {seen}");
        } else {
            assert!(seen >= ROWS, "budget {budget:?}: {seen}");
        }
        let mut calls = 0;
        let counted = a
            .query_row(COUNT_TO_A_MILLION, Params::none(), |row| {
                calls += 1;
                row.get::<i64>(0)
            })
            .await
            .unwrap();
        assert_eq!(counted, Some(1_000_000), "budget {budget:?}");
        assert_eq!(calls, 1, "budget {budget:?}: the closure of query_row runs once");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_starts_like_a_query_does_not_wait_for_a_busy_reader() {
    let (_dir, master) = tokio::task::spawn_blocking(fixture).await.unwrap();
    let options = ShardedClientOptions::with_engine(EngineConfig {
        readers: 1,
        statement_timeout: Some(Duration::from_secs(3)),
        ..EngineConfig::default()
    });
    let sharded = ShardedClient::open_with(&master, options).await.unwrap();
    let a = sharded.for_route(route("tenant-a"));
    // A runaway read outlives the inline budget and takes the shard's only reader thread.
    let runaway = {
        let a = a.clone();
        tokio::spawn(async move {
            a.execute_sql(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
                Params::none(),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let written = a
        .execute_sql(
            "WITH v(t) AS (SELECT 'tenant-a') INSERT INTO items (tenant) SELECT t FROM v",
            Params::none(),
        )
        .await
        .unwrap();
    assert_eq!(written.rows_affected, 1);
    let returned = a
        .query_row(
            "WITH v(n) AS (SELECT 7) INSERT INTO items (tenant, n) SELECT 'tenant-a', n FROM v RETURNING n",
            Params::none(),
            |row| row.get::<i64>(0),
        )
        .await
        .unwrap();
    assert_eq!(returned, Some(7));
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the writes waited {:?} for the reader",
        started.elapsed()
    );
    assert!(!runaway.is_finished(), "the reader was busy throughout");
    let err = runaway.await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
}
