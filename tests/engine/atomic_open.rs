//! Recovery when a shard opens: a client that opens a shard holding an atomic transaction a
//! coordinator left finishes it at once, without waiting for its resolver's rounds (set to an
//! hour here, so only the pass at open can do it; a client with the pass off shows the row
//! locked until a resolve); a shard without atomic state costs nothing.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::many::balance;
use crate::support::many::pinned_tenants;
use crate::support::{route, seed_master, temp_dir};
use shardlite::client::{AtomicStep, Params, ShardedClient, ShardedClientOptions, SqlData};
use shardlite::engine::EngineConfig;
use shardlite::{Error, ErrorKind};

const SHARDS: usize = 3;

/// How long the pass at open may take here; it usually takes milliseconds.
const BOUND: Duration = Duration::from_secs(3);

/// A client whose resolver's rounds come once an hour, so only a pass at open resolves.
async fn client(master: &Path, abandon_age: Duration) -> ShardedClient {
    let options = ShardedClientOptions {
        atomic_resolver_period: Some(Duration::from_secs(3600)),
        ..ShardedClientOptions::with_engine(EngineConfig {
            atomic_abandon_age: abandon_age,
            ..EngineConfig::default()
        })
    };
    ShardedClient::open_with(master, options).await.unwrap()
}

/// Shards `s0`..`s2`, tenant `t{i}` on `s{i}`, each with account `i` holding 100; the master.
async fn accounts(dir: &Path) -> std::path::PathBuf {
    let master = seed_master(
        dir,
        pinned_tenants(SHARDS, |i| dir.join(format!("s{i}.db")).display().to_string()),
    )
    .await;
    let sharded = client(&master, Duration::from_secs(30)).await;
    for i in 0..SHARDS {
        let routed = sharded.for_route(route(&format!("t{i}")));
        for sql in [
            "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)".to_owned(),
            format!("INSERT INTO accounts VALUES ({i}, 100)"),
        ] {
            routed.execute_sql(&sql, Params::none()).await.unwrap();
        }
    }
    assert_eq!(
        sharded.atomic_recovery().open_passes(),
        0,
        "no shard holds atomic state"
    );
    master
}

/// Moves 30 from account 0 to account 1, stopped after `step` as a coordinator that died there.
async fn stopped_transfer(master: &Path, step: AtomicStep) {
    let sharded = client(master, Duration::from_secs(30)).await;
    let mut tx = sharded.begin_atomic();
    for (i, sql) in [
        (0, "UPDATE accounts SET balance = balance - 30 WHERE id = 0"),
        (1, "UPDATE accounts SET balance = balance + 30 WHERE id = 1"),
    ] {
        tx.execute(&route(&format!("t{i}")), sql, Params::none()).await.unwrap();
    }
    tx.commit_until(Some(step)).await.unwrap();
}

