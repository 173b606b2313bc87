//! Writes of async callers on their own task: a single statement that writes runs on the
//! writer's connection on the caller's task when that connection is free, under the inline
//! budget. Whatever the budget, every write lands once: one stopped by the budget before it
//! commits is rolled back and runs again on the writer's thread, and one past its commit is
//! never stopped (SQLite looks for an interrupt once more after a statement commits). A write
//! that meets another connection's write lock waits for it on the writer's thread, as queued
//! writes always did.

use std::time::Duration;

use crate::support::route;
use shardlite::client::{Params, RoutedClient, ShardedClient, ShardedClientOptions, SqlData};
use shardlite::data::Value;
use shardlite::engine::EngineConfig;

const ITEMS: &str = "CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER)";
const INSERT: &str = "INSERT INTO items (tenant, n) VALUES ('tenant-a', ?1)";

async fn fixture(dir: &std::path::Path) -> std::path::PathBuf {
    let master = crate::support::seed_master(dir, crate::support::tenants_options(dir)).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    for result in sharded.query().execute_all(ITEMS).await.unwrap() {
        assert!(result.error.is_none(), "{result:?}");
    }
    master
}

async fn client(master: &std::path::Path, budget: Option<Duration>) -> RoutedClient {
    let options = ShardedClientOptions::with_engine(EngineConfig {
        inline_read_budget: budget,
        ..EngineConfig::default()
    });
    ShardedClient::open_with(master, options)
        .await
        .unwrap()
        .for_route(route("tenant-a"))
}

async fn count(client: &RoutedClient) -> Value {
    client
        .execute_sql("SELECT count(*) FROM items", Params::none())
        .await
        .unwrap()
        .rows[0][0]
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_lands_once_whatever_the_inline_budget() {
    let dir = crate::support::temp_dir();
    let master = fixture(dir.path()).await;
    // A budget of a nanosecond is over at SQLite's first look, including the one after a
    // statement's commit, which a cached statement reaches every few hundred runs.
    for budget in [Some(Duration::from_nanos(1)), Some(Duration::from_millis(1)), None] {
        let a = client(&master, budget).await;
        a.execute_sql("DELETE FROM items", Params::none()).await.unwrap();
        for n in 1..=2_000 {
            let written = a.execute_sql(INSERT, Params::from(vec![n])).await.unwrap();
            assert_eq!(written.rows_affected, 1, "budget {budget:?}");
            assert!(written.last_insert_rowid.is_some(), "budget {budget:?}");
        }
        assert_eq!(count(&a).await, Value::Integer(2_000), "budget {budget:?}");
        // A write too long for a short budget starts over on the writer's thread and lands once.
        let many = a
            .execute_sql(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000) \
                 INSERT INTO items (tenant, n) SELECT 'tenant-a', x FROM c",
                Params::none(),
            )
            .await
            .unwrap();
        assert_eq!(many.rows_affected, 50_000, "budget {budget:?}");
        assert_eq!(count(&a).await, Value::Integer(52_000), "budget {budget:?}");
        // A failing write fails once, with its own error, and writes nothing.
        let err = a
            .execute_sql("INSERT INTO items (id, tenant) VALUES (1, 'tenant-a')", Params::none())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("UNIQUE"), "budget {budget:?}: {err}");
        assert_eq!(count(&a).await, Value::Integer(52_000), "budget {budget:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_meeting_a_transactions_lock_waits_for_its_commit() {
    let dir = crate::support::temp_dir();
    let master = fixture(dir.path()).await;
    let a = client(&master, Some(Duration::from_millis(1))).await;
    let transaction = a.begin().await.unwrap();
    transaction.execute(INSERT, Params::from(vec![1])).await.unwrap();
    let waiting = {
        let a = a.clone();
        tokio::spawn(async move { a.execute_sql(INSERT, Params::from(vec![2])).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !waiting.is_finished(),
        "the write did not wait for the transaction's lock"
    );
    transaction.commit().await.unwrap();
    let written = waiting.await.unwrap().unwrap();
    assert_eq!(written.rows_affected, 1);
    assert_eq!(count(&a).await, Value::Integer(2));
}
