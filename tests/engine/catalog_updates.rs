//! Catalog updates: validate, apply with compare-and-set, activate.

use std::sync::Arc;

use crate::support::{temp_dir, with_third_shard};
use shardlite::catalog::Catalog;
use shardlite::data::{
    ActivationRequest, Audit, CatalogUpdateRequest, IssueSeverity, MovedBuckets, MovedPin, ShardChange, ShardChangeKind,
};
use shardlite::map::BucketRange;
use shardlite::{Error, ErrorKind};

async fn seeded_catalog(dir: &std::path::Path) -> Catalog {
    Catalog::open(crate::support::seeded_master(dir).await).await.unwrap()
}

fn codes(validation: &shardlite::data::CatalogValidation) -> Vec<(IssueSeverity, String)> {
    validation
        .issues
        .iter()
        .map(|issue| (issue.severity, issue.code.clone()))
        .collect()
}

#[tokio::test]
async fn validation_lists_what_moves_and_requires_an_acknowledgement() {
    let dir = temp_dir();
    let catalog = seeded_catalog(dir.path()).await;

    let compatible = catalog
        .validate_update(&CatalogUpdateRequest::new(with_third_shard(dir.path())))
        .await
        .unwrap();
    assert!(compatible.valid, "{compatible:?}");
    assert!(!compatible.requires_data_migration);
    assert_eq!(
        codes(&compatible),
        [(IssueSeverity::Info, "metadata-compatible".to_owned())]
    );
    assert_eq!(
        compatible.shard_changes,
        [ShardChange {
            shard_id: "s2".into(),
            change: ShardChangeKind::Added
        }]
    );
    assert_eq!(compatible.preview.as_ref().unwrap().map_version, 2);

    // Move bucket 1 to s2, and re-pin tenant-b to s0.
    let mut moving = with_third_shard(dir.path());
    moving.bucket_ranges = vec![
        BucketRange::new(0, 1, "s0"),
        BucketRange::new(1, 2, "s2"),
        BucketRange::new(2, 4, "s1"),
    ];
    moving.exact_key_pins.insert("tenant-b".into(), "s0".into());
    let refused = catalog
        .validate_update(&CatalogUpdateRequest::new(moving.clone()))
        .await
        .unwrap();
    assert!(!refused.valid);
    assert!(refused.requires_data_migration);
    assert_eq!(
        codes(&refused),
        [(IssueSeverity::Error, "ownership-change-requires-migration".to_owned())]
    );
    assert!(refused.issues[0].message.contains("migrate"), "{:?}", refused.issues);
    assert_eq!(refused.moved_buckets, [MovedBuckets(1, 2, "s0".into(), "s2".into())]);
    assert_eq!(
        refused.moved_pins,
        [MovedPin("tenant-b".into(), "s1".into(), "s0".into())]
    );
    let json = serde_json::to_value(&refused).unwrap();
    assert_eq!(json["movedBuckets"], serde_json::json!([[1, 2, "s0", "s2"]]));
    assert_eq!(json["movedPins"], serde_json::json!([["tenant-b", "s1", "s0"]]));

    let mut acknowledged = CatalogUpdateRequest::new(moving);
    acknowledged.allow_ownership_change = true;
    let acknowledged = catalog.validate_update(&acknowledged).await.unwrap();
    assert!(acknowledged.valid);
    assert_eq!(
        codes(&acknowledged),
        [(IssueSeverity::Warning, "ownership-change-acknowledged".to_owned())]
    );
}

