//! Crash safety of atomic transactions whose participants include a data host: the accounts of
//! [`atomic_crash`](crate::atomic_crash) on 8 shards, four of them (`s4` to `s7`) shards of a
//! data host that runs as a real `shardlite serve --shard-dir` child process, two reached over
//! REST and two over gRPC. Concurrent transfers run as atomic transactions coordinated in this
//! process while the data host is killed with SIGKILL at random moments and restarted on the
//! same port and files (the transfers go on through the restart), for
//! `SHARDLITE_ATOMIC_FUZZ_ROUNDS` rounds (default 2; `SHARDLITE_ATOMIC_FUZZ_SEED` replays one).
//! After each round recovery runs until no lock or intent is left in any file, local or the
//! host's, and nothing is unresolved (a decided record the host queued to delete at its shard's
//! next decision may stay; none is pending); then the sum of balances is unchanged, every account
//! holds what the transfers on record moved, and every acknowledged transfer is on record.
#![cfg(all(feature = "server", feature = "http", feature = "grpc"))]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use shardlite::client::{Params, ShardedClient, ShardedClientOptions};
use shardlite::engine::EngineConfig;
use shardlite::map::ShardDefinition;
use shardlite::server::{ServerConfig, ServerState};

use crate::atomic_crash::{
    Choices, SHARDS, Transfer, WRITERS, atomic_rows_in, check_books, fuzz_rounds_and_seed, open_accounts, tenant,
    transfer_steps,
};
use crate::support::many::pinned_tenants;
use crate::support::serve::ServeProcess;
use crate::support::{path_str, seed_master, temp_dir};

/// The shards the data host serves (as `h-{i}`); the rest are files of this process.
const HOSTED: std::ops::Range<usize> = 4..SHARDS;

/// The transport the coordinator reaches hosted shard `i` over: half REST, half gRPC.
fn transport(i: usize) -> &'static str {
    if i < 6 { "http" } else { "grpc" }
}

/// The data host: its folder, and the process serving it (none while it is down).
struct Host {
    folder: PathBuf,
    listen: String,
    process: Option<ServeProcess>,
}

impl Host {
    async fn start(dir: &Path) -> Self {
        let folder = dir.join("host");
        std::fs::create_dir_all(&folder).unwrap();
        let files = ServerState::open_shard_dir(&folder, ServerConfig::default()).unwrap();
        for i in HOSTED {
            files.host().unwrap().create_shard(&format!("h-{i}")).await.unwrap();
        }
        drop(files);
        let mut host = Self {
            folder,
            listen: "127.0.0.1:0".into(),
            process: None,
        };
        host.restart();
        host.listen = host.base_url().trim_start_matches("http://").to_owned();
        host
    }

    fn base_url(&self) -> String {
        self.process.as_ref().expect("the host runs").base_url.clone()
    }

    /// SIGKILL, and the process reaped.
    fn kill(&mut self) {
        drop(self.process.take());
    }

    /// A new process on the same files and port.
    fn restart(&mut self) {
        let folder = path_str(&self.folder);
        let args = ["--shard-dir", folder.as_str(), "--listen", self.listen.as_str()];
        self.process = Some(ServeProcess::start(&args));
    }

    /// Every shard file: this process's and the host's.
    fn files(&self, dir: &Path) -> Vec<PathBuf> {
        (0..SHARDS)
            .map(|i| {
                if HOSTED.contains(&i) {
                    self.folder.join(format!("h-{i}.db"))
                } else {
                    dir.join(format!("s{i}.db"))
                }
            })
            .collect()
    }
}

/// The map (local shards and the host's) with the accounts open on every shard.
async fn accounts_master(dir: &Path, host: &Host) -> PathBuf {
    let mut map = pinned_tenants(SHARDS, |i| dir.join(format!("s{i}.db")).display().to_string());
    for i in HOSTED {
        let mut shard = ShardDefinition::local(format!("s{i}"), "");
        shard.data_source = None;
        shard.endpoint = Some(host.base_url());
        shard.transport = Some(transport(i).into());
        shard.remote_shard_id = Some(format!("h-{i}"));
        map.shards[i] = shard;
    }
    let master = seed_master(dir, map).await;
    open_accounts(&ShardedClient::open(&master).await.unwrap()).await;
    master
}

/// A coordinator with an abandon age of `abandon` and a quick background resolver.
async fn coordinator(master: &Path, abandon: Duration) -> ShardedClient {
    let mut options = ShardedClientOptions::with_engine(EngineConfig {
        atomic_abandon_age: abandon,
        ..EngineConfig::default()
    });
    options.atomic_resolver_period = Some(Duration::from_millis(100));
    ShardedClient::open_with(master, options).await.unwrap()
}

async fn run_transfer(sharded: &ShardedClient, transfer: &Transfer) -> shardlite::Result<()> {
    let mut atomic = sharded.begin_atomic();
    for (account, sql) in &transfer_steps(transfer) {
        atomic.execute(&tenant(*account), sql, Params::none()).await?;
    }
    atomic.commit().await
}

