//! What shardlite's integration-test binaries share: temp dirs, the reference maps and routes,
//! seeded masters and [`Fixture`], a real daemon on `127.0.0.1:0` (`daemon`), a skewed workload
//! for the heat views (`heat`), the CLI runner
//! ([`cli`]), migration fixtures ([`migrate`]), a headless browser (`browser`) and test
//! certificates (`tls`).
//!
//! One module, `tests/support/`, that each test binary and benchmark mounts as
//! `pub mod support` (with `#[path]`), rather than a library crate of its own. A dev-dependency
//! on a crate that depends on shardlite would make the library's own unit-test build wait for the
//! whole library and that crate to compile first; as a module it compiles in each binary, which
//! costs a second or so each, and the two largest compilations run side by side. The module is
//! `pub` in every binary, so its public items are an interface a binary may use in part without a
//! dead-code warning, while unused private code in here is still reported; the cost is that a
//! public helper no test calls any more goes unreported, so it leaves with the last test that
//! needed it. Its daemon, browser, certificate and heat helpers are compiled only with the
//! `server` feature.

#[cfg(feature = "server")]
pub mod browser;
pub mod cli;
#[cfg(feature = "server")]
pub mod daemon;
pub mod etcd;
#[cfg(feature = "server")]
pub mod heat;
pub mod large_catalog;
pub mod many;
pub mod migrate;
pub mod old_sqlite;
pub mod promtool;
pub mod serve;
#[cfg(feature = "server")]
pub mod tls;

use std::path::{Path, PathBuf};

use shardlite::RouteContext;
use shardlite::client::ShardedClient;
use shardlite::map::{BucketRange, ShardDefinition, ShardMap, ShardingOptions};
use tempfile::TempDir;

/// A fresh temp dir for one test.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("shardlite-test")
        .tempdir()
        .expect("temp dir")
}

/// `path` as UTF-8 text (temp paths are).
pub fn path_str(path: &Path) -> String {
    path.to_str().expect("utf-8 temp path").to_owned()
}

/// Keyspace `tenants`, version 1, four buckets, s0 owns [0,2), s1 owns [2,4),
/// pins tenant-a -> s0 (its bucket 3 belongs to s1) and tenant-b -> s1 (bucket 0 belongs to s0).
pub fn tenants_options(dir: &Path) -> ShardingOptions {
    ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 4,
        shards: vec![
            ShardDefinition::local("s0", path_str(&dir.join("s0.db"))),
            ShardDefinition::local("s1", path_str(&dir.join("s1.db"))),
        ],
        bucket_ranges: vec![BucketRange::new(0, 2, "s0"), BucketRange::new(2, 4, "s1")],
        exact_key_pins: [
            ("tenant-a".to_owned(), "s0".to_owned()),
            ("tenant-b".to_owned(), "s1".to_owned()),
        ]
        .into(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    }
}

/// [`tenants_options`] with the writable directory `orders_by_id` of `count` active entries,
/// `SO-{n}` routed by `tenant-{n % routes}`.
pub fn tenants_with_directory(dir: &Path, count: usize, routes: usize) -> ShardingOptions {
    use shardlite::map::{DirectoryDefinition, DirectoryEntry, EntryState, ShardMap};

    let mut options = tenants_options(dir);
    options.directories = vec![DirectoryDefinition::writable("orders_by_id", "tenants")];
    let plain = ShardMap::new(options.clone()).expect("the reference map");
    options.directory_entries = (0..count)
        .map(|n| {
            let route_key = format!("tenant-{}", n % routes);
            DirectoryEntry {
                directory_name: "orders_by_id".into(),
                lookup_key: format!("SO-{n}").into(),
                target_keyspace: "tenants".into(),
                shard_id: plain.resolve("tenants", &route_key).expect("a route").shard_id.into(),
                route_key: route_key.into(),
                map_version: 1,
                state: EntryState::Active,
            }
        })
        .collect();
    options
}

