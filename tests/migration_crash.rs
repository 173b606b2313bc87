//! Crash safety: a migration run in a child process (fenced for the whole copy) is killed with
//! SIGKILL at random points, ten times, each time followed by `resume` in a new child; a last
//! resume finishes it. The
//! destination ends identical to the source as it was, nothing is left on the source, the
//! catalog holds the new map, no fence is left in force, and no row was written twice (pages
//! committed before a kill are not copied again).
//!
//! An online migration is killed with SIGKILL in each of its phases (copy, catch-up, cutover
//! before and after activation), with writes of the moving key made while its runner is dead,
//! then resumed: the destination is an exact copy, no fence or capture is left behind, and the
//! key's directory entries point at the destination.
//!
//! Resume from the destination's own record of the pages it committed is also tested without
//! a kill, with the catalog as far behind as a crash can leave it.
//!
//! `SHARDLITE_CRASH_ROWS` sets the row count (default 20,000; the benchmark uses more).

#[path = "support/mod.rs"]
pub mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::migrate::{
    add_directory, allow_item, audit_item_writes, directory_entry, fill, forget_copied_pages, item_writes, items_on,
    key_request, migration_master, other, owner, refuse_item,
};
use crate::support::{old_sqlite, temp_dir};
use shardlite::client::{Params, ShardedClient, SqlData, Value};
use shardlite::data::ReshardStatus;
use shardlite::data::ResumeRequest;
use shardlite::reshard::{Resharder, fences_on};

#[path = "migration_crash/backup.rs"]
mod backup;
#[path = "migration_crash/runners.rs"]
mod runners;

const CHILD_MASTER: &str = "SHARDLITE_TEST_MIGRATION_MASTER";
const CHILD_KEY: &str = "SHARDLITE_TEST_MIGRATION_KEY";
const MIGRATION_ID: &str = "crash-test";

const CHILD_STOP_AT: &str = "SHARDLITE_TEST_MIGRATION_STOP_AT";
const CHILD_ONLINE: &str = "SHARDLITE_TEST_MIGRATION_ONLINE";

/// Starts the migration (online or fenced for the whole copy), or resumes it when it already
/// has a checkpoint.
async fn start_or_resume(
    master: &Path,
    key: &str,
    migrator: Resharder,
    online: bool,
) -> shardlite::data::ReshardResult {
    if migrator.status(MIGRATION_ID).await.unwrap().is_some() {
        return migrator.resume(MIGRATION_ID, ResumeRequest::default()).await.unwrap();
    }
    let sharded = ShardedClient::open(master).await.unwrap();
    let mut request = key_request(key, other(&owner(&sharded, key)), 200);
    request.migration_id = Some(MIGRATION_ID.into());
    request.online = online;
    migrator.migrate(request).await.unwrap()
}

/// Opens `master` and starts or resumes the migration there.
async fn run_migration(master: &Path, key: &str, online: bool) -> shardlite::data::ReshardResult {
    let migrator = Resharder::new(ShardedClient::open(master).await.unwrap());
    start_or_resume(master, key, migrator, online).await
}

