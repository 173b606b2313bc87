//! SQLite's errors in the crate's terms, in one file: every rusqlite error the engine sees becomes
//! an [`Error`] here, keeping SQLite's extended result code and its symbolic name; a fence
//! trigger's abort becomes [`Error::RouteFenced`]. Here too are the readings of those codes the
//! engine acts on: a failure of the file itself (an I/O error, a corrupt, full, moved or
//! read-only file) becomes [`Error::ShardStorage`] naming the shard (or, for the master catalog,
//! [`Error::Catalog`]); a busy write lock at `BEGIN` becomes [`Error::Busy`]; an interrupt past
//! a merge's deadline becomes [`Error::StatementTimeout`].

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::{Error, SqlFailure};

/// The start of the message a fence trigger raises; the fields that follow are separated by
/// [`FENCE_FIELD_SEPARATOR`]: moved (`0`/`1`), migration id, destination, table, route value.
pub(crate) const FENCE_MESSAGE_PREFIX: &str = "shardlite route_fenced";

/// The separator between the fields of a fence message (ASCII unit separator, `char(31)`).
pub(crate) const FENCE_FIELD_SEPARATOR: char = '\u{1f}';

/// Converts a rusqlite error into the crate's error, keeping SQLite's codes.
pub(crate) fn sql_error(err: rusqlite::Error) -> Error {
    match err {
        rusqlite::Error::SqliteFailure(_, Some(message))
            if message.starts_with(FENCE_MESSAGE_PREFIX)
                && let Some(fenced) = fenced_error(&message) =>
        {
            fenced
        }
        rusqlite::Error::SqliteFailure(inner, message) => Error::from(SqlFailure {
            code: inner.extended_code,
            code_name: code_name(inner.extended_code),
            message: message.unwrap_or_else(|| inner.to_string()),
        }),
        rusqlite::Error::InvalidParameterCount(given, expected) => Error::invalid_argument(
            "parameters",
            format!("the statement has {expected} placeholder(s) but {given} value(s) were given"),
        ),
        rusqlite::Error::InvalidParameterName(name) => {
            Error::invalid_argument("parameters", format!("the statement has no parameter named '{name}'"))
        }
        rusqlite::Error::MultipleStatement => {
            Error::invalid_argument("sql", "expected a single statement but found several")
        }
        rusqlite::Error::InvalidPath(_) => Error::invalid_argument("data source", "the path is not valid UTF-8"),
        other => Error::from(SqlFailure {
            code: rusqlite::ffi::SQLITE_ERROR,
            code_name: "SQLITE_ERROR",
            message: other.to_string(),
        }),
    }
}

fn code_name(extended: i32) -> &'static str {
    use rusqlite::ffi::*;
    match extended & 0xff {
        SQLITE_ERROR => "SQLITE_ERROR",
        SQLITE_INTERNAL => "SQLITE_INTERNAL",
        SQLITE_PERM => "SQLITE_PERM",
        SQLITE_ABORT => "SQLITE_ABORT",
        SQLITE_BUSY => "SQLITE_BUSY",
        SQLITE_LOCKED => "SQLITE_LOCKED",
        SQLITE_NOMEM => "SQLITE_NOMEM",
        SQLITE_READONLY => "SQLITE_READONLY",
        SQLITE_INTERRUPT => "SQLITE_INTERRUPT",
        SQLITE_IOERR => "SQLITE_IOERR",
        SQLITE_CORRUPT => "SQLITE_CORRUPT",
        SQLITE_FULL => "SQLITE_FULL",
        SQLITE_CANTOPEN => "SQLITE_CANTOPEN",
        SQLITE_CONSTRAINT => "SQLITE_CONSTRAINT",
        SQLITE_MISMATCH => "SQLITE_MISMATCH",
        SQLITE_MISUSE => "SQLITE_MISUSE",
        SQLITE_RANGE => "SQLITE_RANGE",
        SQLITE_NOTADB => "SQLITE_NOTADB",
        SQLITE_TOOBIG => "SQLITE_TOOBIG",
        SQLITE_SCHEMA => "SQLITE_SCHEMA",
        _ => "SQLITE_ERROR",
    }
}

/// Whether SQLite answered "busy" or "locked": the connection could not take its lock now.
pub(crate) fn is_busy_or_locked(err: &Error) -> bool {
    err.sqlite_code().is_some_and(|code| {
        let primary = code & 0xff;
        primary == rusqlite::ffi::SQLITE_BUSY || primary == rusqlite::ffi::SQLITE_LOCKED
    })
}

/// Whether SQLite's (extended) result `code` says it could not use the file itself: an I/O
/// error, a corrupt or foreign file, a full disk, a file it cannot open or lacks permission for,
/// or one deleted or moved since it was opened.
pub(crate) fn is_storage_failure(code: i32) -> bool {
    match code & 0xff {
        rusqlite::ffi::SQLITE_IOERR
        | rusqlite::ffi::SQLITE_CORRUPT
        | rusqlite::ffi::SQLITE_NOTADB
        | rusqlite::ffi::SQLITE_FULL
        | rusqlite::ffi::SQLITE_CANTOPEN
        | rusqlite::ffi::SQLITE_PERM => true,
        // Plain SQLITE_READONLY is a write on a read-only connection; its extended codes are
        // about the file (moved or deleted, cannot lock, cannot recover).
        rusqlite::ffi::SQLITE_READONLY => code != rusqlite::ffi::SQLITE_READONLY,
        _ => false,
    }
}