/// Version 2 of [`tenants_options`]: a third shard `s2`, and nothing changes owner.
pub fn with_third_shard(dir: &Path) -> ShardingOptions {
    let mut map = tenants_options(dir);
    map.map_version = 2;
    map.shards
        .push(ShardDefinition::local("s2", path_str(&dir.join("s2.db"))));
    map
}

/// [`tenants_options`] as a validated map.
pub fn tenants_map(dir: &Path) -> ShardMap {
    ShardMap::new(tenants_options(dir)).expect("valid fixture map")
}

/// The seed's four-shard `orders_by_month` map (the examples' own map): its shard files,
/// `shard-0.db` .. `shard-3.db`, are created beside the master it is seeded into.
pub fn orders_options() -> ShardingOptions {
    shardlite::demo::orders_map()
}

/// The paths in `dir`, sorted.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// The binary of example `name`, which `cargo test` builds next to the test binaries.
pub fn example_binary(name: &str) -> PathBuf {
    built_binary("examples", name)
}

/// Binary `name` in `folder` of the target profile dir this test binary runs from
/// (target/<profile>/deps/<test binary> -> target/<profile>/<folder>/<name>).
fn built_binary(folder: &str, name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("target profile dir");
    let binary = profile_dir
        .join(folder)
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        binary.exists(),
        "{} missing: run through `cargo test`, which builds the crate's binaries and examples",
        binary.display()
    );
    binary
}

