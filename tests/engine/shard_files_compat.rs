//! Shard files stay ordinary SQLite files: after every kind of migration (an exact key or a
//! bucket range; finished, pending activation, failed and abandoned) an older SQLite than the
//! bundled one (Debian's `sqlite3`) opens both shard files, reads every table and writes rows that
//! did not move; moved records and their triggers are gone after their grace period; and a file
//! carrying the fence triggers of an earlier release (which older SQLite cannot parse) is
//! repaired when shardlite opens it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::migrate::{
    allow_item, fill, key_request, manifest, migration_master, other, owner, refuse_item, two_keys_on_one_shard,
};
use crate::support::old_sqlite::{self, read_every_table, shardlite_capture_objects, shardlite_fence_objects};
use crate::support::route;
use crate::support::temp_dir;
use shardlite::client::{Params, ShardedClient, ShardedClientOptions, SqlData};
use shardlite::data::{ReshardRequest, ReshardStatus};
use shardlite::engine::{Database, EngineConfig};
use shardlite::reshard::Resharder;
use shardlite::routing::{bucket_for_token, route_token};
use shardlite::{Error, ErrorKind};

fn client_options(grace: Duration) -> ShardedClientOptions {
    ShardedClientOptions::with_engine(EngineConfig {
        moved_record_grace: grace,
        ..EngineConfig::default()
    })
}

fn shard_file(dir: &Path, shard: &str) -> PathBuf {
    dir.join(format!("{shard}.db"))
}

fn insert_item(id: &str, tenant: &str) -> String {
    format!("INSERT INTO items (id, tenant, n) VALUES ('{id}', '{tenant}', 1)")
}

