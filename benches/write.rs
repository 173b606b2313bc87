//! The write path against what users would otherwise run, in the same process (SPEC section 12's
//! write rows; the rows themselves are in `guard/writes.rs`, which the performance guard shares):
//! an autocommit single-row `INSERT`, WAL and `synchronous=NORMAL` on both sides.
//!
//! - **routed insert / raw rusqlite insert** (latency, ≤ 1.3×): async `execute_sql` through the
//!   routed client of a two-shard map, against a cached prepared statement on the caller's
//!   thread writing a file of its own.
//! - **routed insert, 8 shards x8 / raw rusqlite, 8 threads x8** (throughput, ≥ 0.8×): 8 tasks
//!   on a runtime with one worker per core, each inserting through the routed client of a
//!   route on its own shard of an 8-shard map, against 8 threads each writing one of the same
//!   8 files with raw rusqlite.
//! - **daemon REST insert / bare axum insert** (throughput, ≥ 0.8×), 16 in flight: the daemon's
//!   routed `POST /api/sql/execute` against the bare axum handler of the daemon benchmark
//!   (`benches/daemon/bare.rs`) running the same `INSERT` on the same shard file with one
//!   connection (a second one would only wait for SQLite's write lock).
//!
//! `cargo bench --all-features --bench write`; `SHARDLITE_BENCH_ROUNDS`, `SHARDLITE_BENCH_OPS`,
//! `SHARDLITE_BENCH_PROCESSES` and `SHARDLITE_BENCH_ONLY` as in the other benchmarks.

// The bare tonic server, the query senders and the raw read connection are other benchmarks'.
#[allow(dead_code)]
#[path = "daemon/bare.rs"]
mod bare;
mod common;
#[allow(dead_code)]
#[path = "daemon/load.rs"]
mod load;
#[allow(dead_code)]
#[path = "guard/setup.rs"]
mod setup;
#[path = "guard/writes.rs"]
mod writes;

use common::{Target, header, ratio_line, settings};
use setup::ROWS;

/// The statement of the daemon load's senders (this benchmark sends its own inserts).
const SQL: &str = writes::INSERT;
const KEY: &str = setup::KEY;
const KEYSPACE: &str = setup::KEYSPACE;
/// Requests in flight in the REST row.
const IN_FLIGHT: u64 = 16;

fn row_id(i: u64) -> i64 {
    i64::try_from(i % ROWS.unsigned_abs()).unwrap_or(0) + 1
}

fn main() {
    let (rounds, ops) = settings(5_000);
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()
        .expect("runtime");
    let env = setup::Env::new(&runtime, None);

    let results = writes::one_caller(&runtime, &env, rounds, ops);
    header("routed INSERT, 1 caller (latency)", "ns/op");
    ratio_line(
        &results,
        "routed insert",
        "raw rusqlite insert",
        Target::AtMost(1.3),
        false,
    );

    let results = writes::eight_callers(&runtime, &env, rounds, ops);
    header("routed INSERT, 8 callers on 8 shards (throughput)", "ops/s");
    ratio_line(
        &results,
        "routed insert, 8 shards x8",
        "raw rusqlite, 8 threads x8",
        Target::AtLeast(0.8),
        true,
    );

    let (daemon, stop) = runtime.block_on(env.start_daemon(None));
    let axum_url = runtime.block_on(bare::serve_axum(writes::bare_insert_connections(&env)));
    let results = writes::rest_against(&runtime, &daemon, &axum_url, &setup::http_client(), rounds, ops);
    header(
        &format!("daemon REST INSERT, {IN_FLIGHT} in flight (throughput)"),
        "ops/s",
    );
    ratio_line(
        &results,
        "daemon REST insert x16",
        "bare axum insert x16",
        Target::AtLeast(0.8),
        true,
    );
    let _ = stop.send(());
}
