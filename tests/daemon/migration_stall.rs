//! A remote shard whose daemon stalls (SIGSTOP) in the middle of a data migration onto it: the
//! migration fails within a bounded wait with an error naming the shard, the source keeps every
//! row and (online) takes writes of the moving key, and once the daemon runs again (SIGCONT) the
//! migration resumes, replays what was written, and activates with the rows verified.

#![cfg(all(feature = "cli", feature = "server", feature = "http"))]

use std::path::Path;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::migrate::{fill, items_on, key_request};
use crate::support::{path_str, temp_dir};
use shardlite::ErrorKind;
use shardlite::client::{Params, ShardedClient, SqlData};
use shardlite::data::{ReshardStatus, ResumeRequest};
use shardlite::map::{BucketRange, Secret, ShardDefinition, ShardingOptions};
use shardlite::reshard::Resharder;

use super::storage_failures::spawn_daemon_as;

/// Sends `signal` (`STOP`, `CONT`) to `child`.
fn signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {}", child.id());
}

/// Keyspace `tenants` over a local shard and `far`, a daemon at `url` reached over HTTP with a
/// one-second connect and a two-second command timeout; `wanderer` is pinned to the local one.
fn map_with_far(dir: &Path, url: &str) -> ShardingOptions {
    let mut far = ShardDefinition::local("far", "");
    far.data_source = None;
    far.connection_string = Some(Secret::new(format!(
        "Endpoint={url};Transport=Http;Connect Timeout=1;Command Timeout=2"
    )));
    ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 4,
        shards: vec![ShardDefinition::local("local", path_str(&dir.join("local.db"))), far],
        bucket_ranges: vec![BucketRange::new(0, 2, "local"), BucketRange::new(2, 4, "far")],
        exact_key_pins: [("wanderer".to_owned(), "local".to_owned())].into(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_shard_stalled_during_a_data_migration_fails_it_in_bounded_time_and_it_resumes() {
    let dir = temp_dir();
    let far_file = dir.path().join("far.db");
    let (far_daemon, url) = spawn_daemon_as(
        Command::new(env!("CARGO_BIN_EXE_shardlite")),
        &far_file,
        "127.0.0.1:0",
        &["--create"],
    );
    let far_daemon = Arc::new(Mutex::new(far_daemon));
    let master = crate::support::seed_master(dir.path(), map_with_far(dir.path(), &url)).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    for outcome in sharded
        .query()
        .execute_all(
            "CREATE TABLE items (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER, amount REAL, data BLOB)",
        )
        .await
        .unwrap()
    {
        assert!(outcome.error.is_none(), "{outcome:?}");
    }
    fill(&sharded, "wanderer", 1, 200).await;
    let before = items_on(&sharded, "local", "wanderer").await;

    // The daemon behind "far" stops (SIGSTOP: its socket still accepts, nothing answers) once
    // the first page of the copy has landed there.
    let stopped = Arc::new(Mutex::new(false));
    let migrator = {
        let far_daemon = Arc::clone(&far_daemon);
        let stopped = Arc::clone(&stopped);
        Resharder::new(sharded.clone()).with_observer(move |progress| {
            let mut stopped = stopped.lock().unwrap();
            if progress.rows > 0 && !*stopped {
                signal(&far_daemon.lock().unwrap(), "STOP");
                *stopped = true;
            }
        })
    };
    let mut request = key_request("wanderer", "far", 40);
    request.manifest.collections.clear();
    request.migration_id = Some("stalls".into());
    let started = Instant::now();
    let outcome = migrator.migrate(request).await;
    let waited = started.elapsed();
    assert!(*stopped.lock().unwrap(), "the daemon was stopped mid-copy");
    assert!(
        waited < Duration::from_secs(15),
        "the stalled shard held the migration for {waited:?}"
    );
    let said = match &outcome {
        Ok(result) => {
            assert_eq!(result.status, ReshardStatus::Failed, "{result:#?}");
            result.message.clone()
        }
        Err(err) => {
            assert!(
                matches!(
                    err.kind(),
                    ErrorKind::Unavailable | ErrorKind::RequestTimeout | ErrorKind::Timeout
                ),
                "{err}"
            );
            err.to_string()
        }
    };
    assert!(
        said.contains("far"),
        "the error does not name the stalled shard: {said}"
    );

    // Meanwhile the source keeps every row, and (an online move: no fence before the cutover)
    // the moving key still takes writes there, which the capture records for the resume.
    assert_eq!(items_on(&sharded, "local", "wanderer").await, before);
    sharded
        .for_route(crate::support::route("wanderer"))
        .execute_sql(
            "INSERT INTO items (id, tenant, n, amount, data) VALUES ('late', 'wanderer', 0, 0.5, x'00')",
            Params::none(),
        )
        .await
        .unwrap();
    let before = items_on(&sharded, "local", "wanderer").await;
    sharded
        .for_shard_id("local")
        .unwrap()
        .execute_sql("SELECT count(*) FROM items", Params::none())
        .await
        .unwrap();

    // Running again, the same daemon takes the rest: the migration resumes, verifies the copy
    // and activates; "far" holds exactly the source's rows.
    signal(&far_daemon.lock().unwrap(), "CONT");
    let resumed = migrator.resume("stalls", ResumeRequest::default()).await;
    let far_items = items_on(&sharded, "far", "wanderer").await;
    {
        let mut child = far_daemon.lock().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let resumed = resumed.unwrap();
    assert_eq!(resumed.status, ReshardStatus::Activated, "{resumed:#?}");
    assert!(!resumed.receipts.is_empty(), "{resumed:#?}");
    assert_eq!(far_items, before);
    assert_eq!(
        sharded
            .resolve_route(&crate::support::route("wanderer"))
            .unwrap()
            .shard_id,
        "far"
    );
}
