//! Verified migrations in-process: an exact key and a bucket range move with their data, the
//! dry run changes nothing, bad requests are rejected with the problem named, and a destination
//! that does not match the source stops the migration before the map changes.

use std::path::Path;

use crate::support::migrate::{
    fill, has_profile, items_on, key_in_bucket, key_request, manifest, migration_master, other, owner,
    two_keys_on_one_shard,
};
use crate::support::{path_str, route, temp_dir};
use shardlite::ErrorKind;
use shardlite::client::{DataClient, Params, ShardedClient, SqlData};
use shardlite::data::ResumeRequest;
use shardlite::data::{Audit, ReshardPhase, ReshardRequest, ReshardScope, ReshardStatus};
use shardlite::map::ShardDefinition;
use shardlite::reshard::{Resharder, fences_on};

fn codes(result: &shardlite::data::ReshardResult) -> Vec<String> {
    result.issues.iter().map(|i| i.code.clone()).collect()
}

#[tokio::test]
async fn a_key_moves_verified_then_activated_then_deleted_from_its_source() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let (moving, staying, source) = two_keys_on_one_shard(&sharded);
    let destination = other(&source);
    fill(&sharded, &moving, 1, 1_234).await;
    fill(&sharded, &staying, 1, 10).await;
    let before = items_on(&sharded, &source, &moving).await;
    let staying_before = items_on(&sharded, &source, &staying).await;

    let result = Resharder::new(sharded.clone())
        .migrate(key_request(&moving, destination, 100))
        .await
        .unwrap();

    assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");
    assert!(result.succeeded() && !result.requires_operator_recovery && result.recovery_action.is_none());
    let items = &result.receipts[0];
    assert_eq!((items.source_rows, items.destination_rows), (1_234, Some(1_234)));
    assert_eq!(items.pages_copied, 13);
    assert!(items.verified && items.destination_checksum.as_deref() == Some(items.source_checksum.as_str()));
    assert_eq!(items.source_rows_deleted, 1_234);
    let profiles = &result.receipts[1];
    assert!(profiles.collection && profiles.verified && profiles.source_rows == 1);
    assert_eq!(result.pending_map_version, Some(2));

    // The data is on the destination, exactly as it was; the source kept only other keys.
    assert_eq!(items_on(&sharded, destination, &moving).await, before);
    assert_eq!(items_on(&sharded, &source, &moving).await.0, 0);
    assert_eq!(items_on(&sharded, &source, &staying).await, staying_before);
    assert!(has_profile(&sharded, destination, &moving).await);
    assert!(!has_profile(&sharded, &source, &moving).await);
    assert_eq!(owner(&sharded, &moving), destination);
    assert_eq!(sharded.map().version(), 2);

    // Recorded: checkpoint and one history entry.
    let migrator = Resharder::new(sharded.clone());
    let stored = migrator.status(&result.migration_id).await.unwrap().unwrap();
    assert_eq!(stored.status, ReshardStatus::Activated);
    let history = migrator.history().await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].migration_id, result.migration_id);

    // The source keeps a `moved` record: a writer on the old map is refused there, reads go on.
    let source_client = sharded.for_shard_id(&source).unwrap();
    assert_eq!(
        fences_on(&source_client).await.unwrap(),
        vec![(result.migration_id.clone(), "moved".to_owned())]
    );
    let refused = source_client
        .execute_sql(
            "INSERT INTO items (id, tenant, n) VALUES ('late', ?1, 0)",
            Params::from(vec![moving.as_str()]),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::RouteFenced);
    assert!(refused.is_retryable());
    assert!(refused.to_string().contains("has moved to shard"), "{refused}");
    source_client
        .execute_sql(
            "INSERT INTO items (id, tenant, n) VALUES ('fine', ?1, 0)",
            Params::from(vec![staying.as_str()]),
        )
        .await
        .unwrap();

    // Its id cannot be reused, and the refusal does not overwrite it.
    let mut reuse = key_request(&staying, destination, 100);
    reuse.migration_id = Some(result.migration_id.clone());
    let refused = migrator.migrate(reuse).await.unwrap();
    assert_eq!(refused.status, ReshardStatus::Rejected);
    assert!(codes(&refused).contains(&"migration-id-exists".to_owned()));
    let kept = migrator.status(&result.migration_id).await.unwrap().unwrap();
    assert_eq!(kept.status, ReshardStatus::Activated);

    // Resuming a finished migration does nothing, twice.
    for _ in 0..2 {
        let again = migrator
            .resume(&result.migration_id, ResumeRequest::default())
            .await
            .unwrap();
        assert_eq!(again.status, ReshardStatus::Activated);
    }
    assert_eq!(migrator.history().await.unwrap().len(), 1);
    assert_eq!(items_on(&sharded, destination, &moving).await, before);
}

