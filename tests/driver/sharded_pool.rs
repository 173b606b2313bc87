//! `ShardedPool` through the `sqlx` facade: one pool serving many route keys, connections kept per
//! shard under a cap, every row on its route's shard, the map checks of a bound connection, the
//! same pool over a daemon, and atomic transactions across shards from the pool (in-process and
//! over a daemon).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::{orders_master, orders_route as route, route_in, seed_master, temp_dir, tenants_options};
use shardlite::client::ShardedClient;
use shardlite::data::{ActivationRequest, Audit, CatalogUpdateRequest};
use shardlite::driver::{ShardedPool, ShardliteDatabaseError};
use shardlite::{ErrorKind, RouteContext};
use sqlx::{Connection, Row};

const SCHEMA: &str = "CREATE TABLE events (id INTEGER PRIMARY KEY, route_key TEXT NOT NULL, n INTEGER NOT NULL)";

/// `(shard id, route key)` of every event row, read from each shard file with plain SQLite.
fn placements(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for shard in 0..4 {
        let conn = rusqlite::Connection::open(dir.join(format!("shard-{shard}.db"))).unwrap();
        let mut stmt = conn.prepare("SELECT route_key FROM events").unwrap();
        let keys: Vec<String> = stmt
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        out.extend(keys.into_iter().map(|key| (format!("shard-{shard}"), key)));
    }
    out
}

