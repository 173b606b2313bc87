//! A performance guard, meant for CI: the main ratios of SPEC section 12, each subject
//! measured against its baseline in the same process, interleaved round by round, in three
//! processes one after another (the median of the three is checked). It exits with status 1
//! when a ratio is worse than its target by more than [`MARGIN`].
//!
//! | row | subject | baseline | target |
//! |---|---|---|---|
//! | point query | async `execute_sql` through the routed client | raw rusqlite, cached statement, caller's thread | ≤ 1.5× |
//! | insert | routed autocommit `INSERT` (async `execute_sql`) | raw rusqlite `INSERT` on the caller's thread | ≤ 1.3× |
//! | insert, 8 callers | routed `INSERT`s from 8 tasks, each on its own shard of 8 | 8 raw threads writing the same 8 files | ≥ 0.8× |
//! | fan-out | read-only fan-out over 8 local shards | raw rusqlite on the 8 files in turn | ≤ 1.0× |
//! | REST | the daemon's routed `POST /api/sql/execute`, 16 in flight | a bare axum handler, same query | ≥ 0.8× |
//! | gRPC | the daemon's routed `ExecuteSql`, 16 in flight on 1 channel | a bare tonic handler | ≥ 0.85× |
//! | REST insert | the daemon's routed `INSERT` over REST, 16 in flight | a bare axum handler, same insert | ≥ 0.8× |
//!
//! Both sides of the insert rows use WAL and `synchronous=NORMAL` (shardlite's shard settings);
//! the insert rows are `writes.rs`, which the write benchmark shares.
//! The bare servers are the daemon benchmark's (`benches/daemon/bare.rs`).
//!
//! An example rather than a benchmark target, so that the test build compiles it (and so keeps
//! it building) without running it. Its figures mean something only optimised:
//! `cargo run --release --all-features --example perf-guard`; a build with debug assertions shows
//! the ratios without judging them.
//! `SHARDLITE_BENCH_PROCESSES`, `SHARDLITE_BENCH_ROUNDS` and `SHARDLITE_BENCH_ONLY` work as in
//! the other benchmarks. `SHARDLITE_GUARD_OPERATOR=1` runs the daemon as an operator would
//! (an API key, which every request of both sides carries, and the Prometheus metrics on; heat
//! is always counted) instead of with the defaults; `SHARDLITE_GUARD_TLS=1` serves the daemon
//! and the bare servers over TLS (a certificate made here, which the clients trust).

#[path = "../daemon/bare.rs"]
mod bare;
#[path = "../common/mod.rs"]
mod common;
#[path = "../daemon/load.rs"]
mod load;
mod setup;
#[path = "../daemon/tls.rs"]
mod tls;
mod writes;

use load::{grpc_client, grpc_sender, rest_sender, run_load};
use std::hint::black_box;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use common::{Results, Subject, Target, header, measure, ratio_line, time};
use shardlite::client::{Params, SqlData as _, Value};
use tokio::runtime::Runtime;

use setup::{KEY, KEYSPACE, ROWS};

/// How far past its target a ratio may be before the guard fails, as a fraction of the target
/// (0.25: a latency target of 1.5× fails above 1.875×, a throughput target of 0.8× below 0.6×).
///
/// Provisional: about the spread the other benchmarks show on a shared 2-core VM, where the same
/// ratio moved by a fifth from one process to the next (see the README's performance section);
/// the guard's own spread over repeated runs should set it.
const MARGIN: f64 = 0.25;

const SQL: &str = "SELECT id, tenant, amount FROM orders WHERE id = ?1";
const FAN_OUT: &str = "SELECT count(*) FROM orders";
/// The daemon's API key under `SHARDLITE_GUARD_OPERATOR`.
const OPERATOR_KEY: &str = "guard-operator-key";
/// Requests in flight in the REST and gRPC rows.
const IN_FLIGHT: u64 = 16;

/// One checked ratio.
struct Check {
    subject: &'static str,
    baseline: &'static str,
    /// SPEC section 12's target.
    target: Target,
}

