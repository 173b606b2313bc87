//! Atomic transactions across shards in process: a transfer between accounts on different
//! shards commits on both or neither; a commit stalled after its decision refuses conflicting
//! writers with `row_locked` while other rows stay writable; a coordinator that stops after any
//! step of the protocol is finished by recovery with the total of balances unchanged and no lock
//! or intent left; bad input is refused with nothing half-applied.

use std::path::Path;
use std::time::Duration;

use crate::support::many::{balance, pinned_tenants};
use crate::support::{route, seed_master, temp_dir};
use shardlite::client::{AtomicStep, Params, ShardedClient, ShardedClientOptions, SqlData, UnresolvedState, Value};
use shardlite::engine::EngineConfig;
use shardlite::{Error, ErrorKind};

const SHARDS: usize = 8;

/// The sum of balances: 100 on each of the [`SHARDS`] accounts.
const TOTAL: i64 = 800;

/// Eight shards `s0`..`s7`, tenant `t{i}` on `s{i}`, each with an `accounts` table holding
/// account `i` with a balance of 100.
async fn accounts(dir: &Path, abandon_age: Duration) -> ShardedClient {
    let master = seed_master(
        dir,
        pinned_tenants(SHARDS, |i| dir.join(format!("s{i}.db")).display().to_string()),
    )
    .await;
    let options = ShardedClientOptions::with_engine(EngineConfig {
        atomic_abandon_age: abandon_age,
        ..EngineConfig::default()
    });
    let sharded = ShardedClient::open_with(&master, options).await.unwrap();
    for i in 0..SHARDS {
        let routed = sharded.for_route(route(&format!("t{i}")));
        routed
            .execute_sql(
                "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)",
                Params::none(),
            )
            .await
            .unwrap();
        routed
            .execute_sql(&format!("INSERT INTO accounts VALUES ({i}, 100)"), Params::none())
            .await
            .unwrap();
    }
    sharded
}

async fn total(sharded: &ShardedClient) -> i64 {
    let mut sum = 0;
    for i in 0..SHARDS {
        sum += balance(sharded, i).await;
    }
    sum
}