/// Waits (bounded) until `file` holds no fence trigger or fence table.
fn wait_until_no_fence_objects(file: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = shardlite_fence_objects(file);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "fence objects still in {} after their grace: {left:?}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_key_moves_old_sqlite_reads_both_files_and_the_moved_record_goes_after_its_grace() {
    let version = old_sqlite::version();
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open_with(&master, client_options(Duration::from_secs(600)))
        .await
        .unwrap();
    let (moving, staying, source) = two_keys_on_one_shard(&sharded);
    let destination = other(&source);
    fill(&sharded, &moving, 1, 120).await;
    fill(&sharded, &staying, 1, 5).await;
    let result = Resharder::new(sharded.clone())
        .migrate(key_request(&moving, destination, 50))
        .await
        .unwrap();
    assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");

    let (source_file, destination_file) = (shard_file(dir.path(), &source), shard_file(dir.path(), destination));
    for file in [&source_file, &destination_file] {
        let tables = read_every_table(file);
        assert!(tables.contains(&"items".to_owned()), "{version}: {tables:?}");
    }
    // The moved record is in force, in every SQLite: a plain tool writes rows that did not
    // move, and is refused a row of the moved key.
    assert!(!shardlite_fence_objects(&source_file).is_empty());
    old_sqlite::run(&source_file, &insert_item("plain-staying", &staying)).expect("a row that did not move");
    let refused = old_sqlite::run(&source_file, &insert_item("plain-moving", &moving)).unwrap_err();
    assert!(refused.contains("shardlite route_fenced"), "{refused}");
    old_sqlite::run(&destination_file, &insert_item("plain-moved", &moving)).expect("the destination takes it");
    // shardlite still maps the trigger's message to route_fenced with its details.
    let write = sharded
        .for_shard_id(&source)
        .unwrap()
        .execute_sql(&insert_item("late", &moving), Params::none())
        .await
        .unwrap_err();
    match &write {
        Error::RouteFenced(fenced) => {
            assert_eq!(
                (fenced.route_value.as_str(), fenced.destination.as_str(), fenced.moved),
                (moving.as_str(), destination, true)
            );
            assert_eq!(fenced.migration_id, result.migration_id);
            assert_eq!(fenced.table, "table 'items'");
        }
        other => panic!("expected route_fenced, got {other:?}"),
    }
    assert!(write.to_string().contains("has moved to shard"), "{write}");
    drop(sharded);

    // A client whose grace is over removes the record, its triggers and the empty fence tables.
    let short = ShardedClient::open_with(&master, client_options(Duration::from_millis(200)))
        .await
        .unwrap();
    // Shard files open on first use; the check runs when the file opens and while it is open.
    short.query().read_all("SELECT 1").await.unwrap();
    wait_until_no_fence_objects(&source_file);
    old_sqlite::run(&source_file, &insert_item("plain-after-grace", &moving)).expect("no record left");
    drop(short);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_bucket_range_moves_old_sqlite_reads_both_files_and_writes_after_the_grace() {
    old_sqlite::version();
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open_with(&master, client_options(Duration::from_secs(600)))
        .await
        .unwrap();
    // Bucket 0 (of 4) moves from s0 to s1; bucket 1 stays on s0.
    let bucket = |key: &str| bucket_for_token(route_token("tenants", key).unwrap().0, 4);
    let keys: Vec<String> = (0..200).map(|i| format!("tenant-{i}")).collect();
    let moving = keys.iter().find(|k| bucket(k) == 0).unwrap().clone();
    let staying = keys.iter().find(|k| bucket(k) == 1).unwrap().clone();
    fill(&sharded, &moving, 1, 30).await;
    fill(&sharded, &staying, 1, 3).await;
    sharded
        .for_shard_id("s0")
        .unwrap()
        .execute_sql("CREATE TABLE notes (note TEXT)", Params::none())
        .await
        .unwrap();
    let result = Resharder::new(sharded.clone())
        .migrate(
            ReshardRequest::bucket_range("tenants", "s0", 0..1, "s1", manifest(10))
                .activate()
                .delete_source(),
        )
        .await
        .unwrap();
    assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");

    let source_file = shard_file(dir.path(), "s0");
    for file in [&source_file, &shard_file(dir.path(), "s1")] {
        read_every_table(file);
    }
    // A table the record does not cover is written as usual; the covered table's triggers
    // need shardlite's bucket function, so a plain tool cannot write it while the record stands
    // (as the README says).
    old_sqlite::run(&source_file, "INSERT INTO notes VALUES ('plain')").expect("an unfenced table");
    let refused = old_sqlite::run(&source_file, &insert_item("plain-staying", &staying)).unwrap_err();
    assert!(refused.contains("shardlite_bucket"), "{refused}");
    // shardlite writes the staying key and refuses the moved range, naming it.
    let source = sharded.for_shard_id("s0").unwrap();
    source
        .execute_sql(&insert_item("staying-late", &staying), Params::none())
        .await
        .unwrap();
    let write = source
        .execute_sql(&insert_item("moving-late", &moving), Params::none())
        .await
        .unwrap_err();
    assert_eq!(write.kind(), ErrorKind::RouteFenced);
    assert!(write.to_string().contains("buckets [0, 1)"), "{write}");
    drop((source, sharded));

    let short = ShardedClient::open_with(&master, client_options(Duration::from_millis(200)))
        .await
        .unwrap();
    // Shard files open on first use; the check runs when the file opens and while it is open.
    short.query().read_all("SELECT 1").await.unwrap();
    wait_until_no_fence_objects(&source_file);
    old_sqlite::run(&source_file, &insert_item("plain-after-grace", &staying)).expect("no record left");
    drop(short);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_key_fence_and_an_abandoned_migration_leave_files_old_sqlite_opens() {
    old_sqlite::version();
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let (moving, staying, source) = two_keys_on_one_shard(&sharded);
    let destination = other(&source);
    fill(&sharded, &moving, 1, 20).await;
    fill(&sharded, &staying, 1, 2).await;
    let source_file = shard_file(dir.path(), &source);
    let migrator = Resharder::new(sharded.clone());

    // A migration that fails before its map is written, then is abandoned: nothing is left.
    let other_key = (100..164)
        .map(|i| format!("key-{i}"))
        .find(|k| owner(&sharded, k) == source)
        .unwrap();
    fill(&sharded, &other_key, 1, 5).await;
    refuse_item(&sharded, destination, 3).await;
    let mut failing = key_request(&other_key, destination, 10);
    failing.migration_id = Some("will-fail".into());
    let failed = migrator.migrate(failing).await.unwrap();
    assert!(!failed.succeeded(), "{failed:#?}");
    read_every_table(&source_file);
    read_every_table(&shard_file(dir.path(), destination));
    migrator.abandon("will-fail").await.unwrap();
    read_every_table(&source_file);
    assert_eq!(
        shardlite_fence_objects(&source_file),
        Vec::<String>::new(),
        "nothing is left"
    );
    allow_item(&sharded, destination).await;

    // Pending activation: the fence holds, readable by the old SQLite.
    let mut pending = key_request(&moving, destination, 10);
    pending.activate = false;
    pending.delete_source = false;
    let result = migrator.migrate(pending).await.unwrap();
    assert_eq!(result.status, ReshardStatus::PendingActivation, "{result:#?}");
    read_every_table(&source_file);
    old_sqlite::run(&source_file, &insert_item("plain-staying", &staying)).expect("a row that did not move");
    let refused = old_sqlite::run(&source_file, &insert_item("plain-moving", &moving)).unwrap_err();
    assert!(refused.contains("shardlite route_fenced"), "{refused}");
    let write = sharded
        .for_route(route(&moving))
        .execute_sql(&insert_item("fenced", &moving), Params::none())
        .await
        .unwrap_err();
    assert!(write.to_string().contains("is fenced by migration"), "{write}");
}

/// The fence of an earlier release, as it wrote it: a trigger raising an expression.
const LEGACY_FENCE: &str = "
CREATE TABLE items (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER);
CREATE TABLE _shardlite_route_fences (
    migration_id TEXT PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('key', 'buckets')), keyspace TEXT NOT NULL,
    route_key TEXT, bucket_count INTEGER, start_bucket INTEGER, end_bucket INTEGER, destination TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('fenced', 'moved', 'open')), created_utc TEXT NOT NULL);
