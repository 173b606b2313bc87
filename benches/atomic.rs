//! Atomic transactions across shards (SPEC sections 12 and 19), in three parts, each against a
//! baseline in the same run.
//!
//! 1. Latency of an atomic transaction that updates one row on each of 2 shards (begin, the two
//!    updates, commit) against the same two updates committed on each shard independently, one
//!    transaction after the other (what an application without atomic transactions does):
//!    at most 2.2 times. The same two transactions committed concurrently are shown for
//!    information.
//! 2. Latency of an atomic transaction that updates one row on 1 shard against today's
//!    single-shard transaction doing the same (`transactions().begin(route)`): 1.0 times (the
//!    one-shard path is today's path; the target allows 5 % for noise).
//! 3. Throughput of a steady routed write load (4 callers inserting rows on 8 shards through one
//!    client, autocommit) while that client's background resolver recovers 1,000 abandoned
//!    atomic transactions (each prepared on 2 of the 8 shards, its decision pending, its
//!    coordinator gone), against the same load on a client with nothing to recover, over the
//!    same length of time: at most a 10 % dip (at least 0.9 times). Each round a coordinator
//!    abandons 1,000 transactions (not timed), then a fresh client with a 100 ms abandon age
//!    starts the load; the window opens when its resolver's first round starts (50 ms after
//!    the client was made) and closes when nothing is left unresolved (checked every 250 ms).
//!    The baseline's window is as long as the last recovery window. This part measures the
//!    resolver's paced rounds: its client turns off the unpaced pass a shard gets when it
//!    opens holding atomic state (`ShardedClientOptions::atomic_resolve_on_open`).
//!
//! `cargo bench --bench atomic`; `SHARDLITE_BENCH_ROUNDS`, `SHARDLITE_BENCH_OPS` and
//! `SHARDLITE_BENCH_PROCESSES` change the rounds (default 7; the recovery part runs at most 3),
//! operations per round and measuring processes (default 3: the recovery part takes about 25 s
//! a round, since the resolver paces itself).

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{Subject, Target, header, measure, ratio_line, settings};
use shardlite::RouteContext;
use shardlite::client::{AtomicStep, Params, ShardedClient, ShardedClientOptions, SqlData, Value};
use shardlite::engine::EngineConfig;
use shardlite::map::{BucketRange, ShardDefinition, ShardMap, ShardingOptions};

const SHARDS: i64 = 8;
const KEYSPACE: &str = "accounts";
/// Accounts on each shard: enough for the abandoned transactions of one round to lock distinct rows.
const ACCOUNTS_PER_SHARD: usize = 500;
const ABANDONED: usize = 1_000;
const LOAD_CALLERS: usize = 4;
/// The recovering client's abandon age; its resolver runs every 50 ms (the shortest period).
const RECOVERY_AGE: Duration = Duration::from_millis(100);
const RESOLVER_PERIOD: Duration = Duration::from_millis(50);
/// How often the harness checks whether anything is left unresolved (in both windows). The
/// check lists every intent and record in the 8 files, about 3,000 rows at the start of a
/// recovery and none in the baseline's window, so checking often would charge the harness's
/// own reads to the recovery.
const CHECK_PERIOD: Duration = Duration::from_millis(250);

