//! Crash safety: a migration run in a child process is killed with SIGKILL at random points,
//! ten times, each time followed by `resume` in a new child; a last resume finishes it. The
//! destination ends identical to the source as it was, nothing is left on the source, the
//! catalog holds the new map, no fence is left in force, and no row was written twice (pages
//! committed before a kill are not copied again).
//!
//! Resume from the destination's own record of the pages it committed is also tested without
//! a kill, with the catalog as far behind as a crash can leave it.
//!
//! `SHARDLITE_CRASH_ROWS` sets the row count (default 20,000; the benchmark uses more).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use shardlite::client::{DataClient, Params, ShardedClient, Value};
use shardlite::data::MigrationStatus;
use shardlite::data::ResumeRequest;
use shardlite::reshard::{Migrator, fences_on};
use support::migrate::{
    allow_item, audit_item_writes, fill, forget_copied_pages, item_writes, items_on, key_request, migration_master,
    other, owner, refuse_item,
};
use support::{old_sqlite, temp_dir};

#[path = "migration_crash/runners.rs"]
mod runners;

const CHILD_MASTER: &str = "SHARDLITE_TEST_MIGRATION_MASTER";
const CHILD_KEY: &str = "SHARDLITE_TEST_MIGRATION_KEY";
const MIGRATION_ID: &str = "crash-test";

/// Starts the migration, or resumes it when it already has a checkpoint.
async fn start_or_resume(master: &Path, key: &str) -> shardlite::data::MigrationResult {
    let sharded = ShardedClient::open(master).await.unwrap();
    let migrator = Migrator::new(sharded.clone());
    if migrator.status(MIGRATION_ID).await.unwrap().is_some() {
        return migrator.resume(MIGRATION_ID, ResumeRequest::default()).await.unwrap();
    }
    let mut request = key_request(key, other(&owner(&sharded, key)), 200);
    request.migration_id = Some(MIGRATION_ID.into());
    migrator.migrate_key(request).await.unwrap()
}

/// The child: runs (or resumes) the migration when the parent asks for it; otherwise a no-op.
#[tokio::test]
async fn crash_child() {
    let (Ok(master), Ok(key)) = (std::env::var(CHILD_MASTER), std::env::var(CHILD_KEY)) else {
        return;
    };
    start_or_resume(Path::new(&master), &key).await;
}

/// A small deterministic generator, seeded from the clock and printed, so a failing run can
/// be replayed by pinning the seed.
struct Lcg(u64);