CREATE TABLE _shardlite_route_fence_pins (migration_id TEXT NOT NULL, route_key TEXT NOT NULL,
    PRIMARY KEY (migration_id, route_key)) WITHOUT ROWID;
CREATE TABLE _shardlite_route_fence_targets (migration_id TEXT NOT NULL, table_name TEXT NOT NULL,
    route_column TEXT NOT NULL, collection TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (migration_id, table_name, route_column, collection)) WITHOUT ROWID;
INSERT INTO _shardlite_route_fences VALUES ('old-move', 'key', '', 'gone', NULL, NULL, NULL, 's9', 'moved', '2026-01-01T00:00:00Z');
INSERT INTO _shardlite_route_fence_targets VALUES ('old-move', 'items', 'tenant', '');
CREATE TRIGGER _shardlite_fence_0_insert BEFORE INSERT ON items BEGIN
  SELECT RAISE(ABORT, 'shardlite route_fenced' || char(31) || (f.state = 'moved') || char(31) || f.migration_id
      || char(31) || f.destination || char(31) || 'table ''items''' || char(31) || coalesce(CAST(NEW.tenant AS TEXT), ''))
  FROM _shardlite_route_fences f JOIN _shardlite_route_fence_targets g ON g.migration_id = f.migration_id
  WHERE g.table_name = 'items' AND f.state IN ('fenced', 'moved') AND f.kind = 'key' AND f.route_key = NEW.tenant;
END;";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_with_an_earlier_releases_fence_triggers_is_repaired_when_opened() {
    old_sqlite::version();
    let dir = temp_dir();
    let file = dir.path().join("legacy.db");
    rusqlite::Connection::open(&file)
        .unwrap()
        .execute_batch(LEGACY_FENCE)
        .unwrap();
    let unreadable = old_sqlite::run(&file, "SELECT count(*) FROM items").unwrap_err();
    assert!(unreadable.contains("malformed database schema"), "{unreadable}");

    let database = Database::open(&file, "legacy", EngineConfig::default()).await.unwrap();
    assert_eq!(
        old_sqlite::run(&file, "SELECT count(*) FROM items").unwrap().trim(),
        "0"
    );
    read_every_table(&file);
    // The fence still holds, with its details, in shardlite and in the old SQLite.
    let refused = database
        .execute("INSERT INTO items VALUES ('x', 'gone', 1)", Params::none())
        .await
        .unwrap_err();
    match refused {
        Error::RouteFenced(fenced) => assert_eq!(
            (fenced.migration_id.as_str(), fenced.destination.as_str(), fenced.moved),
            ("old-move", "s9", true)
        ),
        other => panic!("expected route_fenced, got {other:?}"),
    }
    assert!(old_sqlite::run(&file, "INSERT INTO items VALUES ('y', 'gone', 1)").is_err());
    old_sqlite::run(&file, "INSERT INTO items VALUES ('z', 'kept', 1)").expect("other keys are written");
}

