//! Migration throughput and memory: copy plus verify of one route key (fenced, and online with
//! writes going on), against SQLite's own
//! `INSERT INTO dest.items SELECT * FROM items WHERE tenant = ?` across `ATTACH` on the same
//! files, in the same run; and the process's peak resident memory while the migration runs.
//!
//! Both shards are files of this process, so the migration copies inside SQLite: a reader of
//! the source hashes each page while the destination's writer copies it, on two threads. The
//! baseline uses one; on a machine busy with other work, expect a lower and noisier ratio.
//! `copy share` is the part of the migration's time spent until the last page was recorded.
//!
//! Each row count runs in a child process of its own, so one size's memory does not hide
//! another's. `SHARDLITE_BENCH_ROWS` (comma-separated) overrides the sizes, default
//! `100000,1000000`; `SHARDLITE_BENCH_PAGE` the page size, default 2000.
//!
//! Each size runs twice: `offline` (the moving key fenced for the whole copy, nothing else
//! writing) and `online` (the default mode), with a writer of its own connection (as another
//! process would be) updating and inserting rows of the moving key about 500 times a second
//! throughout, retrying what the cutover refuses. The online run activates the new map, so its
//! time includes the catch-up and the cutover; `cutover` is how long writes were refused.
//! `SHARDLITE_BENCH_MODES` picks the modes (default `offline,online`).
//!
//! ```text
//! cargo bench --bench migrate
//! ```

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use shardlite::catalog::Catalog;
use shardlite::client::ShardedClient;
use shardlite::data::{ReshardManifest, ReshardRequest, ReshardStatus, TableManifest};
use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};
use shardlite::reshard::Resharder;

const KEY: &str = "big-tenant";

fn main() {
    if let Some(rows) = std::env::args().find_map(|arg| arg.strip_prefix("--child-rows=").map(str::to_owned)) {
        let rows: i64 = rows.parse().expect("row count");
        child(rows, std::env::args().any(|arg| arg == "--online"));
        return;
    }
    let sizes = std::env::var("SHARDLITE_BENCH_ROWS").unwrap_or_else(|_| "100000,1000000".to_owned());
    let modes = std::env::var("SHARDLITE_BENCH_MODES").unwrap_or_else(|_| "offline,online".to_owned());
    let exe = std::env::current_exe().expect("bench binary");
    println!(
        "{:>9} {:>8} {:>14} {:>14} {:>8} {:>10} {:>16} {:>16} {:>8} {:>12}",
        "rows",
        "mode",
        "migrate rows/s",
        "attach rows/s",
        "ratio",
        "copy share",
        "peak RSS (MiB)",
        "growth (MiB)",
        "writes",
        "cutover (ms)"
    );
    let runs = sizes
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .flat_map(|size| {
            modes
                .split(',')
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(move |mode| (size, mode))
        });
    for (size, mode) in runs {
        let mut command = Command::new(&exe);
        command.arg(format!("--child-rows={size}"));
        if mode == "online" {
            command.arg("--online");
        }
        let output = command.output().expect("run the measuring child");
        let text = String::from_utf8_lossy(&output.stdout);
        let Some(line) = text.lines().find(|l| l.starts_with("RESULT ")) else {
            panic!(
                "the child for {size} rows printed no result:\n{text}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        };
        let field = |name: &str| -> f64 {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
                .and_then(|v| v.parse().ok())
                .unwrap_or(f64::NAN)
        };
        let rows = field("rows");
        let migrate = rows / field("migrate_s");
        let attach = rows / field("attach_s");
        println!(
            "{:>9} {:>8} {:>14.0} {:>14.0} {:>7.2}x {:>9.0}% {:>16.1} {:>16.1} {:>8.0} {:>12.0}",
            rows,
            mode,
            migrate,
            attach,
            migrate / attach,
            100.0 * field("copy_s") / field("migrate_s"),
            field("peak_kb") / 1024.0,
            (field("peak_kb") - field("before_kb")) / 1024.0,
            field("writes"),
            field("cutover_ms")
        );
    }
}

/// The resident set size of this process, in KiB.
fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn prepare(dir: &Path, rows: i64) -> std::path::PathBuf {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let master = dir.join("master.db");
    let options = ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 2,
        shards: vec![
            ShardDefinition::local("source", "source.db"),
            ShardDefinition::local("dest", "dest.db"),
        ],
        bucket_ranges: vec![BucketRange::new(0, 1, "source"), BucketRange::new(1, 2, "dest")],
        exact_key_pins: [(KEY.to_owned(), "source".to_owned())].into(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    };
    runtime.block_on(async {
        Catalog::open(&master)
            .await
            .expect("master")
            .seed(options, false)
            .await
            .expect("seed");
    });
    for file in ["source.db", "dest.db"] {
        let conn = rusqlite::Connection::open(dir.join(file)).expect("shard file");
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER, amount REAL, note TEXT);
             CREATE INDEX items_tenant ON items (tenant);",
        )
        .expect("schema");
    }
    let conn = rusqlite::Connection::open(dir.join("source.db")).expect("source");
    conn.execute(
        "WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2)
         INSERT INTO items (id, tenant, n, amount, note)
         SELECT n, ?1, n, n * 0.25, 'row ' || n FROM seq",
        rusqlite::params![KEY, rows],
    )
    .expect("fill");
    conn.execute(
        "INSERT INTO items (id, tenant, n) VALUES (?1, 'someone-else', 0)",
        [rows + 1],
    )
    .expect("other key");
    master
}