/// Runs example `name` with `args`, fails the test unless it succeeds, and returns its output.
pub fn run_example(name: &str, args: &[&std::ffi::OsStr]) -> String {
    let output = std::process::Command::new(example_binary(name))
        .args(args)
        .output()
        .expect("run example");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "exit {:?}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Seeds `dir/master.db` with `map` and returns the master's path.
pub async fn seed_master(dir: &Path, map: ShardingOptions) -> PathBuf {
    let master = dir.join("master.db");
    shardlite::catalog::Catalog::open(&master)
        .await
        .expect("open the master")
        .seed(map, false)
        .await
        .expect("seed the master");
    master
}

/// [`tenants_options`] seeded into `dir/master.db`; returns the master's path.
pub async fn seeded_master(dir: &Path) -> PathBuf {
    seed_master(dir, tenants_options(dir)).await
}

/// [`orders_options`] seeded into `dir/master.db`, with `schema` run on every shard; returns the
/// master's path and a client on it.
pub async fn orders_master(dir: &Path, schema: &str) -> (PathBuf, ShardedClient) {
    let master = seed_master(dir, orders_options()).await;
    let sharded = ShardedClient::open(&master).await.expect("open the master");
    for outcome in sharded
        .query()
        .execute_all(schema)
        .await
        .expect("schema on every shard")
    {
        assert!(outcome.error.is_none(), "{outcome:?}");
    }
    (master, sharded)
}

/// A route in keyspace `tenants`, the keyspace of [`tenants_options`].
pub fn route(key: &str) -> RouteContext {
    route_in("tenants", key)
}

/// A route in keyspace `orders_by_month`, the keyspace of [`orders_options`].
pub fn orders_route(key: &str) -> RouteContext {
    route_in(shardlite::demo::ORDERS_KEYSPACE, key)
}

/// A route in `keyspace`; a route the crate refuses fails the test naming both parts.
pub fn route_in(keyspace: &str, key: &str) -> RouteContext {
    match RouteContext::new(keyspace, key) {
        Ok(route) => route,
        Err(err) => panic!("{keyspace}/{key}: {err}"),
    }
}

/// A test's own temp dir and the master catalog in it.
pub struct Fixture {
    /// The temp dir; the master and its shard files live in it.
    pub dir: TempDir,
    /// The master catalog's path.
    pub master: PathBuf,
    keyspace: &'static str,
}

impl Fixture {
    /// [`tenants_options`] seeded into a fresh `master.db`.
    pub async fn new() -> Self {
        let dir = temp_dir();
        let master = seeded_master(dir.path()).await;
        Self {
            dir,
            master,
            keyspace: "tenants",
        }
    }

    /// [`orders_options`] seeded into a fresh `master.db`.
    pub async fn orders() -> Self {
        let dir = temp_dir();
        let master = seed_master(dir.path(), orders_options()).await;
        Self {
            dir,
            master,
            keyspace: shardlite::demo::ORDERS_KEYSPACE,
        }
    }

    /// [`orders_options`] seeded into a fresh `master.db`, with `schema` run on every shard.
    pub async fn orders_with(schema: &str) -> Self {
        let dir = temp_dir();
        let (master, _) = orders_master(dir.path(), schema).await;
        Self {
            dir,
            master,
            keyspace: shardlite::demo::ORDERS_KEYSPACE,
        }
    }

    /// A master path without a file or a map: opened, it is one plain database.
    pub fn plain() -> Self {
        let dir = temp_dir();
        let master = dir.path().join("plain.db");
        Self {
            dir,
            master,
            keyspace: "",
        }
    }

    /// The temp dir as text.
    pub fn dir_text(&self) -> String {
        self.dir.path().to_string_lossy().into_owned()
    }

    /// The file of shard `shard` (the maps here name shard files after their shard).
    pub fn shard_file(&self, shard: &str) -> PathBuf {
        self.dir.path().join(format!("{shard}.db"))
    }

    /// The ADO.NET connection string to the master, bound to route `key` in the map's keyspace.
    pub fn connection_string(&self, key: &str) -> String {
        format!(
            "Data Source={};Shard Keyspace={};Shard Key={key}",
            self.master.display(),
            self.keyspace
        )
    }

    /// The `migrations` folder of [`Fixture::write_migrations`].
    pub fn migrations_dir(&self) -> PathBuf {
        self.dir.path().join("migrations")
    }

    /// Writes `files` (`name`, SQL) into a new [`Fixture::migrations_dir`].
    pub fn write_migrations<N: AsRef<Path>, S: AsRef<str>>(&self, files: impl IntoIterator<Item = (N, S)>) {
        let folder = self.migrations_dir();
        std::fs::create_dir(&folder).expect("migrations folder");
        for (name, sql) in files {
            std::fs::write(folder.join(name), sql.as_ref()).expect("migration file");
        }
    }

    /// Runs SQL on a shard file directly (see [`by_hand`]).
    pub fn by_hand(&self, shard: &str, sql: &str) {
        by_hand(self.dir.path(), shard, sql);
    }
}

#[cfg(feature = "server")]
impl Fixture {
    /// The daemon's state over this master.
    pub async fn state(&self, config: shardlite::server::ServerConfig) -> shardlite::server::ServerState {
        shardlite::server::ServerState::open(&self.master, config)
            .await
            .expect("open the master")
    }

    /// A daemon over this master with the default configuration.
    pub async fn start(&self) -> daemon::Daemon {
        self.start_with(shardlite::server::ServerConfig::default()).await
    }

    /// A daemon over this master with `config`.
    pub async fn start_with(&self, config: shardlite::server::ServerConfig) -> daemon::Daemon {
        daemon::start_daemon_on(&self.master, config).await
    }
}

/// Runs SQL on `dir/<shard>.db` directly, as an operator with the sqlite3 shell would.
pub fn by_hand(dir: &Path, shard: &str, sql: &str) {
    let conn = rusqlite::Connection::open(dir.join(format!("{shard}.db"))).expect("open the shard file");
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .expect("busy timeout");
    conn.execute_batch(sql).expect("SQL by hand");
}

/// `s` with the case of every ASCII letter flipped: maps match keyspaces ignoring case.
pub fn swap_ascii_case(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_uppercase() {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect()
}
