//! [`ShardliteRow`]: one row of a result, and how results become rows.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use sqlx_core::column::ColumnIndex;
use sqlx_core::error::Error;
use sqlx_core::row::Row;

use super::{Shardlite, ShardliteColumn, ShardliteTypeInfo, ShardliteValueRef};
use crate::client::{SqlResult, Value};

/// One row of a query result. Columns are addressed by position or by name (the first column of
/// that name, case-sensitive).
pub struct ShardliteRow {
    values: Box<[Value]>,
    columns: Arc<[ShardliteColumn]>,
    names: Arc<HashMap<Arc<str>, usize>>,
}

impl ShardliteRow {
    /// Splits an engine result into rows sharing one column list.
    pub(crate) fn from_result(result: SqlResult) -> Vec<ShardliteRow> {
        let columns: Arc<[ShardliteColumn]> = result
            .column_names
            .iter()
            .enumerate()
            .map(|(ordinal, name)| ShardliteColumn {
                name: Arc::from(name.as_str()),
                ordinal,
                type_info: result
                    .rows
                    .iter()
                    .filter_map(|row| row.get(ordinal))
                    .find(|value| !value.is_null())
                    .map_or(ShardliteTypeInfo::NULL, ShardliteTypeInfo::of),
            })
            .collect();
        let mut names = HashMap::with_capacity(columns.len());
        for column in columns.iter() {
            names.entry(Arc::clone(&column.name)).or_insert(column.ordinal);
        }
        let names = Arc::new(names);
        result
            .rows
            .into_iter()
            .map(|values| ShardliteRow {
                values: values.into_boxed_slice(),
                columns: Arc::clone(&columns),
                names: Arc::clone(&names),
            })
            .collect()
    }

    /// The row's values, in column order.
    pub fn values(&self) -> &[Value] {
        &self.values
    }
}

impl Row for ShardliteRow {
    type Database = Shardlite;

    fn columns(&self) -> &[ShardliteColumn] {
        &self.columns
    }

    fn try_get_raw<I>(&self, index: I) -> Result<ShardliteValueRef<'_>, Error>
    where
        I: ColumnIndex<Self>,
    {
        let index = index.index(self)?;
        self.values
            .get(index)
            .map(ShardliteValueRef)
            .ok_or(Error::ColumnIndexOutOfBounds {
                index,
                len: self.values.len(),
            })
    }
}

impl ColumnIndex<ShardliteRow> for &'_ str {
    fn index(&self, row: &ShardliteRow) -> Result<usize, Error> {
        row.names
            .get(*self)
            .copied()
            .ok_or_else(|| Error::ColumnNotFound((*self).to_owned()))
    }
}

impl fmt::Debug for ShardliteRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (column, value) in self.columns.iter().zip(self.values.iter()) {
            map.entry(&column.name, value);
        }
        map.finish()
    }
}

#[cfg(test)]
mod tests {
    use sqlx_core::column::Column;
    use sqlx_core::value::ValueRef;

    use super::*;

    #[test]
    fn columns_take_the_first_non_null_storage_class_and_names_resolve() {
        let result = SqlResult {
            is_query: true,
            column_names: vec!["id".into(), "note".into(), "id".into()],
            rows: vec![
                vec![Value::Integer(1), Value::Null, Value::Integer(10)],
                vec![Value::Integer(2), Value::Text("x".into()), Value::Integer(20)],
            ],
            ..SqlResult::default()
        };
        let rows = ShardliteRow::from_result(result);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].columns()[1].type_info(), &ShardliteTypeInfo::TEXT);
        assert_eq!("id".index(&rows[1]).unwrap(), 0);
        assert!(matches!("nope".index(&rows[1]), Err(Error::ColumnNotFound(name)) if name == "nope"));
        assert!(rows[0].try_get_raw(1).unwrap().is_null());
        assert_eq!(rows[1].try_get_raw(2).unwrap().value(), &Value::Integer(20));
    }
}
