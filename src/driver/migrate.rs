//! sqlx migrations on a route-bound connection: [`Migrate`] for [`ShardliteConnection`] and
//! [`MigrateDatabase`] for [`Shardlite`].
//!
//! `sqlx::migrate::Migrator::new(path).await?.run(&pool)` on a pool bound to one route migrates
//! that route's shard, in-process or through a daemon, and records the migrations in the shard's
//! `_sqlx_migrations` exactly as sqlx's SQLite driver does, so `shardlite schema status` and
//! sqlx's own tools read them.
//!
//! # Two processes at once
//!
//! sqlx's SQLite driver takes no lock and relies on each migration's transaction. Here the first
//! statement of each migration's transaction inserts the migration's row: being a write, it
//! takes the shard's write lock before anything is read or run. When another process applied
//! the version meanwhile, the table's primary key refuses the insert, and (the checksum being the
//! same) this process moves on instead of running the migration a second time; the row and the
//! migration's changes commit together or not at all. `lock` and `unlock` therefore need
//! no lock of their own, and a process that crashes leaves no lock behind. A migration marked
//! `-- no-transaction` first claims its version with a row marked `success = false`, which only
//! one process can insert; a second process sees that row as a dirty version (sqlx's
//! [`MigrateError::Dirty`]) instead of running the migration again.

use std::time::{Duration, Instant};

use futures_core::future::BoxFuture;
use sqlx_core::connection::Connection;
use sqlx_core::error::Error;
use sqlx_core::executor::Executor;
use sqlx_core::migrate::{AppliedMigration, Migrate, MigrateDatabase, MigrateError, Migration};
use sqlx_core::query::query;
use sqlx_core::query_as::query_as;
use sqlx_core::query_scalar::query_scalar;
use sqlx_core::sql_str::AssertSqlSafe;
use sqlx_core::transaction::Transaction;

use super::{Shardlite, ShardliteConnectOptions, ShardliteConnection, ShardliteDatabaseError};
use crate::ErrorKind;
use crate::schema::create_migrations_table_sql;

/// How long `apply` keeps retrying to begin while another process holds the shard's write lock
/// (on top of each attempt's busy timeout).
const LOCK_PATIENCE: Duration = Duration::from_secs(60);

fn is_busy(err: &Error) -> bool {
    err.as_database_error()
        .and_then(|db| db.try_downcast_ref::<ShardliteDatabaseError>())
        .is_some_and(|db| db.shardlite_error().kind() == ErrorKind::Busy)
}

/// Waits between attempts to begin while another process holds the shard's write lock.
struct LockWait {
    started: Instant,
    pause: Duration,
}

impl LockWait {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            pause: Duration::from_millis(20),
        }
    }

    /// Waits and answers `true` when `err` says the lock is taken and patience remains.
    async fn again(&mut self, err: &Error) -> bool {
        if !is_busy(err) || self.started.elapsed() >= LOCK_PATIENCE {
            return false;
        }
        tokio::time::sleep(self.pause).await;
        self.pause = (self.pause * 2).min(Duration::from_millis(500));
        true
    }
}

fn elapsed_nanos(elapsed: Duration) -> i64 {
    i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX)
}

/// What a row already recorded for `migration` means: applied by another process (`Ok`), or a
/// problem sqlx has a name for.
fn check_recorded(migration: &Migration, success: bool, checksum: &[u8]) -> Result<(), MigrateError> {
    if !success {
        return Err(MigrateError::Dirty(migration.version));
    }
    if checksum != &*migration.checksum {
        return Err(MigrateError::VersionMismatch(migration.version));
    }
    Ok(())
}

impl Migrate for ShardliteConnection {
    fn create_schema_if_not_exists<'e>(&'e mut self, schema_name: &'e str) -> BoxFuture<'e, Result<(), MigrateError>> {
        Box::pin(async move {
            let name = schema_name.trim_matches(|c| c == '"' || c == '`' || c == '[' || c == ']');
            if name.eq_ignore_ascii_case("main") || name.eq_ignore_ascii_case("temp") {
                return Ok(());
            }
            Err(MigrateError::CreateSchemasNotSupported(format!(
                "cannot create schema {schema_name}: a shard is one SQLite file, and shardlite does not attach others"
            )))
        })
    }

