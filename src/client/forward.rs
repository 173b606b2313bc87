//! One macro for the [`DataClient`](crate::data::DataClient) impls that hand each per-database
//! call to something else: the local client to its engine handle, the route-bound client to the
//! route's shard, and the sharded client (which has no route) to a `RouteRequired` error.

/// Implements `DataClient` for a type. The caller writes the methods that differ (SQL, info and
/// transactions) in the braces; the table, collection, saved-query and procedure methods are
/// generated, each calling the method of the same name on `target`.
///
/// `target` is an expression of the form `|this| expr`, where `expr` has the type
/// `Result<T>` and `T` has those methods (an engine handle, or an `Arc<dyn DataClient>`).
macro_rules! impl_data_client {
    ($ty:ty, |$this:ident| $target:expr, { $($own:item)* }) => {
        #[async_trait::async_trait]
        impl $crate::data::DataClient for $ty {
            $($own)*

            async fn list_tables(&self) -> $crate::Result<Vec<String>> {
                let $this = self;
                $target?.list_tables().await
            }
            async fn table_schema(&self, table: &str) -> $crate::Result<$crate::data::TableSchema> {
                let $this = self;
                $target?.table_schema(table).await
            }
            async fn count_rows(&self, table: &str) -> $crate::Result<u64> {
                let $this = self;
                $target?.count_rows(table).await
            }
            async fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> $crate::Result<$crate::data::RowPage> {
                let $this = self;
                $target?.browse_rows(table, page, page_size).await
            }
            async fn get_row(&self, table: &str, key: $crate::data::Value) -> $crate::Result<Option<$crate::data::Row>> {
                let $this = self;
                $target?.get_row(table, key).await
            }
            async fn insert_row(&self, table: &str, values: $crate::data::Row) -> $crate::Result<u64> {
                let $this = self;
                $target?.insert_row(table, values).await
            }
            async fn update_row(
                &self,
                table: &str,
                key: $crate::data::Value,
                values: $crate::data::Row,
            ) -> $crate::Result<u64> {
                let $this = self;
                $target?.update_row(table, key, values).await
            }
            async fn delete_row(&self, table: &str, key: $crate::data::Value) -> $crate::Result<u64> {
                let $this = self;
                $target?.delete_row(table, key).await
            }
            async fn list_collections(&self) -> $crate::Result<Vec<String>> {
                let $this = self;
                $target?.list_collections().await
            }
            async fn count_documents(&self, collection: &str) -> $crate::Result<u64> {
                let $this = self;
                $target?.count_documents(collection).await
            }
            async fn browse_documents(
                &self,
                collection: &str,
                page: u32,
                page_size: u32,
            ) -> $crate::Result<$crate::data::DocumentPage> {
                let $this = self;
                $target?.browse_documents(collection, page, page_size).await
            }
            async fn get_document(&self, collection: &str, key: &str) -> $crate::Result<Option<serde_json::Value>> {
                let $this = self;
                $target?.get_document(collection, key).await
            }
            async fn put_document(
                &self,
                collection: &str,
                key: &str,
                document: serde_json::Value,
            ) -> $crate::Result<()> {
                let $this = self;
                $target?.put_document(collection, key, document).await
            }
            async fn delete_document(&self, collection: &str, key: &str) -> $crate::Result<bool> {
                let $this = self;
                $target?.delete_document(collection, key).await
            }
            async fn drop_collection(&self, collection: &str) -> $crate::Result<bool> {
                let $this = self;
                $target?.drop_collection(collection).await
            }
            async fn list_saved_queries(&self) -> $crate::Result<Vec<$crate::data::SavedQuery>> {
                let $this = self;
                $target?.list_saved_queries().await
            }
            async fn get_saved_query(&self, name: &str) -> $crate::Result<Option<$crate::data::SavedQuery>> {
                let $this = self;
                $target?.get_saved_query(name).await
            }
            async fn put_saved_query(&self, name: &str, sql_text: &str) -> $crate::Result<$crate::data::SavedQuery> {
                let $this = self;
                $target?.put_saved_query(name, sql_text).await
            }
            async fn delete_saved_query(&self, name: &str) -> $crate::Result<bool> {
                let $this = self;
                $target?.delete_saved_query(name).await
            }
            async fn list_procedures(&self) -> $crate::Result<Vec<$crate::data::ProcedureDefinition>> {
                let $this = self;
                $target?.list_procedures().await
            }
            async fn get_procedure(&self, name: &str) -> $crate::Result<Option<$crate::data::ProcedureDefinition>> {
                let $this = self;
                $target?.get_procedure(name).await
            }
            async fn put_procedure(
                &self,
                definition: $crate::data::ProcedureDefinition,
            ) -> $crate::Result<$crate::data::ProcedureDefinition> {
                let $this = self;
                $target?.put_procedure(definition).await
            }
            async fn delete_procedure(&self, name: &str) -> $crate::Result<bool> {
                let $this = self;
                $target?.delete_procedure(name).await
            }
            async fn execute_procedure(&self, name: &str, args: $crate::data::Params) -> $crate::Result<$crate::data::SqlResult> {
                let $this = self;
                $target?.execute_procedure(name, args).await
            }
        }
    };
}

pub(crate) use impl_data_client;
