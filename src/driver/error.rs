//! [`ShardliteDatabaseError`]: shardlite's errors as sqlx sees them.
//!
//! Every [`crate::Error`] reaches sqlx as [`sqlx_core::Error::Database`] carrying a
//! [`ShardliteDatabaseError`], except connection-string problems, which are
//! [`sqlx_core::Error::Configuration`]. SQLite's extended result code decides the sqlx
//! [`ErrorKind`], so `is_unique_violation()` and friends work on shards in-process and, when the
//! remote client preserves the code, over the network too:
//!
//! | extended code | sqlx kind |
//! |---|---|
//! | 2067 `SQLITE_CONSTRAINT_UNIQUE`, 1555 `SQLITE_CONSTRAINT_PRIMARYKEY` | [`ErrorKind::UniqueViolation`] |
//! | 787 `SQLITE_CONSTRAINT_FOREIGNKEY` | [`ErrorKind::ForeignKeyViolation`] |
//! | 1299 `SQLITE_CONSTRAINT_NOTNULL` | [`ErrorKind::NotNullViolation`] |
//! | 275 `SQLITE_CONSTRAINT_CHECK` | [`ErrorKind::CheckViolation`] |
//!
//! [`DatabaseError::code`] is the extended code in decimal (as sqlx's SQLite driver reports it), or
//! for errors SQLite did not produce, shardlite's [`crate::ErrorKind::code`] (`busy`,
//! `unknown_keyspace`, ...). The original error is kept: [`ShardliteDatabaseError::shardlite_error`].

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;

use sqlx_core::error::{DatabaseError, ErrorKind};

const SQLITE_CONSTRAINT_CHECK: i32 = 275;
const SQLITE_CONSTRAINT_FOREIGNKEY: i32 = 787;
const SQLITE_CONSTRAINT_NOTNULL: i32 = 1299;
const SQLITE_CONSTRAINT_PRIMARYKEY: i32 = 1555;
const SQLITE_CONSTRAINT_UNIQUE: i32 = 2067;

/// A shardlite error reported through sqlx.
///
/// ```
/// use shardlite::driver::ShardliteDatabaseError;
/// use sqlx_core::error::DatabaseError;
///
/// let err = ShardliteDatabaseError::new(shardlite::Error::from(shardlite::error::SqlFailure {
///     code: 2067,
///     code_name: "SQLITE_CONSTRAINT",
///     message: "UNIQUE constraint failed: orders.id".into(),
/// }));
/// assert!(err.is_unique_violation());
/// assert_eq!(err.code().as_deref(), Some("2067"));
/// assert_eq!(err.message(), "UNIQUE constraint failed: orders.id");
/// ```
#[derive(Debug)]
pub struct ShardliteDatabaseError {
    message: String,
    inner: crate::Error,
}

impl ShardliteDatabaseError {
    /// Wraps a shardlite error.
    pub fn new(inner: crate::Error) -> Self {
        let message = match &inner {
            crate::Error::Sql(failure) => failure.message.clone(),
            other => other.to_string(),
        };
        Self { message, inner }
    }

    /// The shardlite error, for branching on [`crate::Error::kind`].
    pub fn shardlite_error(&self) -> &crate::Error {
        &self.inner
    }

    /// The shardlite error, by value.
    pub fn into_shardlite_error(self) -> crate::Error {
        self.inner
    }

    /// SQLite's extended result code, when SQLite produced the error.
    pub fn sqlite_code(&self) -> Option<i32> {
        self.inner.sqlite_code()
    }
}

impl fmt::Display for ShardliteDatabaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

impl StdError for ShardliteDatabaseError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.inner)
    }
}

impl DatabaseError for ShardliteDatabaseError {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<Cow<'_, str>> {
        Some(match self.sqlite_code() {
            Some(code) => Cow::Owned(code.to_string()),
            None => Cow::Borrowed(self.inner.kind().code()),
        })
    }

    fn as_error(&self) -> &(dyn StdError + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn StdError + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn StdError + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> ErrorKind {
        match self.sqlite_code() {
            Some(SQLITE_CONSTRAINT_UNIQUE | SQLITE_CONSTRAINT_PRIMARYKEY) => ErrorKind::UniqueViolation,
            Some(SQLITE_CONSTRAINT_FOREIGNKEY) => ErrorKind::ForeignKeyViolation,
            Some(SQLITE_CONSTRAINT_NOTNULL) => ErrorKind::NotNullViolation,
            Some(SQLITE_CONSTRAINT_CHECK) => ErrorKind::CheckViolation,
            _ => ErrorKind::Other,
        }
    }
}

/// Connection-string errors become [`sqlx_core::Error::Configuration`]; everything else
/// [`sqlx_core::Error::Database`] with a [`ShardliteDatabaseError`].
impl From<crate::Error> for sqlx_core::Error {
    fn from(err: crate::Error) -> Self {
        match err {
            err @ crate::Error::ConnectionString { .. } => sqlx_core::Error::Configuration(Box::new(err)),
            err => sqlx_core::Error::Database(Box::new(ShardliteDatabaseError::new(err))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(code: i32) -> ShardliteDatabaseError {
        ShardliteDatabaseError::new(crate::Error::from(crate::error::SqlFailure {
            code,
            code_name: "SQLITE_CONSTRAINT",
            message: "constraint failed".into(),
        }))
    }

    #[test]
    fn extended_codes_map_to_sqlx_kinds() {
        assert_eq!(sql(2067).kind(), ErrorKind::UniqueViolation);
        assert_eq!(sql(1555).kind(), ErrorKind::UniqueViolation);
        assert_eq!(sql(787).kind(), ErrorKind::ForeignKeyViolation);
        assert!(sql(787).is_foreign_key_violation());
        assert_eq!(sql(1299).kind(), ErrorKind::NotNullViolation);
        assert_eq!(sql(275).kind(), ErrorKind::CheckViolation);
        assert!(sql(275).is_check_violation());
        assert_eq!(sql(19).kind(), ErrorKind::Other);
    }

    #[test]
    fn other_errors_carry_the_shardlite_kind_code() {
        let err = ShardliteDatabaseError::new(crate::Error::RouteRequired);
        assert_eq!(err.code().as_deref(), Some("route_required"));
        assert_eq!(err.kind(), ErrorKind::Other);
        let config: sqlx_core::Error = crate::Error::ConnectionString { reason: "bad".into() }.into();
        assert!(matches!(config, sqlx_core::Error::Configuration(_)), "{config}");
    }
}