#[tokio::test]
async fn stale_and_invalid_updates_are_refused_naming_the_problem() {
    let dir = temp_dir();
    let catalog = seeded_catalog(dir.path()).await;

    let mut stale = CatalogUpdateRequest::new(with_third_shard(dir.path()));
    stale.expected_current_map_version = Some(7);
    let validation = catalog.validate_update(&stale).await.unwrap();
    assert_eq!(codes(&validation)[0].1, "map-version-mismatch");
    let err = catalog.apply_update(stale).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MapVersionConflict);
    assert!(
        matches!(
            err,
            Error::MapVersionConflict {
                expected: 7,
                current: 1
            }
        ),
        "{err}"
    );

    let mut same_version = with_third_shard(dir.path());
    same_version.map_version = 1;
    let applied = catalog
        .apply_update(CatalogUpdateRequest::new(same_version))
        .await
        .unwrap();
    assert!(!applied.applied);
    assert_eq!(codes(&applied.validation)[0].1, "map-version-not-incremented");

    let mut broken = with_third_shard(dir.path());
    broken.bucket_ranges.pop();
    let applied = catalog.apply_update(CatalogUpdateRequest::new(broken)).await.unwrap();
    assert!(!applied.applied);
    assert_eq!(codes(&applied.validation)[0].1, "invalid-map");
    assert!(
        applied.validation.issues[0].message.contains("bucket"),
        "{:?}",
        applied.validation
    );

    let mut renamed = with_third_shard(dir.path());
    renamed.keyspace = "accounts".into();
    let applied = catalog.apply_update(CatalogUpdateRequest::new(renamed)).await.unwrap();
    assert_eq!(codes(&applied.validation)[0].1, "keyspace-changed");

    let mut rebucketed = with_third_shard(dir.path());
    rebucketed.virtual_bucket_count = 8;
    rebucketed.bucket_ranges = vec![BucketRange::new(0, 4, "s0"), BucketRange::new(4, 8, "s1")];
    let applied = catalog
        .apply_update(CatalogUpdateRequest::new(rebucketed))
        .await
        .unwrap();
    assert_eq!(codes(&applied.validation)[0].1, "bucket-count-changed");

    let mut onto_master = with_third_shard(dir.path());
    onto_master.shards[2].data_source = Some(crate::support::path_str(&dir.path().join("master.db")));
    let applied = catalog
        .apply_update(CatalogUpdateRequest::new(onto_master))
        .await
        .unwrap();
    assert!(!applied.applied);
    assert_eq!(codes(&applied.validation)[0].1, "invalid-map");
    assert!(
        applied.validation.issues[0].message.contains("s2"),
        "{:?}",
        applied.validation
    );

    // Nothing of the refused updates was written.
    assert_eq!(catalog.pending_options().await.unwrap(), None);
    assert_eq!(catalog.history().await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_twenty_concurrent_applies_with_the_same_expected_version_exactly_one_wins() {
    let dir = temp_dir();
    let catalog = Arc::new(seeded_catalog(dir.path()).await);
    // Separate handles on the same file, as separate operators would have.
    let mut handles = Vec::new();
    for n in 0..20 {
        let master = dir.path().join("master.db");
        let map = with_third_shard(dir.path());
        handles.push(tokio::spawn(async move {
            let catalog = Catalog::open(master).await.unwrap();
            let mut request = CatalogUpdateRequest::new(map);
            request.expected_current_map_version = Some(1);
            request.audit = Audit::by(format!("operator-{n}"));
            (n, catalog.apply_update(request).await)
        }));
    }
    let mut winners = Vec::new();
    for handle in handles {
        let (n, outcome) = handle.await.unwrap();
        match outcome {
            Ok(result) if result.applied => winners.push(n),
            Ok(result) => panic!("operator-{n}: refused by validation: {:?}", result.validation),
            Err(err) => assert_eq!(err.kind(), ErrorKind::MapVersionConflict, "operator-{n}: {err}"),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    let history = catalog.history().await.unwrap();
    assert_eq!(history.len(), 2, "{history:?}");
    assert_eq!(
        history[0].audit.operator.as_deref(),
        Some(format!("operator-{}", winners[0]).as_str())
    );
    assert_eq!(history[0].map_version, 2);
    assert_eq!(catalog.newest_version().await.unwrap(), Some(2));
}

#[tokio::test]
async fn activation_makes_the_pending_map_active_and_records_it() {
    let dir = temp_dir();
    let catalog = seeded_catalog(dir.path()).await;

    let err = catalog.activate_pending(&ActivationRequest::new(2)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.to_string().contains("no pending map"), "{err}");

    let mut request = CatalogUpdateRequest::new(with_third_shard(dir.path()));
    request.expected_current_map_version = Some(1);
    let applied = catalog.apply_update(request).await.unwrap();
    assert_eq!(applied.pending_map_version, Some(2));
    // Still version 1 until activated.
    assert_eq!(catalog.active_version().await.unwrap(), Some(1));

    let wrong = catalog.activate_pending(&ActivationRequest::new(3)).await.unwrap_err();
    assert!(wrong.to_string().contains("the pending map is version 2"), "{wrong}");

    let (previous, next) = catalog
        .activate_pending(&ActivationRequest::new(2).audit(Audit::by("ada").because("add s2")))
        .await
        .unwrap();
    assert_eq!((previous.version(), next.version()), (1, 2));
    assert_eq!(catalog.active_version().await.unwrap(), Some(2));
    assert_eq!(catalog.pending_options().await.unwrap(), None);
    let history = catalog.history().await.unwrap();
    assert_eq!(history[0].audit.operator.as_deref(), Some("ada"));
    assert_eq!(history[0].audit.comment.as_deref(), Some("add s2"));
    assert_eq!(history.len(), 3);
}
