//! The master file keeps maps as records: a large map through the store conformance checks, a
//! change that writes only the records it changes, and a master written as one JSON document
//! per map (schema version 1) read and migrated on open.

use crate::support::large_catalog::{acknowledged, large_map_conformance, large_options, with_one_more_pin};
use crate::support::{path_str, temp_dir, tenants_options, with_third_shard};
use shardlite::catalog::{CATALOG_SCHEMA_VERSION, Catalog};
use shardlite::client::ShardedClient;
use shardlite::data::CatalogUpdateRequest;

fn count(master: &std::path::Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(master).unwrap();
    conn.query_row(sql, [], |row| row.get(0)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_map_passes_the_store_checks_in_a_master_file() {
    let dir = temp_dir();
    let master = dir.path().join("master.db");
    large_map_conformance(&path_str(&master), 2_000, 20_000).await;
    // Version 2 wrote its header and its pin; version 3 its header and one shard.
    let written = |version: i64| {
        count(
            &master,
            &format!("SELECT count(*) FROM shardlite_map_records WHERE map_version = {version}"),
        )
    };
    assert_eq!((written(2), written(3)), (2, 2));
    assert_eq!(written(1), 1 + 2_000 + 2_000 + 20_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_changes_grow_a_master_file_by_their_records_not_by_copies_of_the_map() {
    let dir = temp_dir();
    let master = dir.path().join("master.db");
    let catalog = Catalog::open(&master).await.unwrap();
    let mut map = large_options(100, 3_000);
    catalog.seed(map.clone(), false).await.unwrap();
    let size = || {
        count(
            &master,
            "SELECT (page_count - freelist_count) * page_size FROM pragma_page_count, pragma_freelist_count, pragma_page_size",
        )
    };
    let before = size();
    for version in 1..=20 {
        let next = with_one_more_pin(&map);
        let mut next = next;
        next.exact_key_pins.remove("tenant-new");
        next.exact_key_pins
            .insert(format!("tenant-new-{version}"), "s2".to_owned());
        let applied = catalog
            .apply_update(acknowledged(
                CatalogUpdateRequest::new(next.clone()).expecting_version(version),
            ))
            .await
            .unwrap();
        assert!(applied.applied, "{:?}", applied.validation.issues);
        catalog
            .activate_pending(&shardlite::data::ActivationRequest::new(version + 1))
            .await
            .unwrap();
        map = next;
    }
    assert_eq!(catalog.active_options().await.unwrap().as_ref(), Some(&map));
    let grown = size() - before;
    // A copy of this map per version would be 20 x ~150 KB; records are a few hundred bytes each.
    assert!(
        grown < 256 * 1024,
        "20 one-pin changes grew the master by {grown} bytes"
    );
}

/// The tables and rows of a master written by the release before records (schema version 1).
const DOCUMENT_SCHEMA: &str = "
CREATE TABLE shardlite_catalog_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE shardlite_active_map (slot INTEGER PRIMARY KEY CHECK (slot = 1), keyspace TEXT NOT NULL,
    map_version INTEGER NOT NULL, map_json TEXT NOT NULL, updated_utc TEXT NOT NULL);
CREATE TABLE shardlite_pending_map (slot INTEGER PRIMARY KEY CHECK (slot = 1), keyspace TEXT NOT NULL,
    map_version INTEGER NOT NULL, map_json TEXT NOT NULL, written_utc TEXT NOT NULL);
CREATE TABLE shardlite_catalog_history (entry_id INTEGER PRIMARY KEY AUTOINCREMENT, applied_utc TEXT NOT NULL,
    keyspace TEXT NOT NULL, map_version INTEGER NOT NULL, operator TEXT, comment TEXT,
    metadata_only_ownership_change INTEGER NOT NULL DEFAULT 0);
CREATE TABLE shardlite_migration_checkpoints (migration_id TEXT PRIMARY KEY, updated_utc TEXT NOT NULL,
    keyspace TEXT NOT NULL, status TEXT NOT NULL, payload_json TEXT NOT NULL);
CREATE TABLE shardlite_migration_runners (migration_id TEXT PRIMARY KEY, pid INTEGER NOT NULL,
    process_start TEXT NOT NULL, since_utc TEXT NOT NULL);
CREATE TABLE shardlite_migration_history (entry_id INTEGER PRIMARY KEY AUTOINCREMENT, completed_utc TEXT NOT NULL,
    keyspace TEXT NOT NULL, migration_id TEXT NOT NULL, payload_json TEXT NOT NULL);
INSERT INTO shardlite_catalog_meta VALUES ('schema_version', '1');
INSERT INTO shardlite_catalog_history (applied_utc, keyspace, map_version, operator, comment)
    VALUES ('2026-01-01T00:00:00Z', 'tenants', 1, 'seed', 'seeded the active map'),
           ('2026-01-02T00:00:00Z', 'tenants', 2, 'ada', 'a third shard');
";

#[tokio::test]
async fn a_master_written_as_one_document_per_map_is_read_and_migrated_on_open() {
    let dir = temp_dir();
    let master = dir.path().join("master.db");
    let (active, pending) = (tenants_options(dir.path()), with_third_shard(dir.path()));
    for shard in ["s0.db", "s1.db", "s2.db"] {
        rusqlite::Connection::open(dir.path().join(shard)).unwrap();
    }
    {
        let conn = rusqlite::Connection::open(&master).unwrap();
        conn.execute_batch(DOCUMENT_SCHEMA).unwrap();
        conn.execute(
            "INSERT INTO shardlite_active_map VALUES (1, 'tenants', 1, ?1, '2026-01-01T00:00:00Z')",
            [active.to_json()],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO shardlite_pending_map VALUES (1, 'tenants', 2, ?1, '2026-01-02T00:00:00Z')",
            [pending.to_json()],
        )
        .unwrap();
    }

    let catalog = Catalog::open(&master).await.unwrap();
    assert_eq!(catalog.active_options().await.unwrap().as_ref(), Some(&active));
    assert_eq!(catalog.pending_options().await.unwrap().as_ref(), Some(&pending));
    let history = catalog.history().await.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].audit.operator.as_deref(), Some("ada"));
    assert_eq!(
        count(
            &master,
            "SELECT count(*) FROM sqlite_master WHERE name IN ('shardlite_active_map', 'shardlite_pending_map')"
        ),
        0
    );
    assert_eq!(
        count(
            &master,
            "SELECT CAST(value AS INTEGER) FROM shardlite_catalog_meta WHERE key = 'schema_version'"
        ),
        CATALOG_SCHEMA_VERSION
    );
    // Opening it again changes nothing; a router serves the migrated map.
    drop(catalog);
    let sharded = ShardedClient::open(&master).await.unwrap();
    assert_eq!(sharded.map().options(), &active);
    let catalog = Catalog::open(&master).await.unwrap();
    assert_eq!(catalog.pending_options().await.unwrap().as_ref(), Some(&pending));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_of_a_large_map_writes_the_records_it_changes() {
    let dir = temp_dir();
    let master = dir.path().join("master.db");
    let catalog = Catalog::open(&master).await.unwrap();
    let map = large_options(200, 5_000);
    catalog.seed(map.clone(), false).await.unwrap();
    let patch = shardlite::map::MapPatch::from_json(
        r#"{"mapVersion": 2, "exactKeyPins": {"tenant-new": "s3", "tenant-7": null},
            "shards": {"s5": {"endpoint": "http://127.0.0.1:29999"}}}"#,
    )
    .unwrap();
    let applied = catalog
        .apply_update(acknowledged(CatalogUpdateRequest::new(patch).expecting_version(1)))
        .await
        .unwrap();
    assert!(applied.applied, "{:?}", applied.validation.issues);
    let mut expected = map;
    expected.map_version = 2;
    expected.exact_key_pins.insert("tenant-new".into(), "s3".into());
    expected.exact_key_pins.remove("tenant-7");
    expected.shards[5].endpoint = Some("http://127.0.0.1:29999".into());
    assert_eq!(catalog.pending_options().await.unwrap().as_ref(), Some(&expected));
    assert_eq!(
        count(
            &master,
            "SELECT count(*) FROM shardlite_map_records WHERE map_version = 2"
        ),
        4,
        "the header, two pins and one shard"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_reads_again_a_map_another_seeded_at_the_same_version() {
    let dir = temp_dir();
    let master = dir.path().join("master.db");
    let first = Catalog::open(&master).await.unwrap();
    let map = large_options(8, 10);
    first.seed(map.clone(), false).await.unwrap();
    let checked = first
        .validate_update(&acknowledged(CatalogUpdateRequest::new(with_one_more_pin(&map))))
        .await
        .unwrap();
    assert!(checked.valid, "{:?}", checked.issues);
    let read = first.maps_read_whole();
    // Another handle seeds a map without pins, at the same version.
    let mut reseeded = map.clone();
    reseeded.exact_key_pins.clear();
    Catalog::open(&master)
        .await
        .unwrap()
        .seed(reseeded.clone(), true)
        .await
        .unwrap();
    // The first handle compares with the map now stored, not the one it held: no pin moves.
    let mut next = reseeded;
    next.map_version = 2;
    let checked = first
        .validate_update(&acknowledged(CatalogUpdateRequest::new(next)))
        .await
        .unwrap();
    assert!(checked.valid, "{:?}", checked.issues);
    assert!(checked.moved_pins.is_empty(), "{:?}", checked.moved_pins);
    assert_eq!(first.maps_read_whole(), read + 1);
}