const CHECKS: [Check; 7] = [
    Check {
        subject: "async execute_sql",
        baseline: "raw rusqlite query",
        target: Target::AtMost(1.5),
    },
    Check {
        subject: "routed insert",
        baseline: "raw rusqlite insert",
        target: Target::AtMost(1.3),
    },
    Check {
        subject: "routed insert, 8 shards x8",
        baseline: "raw rusqlite, 8 threads x8",
        target: Target::AtLeast(0.8),
    },
    Check {
        subject: "fan-out, 8 shards",
        baseline: "raw rusqlite, 8 files",
        target: Target::AtMost(1.0),
    },
    Check {
        subject: "daemon REST x16",
        baseline: "bare axum x16",
        target: Target::AtLeast(0.8),
    },
    Check {
        subject: "daemon gRPC x16",
        baseline: "bare tonic x16",
        target: Target::AtLeast(0.85),
    },
    Check {
        subject: "daemon REST insert x16",
        baseline: "bare axum insert x16",
        target: Target::AtLeast(0.8),
    },
];

/// Whether environment variable `name` is set to something other than `0`.
fn env_flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|value| value != "0")
}

fn row_id(i: u64) -> i64 {
    i64::try_from(i % ROWS.unsigned_abs()).unwrap_or(0) + 1
}

fn main() -> ExitCode {
    common::default_processes(3);
    let rounds = common::settings(0).0;
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, usize::from))
        .enable_all()
        .build()
        .expect("runtime");
    let operator = env_flag("SHARDLITE_GUARD_OPERATOR");
    if operator {
        let _ = load::API_KEY.set(OPERATOR_KEY);
    }
    let env = setup::Env::new(&runtime, operator.then_some(OPERATOR_KEY));

    let tls_dir = tempfile::tempdir().expect("a folder for the certificates");
    let tls = env_flag("SHARDLITE_GUARD_TLS").then(|| tls::Certificates::new(tls_dir.path()));

    let mut results = in_process(&runtime, &env, rounds);
    results.extend(daemon(&runtime, &env, rounds, tls.as_ref()));

    // A measuring child only hands its figures to the parent, which judges them.
    if common::is_child() {
        return ExitCode::SUCCESS;
    }
    // Unoptimised code runs several times slower while SQLite's share does not: such a
    // build's ratios are shown, not judged.
    let optimised = !cfg!(debug_assertions);
    header("performance guard (SPEC section 12)", "ns/op");
    if operator {
        println!("  (the daemon with an API key and metrics on)");
    }
    if tls.is_some() {
        println!("  (the daemon and the bare servers over TLS)");
    }
    let mut failed = Vec::new();
    for check in &CHECKS {
        let per_second = matches!(check.target, Target::AtLeast(_));
        ratio_line(&results, check.subject, check.baseline, check.target, per_second);
        let (ratio, within) = match check.target {
            Target::AtLeast(limit) => {
                let ratio = results.ratio(check.baseline, check.subject).0;
                (ratio, ratio >= limit * (1.0 - MARGIN))
            }
            Target::AtMost(limit) => {
                let ratio = results.ratio(check.subject, check.baseline).0;
                (ratio, ratio <= limit * (1.0 + MARGIN))
            }
            Target::None => continue,
        };
        if !within && optimised {
            failed.push(format!("{} ({ratio:.2}x)", check.subject));
        }
    }
    println!(
        "  (raw rusqlite point query {:.0} ns, insert {:.0} ns; measured in {:.0?})",
        results.value("raw rusqlite query"),
        results.value("raw rusqlite insert"),
        started.elapsed()
    );
    if !optimised {
        println!("  (an unoptimised build: the ratios are not SPEC's, and are not checked)");
    }
    if failed.is_empty() {
        println!("every ratio is within {:.0}% of its limit", MARGIN * 100.0);
        ExitCode::SUCCESS
    } else {
        println!(
            "worse than the limit by more than {:.0}%: {}",
            MARGIN * 100.0,
            failed.join(", ")
        );
        ExitCode::FAILURE
    }
}

