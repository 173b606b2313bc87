//! The engine handle's side of the data contract: a [`Database`] answers the row, document and
//! stored-SQL parts itself, so that [`LocalClient`](super::LocalClient) hands them over as they
//! are. SQL, info and transactions, which need the local client's own handling (transaction
//! info, for one), are the local client's.

use async_trait::async_trait;

use crate::data::{
    DocumentData, DocumentPage, Params, ProcedureDefinition, Row, RowData, RowPage, SavedQuery, SqlResult, StoredData,
    TableSchema, Value,
};
use crate::engine::Database;
use crate::error::Result;

#[async_trait]
impl RowData for Database {
    async fn list_tables(&self) -> Result<Vec<String>> {
        Database::list_tables(self).await
    }
    async fn table_schema(&self, table: &str) -> Result<TableSchema> {
        Database::table_schema(self, table).await
    }
    async fn count_rows(&self, table: &str) -> Result<u64> {
        Database::count_rows(self, table).await
    }
    async fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> Result<RowPage> {
        Database::browse_rows(self, table, page, page_size).await
    }
    async fn get_row(&self, table: &str, key: Value) -> Result<Option<Row>> {
        Database::get_row(self, table, key).await
    }
    async fn insert_row(&self, table: &str, values: Row) -> Result<u64> {
        Database::insert_row(self, table, values).await
    }
    async fn update_row(&self, table: &str, key: Value, values: Row) -> Result<u64> {
        Database::update_row(self, table, key, values).await
    }
    async fn delete_row(&self, table: &str, key: Value) -> Result<u64> {
        Database::delete_row(self, table, key).await
    }
}

#[async_trait]
impl DocumentData for Database {
    async fn list_collections(&self) -> Result<Vec<String>> {
        Database::list_collections(self).await
    }
    async fn count_documents(&self, collection: &str) -> Result<u64> {
        Database::count_documents(self, collection).await
    }
    async fn browse_documents(&self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage> {
        Database::browse_documents(self, collection, page, page_size).await
    }
    async fn get_document(&self, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
        Database::get_document(self, collection, key).await
    }
    async fn put_document(&self, collection: &str, key: &str, document: serde_json::Value) -> Result<()> {
        Database::put_document(self, collection, key, document).await
    }
    async fn delete_document(&self, collection: &str, key: &str) -> Result<bool> {
        Database::delete_document(self, collection, key).await
    }
    async fn drop_collection(&self, collection: &str) -> Result<bool> {
        Database::drop_collection(self, collection).await
    }
}

#[async_trait]
impl StoredData for Database {
    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>> {
        Database::list_saved_queries(self).await
    }
    async fn get_saved_query(&self, name: &str) -> Result<Option<SavedQuery>> {
        Database::get_saved_query(self, name).await
    }
    async fn put_saved_query(&self, name: &str, sql_text: &str) -> Result<SavedQuery> {
        Database::put_saved_query(self, name, sql_text).await
    }
    async fn delete_saved_query(&self, name: &str) -> Result<bool> {
        Database::delete_saved_query(self, name).await
    }
    async fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>> {
        Database::list_procedures(self).await
    }
    async fn get_procedure(&self, name: &str) -> Result<Option<ProcedureDefinition>> {
        Database::get_procedure(self, name).await
    }
    async fn put_procedure(&self, definition: ProcedureDefinition) -> Result<ProcedureDefinition> {
        Database::put_procedure(self, definition).await
    }
    async fn delete_procedure(&self, name: &str) -> Result<bool> {
        Database::delete_procedure(self, name).await
    }
    async fn execute_procedure(&self, name: &str, args: Params) -> Result<SqlResult> {
        Database::execute_procedure(self, name, args).await
    }
}
