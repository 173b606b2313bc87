//! Every operation the daemon serves, once: its name and the scope an API key needs for it.
//!
//! REST operations are found by their OpenAPI `operationId` with the first letter upper-cased
//! (`executeSql` is `ExecuteSql`), gRPC methods by their name, so an operation both surfaces
//! serve has one entry and one scope. The table is also what the metrics count by: an
//! operation's position is its [`OperationId`], and its name is the `operation` label.
//!
//! The scopes follow the contract: `read` for queries, reads, read-only SQL (`ExecuteSql`,
//! transactions and running a procedure too, run read-only), read-only fan-out, merged reads and
//! status (a data host's shard list too), resolving a shard directory's lookup key and listing its
//! entries; `write` for everything that changes data and for transactions; `admin` for the
//! catalog, shard directory changes, data migrations, schema migrations, `exec-all`, backup sets
//! and creating a data host's shard files.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::keys::Scope;

/// What an operation requires of the caller's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Any valid key (or none, on a daemon without keys): the OpenAPI document.
    AnyKey,
    /// A key holding this scope, for the daemon's keyspace.
    Scope(Scope),
    /// SQL (on its own, in a transaction or as a procedure's body): a key holding `write` runs it
    /// as sent, one holding `read` alone runs it read-only (see
    /// [`SqlAccess`](super::sql_access::SqlAccess)).
    Sql,
}

impl Needs {
    /// The scope that allows the operation fully, when one is needed (`write` for SQL, which
    /// `read` allows read-only).
    pub fn scope(self) -> Option<Scope> {
        match self {
            Self::AnyKey => None,
            Self::Scope(scope) => Some(scope),
            Self::Sql => Some(Scope::Write),
        }
    }
}

use Needs::AnyKey;
use Scope::{Admin, Read, Write};

const fn s(scope: Scope) -> Needs {
    Needs::Scope(scope)
}

/// The table: name and requirement of every REST operation and gRPC method.
pub const OPERATIONS: &[(&str, Needs)] = &[
    // Reads, status, read-only fan-out and merged reads.
    ("GetInfo", s(Read)),
    ("ExecuteReadOnlySql", s(Read)),
    ("ListTables", s(Read)),
    ("GetTableSchema", s(Read)),
    ("CountRows", s(Read)),
    ("BrowseRows", s(Read)),
    ("GetRow", s(Read)),
    ("ListCollections", s(Read)),
    ("CountDocuments", s(Read)),
    ("BrowseDocuments", s(Read)),
    ("GetDocument", s(Read)),
    ("ListSavedQueries", s(Read)),
    ("GetSavedQuery", s(Read)),
    ("ListProcedures", s(Read)),
    ("GetProcedure", s(Read)),
    ("GetShardMap", s(Read)),
    ("ResolveShardRoute", s(Read)),
    ("GetShardStatus", s(Read)),
    ("GetShardStatusPage", s(Read)),
    ("GetShardHeat", s(Read)),
    ("ListAtomicTransactions", s(Read)),
    ("ExecuteReadOnlySqlOnAllShards", s(Read)),
    ("QueryAllShards", s(Read)),
    ("ListHostShards", s(Read)),
    ("ResolveShardDirectoryEntry", s(Read)),
    ("ListShardDirectoryEntries", s(Read)),
    // Data changes and transactions.
    ("ExecuteSql", Needs::Sql),
    ("BeginTransaction", Needs::Sql),
    ("ExecuteInTransaction", Needs::Sql),
    ("CommitTransaction", Needs::Sql),
    ("RollbackTransaction", Needs::Sql),
    // The participant calls of atomic transactions another daemon coordinates (REST
    // `/api/atomic/*` and the gRPC methods of the same names).
    ("BeginAtomicSession", s(Write)),
    ("ExecuteInAtomicSession", s(Write)),
    ("PrepareAtomicSession", s(Write)),
    ("RollbackAtomicSession", s(Write)),
    ("RunAtomicStep", s(Write)),
    ("GetAtomicDecision", s(Write)),
    ("GetAtomicState", s(Write)),
    ("InsertRow", s(Write)),
    ("UpdateRow", s(Write)),
    ("DeleteRow", s(Write)),
    ("PutDocument", s(Write)),
    ("DeleteDocument", s(Write)),
    ("DropCollection", s(Write)),
    ("PutSavedQuery", s(Write)),
    ("DeleteSavedQuery", s(Write)),
    ("CreateProcedure", s(Write)),
    ("PutProcedure", s(Write)),
    ("DeleteProcedure", s(Write)),
    ("ExecuteProcedure", Needs::Sql),
    // The catalog, data migrations, schema migrations and exec-all.
    ("ExecuteSqlOnAllShards", s(Admin)),
    ("GetShardCatalog", s(Admin)),
    ("ValidateShardCatalogUpdate", s(Admin)),
    ("ApplyShardCatalogUpdate", s(Admin)),
    ("ActivateShardCatalog", s(Admin)),
    ("GetShardSchemaStatus", s(Admin)),
    ("MigrateShardSchema", s(Admin)),
    ("MigrateExactRouteKey", s(Admin)),
    ("MigrateBucketRange", s(Admin)),
    ("GetShardMigrations", s(Admin)),
    ("GetShardMigrationHistory", s(Admin)),
    ("GetShardMigrationProgress", s(Admin)),
    ("ResumeShardMigration", s(Admin)),
    ("AbandonShardMigration", s(Admin)),
    ("ReserveShardDirectoryEntry", s(Admin)),
    ("ActivateShardDirectoryEntry", s(Admin)),
    ("UpsertShardDirectoryEntry", s(Admin)),
    ("DisableShardDirectoryEntry", s(Admin)),
    ("DeleteShardDirectoryEntry", s(Admin)),
    ("MarkShardDirectoryEntryStale", s(Admin)),
    ("ImportShardDirectoryEntries", s(Admin)),
    ("CreateBackup", s(Admin)),
    ("ListBackups", s(Admin)),
    ("GetBackupOverview", s(Admin)),
    // A data host's shard files.
    ("CreateHostShard", s(Admin)),
    // Meta.
    ("GetOpenApiDocument", AnyKey),
];