    fn ensure_migrations_table<'e>(&'e mut self, table_name: &'e str) -> BoxFuture<'e, Result<(), MigrateError>> {
        Box::pin(async move {
            // Two processes starting on a fresh shard both create the table: one waits for the
            // other's write lock.
            let create = create_migrations_table_sql(table_name);
            let mut wait = LockWait::new();
            loop {
                match self.execute(AssertSqlSafe(create.as_str())).await {
                    Ok(_) => return Ok(()),
                    Err(err) if wait.again(&err).await => {}
                    Err(err) => return Err(err.into()),
                }
            }
        })
    }

    fn dirty_version<'e>(&'e mut self, table_name: &'e str) -> BoxFuture<'e, Result<Option<i64>, MigrateError>> {
        Box::pin(async move {
            let version: Option<i64> = query_scalar(AssertSqlSafe(format!(
                "SELECT version FROM {table_name} WHERE success = false ORDER BY version LIMIT 1"
            )))
            .fetch_optional(self)
            .await?;
            Ok(version)
        })
    }

    fn list_applied_migrations<'e>(
        &'e mut self,
        table_name: &'e str,
    ) -> BoxFuture<'e, Result<Vec<AppliedMigration>, MigrateError>> {
        Box::pin(async move {
            let rows: Vec<(i64, Vec<u8>)> = query_as(AssertSqlSafe(format!(
                "SELECT version, checksum FROM {table_name} ORDER BY version"
            )))
            .fetch_all(self)
            .await?;
            Ok(rows
                .into_iter()
                .map(|(version, checksum)| AppliedMigration {
                    version,
                    checksum: checksum.into(),
                })
                .collect())
        })
    }

    /// Takes no lock: every migration is applied in a transaction that holds the shard's write
    /// lock and first checks that no other process applied it (see the module docs).
    fn lock(&mut self) -> BoxFuture<'_, Result<(), MigrateError>> {
        Box::pin(async move { Ok(self.ping().await?) })
    }

    fn unlock(&mut self) -> BoxFuture<'_, Result<(), MigrateError>> {
        Box::pin(async move { Ok(()) })
    }

    fn apply<'e>(
        &'e mut self,
        table_name: &'e str,
        migration: &'e Migration,
    ) -> BoxFuture<'e, Result<Duration, MigrateError>> {
        Box::pin(async move {
            let started = Instant::now();
            if migration.no_tx {
                if !claim(self, table_name, migration).await? {
                    return Ok(Duration::ZERO);
                }
                if let Err(err) = self.execute(migration.sql.clone()).await {
                    // sqlx leaves no row for a failed migration; neither does this.
                    let _ = query(AssertSqlSafe(format!(
                        "DELETE FROM {table_name} WHERE version = ?1 AND success = false"
                    )))
                    .bind(migration.version)
                    .execute(&mut *self)
                    .await;
                    return Err(MigrateError::ExecuteMigration(err, migration.version));
                }
            } else {
                let mut wait = LockWait::new();
                let applied = loop {
                    let tx = match self.begin().await {
                        Ok(tx) => tx,
                        Err(err) if wait.again(&err).await => continue,
                        Err(err) => return Err(err.into()),
                    };
                    match apply_in(tx, table_name, migration).await {
                        Ok(applied) => break applied,
                        Err(Attempt::LockTaken(err)) if wait.again(&err).await => {}
                        Err(Attempt::LockTaken(err)) => return Err(err.into()),
                        Err(Attempt::Failed(err)) => return Err(err),
                    }
                };
                if !applied {
                    return Ok(Duration::ZERO);
                }
            }
            let elapsed = started.elapsed();
            // As sqlx: the time is written after the commit, and losing it loses nothing else. It
            // is a write of its own, so it too may find another process holding the lock.
            let record = format!("UPDATE {table_name} SET success = TRUE, execution_time = ?1 WHERE version = ?2");
            let mut wait = LockWait::new();
            loop {
                let recorded = query(AssertSqlSafe(record.as_str()))
                    .bind(elapsed_nanos(elapsed))
                    .bind(migration.version)
                    .execute(&mut *self)
                    .await;
                match recorded {
                    Ok(_) => break,
                    Err(err) if wait.again(&err).await => {}
                    Err(err) => return Err(err.into()),
                }
            }
            Ok(elapsed)
        })
    }

    fn revert<'e>(
        &'e mut self,
        table_name: &'e str,
        migration: &'e Migration,
    ) -> BoxFuture<'e, Result<Duration, MigrateError>> {
        Box::pin(async move {
            let started = Instant::now();
            let mut wait = LockWait::new();
            loop {
                let tx = match self.begin().await {
                    Ok(tx) => tx,
                    Err(err) if wait.again(&err).await => continue,
                    Err(err) => return Err(err.into()),
                };
                match revert_in(tx, table_name, migration).await {
                    Ok(()) => break,
                    Err(Attempt::LockTaken(err)) if wait.again(&err).await => {}
                    Err(Attempt::LockTaken(err)) => return Err(err.into()),
                    Err(Attempt::Failed(err)) => return Err(err),
                }
            }
            Ok(started.elapsed())
        })
    }

    fn skip<'e>(
        &'e mut self,
        table_name: &'e str,
        migration: &'e Migration,
    ) -> BoxFuture<'e, Result<(), MigrateError>> {
        Box::pin(async move {
            query(AssertSqlSafe(format!(
                "INSERT INTO {table_name} (version, description, success, checksum, execution_time) \
                 VALUES (?1, ?2, TRUE, ?3, -1)"
            )))
            .bind(migration.version)
            .bind(&*migration.description)
            .bind(&*migration.checksum)
            .execute(self)
            .await?;
            Ok(())
        })
    }
}

