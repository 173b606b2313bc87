//! Schema migrations and schema status across every shard (see [`crate::schema`]).

use async_trait::async_trait;

use super::ShardedClient;
use crate::data::{SchemaAdmin, SchemaMigrationReport, SchemaMigrationRequest, SchemaStatusReport};
use crate::error::{Error, Result};
use crate::schema::{self, check_migrations};

/// The schema of every shard of a [`ShardedClient`]: sqlx-style migrations applied everywhere,
/// and drift between shards. Handed out by [`ShardedClient::schema`]; the in-process
/// [`SchemaAdmin`].
#[derive(Debug, Clone, Copy)]
pub struct ShardedSchema<'a> {
    sharded: &'a ShardedClient,
}

impl<'a> ShardedSchema<'a> {
    pub(super) fn new(sharded: &'a ShardedClient) -> Self {
        Self { sharded }
    }

    /// Every enabled shard's schema, in parallel: applied sqlx migration versions, a fingerprint of
    /// its `sqlite_master` (internal tables left out), and how it drifts from the majority.
    ///
    /// ```no_run
    /// # async fn demo() -> shardlite::Result<()> {
    /// let sharded = shardlite::client::ShardedClient::open("data/master.db").await?;
    /// for shard in sharded.schema().status().await?.drifted() {
    ///     println!("{} drifts: {:?}", shard.shard_id, shard.differences);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn status(self) -> Result<SchemaStatusReport> {
        let shared = &self.sharded.inner;
        let generation = shared.fresh().await;
        let map = &generation.map;
        let schemas = shared
            .bounded(
                generation
                    .enabled_shards()
                    .map(|(index, client)| async move {
                        let schema = match client {
                            Ok(client) => schema::inspect_database(&*client).await,
                            Err(err) => Err(err),
                        };
                        (map.shards()[index].id.clone(), schema)
                    })
                    .collect(),
            )
            .await;
        Ok(schema::compare_schemas(schemas))
    }

    /// Applies a set of sqlx-style migrations to every enabled shard in parallel (or to the shards
    /// `request.shard_ids` names), each shard recording what it applied in its own
    /// `_sqlx_migrations`, as sqlx does.
    ///
    /// Shards already at the target are left alone, so a run that failed somewhere can simply be
    /// run again. A shard that fails is reported with its error; the others finish. Two runs at
    /// once never apply a migration twice (see [`crate::schema::apply`]). The set is checked
    /// before any shard runs it (unique versions, no statement every shard would refuse); an
    /// unknown or disabled shard in `shard_ids` is an error.
    ///
    /// ```no_run
    /// # async fn demo() -> shardlite::Result<()> {
    /// use shardlite::data::SchemaMigrationRequest;
    ///
    /// let sharded = shardlite::client::ShardedClient::open("data/master.db").await?;
    /// let migrations = shardlite::schema::read_migration_dir("migrations")?;
    /// let report = sharded.schema().migrate(&SchemaMigrationRequest::new(migrations)).await?;
    /// for shard in report.failed() {
    ///     eprintln!("{}: {}", shard.shard_id, shard.error.as_deref().unwrap_or_default());
    /// }
    /// assert!(report.all_at_target());
    /// # Ok(()) }
    /// ```
    pub async fn migrate(self, request: &SchemaMigrationRequest) -> Result<SchemaMigrationReport> {
        let migrations = check_migrations(&request.migrations)?;
        let shared = &self.sharded.inner;
        let generation = shared.fresh().await;
        let map = &generation.map;
        let mut chosen = Vec::new();
        for id in &request.shard_ids {
            let index = map.shard_index(id).ok_or_else(|| Error::UnknownShard {
                shard_id: id.trim().to_owned(),
            })?;
            let shard = &map.shards()[index];
            if !shard.enabled {
                return Err(Error::ShardIsDisabled {
                    shard_id: shard.id.clone(),
                });
            }
            chosen.push(index);
        }
        let migrations = &migrations;
        let shards = shared
            .bounded(
                generation
                    .enabled_shards()
                    .filter(|(index, _)| chosen.is_empty() || chosen.contains(index))
                    .map(|(index, client)| async move {
                        let shard_id = &map.shards()[index].id;
                        match client {
                            Ok(client) => {
                                schema::migrate_database(&*client, shard_id, migrations, request.dry_run).await
                            }
                            Err(err) => schema::apply::unreachable_shard(shard_id, &err),
                        }
                    })
                    .collect(),
            )
            .await;
        Ok(SchemaMigrationReport {
            target_version: migrations.last().map(|m| m.version),
            dry_run: request.dry_run,
            shards,
        })
    }
}

#[async_trait]
impl SchemaAdmin for ShardedClient {
    async fn schema_status(&self) -> Result<SchemaStatusReport> {
        self.schema().status().await
    }
    async fn migrate_schema(&self, request: &SchemaMigrationRequest) -> Result<SchemaMigrationReport> {
        self.schema().migrate(request).await
    }
}