/// `err`, or, when SQLite could not use the file itself ([`is_storage_failure`]),
/// [`Error::ShardStorage`] naming the database `label`: a failure of this shard's storage, told
/// apart from a client's mistake (a read-only violation stays one).
pub(super) fn storage_failure(label: &str, err: Error) -> Error {
    match err {
        Error::Sql(failure) if is_storage_failure(failure.code) => Error::ShardStorage {
            shard_id: label.into(),
            failure,
        },
        other => other,
    }
}

/// `err`, or, when it is SQLite's plain "attempt to write a readonly database" on `conn` (a
/// writer or a transaction's connection) whose file SQLite could only open read-only,
/// [`Error::ShardStorage`] naming the shard `label`: the shard's storage refuses writes (this
/// process may not write the file), which is not a client's read-only violation.
pub(super) fn read_only_file(conn: &Connection, label: &str, err: Error) -> Error {
    match err {
        Error::Sql(failure)
            if failure.code == rusqlite::ffi::SQLITE_READONLY
                && conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) =>
        {
            Error::ShardStorage {
                shard_id: label.into(),
                failure: Box::new(SqlFailure {
                    code: failure.code,
                    code_name: failure.code_name,
                    message: "the database file could only be opened read-only (this process may not write it: \
                              permission denied, a read-only mount or an immutable file); nothing was written"
                        .to_owned(),
                }),
            }
        }
        other => other,
    }
}

/// The shard `label`'s file was `what` ("deleted", "replaced by another file") after it was
/// opened: [`Error::ShardStorage`] with SQLite's own code for a moved file.
pub(super) fn file_moved(label: &str, what: &str) -> Error {
    Error::ShardStorage {
        shard_id: label.into(),
        failure: Box::new(SqlFailure {
            code: rusqlite::ffi::SQLITE_READONLY_DBMOVED,
            code_name: "SQLITE_READONLY",
            message: format!(
                "the database file was {what} after the shard opened it; nothing was written (restore the \
                 file, or reopen the shard)"
            ),
        }),
    }
}

/// `err` from beginning a transaction on the database `label`, with SQLite's "busy" (another
/// transaction holds the write lock past the busy timeout) as [`Error::Busy`].
pub(super) fn begin_failure(label: &str, err: Error) -> Error {
    match err {
        Error::Sql(failure) if failure.code & 0xff == rusqlite::ffi::SQLITE_BUSY => {
            Error::busy(label.to_owned(), "another transaction holds the write lock".to_owned())
        }
        other => other,
    }
}

/// [`sql_error`] for a statement interrupted at `deadline` (from the time limit `timeout`):
/// an interrupt once the deadline has passed is [`Error::StatementTimeout`].
pub(super) fn sql_error_by(err: rusqlite::Error, deadline: Option<Instant>, timeout: Option<Duration>) -> Error {
    match (&err, deadline) {
        (rusqlite::Error::SqliteFailure(inner, _), Some(deadline))
            if inner.code == rusqlite::ErrorCode::OperationInterrupted && Instant::now() >= deadline =>
        {
            Error::StatementTimeout {
                limit_ms: timeout.map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
            }
        }
        _ => sql_error(err),
    }
}

/// A rusqlite error while writing `what` outside any database (a file image), as [`Error::Io`].
pub(super) fn io_failure(what: String, err: rusqlite::Error) -> Error {
    Error::Io {
        what,
        source: std::io::Error::other(err),
    }
}

/// `err` from opening the master catalog at `path`, with a failure of the file itself
/// ([`is_storage_failure`]) as [`Error::Catalog`] telling the operator what to do.
pub(crate) fn catalog_unreadable(path: &Path, err: Error) -> Error {
    match err.sqlite_code() {
        Some(code) if is_storage_failure(code) => Error::Catalog {
            reason: format!(
                "the master '{}' cannot be read ({err}): restore it from a backup, or seed a new one",
                path.display()
            ),
        },
        _ => err,
    }
}

/// The fence error a trigger's message describes, if it is one.
fn fenced_error(message: &str) -> Option<Error> {
    let rest = message
        .strip_prefix(FENCE_MESSAGE_PREFIX)?
        .strip_prefix(FENCE_FIELD_SEPARATOR)?;
    let mut fields = rest.splitn(5, FENCE_FIELD_SEPARATOR);
    let moved = fields.next()? == "1";
    let migration_id = fields.next()?.to_owned();
    let destination = fields.next()?.to_owned();
    let table = fields.next()?.to_owned();
    let route_value = fields.next()?.to_owned();
    Some(Error::from(crate::error::RouteFenced {
        table,
        route_value,
        migration_id,
        destination,
        moved,
    }))
}
