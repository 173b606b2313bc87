//! SQLite's errors in the crate's terms: every rusqlite error the engine sees becomes an [`Error`]
//! here, keeping SQLite's extended result code and its symbolic name; a fence trigger's abort
//! becomes [`Error::RouteFenced`].

use crate::error::{Error, SqlFailure};

/// Converts a rusqlite error into the crate's error, keeping SQLite's codes.
pub(crate) fn sql_error(err: rusqlite::Error) -> Error {
    match err {
        rusqlite::Error::SqliteFailure(_, Some(message))
            if message.starts_with(super::fence::FENCE_MESSAGE_PREFIX)
                && let Some(fenced) = super::fence::fenced_error(&message) =>
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
