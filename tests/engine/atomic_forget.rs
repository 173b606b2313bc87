//! The decision record of an atomic transaction every participant finished is forgotten off the
//! commit's latency path: the first participant's next decision deletes it in its own local
//! commit, or the resolver does; it is never listed as unresolved meanwhile. A crash that loses
//! the queue leaves a decided record, which recovery finishes (nothing left to do) and forgets.

use std::path::Path;
use std::time::Duration;

use crate::support::many::{open_account, pinned_tenants};
use crate::support::{route, seed_master, temp_dir};
use shardlite::client::{
    AtomicResolution, Params, ShardedClient, ShardedClientOptions, SqlData, UnresolvedState, Value,
};
use shardlite::engine::EngineConfig;

/// Three shards `s0`..`s2`, tenant `t{i}` on `s{i}` holding account `i` with a balance of 100;
/// the resolver's period is long, so only explicit resolves run.
async fn accounts(dir: &Path, fresh: bool) -> ShardedClient {
    let master = dir.join("master.db");
    if fresh {
        seed_master(
            dir,
            pinned_tenants(3, |i| dir.join(format!("s{i}.db")).display().to_string()),
        )
        .await;
    }
    let options = ShardedClientOptions::with_engine(EngineConfig {
        atomic_abandon_age: Duration::from_secs(3600),
        ..EngineConfig::default()
    });
    let sharded = ShardedClient::open_with(&master, options).await.unwrap();
    for i in (0..3).filter(|_| fresh) {
        open_account(&sharded, i).await;
    }
    sharded
}

/// Moves 1 from account `from` to account `to` atomically (`from` is the first participant).
async fn transfer(sharded: &ShardedClient, from: usize, to: usize) -> String {
    let mut tx = sharded.begin_atomic();
    for (i, delta) in [(from, -1), (to, 1)] {
        tx.execute(
            &route(&format!("t{i}")),
            &format!("UPDATE accounts SET balance = balance + {delta} WHERE id = {i}"),
            Params::none(),
        )
        .await
        .unwrap();
    }
    let id = tx.id();
    tx.commit().await.unwrap();
    id
}

/// The decision records in shard `s{shard}`'s file, read with plain SQLite.
fn records(dir: &Path, shard: usize) -> Vec<(String, String)> {
    let file = dir.join(format!("s{shard}.db"));
    let db = rusqlite::Connection::open_with_flags(&file, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut statement = db
        .prepare("SELECT transaction_id, state FROM _shardlite_atomic_decisions ORDER BY transaction_id")
        .unwrap();
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

async fn balances(sharded: &ShardedClient) -> Vec<i64> {
    let mut all = Vec::new();
    for i in 0..3 {
        let result = sharded
            .for_route(route(&format!("t{i}")))
            .execute_sql("SELECT balance FROM accounts", Params::none())
            .await
            .unwrap();
        match result.rows[0][0] {
            Value::Integer(n) => all.push(n),
            ref other => panic!("balance {other:?}"),
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_record_goes_with_the_next_decision_or_the_resolver() {
    let dir = temp_dir();
    let sharded = accounts(dir.path(), true).await;
    let first = transfer(&sharded, 0, 1).await;
    assert_eq!(records(dir.path(), 0), [(first.clone(), "commit".to_owned())]);
    assert!(sharded.atomic_recovery().unresolved().await.unwrap().is_empty());

    // The next transaction decided on s0 deletes it in the decision's local commit.
    let second = transfer(&sharded, 0, 2).await;
    assert_eq!(records(dir.path(), 0), [(second, "commit".to_owned())]);
    assert!(sharded.atomic_recovery().unresolved().await.unwrap().is_empty());

    // The resolver forgets it without finishing anything again.
    let resolution = sharded.atomic_recovery().resolve().await.unwrap();
    assert_eq!(resolution, AtomicResolution::default());
    assert!(records(dir.path(), 0).is_empty());
    assert_eq!(balances(&sharded).await, [98, 101, 101]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_left_by_a_crash_after_the_commit_is_forgotten_by_recovery() {
    let dir = temp_dir();
    let sharded = accounts(dir.path(), true).await;
    let id = transfer(&sharded, 1, 2).await;
    // The process ends before anything deletes the record: the queue was in its memory.
    drop(sharded);
    assert_eq!(records(dir.path(), 1), [(id.clone(), "commit".to_owned())]);

    let recovered = accounts(dir.path(), false).await;
    let unresolved = recovered.atomic_recovery().unresolved().await.unwrap();
    assert!(
        unresolved
            .iter()
            .all(|u| u.transaction_id == id && u.state == UnresolvedState::Commit),
        "{unresolved:?}"
    );
    let resolution = recovered.atomic_recovery().resolve().await.unwrap();
    assert_eq!(resolution, AtomicResolution::default(), "nothing was left to apply");
    assert!(records(dir.path(), 1).is_empty());
    assert!(recovered.atomic_recovery().unresolved().await.unwrap().is_empty());
    assert_eq!(balances(&recovered).await, [100, 99, 101]);
}
