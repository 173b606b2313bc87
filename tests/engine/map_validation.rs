//! Shard-map validation: one test per rule of SPEC section 2, each asserting both the
//! [`MapError`] variant and that its message names the offending item, plus the
//! secret-free, canonical snapshot.

use std::collections::BTreeMap;

use shardlite::map::{
    BucketRange, MAX_VIRTUAL_BUCKETS, MapError, Secret, ShardDefinition, ShardMap, ShardRole, ShardingOptions,
};
use shardlite::routing::{RouteSource, bucket_for_token, route_token};
use shardlite::{Error, ErrorKind};

/// Two primaries over eight buckets: `s0` owns `[0, 4)`, `s1` owns `[4, 8)`.
fn two_shards() -> ShardingOptions {
    ShardingOptions {
        keyspace: "tenants".to_owned(),
        map_version: 3,
        virtual_bucket_count: 8,
        shards: vec![
            ShardDefinition::local("s0", "s0.db"),
            ShardDefinition::local("s1", "s1.db"),
        ],
        bucket_ranges: vec![BucketRange::new(0, 4, "s0"), BucketRange::new(4, 8, "s1")],
        exact_key_pins: BTreeMap::new(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    }
}

/// A replica `id` following `primary` (or no primary when `None`).
fn replica(id: &str, primary: Option<&str>) -> ShardDefinition {
    let mut shard = ShardDefinition::local(id, format!("{id}.db"));
    shard.role = Some("Replica".to_owned());
    shard.replica.primary_shard_id = primary.map(str::to_owned);
    shard
}

/// `two_shards` plus a valid replica `r1` of `s0`.
fn with_replica() -> ShardingOptions {
    let mut options = two_shards();
    options.shards.push(replica("r1", Some("s0")));
    options
}

/// Validates `options`, which must fail; returns the error and its message.
fn refuse(options: ShardingOptions) -> (MapError, String) {
    match ShardMap::new(options) {
        Ok(map) => panic!("map should have been refused: {:?}", map.snapshot()),
        Err(err) => {
            let message = err.to_string();
            (err, message)
        }
    }
}

/// Parses and validates `json`, which must fail; returns the error and its message.
fn refuse_json(json: &str) -> (Error, String) {
    match ShardMap::from_json(json) {
        Ok(map) => panic!("map should have been refused: {:?}", map.snapshot()),
        Err(err) => {
            let message = err.to_string();
            (err, message)
        }
    }
}

fn assert_names(message: &str, items: &[&str]) {
    for item in items {
        assert!(message.contains(item), "message {message:?} should name {item:?}");
    }
}

#[test]
fn the_base_maps_used_below_are_valid() {
    // Every refusal below is a single edit away from one of these, so they must pass.
    let map = ShardMap::new(two_shards()).unwrap();
    assert_eq!(map.bucket_count(), 8);
    let map = ShardMap::new(with_replica()).unwrap();
    assert_eq!(map.shard("r1").unwrap().role, ShardRole::Replica);
}

#[test]
fn gap_in_bucket_coverage_names_the_first_uncovered_bucket() {
    let mut options = two_shards();
    options.bucket_ranges = vec![BucketRange::new(5, 8, "s1"), BucketRange::new(0, 3, "s0")];
    let (err, message) = refuse(options);
    assert_eq!(err, MapError::BucketGap { bucket: 3 });
    assert_names(&message, &["bucket 3"]);
}

#[test]
fn gap_at_the_end_is_refused() {
    let mut options = two_shards();
    options.bucket_ranges = vec![BucketRange::new(0, 4, "s0"), BucketRange::new(4, 7, "s1")];
    let (err, message) = refuse(options);
    assert_eq!(err, MapError::BucketGap { bucket: 7 });
    assert_names(&message, &["bucket 7"]);
}

#[test]
fn overlap_names_the_bucket_and_both_shards() {
    let mut options = two_shards();
    options.bucket_ranges = vec![BucketRange::new(0, 5, "s0"), BucketRange::new(4, 8, "s1")];
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::BucketOverlap {
            bucket: 4,
            first: "s0".into(),
            second: "s1".into()
        }
    );
    assert_names(&message, &["bucket 4", "'s0'", "'s1'"]);
}

