//! A key moves while the application keeps writing: four writers on other keys of the same
//! shard and one on the moving key, through a client of their own (as another process would
//! be). Every acknowledged write ends up exactly once, on the shard that owns its key.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::migrate::{fill, key_request, migration_master, other, owner};
use crate::support::{route, temp_dir};
use shardlite::ErrorKind;
use shardlite::client::{Params, ShardedClient, ShardedClientOptions, SqlData, Value};
use shardlite::data::ReshardStatus;
use shardlite::reshard::Resharder;

struct Writer {
    key: String,
    acked: Arc<Mutex<Vec<String>>>,
    refused: Arc<AtomicU64>,
}

/// Writes rows for `key` until `stop`, recording the ids the shard acknowledged. A fenced
/// write is retried (it is retryable); anything else fails the test.
fn spawn_writer(app: ShardedClient, key: String, stop: Arc<AtomicBool>) -> (Writer, tokio::task::JoinHandle<()>) {
    let acked = Arc::new(Mutex::new(Vec::new()));
    let refused = Arc::new(AtomicU64::new(0));
    let writer = Writer {
        key: key.clone(),
        acked: Arc::clone(&acked),
        refused: Arc::clone(&refused),
    };
    let handle = tokio::spawn(async move {
        let routed = app.for_route(route(&key));
        let mut n = 0u64;
        while !stop.load(Ordering::SeqCst) {
            n += 1;
            let id = format!("{key}-w{n:06}");
            let outcome = routed
                .execute_sql(
                    "INSERT INTO items (id, tenant, n) VALUES (?1, ?2, ?3)",
                    Params::Positional(vec![
                        Value::from(id.as_str()),
                        Value::from(key.as_str()),
                        Value::Integer(i64::try_from(n).unwrap()),
                    ]),
                )
                .await;
            match outcome {
                Ok(_) => acked.lock().unwrap().push(id),
                Err(err) if err.kind() == ErrorKind::RouteFenced => {
                    refused.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                Err(err) if err.is_retryable() => tokio::time::sleep(Duration::from_millis(2)).await,
                Err(err) => panic!("write of {id} failed: {err}"),
            }
            tokio::task::yield_now().await;
        }
    });
    (writer, handle)
}

/// How many of `ids` each shard holds.
async fn held(sharded: &ShardedClient, shard: &str, ids: &[String]) -> i64 {
    let json = serde_json::to_string(ids).unwrap();
    let result = sharded
        .for_shard_id(shard)
        .unwrap()
        .execute_read_only_sql(
            "SELECT count(*) FROM items WHERE id IN (SELECT value FROM json_each(?1))",
            Params::from(vec![json]),
        )
        .await
        .unwrap();
    result.rows[0][0].as_i64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_write_lands_once_on_the_right_shard_while_a_key_moves() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let admin = ShardedClient::open(&master).await.unwrap();
    let keys: Vec<String> = (0..200).map(|i| format!("busy-{i}")).collect();
    let source = owner(&admin, &keys[0]);
    let same_shard: Vec<String> = keys
        .into_iter()
        .filter(|k| owner(&admin, k) == source)
        .take(5)
        .collect();
    let (moving, others) = (same_shard[0].clone(), same_shard[1..].to_vec());
    let destination = other(&source);
    fill(&admin, &moving, 1, 3_000).await;

    let app = ShardedClient::open_with(
        &master,
        ShardedClientOptions {
            refresh_interval: Duration::from_millis(50),
            ..ShardedClientOptions::default()
        },
    )
    .await
    .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    let mut handles = Vec::new();
    for key in others.iter().chain([&moving]) {
        let (writer, handle) = spawn_writer(app.clone(), key.clone(), Arc::clone(&stop));
        writers.push(writer);
        handles.push(handle);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;

    let result = Resharder::new(admin.clone())
        .migrate(key_request(&moving, destination, 100))
        .await
        .unwrap();
    assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");
    let moving_writer = writers.last().unwrap();
    let acked_at_activation = moving_writer.acked.lock().unwrap().len();
    // Let the writers go on until the moving key's writer has written on its new shard.
    for _ in 0..400 {
        if moving_writer.acked.lock().unwrap().len() > acked_at_activation + 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    stop.store(true, Ordering::SeqCst);
    for handle in handles {
        handle.await.unwrap();
    }

    assert!(
        moving_writer.refused.load(Ordering::SeqCst) > 0,
        "the moving key was never fenced"
    );
    assert!(
        moving_writer.acked.lock().unwrap().len() > acked_at_activation,
        "no write after the move"
    );
    for writer in &writers {
        let acked = writer.acked.lock().unwrap().clone();
        assert!(!acked.is_empty(), "{} wrote nothing", writer.key);
        let home = owner(&admin, &writer.key);
        assert_eq!(
            held(&admin, &home, &acked).await,
            i64::try_from(acked.len()).unwrap(),
            "{}",
            writer.key
        );
        assert_eq!(
            held(&admin, other(&home), &acked).await,
            0,
            "{} left rows on the wrong shard",
            writer.key
        );
    }
    assert_eq!(owner(&admin, &moving), destination);
    let seeded: Vec<String> = (1..=3_000).map(|n| format!("{moving}-{n:08}")).collect();
    assert_eq!(held(&admin, destination, &seeded).await, 3_000);
    assert_eq!(held(&admin, &source, &seeded).await, 0);
}
