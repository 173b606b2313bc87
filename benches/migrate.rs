//! Migration throughput and memory: copy plus verify of one route key, against SQLite's own
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
use shardlite::data::{KeyMigrationRequest, MigrationManifest, MigrationStatus, TableManifest};
use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};
use shardlite::reshard::Migrator;

const KEY: &str = "big-tenant";

fn main() {
    if let Some(rows) = std::env::args().find_map(|arg| arg.strip_prefix("--child-rows=").map(str::to_owned)) {
        let rows: i64 = rows.parse().expect("row count");
        child(rows);
        return;
    }
    let sizes = std::env::var("SHARDLITE_BENCH_ROWS").unwrap_or_else(|_| "100000,1000000".to_owned());
    let exe = std::env::current_exe().expect("bench binary");
    println!(
        "{:>9} {:>14} {:>14} {:>8} {:>10} {:>16} {:>16}",
        "rows", "migrate rows/s", "attach rows/s", "ratio", "copy share", "peak RSS (MiB)", "growth (MiB)"
    );
    for size in sizes.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let output = Command::new(&exe)
            .arg(format!("--child-rows={size}"))
            .output()
            .expect("run the measuring child");
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
            "{:>9} {:>14.0} {:>14.0} {:>7.2}x {:>9.0}% {:>16.1} {:>16.1}",
            rows,
            migrate,
            attach,
            migrate / attach,
            100.0 * field("copy_s") / field("migrate_s"),
            field("peak_kb") / 1024.0,
            (field("peak_kb") - field("before_kb")) / 1024.0
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

fn child(rows: i64) {
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
    let started = Instant::now();
    let copied_at = Arc::new(std::sync::Mutex::new(started));
    let observer = {
        let copied_at = Arc::clone(&copied_at);
        move |_: &shardlite::reshard::CopyProgress| {
            *copied_at.lock().expect("copy clock") = Instant::now();
        }
    };
    let result = runtime
        .block_on(
            Migrator::new(sharded)
                .with_observer(observer)
                .migrate_key(KeyMigrationRequest {
                    keyspace: "tenants".into(),
                    route_key: KEY.into(),
                    destination_shard_id: "dest".into(),
                    manifest: MigrationManifest {
                        page_size: Some(page),
                        tables: vec![TableManifest {
                            table_name: "items".into(),
                            route_key_column: "tenant".into(),
                            primary_key_column: "id".into(),
                        }],
                        collections: vec![],
                    },
                    migration_id: None,
                    expected_current_map_version: None,
                    dry_run: false,
                    online: true,
                    activate: false,
                    delete_source: false,
                    operator: None,
                    comment: None,
                }),
        )
        .expect("migration");
    let migrate = started.elapsed();
    let copy = copied_at.lock().expect("copy clock").duration_since(started);
    done.store(true, Ordering::Relaxed);
    sampler.join().expect("sampler");
    assert_eq!(result.status, MigrationStatus::PendingActivation, "{result:#?}");
    assert_eq!(result.receipts[0].source_rows, u64::try_from(rows).expect("rows"));
    println!(
        "RESULT rows={rows} migrate_s={} copy_s={} attach_s={} before_kb={before} peak_kb={}",
        migrate.as_secs_f64(),
        copy.as_secs_f64(),
        attach.as_secs_f64(),
        peak.load(Ordering::Relaxed)
    );
}