/// A transfer of `amount` from account `from` to account `to`, not yet committed.
async fn transfer(
    sharded: &ShardedClient,
    from: usize,
    to: usize,
    amount: i64,
) -> shardlite::client::AtomicTransaction {
    let mut tx = sharded.begin_atomic();
    tx.execute(
        &route(&format!("t{from}")),
        &format!("UPDATE accounts SET balance = balance - {amount} WHERE id = {from}"),
        Params::none(),
    )
    .await
    .unwrap();
    tx.execute(
        &route(&format!("t{to}")),
        &format!("UPDATE accounts SET balance = balance + {amount} WHERE id = {to}"),
        Params::none(),
    )
    .await
    .unwrap();
    tx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_commits_on_both_shards_and_leaves_nothing_behind() {
    let dir = temp_dir();
    let sharded = accounts(dir.path(), Duration::from_secs(30)).await;
    let tx = transfer(&sharded, 0, 1, 30).await;
    assert_eq!(tx.participants(), ["s0", "s1"]);
    tx.commit().await.unwrap();
    assert_eq!((balance(&sharded, 0).await, balance(&sharded, 1).await), (70, 130));
    assert!(sharded.atomic_recovery().unresolved().await.unwrap().is_empty());

    // Dropped without a commit, it rolls back; so does an explicit rollback.
    drop(transfer(&sharded, 0, 1, 5).await);
    transfer(&sharded, 2, 3, 5).await.rollback().await.unwrap();
    assert_eq!(total(&sharded).await, TOTAL);
    assert_eq!((balance(&sharded, 0).await, balance(&sharded, 2).await), (70, 100));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shard_takes_the_plain_commit_and_writes_no_atomic_table() {
    let dir = temp_dir();
    let sharded = accounts(dir.path(), Duration::from_secs(30)).await;
    let mut tx = sharded.begin_atomic();
    tx.execute(
        &route("t4"),
        "UPDATE accounts SET balance = 1 WHERE id = 4",
        Params::none(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(balance(&sharded, 4).await, 1);
    let tables = sharded
        .for_route(route("t4"))
        .execute_sql(
            "SELECT count(*) FROM sqlite_master WHERE name LIKE '_shardlite_atomic%'",
            Params::none(),
        )
        .await
        .unwrap();
    assert_eq!(tables.rows[0][0], Value::Integer(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_commit_refuses_conflicting_writers_and_lets_others_through() {
    let dir = temp_dir();
    let sharded = accounts(dir.path(), Duration::from_secs(30)).await;
    sharded
        .for_route(route("t1"))
        .execute_sql("INSERT INTO accounts VALUES (101, 7)", Params::none())
        .await
        .unwrap();
    let mut tx = transfer(&sharded, 0, 1, 30).await;
    tx.commit_until(Some(AtomicStep::Decided)).await.unwrap();

    let s1 = sharded.for_route(route("t1"));
    let err = s1
        .execute_sql("UPDATE accounts SET balance = 0 WHERE id = 1", Params::none())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::RowLocked { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::RowLocked);
    s1.execute_sql("UPDATE accounts SET balance = 8 WHERE id = 101", Params::none())
        .await
        .expect("a row no transaction holds, on the same shard");
    assert_eq!(balance(&sharded, 1).await, 100, "readers see the last committed value");
    assert_eq!(
        balance(&sharded, 0).await,
        70,
        "the first participant applied with the decision"
    );

    let unresolved = sharded.atomic_recovery().unresolved().await.unwrap();
    assert!(
        unresolved
            .iter()
            .any(|u| u.state == UnresolvedState::Commit && u.participants == ["s0", "s1"]),
        "{unresolved:?}"
    );
    let resolution = sharded.atomic_recovery().resolve().await.unwrap();
    assert_eq!(resolution.committed, 1, "{resolution:?}");
    assert_eq!((balance(&sharded, 0).await, balance(&sharded, 1).await), (70, 130));
    assert!(sharded.atomic_recovery().unresolved().await.unwrap().is_empty());
    s1.execute_sql("UPDATE accounts SET balance = 131 WHERE id = 1", Params::none())
        .await
        .expect("the lock is released");
}

/// Stops a three-shard transfer after `step`, as a coordinator that died there would, then
/// recovers with a client whose abandon age has passed; returns whether the transfer landed.
async fn stop_and_recover(step: AtomicStep) -> bool {
    let dir = temp_dir();
    let sharded = accounts(dir.path(), Duration::from_secs(30)).await;
    let mut tx = transfer(&sharded, 0, 1, 10).await;
    tx.execute(
        &route("t2"),
        "UPDATE accounts SET balance = balance + 0 WHERE id = 2",
        Params::none(),
    )
    .await
    .unwrap();
    tx.commit_until(Some(step)).await.unwrap();
    drop(tx);
    drop(sharded);
    let master = dir.path().join("master.db");
    let options = ShardedClientOptions::with_engine(EngineConfig {
        atomic_abandon_age: Duration::ZERO,
        ..EngineConfig::default()
    });
    let recovered = ShardedClient::open_with(&master, options).await.unwrap();
    recovered.atomic_recovery().resolve().await.unwrap();
    assert!(
        recovered.atomic_recovery().unresolved().await.unwrap().is_empty(),
        "after {step:?}"
    );
    assert_eq!(total(&recovered).await, TOTAL, "after {step:?}");
    for i in 0..3 {
        recovered
            .for_route(route(&format!("t{i}")))
            .execute_sql(
                &format!("UPDATE accounts SET balance = balance WHERE id = {i}"),
                Params::none(),
            )
            .await
            .unwrap_or_else(|err| panic!("after {step:?}, account {i} is still locked: {err}"));
    }
    balance(&recovered, 0).await == 90
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_finishes_a_coordinator_stopped_after_every_step() {
    for (step, lands) in [
        (AtomicStep::DecisionCreated, false),
        (AtomicStep::PreparedBeforeRecord(1), false),
        (AtomicStep::PreparedBeforeRecord(2), false),
        (AtomicStep::Prepared(1), false),
        (AtomicStep::Prepared(2), false),
        (AtomicStep::Decided, true),
        (AtomicStep::Applied(1), true),
        (AtomicStep::Applied(2), true),
    ] {
        assert_eq!(stop_and_recover(step).await, lands, "after {step:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_commit_loses_to_presumed_abort() {
    let dir = temp_dir();
    let sharded = accounts(dir.path(), Duration::ZERO).await;
    let mut tx = transfer(&sharded, 0, 1, 10).await;
    tx.commit_until(Some(AtomicStep::DecisionCreated)).await.unwrap();
    sharded.atomic_recovery().resolve().await.unwrap();
    assert_eq!((balance(&sharded, 0).await, balance(&sharded, 1).await), (100, 100));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_and_nothing_is_half_applied() {
    let dir = temp_dir();
    let sharded = accounts(dir.path(), Duration::from_secs(30)).await;
    let mut tx = transfer(&sharded, 0, 1, 10).await;
    tx.commit_until(None).await.unwrap();
    let err = tx.execute(&route("t0"), "SELECT 1", Params::none()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "execute after commit: {err:?}");
    let err = tx.commit_until(None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "commit twice: {err:?}");
    assert_eq!((balance(&sharded, 0).await, balance(&sharded, 1).await), (90, 110));

    for text in ["", "csdbatomic:nope", "csdbshard:1:s0:x"] {
        let err = text.parse::<shardlite::transaction::AtomicTransactionId>().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{text}");
    }

    // A statement that fails leaves the transaction to roll back: nothing lands anywhere.
    let mut tx = transfer(&sharded, 2, 3, 10).await;
    let err = tx
        .execute(&route("t4"), "INSERT INTO missing VALUES (1)", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Sql);
    drop(tx);
    assert_eq!((balance(&sharded, 2).await, balance(&sharded, 3).await), (100, 100));
}

#[test]
fn the_blocking_client_commits_a_transfer_atomically() {
    let dir = temp_dir();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    drop(runtime.block_on(accounts(dir.path(), Duration::from_secs(30))));
    drop(runtime);
    let sharded = shardlite::client::blocking::ShardedClient::open(dir.path().join("master.db")).unwrap();
    let mut tx = sharded.begin_atomic();
    tx.execute(
        &route("t5"),
        "UPDATE accounts SET balance = balance - 1 WHERE id = 5",
        Params::none(),
    )
    .unwrap();
    tx.execute(
        &route("t6"),
        "UPDATE accounts SET balance = balance + 1 WHERE id = 6",
        Params::none(),
    )
    .unwrap();
    assert_eq!(tx.participants(), ["s5", "s6"]);
    tx.commit().unwrap();
    let read = |i: usize| {
        sharded
            .for_route(route(&format!("t{i}")))
            .execute_sql(&format!("SELECT balance FROM accounts WHERE id = {i}"), Params::none())
            .unwrap()
            .rows[0][0]
            .clone()
    };
    assert_eq!((read(5), read(6)), (Value::Integer(99), Value::Integer(101)));
    drop(sharded.begin_atomic());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_move_refuses_a_key_with_a_prepared_transaction_until_it_is_finished() {
    use crate::support::migrate::{fill, key_request, migration_master, other, two_keys_on_one_shard};
    use shardlite::data::ReshardStatus;
    use shardlite::reshard::Resharder;

    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let (moving, staying, source) = two_keys_on_one_shard(&sharded);
    let destination = other(&source);
    fill(&sharded, &moving, 1, 5).await;
    fill(&sharded, &staying, 1, 5).await;
    let elsewhere = if source == "s0" { "tenant-b" } else { "tenant-a" };
    fill(&sharded, elsewhere, 1, 1).await;
    // The moving key's shard is the second participant: the first applies with the decision,
    // the second holds its locks until it is finished.
    let mut tx = sharded.begin_atomic();
    tx.execute(&route(elsewhere), "UPDATE items SET n = n - 100", Params::none())
        .await
        .unwrap();
    tx.execute(
        &route(&moving),
        "UPDATE items SET n = n + 100 WHERE tenant = ?1",
        Params::from(vec![moving.as_str()]),
    )
    .await
    .unwrap();
    tx.commit_until(Some(AtomicStep::Decided)).await.unwrap();

    let refused = Resharder::new(sharded.clone())
        .migrate(key_request(&moving, destination, 50))
        .await;
    // The cutover's fence meets the locked rows: the move stops with the map unchanged.
    let refused = refused.unwrap();
    assert_eq!(refused.status, ReshardStatus::Failed, "{refused:#?}");
    assert!(
        refused.message.contains("locked by an atomic transaction"),
        "{}",
        refused.message
    );
    sharded.atomic_recovery().resolve().await.unwrap();
    let moved = Resharder::new(sharded.clone())
        .migrate(key_request(&moving, destination, 50))
        .await
        .unwrap();
    assert_eq!(moved.status, ReshardStatus::Activated, "{moved:#?}");
    let n = sharded
        .for_route(route(&moving))
        .execute_sql(
            "SELECT min(n) FROM items WHERE tenant = ?1",
            Params::from(vec![moving.as_str()]),
        )
        .await
        .unwrap();
    assert_eq!(n.rows[0][0], Value::Integer(101), "the committed values moved");
}
