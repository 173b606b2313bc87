//! A runner driving a migration on a catalog in etcd holds a lease: killed with SIGKILL, it
//! keeps its claim until the lease expires, so a second runner is refused meanwhile, and then
//! `resume` takes over and finishes an exact copy.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shardlite::ErrorKind;
use shardlite::catalog::{Catalog, LEASE_SECONDS};
use shardlite::client::ShardedClient;
use shardlite::data::{MigrationStatus, ResumeRequest};
use shardlite::reshard::Migrator;
use support::etcd::EtcdCluster;
use support::migrate::{fill, items_on, migration_master, other, owner};
use support::temp_dir;

use super::{CHILD_KEY, CHILD_MASTER, MIGRATION_ID};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_runner_keeps_its_etcd_lease_until_it_expires_then_resume_finishes() {
    let Some(cluster) = EtcdCluster::start(1) else {
        return;
    };
    let dir = temp_dir();
    let file_master = migration_master(dir.path()).await;
    let key = "lease-tenant";
    let (source, before) = {
        let sharded = ShardedClient::open(&file_master).await.unwrap();
        fill(&sharded, key, 1, 20_000).await;
        let source = owner(&sharded, key);
        let before = items_on(&sharded, &source, key).await;
        (source, before)
    };
    // The catalog moves into etcd; the shard files stay where they are.
    let url = cluster.url("lease");
    let export = Catalog::open(&file_master).await.unwrap().export().await.unwrap();
    let catalog = Catalog::open(&url).await.unwrap();
    catalog.import(&export).await.unwrap();

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads", "1"])
        .env(CHILD_MASTER, &url)
        .env(CHILD_KEY, key)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill the runner once it is copying.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let state = catalog.migration(MIGRATION_ID).await.unwrap();
        if state.as_ref().is_some_and(|s| s.phase.starts_with("copying")) {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the runner ended before it copied: {state:?}"
        );
        assert!(Instant::now() < deadline, "the runner never started copying");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.kill().unwrap(); // SIGKILL: no chance to release anything
    child.wait().unwrap();
    let killed = Instant::now();

    let migrator = Migrator::new(ShardedClient::open(&url).await.unwrap());
    let refused = migrator
        .resume(MIGRATION_ID, ResumeRequest::default())
        .await
        .expect_err("the dead runner's lease still holds the migration");
    assert_eq!(refused.kind(), ErrorKind::Conflict, "{refused}");
    assert!(refused.to_string().contains("is being run by process"), "{refused}");

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
    assert_eq!(result.status, MigrationStatus::Activated, "{result:#?}");
    assert!(result.receipts.iter().all(|r| r.verified));
    let sharded = ShardedClient::open(&url).await.unwrap();
    assert_eq!(items_on(&sharded, other(&source), key).await, before);
}
