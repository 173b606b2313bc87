//! An online move under steady writes over REST: writers insert, update and delete rows of the
//! moving key (about 500 writes a second in total, retrying `route_fenced`) while a daemon moves
//! the key's rows. Every acknowledged write ends up on the destination exactly once and nowhere
//! else; writes are refused only for the short cutover, whose length the writers measure; a
//! reader meanwhile always sees the whole of one owner's rows.
//!
//! `SHARDLITE_ONLINE_ROWS` sets the rows of the moving key (default 20,000; the figure
//! is 100,000). Run with `--nocapture` for the distribution of refused stretches. The longest
//! stretch is held to 250 ms in a release build (`cargo test --release`), to 1 s in a debug
//! build under the full suite's load; `SHARDLITE_ONLINE_MAX_REFUSED_MS` sets another bound.
#![cfg(all(feature = "server", feature = "http"))]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::daemon::{Daemon, http_client, routed, start_daemon_on};
use crate::support::migrate::{fill, key_request, migration_master, other, owner};
use crate::support::temp_dir;
use serde_json::{Value as Json, json};
use shardlite::client::ShardedClient;
use shardlite::data::{ReshardAdmin, ReshardStatus};
use shardlite::server::ServerConfig;
use shardlite::transport::RemoteOptions;
use shardlite::transport::http::HttpClient;

/// Rows of the moving key that no writer touches: every read must see all of them.
const UNTOUCHED: i64 = 100;

/// Writers, and the interval at which each starts a write (500 writes a second in all, when the
/// daemon answers fast enough).
const WRITERS: u64 = 8;
const WRITE_EVERY: Duration = Duration::from_millis(16);

/// What the writers were told happened: each row's value of `n`, or `None` once deleted.
type Model = Arc<Mutex<BTreeMap<String, Option<i64>>>>;

/// Why a write was not acknowledged.
enum Unacknowledged {
    /// Refused by the fence: retry.
    Fenced,
    /// No answer (the connection failed): retry; the write may have landed.
    NoAnswer,
    /// The row is already there: an insert retried after [`Unacknowledged::NoAnswer`] landed the
    /// first time.
    AlreadyThere,
}

/// One REST statement on the moving key: `Ok(rows affected)` when acknowledged. Any answer but
/// success, the fence's refusal and (for an insert that is a retry) a duplicate key fails the
/// test.
async fn write(
    daemon: &Daemon,
    client: &reqwest::Client,
    key: &str,
    (sql, params): (&str, Json),
    retry: bool,
) -> Result<i64, Unacknowledged> {
    let response = routed(client.post(daemon.url("/api/sql/execute")), key)
        .json(&json!({ "sql": sql, "parameters": params }))
        .send()
        .await
        .map_err(|_| Unacknowledged::NoAnswer)?;
    let status = response.status();
    let body: Json = response.json().await.map_err(|_| Unacknowledged::NoAnswer)?;
    if status.is_success() {
        return Ok(body["rowsAffected"].as_i64().unwrap_or(0));
    }
    if retry && sql.starts_with("INSERT") && body["errorCode"] == "constraint" {
        return Err(Unacknowledged::AlreadyThere);
    }
    assert!(
        status == 409 && body["errorCode"] == "route_fenced",
        "a write failed for another reason than the fence: {status} {body}"
    );
    Err(Unacknowledged::Fenced)
}

