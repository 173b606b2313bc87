//! The blocking form of [`client::ShardedSchema`](crate::client::ShardedSchema).

use super::ShardedClient;
use crate::data::{SchemaMigrationReport, SchemaMigrationRequest, SchemaStatusReport};
use crate::error::Result;

/// Schema migrations and schema status on every enabled shard of a blocking [`ShardedClient`].
/// Handed out by [`ShardedClient::schema`].
///
/// ```no_run
/// # fn demo(sharded: &shardlite::client::blocking::ShardedClient) -> shardlite::Result<()> {
/// use shardlite::data::SchemaMigrationRequest;
///
/// let migrations = shardlite::schema::read_migration_dir("migrations")?;
/// assert!(sharded.schema().migrate(&SchemaMigrationRequest::new(migrations))?.all_at_target());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ShardedSchema<'a> {
    client: &'a ShardedClient,
}

impl<'a> ShardedSchema<'a> {
    pub(super) fn new(client: &'a ShardedClient) -> Self {
        Self { client }
    }

    /// Every enabled shard's schema and its drift from the majority.
    pub fn status(self) -> Result<SchemaStatusReport> {
        self.client.wait(self.client.sharded.schema().status())
    }

    /// Applies sqlx-style migrations to every enabled shard (or the shards named).
    pub fn migrate(self, request: &SchemaMigrationRequest) -> Result<SchemaMigrationReport> {
        self.client.wait(self.client.sharded.schema().migrate(request))
    }
}
