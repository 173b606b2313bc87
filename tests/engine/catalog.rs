//! The master catalog: seed, open, "no map", and the `shardlite seed` command.

use std::path::Path;

#[cfg(feature = "cli")]
use crate::support::cli::shardlite;
#[cfg(feature = "cli")]
use crate::support::orders_options;
use crate::support::{temp_dir, tenants_options};
use shardlite::catalog::Catalog;
use shardlite::client::{LocalClient, Params, RowData, ShardedClient, SqlData, Value};
use shardlite::map::{MapError, ShardingOptions};
use shardlite::{Error, ErrorKind, RouteContext};

#[tokio::test]
async fn seed_then_open_round_trips_the_map() {
    let dir = temp_dir();
    let master = dir.path().join("nested/folder/master.db");
    let catalog = Catalog::open(&master).await.unwrap();
    catalog.seed(tenants_options(dir.path()), false).await.unwrap();
    assert!(dir.path().join("s0.db").exists() && dir.path().join("s1.db").exists());
    drop(catalog);

    let sharded = ShardedClient::open(&master).await.unwrap();
    assert_eq!(sharded.map().options(), &tenants_options(dir.path()));
    let snapshot = sharded.map_snapshot();
    assert_eq!(snapshot.keyspace, "tenants");
    assert_eq!(snapshot.map_version, 1);
    assert_eq!(snapshot.exact_key_pins["tenant-b"], "s1");
    let resolved = sharded
        .resolve_route(&RouteContext::new("tenants", "tenant-b").unwrap())
        .unwrap();
    assert_eq!((resolved.shard_id.as_str(), resolved.map_version), ("s1", 1));
    let history = sharded.catalog().master().unwrap().history().await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].map_version, 1);

    // Seeding the same map again is a no-op; a different one needs an explicit replace.
    let catalog = sharded.catalog().master().unwrap();
    catalog.seed(tenants_options(dir.path()), false).await.unwrap();
    let mut other = tenants_options(dir.path());
    other.map_version = 2;
    let err = catalog.seed(other.clone(), false).await.unwrap_err();
    assert!(err.to_string().contains("already holds an active map"), "{err}");
    catalog.seed(other, true).await.unwrap();
    assert_eq!(catalog.active_map().await.unwrap().version(), 2);
}

#[tokio::test]
async fn a_master_without_a_map_gives_no_map() {
    let dir = temp_dir();
    let master = dir.path().join("plain.db");
    let plain = LocalClient::open(&master).await.unwrap();
    plain
        .execute_sql("CREATE TABLE notes (id INTEGER PRIMARY KEY)", Params::none())
        .await
        .unwrap();
    plain.info().await.unwrap();
    drop(plain);
    let err = ShardedClient::open(&master).await.unwrap_err();
    assert!(matches!(err, Error::NoMap), "{err}");
    assert_eq!(err.kind(), ErrorKind::NoMap);
    assert!(
        Catalog::open(&master)
            .await
            .unwrap()
            .active_options()
            .await
            .unwrap()
            .is_none()
    );
    // Reading did not add catalog tables to the plain database.
    let plain = LocalClient::open(&master).await.unwrap();
    assert_eq!(plain.list_tables().await.unwrap(), vec!["notes".to_owned()]);
}

#[tokio::test]
async fn a_catalog_from_a_newer_release_is_refused() {
    let dir = temp_dir();
    let master = dir.path().join("master.db");
    let catalog = Catalog::open(&master).await.unwrap();
    catalog.seed(tenants_options(dir.path()), false).await.unwrap();
    drop(catalog);
    let raw = LocalClient::open(&master).await.unwrap();
    raw.execute_sql(
        "UPDATE shardlite_catalog_meta SET value = '99' WHERE key = 'schema_version'",
        Params::none(),
    )
    .await
    .unwrap();
    drop(raw);
    let err = Catalog::open(&master).await.unwrap_err();
    assert!(err.to_string().contains("schema version 99"), "{err}");
}