fn shardlite_kind(err: &sqlx::Error) -> Option<ErrorKind> {
    let db = err.as_database_error()?;
    Some(
        db.try_downcast_ref::<ShardliteDatabaseError>()?
            .shardlite_error()
            .kind(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_pool_serves_a_thousand_route_keys_within_its_per_shard_cap() {
    let dir = temp_dir();
    let (master, sharded) = orders_master(dir.path(), SCHEMA).await;
    let pool = ShardedPool::connect(&format!("Data Source={};Max Pool Size=3", master.display()))
        .await
        .unwrap();
    assert_eq!(pool.max_connections_per_shard(), 3);
    let peak = Arc::new(AtomicUsize::new(0));
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..24 {
        let (pool, peak, next) = (pool.clone(), Arc::clone(&peak), Arc::clone(&next));
        workers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= 1000 {
                    return Ok::<_, sqlx::Error>(());
                }
                let key = format!("tenant-{n:04}");
                let mut conn = pool.acquire(route(&key)).await?;
                let open = pool.open_connections();
                peak.fetch_max(open.values().copied().max().unwrap_or(0), Ordering::Relaxed);
                let n = i64::try_from(n).unwrap();
                if n % 10 == 0 {
                    // A transaction on a pooled connection carries the route's shard-prefixed id.
                    let mut tx = conn.begin().await?;
                    let id = tx.transaction_id().unwrap_or_default().to_owned();
                    assert!(id.starts_with("csdbshard:1:shard-"), "{id}");
                    sqlx::query("INSERT INTO events (route_key, n) VALUES (?, ?)")
                        .bind(&key)
                        .bind(n)
                        .execute(&mut *tx)
                        .await?;
                    tx.commit().await?;
                } else {
                    let done = sqlx::query("INSERT INTO events (route_key, n) VALUES (?, ?)")
                        .bind(&key)
                        .bind(n)
                        .execute(&mut *conn)
                        .await?;
                    assert!(done.last_insert_rowid() > 0);
                }
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap().unwrap();
    }
    let peak = peak.load(Ordering::Relaxed);
    assert!((1..=3).contains(&peak), "peak {peak} connections on one shard");
    let open = pool.open_connections();
    assert!(open.values().all(|n| *n <= 3), "{open:?}");
    assert!(open.len() <= 4, "{open:?}");

    // Every row is on the shard its route key resolves to.
    let rows = placements(dir.path());
    assert_eq!(rows.len(), 1000);
    let mut per_shard: BTreeMap<String, usize> = BTreeMap::new();
    for (shard, key) in &rows {
        let resolved = sharded.resolve_route(&route(key)).unwrap();
        assert_eq!(&resolved.shard_id, shard, "{key}");
        *per_shard.entry(shard.clone()).or_default() += 1;
    }
    assert!(per_shard.len() >= 3, "keys spread over the shards: {per_shard:?}");
    pool.close().await;
    let err = pool.acquire(route("tenant-0001")).await.unwrap_err();
    assert!(matches!(err, sqlx::Error::PoolClosed), "{err}");
}

#[tokio::test]
async fn a_returned_connection_is_clean_and_acquires_wait_for_the_cap() {
    let dir = temp_dir();
    let (master, _sharded) = orders_master(dir.path(), SCHEMA).await;
    let pool = ShardedPool::connect(&format!(
        "Data Source={};Max Pool Size=1;Connect Timeout=1",
        master.display()
    ))
    .await
    .unwrap();
    // 2026-05 is pinned to shard-1.
    let mut conn = pool.acquire(route("2026-05")).await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("INSERT INTO events (route_key, n) VALUES ('2026-05', 1)")
        .execute(&mut *tx)
        .await
        .unwrap();
    // With the one connection of shard-1 in use, another acquire for that shard times out.
    let err = pool.acquire(route("2026-05")).await.unwrap_err();
    assert!(matches!(err, sqlx::Error::PoolTimedOut), "{err}");
    // A dropped transaction and connection: rolled back before the next user gets it.
    drop(tx);
    drop(conn);
    let mut again = pool.acquire(route("2026-05")).await.unwrap();
    assert!(!again.is_in_transaction());
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&mut *again)
        .await
        .unwrap();
    assert_eq!(count, 0);
    assert_eq!(pool.open_connections().get("shard-1"), Some(&1));
}

#[tokio::test]
async fn connection_strings_with_a_route_or_without_a_map_are_refused() {
    let dir = temp_dir();
    let (master, _sharded) = orders_master(dir.path(), SCHEMA).await;
    let err = ShardedPool::connect(&format!(
        "Data Source={};Shard Keyspace=orders_by_month;Shard Key=2026-05",
        master.display()
    ))
    .await
    .unwrap_err();
    assert!(err.to_string().contains("remove 'Shard Keyspace'"), "{err}");
    let plain = dir.path().join("plain.db");
    let err = ShardedPool::connect(&format!("Data Source={}", plain.display()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("shard map"), "{err}");
    let err = ShardedPool::connect("Data Source=x.db;Max Pool Size=lots")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Max Pool Size"), "{err}");
}

/// A pooled connection keeps the map checks of a bound connection: after an activation moves its
/// route, it refuses to run rather than write to the old owner, and a new acquire lands on the new one.
#[tokio::test]
async fn a_pooled_connection_refuses_to_run_after_its_route_moved() {
    let dir = temp_dir();
    let master = seed_master(dir.path(), tenants_options(dir.path())).await;
    let operator = ShardedClient::open(&master).await.unwrap();
    operator.query().execute_all(SCHEMA).await.unwrap();
    let pool = ShardedPool::connect(&format!("Data Source={}", master.display()))
        .await
        .unwrap();
    let tenant_a = RouteContext::new("tenants", "tenant-a").unwrap();
    let mut held = pool.acquire(tenant_a.clone()).await.unwrap();
    sqlx::query("INSERT INTO events (route_key, n) VALUES ('tenant-a', 1)")
        .execute(&mut *held)
        .await
        .unwrap();

    // Version 2 pins tenant-a to s1 instead of s0.
    let mut v2 = tenants_options(dir.path());
    v2.map_version = 2;
    v2.exact_key_pins.insert("tenant-a".into(), "s1".into());
    let mut request = CatalogUpdateRequest::new(v2);
    request.expected_current_map_version = Some(1);
    request.allow_ownership_change = true;
    assert!(operator.catalog().apply(&request).await.unwrap().applied);
    operator
        .catalog()
        .activate(&ActivationRequest::new(2).audit(Audit::by("test")))
        .await
        .unwrap();
    // The pool's own client follows the activation within its refresh interval.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let err = loop {
        match sqlx::query("INSERT INTO events (route_key, n) VALUES ('tenant-a', 2)")
            .execute(&mut *held)
            .await
        {
            Err(err) => break err,
            Ok(_) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the pooled connection never saw version 2"
                );
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    };
    assert_eq!(shardlite_kind(&err), Some(ErrorKind::StaleMapVersion), "{err}");
    drop(held);
    let mut moved = pool.acquire(tenant_a).await.unwrap();
    sqlx::query("INSERT INTO events (route_key, n) VALUES ('tenant-a', 3)")
        .execute(&mut *moved)
        .await
        .unwrap();
    let count_in = |shard: &str| {
        let conn = rusqlite::Connection::open(dir.path().join(format!("{shard}.db"))).unwrap();
        conn.query_row("SELECT count(*) FROM events WHERE n = 3", [], |row| {
            row.get::<_, i64>(0)
        })
        .unwrap()
    };
    assert_eq!((count_in("s0"), count_in("s1")), (0, 1));
}

#[cfg(all(feature = "server", feature = "http", feature = "grpc"))]
#[tokio::test]
async fn a_pool_over_a_daemon_binds_each_connection_to_its_route() {
    use crate::support::daemon::start_daemon_on;
    use shardlite::server::ServerConfig;

    let dir = temp_dir();
    let (master, sharded) = orders_master(dir.path(), SCHEMA).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    for transport in ["Grpc", "Http"] {
        let pool = ShardedPool::connect(&format!("Endpoint={};Transport={transport}", daemon.base_url))
            .await
            .unwrap();
        for n in 0..20 {
            let key = format!("{transport}-{n}");
            let mut conn = pool.acquire(route(&key)).await.unwrap();
            let mut tx = conn.begin().await.unwrap();
            let expected = sharded.resolve_route(&route(&key)).unwrap();
            let id = tx.transaction_id().unwrap().to_owned();
            assert!(
                id.starts_with(&format!("csdbshard:1:{}:", expected.shard_id)),
                "{id} for {key}"
            );
            sqlx::query("INSERT INTO events (route_key, n) VALUES (?, ?)")
                .bind(&key)
                .bind(n)
                .execute(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
        }
    }
    let rows = placements(dir.path());
    assert_eq!(rows.len(), 40);
    for (shard, key) in rows {
        assert_eq!(sharded.resolve_route(&route(&key)).unwrap().shard_id, shard, "{key}");
    }
}

/// The balance of `owner` in the accounts table of [`transfer_master`], read through `pool`.
async fn balance(pool: &ShardedPool, owner: &str) -> i64 {
    let mut conn = pool.acquire(route_in("tenants", owner)).await.unwrap();
    sqlx::query_scalar("SELECT balance FROM accounts WHERE owner = ?")
        .bind(owner)
        .fetch_one(&mut *conn)
        .await
        .unwrap()
}

/// A master on shards `s0` (`tenant-a`) and `s1` (`tenant-b`), each account holding 100.
async fn transfer_master(dir: &Path) -> (std::path::PathBuf, ShardedClient) {
    let master = seed_master(dir, tenants_options(dir)).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    for outcome in sharded
        .query()
        .execute_all(
            "CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL UNIQUE, balance INTEGER NOT NULL)",
        )
        .await
        .unwrap()
    {
        assert!(outcome.error.is_none(), "{outcome:?}");
    }
    for owner in ["tenant-a", "tenant-b"] {
        let pool = ShardedPool::connect(&format!("Data Source={}", master.display()))
            .await
            .unwrap();
        let mut conn = pool.acquire(route_in("tenants", owner)).await.unwrap();
        sqlx::query("INSERT INTO accounts (owner, balance) VALUES (?, 100)")
            .bind(owner)
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    (master, sharded)
}

/// Moves `amount` from `tenant-a` (shard `s0`) to `tenant-b` (shard `s1`) in an atomic
/// transaction of `pool`, left open: the caller commits, rolls back or drops it.
async fn atomic_transfer(pool: &ShardedPool, amount: i64) -> shardlite::driver::ShardedAtomic {
    let before = (balance(pool, "tenant-a").await, balance(pool, "tenant-b").await);
    let mut tx = pool.begin_atomic().await.unwrap();
    assert!(tx.id().starts_with("csdbatomic:"), "{}", tx.id());
    let (a, b) = (route_in("tenants", "tenant-a"), route_in("tenants", "tenant-b"));
    let debit = sqlx::query("UPDATE accounts SET balance = balance - ? WHERE owner = ?")
        .bind(amount)
        .bind("tenant-a");
    assert_eq!(tx.execute(&a, debit).await.unwrap().rows_affected(), 1);
    let seen = tx
        .fetch_all(
            &a,
            sqlx::query("SELECT balance FROM accounts WHERE owner = ?").bind("tenant-a"),
        )
        .await
        .unwrap();
    assert_eq!(
        seen[0].get::<i64, _>(0),
        before.0 - amount,
        "the transaction reads its own write"
    );
    let credit = sqlx::query("UPDATE accounts SET balance = balance + ? WHERE owner = ?")
        .bind(amount)
        .bind("tenant-b");
    assert_eq!(tx.execute(&b, credit).await.unwrap().rows_affected(), 1);
    assert_eq!(
        (balance(pool, "tenant-a").await, balance(pool, "tenant-b").await),
        before,
        "nothing shows before commit"
    );
    tx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_runs_an_atomic_transfer_across_shards_and_a_dropped_one_leaves_nothing() {
    let dir = temp_dir();
    let (master, sharded) = transfer_master(dir.path()).await;
    let pool = ShardedPool::connect(&format!("Data Source={}", master.display()))
        .await
        .unwrap();

    atomic_transfer(&pool, 30).await.commit().await.unwrap();
    assert_eq!(
        (balance(&pool, "tenant-a").await, balance(&pool, "tenant-b").await),
        (70, 130)
    );

    atomic_transfer(&pool, 5).await.rollback().await.unwrap();
    drop(atomic_transfer(&pool, 7).await);
    // A dropped transaction rolls back in the background; its rows are writable again once it has.
    let mut conn = pool.acquire(route_in("tenants", "tenant-a")).await.unwrap();
    sqlx::query("UPDATE accounts SET balance = balance WHERE owner = 'tenant-a'")
        .execute(&mut *conn)
        .await
        .unwrap();
    drop(conn);
    assert_eq!(
        (balance(&pool, "tenant-a").await, balance(&pool, "tenant-b").await),
        (70, 130)
    );
    assert!(sharded.atomic_recovery().unresolved().await.unwrap().is_empty());

    // A route of another keyspace is refused as the caller's input, and nothing of the
    // transaction is applied.
    let mut tx = pool.begin_atomic().await.unwrap();
    tx.execute(
        &route_in("tenants", "tenant-a"),
        sqlx::query("UPDATE accounts SET balance = 0 WHERE owner = 'tenant-a'"),
    )
    .await
    .unwrap();
    let err = tx
        .execute(&route_in("nope", "x"), sqlx::query("UPDATE accounts SET balance = 0"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
    drop(tx);
    assert_eq!(balance(&pool, "tenant-a").await, 70);
}

#[cfg(all(feature = "server", feature = "http", feature = "grpc"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_over_a_daemon_runs_atomic_transfers_over_grpc_and_http() {
    use crate::support::daemon::start_daemon_on;
    use shardlite::server::ServerConfig;

    let dir = temp_dir();
    let (master, sharded) = transfer_master(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let mut expected = (100, 100);
    for transport in ["Grpc", "Http"] {
        let pool = ShardedPool::connect(&format!("Endpoint={};Transport={transport}", daemon.base_url))
            .await
            .unwrap();
        atomic_transfer(&pool, 10).await.commit().await.unwrap();
        expected = (expected.0 - 10, expected.1 + 10);
        assert_eq!(
            (balance(&pool, "tenant-a").await, balance(&pool, "tenant-b").await),
            expected,
            "{transport}"
        );
        atomic_transfer(&pool, 3).await.rollback().await.unwrap();
        assert_eq!(
            (balance(&pool, "tenant-a").await, balance(&pool, "tenant-b").await),
            expected,
            "{transport}: rolled back"
        );
    }
    assert!(sharded.atomic_recovery().unresolved().await.unwrap().is_empty());
}

/// One lookup through `pool`: the row lands on the entry's shard (s1); a deleted entry and an
/// unknown directory are refused with their kinds.
async fn insert_by_lookup(pool: &ShardedPool, dir: &Path, id: &str) {
    let mut conn = pool.acquire_by_lookup("orders_by_id", "SO-tenant-b").await.unwrap();
    sqlx::query("INSERT INTO items (id, tenant) VALUES (?1, 'tenant-b')")
        .bind(id)
        .execute(&mut *conn)
        .await
        .unwrap();
    drop(conn);
    let on_s1 = rusqlite::Connection::open(dir.join("s1.db"))
        .unwrap()
        .query_row("SELECT count(*) FROM items WHERE id = ?1", [id], |row| {
            row.get::<_, i64>(0)
        })
        .unwrap();
    assert_eq!(on_s1, 1, "{id}");

    let err = pool
        .acquire_by_lookup("orders_by_id", "gone-tenant-b")
        .await
        .unwrap_err();
    assert_eq!(shardlite_kind(&err), Some(ErrorKind::Conflict), "{err}");
    let err = pool.acquire_by_lookup("nowhere", "SO-1").await.unwrap_err();
    assert_eq!(shardlite_kind(&err), Some(ErrorKind::NotFound), "{err}");
}

#[tokio::test]
async fn acquire_by_lookup_binds_a_pooled_connection_to_the_entrys_route() {
    let dir = temp_dir();
    let master = crate::support::migrate::migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    // tenant-b is pinned to s1.
    crate::support::migrate::add_directory(&sharded, &["tenant-b"]).await;
    let pool = ShardedPool::connect(&format!("Data Source={}", master.display()))
        .await
        .unwrap();
    insert_by_lookup(&pool, dir.path(), "in-process").await;
    assert_eq!(pool.open_connections().keys().collect::<Vec<_>>(), ["s1"]);

    // Over a daemon, the daemon resolves the entry.
    let daemon = crate::support::daemon::start_daemon_on(&master, Default::default()).await;
    for transport in ["Grpc", "Http"] {
        let pool = ShardedPool::connect(&format!("Endpoint={};Transport={transport}", daemon.base_url))
            .await
            .unwrap();
        insert_by_lookup(&pool, dir.path(), transport).await;
    }
}
