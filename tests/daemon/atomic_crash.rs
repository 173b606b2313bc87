//! Crash safety of atomic transactions with a real `shardlite serve` process: concurrent
//! transfers between accounts spread over 8 shards run over REST while the daemon (the
//! coordinator) is killed with SIGKILL, (a) at each named step of the commit protocol, which
//! the daemon reaches and stops at through its `SHARDLITE_ATOMIC_STOP_AT` test hook, and (b) at
//! random moments, for `SHARDLITE_ATOMIC_FUZZ_ROUNDS` rounds (default 2). After each kill the
//! daemon restarts on the same files and its resolver finishes what the dead one left; then the
//! sum of balances is unchanged, every account holds exactly what the transfers on record moved,
//! every acknowledged transfer is on record, and no lock, intent or decision is left.
//!
//! The accounts, transfers and checks are shared with the data-host fuzzer of
//! [`atomic_crash_host`](crate::atomic_crash_host).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use shardlite::client::{Params, ShardedClient, SqlData, SqlResult, Value};
use shardlite::transport::RemoteOptions;
use shardlite::transport::http::HttpClient;

use crate::support::many::pinned_tenants;
use crate::support::serve::ServeProcess;
use crate::support::{path_str, route, seed_master, temp_dir};

pub(crate) const SHARDS: usize = 8;
/// Two accounts per shard: account `a` lives on shard `a % SHARDS` (tenant `t{a % SHARDS}`).
pub(crate) const ACCOUNTS: usize = 2 * SHARDS;
pub(crate) const START: i64 = 1_000;
pub(crate) const WRITERS: usize = 4;

/// A transfer as the ledger on its source shard records it: `amount` from `from` to each of `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Transfer {
    id: String,
    from: usize,
    to: Vec<usize>,
    amount: i64,
}

/// A small xorshift generator: the test needs varied, reproducible choices, not good ones.
pub(crate) struct Choices(pub(crate) u64);

impl Choices {
    pub(crate) fn next(&mut self, below: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % u64::try_from(below).unwrap()).unwrap()
    }

    /// A transfer from one account to accounts on one or two other shards (always two when
    /// `three_shards`).
    pub(crate) fn transfer(&mut self, three_shards: bool) -> Transfer {
        let from = self.next(ACCOUNTS);
        let mut shards = vec![from % SHARDS];
        let mut to = Vec::new();
        let count = if three_shards { 2 } else { 1 + self.next(2) };
        while to.len() < count {
            let account = self.next(ACCOUNTS);
            if !shards.contains(&(account % SHARDS)) {
                shards.push(account % SHARDS);
                to.push(account);
            }
        }
        Transfer {
            id: uuid::Uuid::new_v4().simple().to_string(),
            from,
            to,
            amount: i64::try_from(1 + self.next(9)).unwrap(),
        }
    }
}

pub(crate) fn seed() -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    u64::try_from(nanos % u128::from(u64::MAX)).unwrap() | 1
}

pub(crate) fn tenant(account: usize) -> shardlite::RouteContext {
    route(&format!("t{}", account % SHARDS))
}

/// The accounts and an empty ledger on every shard; returns the master.
async fn accounts_master(dir: &Path) -> PathBuf {
    let master = seed_master(
        dir,
        pinned_tenants(SHARDS, |i| dir.join(format!("s{i}.db")).display().to_string()),
    )
    .await;
    open_accounts(&ShardedClient::open(&master).await.unwrap()).await;
    master
}

/// Creates the accounts (each at [`START`]) and an empty ledger on every shard of the map.
pub(crate) async fn open_accounts(sharded: &ShardedClient) {
    for shard in 0..SHARDS {
        let mut sql = "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL);
            CREATE TABLE ledger (id TEXT PRIMARY KEY, source INTEGER NOT NULL, targets TEXT NOT NULL, amount INTEGER NOT NULL);"
            .to_owned();
        for account in (shard..ACCOUNTS).step_by(SHARDS) {
            sql.push_str(&format!("INSERT INTO accounts VALUES ({account}, {START});"));
        }
        sharded
            .for_route(tenant(shard))
            .execute_sql(&sql, Params::none())
            .await
            .unwrap();
    }
}

fn start(master: &Path, stop_at: Option<&str>) -> ServeProcess {
    let master = path_str(master);
    let args = [
        "--master",
        master.as_str(),
        "--listen",
        "127.0.0.1:0",
        "--atomic-abandon-age",
        "1",
    ];
    match stop_at {
        Some(step) => ServeProcess::start_with_env(&args, &[("SHARDLITE_ATOMIC_STOP_AT", step)]),
        None => ServeProcess::start(&args),
    }
}