/// A two-shard `tenants` map over `files` (each a `dataSource`, or a `connectionString` when it
/// starts with `Data Source=`).
fn map_over(files: [&str; 2]) -> ShardingOptions {
    let shards: Vec<String> = files
        .iter()
        .enumerate()
        .map(|(i, file)| {
            let target = match file.strip_prefix("Data Source=") {
                Some(_) => format!(r#""connectionString": {}"#, serde_json::json!(file)),
                None => format!(r#""dataSource": {}"#, serde_json::json!(file)),
            };
            format!(r#"{{"shardId": "s{i}", {target}}}"#)
        })
        .collect();
    ShardingOptions::from_json(&format!(
        r#"{{"keyspace": "tenants", "virtualBucketCount": 4, "shards": [{}],
            "bucketRanges": [{{"startBucketInclusive": 0, "endBucketExclusive": 2, "shardId": "s0"}},
                             {{"startBucketInclusive": 2, "endBucketExclusive": 4, "shardId": "s1"}}]}}"#,
        shards.join(", ")
    ))
    .unwrap()
}

/// A file name no other test (and nothing in the working directory) uses.
fn unique_name(dir: &Path, suffix: &str) -> String {
    format!("{}-{suffix}", dir.file_name().unwrap().to_str().unwrap())
}

#[tokio::test]
async fn relative_shard_files_live_beside_the_master_not_in_the_working_directory() {
    let dir = temp_dir();
    let folder = dir.path().join("catalogs");
    let master = folder.join("master.db");
    let (s0, s1) = (unique_name(dir.path(), "s0.db"), unique_name(dir.path(), "s1.db"));
    let cwd = std::env::current_dir().unwrap();
    assert_ne!(cwd, folder);

    // Seeding creates the dataSource file beside the master.
    let catalog = Catalog::open(&master).await.unwrap();
    catalog
        .seed(map_over([&s0, &format!("Data Source={s1};Busy Timeout=100")]), false)
        .await
        .unwrap();
    drop(catalog);
    assert!(folder.join(&s0).exists(), "seed creates {s0} beside the master");
    assert!(!cwd.join(&s0).exists(), "seed created {s0} in the working directory");

    // Opening uses the files beside the master, for a connectionString's Data Source too.
    let sharded = ShardedClient::open(&master).await.unwrap();
    for shard in ["s0", "s1"] {
        let client = sharded.for_shard_id(shard).unwrap();
        client
            .execute_sql("CREATE TABLE marker (shard TEXT)", Params::none())
            .await
            .unwrap();
        client
            .execute_sql("INSERT INTO marker VALUES (?1)", Params::from(vec![shard]))
            .await
            .unwrap();
    }
    drop(sharded);
    for (file, shard) in [(&s0, "s0"), (&s1, "s1")] {
        assert!(!cwd.join(file).exists(), "{file} was created in the working directory");
        let beside = LocalClient::open(folder.join(file)).await.unwrap();
        let rows = beside
            .execute_sql("SELECT shard FROM marker", Params::none())
            .await
            .unwrap();
        assert_eq!(rows.rows, vec![vec![Value::from(shard)]], "{file}");
    }
}

#[tokio::test]
async fn absolute_shard_files_stay_where_they_are() {
    let dir = temp_dir();
    let master = dir.path().join("catalogs/master.db");
    let elsewhere = dir.path().join("elsewhere/s0.db");
    let catalog = Catalog::open(&master).await.unwrap();
    catalog
        .seed(map_over([elsewhere.to_str().unwrap(), "s1.db"]), false)
        .await
        .unwrap();
    assert!(elsewhere.exists());
    assert!(dir.path().join("catalogs/s1.db").exists());
    assert!(!dir.path().join("catalogs/elsewhere").exists());
}

#[tokio::test]
async fn seeding_refuses_a_shard_whose_file_is_the_master() {
    let dir = temp_dir();
    let master = dir.path().join("master.db");
    let absolute = master.to_str().unwrap().to_owned();
    let through_dots = dir.path().join("sub/../master.db").to_str().unwrap().to_owned();
    for (files, shard) in [
        (["s0.db", "master.db"], "s1"),
        (["./master.db", "s1.db"], "s0"),
        ([absolute.as_str(), "s1.db"], "s0"),
        (["s0.db", through_dots.as_str()], "s1"),
        (["s0.db", "Data Source=master.db"], "s1"),
    ] {
        let catalog = Catalog::open(&master).await.unwrap();
        let err = catalog.seed(map_over(files), false).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidMap, "{files:?}: {err}");
        assert!(
            matches!(err.map_error(), Some(MapError::ShardIsMasterCatalog { shard_id, .. }) if shard_id == shard),
            "{files:?}: {err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains(&format!("'{shard}'")) && message.contains("master catalog"),
            "{message}"
        );
        assert!(catalog.active_options().await.unwrap().is_none(), "nothing was stored");
    }
    assert!(!dir.path().join("s0.db").exists() && !dir.path().join("s1.db").exists());
}

