//! Statements on a connection bound to a keyspace without a key: a query is answered across
//! every shard, anything else needs a route.

use crate::data::{Params, ShardAdmin, SqlResult};
use crate::error::{Error, Result};
use crate::query::is_query;

/// Runs `sql` across every shard when it only reads; refuses it with
/// [`Error::RouteRequired`] otherwise, before anything runs.
pub(super) async fn run(admin: &dyn ShardAdmin, sql: &str, params: Params) -> Result<SqlResult> {
    if !is_query(sql) {
        return Err(Error::RouteRequired);
    }
    admin.query_all_shards(sql, params).await
}