/// A writer: inserts rows of its own, updates and deletes them and rows filled before the move,
/// until `stop`. Records in `model` what was acknowledged, and in `stretches` how long each
/// write that met the fence waited from its first refusal to its acknowledgement.
async fn writer(
    daemon: Arc<Daemon>,
    key: String,
    number: u64,
    filled: i64,
    model: Model,
    stretches: Arc<Mutex<Vec<Duration>>>,
    stop: Arc<AtomicBool>,
) -> u64 {
    let client = http_client();
    let mut acknowledged = 0u64;
    let mut step = 0i64;
    let mut mine: Vec<String> = Vec::new();
    let mut pace = tokio::time::interval(WRITE_EVERY);
    pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.load(Ordering::SeqCst) {
        pace.tick().await;
        step += 1;
        // Rows filled before the move, past the untouched ones, spread over the writers.
        let filled_id = format!(
            "{key}-{:08}",
            UNTOUCHED
                + 1
                + (step * i64::try_from(WRITERS).unwrap() + i64::try_from(number).unwrap()) % (filled - UNTOUCHED)
        );
        let (sql, params, id, value) = match step % 4 {
            0 | 1 => {
                let id = format!("{key}-w{number}-{step:06}");
                mine.push(id.clone());
                (
                    "INSERT INTO items (id, tenant, n) VALUES (?1, ?2, ?3)",
                    json!([id, key, step]),
                    id,
                    Some(step),
                )
            }
            2 => (
                "UPDATE items SET n = ?1 WHERE id = ?2",
                json!([-step, filled_id]),
                filled_id,
                Some(-step),
            ),
            _ => match mine.pop() {
                Some(id) if step % 8 == 3 => ("DELETE FROM items WHERE id = ?1", json!([id]), id, None),
                _ => ("DELETE FROM items WHERE id = ?1", json!([filled_id]), filled_id, None),
            },
        };
        let mut first_refusal: Option<Instant> = None;
        let mut unanswered = false;
        loop {
            match write(&daemon, &client, &key, (sql, params.clone()), unanswered).await {
                Ok(_) | Err(Unacknowledged::AlreadyThere) => break,
                Err(Unacknowledged::Fenced) => {
                    first_refusal.get_or_insert_with(Instant::now);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                Err(Unacknowledged::NoAnswer) => {
                    unanswered = true;
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
        }
        if let Some(refused) = first_refusal {
            stretches.lock().unwrap().push(refused.elapsed());
        }
        {
            let mut model = model.lock().unwrap();
            // A row deleted earlier stays deleted: an update of it affects nothing.
            if value.is_none() || sql.starts_with("INSERT") || model.get(&id).is_none_or(Option::is_some) {
                model.insert(id, value);
            }
        }
        acknowledged += 1;
    }
    acknowledged
}

/// Reads the untouched rows until `stop`; returns how many reads saw them all (any other count
/// fails the test: a read saw a mix of owners, or a half-copied one).
async fn reader(daemon: Arc<Daemon>, key: String, stop: Arc<AtomicBool>) -> u64 {
    let client = http_client();
    let mut reads = 0;
    let last = format!("{key}-{UNTOUCHED:08}");
    while !stop.load(Ordering::SeqCst) {
        let response = routed(client.post(daemon.url("/api/sql/execute")), &key)
            .json(
                &json!({ "sql": "SELECT count(*) FROM items WHERE tenant = ?1 AND id <= ?2",
                           "parameters": [key, last] }),
            )
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        let body: Json = response.json().await.unwrap();
        assert_eq!(
            body["rows"][0][0],
            json!(UNTOUCHED),
            "a read saw part of the key's rows"
        );
        reads += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    reads
}

/// The moving key's rows on `shard`, id to `n`.
async fn rows_on(sharded: &ShardedClient, shard: &str, key: &str) -> BTreeMap<String, i64> {
    use shardlite::client::Params;
    let result = sharded
        .for_shard_id(shard)
        .unwrap()
        .execute_read_only_sql(
            "SELECT id, n FROM items WHERE tenant = ?1 ORDER BY id",
            Params::from(vec![key]),
        )
        .await
        .unwrap();
    result
        .rows
        .iter()
        .map(|row| (row[0].as_str().unwrap().to_owned(), row[1].as_i64().unwrap()))
        .collect()
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[(sorted.len() - 1) * p / 100]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_online_move_under_steady_rest_writes_loses_nothing_and_refuses_writes_only_briefly() {
    let rows: i64 = std::env::var("SHARDLITE_ONLINE_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let key = "busy-tenant".to_owned();
    let (source, destination) = {
        let sharded = ShardedClient::open(&master).await.unwrap();
        fill(&sharded, &key, 1, rows).await;
        let source = owner(&sharded, &key);
        (source.clone(), other(&source).to_owned())
    };
    let model: Model = Arc::new(Mutex::new(
        (1..=rows).map(|n| (format!("{key}-{n:08}"), Some(n))).collect(),
    ));
    // The move of the larger row counts runs past the default request time limit.
    let config = ServerConfig {
        request_timeout: Some(Duration::from_secs(600)),
        ..ServerConfig::default()
    };
    let daemon = Arc::new(start_daemon_on(&master, config).await);
    let stop = Arc::new(AtomicBool::new(false));
    let stretches = Arc::new(Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..WRITERS)
        .map(|number| {
            tokio::spawn(writer(
                Arc::clone(&daemon),
                key.clone(),
                number,
                rows,
                Arc::clone(&model),
                Arc::clone(&stretches),
                Arc::clone(&stop),
            ))
        })
        .collect();
    let reading = tokio::spawn(reader(Arc::clone(&daemon), key.clone(), Arc::clone(&stop)));
    tokio::time::sleep(Duration::from_millis(300)).await;

    // The daemon answers when the move ends: minutes for the larger row counts in a debug build.
    let http =
        HttpClient::new(RemoteOptions::new(&daemon.base_url).with_request_timeout(Duration::from_secs(600))).unwrap();
    let started = Instant::now();
    let result = http
        .start_migration(&key_request(&key, &destination, 500))
        .await
        .unwrap();
    let took = started.elapsed();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    let mut acknowledged = 0;
    for writer in writers {
        acknowledged += writer.await.unwrap();
    }
    let reads = reading.await.unwrap();

    assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");
    assert!(result.spec.online);
    let online = result.online.clone().expect("online progress");
    assert!(!online.capturing, "the capture is removed: {online:?}");
    let cutover = online.cutover_ms.expect("the cutover's length");
    let mut stretches = stretches.lock().unwrap().clone();
    stretches.sort();
    let writes_per_second = acknowledged as f64 / (took.as_secs_f64() + 0.6);
    println!(
        "{rows} rows moved in {took:?} under {acknowledged} acknowledged writes (~{writes_per_second:.0}/s), \
         {reads} reads; {} changes replayed in {} catch-up rounds; cutover {cutover} ms; refused stretches: {} \
         writes waited, p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
        online.changes_applied,
        online.catch_up_rounds,
        stretches.len(),
        percentile(&stretches, 50),
        percentile(&stretches, 90),
        percentile(&stretches, 99),
        stretches.last().copied().unwrap_or_default(),
    );

    // Every acknowledged write is on the destination, once, and nothing of the key elsewhere.
    let sharded = ShardedClient::open(&master).await.unwrap();
    let expected: BTreeMap<String, i64> = model
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(id, n)| n.map(|n| (id.clone(), n)))
        .collect();
    let held = rows_on(&sharded, &destination, &key).await;
    assert_eq!(held.len(), expected.len(), "rows of the key on the destination");
    assert!(held == expected, "the destination differs from the acknowledged writes");
    assert!(
        rows_on(&sharded, &source, &key).await.is_empty(),
        "rows left on the source"
    );
    assert!(reads > 0);
    // Writes of the moving key were refused only for the cutover: at most 250 ms (SPEC section
    // 16). An unoptimised build sharing two cores with a hundred other tests gets four times that.
    let target = if cfg!(debug_assertions) { 1_000 } else { 250 };
    let limit = std::env::var("SHARDLITE_ONLINE_MAX_REFUSED_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_millis(target), Duration::from_millis);
    let longest = stretches.last().copied().unwrap_or_default();
    assert!(
        longest <= limit,
        "writes were refused for {longest:?} in a row (cutover {cutover} ms)"
    );
}