/// An operation's position in [`OPERATIONS`], or [`OperationId::OTHER`] for a request no
/// operation serves (an unknown path, a wrong method, the admin page).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OperationId(u16);

impl OperationId {
    /// Requests no operation serves.
    pub const OTHER: Self = Self(u16::MAX);

    /// How many ids there are, [`OTHER`](Self::OTHER) included: the size of a table indexed by
    /// [`index`](Self::index).
    pub const COUNT: usize = OPERATIONS.len() + 1;

    /// The operation named `name` (a gRPC method name, or an upper-cased `operationId`).
    pub fn of(name: &str) -> Option<Self> {
        static BY_NAME: OnceLock<HashMap<&'static str, u16>> = OnceLock::new();
        let by_name = BY_NAME.get_or_init(|| {
            OPERATIONS
                .iter()
                .enumerate()
                .filter_map(|(index, (name, _))| u16::try_from(index).ok().map(|index| (*name, index)))
                .collect()
        });
        by_name.get(name).copied().map(Self)
    }

    /// The operation of a REST `operationId` (`executeSql`).
    pub fn of_rest(operation_id: &str) -> Option<Self> {
        let mut chars = operation_id.chars();
        let first = chars.next()?;
        let name: String = first.to_uppercase().chain(chars).collect();
        Self::of(&name)
    }

    /// A dense index: the position in [`OPERATIONS`], and `OPERATIONS.len()` for
    /// [`OTHER`](Self::OTHER).
    pub fn index(self) -> usize {
        if self == Self::OTHER {
            OPERATIONS.len()
        } else {
            usize::from(self.0)
        }
    }

    /// The operation's name (`other` for [`OTHER`](Self::OTHER)): the metrics' `operation` label.
    pub fn name(self) -> &'static str {
        OPERATIONS.get(usize::from(self.0)).map_or("other", |(name, _)| name)
    }

    /// What the operation requires of the caller's key. Requests no operation serves need any
    /// valid key (they are answered 404 or 405 once it is presented).
    pub fn needs(self) -> Needs {
        OPERATIONS.get(usize::from(self.0)).map_or(AnyKey, |(_, needs)| *needs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_resolve_to_themselves() {
        for (index, (name, needs)) in OPERATIONS.iter().enumerate() {
            let id = OperationId::of(name).expect(name);
            assert_eq!(id.index(), index, "{name} is listed twice");
            assert_eq!((id.name(), id.needs()), (*name, *needs));
        }
        assert_eq!(
            OperationId::of_rest("executeSql").map(OperationId::name),
            Some("ExecuteSql")
        );
        assert_eq!(OperationId::of("NoSuchThing"), None);
        assert_eq!(OperationId::OTHER.name(), "other");
        assert_eq!(OperationId::OTHER.index(), OperationId::COUNT - 1);
    }

    /// Every RPC of the proto has a scope decision (the daemon tests call each with every scope).
    #[test]
    fn every_rpc_has_a_scope_decision() {
        let proto = include_str!("../../proto/shardlite.proto");
        let rpcs: Vec<&str> = proto
            .lines()
            .filter_map(|line| line.trim().strip_prefix("rpc "))
            .filter_map(|rest| rest.split('(').next())
            .map(str::trim)
            .collect();
        assert!(rpcs.len() > 40, "{rpcs:?}");
        for rpc in rpcs {
            assert!(
                OperationId::of(rpc).is_some(),
                "gRPC method {rpc} has no scope decision"
            );
        }
    }
}
