//! Many shards in one process: a shard file opens on first use, closes when idle, and the set
//! of open files is bounded, with busy (never a hang, never a closed-under-you file) when every
//! open file is in use. Open files are counted from the process's own descriptors.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::many::pinned_tenants;
use crate::support::{path_str, route_in, seed_master, temp_dir};
use shardlite::ErrorKind;
use shardlite::client::{Params, ShardedClient, ShardedClientOptions, SqlData, TransactionData, Value};
use shardlite::engine::EngineConfig;
use shardlite::options::ConnectionOptions;

fn tenant(i: usize) -> shardlite::RouteContext {
    route_in("tenants", &format!("t{i}"))
}

/// Shard files of `dir` this process holds open (SQLite's WAL and shared-memory files count
/// with their database file).
fn open_shard_files(dir: &Path) -> usize {
    let mut files = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if target.parent() == Some(dir) {
            let name = target.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('s') {
                let base = name.split('.').next().unwrap().to_owned();
                files.insert(base);
            }
        }
    }
    files.len()
}

async fn client(dir: &Path, count: usize, engine: EngineConfig) -> ShardedClient {
    let master = seed_master(dir, pinned_tenants(count, |i| path_str(&dir.join(format!("s{i}.db"))))).await;
    // Seeding opens each file once to create it; nothing of that stays open.
    ShardedClient::open_with(&master, ShardedClientOptions::with_engine(engine))
        .await
        .unwrap()
}

async fn write(sharded: &ShardedClient, i: usize, n: i64) {
    sharded
        .for_route(tenant(i))
        .execute_sql(
            "CREATE TABLE IF NOT EXISTS t (n INTEGER); INSERT INTO t (n) VALUES (?1)",
            Params::from(vec![Value::Integer(n)]),
        )
        .await
        .unwrap();
}

