//! Shard directories through a sharded client: resolving a lookup key on the live map, the six
//! entry mutations as pending maps (activated in the same call when asked), listing entries, and
//! a client bound to a lookup key's route.

use async_trait::async_trait;

use super::ShardedClient;
use crate::client::RoutedClient;
use crate::data::{
    ActivationRequest, Audit, DirectoryAdmin, DirectoryEntryPage, DirectoryEntryQuery, DirectoryImport,
    DirectoryImportEntry, DirectoryImportOutcome, DirectoryLookup, DirectoryMutation, DirectoryMutationResult,
    DirectoryOperation, DirectoryResolution,
};
use crate::error::{Error, Result};
use crate::routing::RouteContext;

/// The shard directories of a [`ShardedClient`], handed out by [`ShardedClient::directories`];
/// the in-process [`DirectoryAdmin`].
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::client::{ShardedClient, SqlData};
/// use shardlite::data::{DirectoryMutation, DirectoryOperation};
///
/// let sharded = ShardedClient::open("data/master.db").await?;
/// let directories = sharded.directories();
/// let upsert = DirectoryMutation::new("orders_by_id", "SO-1").route("orders_by_month", "2026-06").activating();
/// directories.mutate(DirectoryOperation::Upsert, &upsert).await?;
/// let order = directories.for_lookup("orders_by_id", "SO-1").await?;
/// order.execute_sql("SELECT * FROM orders WHERE order_number = 'SO-1'", Default::default()).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ShardedDirectories<'a> {
    sharded: &'a ShardedClient,
}

impl<'a> ShardedDirectories<'a> {
    pub(super) fn new(sharded: &'a ShardedClient) -> Self {
        Self { sharded }
    }

    /// Resolves a lookup key on the live map.
    pub async fn resolve(self, lookup: &DirectoryLookup) -> Result<DirectoryResolution> {
        let generation = self.sharded.inner.fresh().await;
        crate::directory::resolve(&generation.map, lookup)
    }

    /// The client bound to the route of an `Active` entry: every call runs on the shard that
    /// route resolves to, following it across activations like any route-bound client.
    pub async fn for_lookup(self, directory: &str, lookup_key: &str) -> Result<RoutedClient> {
        let found = self.resolve(&DirectoryLookup::new(directory, lookup_key)).await?;
        let route = RouteContext::new(&found.entry.target_keyspace, &found.entry.route_key)?;
        Ok(self.sharded.for_route(route))
    }

    /// Changes one entry as a pending map in the catalog (compare-and-set on
    /// `expectedCurrentMapVersion`), and with `activate` makes that map active here at once.
    pub async fn mutate(
        self,
        operation: DirectoryOperation,
        mutation: &DirectoryMutation,
    ) -> Result<DirectoryMutationResult> {
        let catalog = self.sharded.catalog().master().ok_or_else(|| Error::Catalog {
            reason: "directory changes need a client opened from a master catalog, not a map held in memory".to_owned(),
        })?;
        let mut result = catalog.mutate_directory(operation, mutation).await?;
        if mutation.activate
            && let Some(version) = result.pending_map_version
        {
            let audit = Audit::new(mutation.operator.clone(), mutation.comment.clone())
                .or_because(|| format!("activated with shard directory {}", operation.as_str()));
            self.sharded
                .catalog()
                .activate(&ActivationRequest::new(version).audit(audit))
                .await?;
            result.requires_activation = false;
        }
        Ok(result)
    }

    /// Upserts the entries of `import` in bulk as one pending map (see
    /// [`Catalog::import_directory`](crate::catalog::Catalog::import_directory)), activated here
    /// at once when `import.activate` is set and any entry changed.
    pub async fn import(self, import: &DirectoryImport) -> Result<DirectoryImportOutcome> {
        let catalog = self.sharded.catalog().master().ok_or_else(|| Error::Catalog {
            reason: "directory changes need a client opened from a master catalog, not a map held in memory".to_owned(),
        })?;
        let entries: Vec<DirectoryMutation> = import.entries.iter().map(DirectoryImportEntry::to_mutation).collect();
        let audit = import.audit();
        let mut outcome = catalog
            .import_directory(&entries, import.expected_current_map_version, audit.clone())
            .await?;
        if import.activate
            && let Some(version) = outcome.pending_map_version
        {
            let audit = audit.or_because(|| "activated with shard directory import".to_owned());
            self.sharded
                .catalog()
                .activate(&ActivationRequest::new(version).audit(audit))
                .await?;
            outcome.activated = true;
        }
        Ok(outcome)
    }

    /// One page of a directory's entries on the live map.
    pub async fn entries(self, directory: &str, query: &DirectoryEntryQuery) -> Result<DirectoryEntryPage> {
        let generation = self.sharded.inner.fresh().await;
        crate::directory::entries(&generation.map, directory, query)
    }
}

#[async_trait]
impl DirectoryAdmin for ShardedClient {
    async fn resolve_directory_entry(&self, lookup: &DirectoryLookup) -> Result<DirectoryResolution> {
        self.directories().resolve(lookup).await
    }
    async fn mutate_directory_entry(
        &self,
        operation: DirectoryOperation,
        mutation: &DirectoryMutation,
    ) -> Result<DirectoryMutationResult> {
        self.directories().mutate(operation, mutation).await
    }
    async fn directory_entries(&self, directory: &str, query: &DirectoryEntryQuery) -> Result<DirectoryEntryPage> {
        self.directories().entries(directory, query).await
    }
    async fn import_directory_entries(&self, import: &DirectoryImport) -> Result<DirectoryImportOutcome> {
        self.directories().import(import).await
    }
}