#[tokio::test]
async fn seeding_refuses_two_shards_that_resolve_to_one_file() {
    let dir = temp_dir();
    let master = dir.path().join("master.db");
    let absolute = dir.path().join("s0.db").to_str().unwrap().to_owned();
    for files in [["s0.db", absolute.as_str()], [absolute.as_str(), "Data Source=./s0.db"]] {
        let err = Catalog::open(&master)
            .await
            .unwrap()
            .seed(map_over(files), false)
            .await
            .unwrap_err();
        assert!(
            matches!(err.map_error(), Some(MapError::DuplicateShardFile { first, second, .. })
                if first == "s0" && second == "s1"),
            "{files:?}: {err:?}"
        );
        let message = err.to_string();
        assert!(message.contains("'s0'") && message.contains("'s1'"), "{message}");
    }
    assert!(!dir.path().join("s0.db").exists(), "nothing was created");
}

#[tokio::test]
async fn opening_refuses_a_stored_map_whose_shard_file_is_the_master() {
    let dir = temp_dir();
    let master = dir.path().join("master.db");
    Catalog::open(&master)
        .await
        .unwrap()
        .seed(map_over(["s0.db", "s1.db"]), false)
        .await
        .unwrap();
    // A map stored by an older release, or edited by hand, is checked again when opened.
    let stored = map_over(["s0.db", "./master.db"]).to_json();
    let raw = LocalClient::open(&master).await.unwrap();
    raw.execute_sql(
        "UPDATE shardlite_active_map SET map_json = ?1",
        Params::from(vec![stored.as_str()]),
    )
    .await
    .unwrap();
    drop(raw);

    let err = ShardedClient::open(&master).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidMap, "{err}");
    assert!(
        matches!(err.map_error(), Some(MapError::ShardIsMasterCatalog { shard_id, .. }) if shard_id == "s1"),
        "{err:?}"
    );
}

#[cfg(feature = "cli")]
#[test]
fn seed_command_accepts_the_four_shard_map_and_refuses_broken_ones() {
    let dir = temp_dir();
    let map_path = dir.path().join("map.json");
    std::fs::write(&map_path, serde_json::to_string_pretty(&orders_options()).unwrap()).unwrap();
    let master = dir.path().join("data/master.db");
    let out = shardlite(&[
        "seed",
        "--master",
        master.to_str().unwrap(),
        "--map",
        map_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("orders_by_month") && stdout.contains("4 shard"),
        "{stdout}"
    );
    for i in 0..4 {
        assert!(dir.path().join(format!("data/shard-{i}.db")).exists());
    }

    let cases = [
        (
            r#"{"keyspace":"k","virtualBucketCount":4,"shards":[{"shardId":"a","dataSource":"a.db"},{"shardId":"b","dataSource":"b.db"}],
               "bucketRanges":[{"startBucketInclusive":0,"endBucketExclusive":3,"shardId":"a"},{"startBucketInclusive":2,"endBucketExclusive":4,"shardId":"b"}]}"#,
            "bucket 2",
        ),
        (
            r#"{"shards":[{"shardId":"a","dataSource":"a.db","enabeld":true}]}"#,
            "enabeld",
        ),
        (
            r#"{"shards":[{"shardId":"a","dataSource":"a.db"}],"exactKeyPins":{"k":"zz"}}"#,
            "zz",
        ),
        (r#"{"shards": ["#, "JSON"),
    ];
    for (json, needle) in cases {
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, json).unwrap();
        let out = shardlite(&[
            "seed",
            "--master",
            dir.path().join("other.db").to_str().unwrap(),
            "--map",
            bad.to_str().unwrap(),
        ]);
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "expected '{needle}' in: {stderr}");
    }
    let out = shardlite(&[
        "seed",
        "--master",
        "x.db",
        "--map",
        dir.path().join("missing.json").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.json"));
}

#[cfg(feature = "cli")]
#[test]
fn seed_command_refuses_a_shard_whose_file_is_the_master_and_leaves_no_file() {
    let dir = temp_dir();
    let map = dir.path().join("map.json");
    std::fs::write(&map, map_over(["s0.db", "./catalog.db"]).to_json()).unwrap();
    let master = dir.path().join("catalog.db");
    let out = shardlite(&[
        "seed",
        "--master",
        master.to_str().unwrap(),
        "--map",
        map.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("'s1'") && stderr.contains("master catalog"), "{stderr}");
    assert!(!master.exists(), "a refused map leaves no master behind");
    assert!(!dir.path().join("s0.db").exists());
}
