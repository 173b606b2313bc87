//! A large map, and the checks every catalog store must pass with it: seed, a change of one
//! pin, a change of one shard's endpoint, activation, each version's map rebuilt from the
//! stored changes, and the history of all of it.

use shardlite::catalog::Catalog;
use shardlite::data::{ActivationRequest, CatalogUpdateRequest};
use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};

/// A map of `shards` shards on data hosts (no local files to create), two buckets each, and
/// `pins` exact-key pins spread over them.
pub fn large_options(shards: usize, pins: usize) -> ShardingOptions {
    let shard = |index: usize| {
        let mut definition = ShardDefinition::local(format!("s{index}"), String::new());
        definition.data_source = None;
        definition.endpoint = Some(format!("http://127.0.0.1:{}", 20_000 + index % 8));
        definition.transport = Some("http".to_owned());
        definition.remote_shard_id = Some(format!("s{index}"));
        definition
    };
    let bucket = |index: usize| i64::try_from(index * 2).unwrap();
    ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: bucket(shards),
        shards: (0..shards).map(shard).collect(),
        bucket_ranges: (0..shards)
            .map(|i| BucketRange::new(bucket(i), bucket(i + 1), format!("s{i}")))
            .collect(),
        exact_key_pins: (0..pins)
            .map(|i| (format!("tenant-{i}"), format!("s{}", i * 7 % shards)))
            .collect(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    }
}

/// `request` acknowledging that a new pin places its key on another shard than its bucket's.
pub fn acknowledged(mut request: CatalogUpdateRequest) -> CatalogUpdateRequest {
    request.allow_ownership_change = true;
    request
}

/// Version 2 of `map`: one pin more (a new key, so nothing changes owner).
pub fn with_one_more_pin(map: &ShardingOptions) -> ShardingOptions {
    let mut next = map.clone();
    next.map_version += 1;
    next.exact_key_pins.insert("tenant-new".to_owned(), "s1".to_owned());
    next
}

/// Checks the catalog at `master` (empty) with a map of `shards` shards and `pins` pins; returns
/// the three versions written (seeded, one pin more, one endpoint changed and active).
pub async fn large_map_conformance(master: &str, shards: usize, pins: usize) -> [ShardingOptions; 3] {
    let catalog = Catalog::open(master).await.unwrap();
    let v1 = large_options(shards, pins);
    catalog.seed(v1.clone(), false).await.unwrap();
    assert_eq!(catalog.active_options().await.unwrap().as_ref(), Some(&v1));

    let v2 = with_one_more_pin(&v1);
    let applied = catalog
        .apply_update(acknowledged(CatalogUpdateRequest::new(v2.clone()).expecting_version(1)))
        .await
        .unwrap();
    assert!(applied.applied, "{:?}", applied.validation.issues);
    assert_eq!(catalog.pending_options().await.unwrap().as_ref(), Some(&v2));
    assert_eq!(catalog.active_options().await.unwrap().as_ref(), Some(&v1));

    // A second pending change replaces the first: one shard's endpoint moves.
    let mut v3 = v2.clone();
    v3.map_version = 3;
    v3.shards[1].endpoint = Some("http://127.0.0.1:29999".to_owned());
    let applied = catalog
        .apply_update(acknowledged(CatalogUpdateRequest::new(v3.clone()).expecting_version(2)))
        .await
        .unwrap();
    assert!(applied.applied, "{:?}", applied.validation.issues);
    let stale = catalog
        .apply_update(acknowledged(CatalogUpdateRequest::new(v3.clone()).expecting_version(2)))
        .await
        .unwrap_err();
    assert_eq!(stale.kind(), shardlite::ErrorKind::MapVersionConflict, "{stale}");
    catalog.activate_pending(&ActivationRequest::new(3)).await.unwrap();
    assert_eq!(catalog.active_options().await.unwrap().as_ref(), Some(&v3));
    assert_eq!(catalog.pending_options().await.unwrap(), None);

    // Every version's map is rebuilt from what each version changed.
    assert_eq!(catalog.map_at_version(1).await.unwrap().as_ref(), Some(&v1));
    assert_eq!(catalog.map_at_version(2).await.unwrap().as_ref(), Some(&v2));
    assert_eq!(catalog.map_at_version(3).await.unwrap().as_ref(), Some(&v3));
    assert_eq!(catalog.map_at_version(4).await.unwrap(), None);
    let versions: Vec<u64> = catalog.history().await.unwrap().iter().map(|e| e.map_version).collect();
    assert_eq!(versions, vec![3, 3, 2, 1]);

    // Another handle reads the same.
    let reopened = Catalog::open(master).await.unwrap();
    assert_eq!(reopened.active_options().await.unwrap().as_ref(), Some(&v3));
    [v1, v2, v3]
}