#[tokio::test]
async fn a_dry_run_shows_the_plan_and_changes_nothing() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let (moving, _, source) = two_keys_on_one_shard(&sharded);
    fill(&sharded, &moving, 1, 321).await;
    let mut request = key_request(&moving, other(&source), 50);
    request.dry_run = true;

    let result = Resharder::new(sharded.clone()).migrate(request).await.unwrap();

    assert_eq!(result.status, ReshardStatus::Planned);
    let plan = result.plan.as_ref().unwrap();
    assert_eq!(plan.items[0].estimated_rows, 321);
    assert!(plan.items[0].route_index, "{}", plan.items[0].query_plan);
    assert_eq!(plan.items[1].estimated_rows, 1);
    assert!(!plan.items[1].route_index);
    assert!(codes(&result).contains(&"no-route-index".to_owned()));
    assert_eq!(plan.proposed_map_version, 2);
    assert_eq!(plan.moved_pins.len(), 1);
    assert_eq!(plan.moved_pins[0].0, moving);
    // Nothing changed: map, catalog, fences, data.
    let migrator = Resharder::new(sharded.clone());
    assert!(migrator.migrations().await.unwrap().is_empty());
    assert!(
        sharded
            .catalog()
            .master()
            .unwrap()
            .pending_options()
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(sharded.map().version(), 1);
    assert!(
        fences_on(&sharded.for_shard_id(&source).unwrap())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(items_on(&sharded, other(&source), &moving).await.0, 0);
}

/// A map with primaries s0 and s1, a replica of s1, and a disabled s3.
async fn rejection_master(dir: &Path) -> ShardedClient {
    let mut options = crate::support::tenants_options(dir);
    let mut replica = ShardDefinition::local("s2", path_str(&dir.join("s2.db")));
    replica.role = Some("Replica".into());
    replica.replica.primary_shard_id = Some("s1".into());
    let mut disabled = ShardDefinition::local("s3", path_str(&dir.join("s3.db")));
    disabled.enabled = false;
    options.shards.extend([replica, disabled]);
    let master = crate::support::seed_master(dir, options).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    sharded
        .query()
        .execute_all("CREATE TABLE items (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER)")
        .await
        .unwrap();
    sharded
}

#[tokio::test]
async fn rejections_name_the_problem_and_change_nothing() {
    let dir = temp_dir();
    let sharded = rejection_master(dir.path()).await;
    let migrator = Resharder::new(sharded.clone());
    let source = owner(&sharded, "tenant-z");
    let run = |destination: &str, edit: &dyn Fn(&mut ReshardRequest)| {
        let mut request = key_request("tenant-z", destination, 10);
        request.manifest.collections.clear();
        edit(&mut request);
        let migrator = migrator.clone();
        async move { migrator.migrate(request).await.unwrap() }
    };
    let cases: Vec<(&str, shardlite::data::ReshardResult)> = vec![
        ("destination-is-source", run(&source, &|_| {}).await),
        ("destination-shard-not-primary", run("s2", &|_| {}).await),
        ("destination-shard-disabled", run("s3", &|_| {}).await),
        ("unknown-destination-shard", run("nowhere", &|_| {}).await),
        (
            "map-version-mismatch",
            run(other(&source), &|r| r.expected_current_map_version = Some(7)).await,
        ),
        (
            "invalid-page-size",
            run(other(&source), &|r| r.manifest.page_size = Some(0)).await,
        ),
        (
            "manifest-mismatch",
            run(other(&source), &|r| {
                r.manifest.tables[0].route_key_column = "nope".into()
            })
            .await,
        ),
        (
            "keyspace-mismatch",
            run(other(&source), &|r| {
                r.scope = ReshardScope::RouteKey {
                    keyspace: "orders".into(),
                    route_key: "tenant-z".into(),
                }
            })
            .await,
        ),
        (
            "delete-source-requires-activation",
            run(other(&source), &|r| r.activate = false).await,
        ),
    ];
    for (code, result) in &cases {
        assert_eq!(result.status, ReshardStatus::Rejected, "{code}: {result:#?}");
        assert!(codes(result).contains(&code.to_string()), "{code}: {:?}", result.issues);
        assert!(result.message.contains("rejected"), "{}", result.message);
        assert!(!result.requires_operator_recovery);
    }
    let mismatch = &cases[6].1;
    assert!(
        mismatch.issues[0].message.contains("nope"),
        "{}",
        mismatch.issues[0].message
    );
    // Nothing moved, nothing fenced; each rejection is in the history.
    assert_eq!(sharded.map().version(), 1);
    assert!(
        fences_on(&sharded.for_shard_id(&source).unwrap())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(migrator.history().await.unwrap().len(), cases.len());

    // Bucket ranges: outside the buckets, or not all the source's.
    let bucket = |start, end, from: &str| {
        ReshardRequest::bucket_range("tenants", from, start..end, "s1", manifest(10)).dry_run()
    };
    let out_of_range = migrator.migrate(bucket(0, 9, "s0")).await.unwrap();
    assert!(codes(&out_of_range).contains(&"invalid-bucket-range".to_owned()));
    let not_owned = migrator.migrate(bucket(1, 3, "s0")).await.unwrap();
    assert!(codes(&not_owned).contains(&"source-does-not-own-bucket-range".to_owned()));
    let disabled = migrator.migrate(bucket(0, 1, "s3")).await.unwrap();
    assert!(codes(&disabled).contains(&"source-shard-disabled".to_owned()));
}

#[tokio::test]
async fn a_destination_changed_during_the_copy_fails_verification_and_keeps_the_map() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let (moving, _, source) = two_keys_on_one_shard(&sharded);
    let destination = other(&source);
    fill(&sharded, &moving, 1, 500).await;
    let before = items_on(&sharded, &source, &moving).await;
    let destination_file = dir.path().join(format!("{destination}.db"));
    let tampered = std::sync::atomic::AtomicBool::new(false);
    let first_id = format!("{moving}-00000001");
    let migrator = Resharder::new(sharded.clone()).with_observer(move |progress| {
        if progress.item == "items" && !tampered.swap(true, std::sync::atomic::Ordering::SeqCst) {
            // Someone edits a copied row on the destination behind the migration's back.
            let conn = rusqlite::Connection::open(&destination_file).unwrap();
            conn.execute("UPDATE items SET n = -1 WHERE id = ?1", [&first_id])
                .unwrap();
        }
    });

    // The fenced mode: the fence stands from the copy to the resume.
    let mut request = key_request(&moving, destination, 100);
    request.online = false;
    let result = migrator.migrate(request).await.unwrap();

    assert_eq!(result.status, ReshardStatus::VerificationFailed, "{result:#?}");
    assert!(result.requires_operator_recovery);
    let recovery = result.recovery_action.as_deref().unwrap();
    assert!(
        recovery.contains("resume") && recovery.contains("unchanged"),
        "{recovery}"
    );
    let items = &result.receipts[0];
    assert!(!items.verified);
    assert_eq!(items.destination_rows, Some(500));
    assert_ne!(
        items.destination_checksum.as_deref(),
        Some(items.source_checksum.as_str())
    );
    assert!(items.error.as_deref().unwrap().contains("checksum"));
    // The map is unchanged, the source kept every row, and the key stays fenced until resume.
    assert_eq!(owner(&sharded, &moving), source);
    assert_eq!(sharded.map().version(), 1);
    assert!(
        sharded
            .catalog()
            .master()
            .unwrap()
            .pending_options()
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(items_on(&sharded, &source, &moving).await, before);
    let write = sharded
        .for_route(route(&moving))
        .execute_sql(
            "UPDATE items SET n = n + 1 WHERE tenant = ?1",
            Params::from(vec![moving.as_str()]),
        )
        .await
        .unwrap_err();
    assert_eq!(write.kind(), ErrorKind::RouteFenced);
    assert!(write.to_string().contains("is fenced by migration"), "{write}");
    let read = sharded
        .for_route(route(&moving))
        .execute_sql(
            "SELECT count(*) FROM items WHERE tenant = ?1",
            Params::from(vec![moving.as_str()]),
        )
        .await
        .unwrap();
    assert_eq!(read.rows[0][0].as_i64(), Some(500));
    // A second migration of the same key is refused while the fence holds.
    let second = Resharder::new(sharded.clone())
        .migrate(key_request(&moving, destination, 100))
        .await
        .unwrap();
    assert_eq!(second.status, ReshardStatus::Rejected);
    assert!(
        codes(&second).contains(&"route-key-already-fenced".to_owned()),
        "{:?}",
        second.issues
    );

    // The operator repairs the destination and resumes: it copies again and verifies.
    sharded
        .for_shard_id(destination)
        .unwrap()
        .execute_sql(
            "DELETE FROM items WHERE tenant = ?1",
            Params::from(vec![moving.as_str()]),
        )
        .await
        .unwrap();
    let resumed = Resharder::new(sharded.clone())
        .resume(&result.migration_id, ResumeRequest::default())
        .await
        .unwrap();
    assert_eq!(resumed.status, ReshardStatus::Activated, "{resumed:#?}");
    assert_eq!(resumed.attempt, 2);
    assert_eq!(items_on(&sharded, destination, &moving).await, before);
    assert_eq!(items_on(&sharded, &source, &moving).await.0, 0);
}

/// A key whose bucket (of 4) is `bucket`.
#[tokio::test]
async fn a_bucket_range_moves_and_leaves_pinned_keys_in_place() {
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
    let movers = [key_in_bucket(0, "mover"), key_in_bucket(0, "other-mover")];
    let stayer = key_in_bucket(1, "stayer");
    for key in movers.iter().chain([&pinned, &stayer]) {
        fill(&sharded, key, 1, 40).await;
        assert_eq!(owner(&sharded, key), "s0");
    }
    let moving_before = items_on(&sharded, "s0", &movers[0]).await;
    let pinned_before = items_on(&sharded, "s0", &pinned).await;

    let result = Resharder::new(sharded.clone())
        .migrate(
            ReshardRequest::bucket_range("TENANTS", "s0", 0..1, "s1", manifest(7))
                .migration_id("move-bucket-0")
                .expecting_map_version(1)
                .activate()
                .delete_source()
                .audit(Audit::default().because("rebalance")),
        )
        .await
        .unwrap();

    assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");
    assert_eq!(result.migration_id, "move-bucket-0");
    assert_eq!(result.receipts[0].source_rows, 80);
    assert_eq!(result.receipts[1].source_rows, 2);
    for key in &movers {
        assert_eq!(owner(&sharded, key), "s1");
        assert_eq!(items_on(&sharded, "s1", key).await.0, 40);
        assert_eq!(items_on(&sharded, "s0", key).await.0, 0);
        assert!(has_profile(&sharded, "s1", key).await);
    }
    assert_eq!(items_on(&sharded, "s1", &movers[0]).await, moving_before);
    // The pinned key in the moved bucket, and the key in another bucket, stay on s0.
    assert_eq!(owner(&sharded, &pinned), "s0");
    assert_eq!(items_on(&sharded, "s0", &pinned).await, pinned_before);
    assert!(has_profile(&sharded, "s0", &pinned).await);
    assert_eq!(items_on(&sharded, "s0", &stayer).await.0, 40);
    // The pinned key stays writable on s0; a moved key is refused there.
    let s0 = sharded.for_shard_id("s0").unwrap();
    s0.execute_sql(
        "INSERT INTO items (id, tenant, n) VALUES ('p-new', ?1, 0)",
        Params::from(vec![pinned.as_str()]),
    )
    .await
    .unwrap();
    let refused = s0
        .execute_sql(
            "INSERT INTO items (id, tenant, n) VALUES ('m-new', ?1, 0)",
            Params::from(vec![movers[0].as_str()]),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::RouteFenced);
    let history = sharded.catalog().master().unwrap().history().await.unwrap();
    assert!(
        history[0]
            .audit
            .comment
            .as_deref()
            .unwrap_or_default()
            .contains("move-bucket-0")
    );
}

#[tokio::test]
async fn abandoning_releases_the_fence_and_keeps_the_map() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let (moving, staying, source) = two_keys_on_one_shard(&sharded);
    let destination = other(&source);
    fill(&sharded, &moving, 1, 50).await;
    fill(&sharded, &staying, 1, 5).await;
    // A destination row of the moving key that the source does not have: verification fails.
    sharded
        .for_shard_id(destination)
        .unwrap()
        .execute_sql(
            "INSERT INTO items (id, tenant, n) VALUES ('stray', ?1, 0)",
            Params::from(vec![moving.as_str()]),
        )
        .await
        .unwrap();
    let migrator = Resharder::new(sharded.clone());
    let source_client = sharded.for_shard_id(&source).unwrap();
    let captured = |client: std::sync::Arc<dyn DataClient>| async move {
        client
            .execute_read_only_sql(
                "SELECT count(*) FROM sqlite_master WHERE name LIKE '\\_shardlite\\_captur%' ESCAPE '\\'",
                Params::none(),
            )
            .await
            .unwrap()
            .rows[0][0]
            .as_i64()
            .unwrap()
    };
    // Online, verification against a snapshot fails before any fence: writes go on, the
    // capture stays for a resume, and abandoning removes it.
    let online = migrator.migrate(key_request(&moving, destination, 20)).await.unwrap();
    assert_eq!(online.status, ReshardStatus::VerificationFailed, "{online:#?}");
    assert_eq!(online.receipts[0].destination_rows, Some(51));
    assert!(fences_on(&source_client).await.unwrap().is_empty());
    assert_eq!(
        captured(std::sync::Arc::clone(&source_client)).await,
        7,
        "three triggers per item and the change table"
    );
    sharded
        .for_route(route(&moving))
        .execute_sql(
            "UPDATE items SET n = n + 1 WHERE tenant = ?1",
            Params::from(vec![moving.as_str()]),
        )
        .await
        .unwrap();
    migrator.abandon(&online.migration_id).await.unwrap();
    assert_eq!(captured(std::sync::Arc::clone(&source_client)).await, 0);

    // The fenced mode keeps its fence until resumed or abandoned.
    let mut request = key_request(&moving, destination, 20);
    request.online = false;
    let failed = migrator.migrate(request).await.unwrap();
    assert_eq!(failed.status, ReshardStatus::VerificationFailed);
    assert_eq!(failed.receipts[0].destination_rows, Some(51));
    assert_eq!(fences_on(&source_client).await.unwrap().len(), 1);

    let abandoned = migrator.abandon(&failed.migration_id).await.unwrap();
    assert_eq!(abandoned.status, ReshardStatus::Failed);
    assert_eq!(abandoned.phase, ReshardPhase::Abandoned);
    assert!(!abandoned.requires_operator_recovery && abandoned.recovery_action.is_none());
    assert!(fences_on(&source_client).await.unwrap().is_empty());
    sharded
        .for_route(route(&moving))
        .execute_sql(
            "UPDATE items SET n = n + 1 WHERE tenant = ?1",
            Params::from(vec![moving.as_str()]),
        )
        .await
        .unwrap();
    assert_eq!(owner(&sharded, &moving), source);
    assert_eq!(migrator.history().await.unwrap().len(), 4);

    // A migration whose new map is written cannot be abandoned: it is finished instead.
    let mut request = key_request(&staying, destination, 20);
    request.activate = false;
    request.delete_source = false;
    let pending = migrator.migrate(request).await.unwrap();
    assert_eq!(pending.status, ReshardStatus::PendingActivation);
    let refused = migrator.abandon(&pending.migration_id).await.unwrap_err();
    assert!(refused.to_string().contains("already wrote map version 2"), "{refused}");
}

#[tokio::test]
async fn a_catalog_failure_after_the_copy_leaves_the_source_whole_and_resume_finishes() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let (moving, _, source) = two_keys_on_one_shard(&sharded);
    let destination = other(&source);
    fill(&sharded, &moving, 1, 120).await;
    let before = items_on(&sharded, &source, &moving).await;
    let master_file = master.clone();
    let raced = std::sync::atomic::AtomicBool::new(false);
    // Another operator writes a pending map (version 2) while the data is being copied.
    let migrator = Resharder::new(sharded.clone()).with_observer(move |_| {
        if !raced.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let conn = rusqlite::Connection::open(&master_file).unwrap();
            conn.execute_batch(
                "INSERT INTO shardlite_map_records (kind, key, map_version, value)
                     SELECT kind, key, 2, json_set(value, '$.mapVersion', 2) FROM shardlite_map_records
                     WHERE kind = 'header';
                 UPDATE shardlite_map_versions SET pending_version = 2;",
            )
            .unwrap();
        }
    });

    let result = migrator.migrate(key_request(&moving, destination, 50)).await.unwrap();

    assert_eq!(result.status, ReshardStatus::CatalogApplyFailed, "{result:#?}");
    assert!(result.requires_operator_recovery);
    assert!(result.recovery_action.as_deref().unwrap().contains("catalog"));
    assert!(result.receipts.iter().all(|r| r.verified && r.source_rows_deleted == 0));
    // Nothing was deleted: the source still owns and holds every row; the copy is on the destination.
    assert_eq!(owner(&sharded, &moving), source);
    assert_eq!(items_on(&sharded, &source, &moving).await, before);
    assert_eq!(items_on(&sharded, destination, &moving).await, before);

    // The operator clears the other pending map; resume writes its own, activates, deletes.
    let conn = rusqlite::Connection::open(&master).unwrap();
    conn.execute_batch(
        "DELETE FROM shardlite_map_records WHERE map_version = 2;
         UPDATE shardlite_map_versions SET pending_version = NULL;",
    )
    .unwrap();
    let resumed = Resharder::new(sharded.clone())
        .resume(&result.migration_id, ResumeRequest::default())
        .await
        .unwrap();
    assert_eq!(resumed.status, ReshardStatus::Activated, "{resumed:#?}");
    assert_eq!(owner(&sharded, &moving), destination);
    assert_eq!(items_on(&sharded, &source, &moving).await.0, 0);
    assert_eq!(items_on(&sharded, destination, &moving).await, before);
}

