//! The master catalog: seed, open, "no map", and the `shardlite seed` command.

mod common;

use std::process::Command;

use common::{orders_options, temp_dir, tenants_options};
use shardlite::catalog::Catalog;
use shardlite::client::{DataClient, LocalClient, Params, ShardedClient};
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
    let history = sharded.catalog().unwrap().history().await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].map_version, 1);

    // Seeding the same map again is a no-op; a different one needs an explicit replace.
    let catalog = sharded.catalog().unwrap();
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

fn shardlite(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_shardlite"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn seed_command_accepts_the_four_shard_map_and_refuses_broken_ones() {
    let dir = temp_dir();
    let map_path = dir.path().join("map.json");
    std::fs::write(
        &map_path,
        serde_json::to_string_pretty(&orders_options(&dir.path().join("data"))).unwrap(),
    )
    .unwrap();
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
