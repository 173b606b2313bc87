//! Applying a migration set to one database through its [`DataClient`].
//!
//! # Two runs at once
//!
//! Each migration runs in its own transaction, whose first statement inserts the migration's
//! row in `_sqlx_migrations`: being a write, it takes the database's write lock before anything
//! is read. If the row exists already (the table's primary key refuses the insert), another run
//! applied the migration and this one moves on; otherwise it runs the SQL, and the SQL and the
//! row commit together. So when two runs (two processes, two daemons, or a daemon and an
//! application on the same file) migrate one database at once, each migration is applied exactly
//! once. A run that finds the write lock taken waits for it (the busy timeout, then retries for up
//! to a minute) rather than fail at once.
//!
//! A migration whose SQL starts with `-- no-transaction` cannot be protected that way. It first
//! claims its version with a row marked `success = false` (the table's primary key lets only one
//! run claim it), then runs, then marks the row successful. If it fails, the claim is removed, as
//! sqlx leaves no row for a failed migration. While it runs, other runs see the claim and report
//! the version as dirty instead of running it a second time.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::inspect::{AppliedMigration, applied_migrations};
use crate::data::{DataClient, Params, SchemaMigrationState, SchemaScript, SchemaStep, ShardSchemaOutcome, Value};
use crate::error::{Error, ErrorKind, Result};
use crate::sql;

/// How long a run keeps retrying to begin a migration while another holds the write lock (on top
/// of each attempt's own busy timeout).
const LOCK_PATIENCE: Duration = Duration::from_secs(60);

/// Checks a migration set before anything runs anywhere, and sorts it by version: versions must
/// be unique, and no migration may hold a statement every database would refuse (transaction
/// control, `ATTACH`, an unsafe pragma); the error names the migration.
pub fn check_migrations(migrations: &[SchemaScript]) -> Result<Vec<SchemaScript>> {
    let mut sorted = migrations.to_vec();
    sorted.sort_by_key(|m| m.version);
    for pair in sorted.windows(2) {
        if pair[0].version == pair[1].version {
            return Err(Error::invalid_argument(
                "migrations",
                format!("migration version {} appears twice", pair[0].version),
            ));
        }
    }
    for m in &sorted {
        if m.sql.trim().is_empty() {
            return Err(Error::invalid_argument(
                "migrations",
                format!("migration {} ({}) has no SQL", m.version, m.description),
            ));
        }
        sql::check_script(&m.sql).map_err(|err| {
            Error::invalid_argument(
                "migrations",
                format!("migration {} ({}): {err}", m.version, m.description),
            )
        })?;
    }
    Ok(sorted)
}

/// Applies `migrations` (sorted by version, as [`check_migrations`] returns them) to the database
/// behind `client`, recording each in `_sqlx_migrations` as sqlx does. With `dry_run`, reports what
/// would run and changes nothing.
///
/// Never fails as a whole: a failure is an outcome in state
/// [`Failed`](SchemaMigrationState::Failed) with the error, the failed version, what this run
/// applied before it, and what is still pending. Like sqlx's `Migrator`, it refuses to run on a
/// database with a dirty version, with an applied version the set does not hold, or with an
/// applied migration whose checksum changed.
pub async fn migrate_database(
    client: &dyn DataClient,
    shard_id: &str,
    migrations: &[SchemaScript],
    dry_run: bool,
) -> ShardSchemaOutcome {
    let mut outcome = untouched(shard_id);
    let applied = match applied_migrations(client)
        .await
        .and_then(|applied| check_applied(&applied, migrations))
    {
        Ok(applied) => applied,
        Err(err) => return failed(outcome, None, &err),
    };
    outcome.version_before = applied.keys().next_back().copied();
    outcome.version_after = outcome.version_before;
    let pending: Vec<&SchemaScript> = migrations
        .iter()
        .filter(|m| !applied.contains_key(&m.version))
        .collect();
    outcome.pending = pending.iter().map(|m| step(m, None)).collect();
    if pending.is_empty() {
        return outcome;
    }
    if dry_run {
        outcome.state = SchemaMigrationState::WouldMigrate;
        return outcome;
    }
    if let Err(err) = patiently(|| client.execute_sql(super::CREATE_MIGRATIONS_TABLE, Params::none())).await {
        return failed(outcome, None, &err);
    }
    for migration in pending {
        let result = if migration.no_transaction() {
            apply_without_transaction(client, migration).await
        } else {
            apply_in_transaction(client, migration).await
        };
        match result {
            Ok(ran) => {
                outcome.pending.remove(0);
                if let Some(elapsed) = ran {
                    outcome.applied.push(step(migration, Some(elapsed)));
                }
                outcome.version_after = outcome.version_after.max(Some(migration.version));
            }
            Err(err) => return failed(outcome, Some(migration.version), &err),
        }
    }
    // Another run may have applied everything this one meant to.
    outcome.state = if outcome.applied.is_empty() {
        SchemaMigrationState::UpToDate
    } else {
        SchemaMigrationState::Migrated
    };
    outcome
}