impl Lcg {
    fn next_below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_killed_ten_times_resumes_to_an_exact_copy() {
    let rows: i64 = std::env::var("SHARDLITE_CRASH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let key = "crash-tenant";
    let (source, destination, before) = {
        let sharded = ShardedClient::open(&master).await.unwrap();
        fill(&sharded, key, 1, rows).await;
        let source = owner(&sharded, key);
        let before = items_on(&sharded, &source, key).await;
        audit_item_writes(&sharded, other(&source)).await;
        (source.clone(), other(&source).to_owned(), before)
    };
    assert_eq!(before.0, rows);

    let seed = std::env::var("SHARDLITE_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| u64::from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos()));
    println!("crash seed {seed}");
    let mut random = Lcg(seed);
    let exe = std::env::current_exe().unwrap();
    let mut killed_running = 0;
    let mut phases = Vec::new();
    for _ in 0..10 {
        let mut child = Command::new(&exe)
            .args(["--exact", "crash_child", "--nocapture", "--test-threads", "1"])
            .env(CHILD_MASTER, &master)
            .env(CHILD_KEY, key)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_millis(40 + random.next_below(400));
        while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        if child.try_wait().unwrap().is_none() {
            killed_running += 1;
        }
        child.kill().ok(); // SIGKILL
        child.wait().unwrap();
        let checkpoint = shardlite::catalog::Catalog::open(&master)
            .await
            .unwrap()
            .migration(MIGRATION_ID)
            .await
            .unwrap();
        if let Some(state) = &checkpoint
            && state.phase.starts_with("copying")
        {
            // The crash left the fence in force: a writer with its own connection is refused.
            let shard = shardlite::client::LocalClient::open(dir.path().join(format!("{source}.db")))
                .await
                .unwrap();
            let refused = shard
                .execute_sql(
                    "INSERT INTO items (id, tenant, n) VALUES ('during-crash', ?1, 0)",
                    shardlite::client::Params::from(vec![key]),
                )
                .await
                .unwrap_err();
            assert_eq!(refused.kind(), shardlite::ErrorKind::RouteFenced, "{refused}");
        }
        phases.push(checkpoint.map_or_else(
            || "none".to_owned(),
            |c| format!("{} ({} rows)", c.phase, c.receipts.first().map_or(0, |r| r.source_rows)),
        ));
    }
    println!("{killed_running} of 10 children were killed mid-run; checkpoints after each kill: {phases:?}");
    assert!(
        phases.iter().any(|p| p.starts_with("copying")),
        "no kill landed in the middle of the copy: {phases:?}"
    );

    let result = start_or_resume(&master, key).await;
    assert_eq!(result.status, MigrationStatus::Activated, "{result:#?}");
    assert!(result.receipts.iter().all(|r| r.verified));
    // A second resume changes nothing.
    let again = start_or_resume(&master, key).await;
    assert_eq!(again.status, MigrationStatus::Activated);

    let sharded = ShardedClient::open(&master).await.unwrap();
    assert_eq!(
        items_on(&sharded, &destination, key).await,
        before,
        "the copy differs from the source"
    );
    assert_eq!(
        items_on(&sharded, &source, key).await.0,
        0,
        "source rows were left behind"
    );
    // Every row was inserted once and never written again: no page committed before a kill
    // was copied again after it.
    assert_eq!(
        item_writes(&sharded, &destination).await,
        (rows, 0),
        "(inserts, updates) of the destination's rows"
    );
    assert_eq!(owner(&sharded, key), destination);
    let catalog = sharded.catalog().unwrap();
    assert_eq!(catalog.active_version().await.unwrap(), Some(2));
    assert!(catalog.pending_options().await.unwrap().is_none());
    let stored = catalog.migration(MIGRATION_ID).await.unwrap().unwrap();
    assert_eq!(stored.status, MigrationStatus::Activated);
    assert_eq!(stored.receipts[0].source_rows, u64::try_from(rows).unwrap());
    // Each page was counted once, however many times the copy was interrupted.
    assert_eq!(
        stored.receipts[0].pages_copied,
        u64::try_from(rows).unwrap().div_ceil(200)
    );
    // No fence in force: the destination has none; the source only records that the key moved.
    assert!(
        fences_on(&sharded.for_shard_id(&destination).unwrap())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        fences_on(&sharded.for_shard_id(&source).unwrap()).await.unwrap(),
        vec![(MIGRATION_ID.to_owned(), "moved".to_owned())]
    );
    // Both files, killed ten times mid-migration and resumed, open in an older SQLite.
    old_sqlite::version();
    for shard in [&source, &destination] {
        let file = dir.path().join(format!("{shard}.db"));
        old_sqlite::read_every_table(&file);
        old_sqlite::run(
            &file,
            "INSERT INTO items (id, tenant, n) VALUES ('plain', 'another-tenant', 1)",
        )
        .expect("a row that did not move");
    }
}

/// Each page's transaction on the destination also records how far the copy got, so a resume
/// whose catalog checkpoint is behind (here: no page checkpointed at all, while the destination
/// committed two) goes on after the pages the destination holds; a record of another migration
/// is ignored, and the migration's own records are removed when it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_goes_on_from_the_pages_the_destination_recorded() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let key = "recorded-tenant";
    fill(&sharded, key, 1, 200).await;
    let source = owner(&sharded, key);
    let destination = other(&source);
    let before = items_on(&sharded, &source, key).await;
    audit_item_writes(&sharded, destination).await;
    let shard = sharded.for_shard_id(destination).unwrap();
    // What another migration of the same table left behind: it must not count for this one.
    // Only a maintenance transaction may write the internal tables.
    let tx = shard
        .begin_transaction_with(shardlite::client::TransactionOptions::maintenance())
        .await
        .unwrap();
    shard
        .execute_in_transaction(
            &tx.transaction_id,
            "CREATE TABLE _shardlite_copy_cursors (migration_id TEXT NOT NULL, item TEXT NOT NULL, after_key,
                 checksum BLOB NOT NULL, rows INTEGER NOT NULL, pages INTEGER NOT NULL, finished INTEGER NOT NULL,
                 PRIMARY KEY (migration_id, item))",
            Params::none(),
        )
        .await
        .unwrap();
    shard
        .execute_in_transaction(
            &tx.transaction_id,
            "INSERT INTO _shardlite_copy_cursors VALUES ('an-older-one', 'table ''items''', 'zzz', zeroblob(32), 999, 99, 1)",
            Params::none(),
        )
        .await
        .unwrap();
    shard.commit_transaction(&tx.transaction_id).await.unwrap();
    let records = |id: &'static str| {
        let shard = std::sync::Arc::clone(&shard);
        async move {
            shard
                .execute_read_only_sql(
                    "SELECT pages, rows, finished, after_key FROM _shardlite_copy_cursors
                     WHERE migration_id = ?1 AND item = 'table ''items'''",
                    Params::from(vec![id]),
                )
                .await
                .unwrap()
                .rows
        }
    };

    // The third page (20 rows a page) cannot land: the copy stops after two.
    refuse_item(&sharded, destination, 41).await;
    let migrator = Migrator::new(sharded.clone());
    let mut request = key_request(key, destination, 20);
    request.migration_id = Some("recorded".into());
    let stopped = migrator.migrate_key(request).await.unwrap();
    assert_eq!(stopped.status, MigrationStatus::Failed, "{stopped:#?}");
    assert_eq!(
        records("recorded").await,
        vec![vec![
            Value::Integer(2),
            Value::Integer(40),
            Value::Integer(0),
            Value::from(format!("{key}-00000040"))
        ]]
    );
    assert_eq!(item_writes(&sharded, destination).await, (40, 0));
    forget_copied_pages(&master, "recorded").await;
    allow_item(&sharded, destination).await;

    let resumed = migrator.resume("recorded", ResumeRequest::default()).await.unwrap();
    assert_eq!(resumed.status, MigrationStatus::Activated, "{resumed:#?}");
    assert!(resumed.receipts.iter().all(|r| r.verified));
    assert_eq!(
        (resumed.receipts[0].source_rows, resumed.receipts[0].pages_copied),
        (200, 10)
    );
    assert_eq!(items_on(&sharded, destination, key).await, before);
    assert_eq!(
        item_writes(&sharded, destination).await,
        (200, 0),
        "(inserts, updates): the two recorded pages were copied again"
    );
    assert!(
        records("recorded").await.is_empty(),
        "the migration's records are removed"
    );
    assert_eq!(
        records("an-older-one").await.len(),
        1,
        "another migration's record is not touched"
    );
}
