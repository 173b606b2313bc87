//! An online move whose destination differs from the snapshot of the source it is compared with:
//! the keys that differ are written again from the snapshot and compared once more, so the move
//! activates with the source's rows; a moving row that was on the destination before the move is
//! not the move's to remove (see `migrations::abandoning_releases_the_fence_and_keeps_the_map`).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::support::migrate::{fill, items_on, key_request, migration_master, other, owner, two_keys_on_one_shard};
use crate::support::temp_dir;
use shardlite::client::ShardedClient;
use shardlite::data::{ReshardPhase, ReshardStatus};
use shardlite::reshard::Resharder;

#[tokio::test]
async fn a_destination_row_changed_behind_an_online_move_is_copied_again_and_the_move_activates() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let (moving, _, source) = two_keys_on_one_shard(&sharded);
    let destination = other(&source).to_owned();
    fill(&sharded, &moving, 1, 300).await;
    let before = items_on(&sharded, &source, &moving).await;
    let destination_file = dir.path().join(format!("{destination}.db"));
    let (first_id, last_id) = (format!("{moving}-00000001"), format!("{moving}-00000300"));
    let tampered = AtomicBool::new(false);
    let migrator = Resharder::new(sharded.clone()).with_observer(move |progress| {
        // Once the copy is done, before the comparison with the snapshot: one copied row is
        // changed and another removed on the destination, behind the move's back.
        if progress.phase == ReshardPhase::CatchingUp && !tampered.swap(true, Ordering::SeqCst) {
            let conn = rusqlite::Connection::open(&destination_file).unwrap();
            conn.execute("UPDATE items SET n = -1 WHERE id = ?1", [&first_id])
                .unwrap();
            conn.execute("DELETE FROM items WHERE id = ?1", [&last_id]).unwrap();
        }
    });

    let result = migrator.migrate(key_request(&moving, &destination, 50)).await.unwrap();

    assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");
    assert!(result.receipts.iter().all(|receipt| receipt.verified), "{result:#?}");
    assert_eq!(owner(&sharded, &moving), destination);
    assert_eq!(items_on(&sharded, &destination, &moving).await, before);
}