#[test]
fn overlap_is_found_when_ranges_are_listed_out_of_order() {
    let mut options = two_shards();
    options.bucket_ranges = vec![
        BucketRange::new(4, 8, "s1"),
        BucketRange::new(2, 4, "s0"),
        BucketRange::new(0, 3, "s0"),
    ];
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::BucketOverlap {
            bucket: 2,
            first: "s0".into(),
            second: "s0".into()
        }
    );
    assert_names(&message, &["bucket 2", "'s0'"]);

    let mut options = two_shards();
    options.bucket_ranges = vec![BucketRange::new(3, 8, "s1"), BucketRange::new(0, 4, "s0")];
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::BucketOverlap {
            bucket: 3,
            first: "s1".into(),
            second: "s0".into()
        }
    );
    assert_names(&message, &["bucket 3", "'s0'", "'s1'"]);
}

#[test]
fn range_past_the_bucket_count_is_refused() {
    let mut options = two_shards();
    options.bucket_ranges = vec![BucketRange::new(0, 4, "s0"), BucketRange::new(4, 9, "s1")];
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::InvalidRange {
            shard_id: "s1".into(),
            start: 4,
            end: 9,
            bucket_count: 8
        }
    );
    assert_names(&message, &["[4, 9)", "'s1'", "8"]);
}

#[test]
fn range_starting_below_zero_is_refused() {
    let mut options = two_shards();
    options.bucket_ranges = vec![BucketRange::new(-1, 4, "s0"), BucketRange::new(4, 8, "s1")];
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::InvalidRange {
            shard_id: "s0".into(),
            start: -1,
            end: 4,
            bucket_count: 8
        }
    );
    assert_names(&message, &["[-1, 4)", "'s0'"]);
}

#[test]
fn empty_range_is_refused() {
    let mut options = two_shards();
    options.bucket_ranges = vec![
        BucketRange::new(0, 4, "s0"),
        BucketRange::new(4, 4, "s1"),
        BucketRange::new(4, 8, "s1"),
    ];
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::InvalidRange {
            shard_id: "s1".into(),
            start: 4,
            end: 4,
            bucket_count: 8
        }
    );
    assert_names(&message, &["[4, 4)", "'s1'", "empty"]);
}

#[test]
fn reversed_range_is_refused() {
    let mut options = two_shards();
    options.bucket_ranges = vec![BucketRange::new(4, 0, "s0"), BucketRange::new(4, 8, "s1")];
    let (err, message) = refuse(options);
    assert!(
        matches!(err, MapError::InvalidRange { start: 4, end: 0, .. }),
        "{err:?}"
    );
    assert_names(&message, &["[4, 0)", "'s0'"]);
}

#[test]
fn range_naming_an_unknown_shard_is_refused() {
    let mut options = two_shards();
    options.bucket_ranges[1].shard_id = "s9".into();
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::RangeUnknownShard {
            shard_id: "s9".into(),
            start: 4,
            end: 8
        }
    );
    assert_names(&message, &["'s9'", "[4, 8)"]);
}

#[test]
fn ranges_and_pins_name_shards_ignoring_case() {
    let mut options = two_shards();
    options.bucket_ranges[1].shard_id = " S1 ".into();
    options.exact_key_pins.insert("vip".into(), "S0".into());
    let map = ShardMap::new(options).unwrap();
    assert_eq!(map.canonical_ranges()[1], BucketRange::new(4, 8, "s1"));
    assert_eq!(map.resolve("tenants", "vip").unwrap().shard_id, "s0");
}

#[test]
fn pin_naming_an_unknown_shard_is_refused() {
    let mut options = two_shards();
    options.exact_key_pins.insert("tenant-x".into(), "s9".into());
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::PinUnknownShard {
            key: "tenant-x".into(),
            shard_id: "s9".into()
        }
    );
    assert_names(&message, &["'tenant-x'", "'s9'"]);
}

#[test]
fn replica_owning_a_bucket_range_is_refused() {
    let mut options = with_replica();
    options.bucket_ranges[1].shard_id = "r1".into();
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::RangeOwnedByReplica {
            shard_id: "r1".into(),
            start: 4,
            end: 8
        }
    );
    assert_names(&message, &["'r1'", "[4, 8)", "replica"]);
}

#[test]
fn replica_owning_a_pin_is_refused() {
    let mut options = with_replica();
    options.exact_key_pins.insert("vip".into(), "R1".into());
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::PinOwnedByReplica {
            key: "vip".into(),
            shard_id: "r1".into()
        }
    );
    assert_names(&message, &["'vip'", "'r1'", "replica"]);
}