/// The outcome of a shard that could not be reached at all.
pub fn unreachable_shard(shard_id: &str, err: &Error) -> ShardSchemaOutcome {
    failed(untouched(shard_id), None, err)
}

fn untouched(shard_id: &str) -> ShardSchemaOutcome {
    ShardSchemaOutcome {
        shard_id: shard_id.to_owned(),
        state: SchemaMigrationState::UpToDate,
        version_before: None,
        version_after: None,
        applied: Vec::new(),
        pending: Vec::new(),
        failed_version: None,
        error: None,
        error_code: None,
    }
}

fn step(migration: &SchemaScript, elapsed: Option<Duration>) -> SchemaStep {
    SchemaStep {
        version: migration.version,
        description: migration.description.clone(),
        elapsed_ms: elapsed.map(|e| e.as_secs_f64() * 1000.0),
    }
}

fn failed(mut outcome: ShardSchemaOutcome, version: Option<i64>, err: &Error) -> ShardSchemaOutcome {
    outcome.state = SchemaMigrationState::Failed;
    outcome.failed_version = version;
    outcome.error = Some(err.to_string());
    outcome.error_code = Some(err.kind().code().to_owned());
    outcome
}

/// The applied migrations by version, after the checks sqlx's `Migrator` makes.
fn check_applied(applied: &[AppliedMigration], migrations: &[SchemaScript]) -> Result<BTreeMap<i64, AppliedMigration>> {
    if let Some(dirty) = applied.iter().find(|m| !m.success) {
        return Err(Error::SchemaMigrationDirty { version: dirty.version });
    }
    let known: BTreeMap<i64, &SchemaScript> = migrations.iter().map(|m| (m.version, m)).collect();
    for m in applied {
        match known.get(&m.version) {
            None => return Err(Error::SchemaMigrationMissing { version: m.version }),
            Some(script) if script.checksum() != m.checksum => {
                return Err(Error::SchemaMigrationChanged { version: m.version });
            }
            Some(_) => {}
        }
    }
    Ok(applied.iter().map(|m| (m.version, m.clone())).collect())
}

/// What a row found for `migration`'s version means: applied already by another run (`Ok`), or a
/// problem.
fn already_recorded(migration: &SchemaScript, success: bool, checksum: &[u8]) -> Result<()> {
    if !success {
        return Err(Error::SchemaMigrationDirty {
            version: migration.version,
        });
    }
    if checksum != migration.checksum() {
        return Err(Error::SchemaMigrationChanged {
            version: migration.version,
        });
    }
    Ok(())
}

fn row_params(migration: &SchemaScript, success: bool, execution_time: i64) -> Params {
    Params::Positional(vec![
        Value::Integer(migration.version),
        Value::Text(migration.description.clone()),
        Value::Integer(i64::from(success)),
        Value::Blob(migration.checksum()),
        Value::Integer(execution_time),
    ])
}

const INSERT_ROW: &str = "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                          VALUES (?1, ?2, ?3, ?4, ?5)";
const SELECT_ROW: &str = "SELECT success, checksum FROM _sqlx_migrations WHERE version = ?1";

fn nanos(elapsed: Duration) -> i64 {
    i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX)
}

/// The recorded `(success, checksum)` of a version, from a `SELECT_ROW` result.
fn recorded(result: &crate::data::SqlResult) -> Option<(bool, Vec<u8>)> {
    let row = result.rows.first()?;
    let success = row.first().and_then(Value::as_i64).is_some_and(|v| v != 0);
    let checksum = row.get(1).and_then(Value::as_blob).unwrap_or_default().to_vec();
    Some((success, checksum))
}

/// Runs `attempt` again while it fails because another run holds the write lock (each try
/// already waited the busy timeout), for up to [`LOCK_PATIENCE`].
async fn patiently<T, F, Fut>(mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let started = Instant::now();
    let mut pause = Duration::from_millis(20);
    loop {
        match attempt().await {
            Err(err) if err.kind() == ErrorKind::Busy && started.elapsed() < LOCK_PATIENCE => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
            other => return other,
        }
    }
}

/// Runs one migration and records it, in one transaction; `None` when another run recorded it
/// first.
///
/// The transaction's first statement inserts the migration's row: being a write, it takes the
/// database's write lock before anything is read, so nothing the transaction sees can change
/// under it. When the row exists already, the insert fails on the primary key, and the row says
/// whether another run applied this very migration.
async fn apply_in_transaction(client: &dyn DataClient, migration: &SchemaScript) -> Result<Option<Duration>> {
    patiently(|| async {
        let id = client.begin_transaction().await?.transaction_id;
        let outcome = record_and_run(client, &id, migration).await;
        match outcome {
            Ok(Some(elapsed)) => {
                client.commit_transaction(&id).await?;
                Ok(Some(elapsed))
            }
            other => {
                // Nothing of this migration may stay; a row found needs no commit either.
                let _ = client.rollback_transaction(&id).await;
                other
            }
        }
    })
    .await
}

