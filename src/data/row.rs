//! Rows read in place: [`RowRef`] lends a row's values to a closure while the statement is
//! still on it, as [`ValueRef`]s, and [`FromValue`] turns one into a Rust type.
//!
//! This is how the blocking client's `query_row` and `query_map` hand rows to their caller:
//! nothing of a row is copied unless the closure copies it, and no column name is built.

use std::ops::ControlFlow;

use crate::error::{Error, Result};

use super::Value;

/// A value borrowed from a row (or from a [`Value`]): text and bytes are not copied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    /// SQL NULL.
    Null,
    /// A 64-bit integer.
    Integer(i64),
    /// A 64-bit IEEE float.
    Real(f64),
    /// UTF-8 text.
    Text(&'a str),
    /// Raw bytes.
    Blob(&'a [u8]),
}

impl ValueRef<'_> {
    /// The SQLite storage class name (`NULL`, `INTEGER`, `REAL`, `TEXT`, `BLOB`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Null => "NULL",
            Self::Integer(_) => "INTEGER",
            Self::Real(_) => "REAL",
            Self::Text(_) => "TEXT",
            Self::Blob(_) => "BLOB",
        }
    }

    /// An owned copy.
    pub fn to_value(&self) -> Value {
        match *self {
            Self::Null => Value::Null,
            Self::Integer(v) => Value::Integer(v),
            Self::Real(v) => Value::Real(v),
            Self::Text(v) => Value::Text(v.to_owned()),
            Self::Blob(v) => Value::Blob(v.to_vec()),
        }
    }
}

impl Value {
    /// This value, borrowed.
    pub fn as_value_ref(&self) -> ValueRef<'_> {
        match self {
            Self::Null => ValueRef::Null,
            Self::Integer(v) => ValueRef::Integer(*v),
            Self::Real(v) => ValueRef::Real(*v),
            Self::Text(v) => ValueRef::Text(v),
            Self::Blob(v) => ValueRef::Blob(v),
        }
    }
}

/// A Rust type a column value converts to. A value of another storage class is an error that
/// names both (`an INTEGER column does not convert from TEXT`), never a silent coercion; the
/// exceptions are the ones SQLite's own affinity makes natural: an integer read as `f64`, and
/// NULL read as `None` through `Option<T>`.
pub trait FromValue: Sized {
    /// Converts `value`, or says why it cannot.
    fn from_value(value: ValueRef<'_>) -> std::result::Result<Self, String>;
}

fn mismatch<T>(wanted: &str, value: ValueRef<'_>) -> std::result::Result<T, String> {
    Err(format!("{} does not convert to {wanted}", value.type_name()))
}

impl FromValue for i64 {
    #[inline]
    fn from_value(value: ValueRef<'_>) -> std::result::Result<Self, String> {
        match value {
            ValueRef::Integer(v) => Ok(v),
            other => mismatch("i64", other),
        }
    }
}

macro_rules! from_narrow_integer {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            #[inline]
            fn from_value(value: ValueRef<'_>) -> std::result::Result<Self, String> {
                let wide = i64::from_value(value).map_err(|_| {
                    format!("{} does not convert to {}", value.type_name(), stringify!($t))
                })?;
                <$t>::try_from(wide).map_err(|_| format!("{wide} is out of range for {}", stringify!($t)))
            }
        }
    )*};
}

from_narrow_integer!(i8, i16, i32, u8, u16, u32, u64, usize);

impl FromValue for f64 {
    #[inline]
    fn from_value(value: ValueRef<'_>) -> std::result::Result<Self, String> {
        match value {
            ValueRef::Real(v) => Ok(v),
            #[allow(clippy::cast_precision_loss)]
            ValueRef::Integer(v) => Ok(v as f64),
            other => mismatch("f64", other),
        }
    }
}

impl FromValue for bool {
    #[inline]
    fn from_value(value: ValueRef<'_>) -> std::result::Result<Self, String> {
        match value {
            ValueRef::Integer(v) => Ok(v != 0),
            other => mismatch("bool", other),
        }
    }
}