#[test]
fn replica_without_primary_shard_id_is_refused() {
    for primary in [None, Some("   ")] {
        let mut options = two_shards();
        options.shards.push(replica("r1", primary));
        let (err, message) = refuse(options);
        assert_eq!(
            err,
            MapError::ReplicaWithoutPrimary { shard_id: "r1".into() },
            "{primary:?}"
        );
        assert_names(&message, &["'r1'", "primaryShardId"]);
    }
}

#[test]
fn replica_of_an_unknown_primary_is_refused() {
    let mut options = two_shards();
    options.shards.push(replica("r1", Some("s9")));
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::ReplicaOfUnknownShard {
            shard_id: "r1".into(),
            primary_shard_id: "s9".into()
        }
    );
    assert_names(&message, &["'r1'", "'s9'"]);
}

#[test]
fn replica_naming_itself_is_refused() {
    for own_id in ["r1", "R1"] {
        let mut options = two_shards();
        options.shards.push(replica("r1", Some(own_id)));
        let (err, message) = refuse(options);
        assert_eq!(err, MapError::ReplicaOfItself { shard_id: "r1".into() }, "{own_id}");
        assert_names(&message, &["'r1'", "itself"]);
    }
}

#[test]
fn replica_naming_another_replica_is_refused() {
    let mut options = with_replica();
    options.shards.push(replica("r2", Some("r1")));
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::ReplicaOfReplica {
            shard_id: "r2".into(),
            primary_shard_id: "r1".into()
        }
    );
    assert_names(&message, &["'r2'", "'r1'", "primary"]);
}

#[test]
fn primary_with_any_replica_field_is_refused() {
    type Edit = fn(&mut ShardDefinition);
    let edits: [(&str, Edit); 4] = [
        ("primaryShardId", |s| s.replica.primary_shard_id = Some("s0".into())),
        ("promotionEligible", |s| s.replica.promotion_eligible = true),
        ("replicationLagBytes", |s| s.replica.replication_lag_bytes = Some(0)),
        ("lastReplicatedUtc", |s| {
            s.replica.last_replicated_utc = Some("2026-06-01T12:30:00Z".into());
        }),
    ];
    for (field, edit) in edits {
        let mut options = two_shards();
        edit(&mut options.shards[1]);
        let (err, message) = refuse(options);
        assert_eq!(
            err,
            MapError::PrimaryWithReplicaField {
                shard_id: "s1".into(),
                field
            }
        );
        assert_names(&message, &["'s1'", field]);
    }
}

#[test]
fn replica_fields_are_accepted_on_a_replica() {
    let mut options = with_replica();
    let r1 = &mut options.shards[2];
    r1.replica.promotion_eligible = true;
    r1.replica.replication_lag_bytes = Some(0);
    r1.replica.last_replicated_utc = Some("2026-06-01T12:30:00Z".into());
    let map = ShardMap::new(options).unwrap();
    let r1 = map.shard("R1").unwrap();
    assert_eq!(r1.replica.primary_shard_id.as_deref(), Some("s0"));
    assert!(r1.replica.promotion_eligible);
}

#[test]
fn negative_replication_lag_is_refused() {
    let mut options = with_replica();
    options.shards[2].replica.replication_lag_bytes = Some(-1);
    let (err, message) = refuse(options);
    assert_eq!(
        err,
        MapError::NegativeReplicationLag {
            shard_id: "r1".into(),
            value: -1
        }
    );
    assert_names(&message, &["'r1'", "replicationLagBytes", "-1"]);
}

#[test]
fn duplicate_shard_ids_ignoring_case_are_refused() {
    let mut options = two_shards();
    options.shards[1].shard_id = "S1".into();
    options.shards.push(ShardDefinition::local("s1", "other.db"));
    let (err, message) = refuse(options);
    assert_eq!(err, MapError::DuplicateShardId { shard_id: "s1".into() });
    assert_names(&message, &["'s1'", "more than once"]);
}

#[test]
fn two_shards_with_one_file_are_refused_naming_both() {
    for (first, second) in [
        ("s0.db", "s0.db"),
        ("s0.db", " s0.db "),
        ("./s0.db", "s0.db"),
        ("s0.db", "data/../s0.db"),
        ("data/s0.db", "./data//s0.db"),
        ("/srv/m/s0.db", "/srv/m/./s0.db"),
    ] {
        let mut options = two_shards();
        options.shards[0].data_source = Some(first.into());
        options.shards[1].data_source = Some(second.into());
        let (err, message) = refuse(options);
        assert_eq!(
            err,
            MapError::DuplicateShardFile {
                first: "s0".into(),
                second: "s1".into(),
                file: second.trim().into(),
            },
            "{first:?} and {second:?}"
        );
        assert_names(&message, &["'s0'", "'s1'", second.trim()]);
    }
}