/// The statements of `transfer` with the account each runs on, its shards in ascending order (so
/// concurrent transfers wait for each other's shard locks rather than deadlock); the source's
/// also writes the transfer to its shard's ledger.
pub(crate) fn transfer_steps(transfer: &Transfer) -> Vec<(usize, String)> {
    let mut steps: Vec<(usize, String)> = vec![(
        transfer.from,
        format!(
            "UPDATE accounts SET balance = balance - {} WHERE id = {}; \
             INSERT INTO ledger VALUES ('{}', {}, '{}', {})",
            transfer.amount * i64::try_from(transfer.to.len()).unwrap(),
            transfer.from,
            transfer.id,
            transfer.from,
            transfer.to.iter().map(usize::to_string).collect::<Vec<_>>().join(","),
            transfer.amount
        ),
    )];
    for to in &transfer.to {
        steps.push((
            *to,
            format!(
                "UPDATE accounts SET balance = balance + {} WHERE id = {to}",
                transfer.amount
            ),
        ));
    }
    steps.sort_by_key(|(account, _)| account % SHARDS);
    steps
}

/// Runs `transfer` as one atomic transaction through the daemon. `Ok` once acknowledged.
async fn run_transfer(client: &HttpClient, transfer: &Transfer) -> shardlite::Result<()> {
    let mut atomic = client.begin_atomic().await?;
    for (account, sql) in &transfer_steps(transfer) {
        atomic.execute(&tenant(*account), sql, Params::none()).await?;
    }
    atomic.commit().await
}

