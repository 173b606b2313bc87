//! [`ShardliteTypeInfo`]: the SQLite storage class of a value or a column.

use std::fmt;

use sqlx_core::type_info::TypeInfo;

use crate::client::Value;

/// The kinds of value the driver knows: SQLite's five storage classes, plus `BOOLEAN`, which is
/// what `bool` asks for (stored as an integer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum DataType {
    Null,
    Integer,
    Real,
    Text,
    Blob,
    Bool,
}

/// The type of a value or column: `NULL`, `INTEGER`, `REAL`, `TEXT`, `BLOB` (the SQLite storage
/// classes), or `BOOLEAN` for what `bool` binds.
///
/// Values carry their storage class; a column reports the storage class of its first non-NULL value
/// (the engine returns values, not declared types), or `NULL` when every value is NULL.
///
/// ```
/// use shardlite::driver::ShardliteTypeInfo;
/// use sqlx_core::type_info::TypeInfo;
///
/// assert_eq!(ShardliteTypeInfo::INTEGER.name(), "INTEGER");
/// assert!(ShardliteTypeInfo::NULL.is_null());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShardliteTypeInfo(pub(crate) DataType);

impl ShardliteTypeInfo {
    /// SQL NULL.
    pub const NULL: Self = Self(DataType::Null);
    /// A 64-bit signed integer.
    pub const INTEGER: Self = Self(DataType::Integer);
    /// A 64-bit float.
    pub const REAL: Self = Self(DataType::Real);
    /// UTF-8 text.
    pub const TEXT: Self = Self(DataType::Text);
    /// Bytes.
    pub const BLOB: Self = Self(DataType::Blob);
    /// A boolean, stored as the integer 0 or 1.
    pub const BOOLEAN: Self = Self(DataType::Bool);

    /// The storage class of `value`.
    pub fn of(value: &Value) -> Self {
        match value {
            Value::Null => Self::NULL,
            Value::Integer(_) => Self::INTEGER,
            Value::Real(_) => Self::REAL,
            Value::Text(_) => Self::TEXT,
            Value::Blob(_) => Self::BLOB,
        }
    }

    /// Whether this is `INTEGER` or `BOOLEAN` (both are stored as integers).
    pub(crate) fn is_integer(self) -> bool {
        matches!(self.0, DataType::Integer | DataType::Bool)
    }
}

impl fmt::Display for ShardliteTypeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl TypeInfo for ShardliteTypeInfo {
    fn is_null(&self) -> bool {
        self.0 == DataType::Null
    }

    fn name(&self) -> &str {
        match self.0 {
            DataType::Null => "NULL",
            DataType::Integer => "INTEGER",
            DataType::Real => "REAL",
            DataType::Text => "TEXT",
            DataType::Blob => "BLOB",
            DataType::Bool => "BOOLEAN",
        }
    }

    fn type_compatible(&self, other: &Self) -> bool {
        self == other || (self.is_integer() && other.is_integer())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_report_their_storage_class() {
        assert_eq!(ShardliteTypeInfo::of(&Value::Integer(1)), ShardliteTypeInfo::INTEGER);
        assert_eq!(ShardliteTypeInfo::of(&Value::Real(1.0)).to_string(), "REAL");
        assert_eq!(ShardliteTypeInfo::of(&Value::Text("x".into())).name(), "TEXT");
        assert_eq!(ShardliteTypeInfo::of(&Value::Blob(vec![1])).name(), "BLOB");
        assert!(ShardliteTypeInfo::of(&Value::Null).is_null());
        assert!(ShardliteTypeInfo::BOOLEAN.type_compatible(&ShardliteTypeInfo::INTEGER));
        assert!(!ShardliteTypeInfo::TEXT.type_compatible(&ShardliteTypeInfo::BLOB));
    }
}
