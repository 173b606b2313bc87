//! `shardlite backup create` killed with SIGKILL while it copies, and a daemon killed with SIGKILL
//! while it takes a set asked for by `POST /api/sharding/backups`: the backup place shows no set
//! that is not complete (every set `backup list` shows verifies), and a set taken afterwards in
//! the same place is complete.
#![cfg(feature = "cli")]

use std::io::{BufRead as _, BufReader};
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Command, Stdio};

use crate::support::cli::{binary, json_of, shardlite, stderr};
use crate::support::many::many_shards;
use crate::support::{seed_master, temp_dir};
use shardlite::client::{Params, ShardedClient};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_killed_while_it_copies_leaves_no_set_that_list_shows() {
    let dir = temp_dir();
    let master = seed_master(dir.path(), many_shards(8, |_| false)).await;
    {
        let sharded = ShardedClient::open(&master).await.unwrap();
        for i in 0..8 {
            let shard = sharded.for_shard_id(&format!("s{i}")).unwrap();
            for sql in [
                "CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB)",
                "INSERT INTO blobs (body) VALUES (randomblob(2000000))",
            ] {
                shard.execute_sql(sql, Params::none()).await.unwrap();
            }
        }
    }
    let connection = format!("Data Source={}", master.display());
    let place = dir.path().join("backups");
    let place_text = place.to_str().unwrap();
    let mut killed_midway = 0;
    for kill_after in 1..=4 {
        let mut child = Command::new(binary())
            .args(["backup", "create", "-c", connection.as_str(), "--to", place_text])
            .env_remove("SHARDLITE_CONNECTION")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let progress = BufReader::new(child.stderr.take().unwrap());
        let mut copied = 0;
        for line in progress.lines() {
            if line.unwrap().starts_with("copied ") {
                copied += 1;
                if copied == kill_after {
                    child.kill().unwrap();
                    break;
                }
            }
        }
        let status = child.wait().unwrap();
        if status.signal() == Some(9) {
            killed_midway += 1;
        }
        // Whatever the kill interrupted, every set the place lists is complete.
        let listed = json_of(&shardlite(&["backup", "list", place_text, "--json"]));
        for set in listed.as_array().unwrap() {
            let manifest = place.join("sets").join(format!("{}.json", set["id"].as_str().unwrap()));
            let verified = shardlite(&["backup", "verify", manifest.to_str().unwrap()]);
            assert!(
                verified.status.success(),
                "a listed set is not complete: {}",
                stderr(&verified)
            );
        }
    }
    assert!(killed_midway > 0, "no kill landed before a set was complete");
    let finished = shardlite(&["backup", "create", "-c", connection.as_str(), "--to", place_text]);
    assert!(finished.status.success(), "{}", stderr(&finished));
    let listed = json_of(&shardlite(&["backup", "list", place_text, "--json"]));
    let newest = listed.as_array().unwrap().last().unwrap();
    assert_eq!(newest["shards"].as_array().unwrap().len(), 8, "{newest:#}");
}

/// Files stored under `place/objects/`.
#[cfg(feature = "server")]
fn stored_objects(place: &std::path::Path) -> usize {
    std::fs::read_dir(place.join("objects"))
        .map(|dirs| {
            dirs.flatten()
                .map(|dir| std::fs::read_dir(dir.path()).map_or(0, Iterator::count))
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(feature = "server")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_while_it_takes_a_set_leaves_no_set_that_list_shows() {
    use crate::support::serve::ServeProcess;
    use std::time::{Duration, Instant};

    let dir = temp_dir();
    let master = seed_master(dir.path(), many_shards(8, |_| false)).await;
    {
        let sharded = ShardedClient::open(&master).await.unwrap();
        for i in 0..8 {
            let shard = sharded.for_shard_id(&format!("s{i}")).unwrap();
            for sql in [
                "CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB)",
                "INSERT INTO blobs (body) VALUES (randomblob(4000000))",
            ] {
                shard.execute_sql(sql, Params::none()).await.unwrap();
            }
        }
    }
    let place = dir.path().join("backups");
    let (master_text, place_text) = (master.to_str().unwrap(), place.to_str().unwrap());
    let serve = || {
        ServeProcess::start(&[
            "--master",
            master_text,
            "--backup-dir",
            place_text,
            "--listen",
            "127.0.0.1:0",
        ])
    };
    let http = crate::support::daemon::http_client();
    let mut killed_midway = 0;
    for kill_after in 1..=4 {
        let daemon = serve();
        let before = stored_objects(&place);
        let sets_before = shardlite::backup::list_sets(&place).unwrap().len();
        let request = tokio::spawn(http.post(daemon.url("/api/sharding/backups")).send());
        // SIGKILL once the daemon stored `kill_after` copies of this set (or it finished).
        let deadline = Instant::now() + Duration::from_secs(60);
        while stored_objects(&place) < before + kill_after && !request.is_finished() {
            assert!(Instant::now() < deadline, "the daemon stored no copy");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        daemon.signal("KILL");
        drop(daemon);
        let answered = request.await.unwrap().is_ok_and(|r| r.status().is_success());
        let sets = shardlite::backup::list_sets(&place).unwrap();
        if !answered && sets.len() == sets_before {
            killed_midway += 1;
        }
        // Whatever the kill interrupted, every set the place lists is complete.
        for (manifest, _) in &sets {
            let verified = shardlite(&["backup", "verify", manifest.to_str().unwrap()]);
            assert!(
                verified.status.success(),
                "a listed set is not complete: {}",
                stderr(&verified)
            );
        }
    }
    assert!(killed_midway > 0, "no kill landed before a set was complete");
    let daemon = serve();
    let answer = http.post(daemon.url("/api/sharding/backups")).send().await.unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
    let manifest: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(manifest["shards"].as_array().unwrap().len(), 8, "{manifest:#}");
    let listed = json_of(&shardlite(&["backup", "list", place_text, "--json"]));
    let newest = listed.as_array().unwrap().last().unwrap();
    assert_eq!(newest["id"], manifest["id"]);
    let path = place
        .join("sets")
        .join(format!("{}.json", manifest["id"].as_str().unwrap()));
    let verified = shardlite(&["backup", "verify", path.to_str().unwrap()]);
    assert!(verified.status.success(), "{}", stderr(&verified));
    daemon.stop();
}