/// Transfers from [`WRITERS`] concurrent tasks until `stop`; the acknowledged ones are recorded.
struct Load {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(base_url: &str, seed: u64, three_shards: bool, acknowledged: &Arc<Mutex<Vec<Transfer>>>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..WRITERS)
            .map(|writer| {
                let client = HttpClient::new(RemoteOptions::new(base_url)).unwrap();
                let (stop, acknowledged) = (Arc::clone(&stop), Arc::clone(acknowledged));
                let mut choices = Choices(seed.wrapping_add(u64::try_from(writer).unwrap() * 7919) | 1);
                tokio::spawn(async move {
                    while !stop.load(Ordering::SeqCst) {
                        let transfer = choices.transfer(three_shards);
                        if run_transfer(&client, &transfer).await.is_ok() {
                            acknowledged.lock().unwrap().push(transfer);
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

fn integer(value: &Value) -> i64 {
    match value {
        Value::Integer(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

fn text(value: &Value) -> String {
    match value {
        Value::Text(t) => t.to_string(),
        other => panic!("not text: {other:?}"),
    }
}

async fn query<C: SqlData>(client: &C, sql: &str) -> SqlResult {
    client.execute_sql(sql, Params::none()).await.unwrap()
}

/// Rows of the atomic tables still in the shard files `s{i}.db` of `dir`.
fn atomic_rows(dir: &Path) -> BTreeMap<String, i64> {
    atomic_rows_in((0..SHARDS).map(|shard| dir.join(format!("s{shard}.db"))))
}

/// Rows of the atomic tables (locks, intents, decision records) still in `files`, read with
/// plain SQLite, by file and table.
pub(crate) fn atomic_rows_in(files: impl IntoIterator<Item = PathBuf>) -> BTreeMap<String, i64> {
    let mut left = BTreeMap::new();
    for file in files {
        let db = rusqlite::Connection::open_with_flags(&file, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        for table in ["locks", "intents", "decisions"] {
            let sql = format!("SELECT count(*) FROM _shardlite_atomic_{table}");
            // A file that never took part in an atomic transaction has no such table.
            if let Ok(count) = db.query_row(&sql, [], |row| row.get::<_, i64>(0))
                && count > 0
            {
                left.insert(format!("{} {table}", file.display()), count);
            }
        }
    }
    left
}

/// Reads every shard's accounts and ledger through `reader` (a client of the shard of account
/// `i`) and checks the books: the total is unchanged, every account holds what the transfers on
/// record moved, and every acknowledged transfer is on record. Returns how many are on record.
pub(crate) async fn check_books<C: SqlData>(
    reader: impl Fn(usize) -> C,
    acknowledged: &[Transfer],
    what: &str,
) -> usize {
    let mut balances = BTreeMap::new();
    let mut ledger = Vec::new();
    for shard in 0..SHARDS {
        let client = reader(shard);
        for row in query(&client, "SELECT id, balance FROM accounts").await.rows {
            balances.insert(usize::try_from(integer(&row[0])).unwrap(), integer(&row[1]));
        }
        for row in query(&client, "SELECT id, source, targets, amount FROM ledger")
            .await
            .rows
        {
            ledger.push(Transfer {
                id: text(&row[0]),
                from: usize::try_from(integer(&row[1])).unwrap(),
                to: text(&row[2]).split(',').map(|t| t.parse().unwrap()).collect(),
                amount: integer(&row[3]),
            });
        }
    }
    let total = START * i64::try_from(ACCOUNTS).unwrap();
    assert_eq!(
        balances.values().sum::<i64>(),
        total,
        "{what}: the total changed: {balances:?}"
    );
    let mut expected: BTreeMap<usize, i64> = (0..ACCOUNTS).map(|a| (a, START)).collect();
    for t in &ledger {
        *expected.get_mut(&t.from).unwrap() -= t.amount * i64::try_from(t.to.len()).unwrap();
        for to in &t.to {
            *expected.get_mut(to).unwrap() += t.amount;
        }
    }
    assert_eq!(
        balances, expected,
        "{what}: balances differ from the transfers on record"
    );
    let on_record: HashSet<&str> = ledger.iter().map(|t| t.id.as_str()).collect();
    for t in acknowledged {
        assert!(on_record.contains(t.id.as_str()), "{what}: acknowledged {t:?} is lost");
    }
    ledger.len()
}

/// Restarts the daemon on the files, lets its resolver finish what the killed one left, and
/// checks the invariants; returns how many transfers are on record.
async fn recover_and_check(dir: &Path, master: &Path, acknowledged: &[Transfer], what: &str) -> usize {
    let daemon = start(master, None);
    let client = HttpClient::new(RemoteOptions::new(&daemon.base_url)).unwrap();
    // Reading every shard opens its file, which is when the daemon's recovery first sees it.
    for shard in 0..SHARDS {
        query(&client.with_route(tenant(shard)), "SELECT count(*) FROM accounts").await;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = atomic_rows(dir);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: recovery left {left:?}\n{}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let on_record = check_books(|shard| client.with_route(tenant(shard)), acknowledged, what).await;
    drop(daemon);
    on_record
}

/// Drives transfers on a daemon started with `stop_at` until it stops there, kills it, and
/// checks recovery.
async fn killed_at(dir: &Path, master: &Path, stop_at: &str, acknowledged: &Arc<Mutex<Vec<Transfer>>>) {
    let daemon = start(master, Some(stop_at));
    let load = Load::start(&daemon.base_url, seed(), true, acknowledged);
    let marker = format!("shardlite: atomic stop at {stop_at}");
    tokio::task::block_in_place(|| daemon.wait_for_log(&marker));
    drop(daemon); // SIGKILL
    load.end().await;
    let left = atomic_rows(dir);
    assert!(!left.is_empty(), "{stop_at}: the killed daemon left nothing to recover");
    let done = acknowledged.lock().unwrap().clone();
    recover_and_check(dir, master, &done, stop_at).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_daemon_killed_at_every_step_of_atomic_commits_loses_nothing_and_leaves_no_lock() {
    let dir = temp_dir();
    let master = accounts_master(dir.path()).await;
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    for step in [
        "after-decision-created",
        "after-prepares-before-record:1",
        "after-prepares-before-record:2",
        "after-prepares:1",
        "after-prepares:2",
        "after-decision",
        "after-commits:1",
        "after-commits:2",
        "after-commits:3",
    ] {
        killed_at(dir.path(), &master, step, &acknowledged).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_daemon_killed_at_random_moments_of_concurrent_transfers_loses_nothing() {
    let (rounds, seed) = fuzz_rounds_and_seed("atomic fuzz");
    let mut choices = Choices(seed);
    let dir = temp_dir();
    let master = accounts_master(dir.path()).await;
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    for round in 0..rounds {
        let daemon = start(&master, None);
        let load = Load::start(
            &daemon.base_url,
            seed.wrapping_add(u64::try_from(round).unwrap()),
            false,
            &acknowledged,
        );
        // A random moment of the load: what is being tested is a kill at any time.
        tokio::time::sleep(Duration::from_millis(u64::try_from(50 + choices.next(750)).unwrap())).await;
        drop(daemon); // SIGKILL
        load.end().await;
        let done = acknowledged.lock().unwrap().clone();
        let what = format!("round {round} (seed {seed})");
        recover_and_check(dir.path(), &master, &done, &what).await;
    }
    assert!(
        !acknowledged.lock().unwrap().is_empty(),
        "no transfer was acknowledged in {rounds} rounds"
    );
}

/// The rounds a fuzzer runs (`SHARDLITE_ATOMIC_FUZZ_ROUNDS`, 2 by default) and its seed
/// (`SHARDLITE_ATOMIC_FUZZ_SEED`, to replay a run; the clock's otherwise), printed as `what`.
pub(crate) fn fuzz_rounds_and_seed(what: &str) -> (usize, u64) {
    let rounds: usize = std::env::var("SHARDLITE_ATOMIC_FUZZ_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2);
    let seed = std::env::var("SHARDLITE_ATOMIC_FUZZ_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(seed);
    println!("{what}: {rounds} rounds, SHARDLITE_ATOMIC_FUZZ_SEED={seed}");
    (rounds, seed)
}
