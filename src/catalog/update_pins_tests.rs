//! The check of a change of pins by what it touches reports what the whole-map check reports.

use super::*;
use crate::map::{
    BucketRange, DirectoryDefinition, DirectoryEntry, EntryState, MapPatch, ReplicaInfo, ShardDefinition,
    ShardingOptions,
};

fn active() -> ShardMap {
    let mut replica = ShardDefinition::local("r", "r.db");
    replica.role = Some("Replica".to_owned());
    replica.replica = ReplicaInfo {
        primary_shard_id: Some("s0".to_owned()),
        ..ReplicaInfo::default()
    };
    ShardMap::new(ShardingOptions {
        keyspace: "k".into(),
        map_version: 1,
        virtual_bucket_count: 8,
        shards: vec![
            ShardDefinition::local("s0", "s0.db"),
            ShardDefinition::local("s1", "s1.db"),
            replica,
        ],
        bucket_ranges: vec![BucketRange::new(0, 4, "s0"), BucketRange::new(4, 8, "s1")],
        exact_key_pins: [("t1", "s0"), ("t2", "s1")]
            .map(|(k, s)| (k.to_owned(), s.to_owned()))
            .into(),
        directories: vec![DirectoryDefinition::writable("Orders", "k")],
        directory_entries: vec![DirectoryEntry {
            directory_name: "Orders".into(),
            lookup_key: "SO-1".into(),
            target_keyspace: "k".into(),
            route_key: "t1".into(),
            shard_id: "s0".into(),
            map_version: 1,
            state: EntryState::Active,
        }],
    })
    .unwrap()
}

fn request(patch: &str, acknowledged: bool) -> CatalogUpdateRequest {
    let mut request = CatalogUpdateRequest::new(MapProposal::Patch(MapPatch::from_json(patch).unwrap()));
    request.allow_ownership_change = acknowledged;
    request
}

#[test]
fn a_change_of_pins_checked_by_what_it_touches_reports_what_the_whole_check_reports() {
    let active = active();
    let cases = [
        (
            r#"{"mapVersion": 2, "exactKeyPins": {"t9": "nowhere"}}"#,
            false,
            "invalid-map",
        ),
        (
            r#"{"mapVersion": 2, "exactKeyPins": {"t9": "r"}}"#,
            false,
            "invalid-map",
        ),
        (r#"{"mapVersion": 2, "exactKeyPins": {"": "s0"}}"#, false, "invalid-map"),
        (
            r#"{"mapVersion": 1, "exactKeyPins": {"t9": "s0"}}"#,
            false,
            "map-version-not-incremented",
        ),
        // The directory entry SO-1 is routed by t1: moving t1 breaks it.
        (
            r#"{"mapVersion": 2, "exactKeyPins": {"t1": "s1"}}"#,
            true,
            "invalid-map",
        ),
        (
            r#"{"mapVersion": 2, "exactKeyPins": {"t2": "s0"}}"#,
            false,
            "ownership-change-requires-migration",
        ),
        (
            r#"{"mapVersion": 2, "exactKeyPins": {"t2": "s0"}}"#,
            true,
            "ownership-change-acknowledged",
        ),
        (
            r#"{"mapVersion": 2, "exactKeyPins": {"t2": null, "t3": "s1", " t4 ": "s0"}}"#,
            true,
            "",
        ),
        (r#"{"mapVersion": 2}"#, false, "metadata-compatible"),
    ];
    for (patch, acknowledged, code) in cases {
        let request = request(patch, acknowledged);
        let whole = validate(&active, 1, &request);
        let (touched, map) = validate_pins(&active, 1, &request).expect("a change of pins");
        assert_eq!(touched, whole, "{patch}");
        assert_eq!(map.is_some(), whole.valid, "{patch}");
        assert!(
            code.is_empty() || whole.issues.iter().any(|issue| issue.code == code),
            "{patch}: {:?}",
            whole.issues
        );
        if let Some(map) = map {
            let expected = request.map.resolve(active.options()).unwrap();
            assert_eq!(map.options(), &expected, "{patch}");
        }
    }
}

#[test]
fn other_changes_are_checked_whole() {
    let active = active();
    for patch in [
        r#"{"mapVersion": 2, "shards": {"s1": {"enabled": false}}}"#,
        r#"{"mapVersion": 2, "exactKeyPins": {"t9": 7}}"#,
        r#"{"mapVersion": 2, "exactKeyPinz": {"t9": "s0"}}"#,
        r#"{"mapVersion": "2"}"#,
    ] {
        assert!(validate_pins(&active, 1, &request(patch, false)).is_none(), "{patch}");
    }
    let whole = CatalogUpdateRequest::new(active.options().clone());
    assert!(validate_pins(&active, 1, &whole).is_none());
}