/// The point query, insert and fan-out rows.
fn in_process(runtime: &Runtime, env: &setup::Env, rounds: usize) -> Results {
    let raw = env.raw_connection();
    let raw_files = env.raw_fan_out();
    let mut subjects = vec![
        Subject::new("raw rusqlite query", |ops| {
            time(ops, |i| {
                let mut stmt = raw.prepare_cached(SQL).expect("prepare");
                let row: (i64, String, f64) = stmt
                    .query_row([row_id(i)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .expect("row");
                black_box(row);
            })
        }),
        Subject::new("async execute_sql", |ops| {
            runtime.block_on(async {
                let started = Instant::now();
                for i in 0..ops {
                    let params = Params::Positional(vec![Value::Integer(row_id(i))]);
                    black_box(env.routed.execute_sql(SQL, params).await.expect("query"));
                }
                started.elapsed()
            })
        }),
    ];
    let mut results = measure(rounds, 20_000, &mut subjects);
    drop(subjects);
    results.extend(writes::one_caller(runtime, env, rounds, 2_000));
    results.extend(writes::eight_callers(runtime, env, rounds, 4_000));
    let mut subjects = vec![
        Subject::new("raw rusqlite, 8 files", |ops| {
            time(ops, |_| {
                for conn in &raw_files {
                    let mut stmt = conn.prepare_cached(FAN_OUT).expect("prepare");
                    black_box(stmt.query_row([], |row| row.get::<_, i64>(0)).expect("count"));
                }
            })
        }),
        Subject::new("fan-out, 8 shards", |ops| {
            runtime.block_on(async {
                let started = Instant::now();
                for _ in 0..ops {
                    let results = env.eight.query().read_all(FAN_OUT).await.expect("fan-out");
                    black_box(results);
                }
                started.elapsed()
            })
        }),
    ];
    results.extend(measure(rounds, 1_000, &mut subjects));
    results
}

/// The REST and gRPC rows: the daemon against the bare servers on the file it routes to, every
/// server over TLS with `tls`.
fn daemon(runtime: &Runtime, env: &setup::Env, rounds: usize, tls: Option<&tls::Certificates>) -> Results {
    let (daemon, stop) = runtime.block_on(env.start_daemon(tls.map(tls::Certificates::server_tls)));
    let connections = bare::Connections::open(&env.routed_file, 4);
    let http = tls.map_or_else(setup::http_client, tls::Certificates::http_client);
    let (axum_url, daemon_grpc, tonic_grpc, insert_url) = runtime.block_on(async {
        let inserts = writes::bare_insert_connections(env);
        match tls {
            Some(tls) => {
                let axum_url = tls::serve_axum(bare::axum_app(Arc::clone(&connections)), tls).await;
                let tonic_url = bare::serve_tonic_with(Arc::clone(&connections), Some(tls.identity()));
                let insert_url = tls::serve_axum(bare::axum_app(inserts), tls).await;
                let daemon_grpc = tls.grpc_client(&daemon).await;
                (axum_url, daemon_grpc, tls.grpc_client(&tonic_url).await, insert_url)
            }
            None => {
                let axum_url = bare::serve_axum(Arc::clone(&connections)).await;
                let tonic_url = bare::serve_tonic(Arc::clone(&connections));
                let insert_url = bare::serve_axum(inserts).await;
                let daemon_grpc = grpc_client(&daemon).await;
                (axum_url, daemon_grpc, grpc_client(&tonic_url).await, insert_url)
            }
        }
    });
    let sends = [
        rest_sender(&http, &daemon),
        rest_sender(&http, &axum_url),
        grpc_sender(daemon_grpc),
        grpc_sender(tonic_grpc),
    ];
    let mut subjects = vec![
        Subject::new("daemon REST x16", |ops| run_load(runtime, ops, &sends[0])),
        Subject::new("bare axum x16", |ops| run_load(runtime, ops, &sends[1])),
    ];
    let mut results = measure(rounds, 4_000, &mut subjects);
    drop(subjects);
    let mut subjects = vec![
        Subject::new("daemon gRPC x16", |ops| run_load(runtime, ops, &sends[2])),
        Subject::new("bare tonic x16", |ops| run_load(runtime, ops, &sends[3])),
    ];
    results.extend(measure(rounds, 4_000, &mut subjects));
    drop(subjects);
    results.extend(writes::rest_against(
        runtime,
        &daemon,
        &insert_url,
        &http,
        rounds,
        2_000,
    ));
    let _ = stop.send(());
    results
}