impl FromValue for String {
    #[inline]
    fn from_value(value: ValueRef<'_>) -> std::result::Result<Self, String> {
        match value {
            ValueRef::Text(v) => Ok(v.to_owned()),
            other => mismatch("String", other),
        }
    }
}

impl FromValue for Vec<u8> {
    #[inline]
    fn from_value(value: ValueRef<'_>) -> std::result::Result<Self, String> {
        match value {
            ValueRef::Blob(v) => Ok(v.to_vec()),
            other => mismatch("Vec<u8>", other),
        }
    }
}

impl FromValue for Value {
    #[inline]
    fn from_value(value: ValueRef<'_>) -> std::result::Result<Self, String> {
        Ok(value.to_value())
    }
}

impl<T: FromValue> FromValue for Option<T> {
    #[inline]
    fn from_value(value: ValueRef<'_>) -> std::result::Result<Self, String> {
        match value {
            ValueRef::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}

/// The lending form of a `query_row` closure: `f` maps the first row into `out`, and the rows
/// end there, so `f` runs at most once.
pub(crate) fn first_row<'a, T, F>(
    f: &'a mut Option<F>,
    out: &'a mut Option<T>,
) -> impl FnMut(&RowRef<'_>) -> Result<ControlFlow<()>> + 'a
where
    F: FnOnce(&RowRef<'_>) -> Result<T>,
{
    move |row| {
        if let Some(f) = f.take() {
            *out = Some(f(row)?);
        }
        Ok(ControlFlow::Break(()))
    }
}

/// The lending form of a `query_map` closure: `f` maps every row onto `out`.
pub(crate) fn every_row<'a, T, F>(
    f: &'a mut F,
    out: &'a mut Vec<T>,
) -> impl FnMut(&RowRef<'_>) -> Result<ControlFlow<()>> + 'a
where
    F: FnMut(&RowRef<'_>) -> Result<T>,
{
    move |row| {
        out.push(f(row)?);
        Ok(ControlFlow::Continue(()))
    }
}

impl super::SqlResult {
    /// Lends each row to `each` as a [`RowRef`], until the rows end or `each` breaks: the rows
    /// of a result already read (a remote shard's, or a writer's) reach a row closure this way.
    pub(crate) fn lend_rows(&self, each: &mut dyn FnMut(&RowRef<'_>) -> Result<ControlFlow<()>>) -> Result<()> {
        for row in &self.rows {
            if each(&RowRef::values(row))?.is_break() {
                break;
            }
        }
        Ok(())
    }
}

/// Where a row's values are.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// A row SQLite is on, read in place.
    Sqlite(&'a rusqlite::Row<'a>),
    /// A row already read, as values (from a remote shard).
    Values(&'a [Value]),
}

/// One row of a query, lent to a closure: read its columns by index with [`get`](Self::get)
/// or [`get_ref`](Self::get_ref).
#[derive(Clone, Copy)]
pub struct RowRef<'a> {
    source: Source<'a>,
    columns: usize,
}

impl std::fmt::Debug for RowRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut list = f.debug_list();
        for index in 0..self.columns {
            match self.get_ref(index) {
                Ok(value) => list.entry(&value),
                Err(_) => list.entry(&"?"),
            };
        }
        list.finish()
    }
}

impl<'a> RowRef<'a> {
    /// A row SQLite is on, with `columns` columns.
    #[inline]
    pub(crate) fn sqlite(row: &'a rusqlite::Row<'a>, columns: usize) -> Self {
        Self {
            source: Source::Sqlite(row),
            columns,
        }
    }

    /// A row of values.
    pub(crate) fn values(values: &'a [Value]) -> Self {
        Self {
            source: Source::Values(values),
            columns: values.len(),
        }
    }

    /// How many columns the row has.
    pub fn column_count(&self) -> usize {
        self.columns
    }

    /// Column `index` (from 0), borrowed.
    ///
    /// # Errors
    /// An index past the last column, or text that is not valid UTF-8 (read such a column as a
    /// blob: `CAST(col AS BLOB)`).
    #[inline]
    pub fn get_ref(&self, index: usize) -> Result<ValueRef<'a>> {
        if index >= self.columns {
            return Err(column_out_of_range(index, self.columns));
        }
        match self.source {
            Source::Values(values) => Ok(values[index].as_value_ref()),
            Source::Sqlite(row) => {
                let value = row.get_ref(index).map_err(|err| column_unreadable(index, &err))?;
                Ok(match value {
                    rusqlite::types::ValueRef::Null => ValueRef::Null,
                    rusqlite::types::ValueRef::Integer(v) => ValueRef::Integer(v),
                    rusqlite::types::ValueRef::Real(v) => ValueRef::Real(v),
                    rusqlite::types::ValueRef::Text(bytes) => {
                        ValueRef::Text(std::str::from_utf8(bytes).map_err(|_| text_not_utf8(index))?)
                    }
                    rusqlite::types::ValueRef::Blob(bytes) => ValueRef::Blob(bytes),
                })
            }
        }
    }

    /// Column `index` (from 0) as `T`.
    ///
    /// # Errors
    /// What [`get_ref`](Self::get_ref) refuses, and a value that does not convert to `T`
    /// (the error names the column and both types).
    #[inline]
    pub fn get<T: FromValue>(&self, index: usize) -> Result<T> {
        let value = self.get_ref(index)?;
        T::from_value(value).map_err(|reason| Error::invalid_argument("column", format!("column {index}: {reason}")))
    }
}

#[cold]
fn column_out_of_range(index: usize, columns: usize) -> Error {
    Error::invalid_argument(
        "column",
        format!("column {index} is out of range: the row has {columns} column(s)"),
    )
}

#[cold]
fn column_unreadable(index: usize, err: &rusqlite::Error) -> Error {
    Error::invalid_argument("column", format!("column {index}: {err}"))
}

#[cold]
fn text_not_utf8(index: usize) -> Error {
    Error::invalid_argument(
        "column",
        format!("column {index} holds text that is not valid UTF-8; read it as a blob (CAST(... AS BLOB))"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_convert_only_where_the_storage_class_allows() {
        let values = vec![
            Value::Integer(7),
            Value::Real(1.5),
            Value::Text("x".into()),
            Value::Blob(vec![1, 2]),
            Value::Null,
            Value::Integer(300),
        ];
        let row = RowRef::values(&values);
        assert_eq!(row.column_count(), 6);
        assert_eq!(row.get::<i64>(0).unwrap(), 7);
        assert!((row.get::<f64>(0).unwrap() - 7.0).abs() < f64::EPSILON);
        assert!((row.get::<f64>(1).unwrap() - 1.5).abs() < f64::EPSILON);
        assert_eq!(row.get::<String>(2).unwrap(), "x");
        assert_eq!(row.get_ref(2).unwrap(), ValueRef::Text("x"));
        assert_eq!(row.get::<Vec<u8>>(3).unwrap(), vec![1, 2]);
        assert_eq!(row.get::<Option<i64>>(4).unwrap(), None);
        assert_eq!(row.get::<Option<i64>>(0).unwrap(), Some(7));
        assert_eq!(row.get::<Value>(2).unwrap(), Value::Text("x".into()));
        assert!(row.get::<bool>(0).unwrap());

        let text_as_int = row.get::<i64>(2).unwrap_err().to_string();
        assert!(
            text_as_int.contains("column 2") && text_as_int.contains("TEXT"),
            "{text_as_int}"
        );
        let null = row.get::<String>(4).unwrap_err().to_string();
        assert!(null.contains("NULL does not convert to String"), "{null}");
        let narrow = row.get::<u8>(5).unwrap_err().to_string();
        assert!(narrow.contains("300 is out of range for u8"), "{narrow}");
        let past = row.get::<i64>(6).unwrap_err().to_string();
        assert!(
            past.contains("column 6 is out of range: the row has 6 column(s)"),
            "{past}"
        );
        assert!(
            format!("{row:?}").starts_with("[Integer(7), Real(1.5), Text(\"x\")"),
            "{row:?}"
        );
    }
}