/// Why one attempt at a migration's transaction ended without result.
enum Attempt {
    /// Its first statement found the write lock taken by another process: try again.
    LockTaken(Error),
    /// Anything else.
    Failed(MigrateError),
}

impl<E: Into<MigrateError>> From<E> for Attempt {
    fn from(err: E) -> Self {
        Self::Failed(err.into())
    }
}

/// Records and applies `migration` in `tx`; `false` when another process applied it.
///
/// The first statement inserts the migration's row: being a write, it takes the shard's write
/// lock before anything is read, so what follows cannot be overtaken by another process. If the
/// row exists, the primary key refuses the insert and the row tells who applied what.
async fn apply_in(
    mut tx: Transaction<'_, Shardlite>,
    table_name: &str,
    migration: &Migration,
) -> Result<bool, Attempt> {
    let claimed = query(AssertSqlSafe(format!(
        "INSERT INTO {table_name} (version, description, success, checksum, execution_time) \
         VALUES (?1, ?2, TRUE, ?3, -1)"
    )))
    .bind(migration.version)
    .bind(&*migration.description)
    .bind(&*migration.checksum)
    .execute(&mut *tx)
    .await;
    match claimed {
        Ok(_) => {}
        // Dropping `tx` rolls it back.
        Err(err) if is_busy(&err) => return Err(Attempt::LockTaken(err)),
        Err(err) if err.as_database_error().is_some_and(|db| db.is_unique_violation()) => {
            let found: Option<(bool, Vec<u8>)> = query_as(AssertSqlSafe(format!(
                "SELECT success, checksum FROM {table_name} WHERE version = ?1"
            )))
            .bind(migration.version)
            .fetch_optional(&mut *tx)
            .await?;
            tx.rollback().await?;
            let Some((success, checksum)) = found else {
                return Err(err.into());
            };
            check_recorded(migration, success, &checksum)?;
            return Ok(false);
        }
        Err(err) => return Err(err.into()),
    }
    tx.execute(migration.sql.clone())
        .await
        .map_err(|err| MigrateError::ExecuteMigration(err, migration.version))?;
    tx.commit().await?;
    Ok(true)
}