fn map(dir: &Path) -> ShardMap {
    let buckets: i64 = 64;
    let per = buckets / SHARDS;
    ShardMap::new(ShardingOptions {
        keyspace: KEYSPACE.into(),
        map_version: 1,
        virtual_bucket_count: buckets,
        shards: (0..SHARDS)
            .map(|i| {
                ShardDefinition::local(
                    format!("shard-{i}"),
                    dir.join(format!("shard-{i}.db")).to_string_lossy(),
                )
            })
            .collect(),
        bucket_ranges: (0..SHARDS)
            .map(|i| BucketRange::new(i * per, (i + 1) * per, format!("shard-{i}")))
            .collect(),
        exact_key_pins: Default::default(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    })
    .expect("map")
}

/// The first `count` account keys (`acct-N`) that route to each shard, by shard index.
fn keys_by_shard(map: &ShardMap, count: usize) -> Vec<Vec<String>> {
    let mut keys = vec![Vec::new(); usize::try_from(SHARDS).unwrap_or(8)];
    let mut n = 0u64;
    while keys.iter().any(|k| k.len() < count) {
        let key = format!("acct-{n}");
        n += 1;
        let index = map.resolve(KEYSPACE, &key).expect("resolve").shard_index;
        if keys[index].len() < count {
            keys[index].push(key);
        }
    }
    keys
}

fn options(abandon_age: Duration) -> ShardedClientOptions {
    ShardedClientOptions::with_engine(EngineConfig {
        atomic_abandon_age: abandon_age,
        ..EngineConfig::default()
    })
}

fn route(key: &str) -> RouteContext {
    RouteContext::new(KEYSPACE, key).expect("route")
}

const UPDATE: &str = "UPDATE accounts SET balance = balance + 1 WHERE owner = ?1";

fn params(key: &str) -> Params {
    Params::Positional(vec![Value::Text(key.into())])
}

/// Creates the tables and one account row per key on its shard.
async fn fill(client: &ShardedClient, keys: &[Vec<String>]) {
    for result in client
        .query()
        .execute_all(
            "CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT NOT NULL UNIQUE, balance INTEGER NOT NULL); \
             CREATE TABLE events (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, n INTEGER NOT NULL);",
        )
        .await
        .expect("schema")
    {
        assert!(result.error.is_none(), "{result:?}");
    }
    for shard in keys {
        for key in shard {
            client
                .for_route(route(key))
                .execute_sql("INSERT INTO accounts (owner, balance) VALUES (?1, 100)", params(key))
                .await
                .expect("account");
        }
    }
}

/// One atomic transaction updating the accounts `keys`, committed.
async fn atomic_update(client: &ShardedClient, keys: &[&str]) {
    let mut tx = client.begin_atomic();
    for key in keys {
        tx.execute(&route(key), UPDATE, params(key))
            .await
            .expect("atomic update");
    }
    tx.commit().await.expect("atomic commit");
}

/// Today's single-shard transaction updating the account `key`, committed.
async fn plain_update(client: &ShardedClient, key: &str) {
    let tx = client.transactions().begin(&route(key)).await.expect("begin");
    tx.execute(UPDATE, params(key)).await.expect("update");
    tx.commit().await.expect("commit");
}

/// Leaves [`ABANDONED`] atomic transactions prepared on 2 shards each, undecided, as a
/// coordinator that died after its prepares would.
async fn abandon(coordinator: &ShardedClient, keys: &[Vec<String>]) {
    let shards = keys.len();
    for i in 0..ABANDONED {
        let (a, b) = (i % shards, (i + 1) % shards);
        let (ka, kb) = (&keys[a][i / shards], &keys[b][i / shards + ACCOUNTS_PER_SHARD / 2]);
        let mut tx = coordinator.begin_atomic();
        tx.execute(&route(ka), UPDATE, params(ka))
            .await
            .expect("abandoned update");
        tx.execute(&route(kb), UPDATE, params(kb))
            .await
            .expect("abandoned update");
        tx.commit_until(Some(AtomicStep::Prepared(1))).await.expect("prepared");
    }
}

/// Runs the routed write load on `client` until `stop`, counting the writes.
fn start_load(
    runtime: &tokio::runtime::Runtime,
    client: &ShardedClient,
    stop: &Arc<AtomicBool>,
    done: &Arc<AtomicU64>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..LOAD_CALLERS)
        .map(|caller| {
            let (client, stop, done) = (client.clone(), Arc::clone(stop), Arc::clone(done));
            runtime.spawn(async move {
                let mut n = i64::try_from(caller).unwrap_or(0) * 7919;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let key = format!("load-{n}");
                    client
                        .for_route(route(&key))
                        .execute_sql(
                            "INSERT INTO events (owner, n) VALUES (?1, ?2)",
                            Params::Positional(vec![Value::Text(key.clone()), Value::Integer(n)]),
                        )
                        .await
                        .expect("load write");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect()
}

/// The load on a fresh client over `map`, counted over a window that opens when the client's
/// resolver first runs and closes after `length` or, with `length` `None`, when nothing is left
/// unresolved. Returns the writes counted and the window's length.
fn load_window(runtime: &tokio::runtime::Runtime, map: &ShardMap, length: Option<Duration>) -> (u64, Duration) {
    runtime.block_on(async {
        // The rounds alone: the pass a shard gets when it opens holding atomic state runs
        // unpaced, and would do the work as the load opens the shards, before the window opens.
        let options = ShardedClientOptions {
            atomic_resolve_on_open: false,
            ..options(RECOVERY_AGE)
        };
        let client = ShardedClient::from_map_with(map.clone(), options)
            .await
            .expect("client");
        let made = Instant::now();
        let (stop, done) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let load = start_load(runtime, &client, &stop, &done);
        tokio::time::sleep_until((made + RESOLVER_PERIOD).into()).await;
        let (opened, before) = (Instant::now(), done.load(Ordering::Relaxed));
        loop {
            tokio::time::sleep(CHECK_PERIOD).await;
            let unresolved = client
                .atomic_recovery()
                .unresolved_in_open_files()
                .await
                .expect("unresolved");
            let finished = match length {
                Some(length) => opened.elapsed() >= length,
                None => unresolved.is_empty(),
            };
            if finished {
                break;
            }
        }
        let (took, writes) = (opened.elapsed(), done.load(Ordering::Relaxed) - before);
        stop.store(true, Ordering::Relaxed);
        for task in load {
            task.await.expect("load task");
        }
        (writes, took)
    })
}

/// Nanoseconds per write of a window, as the harness's time for `ops` operations.
fn per_op(ops: u64, (writes, took): (u64, Duration)) -> Duration {
    Duration::from_nanos(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX) / writes.max(1) * ops)
}

fn main() {
    common::default_processes(3);
    let (rounds, ops) = settings(200);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, usize::from))
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let map = map(dir.path());
    let keys = keys_by_shard(&map, ACCOUNTS_PER_SHARD);
    let client = runtime
        .block_on(ShardedClient::from_map_with(
            map.clone(),
            options(Duration::from_secs(3600)),
        ))
        .expect("client");
    runtime.block_on(fill(&client, &keys));
    let (a, b) = (keys[0][0].as_str(), keys[1][0].as_str());

    let mut subjects = vec![
        Subject::new("atomic, 2 shards", |ops| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..ops {
                    atomic_update(&client, &[a, b]).await;
                }
                started.elapsed()
            })
        }),
        Subject::new("2 transactions, one by one", |ops| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..ops {
                    plain_update(&client, a).await;
                    plain_update(&client, b).await;
                }
                started.elapsed()
            })
        }),
        Subject::new("2 transactions, concurrently", |ops| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..ops {
                    tokio::join!(plain_update(&client, a), plain_update(&client, b));
                }
                started.elapsed()
            })
        }),
        Subject::new("atomic, 1 shard", |ops| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..ops {
                    atomic_update(&client, &[a]).await;
                }
                started.elapsed()
            })
        }),
        Subject::new("transaction, 1 shard", |ops| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..ops {
                    plain_update(&client, a).await;
                }
                started.elapsed()
            })
        }),
    ];
    let latency = measure(rounds, ops, &mut subjects);
    drop(subjects);

    let last_recovery = std::cell::Cell::new(Duration::from_millis(500));
    let mut subjects = vec![
        Subject::new("load while recovering 1,000", |ops| {
            runtime.block_on(abandon(&client, &keys));
            std::thread::sleep(RECOVERY_AGE + RESOLVER_PERIOD);
            let window = load_window(&runtime, &map, None);
            eprintln!(
                "  recovered {ABANDONED} in {:.0} ms under {} writes",
                window.1.as_secs_f64() * 1e3,
                window.0
            );
            last_recovery.set(window.1);
            per_op(ops, window)
        }),
        Subject::new("load, nothing to recover", |ops| {
            per_op(ops, load_window(&runtime, &map, Some(last_recovery.get())))
        }),
    ];
    let recovery = measure(rounds.min(3), ops, &mut subjects);

    header(
        "Atomic commit across shards (latency: begin, one UPDATE per shard, commit)",
        "ns/op",
    );
    ratio_line(
        &latency,
        "atomic, 2 shards",
        "2 transactions, one by one",
        Target::AtMost(2.2),
        false,
    );
    ratio_line(
        &latency,
        "atomic, 2 shards",
        "2 transactions, concurrently",
        Target::None,
        false,
    );
    ratio_line(
        &latency,
        "atomic, 1 shard",
        "transaction, 1 shard",
        Target::AtMost(1.05),
        false,
    );
    header(
        "Routed writes (4 callers, 8 shards) while the resolver recovers 1,000 abandoned transactions",
        "writes/s",
    );
    ratio_line(
        &recovery,
        "load while recovering 1,000",
        "load, nothing to recover",
        Target::AtLeast(0.9),
        true,
    );
}
