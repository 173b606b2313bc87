//! Connections bound to a keyspace without a key: `Shard Keyspace` alone in the connection string,
//! and `ShardedPool::acquire_across_shards`, in-process and through a daemon. Queries answer one
//! result merged from every shard; writes and transactions fail with "route required" and leave
//! every shard file as it was.

use std::path::Path;

use crate::support::{orders_master, orders_route as route, temp_dir};
use shardlite::ErrorKind;
use shardlite::client::{Params, ShardedClient, SqlData, Value};
use shardlite::connect::ConnectionTarget;
use shardlite::driver::{ShardedPool, ShardliteConnection, ShardliteDatabaseError, ShardlitePool};
use sqlx::{Connection, Row};

const SCHEMA: &str = "CREATE TABLE events (id INTEGER PRIMARY KEY, route_key TEXT NOT NULL, n INTEGER NOT NULL)";

/// Months spread over the four shards of the orders map.
const KEYS: [&str; 8] = [
    "2025-11", "2025-12", "2026-01", "2026-02", "2026-03", "2026-04", "2026-05", "2026-06",
];

/// Writes `n` = 0..40 through route-bound clients, five rows per month; returns the client.
async fn seeded(dir: &Path) -> (std::path::PathBuf, ShardedClient) {
    let (master, sharded) = orders_master(dir, SCHEMA).await;
    for (i, key) in KEYS.iter().enumerate() {
        for j in 0..5 {
            let n = i64::try_from(i * 5 + j).unwrap();
            sharded
                .for_route(route(key))
                .execute_sql(
                    "INSERT INTO events (route_key, n) VALUES (?1, ?2)",
                    Params::from(vec![Value::from(*key), Value::from(n)]),
                )
                .await
                .unwrap();
        }
    }
    let shards: std::collections::BTreeSet<String> = KEYS
        .iter()
        .map(|key| sharded.resolve_route(&route(key)).unwrap().shard_id)
        .collect();
    assert!(
        shards.len() >= 3,
        "the months should spread over the shards: {shards:?}"
    );
    (master, sharded)
}

fn shardlite_kind(err: &sqlx::Error) -> Option<ErrorKind> {
    let db = err.as_database_error()?;
    Some(
        db.try_downcast_ref::<ShardliteDatabaseError>()?
            .shardlite_error()
            .kind(),
    )
}

/// Every row's `n`, read from each shard file with plain SQLite (not through shardlite).
fn every_n_by_hand(dir: &Path) -> Vec<i64> {
    let mut all = Vec::new();
    for shard in 0..4 {
        let conn = rusqlite::Connection::open(dir.join(format!("shard-{shard}.db"))).unwrap();
        let mut stmt = conn.prepare("SELECT n FROM events").unwrap();
        let rows = stmt.query_map([], |row| row.get::<_, i64>(0)).unwrap();
        all.extend(rows.map(Result::unwrap));
    }
    all.sort_unstable();
    all
}