/// Reverts `migration` in `tx` unless its row is gone already (another process reverted it). The
/// first statement deletes the row, taking the write lock before anything is read.
async fn revert_in(mut tx: Transaction<'_, Shardlite>, table_name: &str, migration: &Migration) -> Result<(), Attempt> {
    let deleted = query(AssertSqlSafe(format!("DELETE FROM {table_name} WHERE version = ?1")))
        .bind(migration.version)
        .execute(&mut *tx)
        .await;
    match deleted {
        Err(err) if is_busy(&err) => return Err(Attempt::LockTaken(err)),
        Err(err) => return Err(err.into()),
        Ok(done) if done.rows_affected() == 0 => {
            tx.rollback().await?;
            return Ok(());
        }
        Ok(_) => {}
    }
    tx.execute(migration.sql.clone())
        .await
        .map_err(|err| MigrateError::ExecuteMigration(err, migration.version))?;
    tx.commit().await?;
    Ok(())
}

/// Claims a `-- no-transaction` migration's version with a `success = false` row. `false` when
/// another process had already applied it.
async fn claim(conn: &mut ShardliteConnection, table_name: &str, migration: &Migration) -> Result<bool, MigrateError> {
    let inserted = query(AssertSqlSafe(format!(
        "INSERT INTO {table_name} (version, description, success, checksum, execution_time) \
         VALUES (?1, ?2, false, ?3, -1)"
    )))
    .bind(migration.version)
    .bind(&*migration.description)
    .bind(&*migration.checksum)
    .execute(&mut *conn)
    .await;
    match inserted {
        Ok(_) => Ok(true),
        Err(err) if err.as_database_error().is_some_and(|db| db.is_unique_violation()) => {
            let found: Option<(bool, Vec<u8>)> = query_as(AssertSqlSafe(format!(
                "SELECT success, checksum FROM {table_name} WHERE version = ?1"
            )))
            .bind(migration.version)
            .fetch_optional(&mut *conn)
            .await?;
            match found {
                Some((success, checksum)) => check_recorded(migration, success, &checksum).map(|()| false),
                None => Err(err.into()),
            }
        }
        Err(err) => Err(err.into()),
    }
}

/// Databases as `sqlx database create|drop` see them. Only a plain `Data Source` file is created
/// or dropped here: a sharded master is seeded with `shardlite seed`, and shards come and go with
/// the map, never through a connection string.
impl MigrateDatabase for Shardlite {
    async fn create_database(url: &str) -> Result<(), Error> {
        let options: ShardliteConnectOptions = url.parse()?;
        let options = options.connection_options();
        match (options.data_source(), options.route()) {
            (Some(path), None) => {
                crate::client::LocalClient::open(path).await?;
                Ok(())
            }
            (Some(path), Some(_)) if std::path::Path::new(path).exists() => Ok(()),
            (Some(path), Some(_)) => Err(Error::Configuration(
                format!("the master catalog {path} does not exist: seed it with `shardlite seed`").into(),
            )),
            (None, _) => Err(Error::Configuration(
                "a daemon's databases are not created through a connection string".into(),
            )),
        }
    }

    async fn database_exists(url: &str) -> Result<bool, Error> {
        let options: ShardliteConnectOptions = url.parse()?;
        match options.connection_options().data_source() {
            Some(path) => Ok(std::path::Path::new(path).exists()),
            // A daemon serves its databases as long as it answers.
            None => Ok(ShardliteConnection::connect_with(&options).await.is_ok()),
        }
    }

    async fn drop_database(url: &str) -> Result<(), Error> {
        let options: ShardliteConnectOptions = url.parse()?;
        let options = options.connection_options();
        match (options.data_source(), options.route()) {
            (Some(path), None) => {
                for suffix in ["", "-wal", "-shm"] {
                    match tokio::fs::remove_file(format!("{path}{suffix}")).await {
                        Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(err.into()),
                        _ => {}
                    }
                }
                Ok(())
            }
            _ => Err(Error::Configuration(
                "shardlite does not drop shards or master catalogs through a connection string: change the map".into(),
            )),
        }
    }
}