#[test]
fn a_disabled_shard_or_a_replica_cannot_share_a_file_either() {
    let mut options = with_replica();
    options.shards[2].data_source = Some("./s0.db".into());
    let (err, _) = refuse(options);
    assert!(
        matches!(&err, MapError::DuplicateShardFile { first, second, .. } if first == "s0" && second == "r1"),
        "{err:?}"
    );

    let mut options = two_shards();
    options.shards[1].enabled = false;
    options.shards[1].data_source = Some("s0.db".into());
    assert!(matches!(refuse(options).0, MapError::DuplicateShardFile { .. }));
}

#[test]
fn shard_files_differing_in_folder_or_case_are_distinct() {
    for (first, second) in [("s0.db", "data/s0.db"), ("s0.db", "S0.db"), ("s0.db", "../s0.db")] {
        let mut options = two_shards();
        options.shards[0].data_source = Some(first.into());
        options.shards[1].data_source = Some(second.into());
        assert!(ShardMap::new(options).is_ok(), "{first:?} and {second:?}");
    }
}

#[test]
fn shard_id_with_invalid_characters_is_refused() {
    for bad in ["bad id!", "shard/0", "é"] {
        let mut options = two_shards();
        options.shards[1].shard_id = bad.into();
        let (err, message) = refuse(options);
        assert_eq!(err, MapError::InvalidShardIdCharacters { shard_id: bad.into() });
        assert_names(&message, &[&format!("'{bad}'")]);
    }
}

#[test]
fn shard_id_with_a_colon_gets_its_own_error() {
    let mut options = two_shards();
    options.shards[1].shard_id = "a:b".into();
    let (err, message) = refuse(options);
    assert_eq!(err, MapError::ShardIdHasColon { shard_id: "a:b".into() });
    assert_names(&message, &["'a:b'", "':'"]);
}

#[test]
fn shard_ids_are_trimmed() {
    let mut options = two_shards();
    options.shards[1].shard_id = "  s1\t".into();
    let map = ShardMap::new(options).unwrap();
    assert_eq!(map.shards()[1].id, "s1");
}

#[test]
fn blank_shard_id_names_its_position() {
    let mut options = two_shards();
    options.shards[1].shard_id = "   ".into();
    let (err, message) = refuse(options);
    assert_eq!(err, MapError::BlankShardId { index: 1 });
    assert_names(&message, &["#1", "shardId"]);
}

#[test]
fn more_than_one_target_is_refused() {
    let mut options = two_shards();
    options.shards[1].endpoint = Some("http://127.0.0.1:61818".into());
    options.shards[1].transport = Some("http".into());
    let (err, message) = refuse(options);
    assert!(
        matches!(&err, MapError::MultipleTargets { shard_id, targets }
            if shard_id == "s1" && targets.contains("dataSource") && targets.contains("endpoint")),
        "{err:?}"
    );
    assert_names(&message, &["'s1'", "dataSource", "endpoint"]);

    let mut options = two_shards();
    options.shards[0].connection_string = Some(Secret::new("Data Source=x.db;Password=hunter2"));
    let (err, message) = refuse(options);
    assert!(
        matches!(&err, MapError::MultipleTargets { shard_id, targets }
            if shard_id == "s0" && targets.contains("connectionString")),
        "{err:?}"
    );
    assert_names(&message, &["'s0'", "connectionString"]);
    assert!(!message.contains("hunter2"), "secret leaked into {message:?}");
}

#[test]
fn no_target_is_refused() {
    let mut options = two_shards();
    options.shards[1].data_source = Some("   ".into());
    let (err, message) = refuse(options);
    assert_eq!(err, MapError::MissingTarget { shard_id: "s1".into() });
    assert_names(&message, &["'s1'", "dataSource", "endpoint", "connectionString"]);
}

