//! How the engine opens each kind of connection to a file: the writer (which creates the file,
//! turns on WAL and, for a data file, its internal tables and fence upkeep), the readers, the
//! connections any thread may borrow, and transaction sessions; each with the guard of its scope.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::config::EngineConfig;
use super::guard::{self, ConnectionKind};
use super::sqlite_error::sql_error;
use crate::error::Result;
use crate::sql::internal_table;

fn configure(conn: &Connection, config: &EngineConfig) -> Result<()> {
    conn.busy_timeout(config.busy_timeout).map_err(sql_error)?;
    conn.set_prepared_statement_cache_capacity(config.statement_cache_capacity);
    super::reshard::fence::register_functions(conn)?;
    conn.execute_batch("PRAGMA foreign_keys = ON;").map_err(sql_error)
}

/// What kind of file is being opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// A data database: gets the internal tables for collections, saved queries and procedures,
    /// and counts against its set of open files.
    Data,
    /// The master catalog: stays open while any handle lives.
    Catalog,
}

/// Creates the internal tables of a data file (collections, saved queries, procedures) if
/// missing.
pub(crate) fn create_internal_tables(conn: &Connection) -> Result<()> {
    conn.execute_batch(concat!(
        "CREATE TABLE IF NOT EXISTS ",
        internal_table!(collections),
        " (
             collection TEXT NOT NULL,
             key TEXT NOT NULL,
             document TEXT NOT NULL,
             PRIMARY KEY (collection, key)
         ) WITHOUT ROWID;
         CREATE TABLE IF NOT EXISTS ",
        internal_table!(saved_queries),
        " (
             name TEXT PRIMARY KEY,
             sql_text TEXT NOT NULL,
             created_utc TEXT NOT NULL,
             updated_utc TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS ",
        internal_table!(procedures),
        " (
             name TEXT PRIMARY KEY,
             definition TEXT NOT NULL,
             created_utc TEXT NOT NULL,
             updated_utc TEXT NOT NULL
         );"
    ))
    .map_err(sql_error)
}

/// The writer's connection; `create` when the file may be created (its first open: a file
/// that disappeared while closed is reported rather than replaced by an empty one).
pub(super) fn open_writer(path: &Path, config: &EngineConfig, role: Role, create: bool) -> Result<Connection> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags).map_err(sql_error)?;
    configure(&conn, config)?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
        .map_err(sql_error)?;
    conn.execute_batch("PRAGMA synchronous = NORMAL;").map_err(sql_error)?;
    if role == Role::Data {
        create_internal_tables(&conn)?;
        // Upkeep that fails (another process holds the write lock, say) is tried again while
        // the file is served; it never keeps the file from opening.
        if let Err(err) = super::reshard::fence_upkeep::tidy(&conn, config.moved_record_grace) {
            tracing::debug!(path = %path.display(), error = %err, "fence upkeep at open will be tried again");
        }
    }
    let mut archived = super::archive::prepare(&conn, path, role == Role::Catalog)?;
    if archived.is_none() {
        // Checkpoints that async callers' writes would run go to the writer's thread.
        super::checkpoint::install(&conn);
    }
    // Worker threads run its jobs, each under the connection's allowances (`guard::arm_for`).
    guard::install_hooks(&conn, ConnectionKind::Shared, config.allow_attach)?;
    // A write that runs on its caller's task under a budget is past stopping once it commits;
    // the archive, when there is one, hears of every commit (one commit hook does both).
    conn.commit_hook(Some(move || {
        guard::committing();
        if let Some(committed) = archived.as_mut() {
            committed();
        }
        false
    }))
    .map_err(sql_error)?;
    Ok(conn)
}

pub(super) fn open_reader(path: &Path, config: &EngineConfig) -> Result<Connection> {
    let conn = open_read_only(path, config)?;
    guard::install_hooks(&conn, ConnectionKind::Shared, config.allow_attach)?;
    Ok(conn)
}

/// A read-only connection with its guard's hooks, for any thread to borrow.
pub(super) fn open_borrowed_reader(path: &Path, config: &EngineConfig, busy_timeout: Duration) -> Result<Connection> {
    let conn = open_read_only(path, config)?;
    conn.busy_timeout(busy_timeout).map_err(sql_error)?;
    guard::install_hooks(&conn, ConnectionKind::Shared, config.allow_attach)?;
    Ok(conn)
}

fn open_read_only(path: &Path, config: &EngineConfig) -> Result<Connection> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(sql_error)?;
    configure(&conn, config)?;
    conn.execute_batch("PRAGMA query_only = ON;").map_err(sql_error)?;
    Ok(conn)
}

pub(super) fn open_session(path: &Path, config: &EngineConfig, scope: ConnectionKind) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql_error)?;
    configure(&conn, config)?;
    conn.execute_batch("PRAGMA synchronous = NORMAL;").map_err(sql_error)?;
    super::archive::attach(&conn, path, false)?;
    guard::install(&conn, scope, config.allow_attach)?;
    Ok(conn)
}
