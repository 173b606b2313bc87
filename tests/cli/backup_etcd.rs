//! `shardlite backup restore SET --to etcd://…/PREFIX --shard-dir DIR` against a real three-member
//! etcd cluster on loopback ports: the catalog is imported into the prefix and the shard files
//! written into the folder, named by their absolute paths, so a router opened on the prefix
//! serves every row the set holds; a prefix holding any key, a folder that is not empty and a
//! missing `--shard-dir` are refused, naming the problem, with nothing written.
#![cfg(feature = "etcd")]

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use super::backup::ids_in;
use crate::support::cli::{json_of, seeded, shardlite, stderr};
use crate::support::etcd::EtcdCluster;
use crate::support::{old_sqlite, route, temp_dir};
use shardlite::client::{Params, ShardedClient, SqlData};

/// A backup place holding one set of the two-shard keyspace with 20 rows.
async fn one_set(dir: &Path) -> std::path::PathBuf {
    let connection = seeded(dir);
    let sharded = ShardedClient::open(dir.join("master.db")).await.unwrap();
    for tenant in ["tenant-a", "tenant-b"] {
        sharded
            .for_route(route(tenant))
            .execute_sql(
                "CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL)",
                Params::none(),
            )
            .await
            .unwrap();
    }
    for id in 1..=20 {
        let tenant = if id % 2 == 0 { "tenant-a" } else { "tenant-b" };
        sharded
            .for_route(route(tenant))
            .execute_sql(
                &format!("INSERT INTO items (id, tenant) VALUES ({id}, '{tenant}')"),
                Params::none(),
            )
            .await
            .unwrap();
    }
    drop(sharded);
    let place = dir.join("backups");
    let out = shardlite(&["backup", "create", "-c", &connection, "--to", place.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    place
}

fn restore(place: &Path, to: &str, shard_dir: Option<&Path>) -> std::process::Output {
    let mut args = vec!["backup", "restore", place.to_str().unwrap(), "--to", to, "--json"];
    if let Some(dir) = shard_dir {
        args.extend(["--shard-dir", dir.to_str().unwrap()]);
    }
    shardlite(&args)
}

fn is_empty_or_missing(dir: &Path) -> bool {
    std::fs::read_dir(dir).map_or(true, |mut entries| entries.next().is_none())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_restores_its_catalog_into_an_empty_etcd_prefix_and_its_files_into_a_folder() {
    let Some(cluster) = EtcdCluster::start(3) else {
        return;
    };
    let dir = temp_dir();
    let place = one_set(dir.path()).await;
    let shards = dir.path().join("restored-shards");

    // A prefix holding a key of someone else's: refused, nothing written anywhere.
    let _ = crate::support::daemon::http_client()
        .post(format!("{}/v3/kv/put", cluster.endpoint(0)))
        .json(&json!({ "key": STANDARD.encode("/taken/other-app/config"), "value": STANDARD.encode("x") }))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    let taken = cluster.url("taken");
    let refused = restore(&place, &taken, Some(&shards));
    assert!(!refused.status.success());
    let complaint = stderr(&refused);
    assert!(
        complaint.contains("etcd://") && complaint.contains("/taken is not empty"),
        "{complaint}"
    );
    assert!(is_empty_or_missing(&shards), "files written for a refused restore");

    // Without a folder for the shard files: refused, naming the flag.
    let url = cluster.url("restored");
    let refused = restore(&place, &url, None);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("--shard-dir"), "{}", stderr(&refused));

    // A folder that is not empty: refused, and the prefix stays empty.
    let busy = dir.path().join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("keep.txt"), "mine").unwrap();
    let refused = restore(&place, &url, Some(&busy));
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("is not empty"), "{}", stderr(&refused));
    assert_eq!(std::fs::read_dir(&busy).unwrap().count(), 1);

    // Into the empty prefix and a new folder: a router on the prefix serves every row.
    let restored = restore(&place, &url, Some(&shards));
    assert!(restored.status.success(), "{}", stderr(&restored));
    let restored = json_of(&restored);
    assert_eq!(restored["master"], url.as_str(), "{restored:#}");
    assert_eq!(restored["shards"], 2, "{restored:#}");
    let even: Vec<i64> = (2..=20).step_by(2).collect();
    let odd: Vec<i64> = (1..=19).step_by(2).collect();
    assert_eq!(ids_in(&url, "tenant-a").await, even);
    assert_eq!(ids_in(&url, "tenant-b").await, odd);
    // The maps name the restored files by their absolute paths, in the folder given.
    let map = ShardedClient::open(&url).await.unwrap().map_snapshot();
    let shards_abs = std::fs::canonicalize(&shards).unwrap();
    for shard in &map.shards {
        let file = shard.data_source.as_deref().expect("a file shard");
        assert!(Path::new(file).is_absolute(), "{file}");
        assert!(
            Path::new(file).starts_with(&shards_abs),
            "{file} not in {}",
            shards_abs.display()
        );
        assert!(Path::new(file).is_file(), "{file}");
        // Ordinary SQLite files, for an older SQLite (3.40) too.
        old_sqlite::version();
        let counted = old_sqlite::run(Path::new(file), "PRAGMA quick_check; SELECT count(*) FROM items").unwrap();
        assert_eq!(counted, "ok\n10\n", "{file}");
    }

    // The prefix now holds the catalog: a second restore into it is refused.
    let again = restore(&place, &url, Some(&dir.path().join("other-shards")));
    assert!(!again.status.success());
    assert!(stderr(&again).contains("is not empty"), "{}", stderr(&again));

    // A folder with --shard-dir is a mistake, named.
    let mixed = restore(
        &place,
        dir.path().join("plain").to_str().unwrap(),
        Some(&dir.path().join("x")),
    );
    assert!(!mixed.status.success());
    assert!(stderr(&mixed).contains("--shard-dir"), "{}", stderr(&mixed));
    drop(cluster);
}