/// SQLite's own copy across ATTACH, then the destination emptied again (not timed).
fn attach_copy(dir: &Path) -> Duration {
    let conn = rusqlite::Connection::open(dir.join("source.db")).expect("source");
    conn.execute("ATTACH DATABASE ?1 AS dest", [dir.join("dest.db").to_string_lossy()])
        .expect("attach");
    let started = Instant::now();
    conn.execute(
        "INSERT INTO dest.items SELECT * FROM main.items WHERE tenant = ?1",
        [KEY],
    )
    .expect("insert select");
    let elapsed = started.elapsed();
    conn.execute("DELETE FROM dest.items", [])
        .expect("empty the destination");
    elapsed
}

/// Writes rows of the moving key through a connection of its own, about 500 a second, until
/// `done`: updates of existing rows and inserts of new ones, each retried until it lands (the
/// cutover refuses them for a moment). Returns the writes that landed.
fn write_steadily(source: &Path, rows: i64, done: &AtomicBool) -> u64 {
    let conn = rusqlite::Connection::open(source).expect("writer connection");
    conn.busy_timeout(Duration::from_secs(5)).expect("busy timeout");
    let mut landed = 0u64;
    let mut next_id = rows + 2;
    let mut step = 0i64;
    while !done.load(Ordering::Relaxed) {
        step += 1;
        let outcome = if step % 2 == 0 {
            conn.execute("UPDATE items SET n = n + 1 WHERE id = ?1", [1 + (step * 7919) % rows])
        } else {
            conn.execute(
                "INSERT INTO items (id, tenant, n) VALUES (?1, ?2, 0)",
                rusqlite::params![next_id, KEY],
            )
        };
        match outcome {
            Ok(_) => {
                landed += 1;
                if step % 2 == 1 {
                    next_id += 1;
                }
            }
            // Refused by the cutover's fence (or busy): the same write again shortly.
            Err(_) => step -= 1,
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    landed
}

fn child(rows: i64, online: bool) {
    let dir = tempfile::tempdir().expect("temp dir");
    let master = prepare(dir.path(), rows);
    let attach = attach_copy(dir.path());
    let page: u32 = std::env::var("SHARDLITE_BENCH_PAGE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let sharded = runtime.block_on(ShardedClient::open(&master)).expect("open");
    let before = rss_kb();
    let peak = Arc::new(AtomicU64::new(before));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (Arc::clone(&peak), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kb(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let writing = Arc::new(AtomicBool::new(false));
    let writer = online.then(|| {
        let (writing, source) = (Arc::clone(&writing), dir.path().join("source.db"));
        std::thread::spawn(move || write_steadily(&source, rows, &writing))
    });
    let started = Instant::now();
    let copied_at = Arc::new(std::sync::Mutex::new(started));
    let observer = {
        let copied_at = Arc::clone(&copied_at);
        move |progress: &shardlite::reshard::CopyProgress| {
            if !progress.item.is_empty() {
                *copied_at.lock().expect("copy clock") = Instant::now();
            }
        }
    };
    let manifest = ReshardManifest {
        page_size: Some(page),
        tables: vec![TableManifest {
            table_name: "items".into(),
            route_key_column: "tenant".into(),
            primary_key_column: "id".into(),
        }],
        collections: vec![],
    };
    let result = runtime
        .block_on(Resharder::new(sharded).with_observer(observer).migrate(ReshardRequest {
            online,
            activate: online,
            ..ReshardRequest::route_key("tenants", KEY, "dest", manifest)
        }))
        .expect("migration");
    let migrate = started.elapsed();
    let copy = copied_at.lock().expect("copy clock").duration_since(started);
    writing.store(true, Ordering::Relaxed);
    let writes = writer.map_or(0, |writer| writer.join().expect("writer"));
    done.store(true, Ordering::Relaxed);
    sampler.join().expect("sampler");
    if online {
        assert_eq!(result.status, ReshardStatus::Activated, "{result:#?}");
        assert!(result.receipts[0].source_rows >= u64::try_from(rows).expect("rows"));
    } else {
        assert_eq!(result.status, ReshardStatus::PendingActivation, "{result:#?}");
        assert_eq!(result.receipts[0].source_rows, u64::try_from(rows).expect("rows"));
    }
    let cutover = result
        .online
        .as_ref()
        .and_then(|o| o.cutover_ms)
        .map_or(f64::NAN, |ms| ms as f64);
    println!(
        "RESULT rows={rows} migrate_s={} copy_s={} attach_s={} before_kb={before} peak_kb={} writes={writes} \
         cutover_ms={cutover}",
        migrate.as_secs_f64(),
        copy.as_secs_f64(),
        attach.as_secs_f64(),
        peak.load(Ordering::Relaxed)
    );
}
