//! A backup of more shards than one fence snapshots: an atomic transfer decided between two
//! batches makes the cut start over, so the restored keyspace holds the transfer whole, on both
//! of its shards, never half of it; the attempt that starts over reuses the copies already
//! stored of shards unchanged since. After three such starts the fence is held across the
//! batches, and a decision waits for the set.

use std::sync::Mutex;

use crate::support::many::pinned_tenants;
use crate::support::{route, seed_master, temp_dir};
use shardlite::backup::{BackupStep, SNAPSHOTS_PER_FENCE, create_backup, restore_backup};
use shardlite::client::{Params, ShardedClient, SqlData, Value};

async fn balance(sharded: &ShardedClient, tenant: &str) -> Value {
    sharded
        .for_route(route(tenant))
        .execute_read_only_sql("SELECT balance FROM accounts", Params::none())
        .await
        .unwrap()
        .rows[0][0]
        .clone()
}

/// Moves 10 from `t0` to `to` in one atomic transaction, on a runtime of its own.
fn transfer(sharded: &ShardedClient, to: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut transfer = sharded.begin_atomic();
        for (tenant, change) in [("t0", "- 10"), (to, "+ 10")] {
            transfer
                .execute(
                    &route(tenant),
                    &format!("UPDATE accounts SET balance = balance {change}"),
                    Params::none(),
                )
                .await
                .unwrap();
        }
        transfer.commit().await.unwrap();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_decided_between_two_batches_restarts_the_cut_and_is_restored_whole() {
    let shards = SNAPSHOTS_PER_FENCE + 8;
    let last = format!("t{}", shards - 1);
    let dir = temp_dir();
    let master = seed_master(dir.path(), pinned_tenants(shards, |i| format!("s{i}.db"))).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    for i in 0..shards {
        sharded
            .for_route(route(&format!("t{i}")))
            .execute_sql(
                "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)",
                Params::none(),
            )
            .await
            .unwrap();
        sharded
            .for_route(route(&format!("t{i}")))
            .execute_sql("INSERT INTO accounts (balance) VALUES (100)", Params::none())
            .await
            .unwrap();
    }

    // Once the first batch's fence is lifted, and before the second one, a transfer from the
    // first shard (in the first batch) to the last (in the second) commits.
    let seen = Mutex::new(Vec::new());
    let transferring = sharded.clone();
    let to = last.clone();
    let progress = |step: &BackupStep| {
        let first = seen.lock().unwrap().is_empty();
        seen.lock().unwrap().push(step.clone());
        if first && matches!(step, BackupStep::Cut { batch: 1, .. }) {
            let sharded = transferring.clone();
            let to = to.clone();
            std::thread::spawn(move || transfer(&sharded, &to)).join().unwrap();
        }
    };
    let place = temp_dir();
    let (path, manifest) = create_backup(&sharded, place.path(), &progress).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().any(|s| matches!(s, BackupStep::Restarted { attempt: 2 })),
        "{seen:#?}"
    );
    // The attempt that starts over references the first batch's copies, all but the shard the
    // transfer wrote, and still marks them copied by this set.
    let after_restart = seen
        .iter()
        .skip_while(|s| !matches!(s, BackupStep::Restarted { .. }))
        .find_map(|s| match s {
            BackupStep::Cut { unchanged, .. } => Some(*unchanged),
            _ => None,
        });
    assert_eq!(after_restart, Some(SNAPSHOTS_PER_FENCE - 1), "{seen:#?}");
    assert!(manifest.shards.iter().all(|s| s.copied), "{manifest:#?}");
    assert_eq!(manifest.shards.len(), shards);

    let target = temp_dir();
    let restored = restore_backup(&path, &target.path().join("keyspace")).await.unwrap();
    let restored = ShardedClient::open(&restored.master).await.unwrap();
    assert_eq!(balance(&restored, "t0").await, Value::Integer(90));
    assert_eq!(balance(&restored, &last).await, Value::Integer(110));
    assert_eq!(balance(&restored, "t1").await, Value::Integer(100));
}

/// A single-shard write on each of the `shards` shards (`touched` counts them), on a runtime
/// of its own.
fn touch_all(sharded: &ShardedClient, shards: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        for i in 0..shards {
            sharded
                .for_route(route(&format!("t{i}")))
                .execute_sql("UPDATE accounts SET touched = touched + 1", Params::none())
                .await
                .unwrap();
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_three_starts_the_fence_is_held_across_the_batches_and_a_decision_waits_for_the_set() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let shards = SNAPSHOTS_PER_FENCE + 8;
    let last = format!("t{}", shards - 1);
    let dir = temp_dir();
    let master = seed_master(dir.path(), pinned_tenants(shards, |i| format!("s{i}.db"))).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    for i in 0..shards {
        let client = sharded.for_route(route(&format!("t{i}")));
        client
            .execute_sql(
                "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, touched INTEGER NOT NULL DEFAULT 0)",
                Params::none(),
            )
            .await
            .unwrap();
        client
            .execute_sql("INSERT INTO accounts (balance) VALUES (100)", Params::none())
            .await
            .unwrap();
    }

    // A transfer decided after the first batch of each of the first three attempts makes the
    // cut start over each time; in the fourth the fence is held from the first batch to the
    // last, so the transfer begun after its first batch is decided only once the set is taken.
    let seen = Mutex::new(Vec::new());
    let first_batches = Mutex::new(0);
    let held_transfer = Mutex::new(None);
    let held_decided = Arc::new(AtomicBool::new(false));
    let decided_during_set = AtomicBool::new(false);
    let progress = |step: &BackupStep| {
        seen.lock().unwrap().push(step.clone());
        if held_decided.load(Ordering::SeqCst) {
            decided_during_set.store(true, Ordering::SeqCst);
        }
        if !matches!(step, BackupStep::Cut { batch: 1, .. }) {
            return;
        }
        let mut count = first_batches.lock().unwrap();
        *count += 1;
        let (sharded, to) = (sharded.clone(), last.clone());
        if *count <= 3 {
            // Every shard written too, so the next attempt snapshots more than one batch.
            std::thread::spawn(move || {
                touch_all(&sharded, shards);
                transfer(&sharded, &to);
            })
            .join()
            .unwrap();
        } else if *count == 4 {
            let decided = Arc::clone(&held_decided);
            *held_transfer.lock().unwrap() = Some(std::thread::spawn(move || {
                transfer(&sharded, &to);
                decided.store(true, Ordering::SeqCst);
            }));
        }
    };
    let place = temp_dir();
    let (path, manifest) = create_backup(&sharded, place.path(), &progress).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    let attempts: Vec<u32> = seen
        .iter()
        .filter_map(|s| match s {
            BackupStep::Restarted { attempt } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, [2, 3, 4], "{seen:#?}");
    assert!(
        !decided_during_set.load(Ordering::SeqCst),
        "the decision waited for the held fence: {seen:#?}"
    );
    held_transfer.lock().unwrap().take().unwrap().join().unwrap();
    assert!(held_decided.load(Ordering::SeqCst));
    assert_eq!(manifest.shards.len(), shards);

    // The set holds the three transfers decided before its cut, whole, and not the fourth.
    let target = temp_dir();
    let restored = restore_backup(&path, &target.path().join("keyspace")).await.unwrap();
    let restored = ShardedClient::open(&restored.master).await.unwrap();
    assert_eq!(balance(&restored, "t0").await, Value::Integer(70));
    assert_eq!(balance(&restored, &last).await, Value::Integer(130));
    assert_eq!(balance(&sharded, "t0").await, Value::Integer(60));
}
