//! Copying a catalog between stores: `shardlite catalog export` and `import`, for moving a
//! master file's catalog into etcd (or back, or between prefixes).
//!
//! An export is one JSON document holding everything the catalog holds: the active and pending
//! maps, catalog history, migration checkpoints and migration history. A shard's relative
//! `dataSource` is written as the absolute path it resolves to here (beside the master file),
//! so that the imported catalog names the same files wherever it lives. Import writes it into a
//! catalog that has no map yet; the maps are written last, so a router never sees a catalog
//! with its map but without its history.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::Catalog;
use super::store::{HistoryRow, NewMap};
use crate::data::{Audit, CatalogHistoryEntry};
use crate::error::{Error, Result};
use crate::map::{ShardMap, ShardingOptions};

/// What an export document says it is.
pub const EXPORT_FORMAT: &str = "shardlite-catalog";

/// Everything a catalog holds, as one document.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CatalogExport {
    /// Always [`EXPORT_FORMAT`].
    pub format: String,
    /// The catalog schema version of the export.
    pub schema_version: i64,
    /// The active map.
    pub active_map: Option<ShardingOptions>,
    /// The pending map, if any.
    pub pending_map: Option<ShardingOptions>,
    /// Catalog history, newest first.
    pub history: Vec<CatalogHistoryEntry>,
    /// Every migration's checkpoint (as stored).
    pub migrations: Vec<Json>,
    /// The migration history, newest first.
    pub migration_history: Vec<Json>,
}

impl Catalog {
    /// Everything this catalog holds.
    pub async fn export(&self) -> Result<CatalogExport> {
        let parse = |payloads: Vec<String>| -> Result<Vec<Json>> {
            payloads
                .iter()
                .map(|p| {
                    serde_json::from_str(p).map_err(|err| Error::Catalog {
                        reason: format!("a stored migration record does not parse: {err}"),
                    })
                })
                .collect()
        };
        Ok(CatalogExport {
            format: EXPORT_FORMAT.to_owned(),
            schema_version: super::CATALOG_SCHEMA_VERSION,
            active_map: self.active_options().await?.map(|m| self.with_absolute_files(m)),
            pending_map: self.pending_options().await?.map(|m| self.with_absolute_files(m)),
            history: self.history().await?,
            migrations: parse(self.store().checkpoints().await?)?,
            migration_history: parse(self.store().migration_history().await?)?,
        })
    }

    /// `options` with each relative `dataSource` made absolute, resolved as this catalog
    /// resolves it, so that a catalog elsewhere (etcd, another folder) names the same files.
    fn with_absolute_files(&self, mut options: ShardingOptions) -> ShardingOptions {
        for shard in &mut options.shards {
            if let Some(file) = &shard.data_source {
                let resolved = crate::map::resolve_data_source(self.path(), file);
                let resolved = std::path::absolute(&resolved).unwrap_or(resolved);
                shard.data_source = Some(resolved.display().to_string());
            }
        }
        options
    }

    /// Writes `export` into this catalog, which must hold no map yet.
    pub async fn import(&self, export: &CatalogExport) -> Result<()> {
        if export.format != EXPORT_FORMAT {
            return Err(Error::invalid_argument(
                "catalog export",
                format!("its format is '{}', not '{EXPORT_FORMAT}'", export.format),
            ));
        }
        super::check_schema_version(Some(export.schema_version))?;
        let Some(active) = &export.active_map else {
            return Err(Error::invalid_argument("catalog export", "it holds no active map"));
        };
        let active_map = ShardMap::new(active.clone())?;
        if let Some(pending) = &export.pending_map {
            ShardMap::new(pending.clone())?;
        }
        if let Some(existing) = self.active_options().await? {
            return Err(Error::Catalog {
                reason: format!(
                    "'{}' already holds a map (keyspace '{}', version {}): import into an empty catalog",
                    self.location(),
                    existing.keyspace,
                    existing.map_version
                ),
            });
        }
        self.ensure_schema().await?;
        let store = self.store();
        store.append_history(&export.history).await?;
        for record in export.migrations.iter().rev() {
            let state: crate::data::ReshardResult = serde_json::from_value(record.clone()).map_err(|err| {
                Error::invalid_argument("catalog export", format!("a migration does not parse: {err}"))
            })?;
            self.save_migration_checkpoint(&state).await?;
        }
        let payloads: Vec<String> = export.migration_history.iter().map(Json::to_string).collect();
        store.append_migration_history(&payloads).await?;
        let map = |options: &ShardingOptions| NewMap {
            keyspace: options.keyspace.trim().to_owned(),
            version: u64::try_from(options.map_version).unwrap_or(0),
            json: options.to_json(),
        };
        let history = HistoryRow {
            keyspace: active_map.keyspace().to_owned(),
            version: active_map.version(),
            audit: Audit::by("import").because("imported from a catalog export"),
            metadata_only: false,
        };
        store
            .import_maps(&map(active), export.pending_map.as_ref().map(map).as_ref(), &history)
            .await
    }
}