/// The checks every across-shards connection passes: merged reads equal to the rows of every
/// shard file, writes, scripts and transactions refused with "route required", and no shard
/// changed.
async fn reads_merge_and_writes_need_a_route(conn: &mut ShardliteConnection, dir: &Path, what: &str) {
    let before = every_n_by_hand(dir);
    assert_eq!(before, (0..40).collect::<Vec<_>>(), "{what}");

    let count: i64 = sqlx::query("SELECT count(*) FROM events")
        .fetch_one(&mut *conn)
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 40, "{what}: one count over every shard");

    let newest: Vec<i64> = sqlx::query("SELECT n FROM events WHERE n < ? ORDER BY n DESC LIMIT 3")
        .bind(30_i64)
        .fetch_all(&mut *conn)
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(newest, vec![29, 28, 27], "{what}: ORDER BY … LIMIT across shards");

    let per_month: Vec<(String, i64, i64)> = sqlx::query(
        "SELECT route_key, count(*), sum(n) FROM events GROUP BY route_key HAVING sum(n) > 100 ORDER BY route_key",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap()
    .iter()
    .map(|row| (row.get(0), row.get(1), row.get(2)))
    .collect();
    let expected: Vec<(String, i64, i64)> = KEYS
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let first = i64::try_from(i * 5).unwrap();
            ((*key).to_owned(), 5, (first..first + 5).sum())
        })
        .filter(|(_, _, sum)| *sum > 100)
        .collect();
    assert_eq!(per_month, expected, "{what}: GROUP BY … HAVING across shards");

    let refused = [
        "INSERT INTO events (route_key, n) VALUES ('2026-06', 99)",
        "UPDATE events SET n = n + 1",
        "DELETE FROM events",
        "WITH gone AS (SELECT id FROM events) DELETE FROM events WHERE id IN gone",
        "CREATE TABLE extra (x)",
        "SELECT 1; DELETE FROM events",
    ];
    for sql in refused {
        let err = sqlx::query(sql).execute(&mut *conn).await.unwrap_err();
        assert_eq!(
            shardlite_kind(&err),
            Some(ErrorKind::RouteRequired),
            "{what}: {sql}: {err}"
        );
        assert!(err.to_string().contains("route is required"), "{what}: {sql}: {err}");
    }
    let err = conn.begin().await.map(drop).unwrap_err();
    assert_eq!(
        shardlite_kind(&err),
        Some(ErrorKind::RouteRequired),
        "{what}: begin: {err}"
    );

    // A query the merge cannot answer exactly is refused for that reason, not for the route.
    let err = sqlx::query("SELECT n, row_number() OVER (ORDER BY n) FROM events")
        .fetch_all(&mut *conn)
        .await
        .unwrap_err();
    assert_eq!(
        shardlite_kind(&err),
        Some(ErrorKind::UnsupportedCrossShardQuery),
        "{what}: {err}"
    );

    // The connection still answers after the refusals, and no shard file changed.
    let count: i64 = sqlx::query("SELECT count(*) FROM events")
        .fetch_one(&mut *conn)
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 40, "{what}");
    assert_eq!(
        every_n_by_hand(dir),
        before,
        "{what}: a refused write changed a shard file"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyspace_without_a_key_reads_across_shards_and_refuses_writes() {
    let dir = temp_dir();
    let (master, sharded) = seeded(dir.path()).await;
    let text = format!("Data Source={};Shard Keyspace=ORDERS_BY_MONTH", master.display());
    let mut conn = ShardliteConnection::connect(&text).await.unwrap();
    assert!(
        matches!(conn.target(), ConnectionTarget::Sharded { keyspace, .. } if keyspace == "orders_by_month"),
        "{:?}",
        conn.target()
    );
    reads_merge_and_writes_need_a_route(&mut conn, dir.path(), "connection string").await;

    // The same answer as the sharded client's query_all_shards.
    let sql = "SELECT route_key, max(n) FROM events GROUP BY route_key ORDER BY 2 DESC LIMIT 4";
    let through_sqlx: Vec<(String, i64)> = sqlx::query(sql)
        .fetch_all(&mut conn)
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let direct = sharded.query().merged(sql, Params::none()).await.unwrap();
    let direct: Vec<(String, i64)> = direct
        .rows
        .iter()
        .map(|row| (row[0].as_str().unwrap().to_owned(), row[1].as_i64().unwrap()))
        .collect();
    assert_eq!(through_sqlx, direct);

    // A pool of such connections, as an application opens it.
    let pool = ShardlitePool::connect(&text).await.unwrap();
    let count: i64 = sqlx::query("SELECT count(DISTINCT route_key) FROM events")
        .fetch_one(&pool)
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 8);
    let err = sqlx::query("DELETE FROM events").execute(&pool).await.unwrap_err();
    assert_eq!(shardlite_kind(&err), Some(ErrorKind::RouteRequired), "{err}");
    pool.close().await;

    // The pool's own connection without a route.
    let pool = ShardedPool::connect(&format!("Data Source={}", master.display()))
        .await
        .unwrap();
    let mut conn = pool.acquire_across_shards().await.unwrap();
    reads_merge_and_writes_need_a_route(&mut conn, dir.path(), "ShardedPool::acquire_across_shards").await;
    assert!(pool.open_connections().is_empty(), "{:?}", pool.open_connections());
}

#[tokio::test]
async fn a_keyspace_without_a_key_is_checked_when_it_connects() {
    let dir = temp_dir();
    let (master, _) = orders_master(dir.path(), SCHEMA).await;
    let err = ShardliteConnection::connect(&format!("Data Source={};Shard Keyspace=tenants", master.display()))
        .await
        .unwrap_err();
    assert_eq!(shardlite_kind(&err), Some(ErrorKind::UnknownKeyspace), "{err}");
    assert!(err.to_string().contains("'tenants'"), "{err}");

    let plain = dir.path().join("plain.db");
    let err = ShardliteConnection::connect(&format!("Data Source={};Shard Keyspace=orders", plain.display()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(!plain.exists(), "a refused connection created the file");
    rusqlite::Connection::open(&plain)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let err = ShardliteConnection::connect(&format!("Data Source={};Shard Keyspace=orders", plain.display()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("holds no shard map"), "{err}");

    // Without any route key, a master catalog is still refused, and the message names both fixes.
    let err = ShardliteConnection::connect(&format!("Data Source={}", master.display()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("'Shard Keyspace' alone"), "{err}");
}

#[cfg(all(feature = "server", feature = "http", feature = "grpc"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyspace_without_a_key_reads_across_shards_through_a_daemon() {
    use crate::support::daemon::start_daemon_on;
    use shardlite::server::ServerConfig;

    let dir = temp_dir();
    let (master, _) = seeded(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    for transport in ["Grpc", "Http"] {
        let base = format!("Endpoint={};Transport={transport}", daemon.base_url);
        let mut conn = ShardliteConnection::connect(&format!("{base};Shard Keyspace=orders_by_month"))
            .await
            .unwrap();
        assert!(
            matches!(conn.target(), ConnectionTarget::Remote { .. }),
            "{:?}",
            conn.target()
        );
        reads_merge_and_writes_need_a_route(&mut conn, dir.path(), transport).await;

        let err = ShardliteConnection::connect(&format!("{base};Shard Keyspace=tenants"))
            .await
            .unwrap_err();
        assert_eq!(
            shardlite_kind(&err),
            Some(ErrorKind::UnknownKeyspace),
            "{transport}: {err}"
        );

        let pool = ShardedPool::connect(&base).await.unwrap();
        let mut conn = pool.acquire_across_shards().await.unwrap();
        reads_merge_and_writes_need_a_route(&mut conn, dir.path(), &format!("{transport} pool")).await;
    }
    daemon.stop().await.unwrap();
}
