//! [`Shardlite`]: the sqlx [`Database`] that ties the driver's types together.

use sqlx_core::database::Database;

use super::{
    ShardliteArgumentBuffer, ShardliteArguments, ShardliteColumn, ShardliteConnection, ShardliteQueryResult,
    ShardliteRow, ShardliteStatement, ShardliteTransactionManager, ShardliteTypeInfo, ShardliteValue,
    ShardliteValueRef,
};

/// shardlite as an sqlx database: SQLite files reached through a route-bound connection string.
#[derive(Debug)]
pub struct Shardlite;

impl Database for Shardlite {
    type Connection = ShardliteConnection;
    type TransactionManager = ShardliteTransactionManager;
    type Row = ShardliteRow;
    type QueryResult = ShardliteQueryResult;
    type Column = ShardliteColumn;
    type TypeInfo = ShardliteTypeInfo;
    type Value = ShardliteValue;
    type ValueRef<'r> = ShardliteValueRef<'r>;
    type Arguments = ShardliteArguments;
    type ArgumentBuffer = ShardliteArgumentBuffer;
    type Statement = ShardliteStatement;

    const NAME: &'static str = "Shardlite";

    const URL_SCHEMES: &'static [&'static str] = &[
        "shardlite",
        "shardlite+http",
        "shardlite+https",
        "shardlite+grpc",
        "shardlite+grpcs",
    ];
}
