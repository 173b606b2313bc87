//! A backup of more shards than one fence snapshots: an atomic transfer decided between two
//! batches makes the cut start over, so the restored keyspace holds the transfer whole, on both
//! of its shards, never half of it; the attempt that starts over reuses the copies already
//! stored of shards unchanged since.

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