/// Writes account `i` until the write is no longer refused as locked; how long that took.
async fn write_when_unlocked(sharded: &ShardedClient, i: usize, since: Instant) -> Duration {
    let routed = sharded.for_route(route(&format!("t{i}")));
    let sql = format!("UPDATE accounts SET balance = balance WHERE id = {i}");
    loop {
        match routed.execute_sql(&sql, Params::none()).await {
            Ok(_) => return since.elapsed(),
            Err(err @ Error::RowLocked { .. }) => {
                assert_eq!(err.kind(), ErrorKind::RowLocked);
                assert!(since.elapsed() < BOUND, "account {i} still locked after {BOUND:?}");
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            Err(err) => panic!("account {i}: {err}"),
        }
    }
}

/// Opens shard `s1` with a query, then writes its locked row and a row nobody locks.
async fn open_s1_and_write(sharded: &ShardedClient) -> Duration {
    let opened = Instant::now();
    balance(sharded, 1).await;
    sharded
        .for_route(route("t1"))
        .execute_sql("INSERT INTO accounts VALUES (101, 1)", Params::none())
        .await
        .expect("a row no transaction locks is written at once");
    let took = write_when_unlocked(sharded, 1, opened).await;
    eprintln!("the locked row was writable {took:?} after the shard opened");
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_opening_with_a_committed_intent_applies_it_at_once() {
    let dir = temp_dir();
    let master = accounts(dir.path()).await;
    stopped_transfer(&master, AtomicStep::Decided).await;

    let sharded = client(&master, Duration::from_secs(30)).await;
    assert!(open_s1_and_write(&sharded).await < BOUND);
    assert_eq!(balance(&sharded, 1).await, 130, "the committed value");
    assert_eq!(balance(&sharded, 0).await, 70, "the first participant applied too");
    // s1, then s0, which s1's pass opened (finding nothing left by then).
    let opened = Instant::now();
    while sharded.atomic_recovery().open_passes() < 2 {
        assert!(
            opened.elapsed() < BOUND,
            "{} passes",
            sharded.atomic_recovery().open_passes()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let unresolved = sharded.atomic_recovery().unresolved().await.unwrap();
    assert!(unresolved.is_empty(), "{unresolved:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_opening_with_an_abandoned_intent_aborts_it_at_once() {
    let dir = temp_dir();
    let master = accounts(dir.path()).await;
    // Prepared on both, the record pending: the coordinator died before its decision.
    stopped_transfer(&master, AtomicStep::Prepared(1)).await;

    let abandon_age = Duration::from_millis(200);
    let sharded = client(&master, abandon_age).await;
    tokio::time::sleep(abandon_age + Duration::from_millis(50)).await;
    assert!(open_s1_and_write(&sharded).await < BOUND);
    assert_eq!((balance(&sharded, 0).await, balance(&sharded, 1).await), (100, 100));
    write_when_unlocked(&sharded, 0, Instant::now()).await;
    let unresolved = sharded.atomic_recovery().unresolved().await.unwrap();
    assert!(unresolved.is_empty(), "{unresolved:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_without_atomic_state_opens_without_a_pass() {
    let dir = temp_dir();
    let master = accounts(dir.path()).await;
    // s0 and s1 keep the atomic tables of a finished transaction, empty; s2 never had them.
    stopped_transfer(&master, AtomicStep::Applied(2)).await;
    let resolver = client(&master, Duration::from_secs(30)).await;
    resolver.atomic_recovery().resolve().await.unwrap();
    assert!(resolver.atomic_recovery().unresolved().await.unwrap().is_empty());
    drop(resolver);

    let sharded = client(&master, Duration::from_secs(30)).await;
    for i in 0..SHARDS {
        write_when_unlocked(&sharded, i, Instant::now()).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(sharded.atomic_recovery().open_passes(), 0);
    assert_eq!((balance(&sharded, 0).await, balance(&sharded, 1).await), (70, 130));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_pass_at_open_the_row_stays_locked_until_a_resolve() {
    let dir = temp_dir();
    let master = accounts(dir.path()).await;
    stopped_transfer(&master, AtomicStep::Decided).await;
    let options = ShardedClientOptions {
        atomic_resolver_period: Some(Duration::from_secs(3600)),
        atomic_resolve_on_open: false,
        ..ShardedClientOptions::default()
    };
    let sharded = ShardedClient::open_with(&master, options).await.unwrap();
    let s1 = sharded.for_route(route("t1"));
    let sql = "UPDATE accounts SET balance = balance WHERE id = 1";
    for _ in 0..2 {
        let err = s1.execute_sql(sql, Params::none()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::RowLocked, "{err}");
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert_eq!(sharded.atomic_recovery().open_passes(), 0);
    let resolution = sharded.atomic_recovery().resolve().await.unwrap();
    // The first participant applied with the decision; the second is left.
    assert_eq!(resolution.committed, 1, "{resolution:?}");
    s1.execute_sql(sql, Params::none()).await.unwrap();
}
