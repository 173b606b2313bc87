//! Shard directories at scale in process: a mutation plus activation on a large directory reads,
//! checks and writes the changed entry, not the directory, and a client following the catalog
//! applies the changed entry to the map it serves instead of reading and indexing the directory
//! again.

use std::time::{Duration, Instant};

use crate::support::{seed_master, temp_dir, tenants_with_directory};
use shardlite::client::{ShardedClient, ShardedClientOptions};
use shardlite::data::{DirectoryLookup, DirectoryMutation, DirectoryOperation};
use shardlite::map::{EntryState, ShardingOptions};

const ENTRIES: usize = 20_000;

/// The reference fixture with the writable directory `orders_by_id` of `count` active entries.
fn large_directory(dir: &std::path::Path, count: usize) -> ShardingOptions {
    tenants_with_directory(dir, count, 100)
}

fn records_of_version(master: &std::path::Path, version: u64) -> i64 {
    let conn = rusqlite::Connection::open(master).unwrap();
    conn.query_row(
        "SELECT count(*) FROM shardlite_map_records WHERE map_version = ?1",
        [i64::try_from(version).unwrap()],
        |row| row.get(0),
    )
    .unwrap()
}

async fn upsert_activated(client: &ShardedClient, key: &str) -> u64 {
    let upsert = DirectoryMutation::new("orders_by_id", key)
        .route("tenants", "tenant-1")
        .activating();
    let result = client
        .directories()
        .mutate(DirectoryOperation::Upsert, &upsert)
        .await
        .unwrap();
    assert!(result.succeeded, "{result:?}");
    assert!(!result.requires_activation);
    result.pending_map_version.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mutation_on_a_large_directory_reads_and_indexes_only_the_changed_entry() {
    let dir = temp_dir();
    let master = seed_master(dir.path(), large_directory(dir.path(), ENTRIES)).await;
    // The writer serves what it activates: its own check of the catalog never runs here.
    let quiet = ShardedClientOptions {
        refresh_interval: Duration::from_secs(3600),
        ..ShardedClientOptions::default()
    };
    let writer = ShardedClient::open_with(&master, quiet).await.unwrap();
    let options = ShardedClientOptions {
        refresh_interval: Duration::from_millis(20),
        ..ShardedClientOptions::default()
    };
    let follower = ShardedClient::open_with(&master, options).await.unwrap();
    let followed_from = follower.map();
    upsert_activated(&writer, "NEW-0").await;
    let catalog = writer.catalog().master().unwrap();
    // The first mutation read the maps once; the next ones follow what each change wrote.
    let (read, served) = (catalog.maps_read_whole(), writer.map());
    let mut version = 0;
    for n in 1..=5 {
        version = upsert_activated(&writer, &format!("NEW-{n}")).await;
        assert_eq!(records_of_version(&master, version), 2, "the header and the entry");
    }
    assert_eq!(catalog.maps_read_whole(), read, "no mutation read the maps whole again");
    assert_eq!(writer.map().version(), version);
    assert!(
        writer.map().shares_directory_index(&served),
        "the writer indexed the directory again"
    );
    assert_eq!(writer.map().directory_entry_count("orders_by_id"), ENTRIES + 6);

    // The follower applies the changed entries to the map it served.
    let started = Instant::now();
    while follower.map().version() != version {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the follower did not follow"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let found = follower
        .directories()
        .resolve(&DirectoryLookup::new("orders_by_id", "NEW-5"))
        .await
        .unwrap();
    assert_eq!(found.entry.route_key, "tenant-1");
    assert!(
        follower.map().shares_directory_index(&followed_from),
        "the follower read and indexed the directory again"
    );
    assert_eq!(follower.map().directory_entry_count("orders_by_id"), ENTRIES + 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutations_followed_as_changes_leave_the_catalog_as_a_whole_read_says() {
    let dir = temp_dir();
    let master = seed_master(dir.path(), large_directory(dir.path(), 200)).await;
    let writer = ShardedClient::open(&master).await.unwrap();
    let directories = writer.directories();
    upsert_activated(&writer, "NEW-1").await;
    let stale = DirectoryMutation::new("orders_by_id", "SO-7").activating();
    assert!(
        directories
            .mutate(DirectoryOperation::MarkStale, &stale)
            .await
            .unwrap()
            .succeeded
    );
    let mut removal = DirectoryMutation::new("orders_by_id", "SO-3").activating();
    removal.remove_entry = true;
    assert!(
        directories
            .mutate(DirectoryOperation::Delete, &removal)
            .await
            .unwrap()
            .succeeded
    );
    // Pending, not activated: the next one is planned on the pending map.
    let reserve = DirectoryMutation::new("orders_by_id", "NEW-2").route("tenants", "tenant-2");
    let reserved = directories.mutate(DirectoryOperation::Reserve, &reserve).await.unwrap();
    assert!(reserved.requires_activation);
    let activate = DirectoryMutation::new("orders_by_id", "NEW-2").activating();
    assert!(
        directories
            .mutate(DirectoryOperation::Activate, &activate)
            .await
            .unwrap()
            .succeeded
    );
    // A duplicate ignoring case is refused, and nothing is written.
    let duplicate = DirectoryMutation::new("orders_by_id", "new-1").route("tenants", "tenant-1");
    let refused = directories
        .mutate(DirectoryOperation::Upsert, &duplicate)
        .await
        .unwrap();
    assert!(!refused.succeeded, "{refused:?}");
    assert!(refused.message.contains("more than once"), "{refused:?}");

    let reread = ShardedClient::open(&master).await.unwrap();
    assert_eq!(writer.map().options(), reread.map().options());
    assert_eq!(reread.map().directory_entry_count("orders_by_id"), 201);
    let state = |key: &str| reread.map().directory_entry("orders_by_id", key).map(|e| e.state);
    assert_eq!(state("SO-7"), Some(EntryState::Stale));
    assert_eq!(state("SO-3"), None);
    assert_eq!(state("NEW-2"), Some(EntryState::Active));
    assert_eq!(state("new-1"), None);
}
