//! Shard directories ([`DirectoryAdmin`]) through a daemon's REST endpoints.

use async_trait::async_trait;

use super::HttpClient;
use crate::data::{
    DirectoryAdmin, DirectoryEntryPage, DirectoryEntryQuery, DirectoryImport, DirectoryImportOutcome, DirectoryLookup,
    DirectoryMutation, DirectoryMutationResult, DirectoryOperation, DirectoryResolution,
};
use crate::error::Result;

#[async_trait]
impl DirectoryAdmin for HttpClient {
    async fn resolve_directory_entry(&self, lookup: &DirectoryLookup) -> Result<DirectoryResolution> {
        self.json(self.post(&["sharding", "directory", "resolve"]).json(lookup))
            .await
    }

    async fn mutate_directory_entry(
        &self,
        operation: DirectoryOperation,
        mutation: &DirectoryMutation,
    ) -> Result<DirectoryMutationResult> {
        // The daemon answers a refused change with 400 and the result; in process that is a
        // result (`succeeded: false`), not an error.
        let request = self.post(&["sharding", "directory", operation.as_str()]).json(mutation);
        match self.call(request).await {
            Ok(response) => self.read_json(response).await,
            Err(failure) => failure.into_refused_mutation(),
        }
    }

    async fn directory_entries(&self, directory: &str, query: &DirectoryEntryQuery) -> Result<DirectoryEntryPage> {
        query.check()?;
        let request = self.get(&["sharding", "directory", directory, "entries"]).query(query);
        self.json(request).await
    }

    async fn import_directory_entries(&self, import: &DirectoryImport) -> Result<DirectoryImportOutcome> {
        // A refused load is answered 400 with the refused entry's index and result; in process
        // that is an outcome naming them, not an error.
        let request = self.post(&["sharding", "directory", "import"]).json(import);
        match self.call(request).await {
            Ok(response) => self.read_json(response).await,
            Err(failure) => failure.into_refused_import(),
        }
    }
}
