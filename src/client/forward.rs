//! Forwarding parts of the data contract: a client that hands the calls of a part to something
//! else (the local client to its engine handle, the route-bound client to the route's shard, a
//! dedicated connection to its file's shared client) says only how to reach it, with
//! [`Forward`], and which parts it hands over, with the marker traits. The blanket impls here
//! write each call once.
//!
//! A client implements the parts it does not forward itself: SQL, info and transactions, which
//! each client runs its own way.

use std::future::Future;
use std::ops::Deref;

use async_trait::async_trait;

use crate::data::{
    DocumentData, DocumentPage, Params, ProcedureDefinition, Row, RowData, RowPage, SavedQuery, SqlResult, StoredData,
    TableSchema, Value,
};
use crate::error::Result;

/// How a forwarding client reaches what it hands calls to.
pub(crate) trait Forward: Send + Sync {
    /// What calls are handed to: an engine handle, or a client (`dyn DataClient`).
    type Target: ?Sized + Sync;

    /// A handle on the target for one call: a borrow when the client holds the target, an
    /// owned handle (an `Arc`) when it looks it up per call.
    type Handle<'a>: Deref<Target = Self::Target> + Send
    where
        Self: 'a;

    /// The target for one call, or why there is none (a route that does not resolve, say).
    fn forward_to(&self) -> impl Future<Output = Result<Self::Handle<'_>>> + Send;
}

/// Hands [`RowData`] calls to the [`Forward`] target.
pub(crate) trait ForwardRows: Forward<Target: RowData> {}

/// Hands [`DocumentData`] calls to the [`Forward`] target.
pub(crate) trait ForwardDocuments: Forward<Target: DocumentData> {}

/// Hands [`StoredData`] calls to the [`Forward`] target.
pub(crate) trait ForwardStored: Forward<Target: StoredData> {}

#[async_trait]
impl<T: ForwardRows> RowData for T {
    async fn list_tables(&self) -> Result<Vec<String>> {
        self.forward_to().await?.list_tables().await
    }
    async fn table_schema(&self, table: &str) -> Result<TableSchema> {
        self.forward_to().await?.table_schema(table).await
    }
    async fn count_rows(&self, table: &str) -> Result<u64> {
        self.forward_to().await?.count_rows(table).await
    }
    async fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> Result<RowPage> {
        self.forward_to().await?.browse_rows(table, page, page_size).await
    }
    async fn get_row(&self, table: &str, key: Value) -> Result<Option<Row>> {
        self.forward_to().await?.get_row(table, key).await
    }
    async fn insert_row(&self, table: &str, values: Row) -> Result<u64> {
        self.forward_to().await?.insert_row(table, values).await
    }
    async fn update_row(&self, table: &str, key: Value, values: Row) -> Result<u64> {
        self.forward_to().await?.update_row(table, key, values).await
    }
    async fn delete_row(&self, table: &str, key: Value) -> Result<u64> {
        self.forward_to().await?.delete_row(table, key).await
    }
}

