//! `shardlite backup create|list|verify|restore` on a two-shard master written by a client that
//! keeps its files open (as a daemon does): a second set after writing one shard copies that
//! shard only; a restored folder holds every row, opens in the system's older `sqlite3`, and
//! refuses to be restored over; a damaged copy is named by `verify` and refused by `restore`.

use std::path::Path;

use crate::support::cli::{json_of, seeded, shardlite, stderr, stdout};
use crate::support::{old_sqlite, route, temp_dir};
use shardlite::client::{Params, ShardedClient, SqlData, Value};

async fn insert(sharded: &ShardedClient, tenant: &str, id: i64) {
    let sql = format!("INSERT INTO items (id, tenant) VALUES ({id}, '{tenant}')");
    sharded
        .for_route(route(tenant))
        .execute_sql(&sql, Params::none())
        .await
        .unwrap();
}

/// The ids of `tenant`'s rows in the keyspace of `master` (a file or an `etcd://` URL), in order.
pub(crate) async fn ids_in(master: impl AsRef<Path>, tenant: &str) -> Vec<i64> {
    let sharded = ShardedClient::open(master).await.unwrap();
    let rows = sharded
        .for_route(route(tenant))
        .execute_read_only_sql(
            &format!("SELECT id FROM items WHERE tenant = '{tenant}' ORDER BY id"),
            Params::none(),
        )
        .await
        .unwrap();
    rows.rows
        .iter()
        .map(|r| match r[0] {
            Value::Integer(i) => i,
            ref other => panic!("{other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_sets_copy_what_changed_restore_every_row_and_name_a_damaged_file() {
    let dir = temp_dir();
    let connection = seeded(dir.path());
    let master = dir.path().join("master.db");
    let place = dir.path().join("backups");
    let place_text = place.to_str().unwrap();
    // The writer keeps both files open, so their WAL index tells a later set what changed.
    let sharded = ShardedClient::open(&master).await.unwrap();
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
        insert(&sharded, if id % 2 == 0 { "tenant-a" } else { "tenant-b" }, id).await;
    }

    let create = || {
        shardlite(&[
            "backup",
            "create",
            "-c",
            connection.as_str(),
            "--to",
            place_text,
            "--json",
        ])
    };
    let first = create();
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("copied 2: "),
        "progress on stderr: {}",
        stderr(&first)
    );
    let first = json_of(&first);
    assert_eq!(first["mapVersion"], 1);
    let copied = |set: &serde_json::Value| -> Vec<String> {
        set["shards"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["copied"] == true)
            .map(|s| s["shardId"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(copied(&first), ["s0", "s1"], "{first:#}");

    // One shard written: the next set copies that one and references the other.
    insert(&sharded, "tenant-a", 100).await;
    let second = create();
    assert!(second.status.success(), "{}", stderr(&second));
    let second = json_of(&second);
    assert_eq!(copied(&second), ["s0"], "{second:#}");
    assert_eq!(second["shards"][1]["file"], first["shards"][1]["file"]);

    let listed = shardlite(&["backup", "list", place_text, "--json"]);
    let listed = json_of(&listed);
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed:#}");
    let manifest = place
        .join("sets")
        .join(format!("{}.json", second["id"].as_str().unwrap()));
    let manifest_text = manifest.to_str().unwrap();
    let verified = shardlite(&["backup", "verify", manifest_text]);
    assert!(verified.status.success(), "{}", stderr(&verified));
    assert!(stdout(&verified).contains("is intact"), "{}", stdout(&verified));

    let target = dir.path().join("restored");
    let restored = shardlite(&["backup", "restore", manifest_text, "--to", target.to_str().unwrap()]);
    assert!(restored.status.success(), "{}", stderr(&restored));
    let restored_master = target.join("master.db");
    let even: Vec<i64> = (2..=20).step_by(2).chain([100]).collect();
    let odd: Vec<i64> = (1..=19).step_by(2).collect();
    assert_eq!(ids_in(&restored_master, "tenant-a").await, even);
    assert_eq!(ids_in(&restored_master, "tenant-b").await, odd);
    // The restored files are ordinary SQLite files for an older SQLite too.
    if Path::new("/usr/bin/sqlite3").exists() {
        old_sqlite::version();
        for (file, count) in [("s0.db", "11"), ("s1.db", "10")] {
            let out = old_sqlite::run(&target.join(file), "SELECT count(*) FROM items").unwrap();
            assert_eq!(out.trim(), count, "{file}");
        }
    }
    let again = shardlite(&["backup", "restore", manifest_text, "--to", target.to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(stderr(&again).contains("is not empty"), "{}", stderr(&again));

    // A damaged copy: verify names it, restore refuses the set.
    let damaged = place.join(second["shards"][0]["file"].as_str().unwrap());
    let mut bytes = std::fs::read(&damaged).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&damaged, bytes).unwrap();
    let verified = shardlite(&["backup", "verify", manifest_text]);
    assert!(!verified.status.success());
    let complaint = stderr(&verified);
    assert!(
        complaint.contains("shard 's0'") && complaint.contains("damaged"),
        "{complaint}"
    );
    let elsewhere = dir.path().join("elsewhere");
    let refused = shardlite(&["backup", "restore", manifest_text, "--to", elsewhere.to_str().unwrap()]);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("shard 's0'"), "{}", stderr(&refused));
    assert!(
        !elsewhere.join("master.db").exists(),
        "nothing restored from a damaged set"
    );
}