/// The statements of [`apply_in_transaction`], in transaction `id`.
async fn record_and_run(client: &dyn DataClient, id: &str, migration: &SchemaScript) -> Result<Option<Duration>> {
    if let Err(err) = client
        .execute_in_transaction(id, INSERT_ROW, row_params(migration, true, -1))
        .await
    {
        if err.kind() != ErrorKind::Constraint {
            return Err(err);
        }
        let version = Params::Positional(vec![Value::Integer(migration.version)]);
        let found = client.execute_in_transaction(id, SELECT_ROW, version).await?;
        let Some((success, checksum)) = recorded(&found) else {
            return Err(err);
        };
        already_recorded(migration, success, &checksum)?;
        return Ok(None);
    }
    let started = Instant::now();
    client
        .execute_in_transaction(id, &migration.sql, Params::none())
        .await?;
    let elapsed = started.elapsed();
    client
        .execute_in_transaction(
            id,
            "UPDATE _sqlx_migrations SET execution_time = ?2 WHERE version = ?1",
            Params::Positional(vec![Value::Integer(migration.version), Value::Integer(nanos(elapsed))]),
        )
        .await?;
    Ok(Some(elapsed))
}

/// Claims the version, runs the migration outside a transaction, then marks it successful.
async fn apply_without_transaction(client: &dyn DataClient, migration: &SchemaScript) -> Result<Option<Duration>> {
    let version = || Params::Positional(vec![Value::Integer(migration.version)]);
    if let Err(err) = patiently(|| client.execute_sql(INSERT_ROW, row_params(migration, false, -1))).await {
        if err.kind() != ErrorKind::Constraint {
            return Err(err);
        }
        let found = client.execute_sql(SELECT_ROW, version()).await?;
        return match recorded(&found) {
            Some((success, checksum)) => already_recorded(migration, success, &checksum).map(|()| None),
            None => Err(err),
        };
    }
    let started = Instant::now();
    if let Err(err) = client.execute_sql(&migration.sql, Params::none()).await {
        let _ = client
            .execute_sql(
                "DELETE FROM _sqlx_migrations WHERE version = ?1 AND success = FALSE",
                version(),
            )
            .await;
        return Err(err);
    }
    let elapsed = started.elapsed();
    client
        .execute_sql(
            "UPDATE _sqlx_migrations SET success = TRUE, execution_time = ?2 WHERE version = ?1",
            Params::Positional(vec![Value::Integer(migration.version), Value::Integer(nanos(elapsed))]),
        )
        .await?;
    Ok(Some(elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_with_a_repeated_version_or_forbidden_sql_is_refused() {
        let one = SchemaScript::new(1, "a", "CREATE TABLE a (id INTEGER)");
        let err = check_migrations(&[one.clone(), SchemaScript::new(1, "b", "SELECT 1")]).unwrap_err();
        assert!(err.to_string().contains("version 1 appears twice"), "{err}");
        let err = check_migrations(&[SchemaScript::new(2, "attach", "ATTACH 'x.db' AS x")]).unwrap_err();
        assert!(err.to_string().contains("migration 2 (attach)"), "{err}");
        let err = check_migrations(&[SchemaScript::new(3, "blank", "  ")]).unwrap_err();
        assert!(err.to_string().contains("no SQL"), "{err}");
        let sorted = check_migrations(&[SchemaScript::new(5, "e", "SELECT 5"), one]).unwrap();
        assert_eq!(sorted.iter().map(|m| m.version).collect::<Vec<_>>(), [1, 5]);
    }

    #[test]
    fn applied_rows_are_checked_as_sqlx_checks_them() {
        let set = [SchemaScript::new(1, "a", "SELECT 1")];
        let row = |version, success, checksum: Vec<u8>| AppliedMigration {
            version,
            success,
            checksum,
        };
        assert!(check_applied(&[row(1, true, set[0].checksum())], &set).is_ok());
        assert!(matches!(
            check_applied(&[row(1, true, vec![1, 2])], &set),
            Err(Error::SchemaMigrationChanged { version: 1 })
        ));
        assert!(matches!(
            check_applied(&[row(7, true, vec![])], &set),
            Err(Error::SchemaMigrationMissing { version: 7 })
        ));
        assert!(matches!(
            check_applied(&[row(1, false, set[0].checksum())], &set),
            Err(Error::SchemaMigrationDirty { version: 1 })
        ));
    }
}