#[test]
fn endpoint_without_http_or_grpc_transport_is_refused() {
    for transport in [None, Some("direct")] {
        let mut options = two_shards();
        options.shards[1].data_source = None;
        options.shards[1].endpoint = Some("http://127.0.0.1:61818".into());
        options.shards[1].transport = transport.map(str::to_owned);
        let (err, message) = refuse(options);
        assert!(
            matches!(&err, MapError::InvalidTransport { shard_id, .. } if shard_id == "s1"),
            "{transport:?}: {err:?}"
        );
        assert_names(&message, &["'s1'", "transport", "http", "grpc"]);
    }
}

#[test]
fn endpoint_with_http_or_grpc_transport_is_accepted() {
    for transport in ["http", "GRPC"] {
        let mut options = two_shards();
        options.shards[1].data_source = None;
        options.shards[1].endpoint = Some("http://127.0.0.1:61818".into());
        options.shards[1].transport = Some(transport.into());
        ShardMap::new(options).unwrap_or_else(|e| panic!("{transport}: {e}"));
    }
}

#[test]
fn a_map_without_an_enabled_shard_is_refused() {
    let mut options = two_shards();
    for shard in &mut options.shards {
        shard.enabled = false;
    }
    let (err, message) = refuse(options);
    assert_eq!(err, MapError::NoEnabledShard);
    assert_names(&message, &["enabled shard"]);
}

#[test]
fn a_disabled_shard_may_own_buckets_but_routes_to_it_fail() {
    let mut options = two_shards();
    options.shards[1].enabled = false;
    let map = ShardMap::new(options).unwrap();
    let (mut to_s0, mut to_s1) = (0, 0);
    for key in (0..64).map(|i| format!("tenant-{i}")) {
        match map.resolve("tenants", &key) {
            Ok(r) => {
                assert_eq!(r.shard_id, "s0");
                assert!(r.bucket < 4);
                to_s0 += 1;
            }
            Err(Error::ShardDisabled(disabled)) => {
                assert_eq!(
                    (disabled.key.as_str(), disabled.shard_id.as_str()),
                    (key.as_str(), "s1")
                );
                to_s1 += 1;
            }
            Err(other) => panic!("{key}: {other}"),
        }
    }
    assert!(to_s0 > 0 && to_s1 > 0, "{to_s0} / {to_s1}");
}

#[test]
fn blank_pin_key_is_refused() {
    let mut options = two_shards();
    options.exact_key_pins.insert("  ".into(), "s0".into());
    let (err, message) = refuse(options);
    assert_eq!(err, MapError::BlankPinKey { shard_id: "s0".into() });
    assert_names(&message, &["exactKeyPins", "'s0'"]);
}

#[test]
fn pin_keys_equal_after_trimming_are_refused() {
    let mut options = two_shards();
    options.exact_key_pins.insert("k".into(), "s0".into());
    options.exact_key_pins.insert(" k ".into(), "s1".into());
    let (err, message) = refuse(options);
    assert_eq!(err, MapError::DuplicatePinKey { key: "k".into() });
    assert_names(&message, &["'k'", "exactKeyPins"]);
}

#[test]
fn pin_keys_are_case_sensitive() {
    let mut options = two_shards();
    options.exact_key_pins.insert("k".into(), "s0".into());
    options.exact_key_pins.insert("K".into(), "s1".into());
    let map = ShardMap::new(options).unwrap();
    let lower = map.resolve("tenants", " k ").unwrap();
    assert_eq!((lower.shard_id, lower.source), ("s0", RouteSource::Pin));
    let upper = map.resolve("tenants", "K").unwrap();
    assert_eq!((upper.shard_id, upper.source), ("s1", RouteSource::Pin));
    // A pin decides the shard, but the resolution still reports the hash bucket.
    let token = route_token("tenants", "K").unwrap();
    assert_eq!(upper.token, token);
    assert_eq!(upper.bucket, bucket_for_token(token.0, 8));
}

#[test]
fn unknown_top_level_json_field_is_refused_by_name() {
    let (err, message) = refuse_json(
        r#"{"keyspace":"t","mapVersoin":2,"virtualBucketCount":4,
            "shards":[{"shardId":"s0","dataSource":"s0.db"}]}"#,
    );
    assert!(matches!(err, Error::Json { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_names(&message, &["mapVersoin"]);
}

#[test]
fn unknown_shard_json_field_is_refused_by_name() {
    let (err, message) = refuse_json(
        r#"{"keyspace":"t","virtualBucketCount":4,
            "shards":[{"shardId":"s0","dataSource":"s0.db","enabeld":false}]}"#,
    );
    assert!(matches!(err, Error::Json { .. }), "{err:?}");
    assert_names(&message, &["enabeld"]);
}

#[test]
fn unknown_bucket_range_json_field_is_refused_by_name() {
    let (err, message) = refuse_json(
        r#"{"virtualBucketCount":4,"shards":[{"shardId":"s0","dataSource":"s0.db"}],
            "bucketRanges":[{"startBucketInclusive":0,"endBucketExclusive":4,"shardId":"s0","owner":"s0"}]}"#,
    );
    assert!(matches!(err, Error::Json { .. }), "{err:?}");
    assert_names(&message, &["owner"]);
}

