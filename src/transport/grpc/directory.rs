//! Shard directories ([`DirectoryAdmin`]) through a daemon's gRPC service.

use async_trait::async_trait;

use super::{GrpcClient, pb};
use crate::data::{
    DirectoryAdmin, DirectoryEntryPage, DirectoryEntryQuery, DirectoryImport, DirectoryImportOutcome, DirectoryLookup,
    DirectoryMutation, DirectoryMutationResult, DirectoryOperation, DirectoryResolution,
};
use crate::error::Result;

#[async_trait]
impl DirectoryAdmin for GrpcClient {
    async fn resolve_directory_entry(&self, lookup: &DirectoryLookup) -> Result<DirectoryResolution> {
        let request = pb::ShardDirectoryLookup::from(lookup.clone());
        rpc!(self, resolve_shard_directory_entry, request)?.try_into()
    }

    async fn mutate_directory_entry(
        &self,
        operation: DirectoryOperation,
        mutation: &DirectoryMutation,
    ) -> Result<DirectoryMutationResult> {
        let request = pb::ShardDirectoryMutation::from(mutation.clone());
        let reply = match operation {
            DirectoryOperation::Reserve => rpc!(self, reserve_shard_directory_entry, request),
            DirectoryOperation::Activate => rpc!(self, activate_shard_directory_entry, request),
            DirectoryOperation::Upsert => rpc!(self, upsert_shard_directory_entry, request),
            DirectoryOperation::Disable => rpc!(self, disable_shard_directory_entry, request),
            DirectoryOperation::Delete => rpc!(self, delete_shard_directory_entry, request),
            DirectoryOperation::MarkStale => rpc!(self, mark_shard_directory_entry_stale, request),
        }?;
        reply.try_into()
    }

    async fn directory_entries(&self, directory: &str, query: &DirectoryEntryQuery) -> Result<DirectoryEntryPage> {
        query.check()?;
        let request = pb::ShardDirectoryEntriesRequest {
            directory_name: directory.to_owned(),
            after: query.after.clone(),
            limit: query.limit,
        };
        rpc!(self, list_shard_directory_entries, request)?.try_into()
    }

    async fn import_directory_entries(&self, import: &DirectoryImport) -> Result<DirectoryImportOutcome> {
        let request = pb::ShardDirectoryImport::from(import.clone());
        rpc!(self, import_shard_directory_entries, request)?.try_into()
    }
}