/// While an online migration captures changes (here: stopped in its copy, the capture in
/// force), an older SQLite opens the source (so it parses every capture trigger), reads every
/// table, and writes rows of the moving key that the capture records and the resume carries
/// over; a bucket range's capture, which calls shardlite's bucket function, leaves its tables
/// readable. Nothing of the capture stays in either file once the migration ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_sqlite_reads_and_writes_through_capture_triggers_and_none_remain() {
    old_sqlite::version();
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let (moving, staying, source) = two_keys_on_one_shard(&sharded);
    let destination = other(&source);
    fill(&sharded, &moving, 1, 60).await;
    fill(&sharded, &staying, 1, 5).await;
    let (source_file, destination_file) = (shard_file(dir.path(), &source), shard_file(dir.path(), destination));

    // An exact key: the copy stops at its third page, the capture stays.
    refuse_item(&sharded, destination, 41).await;
    let migrator = Resharder::new(sharded.clone());
    let stopped = migrator.migrate(key_request(&moving, destination, 20)).await.unwrap();
    assert_eq!(stopped.status, ReshardStatus::Failed, "{stopped:#?}");
    let objects = shardlite_capture_objects(&source_file);
    assert_eq!(objects.len(), 7, "{objects:?}");
    read_every_table(&source_file);
    old_sqlite::run(&source_file, &insert_item("plain-staying", &staying)).expect("a row that does not move");
    old_sqlite::run(&source_file, &insert_item("plain-moving", &moving)).expect("the moving key takes writes");
    allow_item(&sharded, destination).await;
    let resumed = migrator
        .resume(&stopped.migration_id, Default::default())
        .await
        .unwrap();
    assert_eq!(resumed.status, ReshardStatus::Activated, "{resumed:#?}");
    let landed = sharded
        .for_shard_id(destination)
        .unwrap()
        .execute_read_only_sql("SELECT count(*) FROM items WHERE id = 'plain-moving'", Params::none())
        .await
        .unwrap();
    assert_eq!(
        landed.rows[0][0].as_i64(),
        Some(1),
        "the captured write reached the destination"
    );
    for file in [&source_file, &destination_file] {
        assert!(
            shardlite_capture_objects(file).is_empty(),
            "{:?}",
            shardlite_capture_objects(file)
        );
    }

    // A bucket range (bucket 0 of 4 on s0): readable while captured, nothing left after.
    let bucket = |key: &str| bucket_for_token(route_token("tenants", key).unwrap().0, 4);
    let mover = (0..200)
        .map(|i| format!("range-{i}"))
        .find(|k| bucket(k) == 0 && owner(&sharded, k) == "s0")
        .unwrap();
    fill(&sharded, &mover, 1, 30).await;
    refuse_item(&sharded, "s1", 21).await;
    let request = ReshardRequest::bucket_range("tenants", "s0", 0..1, "s1", manifest(10))
        .activate()
        .delete_source()
        .migration_id("range-move");
    let stopped = migrator.migrate(request).await.unwrap();
    assert_eq!(stopped.status, ReshardStatus::Failed, "{stopped:#?}");
    let s0 = shard_file(dir.path(), "s0");
    assert!(!shardlite_capture_objects(&s0).is_empty());
    read_every_table(&s0);
    let refused = old_sqlite::run(&s0, &insert_item("plain-range", &mover)).unwrap_err();
    assert!(refused.contains("shardlite_bucket"), "{refused}");
    allow_item(&sharded, "s1").await;
    let resumed = migrator.resume("range-move", Default::default()).await.unwrap();
    assert_eq!(resumed.status, ReshardStatus::Activated, "{resumed:#?}");
    for file in [&s0, &shard_file(dir.path(), "s1")] {
        assert!(
            shardlite_capture_objects(file).is_empty(),
            "{:?}",
            shardlite_capture_objects(file)
        );
    }
}