async fn sum(sharded: &ShardedClient, i: usize) -> i64 {
    let result = sharded
        .for_route(tenant(i))
        .execute_sql("SELECT coalesce(sum(n), 0) FROM t", Params::none())
        .await
        .unwrap();
    result.rows[0][0].as_i64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_opens_on_first_use_and_the_open_set_stays_bounded() {
    let dir = temp_dir();
    let engine = EngineConfig {
        max_open_shards: 4,
        ..EngineConfig::default()
    };
    let sharded = client(dir.path(), 40, engine).await;
    assert_eq!(open_shard_files(dir.path()), 0, "no shard is open before its first use");

    for i in 0..40 {
        write(&sharded, i, i64::try_from(i).unwrap() + 1).await;
        let open = open_shard_files(dir.path());
        assert!(open <= 4, "{open} shard files open after touching {} shards", i + 1);
    }
    // Shards that were closed to make room open again with everything they hold (the WAL
    // included: nothing was checkpointed by hand).
    for i in 0..40 {
        assert_eq!(sum(&sharded, i).await, i64::try_from(i).unwrap() + 1, "shard s{i}");
    }
    assert!(open_shard_files(dir.path()) <= 4);
    // A fan-out over every shard works within the same bound.
    let all = sharded.query().read_all("SELECT count(*) FROM t").await.unwrap();
    assert_eq!(all.len(), 40);
    assert!(all.iter().all(|shard| shard.error.is_none()), "{all:?}");
    assert!(open_shard_files(dir.path()) <= 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_shard_closes_after_its_idle_time_and_reopens_on_use() {
    let dir = temp_dir();
    let engine = EngineConfig {
        shard_idle_timeout: Some(Duration::from_millis(500)),
        ..EngineConfig::default()
    };
    let sharded = client(dir.path(), 3, engine).await;
    for i in 0..3 {
        write(&sharded, i, 7).await;
    }
    assert_eq!(open_shard_files(dir.path()), 3);
    let deadline = Instant::now() + Duration::from_secs(10);
    while open_shard_files(dir.path()) > 0 {
        assert!(Instant::now() < deadline, "idle shards still open after 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(sum(&sharded, 1).await, 7);
    assert_eq!(open_shard_files(dir.path()), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_with_an_open_transaction_is_never_closed_and_a_full_set_answers_busy() {
    let dir = temp_dir();
    let engine = EngineConfig {
        max_open_shards: 1,
        busy_timeout: Duration::from_millis(300),
        ..EngineConfig::default()
    };
    let sharded = client(dir.path(), 3, engine).await;
    write(&sharded, 0, 1).await;
    let a = sharded.for_route(tenant(0));
    let tx = a.begin_transaction().await.unwrap();
    a.execute_in_transaction(&tx.transaction_id, "INSERT INTO t (n) VALUES (10)", Params::none())
        .await
        .unwrap();

    // The only place is held by a shard with an open transaction: another shard waits for the
    // busy timeout, then answers busy; it neither hangs nor closes the transaction's shard.
    let started = Instant::now();
    let err = sharded
        .for_route(tenant(1))
        .execute_sql("SELECT 1", Params::none())
        .await
        .unwrap_err();
    let waited = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
    assert!(err.to_string().contains("max open shards"), "{err}");
    assert!(
        waited >= Duration::from_millis(250),
        "answered busy after only {waited:?}"
    );
    assert!(waited < Duration::from_secs(3), "answered busy after {waited:?}");

    a.execute_in_transaction(&tx.transaction_id, "INSERT INTO t (n) VALUES (100)", Params::none())
        .await
        .unwrap();
    a.commit_transaction(&tx.transaction_id).await.unwrap();
    assert_eq!(sum(&sharded, 0).await, 111);
    // Once the transaction ended, its shard is idle and gives its place up.
    write(&sharded, 1, 5).await;
    assert_eq!(sum(&sharded, 1).await, 5);
    assert_eq!(open_shard_files(dir.path()), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_running_a_long_query_is_not_closed_under_it() {
    let dir = temp_dir();
    let engine = EngineConfig {
        max_open_shards: 1,
        busy_timeout: Duration::from_millis(200),
        ..EngineConfig::default()
    };
    let sharded = client(dir.path(), 2, engine).await;
    write(&sharded, 0, 1).await;
    let long = {
        let a = sharded.for_route(tenant(0));
        tokio::spawn(async move {
            a.execute_sql(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c",
                Params::none(),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let err = sharded
        .for_route(tenant(1))
        .execute_sql("SELECT 1", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");
    let counted = long.await.unwrap().unwrap();
    assert_eq!(counted.rows[0][0].as_i64(), Some(3_000_000));
    // The query over, the place is free again.
    write(&sharded, 1, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_open_shards_is_checked_and_a_connection_string_sets_it() {
    let zero = EngineConfig {
        max_open_shards: 0,
        ..EngineConfig::default()
    };
    let err = zero.validate().unwrap_err();
    assert!(err.to_string().contains("max open shards"), "{err}");
    if let Some(limit) = shardlite::engine::descriptor_limit() {
        let above = EngineConfig {
            max_open_shards: usize::try_from(limit).unwrap() + 1,
            ..EngineConfig::default()
        };
        let err = above.validate().unwrap_err();
        assert!(err.to_string().contains(&limit.to_string()), "{err}");
    }
    let options: ConnectionOptions = "Data Source=m.db;Max Open Shards=3".parse().unwrap();
    assert_eq!(options.max_open_shards(), Some(3));
    let config = shardlite::connect::engine_config_for(&options, EngineConfig::default());
    assert_eq!(config.max_open_shards, 3);
    let err = "Data Source=m.db;Max Open Shards=0"
        .parse::<ConnectionOptions>()
        .unwrap_err();
    assert!(err.to_string().contains("Max Open Shards"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shards_of_a_data_move_in_progress_are_not_closed_for_others() {
    let dir = temp_dir();
    let engine = EngineConfig {
        max_open_shards: 2,
        busy_timeout: Duration::from_millis(300),
        ..EngineConfig::default()
    };
    let sharded = client(dir.path(), 3, engine).await;
    for outcome in sharded
        .query()
        .execute_all(
            "CREATE TABLE items (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER, amount REAL, data BLOB);
             CREATE INDEX items_tenant ON items (tenant);",
        )
        .await
        .unwrap()
    {
        assert!(outcome.error.is_none(), "{outcome:?}");
    }
    crate::support::migrate::fill(&sharded, "t0", 1, 200).await;

    // The move of t0 from s0 to s1 stops after its first page until the test lets it go on.
    let (paused_tx, paused) = std::sync::mpsc::channel::<()>();
    let (resume, resumed) = std::sync::mpsc::channel::<()>();
    let resumed = std::sync::Mutex::new(resumed);
    let migrator = shardlite::reshard::Resharder::new(sharded.clone()).with_observer(move |_| {
        if paused_tx.send(()).is_ok() {
            let _ = resumed.lock().unwrap().recv_timeout(Duration::from_secs(30));
        }
    });
    let moving = tokio::spawn(async move {
        migrator
            .migrate(crate::support::migrate::key_request("t0", "s1", 50))
            .await
    });
    tokio::task::spawn_blocking(move || paused.recv_timeout(Duration::from_secs(30)).unwrap())
        .await
        .unwrap();

    // Both places are held by the move's shards: a third shard answers busy rather than close
    // either under the copy.
    let err = sharded
        .for_route(tenant(2))
        .execute_sql("SELECT 1", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Busy, "{err}");

    drop(resume);
    let result = moving.await.unwrap().unwrap();
    assert_eq!(result.status, shardlite::data::ReshardStatus::Activated, "{result:?}");
    assert_eq!(crate::support::migrate::items_on(&sharded, "s1", "t0").await.0, 200);
    // The move over, its shards give their places up.
    sharded
        .for_route(tenant(2))
        .execute_sql("SELECT 1", Params::none())
        .await
        .unwrap();
}
