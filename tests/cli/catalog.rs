//! `shardlite catalog show|validate|apply|activate` end to end against a local master: JSON
//! output, readable diffs, and exit codes.

use crate::support::cli::{json_of, seeded, shardlite, stderr, stdout};
use crate::support::with_third_shard;

use std::path::Path;

use serde_json::json;
use shardlite::map::{BucketRange, ShardingOptions};

fn write_map(dir: &Path, name: &str, map: &ShardingOptions) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(map).unwrap()).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn validate_apply_and_activate_a_new_map_on_a_local_master() {
    let dir = crate::support::temp_dir();
    let conn = seeded(dir.path());
    let v2 = write_map(dir.path(), "map-v2.json", &with_third_shard(dir.path()));

    let out = shardlite(&["catalog", "validate", "-c", &conn, "--map", &v2, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let validation = json_of(&out);
    assert_eq!(validation["valid"], true);
    assert_eq!(
        validation["shardChanges"],
        json!([{ "shardId": "s2", "change": "added" }])
    );

    // A stale expected version is refused, and nothing is written.
    let out = shardlite(&["catalog", "apply", "-c", &conn, "--map", &v2, "--expected-version", "7"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("expected map version 7"), "{}", stderr(&out));
    let out = shardlite(&["catalog", "show", "-c", &conn, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(json_of(&out).get("pendingMap").is_none());

    let out = shardlite(&[
        "catalog",
        "apply",
        "-c",
        &conn,
        "--map",
        &v2,
        "--expected-version",
        "1",
        "--operator",
        "ada",
        "--comment",
        "add s2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let applied = json_of(&out);
    assert_eq!(applied["applied"], true);
    assert_eq!(applied["pendingMapVersion"], 2);

    let out = shardlite(&["catalog", "show", "-c", &conn]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("active map: keyspace 'tenants', version 1"), "{text}");
    assert!(text.contains("pending map: version 2"), "{text}");
    assert!(text.contains("ada") && text.contains("add s2"), "{text}");

    let out = shardlite(&["catalog", "activate", "-c", &conn, "--expected-version", "3"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("pending map is version 2"), "{}", stderr(&out));

    let out = shardlite(&[
        "catalog",
        "activate",
        "-c",
        &conn,
        "--expected-version",
        "2",
        "--operator",
        "grace",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let activated = json_of(&out);
    assert_eq!(activated["activeMapVersion"], 2);
    assert_eq!(activated["previousMapVersion"], 1);

    let out = shardlite(&["catalog", "show", "-c", &conn, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let state = json_of(&out);
    assert_eq!(state["activeMap"]["mapVersion"], 2);
    assert!(state.get("pendingMap").is_none(), "{state}");
    let history: Vec<(i64, String)> = state["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            (
                entry["mapVersion"].as_i64().unwrap(),
                entry["operator"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(history[..2], [(2, "grace".to_owned()), (2, "ada".to_owned())]);
    let out = shardlite(&["map", "-c", &conn, "--json"]);
    assert_eq!(json_of(&out)["mapVersion"], 2);
}

#[test]
fn an_ownership_change_is_refused_until_acknowledged_and_the_diff_says_what_moves() {
    let dir = crate::support::temp_dir();
    let conn = seeded(dir.path());
    let mut moving = with_third_shard(dir.path());
    moving.bucket_ranges = vec![
        BucketRange::new(0, 1, "s0"),
        BucketRange::new(1, 2, "s2"),
        BucketRange::new(2, 4, "s1"),
    ];
    moving.exact_key_pins.insert("tenant-b".into(), "s0".into());
    let v2 = write_map(dir.path(), "map-v2.json", &moving);

    let out = shardlite(&["catalog", "validate", "-c", &conn, "--map", &v2]);
    assert!(!out.status.success());
    let text = stdout(&out);
    assert!(text.starts_with("refused"), "{text}");
    assert!(text.contains("ownership-change-requires-migration"), "{text}");
    assert!(
        text.contains("buckets changing owner") && text.contains("[1, 2)"),
        "{text}"
    );
    assert!(
        text.contains("pinned key changing owner") && text.contains("tenant-b"),
        "{text}"
    );
    assert!(text.contains("s2") && text.contains("added"), "{text}");
    assert!(
        stderr(&out).contains("ownership-change-requires-migration"),
        "{}",
        stderr(&out)
    );

    let out = shardlite(&["catalog", "apply", "-c", &conn, "--map", &v2, "--json"]);
    assert!(!out.status.success());
    let refused = json_of(&out);
    assert_eq!(refused["applied"], false);
    assert_eq!(refused["validation"]["movedBuckets"], json!([[1, 2, "s0", "s2"]]));
    assert_eq!(refused["validation"]["movedPins"], json!([["tenant-b", "s1", "s0"]]));

    let out = shardlite(&[
        "catalog",
        "apply",
        "-c",
        &conn,
        "--map",
        &v2,
        "--expected-version",
        "1",
        "--ack-ownership-change",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("ownership-change-acknowledged"), "{text}");
    assert!(text.contains("map version 2 is the pending map"), "{text}");

    let out = shardlite(&["catalog", "show", "-c", &conn, "--json"]);
    let history = &json_of(&out)["history"];
    assert_eq!(history[0]["metadataOnlyOwnershipChange"], true, "{history}");
}

#[test]
fn catalog_commands_explain_bad_input() {
    let dir = crate::support::temp_dir();
    let conn = seeded(dir.path());
    let missing = dir.path().join("no-such-map.json");
    let out = shardlite(&["catalog", "validate", "-c", &conn, "--map", missing.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no-such-map.json"), "{}", stderr(&out));

    let typo = dir.path().join("typo.json");
    std::fs::write(&typo, r#"{"keyspace": "tenants", "mapVersoin": 2, "shards": []}"#).unwrap();
    let out = shardlite(&["catalog", "validate", "-c", &conn, "--map", typo.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("mapVersoin"), "{}", stderr(&out));

    let out = shardlite(&["catalog", "activate", "-c", &conn]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--expected-version"), "{}", stderr(&out));

    let out = shardlite(&["catalog", "apply", "--help"]);
    assert!(out.status.success());
    assert!(
        stdout(&out).contains("Example: shardlite catalog apply"),
        "{}",
        stdout(&out)
    );
}

/// `catalog export` and `import` take `-c` like every other catalog command: a connection
/// string's `Data Source` (a master file or etcd); a daemon's `Endpoint` is refused saying why.
#[test]
fn catalog_export_and_import_take_a_connection_string() {
    let dir = crate::support::temp_dir();
    let conn = seeded(dir.path());
    let out_file = dir.path().join("catalog.json");
    let out = shardlite(&["catalog", "export", "-c", &conn, "--out", out_file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let export: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(export["activeMap"]["keyspace"], "tenants", "{export}");

    let copy = dir.path().join("copy.db");
    let copy_conn = format!("Data Source={}", copy.display());
    let out = shardlite(&[
        "catalog",
        "import",
        "-c",
        &copy_conn,
        "--from",
        out_file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = shardlite(&["catalog", "show", "-c", &copy_conn, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let out = shardlite(&["catalog", "export", "-c", "Endpoint=http://127.0.0.1:9;Transport=Grpc"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not through a daemon"), "{}", stderr(&out));
    let out = shardlite(&["catalog", "export", "-c", &conn, "--master", "x.db"]);
    assert!(!out.status.success(), "-c and --master are one or the other");
}

/// `catalog validate --full` checks the whole proposed map on the catalog itself; a change of
/// pins alone is otherwise checked by the pins it changes, with the same verdict. A daemon's
/// endpoint is refused for `--full`, saying why.
#[test]
fn validate_full_checks_the_whole_map_with_the_same_verdict() {
    let dir = crate::support::temp_dir();
    let conn = seeded(dir.path());
    let patch = dir.path().join("patch.json");
    for (pins, valid) in [(r#"{"tenant-9": "nowhere"}"#, false), (r#"{"tenant-9": "s1"}"#, true)] {
        std::fs::write(&patch, format!(r#"{{"mapVersion": 2, "exactKeyPins": {pins}}}"#)).unwrap();
        let patch = patch.to_str().unwrap();
        let base = [
            "catalog",
            "validate",
            "-c",
            &conn,
            "--patch",
            patch,
            "--ack-ownership-change",
            "--json",
        ];
        let touched = shardlite(&base);
        let full = shardlite(&[&base[..], &["--full"]].concat());
        assert_eq!(touched.status.success(), valid, "{}", stderr(&touched));
        assert_eq!(full.status.success(), valid, "{}", stderr(&full));
        assert_eq!(json_of(&touched), json_of(&full));
        if !valid {
            assert!(stdout(&full).contains("nowhere"), "{}", stdout(&full));
        }
    }
    let out = shardlite(&[
        "catalog",
        "validate",
        "-c",
        "Endpoint=http://127.0.0.1:9;Transport=Http",
        "--patch",
        patch.to_str().unwrap(),
        "--full",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--full"), "{}", stderr(&out));
}
