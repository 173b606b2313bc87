//! Routers follow a catalog change by the records it wrote: a pin moved while two daemons on
//! one catalog (in etcd, and in a master file) take a steady routed write load. Once both serve
//! the new map, no request is routed by the old one, and the second router serves the moved pin
//! within a second of the activation.
#![cfg(all(feature = "server", feature = "etcd"))]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use shardlite::catalog::Catalog;
use shardlite::client::ShardedClient;
use shardlite::map::ShardingOptions;
use shardlite::wire::{KEYSPACE_HEADER, SHARD_KEY_HEADER};

use crate::support::daemon::http_client;
use crate::support::etcd::EtcdCluster;
use crate::support::serve::ServeProcess;
use crate::support::{path_str, temp_dir, tenants_options};

/// The moving route key: pinned to `s0` in version 1, to `s1` in version 2.
const KEY: &str = "tenant-moving";

fn version_one(dir: &Path) -> ShardingOptions {
    let mut map = tenants_options(dir);
    map.exact_key_pins.insert(KEY.to_owned(), "s0".to_owned());
    map
}

/// One routed write: its sequence number, the router, when it was sent and whether it succeeded.
struct Write {
    seq: u64,
    sent: Instant,
    ok: bool,
}

/// Sends routed `INSERT`s of increasing sequence numbers for [`KEY`] to `daemon` until `stop`.
async fn load(daemon: String, router: &'static str, next: Arc<AtomicU64>, stop: Arc<AtomicBool>) -> Vec<Write> {
    let http = http_client();
    let mut writes = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let seq = next.fetch_add(1, Ordering::Relaxed);
        let sent = Instant::now();
        let response = http
            .post(format!("{daemon}/api/sql/execute"))
            .header(KEYSPACE_HEADER, "tenants")
            .header(SHARD_KEY_HEADER, KEY)
            .json(&json!({ "sql": "INSERT INTO t (seq, router) VALUES (?1, ?2)", "parameters": [seq, router] }))
            .send()
            .await;
        let ok = matches!(&response, Ok(r) if r.status().is_success());
        writes.push(Write { seq, sent, ok });
    }
    writes
}

/// The map version and shard `daemon` resolves [`KEY`] to.
async fn resolved(http: &reqwest::Client, daemon: &ServeProcess) -> (u64, String) {
    let answer: Value = http
        .post(daemon.url("/api/sharding/resolve"))
        .json(&json!({ "keyspace": "tenants", "key": KEY }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    (
        answer["mapVersion"].as_u64().unwrap_or(0),
        answer["shardId"].as_str().unwrap_or_default().to_owned(),
    )
}

/// The sequence numbers stored in shard file `file`.
fn stored(file: &Path) -> Vec<u64> {
    let connection = rusqlite::Connection::open(file).unwrap();
    let mut statement = connection.prepare("SELECT seq FROM t ORDER BY seq").unwrap();
    statement
        .query_map([], |row| row.get::<_, i64>(0))
        .unwrap()
        .map(|seq| u64::try_from(seq.unwrap()).unwrap())
        .collect()
}

/// Moves [`KEY`] from `s0` to `s1` (a patch through daemon A, then activation) under load on
/// daemons A and B; returns how long after the activation B served the new pin.
async fn a_moved_pin_under_load(master: &str, dir: &Path) -> Duration {
    let client = ShardedClient::open(master).await.unwrap();
    for outcome in client
        .query()
        .execute_all("CREATE TABLE t (seq INTEGER PRIMARY KEY, router TEXT NOT NULL)")
        .await
        .unwrap()
    {
        assert!(outcome.error.is_none(), "{outcome:?}");
    }
    let (a, b) = (
        ServeProcess::start(&["--master", master, "--listen", "127.0.0.1:0"]),
        ServeProcess::start(&["--master", master, "--listen", "127.0.0.1:0"]),
    );
    let http = http_client();
    assert_eq!(resolved(&http, &b).await, (1, "s0".to_owned()));

    let (next, stop) = (Arc::new(AtomicU64::new(1)), Arc::new(AtomicBool::new(false)));
    let loads = [(a.url(""), "a"), (b.url(""), "b")].map(|(url, router)| {
        tokio::spawn(load(
            url.trim_end_matches('/').to_owned(),
            router,
            Arc::clone(&next),
            Arc::clone(&stop),
        ))
    });
    tokio::time::sleep(Duration::from_millis(300)).await;

    let patch = json!({ "mapVersion": 2, "exactKeyPins": { KEY: "s1" } });
    let body = json!({ "patch": patch, "expectedCurrentMapVersion": 1, "allowOwnershipChange": true });
    let applied = http
        .post(a.url("/api/sharding/catalog/apply"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(applied.status(), StatusCode::OK, "{:?}", applied.text().await);
    let activated = http
        .post(a.url("/api/sharding/catalog/activate"))
        .json(&json!({ "expectedPendingMapVersion": 2 }))
        .send()
        .await
        .unwrap();
    assert_eq!(activated.status(), StatusCode::OK, "{:?}", activated.text().await);
    let activation = Instant::now();
    let mut on_b = None;
    let followed = loop {
        let (on_a_now, on_b_now) = (resolved(&http, &a).await, resolved(&http, &b).await);
        let moved = (2, "s1".to_owned());
        if on_b.is_none() && on_b_now == moved {
            on_b = Some(activation.elapsed());
        }
        if on_a_now == moved && on_b_now == moved {
            break Instant::now();
        }
        assert!(
            activation.elapsed() < Duration::from_secs(5),
            "after 5 s router A resolves {on_a_now:?} and B {on_b_now:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let mut writes = Vec::new();
    for load in loads {
        writes.extend(load.await.unwrap());
    }

    let failed: Vec<u64> = writes.iter().filter(|w| !w.ok).map(|w| w.seq).collect();
    assert!(failed.is_empty(), "routed writes failed: {failed:?}");
    let (old, new) = (stored(&dir.join("s0.db")), stored(&dir.join("s1.db")));
    let after: Vec<u64> = writes.iter().filter(|w| w.sent >= followed).map(|w| w.seq).collect();
    assert!(!after.is_empty() && !old.is_empty(), "the load ran on both maps");
    let misrouted: Vec<&u64> = after.iter().filter(|seq| old.contains(seq)).collect();
    assert!(
        misrouted.is_empty(),
        "writes sent after both routers followed went to the old shard: {misrouted:?}"
    );
    assert!(after.iter().all(|seq| new.contains(seq)));
    assert_eq!(old.len() + new.len(), writes.len(), "every write is stored once");
    drop(client);
    on_b.expect("B followed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pin_moved_under_routed_load_reaches_both_routers_on_etcd_and_on_a_master_file() {
    let Some(cluster) = EtcdCluster::start(3) else {
        return;
    };
    let dir = temp_dir();
    let url = cluster.url("follow");
    Catalog::open(&url)
        .await
        .unwrap()
        .seed(version_one(dir.path()), false)
        .await
        .unwrap();
    let on_etcd = a_moved_pin_under_load(&url, dir.path()).await;

    let file_dir = temp_dir();
    let master = crate::support::seed_master(file_dir.path(), version_one(file_dir.path())).await;
    let on_file = a_moved_pin_under_load(&path_str(&master), file_dir.path()).await;
    println!("the second router served the moved pin after {on_etcd:?} (etcd) and {on_file:?} (master file)");
    assert!(on_etcd < Duration::from_secs(1), "{on_etcd:?}");
    assert!(on_file < Duration::from_secs(1), "{on_file:?}");
}
