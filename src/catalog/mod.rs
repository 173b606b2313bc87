//! The master catalog: one SQLite file that owns the shard map.
//!
//! It stores the active map, a pending map (written by catalog updates and migrations,
//! activated on restart), catalog history, migration checkpoints and migration history, with
//! a schema-version row so later releases can migrate it. It is never a data shard and never
//! part of fan-out. Reading never creates tables: a file without them simply has "no map".

mod update;

pub use update::{MapDiff, diff, validate};

mod files;
mod new_files;
mod reshard;

pub use files::{check_shard_files, shard_file};

use std::path::{Path, PathBuf};

use crate::data::{CatalogHistoryEntry, Params, SqlResult, Value};
use crate::engine::{Database, EngineConfig, Role};
use crate::error::{Error, Result};
use crate::map::{ShardMap, ShardingOptions};

/// The catalog schema version this release writes.
pub const CATALOG_SCHEMA_VERSION: i64 = 1;

/// Whether the catalog's tables exist.
const HAS_SCHEMA_SQL: &str =
    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'shardlite_catalog_meta'";

/// The active map's version, without reading the map.
const ACTIVE_VERSION_SQL: &str = "SELECT map_version FROM shardlite_active_map WHERE slot = 1";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS shardlite_catalog_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shardlite_active_map (
    slot INTEGER PRIMARY KEY CHECK (slot = 1),
    keyspace TEXT NOT NULL,
    map_version INTEGER NOT NULL,
    map_json TEXT NOT NULL,
    updated_utc TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shardlite_pending_map (
    slot INTEGER PRIMARY KEY CHECK (slot = 1),
    keyspace TEXT NOT NULL,
    map_version INTEGER NOT NULL,
    map_json TEXT NOT NULL,
    written_utc TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shardlite_catalog_history (
    entry_id INTEGER PRIMARY KEY AUTOINCREMENT,
    applied_utc TEXT NOT NULL,
    keyspace TEXT NOT NULL,
    map_version INTEGER NOT NULL,
    operator TEXT,
    comment TEXT,
    metadata_only_ownership_change INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS shardlite_migration_checkpoints (
    migration_id TEXT PRIMARY KEY,
    updated_utc TEXT NOT NULL,
    keyspace TEXT NOT NULL,
    status TEXT NOT NULL,
    payload_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shardlite_migration_history (
    entry_id INTEGER PRIMARY KEY AUTOINCREMENT,
    completed_utc TEXT NOT NULL,
    keyspace TEXT NOT NULL,
    migration_id TEXT NOT NULL,
    payload_json TEXT NOT NULL
);
";

/// A handle to a master catalog file.
#[derive(Debug, Clone)]
pub struct Catalog {
    db: Database,
    path: PathBuf,
}

impl Catalog {
    /// Opens a master catalog file (creating an empty file and its folder if missing).
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let config = EngineConfig {
            readers: 1,
            ..EngineConfig::default()
        };
        let unreadable = |err: Error| match err.sqlite_code() {
            Some(code) if crate::engine::is_storage_failure(code) => Error::Catalog {
                reason: format!(
                    "the master '{}' cannot be read ({err}): restore it from a backup, or seed a new one",
                    path.display()
                ),
            },
            _ => err,
        };
        let db = Database::open_as(&path, "master catalog".to_owned(), config, Role::Catalog)
            .await
            .map_err(unreadable)?;
        let catalog = Self { db, path: path.clone() };
        catalog.check_intact().await.map_err(unreadable)?;
        catalog.check_schema_version().await.map_err(unreadable)?;
        Ok(catalog)
    }

    /// Refuses a master SQLite finds damaged (a truncated or partly overwritten file), which
    /// could otherwise open and serve a map with pages missing. The master is small, so SQLite's
    /// `quick_check` costs little at open.
    async fn check_intact(&self) -> Result<()> {
        let result = self
            .db
            .execute_read_only("SELECT quick_check FROM pragma_quick_check", Params::none())
            .await?;
        let verdict = result
            .rows
            .first()
            .and_then(|row| row.first())
            .and_then(Value::as_str)
            .unwrap_or_default();
        if verdict == "ok" {
            return Ok(());
        }
        Err(Error::Catalog {
            reason: format!(
                "the master '{}' is damaged (SQLite's quick_check says: {verdict}): restore it from a backup",
                self.path.display()
            ),
        })
    }

    /// The catalog file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) async fn has_schema(&self) -> Result<bool> {
        let result = self.db.execute_read_only(HAS_SCHEMA_SQL, Params::none()).await?;
        Ok(first_i64(&result).unwrap_or(0) > 0)
    }

    async fn check_schema_version(&self) -> Result<()> {
        if !self.has_schema().await? {
            return Ok(());
        }
        let result = self
            .db
            .execute_read_only(
                "SELECT value FROM shardlite_catalog_meta WHERE key = 'schema_version'",
                Params::none(),
            )
            .await?;
        let version = result
            .rows
            .first()
            .and_then(|r| r.first())
            .and_then(Value::as_str)
            .and_then(|v| v.parse::<i64>().ok());
        match version {
            Some(v) if v > CATALOG_SCHEMA_VERSION => Err(Error::Catalog {
                reason: format!(
                    "schema version {v} was written by a newer release (this release reads up to {CATALOG_SCHEMA_VERSION})"
                ),
            }),
            Some(_) => Ok(()),
            None => Err(Error::Catalog {
                reason: "the schema version row is missing or unreadable".to_owned(),
            }),
        }
    }

    pub(crate) async fn ensure_schema(&self) -> Result<()> {
        self.db
            .execute(
                &format!(
                    "{SCHEMA} INSERT INTO shardlite_catalog_meta (key, value) VALUES ('schema_version', '{CATALOG_SCHEMA_VERSION}') \
                     ON CONFLICT (key) DO NOTHING;"
                ),
                Params::none(),
            )
            .await?;
        Ok(())
    }

    /// The active map as stored, or `None` when the catalog has none.
    pub async fn active_options(&self) -> Result<Option<ShardingOptions>> {
        self.load_map("shardlite_active_map").await
    }

    /// The pending map (written by a catalog update, not yet active), if any.
    pub async fn pending_options(&self) -> Result<Option<ShardingOptions>> {
        self.load_map("shardlite_pending_map").await
    }

    async fn load_map(&self, table: &'static str) -> Result<Option<ShardingOptions>> {
        if !self.has_schema().await? {
            return Ok(None);
        }
        let result = self
            .db
            .execute_read_only(&format!("SELECT map_json FROM {table} WHERE slot = 1"), Params::none())
            .await?;
        let Some(json) = result.rows.first().and_then(|r| r.first()).and_then(Value::as_str) else {
            return Ok(None);
        };
        ShardingOptions::from_json(json)
            .map(Some)
            .map_err(|err| Error::Catalog {
                reason: format!("the stored map in {table} does not parse: {err}"),
            })
    }

    /// The active map, validated. [`Error::NoMap`] when the catalog has none.
    pub async fn active_map(&self) -> Result<ShardMap> {
        let options = self.active_options().await?.ok_or(Error::NoMap)?;
        Ok(ShardMap::new(options)?)
    }

    /// Validates `options`, creates the folders and files of its local shards, and stores
    /// it as the active map.
    ///
    /// A relative `dataSource` is created in the master's folder. A map whose shard file is this
    /// master, or whose shards share a file, is refused before anything is written (see
    /// [`check_shard_files`]).
    ///
    /// Seeding the same map again is a no-op. Replacing a different active map requires
    /// `replace`, because it reroutes keys away from their data.
    pub async fn seed(&self, options: ShardingOptions, replace: bool) -> Result<ShardMap> {
        let map = ShardMap::new(options.clone())?;
        check_shard_files(&self.path, &map).await?;
        if let Some(existing) = self.active_options().await?
            && existing != options
            && !replace
        {
            return Err(Error::Catalog {
                reason: format!(
                    "it already holds an active map (keyspace '{}', version {}); replacing it reroutes keys, so ask for it explicitly",
                    existing.keyspace, existing.map_version
                ),
            });
        }
        new_files::create_shard_files(&self.path, &map).await?;
        self.ensure_schema().await?;
        let json = options.to_json();
        let now = crate::engine::store::now_utc();
        let version = i64::try_from(map.version()).unwrap_or(i64::MAX);
        self.db
            .execute_atomic(
                "INSERT INTO shardlite_active_map (slot, keyspace, map_version, map_json, updated_utc)
                     VALUES (1, :keyspace, :version, :json, :now)
                     ON CONFLICT (slot) DO UPDATE SET keyspace = excluded.keyspace,
                         map_version = excluded.map_version, map_json = excluded.map_json,
                         updated_utc = excluded.updated_utc;
                 DELETE FROM shardlite_pending_map;
                 INSERT INTO shardlite_catalog_history (applied_utc, keyspace, map_version, operator, comment)
                     VALUES (:now, :keyspace, :version, 'seed', 'seeded the active map');",
                Params::named([
                    ("keyspace", Value::from(map.keyspace())),
                    ("version", Value::Integer(version)),
                    ("json", Value::Text(json)),
                    ("now", Value::Text(now)),
                ]),
            )
            .await?;
        Ok(map)
    }

    /// Catalog history, newest first.
    pub async fn history(&self) -> Result<Vec<CatalogHistoryEntry>> {
        if !self.has_schema().await? {
            return Ok(Vec::new());
        }
        let result = self
            .db
            .execute_read_only(
                "SELECT applied_utc, keyspace, map_version, operator, comment, metadata_only_ownership_change \
                 FROM shardlite_catalog_history ORDER BY entry_id DESC",
                Params::none(),
            )
            .await?;
        Ok(result
            .rows
            .into_iter()
            .map(|row| CatalogHistoryEntry {
                applied_utc: text(&row, 0).unwrap_or_default(),
                keyspace: text(&row, 1).unwrap_or_default(),
                map_version: row
                    .get(2)
                    .and_then(Value::as_i64)
                    .and_then(|v| u64::try_from(v).ok())
                    .unwrap_or(0),
                operator: text(&row, 3),
                comment: text(&row, 4),
                metadata_only_ownership_change: row.get(5).and_then(Value::as_i64).unwrap_or(0) != 0,
            })
            .collect())
    }
}

fn first_i64(result: &SqlResult) -> Option<i64> {
    result.rows.first()?.first()?.as_i64()
}

fn text(row: &[Value], index: usize) -> Option<String> {
    row.get(index).and_then(Value::as_str).map(str::to_owned)
}
