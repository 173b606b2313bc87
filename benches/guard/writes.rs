//! The write rows of SPEC section 12, shared by the write benchmark (`benches/write.rs`) and the
//! performance guard: an autocommit single-row `INSERT INTO events (tenant, amount) VALUES (?1,
//! ?2)`, WAL and `synchronous=NORMAL` on both sides (shardlite's shard settings).
//!
//! | subject | baseline | target |
//! |---|---|---|
//! | `routed insert`: async `execute_sql` through the routed client | `raw rusqlite insert`: a cached statement on the caller's thread, a file of its own | ≤ 1.3× |
//! | `routed insert, 8 shards x8`: 8 tasks, each on a route of its own shard of the 8-shard map | `raw rusqlite, 8 threads x8`: 8 threads, each writing one of the same 8 files | ≥ 0.8× |
//! | `daemon REST insert x16`: the daemon's routed `POST /api/sql/execute`, 16 in flight | `bare axum insert x16`: the bare axum handler on the same shard file, one connection | ≥ 0.8× |

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;
use shardlite::RouteContext;
use shardlite::client::{Params, RoutedClient, SqlData as _, Value};
use shardlite::server::{KEYSPACE_HEADER, SHARD_KEY_HEADER};
use tokio::runtime::Runtime;

use super::common::{Results, Subject, measure, time, time_threads};
use super::setup::{Env, KEY, KEYSPACE};
use super::{bare, load};

pub const INSERT: &str = "INSERT INTO events (tenant, amount) VALUES (?1, ?2)";
const CALLERS: u64 = 8;

fn insert_params(i: u64) -> Params {
    Params::Positional(vec![Value::Text(KEY.into()), Value::Real(i as f64)])
}

fn raw_insert(conn: &rusqlite::Connection, i: u64) {
    let mut stmt = conn.prepare_cached(INSERT).expect("prepare");
    black_box(stmt.execute((KEY, i as f64)).expect("insert"));
}

/// One routed client per shard of the 8-shard map, in shard order.
fn route_per_shard(env: &Env) -> Vec<RoutedClient> {
    let mut routes: Vec<Option<RoutedClient>> = (0..CALLERS).map(|_| None).collect();
    for n in 0..10_000 {
        let route = RouteContext::new(KEYSPACE, format!("tenant-{n}")).expect("route");
        let shard = env.eight.resolve_route(&route).expect("resolve").shard_id;
        let index: usize = shard.trim_start_matches("shard-").parse().expect("shard index");
        if routes[index].is_none() {
            routes[index] = Some(env.eight.for_route(route));
        }
        if routes.iter().all(Option::is_some) {
            break;
        }
    }
    routes
        .into_iter()
        .map(|route| route.expect("a key for every shard"))
        .collect()
}

/// A REST sender that inserts one row through `base_url`.
fn rest_insert(http: &reqwest::Client, base_url: &str) -> load::Send {
    let http = http.clone();
    let url = format!("{base_url}/api/sql/execute");
    Arc::new(move |id| {
        let request = load::with_key(
            http.post(&url)
                .header(KEYSPACE_HEADER, KEYSPACE)
                .header(SHARD_KEY_HEADER, KEY)
                .json(&json!({ "sql": INSERT, "parameters": [KEY, id] })),
        );
        Box::pin(async move {
            let response = request.send().await.expect("send");
            assert!(response.status().is_success(), "{}", response.status());
            let answer: serde_json::Value = response.json().await.expect("json");
            assert_eq!(answer["rowsAffected"], json!(1), "{answer}");
        })
    })
}

/// The one-caller row: `ops` inserts per round.
pub fn one_caller(runtime: &Runtime, env: &Env, rounds: usize, ops: u64) -> Results {
    let raw_writer = env.raw_writer();
    let mut subjects = vec![
        Subject::new("raw rusqlite insert", |ops| time(ops, |i| raw_insert(&raw_writer, i))),
        Subject::new("routed insert", |ops| {
            runtime.block_on(async {
                let started = Instant::now();
                for i in 0..ops {
                    black_box(env.routed.execute_sql(INSERT, insert_params(i)).await.expect("insert"));
                }
                started.elapsed()
            })
        }),
    ];
    measure(rounds, ops, &mut subjects)
}

/// The 8-caller row: `ops` inserts per round, spread over the callers.
pub fn eight_callers(runtime: &Runtime, env: &Env, rounds: usize, ops: u64) -> Results {
    let routes = Arc::new(route_per_shard(env));
    let raw_files: Vec<Mutex<rusqlite::Connection>> = env
        .raw_fan_out()
        .into_iter()
        .map(|conn| {
            conn.execute_batch("PRAGMA synchronous = NORMAL;").expect("pragma");
            Mutex::new(conn)
        })
        .collect();
    let mut subjects = vec![
        Subject::new("raw rusqlite, 8 threads x8", |ops| {
            time_threads(CALLERS, ops, |t, n| {
                let conn = raw_files[usize::try_from(t).expect("thread")]
                    .lock()
                    .expect("connection");
                for i in 0..n {
                    raw_insert(&conn, i);
                }
            })
        }),
        Subject::new("routed insert, 8 shards x8", |ops| {
            let routes = Arc::clone(&routes);
            runtime.block_on(async move {
                let started = Instant::now();
                let tasks: Vec<_> = (0..CALLERS)
                    .map(|t| {
                        let routes = Arc::clone(&routes);
                        tokio::spawn(async move {
                            let routed = &routes[usize::try_from(t).expect("caller")];
                            for i in 0..ops / CALLERS {
                                black_box(routed.execute_sql(INSERT, insert_params(i)).await.expect("insert"));
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.expect("task");
                }
                started.elapsed()
            })
        }),
    ];
    measure(rounds, ops, &mut subjects)
}

/// The connections of the bare server of the REST row, which [`rest_against`] measures against.
pub fn bare_insert_connections(env: &Env) -> Arc<bare::Connections> {
    bare::Connections::open(&env.routed_file, 1)
}

/// The REST row: routed `INSERT`s through the daemon at `daemon_url` against the bare server
/// at `axum_url` (on [`bare_insert_connections`]), both reached with `http`; `ops` requests per
/// round.
pub fn rest_against(
    runtime: &Runtime,
    daemon_url: &str,
    axum_url: &str,
    http: &reqwest::Client,
    rounds: usize,
    ops: u64,
) -> Results {
    let sends = [rest_insert(http, daemon_url), rest_insert(http, axum_url)];
    let mut subjects = vec![
        Subject::new("daemon REST insert x16", |ops| load::run_load(runtime, ops, &sends[0])),
        Subject::new("bare axum insert x16", |ops| load::run_load(runtime, ops, &sends[1])),
    ];
    measure(rounds, ops, &mut subjects)
}