/// A checkpoint as an earlier release wrote it: every member at the top level of its spec
/// (`kind`, `routeKey` or the bucket range, `operator`, `comment`).
fn old_checkpoint(id: &str, spec: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "migrationId": id,
        "status": "Failed",
        "phase": "copying",
        "message": "the migration failed: the destination went away",
        "spec": spec,
        "mapVersion": 1,
        "requiresOperatorRecovery": true,
        "recoveryAction": "resume it",
        "receipts": [],
        "issues": [],
        "attempt": 1,
        "startedUtc": "2025-01-01T00:00:00Z",
        "updatedUtc": "2025-01-01T00:00:01Z",
        "completedUtc": "2025-01-01T00:00:01Z"
    })
}

#[tokio::test]
async fn checkpoints_written_by_earlier_releases_read_and_are_written_back_in_their_shape() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let key = key_in_bucket(0, "old");
    let source = owner(&sharded, &key);
    // A route-key move stored before online moves existed (no `online`), and a bucket-range one
    // stored since.
    let key_spec = serde_json::json!({
        "kind": "ExactRouteKey",
        "keyspace": "tenants",
        "routeKey": key,
        "sourceShardId": source,
        "destinationShardId": other(&source),
        "manifest": { "pageSize": 10, "tables": [
            { "tableName": "items", "routeKeyColumn": "tenant", "primaryKeyColumn": "id" }
        ], "collections": [] },
        "activate": true,
        "deleteSource": true,
        "operator": "ada",
        "comment": "before online moves"
    });
    let range_spec = serde_json::json!({
        "kind": "BucketRange",
        "keyspace": "tenants",
        "startBucketInclusive": 0,
        "endBucketExclusive": 1,
        "sourceShardId": "s0",
        "destinationShardId": "s1",
        "manifest": { "tables": [], "collections": [
            { "collectionName": "profiles", "routeKeyProperty": "tenant" }
        ] },
        "activate": false,
        "deleteSource": false,
        "online": true
    });
    let file = rusqlite::Connection::open(&master).unwrap();
    for (id, spec) in [("old-key", &key_spec), ("old-range", &range_spec)] {
        file.execute(
            "INSERT INTO shardlite_migration_checkpoints (migration_id, updated_utc, keyspace, status, payload_json)
             VALUES (?1, '2025-01-01T00:00:01Z', 'tenants', 'Failed', ?2)",
            (id, old_checkpoint(id, spec.clone()).to_string()),
        )
        .unwrap();
    }

    let migrator = Resharder::new(sharded.clone());
    let old_key = migrator
        .status("old-key")
        .await
        .unwrap()
        .expect("the route-key checkpoint");
    assert_eq!(
        old_key.spec.scope,
        ReshardScope::RouteKey {
            keyspace: "tenants".into(),
            route_key: key.clone(),
        }
    );
    assert_eq!(old_key.spec.source_shard_id, source);
    assert!(!old_key.spec.online, "recorded before online moves: it ran fenced");
    assert_eq!(old_key.spec.audit, Audit::by("ada").because("before online moves"));
    let old_range = migrator
        .status("old-range")
        .await
        .unwrap()
        .expect("the bucket-range checkpoint");
    assert_eq!(
        old_range.spec.scope,
        ReshardScope::BucketRange {
            keyspace: "tenants".into(),
            source_shard_id: "s0".into(),
            start_bucket_inclusive: 0,
            end_bucket_exclusive: 1,
        }
    );
    assert!(old_range.spec.online && old_range.spec.audit.is_empty());
    assert_eq!(migrator.migrations().await.unwrap().len(), 2);

    // Abandoning each writes its checkpoint and a history row again: the spec in the shape it had.
    for id in ["old-key", "old-range"] {
        let abandoned = migrator.abandon(id).await.unwrap();
        assert_eq!(abandoned.phase, ReshardPhase::Abandoned, "{abandoned:#?}");
    }
    let stored_spec = |id: &str| -> serde_json::Value {
        let payload: String = file
            .query_row(
                "SELECT payload_json FROM shardlite_migration_checkpoints WHERE migration_id = ?1",
                [id],
                |row| row.get(0),
            )
            .unwrap();
        serde_json::from_str::<serde_json::Value>(&payload).unwrap()["spec"].clone()
    };
    let mut key_written = key_spec.clone();
    key_written["online"] = serde_json::json!(false);
    assert_eq!(stored_spec("old-key"), key_written);
    assert_eq!(stored_spec("old-range"), range_spec);
    let history = migrator.history().await.unwrap();
    assert_eq!(history.len(), 2);
    assert!(history.iter().all(|m| m.phase == ReshardPhase::Abandoned));
}
