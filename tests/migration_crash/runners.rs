//! Two runners can never drive one migration. On a master file the claim names the runner's
//! process: a second process is refused while it lives and takes over as soon as it died. On a
//! catalog in etcd the claim holds a lease: a runner killed with SIGKILL keeps it until the lease
//! expires, so a second runner is refused meanwhile, and then `resume` takes over. Either way the
//! migration ends as an exact copy.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::migrate::{fill, items_on, migration_master, other, owner};
use crate::support::temp_dir;
use shardlite::ErrorKind;
use shardlite::catalog::Catalog;
use shardlite::client::ShardedClient;
use shardlite::data::{ReshardStatus, ResumeRequest};
use shardlite::reshard::Resharder;

use super::{CHILD_KEY, CHILD_MASTER, MIGRATION_ID};

/// A master file with 20,000 rows for `key`; returns it, the key's source shard and what it holds.
async fn filled_master(dir: &Path, key: &str) -> (PathBuf, String, (i64, String)) {
    let master = migration_master(dir).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    fill(&sharded, key, 1, 20_000).await;
    let source = owner(&sharded, key);
    let before = items_on(&sharded, &source, key).await;
    (master, source, before)
}

/// Runs the migration in a child process on `catalog_location` and returns once it copies.
async fn runner_copying(catalog_location: &str, key: &str) -> Child {
    let catalog = Catalog::open(catalog_location).await.unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads", "1"])
        .env(CHILD_MASTER, catalog_location)
        .env(CHILD_KEY, key)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let state = catalog.migration(MIGRATION_ID).await.unwrap();
        if state.as_ref().is_some_and(|s| s.phase.is_copying()) {
            return child;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the runner ended before it copied: {state:?}"
        );
        assert!(Instant::now() < deadline, "the runner never started copying");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn assert_refused(err: &shardlite::Error) {
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert!(err.to_string().contains("is being run by process"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_is_refused_while_the_runner_lives_and_takes_over_once_it_died() {
    let dir = temp_dir();
    let key = "runner-tenant";
    let (master, source, before) = filled_master(dir.path(), key).await;
    let location = crate::support::path_str(&master);
    let mut child = runner_copying(&location, key).await;

    let migrator = Resharder::new(ShardedClient::open(&master).await.unwrap());
    assert_refused(
        &migrator
            .resume(MIGRATION_ID, ResumeRequest::default())
            .await
            .unwrap_err(),
    );
    assert_refused(&migrator.abandon(MIGRATION_ID).await.unwrap_err());

    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let result = migrator.resume(MIGRATION_ID, ResumeRequest::default()).await.unwrap();
    assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");
    let sharded = ShardedClient::open(&master).await.unwrap();
    assert_eq!(items_on(&sharded, other(&source), key).await, before);
}

#[cfg(feature = "etcd")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_runner_keeps_its_etcd_lease_until_it_expires_then_resume_finishes() {
    use shardlite::catalog::LEASE_SECONDS;
    let Some(cluster) = crate::support::etcd::EtcdCluster::start(1) else {
        return;
    };
    let dir = temp_dir();
    let key = "lease-tenant";
    let (file_master, source, before) = filled_master(dir.path(), key).await;
    // The catalog moves into etcd; the shard files stay where they are.
    let url = cluster.url("lease");
    let export = Catalog::open(&file_master).await.unwrap().export().await.unwrap();
    Catalog::open(&url).await.unwrap().import(&export).await.unwrap();

    let mut child = runner_copying(&url, key).await;
    child.kill().unwrap(); // SIGKILL: no chance to release anything
    child.wait().unwrap();
    let killed = Instant::now();

    let migrator = Resharder::new(ShardedClient::open(&url).await.unwrap());
    let refused = migrator
        .resume(MIGRATION_ID, ResumeRequest::default())
        .await
        .expect_err("the dead runner's lease still holds the migration");
    assert_refused(&refused);

    let result = loop {
        match migrator.resume(MIGRATION_ID, ResumeRequest::default()).await {
            Ok(result) => break result,
            Err(err) if err.to_string().contains("is being run by") => {
                assert!(
                    killed.elapsed() < Duration::from_secs(LEASE_SECONDS + 10),
                    "the lease outlived its time to live: {err}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(err) => panic!("resume failed: {err}"),
        }
    };
    println!(
        "the killed runner's claim was released {:?} after the kill",
        killed.elapsed()
    );
    assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");
    assert!(result.receipts.iter().all(|r| r.verified));
    // The run released its claim before it returned: a command ending now leaves none behind.
    let catalog = Catalog::open(&url).await.unwrap();
    catalog.claim_migration(MIGRATION_ID).await.unwrap().release().await;
    let sharded = ShardedClient::open(&url).await.unwrap();
    assert_eq!(items_on(&sharded, other(&source), key).await, before);
}
