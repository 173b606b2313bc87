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
/// the three versions written (seeded, one pin more, one endpoint changed and active). Three
/// changes of pins follow (versions 4 to 6: the header and one new pin each, and version 4
/// unpins `tenant-1`).
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
    follows_changes_of_pins(&catalog, &reopened, &v3).await;
    [v1, v2, v3]
}

/// Changes of pins sent as patches, applied and activated by `catalog` after it read the maps
/// once, are followed by the records they wrote: no handle reads the maps whole again, and
/// `other` (another handle) follows them too.
async fn follows_changes_of_pins(catalog: &Catalog, other: &Catalog, active: &ShardingOptions) {
    let read = catalog.maps_read_whole();
    assert!(read >= 1);
    let other_read = other
        .validate_update(&CatalogUpdateRequest::new(active.clone()))
        .await
        .map(|_| other.maps_read_whole())
        .unwrap();
    let mut expected = active.clone();
    for version in 4..=6 {
        let key = format!("tenant-follow-{version}");
        let mut pins = serde_json::json!({ key.clone(): "s2" });
        if version == 4 {
            pins["tenant-1"] = serde_json::Value::Null;
        }
        let patch =
            shardlite::map::MapPatch::new(serde_json::json!({ "mapVersion": version, "exactKeyPins": pins })).unwrap();
        let request = CatalogUpdateRequest::new(patch).expecting_version(u64::try_from(version - 1).unwrap());
        let applied = catalog.apply_update(acknowledged(request)).await.unwrap();
        assert!(applied.applied, "{:?}", applied.validation.issues);
        catalog
            .activate_pending(&ActivationRequest::new(u64::try_from(version).unwrap()))
            .await
            .unwrap();
        expected.map_version = version;
        expected.exact_key_pins.insert(key, "s2".to_owned());
        expected.exact_key_pins.remove("tenant-1");
    }
    assert_eq!(
        catalog.maps_read_whole(),
        read,
        "the changes were followed, not read whole"
    );
    // The followed maps are the stored ones.
    let validation = catalog
        .validate_update(&CatalogUpdateRequest::new(expected.clone()))
        .await
        .unwrap();
    assert_eq!(validation.current_map_version, 6);
    assert!(
        validation.moved_pins.is_empty() && validation.shard_changes.is_empty(),
        "{validation:?}"
    );
    assert_eq!(catalog.active_options().await.unwrap().as_ref(), Some(&expected));
    // Another handle follows what this one wrote.
    let validation = other
        .validate_update(&CatalogUpdateRequest::new(expected.clone()))
        .await
        .unwrap();
    assert_eq!(validation.current_map_version, 6);
    assert!(validation.moved_pins.is_empty(), "{validation:?}");
    assert_eq!(other.maps_read_whole(), other_read);
}
