//! [`ShardliteStatement`]: SQL text prepared for repeated execution.

use std::sync::Arc;

use sqlx_core::Either;
use sqlx_core::sql_str::SqlStr;
use sqlx_core::statement::Statement;

use super::{Shardlite, ShardliteArguments, ShardliteColumn, ShardliteTypeInfo};

/// A statement made by [`Executor::prepare`](sqlx_core::executor::Executor::prepare).
///
/// The engine prepares and caches statements on the shard's own connections when they first run, so
/// preparing here records the SQL only: it checks nothing, and reports neither columns nor
/// parameters until executed.
#[derive(Debug, Clone)]
pub struct ShardliteStatement {
    pub(crate) sql: SqlStr,
    pub(crate) columns: Arc<[ShardliteColumn]>,
}

impl ShardliteStatement {
    pub(crate) fn new(sql: SqlStr) -> Self {
        Self {
            sql,
            columns: Arc::from(Vec::new()),
        }
    }
}

impl Statement for ShardliteStatement {
    type Database = Shardlite;

    fn into_sql(self) -> SqlStr {
        self.sql
    }

    fn sql(&self) -> &SqlStr {
        &self.sql
    }

    fn parameters(&self) -> Option<Either<&[ShardliteTypeInfo], usize>> {
        None
    }

    fn columns(&self) -> &[ShardliteColumn] {
        &self.columns
    }

    sqlx_core::impl_statement_query!(ShardliteArguments);
}
