//! What [`LocalClient`](super::LocalClient)'s forwarded `DataClient` methods call: the engine
//! handle's parts ([`Database::tables`], [`Database::collections`],
//! [`Database::saved_queries`], [`Database::procedures`]) under the method names
//! [`impl_data_client!`](super::forward::impl_data_client) forwards to.

use crate::data::{DocumentPage, Params, ProcedureDefinition, Row, RowPage, SavedQuery, SqlResult, TableSchema, Value};
use crate::engine::Database;
use crate::error::Result;

/// A [`Database`] seen through its parts.
pub(super) struct Parts<'db>(pub(super) &'db Database);

/// Writes methods that call the method of the same name on one part of the database.
macro_rules! forward {
    ($($part:ident { $(fn $name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)* })*) => {
        impl Parts<'_> {
            $($(
                pub(super) async fn $name(&self, $($arg: $ty),*) -> Result<$out> {
                    self.0.$part().$name($($arg),*).await
                }
            )*)*
        }
    };
}

forward! {
    tables {
        fn list_tables() -> Vec<String>;
        fn table_schema(table: &str) -> TableSchema;
        fn count_rows(table: &str) -> u64;
        fn browse_rows(table: &str, page: u32, page_size: u32) -> RowPage;
        fn get_row(table: &str, key: Value) -> Option<Row>;
        fn insert_row(table: &str, values: Row) -> u64;
        fn update_row(table: &str, key: Value, values: Row) -> u64;
        fn delete_row(table: &str, key: Value) -> u64;
    }
    collections {
        fn list_collections() -> Vec<String>;
        fn count_documents(collection: &str) -> u64;
        fn browse_documents(collection: &str, page: u32, page_size: u32) -> DocumentPage;
        fn get_document(collection: &str, key: &str) -> Option<serde_json::Value>;
        fn put_document(collection: &str, key: &str, document: serde_json::Value) -> ();
        fn delete_document(collection: &str, key: &str) -> bool;
        fn drop_collection(collection: &str) -> bool;
    }
    saved_queries {
        fn list_saved_queries() -> Vec<SavedQuery>;
        fn get_saved_query(name: &str) -> Option<SavedQuery>;
        fn put_saved_query(name: &str, sql_text: &str) -> SavedQuery;
        fn delete_saved_query(name: &str) -> bool;
    }
    procedures {
        fn list_procedures() -> Vec<ProcedureDefinition>;
        fn get_procedure(name: &str) -> Option<ProcedureDefinition>;
        fn put_procedure(definition: ProcedureDefinition) -> ProcedureDefinition;
        fn delete_procedure(name: &str) -> bool;
        fn execute_procedure(name: &str, args: Params) -> SqlResult;
    }
}
