//! [`ShardliteTransactionManager`]: sqlx's transaction protocol on a shardlite connection.
//!
//! The state machine lives on [`ShardliteConnection`], whose documentation says how levels,
//! savepoints and dropped transactions are handled.

use sqlx_core::error::Error;
use sqlx_core::sql_str::SqlStr;
use sqlx_core::transaction::TransactionManager;

use super::{Shardlite, ShardliteConnection};

/// Begins, commits and rolls back transactions (depth 1) and savepoints (depth 2 and deeper) for
/// `sqlx::Transaction<'_, Shardlite>`.
#[derive(Debug)]
pub struct ShardliteTransactionManager;

impl TransactionManager for ShardliteTransactionManager {
    type Database = Shardlite;

    fn begin(
        conn: &mut ShardliteConnection,
        statement: Option<SqlStr>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        conn.begin_level(statement)
    }

    fn commit(conn: &mut ShardliteConnection) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        conn.commit_level()
    }

    fn rollback(conn: &mut ShardliteConnection) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        conn.rollback_level()
    }

    fn start_rollback(conn: &mut ShardliteConnection) {
        conn.start_rollback();
    }

    fn get_transaction_depth(conn: &ShardliteConnection) -> usize {
        conn.transaction_depth()
    }
}
