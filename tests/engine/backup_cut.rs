//! Backup sets taken again and again while a route key's rows move to another shard and the
//! new map is activated: each set, restored, holds the key's rows exactly once through the
//! keyspace, all on the shard its map names, whether its cut fell before or after activation.

use crate::support::migrate::{fill, items_on, key_request, migration_master, other, owner};
use crate::support::{route, temp_dir};
use shardlite::backup::{create_backup, restore_backup};
use shardlite::client::{Params, ShardedClient, SqlData, Value};
use shardlite::data::ReshardStatus;
use shardlite::reshard::Resharder;

const ROWS: i64 = 400;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_moved_during_backups_is_restored_exactly_once() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let key = "tenant-moving";
    fill(&sharded, key, 1, ROWS).await;
    let from = owner(&sharded, key);
    let to = other(&from).to_owned();

    let migrator = Resharder::new(sharded.clone());
    let mut moving = tokio::spawn(async move { migrator.migrate(key_request(key, &to, 20)).await });
    let place = temp_dir();
    let mut sets = Vec::new();
    loop {
        sets.push(create_backup(&sharded, place.path(), &|_| {}).await.unwrap());
        if moving.is_finished() {
            break;
        }
    }
    let moved = (&mut moving).await.unwrap().unwrap();
    assert_eq!(moved.status, ReshardStatus::Activated, "{moved:#?}");
    // One more set after the move: its cut is after activation.
    sets.push(create_backup(&sharded, place.path(), &|_| {}).await.unwrap());
    assert!(sets.first().unwrap().1.map_version < sets.last().unwrap().1.map_version);

    let target = temp_dir();
    for (n, (manifest_path, manifest)) in sets.iter().enumerate() {
        let restored = restore_backup(manifest_path, &target.path().join(format!("r{n}")))
            .await
            .unwrap();
        let restored = ShardedClient::open(&restored.master).await.unwrap();
        assert_eq!(restored.map().version(), manifest.map_version);
        let count = restored
            .for_route(route(key))
            .execute_read_only_sql("SELECT count(*) FROM items WHERE tenant = ?1", Params::from(vec![key]))
            .await
            .unwrap();
        assert_eq!(
            count.rows[0][0],
            Value::Integer(ROWS),
            "set {n} (map version {})",
            manifest.map_version
        );
        let holder = owner(&restored, key);
        assert_eq!(items_on(&restored, &holder, key).await.0, ROWS, "set {n}");
    }
}