#[test]
fn invalid_json_map_surfaces_as_invalid_map_error() {
    let (err, message) = refuse_json(
        r#"{"keyspace":"t","virtualBucketCount":4,
            "shards":[{"shardId":"s0","dataSource":"s0.db"},{"shardId":"s1","dataSource":"s1.db"}],
            "bucketRanges":[{"startBucketInclusive":0,"endBucketExclusive":2,"shardId":"s0"},
                            {"startBucketInclusive":3,"endBucketExclusive":4,"shardId":"s1"}]}"#,
    );
    assert!(
        matches!(err.map_error(), Some(MapError::BucketGap { bucket: 2 })),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::InvalidMap);
    assert_names(&message, &["bucket 2"]);
}

#[test]
fn bucket_count_zero_negative_or_over_the_cap_is_refused() {
    let over = i64::from(MAX_VIRTUAL_BUCKETS) + 1;
    for value in [0, -1, -4096, over, i64::MAX] {
        let mut options = two_shards();
        options.virtual_bucket_count = value;
        let (err, message) = refuse(options);
        assert_eq!(
            err,
            MapError::InvalidBucketCount {
                value,
                max: MAX_VIRTUAL_BUCKETS
            }
        );
        assert_names(&message, &["virtualBucketCount", &value.to_string()]);
    }
}

#[test]
fn bucket_count_exactly_at_the_cap_is_accepted() {
    let cap = i64::from(MAX_VIRTUAL_BUCKETS);
    let mut options = two_shards();
    options.virtual_bucket_count = cap;
    options.bucket_ranges = vec![BucketRange::new(cap / 2, cap, "s1"), BucketRange::new(0, cap / 2, "s0")];
    let map = ShardMap::new(options).unwrap();
    assert_eq!(map.bucket_count(), MAX_VIRTUAL_BUCKETS);
    assert_eq!(
        map.canonical_ranges(),
        vec![BucketRange::new(0, cap / 2, "s0"), BucketRange::new(cap / 2, cap, "s1")]
    );
    let r = map.resolve("tenants", "tenant-a").unwrap();
    assert_eq!(
        u64::from(r.bucket),
        0xFDEC_638F_8BD5_AC9F % u64::from(MAX_VIRTUAL_BUCKETS)
    );
}

#[test]
fn map_version_zero_or_negative_is_refused() {
    for value in [0, -1] {
        let mut options = two_shards();
        options.map_version = value;
        let (err, message) = refuse(options);
        assert_eq!(err, MapError::InvalidMapVersion { value });
        assert_names(&message, &["mapVersion", &format!("got {value}")]);
    }
}

#[test]
fn blank_keyspace_is_refused() {
    let mut options = two_shards();
    options.keyspace = " \t ".into();
    let (err, message) = refuse(options);
    assert_eq!(err, MapError::BlankKeyspace);
    assert_names(&message, &["keyspace"]);
}

#[test]
fn several_shards_without_bucket_ranges_are_refused() {
    let mut options = two_shards();
    options.bucket_ranges.clear();
    let (err, message) = refuse(options);
    assert_eq!(err, MapError::BucketRangesRequired);
    assert_names(&message, &["bucketRanges", "more than one shard"]);
}

#[test]
fn a_single_shard_without_ranges_owns_every_bucket() {
    let mut options = two_shards();
    options.shards.truncate(1);
    options.bucket_ranges.clear();
    let map = ShardMap::new(options).unwrap();
    assert_eq!(map.canonical_ranges(), vec![BucketRange::new(0, 8, "s0")]);
    assert_eq!(map.snapshot().bucket_ranges, vec![BucketRange::new(0, 8, "s0")]);
    for key in ["a", "b", "tenant-a", "tenant-b"] {
        assert_eq!(map.resolve("tenants", key).unwrap().shard_id, "s0");
    }
}