/// Transfers from [`WRITERS`] concurrent tasks on one coordinator until `stop`; the acknowledged
/// ones are recorded.
struct Load {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(sharded: &ShardedClient, seed: u64, acknowledged: &Arc<Mutex<Vec<Transfer>>>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..WRITERS)
            .map(|writer| {
                let (sharded, stop, acknowledged) = (sharded.clone(), Arc::clone(&stop), Arc::clone(acknowledged));
                let mut choices = Choices(seed.wrapping_add(u64::try_from(writer).unwrap() * 7919) | 1);
                tokio::spawn(async move {
                    while !stop.load(Ordering::SeqCst) {
                        let transfer = choices.transfer(false);
                        if run_transfer(&sharded, &transfer).await.is_ok() {
                            acknowledged.lock().unwrap().push(transfer);
                        } else {
                            // The host is down: do not spin on refused connections.
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                    }
                })
            })
            .collect();
        Self { stop, tasks }
    }

    async fn end(self) {
        self.stop.store(true, Ordering::SeqCst);
        for task in self.tasks {
            task.await.unwrap();
        }
    }
}

fn pause(choices: &mut Choices, at_least_ms: usize, spread_ms: usize) -> Duration {
    Duration::from_millis(u64::try_from(at_least_ms + choices.next(spread_ms)).unwrap())
}

/// The decision records in the host's files that are not decided.
fn undecided_on_host(host: &Host) -> i64 {
    HOSTED
        .map(|i| {
            let file = host.folder.join(format!("h-{i}.db"));
            let db = rusqlite::Connection::open_with_flags(&file, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
            db.query_row(
                "SELECT count(*) FROM _shardlite_atomic_decisions WHERE state = 'pending'",
                [],
                |row| row.get::<_, i64>(0),
            )
            .unwrap_or(0)
        })
        .sum()
}

/// Resolves until no file holds a lock or an intent, no local file a decision record, and
/// nothing is unresolved; returns the recovering client and how many decided records the host
/// still holds. Those are finished everywhere and queued on the host to be deleted by its
/// shard's next decision (a data host runs no resolver of its own, and lists no queued record).
async fn recover(dir: &Path, master: &Path, host: &Host, what: &str) -> (ShardedClient, i64) {
    let recovered = coordinator(master, Duration::ZERO).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        recovered.atomic_recovery().resolve().await.unwrap();
        let mut queued = 0;
        let mut left = atomic_rows_in(host.files(dir));
        left.retain(|found, count| {
            let on_host = found.starts_with(&host.folder.display().to_string()) && found.ends_with(" decisions");
            if on_host {
                queued += *count;
            }
            !on_host
        });
        let unresolved = recovered.atomic_recovery().unresolved().await.unwrap();
        if left.is_empty() && unresolved.is_empty() {
            assert_eq!(undecided_on_host(host), 0, "{what}: a pending record is left");
            return (recovered, queued);
        }
        assert!(
            Instant::now() < deadline,
            "{what}: recovery left {left:?}, unresolved {unresolved:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_data_host_killed_at_random_moments_of_concurrent_transfers_loses_nothing() {
    let (rounds, seed) = fuzz_rounds_and_seed("atomic data-host fuzz");
    let mut choices = Choices(seed);
    let dir = temp_dir();
    let mut host = Host::start(dir.path()).await;
    let master = accounts_master(dir.path(), &host).await;
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    for round in 0..rounds {
        let what = format!("round {round} (seed {seed})");
        let sharded = coordinator(&master, Duration::from_secs(2)).await;
        let load = Load::start(
            &sharded,
            seed.wrapping_add(u64::try_from(round).unwrap()),
            &acknowledged,
        );
        // A random moment of the load; the transfers go on while the host is down and after it
        // is back, with the resolver finishing what the kill left beside them.
        tokio::time::sleep(pause(&mut choices, 100, 700)).await;
        host.kill();
        tokio::time::sleep(pause(&mut choices, 0, 200)).await;
        host.restart();
        tokio::time::sleep(pause(&mut choices, 100, 400)).await;
        load.end().await;
        drop(sharded);
        let left = atomic_rows_in(host.files(dir.path())).values().sum::<i64>();
        let (recovered, queued) = recover(dir.path(), &master, &host, &what).await;
        let done = acknowledged.lock().unwrap().clone();
        let on_record = check_books(|shard| recovered.for_route(tenant(shard)), &done, &what).await;
        println!(
            "{what}: {} acknowledged, {on_record} on record, {left} atomic rows left for recovery, \
             {queued} finished records queued on the host",
            done.len()
        );
    }
    assert!(
        !acknowledged.lock().unwrap().is_empty(),
        "no transfer was acknowledged in {rounds} rounds"
    );
}
