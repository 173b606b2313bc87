//! [`ShardliteColumn`]: a result column's name, position and type.

use std::sync::Arc;

use sqlx_core::column::Column;

use super::{Shardlite, ShardliteTypeInfo};

/// One column of a result.
///
/// Its type is the storage class of the column's first non-NULL value in the result (see
/// [`ShardliteTypeInfo`]); rows check each value's own storage class when decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardliteColumn {
    pub(crate) name: Arc<str>,
    pub(crate) ordinal: usize,
    pub(crate) type_info: ShardliteTypeInfo,
}

impl Column for ShardliteColumn {
    type Database = Shardlite;

    fn ordinal(&self) -> usize {
        self.ordinal
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn type_info(&self) -> &ShardliteTypeInfo {
        &self.type_info
    }
}
