//! Data moves carry directory entries with them: a key move (online and offline) and a
//! bucket-range move point the moving routes' entries at the destination with the new map
//! version, a `Deleted` entry names the new shard but keeps its version, and entries of routes
//! that stay keep theirs.

use crate::support::migrate::{
    add_directory, directory_entry, fill, key_in_bucket, key_request, manifest, migration_master, other, owner,
    two_keys_on_one_shard,
};
use crate::support::temp_dir;
use shardlite::client::ShardedClient;
use shardlite::data::{DirectoryLookup, ReshardRequest, ReshardStatus};
use shardlite::reshard::Resharder;

async fn key_move_rewrites_the_moving_entries(online: bool) {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let (moving, staying, source) = two_keys_on_one_shard(&sharded);
    let destination = other(&source);
    fill(&sharded, &moving, 1, 50).await;
    add_directory(&sharded, &[&moving, &staying]).await;
    assert_eq!(sharded.map().version(), 2);

    let mut request = key_request(&moving, destination, 20);
    request.online = online;
    let result = Resharder::new(sharded.clone()).migrate(request).await.unwrap();
    assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");
    assert_eq!(result.pending_map_version, Some(3));

    let (dest, source) = (destination.to_owned(), source.clone());
    let active = |shard: &String, version| (shard.clone(), version, "Active".to_owned());
    for client in [sharded.clone(), ShardedClient::open(&master).await.unwrap()] {
        assert_eq!(directory_entry(&client, &format!("SO-{moving}")), active(&dest, 3));
        assert_eq!(
            directory_entry(&client, &format!("gone-{moving}")),
            (dest.clone(), 2, "Deleted".to_owned())
        );
        assert_eq!(directory_entry(&client, &format!("SO-{staying}")), active(&source, 2));
        assert_eq!(
            directory_entry(&client, &format!("gone-{staying}")),
            (source.clone(), 2, "Deleted".to_owned())
        );
        let found = client
            .directories()
            .resolve(&DirectoryLookup::new("orders_by_id", format!("SO-{moving}")))
            .await
            .unwrap();
        assert_eq!(found.route_resolution.shard_id, dest);
        assert_eq!(found.route_resolution.map_version, 3);
    }
}

#[tokio::test]
async fn an_online_key_move_points_the_moving_entries_at_the_destination() {
    key_move_rewrites_the_moving_entries(true).await;
}

#[tokio::test]
async fn an_offline_key_move_points_the_moving_entries_at_the_destination() {
    key_move_rewrites_the_moving_entries(false).await;
}

#[tokio::test]
async fn a_bucket_range_move_rewrites_its_entries_and_leaves_a_pinned_keys_entry() {
    let dir = temp_dir();
    let mut options = crate::support::tenants_options(dir.path());
    let pinned = key_in_bucket(0, "pinned");
    options.exact_key_pins.insert(pinned.clone(), "s0".into());
    let master = crate::support::seed_master(dir.path(), options).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    sharded
        .query()
        .execute_all(
            "CREATE TABLE items (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER, amount REAL, data BLOB)",
        )
        .await
        .unwrap();
    let mover = key_in_bucket(0, "mover");
    let stayer = key_in_bucket(1, "stayer");
    for key in [&mover, &pinned, &stayer] {
        fill(&sharded, key, 1, 10).await;
        assert_eq!(owner(&sharded, key), "s0");
    }
    add_directory(&sharded, &[&mover, &pinned, &stayer]).await;

    let result = Resharder::new(sharded.clone())
        .migrate(
            ReshardRequest::bucket_range("tenants", "s0", 0..1, "s1", manifest(7))
                .expecting_map_version(2)
                .activate()
                .delete_source(),
        )
        .await
        .unwrap();
    assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");

    let active = |shard: &str, version| (shard.to_owned(), version, "Active".to_owned());
    assert_eq!(directory_entry(&sharded, &format!("SO-{mover}")), active("s1", 3));
    assert_eq!(
        directory_entry(&sharded, &format!("gone-{mover}")),
        ("s1".to_owned(), 2, "Deleted".to_owned())
    );
    assert_eq!(directory_entry(&sharded, &format!("SO-{pinned}")), active("s0", 2));
    assert_eq!(directory_entry(&sharded, &format!("SO-{stayer}")), active("s0", 2));
}