#[async_trait]
impl<T: ForwardDocuments> DocumentData for T {
    async fn list_collections(&self) -> Result<Vec<String>> {
        self.forward_to().await?.list_collections().await
    }
    async fn count_documents(&self, collection: &str) -> Result<u64> {
        self.forward_to().await?.count_documents(collection).await
    }
    async fn browse_documents(&self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage> {
        self.forward_to()
            .await?
            .browse_documents(collection, page, page_size)
            .await
    }
    async fn get_document(&self, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
        self.forward_to().await?.get_document(collection, key).await
    }
    async fn put_document(&self, collection: &str, key: &str, document: serde_json::Value) -> Result<()> {
        self.forward_to().await?.put_document(collection, key, document).await
    }
    async fn delete_document(&self, collection: &str, key: &str) -> Result<bool> {
        self.forward_to().await?.delete_document(collection, key).await
    }
    async fn drop_collection(&self, collection: &str) -> Result<bool> {
        self.forward_to().await?.drop_collection(collection).await
    }
}

#[async_trait]
impl<T: ForwardStored> StoredData for T {
    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>> {
        self.forward_to().await?.list_saved_queries().await
    }
    async fn get_saved_query(&self, name: &str) -> Result<Option<SavedQuery>> {
        self.forward_to().await?.get_saved_query(name).await
    }
    async fn put_saved_query(&self, name: &str, sql_text: &str) -> Result<SavedQuery> {
        self.forward_to().await?.put_saved_query(name, sql_text).await
    }
    async fn delete_saved_query(&self, name: &str) -> Result<bool> {
        self.forward_to().await?.delete_saved_query(name).await
    }
    async fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>> {
        self.forward_to().await?.list_procedures().await
    }
    async fn get_procedure(&self, name: &str) -> Result<Option<ProcedureDefinition>> {
        self.forward_to().await?.get_procedure(name).await
    }
    async fn put_procedure(&self, definition: ProcedureDefinition) -> Result<ProcedureDefinition> {
        self.forward_to().await?.put_procedure(definition).await
    }
    async fn delete_procedure(&self, name: &str) -> Result<bool> {
        self.forward_to().await?.delete_procedure(name).await
    }
    async fn execute_procedure(&self, name: &str, args: Params) -> Result<SqlResult> {
        self.forward_to().await?.execute_procedure(name, args).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::client::{DedicatedClient, LocalClient, RoutedClient, ShardedClient};
    use crate::data::{DataClient, DocumentData, Params, Row, RowData, SqlData, StoredData, TransactionData, Value};
    use crate::map::ShardMap;
    use crate::routing::RouteContext;

    fn part_of_the_contract<T: SqlData + RowData + DocumentData + StoredData + TransactionData + ?Sized>() {}
    fn whole_contract<T: DataClient + ?Sized>() {}

    /// Code that needs one part asks for that part alone.
    async fn rows_in<T: RowData + ?Sized>(client: &T, table: &str) -> crate::Result<u64> {
        client.count_rows(table).await
    }

    #[test]
    fn every_data_client_implements_each_part_and_the_whole_contract() {
        part_of_the_contract::<LocalClient>();
        part_of_the_contract::<RoutedClient>();
        part_of_the_contract::<DedicatedClient>();
        part_of_the_contract::<dyn DataClient>();
        whole_contract::<LocalClient>();
        whole_contract::<RoutedClient>();
        whole_contract::<DedicatedClient>();
        whole_contract::<dyn DataClient>();
        #[cfg(feature = "http")]
        whole_contract::<crate::transport::http::HttpClient>();
        #[cfg(feature = "grpc")]
        whole_contract::<crate::transport::grpc::GrpcClient>();
    }

    #[tokio::test]
    async fn a_function_over_one_part_takes_local_routed_and_dedicated_clients_alike() {
        let dir = tempfile::tempdir().unwrap();
        let map = ShardMap::from_json(&format!(
            r#"{{"keyspace": "tenants", "virtualBucketCount": 4,
                "shards": [{{"shardId": "s0", "dataSource": "{}"}}],
                "bucketRanges": [{{"startBucketInclusive": 0, "endBucketExclusive": 4, "shardId": "s0"}}]}}"#,
            dir.path().join("s0.db").display()
        ))
        .unwrap();
        let sharded = ShardedClient::from_map(map).await.unwrap();
        let routed = sharded.for_route(RouteContext::new("tenants", "a").unwrap());
        routed
            .execute_sql("CREATE TABLE t (id INTEGER PRIMARY KEY)", Params::none())
            .await
            .unwrap();
        let row: Row = [("id".to_owned(), Value::Integer(1))].into();
        assert_eq!(routed.insert_row("t", row).await.unwrap(), 1);

        let local = LocalClient::open(dir.path().join("s0.db")).await.unwrap();
        let dedicated = DedicatedClient::for_local(&local).await.unwrap();
        let shared: Arc<dyn DataClient> = Arc::new(local.clone());
        assert_eq!(rows_in(&routed, "t").await.unwrap(), 1);
        assert_eq!(rows_in(&local, "t").await.unwrap(), 1);
        assert_eq!(rows_in(&dedicated, "t").await.unwrap(), 1);
        assert_eq!(rows_in(&*shared, "t").await.unwrap(), 1);
        assert_eq!(rows_in(local.database(), "t").await.unwrap(), 1);
    }
}
