//! The shard directory RPCs: a lookup and a page of entries on the live map, and the six entry
//! changes as pending maps. A refused change is an answer (`succeeded` false), as in process.

use super::call::Call;

/// Short names for the shard directory messages, so each of their handlers fits a line.
pub(super) mod names {
    pub(in crate::server::grpc) use crate::wire::proto::{
        ShardDirectoryEntriesRequest as EntriesRequest, ShardDirectoryEntryPage as Page,
        ShardDirectoryImport as Import, ShardDirectoryImportOutcome as Outcome, ShardDirectoryLookup as Lookup,
        ShardDirectoryMutation as Mutation, ShardDirectoryMutationResult as Result,
        ShardDirectoryResolution as Resolution,
    };
}
use crate::data::{DirectoryImport, DirectoryMutation, DirectoryOperation};
use crate::error::Result;
use crate::wire::proto as pb;

pub(super) async fn resolve(call: Call, request: pb::ShardDirectoryLookup) -> Result<pb::ShardDirectoryResolution> {
    let sharded = call.admin()?;
    Ok(sharded.directories().resolve(&request.into()).await?.into())
}

pub(super) async fn entries(
    call: Call,
    request: pb::ShardDirectoryEntriesRequest,
) -> Result<pb::ShardDirectoryEntryPage> {
    let sharded = call.admin()?;
    let directory = request.directory_name.clone();
    Ok(sharded.directories().entries(&directory, &request.into()).await?.into())
}

pub(super) async fn import(call: Call, request: pb::ShardDirectoryImport) -> Result<pb::ShardDirectoryImportOutcome> {
    let sharded = call.admin()?;
    let import = DirectoryImport::from(request);
    Ok(sharded.directories().import(&import).await?.into())
}

async fn mutate(
    call: Call,
    operation: DirectoryOperation,
    request: pb::ShardDirectoryMutation,
) -> Result<pb::ShardDirectoryMutationResult> {
    let sharded = call.admin()?;
    let mutation = DirectoryMutation::from(request);
    Ok(sharded.directories().mutate(operation, &mutation).await?.into())
}

/// One handler per change, each with the `run` signature.
macro_rules! mutation_handler {
    ($($name:ident => $operation:ident),* $(,)?) => {$(
        pub(super) async fn $name(
            call: Call,
            request: pb::ShardDirectoryMutation,
        ) -> Result<pb::ShardDirectoryMutationResult> {
            mutate(call, DirectoryOperation::$operation, request).await
        }
    )*};
}

mutation_handler!(
    reserve => Reserve,
    activate => Activate,
    upsert => Upsert,
    disable => Disable,
    delete => Delete,
    mark_stale => MarkStale,
);