/// The child: runs (or resumes) the migration when the parent asks for it; otherwise a no-op.
/// Asked to stop at a phase, it says so on stdout when the migration reaches it and waits
/// there for the parent's SIGKILL.
#[tokio::test]
async fn crash_child() {
    let (Ok(master), Ok(key)) = (std::env::var(CHILD_MASTER), std::env::var(CHILD_KEY)) else {
        return;
    };
    let online = std::env::var(CHILD_ONLINE).is_ok_and(|v| v == "1");
    let mut migrator = Resharder::new(ShardedClient::open(&master).await.unwrap());
    if let Ok(stop_at) = std::env::var(CHILD_STOP_AT) {
        migrator = migrator.with_observer(move |progress| {
            if progress.phase.to_string().starts_with(&stop_at) {
                use std::io::Write;
                println!("\nreached {}", progress.phase);
                std::io::stdout().flush().unwrap();
                loop {
                    std::thread::sleep(Duration::from_secs(60));
                }
            }
        });
    }
    start_or_resume(Path::new(&master), &key, migrator, online).await;
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
            .env(CHILD_ONLINE, "0")
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
            && state.phase.is_copying()
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

    let result = run_migration(&master, key, false).await;
    assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");
    assert!(result.receipts.iter().all(|r| r.verified));
    // A second resume changes nothing.
    let again = run_migration(&master, key, false).await;
    assert_eq!(again.status, ReshardStatus::Activated);

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
    let catalog = sharded.catalog().master().unwrap();
    assert_eq!(catalog.active_version().await.unwrap(), Some(2));
    assert!(catalog.pending_options().await.unwrap().is_none());
    let stored = catalog.migration(MIGRATION_ID).await.unwrap().unwrap();
    assert_eq!(stored.status, ReshardStatus::Activated);
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

/// Change-capture objects (triggers and the change table) in `file`, as the old SQLite sees them.
fn capture_objects(file: &Path) -> Vec<String> {
    old_sqlite::run(
        file,
        "SELECT type || ' ' || name FROM sqlite_master WHERE name LIKE '\\_shardlite\\_captur%' ESCAPE '\\'",
    )
    .expect("old sqlite3 reads sqlite_master")
    .lines()
    .map(str::to_owned)
    .collect()
}

/// Runs the online migration in a child until it reaches `phase`, then kills it with SIGKILL.
fn kill_at(master: &Path, key: &str, phase: &str) {
    use std::io::BufRead;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads", "1"])
        .env(CHILD_MASTER, master)
        .env(CHILD_KEY, key)
        .env(CHILD_ONLINE, "1")
        .env(CHILD_STOP_AT, phase)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let reached = stdout
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("reached "));
    child.kill().ok(); // SIGKILL
    child.wait().unwrap();
    assert!(reached, "the migration never reached phase {phase}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_online_migration_killed_in_each_phase_resumes_to_an_exact_copy() {
    old_sqlite::version();
    for phase in ["copying", "catching-up", "cutover", "activated"] {
        let dir = temp_dir();
        let master = migration_master(dir.path()).await;
        let key = "online-crash";
        let (source, destination) = {
            let sharded = ShardedClient::open(&master).await.unwrap();
            fill(&sharded, key, 1, 4000).await;
            add_directory(&sharded, &[key]).await;
            let source = owner(&sharded, key);
            (source.clone(), other(&source).to_owned())
        };
        let source_file = dir.path().join(format!("{source}.db"));
        // A row of another key, which a write will move into the moving key.
        old_sqlite::run(
            &source_file,
            "INSERT INTO items (id, tenant, n, amount, data) VALUES ('outsider', 'another-tenant', 7, 0.5, x'01')",
        )
        .unwrap();
        kill_at(&master, key, phase);

        // While the runner is dead, a process of its own (the old SQLite: no shardlite in it)
        // reads every table and writes through the capture (and fence) triggers.
        old_sqlite::read_every_table(&source_file);
        old_sqlite::run(
            &source_file,
            "INSERT INTO items (id, tenant, n) VALUES ('plain', 'another-tenant', 1)",
        )
        .expect("a row that does not move");
        let moving_writes =
            "INSERT INTO items (id, tenant, n, amount, data) VALUES ('late', 'online-crash', 1, 2.5, x'');
             UPDATE items SET n = -2 WHERE id = 'online-crash-00000002';
             DELETE FROM items WHERE id = 'online-crash-00000003';
             UPDATE items SET tenant = 'another-tenant' WHERE id = 'online-crash-00000004';
             UPDATE items SET tenant = 'online-crash' WHERE id = 'outsider';
             UPDATE items SET id = 'online-crash-renamed' WHERE id = 'online-crash-00003999';";
        match phase {
            "copying" | "catching-up" => {
                assert!(!capture_objects(&source_file).is_empty(), "{phase}: no capture");
                old_sqlite::run(&source_file, moving_writes).expect("writes of the moving key go on");
            }
            "cutover" => {
                let refused = old_sqlite::run(&source_file, moving_writes).unwrap_err();
                assert!(refused.contains("route_fenced"), "{refused}");
            }
            _ => {}
        }
        let sharded = ShardedClient::open(&master).await.unwrap();
        let expected = items_on(&sharded, &source, key).await;

        let result = run_migration(&master, key, true).await;
        assert_eq!(result.status, ReshardStatus::Activated, "{phase}: {result:#?}");
        assert!(result.receipts.iter().all(|r| r.verified), "{phase}");
        println!("killed in {phase}, then resumed: {:?}", result.online);
        assert_eq!(
            items_on(&sharded, &destination, key).await,
            expected,
            "{phase}: the copy differs from the source"
        );
        if matches!(phase, "copying" | "catching-up") {
            assert_eq!(expected.0, 4000, "{phase}: one row in, one deleted, one out, one in");
            assert!(expected.1.contains("outsider:7") && expected.1.contains("online-crash-renamed:3999"));
        }
        assert_eq!(
            items_on(&sharded, &source, key).await.0,
            0,
            "{phase}: rows left on the source"
        );
        for file in [&source_file, &dir.path().join(format!("{destination}.db"))] {
            assert!(capture_objects(file).is_empty(), "{phase}: {:?}", capture_objects(file));
        }
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
        // The key's directory entries went with it, once, at the move's map version.
        let reopened = ShardedClient::open(&master).await.unwrap();
        assert_eq!(
            directory_entry(&reopened, "SO-online-crash"),
            (destination.clone(), 3, "Active".to_owned()),
            "{phase}"
        );
        assert_eq!(
            directory_entry(&reopened, "gone-online-crash").0,
            destination,
            "{phase}"
        );
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
    let migrator = Resharder::new(sharded.clone());
    let mut request = key_request(key, destination, 20);
    request.migration_id = Some("recorded".into());
    let stopped = migrator.migrate(request).await.unwrap();
    assert_eq!(stopped.status, ReshardStatus::Failed, "{stopped:#?}");
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
    assert_eq!(resumed.status, ReshardStatus::Activated, "{resumed:#?}");
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
