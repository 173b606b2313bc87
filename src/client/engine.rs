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
        self.tables().list_tables().await
    }
    async fn table_schema(&self, table: &str) -> Result<TableSchema> {
        self.tables().table_schema(table).await
    }
    async fn count_rows(&self, table: &str) -> Result<u64> {
        self.tables().count_rows(table).await
    }
    async fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> Result<RowPage> {
        self.tables().browse_rows(table, page, page_size).await
    }
    async fn get_row(&self, table: &str, key: Value) -> Result<Option<Row>> {
        self.tables().get_row(table, key).await
    }
    async fn insert_row(&self, table: &str, values: Row) -> Result<u64> {
        self.tables().insert_row(table, values).await
    }
    async fn update_row(&self, table: &str, key: Value, values: Row) -> Result<u64> {
        self.tables().update_row(table, key, values).await
    }
    async fn delete_row(&self, table: &str, key: Value) -> Result<u64> {
        self.tables().delete_row(table, key).await
    }
}

#[async_trait]
impl DocumentData for Database {
    async fn list_collections(&self) -> Result<Vec<String>> {
        self.collections().list_collections().await
    }
    async fn count_documents(&self, collection: &str) -> Result<u64> {
        self.collections().count_documents(collection).await
    }
    async fn browse_documents(&self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage> {
        self.collections().browse_documents(collection, page, page_size).await
    }
    async fn get_document(&self, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
        self.collections().get_document(collection, key).await
    }
    async fn put_document(&self, collection: &str, key: &str, document: serde_json::Value) -> Result<()> {
        self.collections().put_document(collection, key, document).await
    }
    async fn delete_document(&self, collection: &str, key: &str) -> Result<bool> {
        self.collections().delete_document(collection, key).await
    }
    async fn drop_collection(&self, collection: &str) -> Result<bool> {
        self.collections().drop_collection(collection).await
    }
}

#[async_trait]
impl StoredData for Database {
    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>> {
        self.saved_queries().list_saved_queries().await
    }
    async fn get_saved_query(&self, name: &str) -> Result<Option<SavedQuery>> {
        self.saved_queries().get_saved_query(name).await
    }
    async fn put_saved_query(&self, name: &str, sql_text: &str) -> Result<SavedQuery> {
        self.saved_queries().put_saved_query(name, sql_text).await
    }
    async fn delete_saved_query(&self, name: &str) -> Result<bool> {
        self.saved_queries().delete_saved_query(name).await
    }
    async fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>> {
        self.procedures().list_procedures().await
    }
    async fn get_procedure(&self, name: &str) -> Result<Option<ProcedureDefinition>> {
        self.procedures().get_procedure(name).await
    }
    async fn put_procedure(&self, definition: ProcedureDefinition) -> Result<ProcedureDefinition> {
        self.procedures().put_procedure(definition).await
    }
    async fn delete_procedure(&self, name: &str) -> Result<bool> {
        self.procedures().delete_procedure(name).await
    }
    async fn execute_procedure(&self, name: &str, args: Params) -> Result<SqlResult> {
        self.procedures().execute_procedure(name, args).await
    }
}
