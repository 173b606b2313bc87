//! A client over one local SQLite file.

use std::path::Path;
use std::time::SystemTime;

use async_trait::async_trait;

use super::{
    DataClient, DatabaseInfo, DocumentPage, Params, ProcedureDefinition, Row, RowPage, SavedQuery, SqlResult,
    TableSchema, TransactionInfo, Value,
};
use crate::engine::{Database, EngineConfig};
use crate::error::Result;

/// A [`DataClient`] over one SQLite file (a shard, or a plain unsharded database).
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::client::{DataClient, LocalClient, Params};
///
/// let db = LocalClient::open("app.db").await?;
/// db.execute_sql("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT)", Params::none()).await?;
/// db.execute_sql("INSERT INTO t (v) VALUES (?1)", Params::from(vec!["hello"])).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LocalClient {
    db: Database,
}

impl LocalClient {
    /// Opens (creating if needed) a database file with default settings.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let label = path
            .file_name()
            .map_or_else(|| "database".to_owned(), |n| n.to_string_lossy().into_owned());
        Self::open_with(path, label, EngineConfig::default()).await
    }

    /// Opens a database file with a label for errors and explicit settings.
    pub async fn open_with(path: impl AsRef<Path>, label: impl Into<String>, config: EngineConfig) -> Result<Self> {
        Ok(Self {
            db: Database::open(path, label, config).await?,
        })
    }

    /// The engine handle.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// A health probe.
    pub async fn probe(&self) -> Result<()> {
        self.db.probe().await
    }

    /// Rolls back a transaction without waiting (for guards being dropped).
    pub fn abandon_transaction(&self, transaction_id: &str) {
        self.db.session_abandon(transaction_id);
    }

    /// When a transaction expires if left idle from now.
    pub fn transaction_expires_at(&self, transaction_id: &str) -> Option<SystemTime> {
        self.db.session_expires_at(transaction_id)
    }
}

pub(crate) fn format_utc(at: SystemTime) -> String {
    time::OffsetDateTime::from(at)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[async_trait]
impl DataClient for LocalClient {
    async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.db.execute(sql, params).await
    }
    async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.db.execute_read_only(sql, params).await
    }
    async fn info(&self) -> Result<DatabaseInfo> {
        self.db.info().await
    }
    async fn list_tables(&self) -> Result<Vec<String>> {
        self.db.list_tables().await
    }
    async fn table_schema(&self, table: &str) -> Result<TableSchema> {
        self.db.table_schema(table).await
    }
    async fn count_rows(&self, table: &str) -> Result<u64> {
        self.db.count_rows(table).await
    }
    async fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> Result<RowPage> {
        self.db.browse_rows(table, page, page_size).await
    }
    async fn get_row(&self, table: &str, key: Value) -> Result<Option<Row>> {
        self.db.get_row(table, key).await
    }
    async fn insert_row(&self, table: &str, values: Row) -> Result<u64> {
        self.db.insert_row(table, values).await
    }
    async fn update_row(&self, table: &str, key: Value, values: Row) -> Result<u64> {
        self.db.update_row(table, key, values).await
    }
    async fn delete_row(&self, table: &str, key: Value) -> Result<u64> {
        self.db.delete_row(table, key).await
    }
    async fn list_collections(&self) -> Result<Vec<String>> {
        self.db.list_collections().await
    }
    async fn count_documents(&self, collection: &str) -> Result<u64> {
        self.db.count_documents(collection).await
    }
    async fn browse_documents(&self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage> {
        self.db.browse_documents(collection, page, page_size).await
    }
    async fn get_document(&self, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
        self.db.get_document(collection, key).await
    }
    async fn put_document(&self, collection: &str, key: &str, document: serde_json::Value) -> Result<()> {
        self.db.put_document(collection, key, document).await
    }
    async fn delete_document(&self, collection: &str, key: &str) -> Result<bool> {
        self.db.delete_document(collection, key).await
    }
    async fn drop_collection(&self, collection: &str) -> Result<bool> {
        self.db.drop_collection(collection).await
    }
    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>> {
        self.db.list_saved_queries().await
    }
    async fn get_saved_query(&self, name: &str) -> Result<Option<SavedQuery>> {
        self.db.get_saved_query(name).await
    }
    async fn put_saved_query(&self, name: &str, sql_text: &str) -> Result<SavedQuery> {
        self.db.put_saved_query(name, sql_text).await
    }
    async fn delete_saved_query(&self, name: &str) -> Result<bool> {
        self.db.delete_saved_query(name).await
    }
    async fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>> {
        self.db.list_procedures().await
    }
    async fn get_procedure(&self, name: &str) -> Result<Option<ProcedureDefinition>> {
        self.db.get_procedure(name).await
    }
    async fn put_procedure(&self, definition: ProcedureDefinition) -> Result<ProcedureDefinition> {
        self.db.put_procedure(definition).await
    }
    async fn delete_procedure(&self, name: &str) -> Result<bool> {
        self.db.delete_procedure(name).await
    }
    async fn execute_procedure(&self, name: &str, args: Params) -> Result<SqlResult> {
        self.db.execute_procedure(name, args).await
    }
    async fn begin_transaction(&self) -> Result<TransactionInfo> {
        let session = self.db.begin().await?;
        Ok(TransactionInfo {
            transaction_id: session.id,
            expires_at_utc: session.expires_at.map(format_utc),
        })
    }
    async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        self.db.session_execute(transaction_id, sql, params).await
    }
    async fn commit_transaction(&self, transaction_id: &str) -> Result<()> {
        self.db.session_commit(transaction_id).await
    }
    async fn rollback_transaction(&self, transaction_id: &str) -> Result<()> {
        self.db.session_rollback(transaction_id).await
    }
}
