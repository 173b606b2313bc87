//! How the value model meets SQLite: binding a [`Value`] and reading one from a column.

use rusqlite::types::{FromSql, FromSqlResult, ToSqlOutput, ValueRef};

use crate::data::Value;

/// The owned value of a column reference (invalid UTF-8 in text is replaced, as SQLite's own
/// text functions would show it).
pub(crate) fn value_from_ref(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(v) => Value::Integer(v),
        ValueRef::Real(v) => Value::Real(v),
        ValueRef::Text(v) => Value::Text(String::from_utf8_lossy(v).into_owned()),
        ValueRef::Blob(v) => Value::Blob(v.to_vec()),
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Self::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Self::Integer(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Self::Real(v) => ToSqlOutput::Borrowed(ValueRef::Real(*v)),
            Self::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Self::Blob(v) => ToSqlOutput::Borrowed(ValueRef::Blob(v)),
        })
    }
}

impl FromSql for Value {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        Ok(value_from_ref(value))
    }
}