#[test]
fn snapshot_never_contains_connection_strings_or_api_keys() {
    const CONNECTION_SECRET: &str = "Password=cs-hunter2-ZX81";
    const API_KEY: &str = "sk-live-TOPSECRET-4242";
    let mut options = two_shards();
    options.shards[0].data_source = None;
    options.shards[0].connection_string = Some(Secret::new(format!("Data Source=s0.db;{CONNECTION_SECRET}")));
    options.shards[1].data_source = None;
    options.shards[1].endpoint = Some("http://10.0.0.7:61818".into());
    options.shards[1].transport = Some("http".into());
    options.shards[1].api_key = Some(Secret::new(API_KEY));
    options.shards[1].api_key_header_name = Some("X-Shard-Key".into());
    let map = ShardMap::new(options).unwrap();

    let snapshot = map.snapshot();
    let json = serde_json::to_string(&snapshot).unwrap();
    assert!(!json.contains(CONNECTION_SECRET), "connection string leaked: {json}");
    assert!(!json.contains("cs-hunter2"), "connection string leaked: {json}");
    assert!(!json.contains(API_KEY), "api key leaked: {json}");
    assert!(!json.contains("TOPSECRET"), "api key leaked: {json}");
    let debug = format!("{map:?} {snapshot:?}");
    assert!(!debug.contains("cs-hunter2") && !debug.contains("TOPSECRET"), "{debug}");

    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let shards = value["shards"].as_array().unwrap();
    assert_eq!(shards[0]["shardId"], "s0");
    assert_eq!(shards[0]["hasConnectionString"], true);
    assert_eq!(shards[0]["hasApiKey"], false);
    assert_eq!(shards[1]["shardId"], "s1");
    assert_eq!(shards[1]["hasConnectionString"], false);
    assert_eq!(shards[1]["hasApiKey"], true);
    assert_eq!(shards[1]["endpoint"], "http://10.0.0.7:61818");
    assert_eq!(shards[1]["transport"], "http");
    assert_eq!(shards[1]["apiKeyHeaderName"], "X-Shard-Key");

    // The stored form keeps them: the redaction is the snapshot's doing, not data loss.
    let stored = map.options().to_json();
    assert!(stored.contains(CONNECTION_SECRET) && stored.contains(API_KEY));
}

#[test]
fn snapshot_bucket_ranges_are_canonical_and_coalesced() {
    let mut options = two_shards();
    options.bucket_ranges = vec![
        BucketRange::new(2, 4, "s0"),
        BucketRange::new(0, 2, "S0"),
        BucketRange::new(4, 8, "s1"),
    ];
    options.exact_key_pins.insert(" vip ".into(), "S1".into());
    let map = ShardMap::new(options).unwrap();
    let expected = vec![BucketRange::new(0, 4, "s0"), BucketRange::new(4, 8, "s1")];
    assert_eq!(map.canonical_ranges(), expected);
    let snapshot = map.snapshot();
    assert_eq!(snapshot.bucket_ranges, expected);
    assert_eq!(snapshot.keyspace, "tenants");
    assert_eq!(snapshot.map_version, 3);
    assert_eq!(snapshot.virtual_bucket_count, 8);
    assert_eq!(
        snapshot.exact_key_pins,
        BTreeMap::from([("vip".to_owned(), "s1".to_owned())]),
        "pins are shown normalised"
    );
    let json: serde_json::Value = serde_json::to_value(&snapshot).unwrap();
    assert_eq!(
        json["bucketRanges"],
        serde_json::json!([
            {"startBucketInclusive": 0, "endBucketExclusive": 4, "shardId": "s0"},
            {"startBucketInclusive": 4, "endBucketExclusive": 8, "shardId": "s1"}
        ])
    );
}

#[test]
fn canonical_ranges_keep_non_adjacent_runs_apart() {
    let mut options = two_shards();
    options.bucket_ranges = vec![
        BucketRange::new(6, 8, "s0"),
        BucketRange::new(2, 6, "s1"),
        BucketRange::new(0, 2, "s0"),
    ];
    let map = ShardMap::new(options).unwrap();
    assert_eq!(
        map.snapshot().bucket_ranges,
        vec![
            BucketRange::new(0, 2, "s0"),
            BucketRange::new(2, 6, "s1"),
            BucketRange::new(6, 8, "s0")
        ]
    );
}
