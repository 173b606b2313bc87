//! The data model every layer shares: values, parameters, results, rows, documents and schema
//! types, transaction info, shard status, data-host shard lists and catalog snapshots, and the
//! [`DataClient`] contract (its parts [`SqlData`], [`RowData`], [`DocumentData`], [`StoredData`]
//! and [`TransactionData`]) and the [`ShardAdmin`] contract (its parts [`Topology`], [`FanOut`],
//! [`CatalogAdmin`] and [`SchemaAdmin`]).
//!
//! These types sit below the engine that produces them and the transports that carry them, so
//! the engine, the catalog, the remote clients, the in-process clients and the daemon all speak
//! the same types without knowing each other. Code written against `dyn DataClient` works
//! unchanged in-process and over the network.

/// Gives `$public`, whose Rust shape differs from its JSON, the OpenAPI schema of `$form`, the
/// private struct its JSON goes through (`#[serde(from, into)]`), under `$public`'s own name: the
/// document describes the JSON exactly as before.
macro_rules! schema_from_form {
    ($public:ident, $form:ty) => {
        schema_from_form!($public as $public, $form);
    };
    ($public:ident as $name:ident, $form:ty) => {
        #[cfg(feature = "server")]
        impl utoipa::PartialSchema for $public {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                <$form as utoipa::PartialSchema>::schema()
            }
        }

        #[cfg(feature = "server")]
        impl utoipa::ToSchema for $public {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed(stringify!($name))
            }

            fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>)>) {
                <$form as utoipa::ToSchema>::schemas(schemas);
            }
        }
    };
}

mod admin;
mod atomic;
mod audit;
mod backup;
mod catalog;
mod directory;
mod directory_import;
mod host;
mod interface;
#[cfg(feature = "server")]
pub mod openapi;
mod params;
mod records;
mod reshard;
mod row;
mod schema;
mod status;
mod value;

pub use admin::{CatalogHistoryEntry, CatalogState, ShardSqlResult, ShardStatus};
pub use atomic::{
    AtomicDecisionFound, AtomicIntent, AtomicParticipant, AtomicPrepare, AtomicPrepared, AtomicState, AtomicStepKind,
    AtomicStepOutcome, AtomicStepRequest, Decision, DecisionState, Finished, SharedParticipant,
};
pub use audit::Audit;
pub(crate) use audit::now_utc;
pub use backup::{
    ArchiveLagEntry, BackupManifest, BackupOverview, BackupSetSummary, FileStamp, MANIFEST_FORMAT, ShardCopy,
    StoredFile,
};
pub use catalog::{
    ActivationRequest, ActivationResult, CatalogApplyResult, CatalogIssue, CatalogUpdateRequest, CatalogValidation,
    IssueSeverity, MapProposal, MovedBuckets, MovedPin, ShardChange, ShardChangeKind,
};
pub use directory::{
    DirectoryAdmin, DirectoryEntryPage, DirectoryEntryQuery, DirectoryLookup, DirectoryMutation,
    DirectoryMutationResult, DirectoryOperation, DirectoryResolution, MAX_DIRECTORY_PAGE, MutationStatus,
};
pub use directory_import::{DirectoryImport, DirectoryImportEntry, DirectoryImportOutcome};
pub use host::{HostAdmin, HostShardCreated, HostShardPage, HostShardQuery, MAX_HOST_SHARD_PAGE};
pub use interface::{
    CatalogAdmin, DataClient, DocumentData, FanOut, RowData, SchemaAdmin, ShardAdmin, SqlData, StoredData, Topology,
    TransactionData,
};
pub use params::Params;
pub use records::{
    ColumnInfo, DatabaseInfo, Document, DocumentPage, ProcedureDefinition, ProcedureParameter, Row, RowPage,
    SavedQuery, SqlResult, TableSchema, TransactionInfo, TransactionOptions,
};
#[cfg(any(feature = "http", feature = "grpc"))]
pub(crate) use reshard::ReshardBody;
#[cfg(feature = "server")]
pub(crate) use reshard::{BucketReshardBody, KeyReshardBody};
pub use reshard::{
    CollectionManifest, OnlineProgress, PlannedItem, ReshardAdmin, ReshardManifest, ReshardPhase, ReshardPlan,
    ReshardReceipt, ReshardRequest, ReshardResult, ReshardScope, ReshardSpec, ReshardStatus, ResumeRequest,
    TableManifest,
};
pub use row::{FromValue, RowRef, ValueRef};
pub(crate) use row::{every_row, first_row};
pub use schema::{
    SchemaChange, SchemaMigrationReport, SchemaMigrationRequest, SchemaMigrationState, SchemaObjectDiff, SchemaScript,
    SchemaStatusReport, SchemaStep, ShardSchemaOutcome, ShardSchemaStatus,
};
pub use status::{MAX_STATUS_PAGE, ShardStatusPage, ShardStatusQuery, ShardStatusSummary, is_unhealthy};
pub use value::Value;
