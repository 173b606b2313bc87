//! The gRPC client: [`GrpcClient`] speaks `shardlite.v1.Shardlite` (`proto/shardlite.proto`) to a
//! `shardlite serve` daemon and implements [`DataClient`](crate::data::DataClient) (all five of
//! its parts), [`ShardAdmin`](crate::data::ShardAdmin) (all four of its parts),
//! [`DirectoryAdmin`](crate::data::DirectoryAdmin) and
//! [`AtomicParticipant`](crate::data::AtomicParticipant), so code written against those traits
//! works unchanged over the network (and a coordinator drives a participant shard reached over
//! gRPC as it drives one reached over REST).
//!
//! - The route of a route-bound client ([`RemoteOptions::with_route`],
//!   [`GrpcClient::with_route`]) travels as metadata on **every** call; a keyspace or key that is
//!   not printable ASCII travels as UTF-8 in the `-bin` variant of the metadata key.
//! - Transaction ids pass through unchanged.
//! - A catalog update that validation refuses is `Ok` with `applied: false`, as in-process; a
//!   stale expected version is [`ErrorKind::MapVersionConflict`](crate::ErrorKind::MapVersionConflict).
//! - Errors the daemon reports decode to [`Error::Remote`] with the daemon's
//!   [`ErrorKind`](crate::ErrorKind) (and SQLite code), so `err.kind()` is the same as
//!   in-process. A shard-admin call to a daemon that serves one plain database decodes to
//!   [`ErrorKind::NotSharded`](crate::ErrorKind::NotSharded).
//! - A daemon that cannot be reached, answers too slowly, or is not a shardlite daemon gives
//!   [`Error::Transport`] naming the endpoint. Every call is bounded by the request timeout
//!   (connecting included), so nothing hangs.
//! - `https://` endpoints use TLS through rustls with the `ring` provider. Trusted roots are the
//!   operating system's (tonic's `tls-native-roots`) plus any CA given with
//!   [`RemoteOptions::with_ca_certificate_pem`] (`Server CA`); a client certificate for mTLS is
//!   given with [`RemoteOptions::with_client_identity_pem`]. A failed handshake is an
//!   [`Error::Transport`] that names the cause (see [`crate::transport::tls::explain_failure`]).
//!
//! ```no_run
//! # async fn demo() -> shardlite::Result<()> {
//! use shardlite::client::{Params, SqlData};
//! use shardlite::transport::RemoteOptions;
//! use shardlite::transport::grpc::GrpcClient;
//! use shardlite::RouteContext;
//!
//! let daemon = GrpcClient::connect(RemoteOptions::new("http://127.0.0.1:61818")).await?;
//! let june = daemon.with_route(RouteContext::new("orders_by_month", "2026-06")?);
//! let result = june
//!     .execute_sql("SELECT count(*) FROM orders WHERE order_month = ?1", Params::from(vec!["2026-06"]))
//!     .await?;
//! println!("{:?}", result.rows);
//! # Ok(()) }
//! ```

pub(crate) mod convert;
mod endpoint;
mod metadata;
mod status;

pub use crate::wire::proto;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue};
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use self::convert::{document_from_json, row_from_pb, row_to_pb};
use self::metadata::RouteMetadata;
use self::proto as pb;
use self::proto::shardlite_client::ShardliteClient;
use self::status::{decode_status, error_chain, transport_error};
use super::RemoteOptions;
use super::probe::HandshakeProbe;
use crate::data::{
    DatabaseInfo, DocumentData, DocumentPage, Params, ProcedureDefinition, Row, RowData, RowPage, SavedQuery, SqlData,
    SqlResult, StoredData, TableSchema, TransactionData, TransactionInfo, TransactionOptions, Value,
};
use crate::error::{Error, Result};
use crate::routing::RouteContext;

/// A gRPC client of a shardlite daemon, implementing [`DataClient`](crate::data::DataClient) and
/// [`ShardAdmin`](crate::data::ShardAdmin).
///
/// Cloning is cheap; clones and [`with_route`](Self::with_route) share one HTTP/2 connection.
///
/// ```no_run
/// # async fn demo() -> shardlite::Result<()> {
/// use shardlite::RouteContext;
/// use shardlite::client::{FanOut, Params, SqlData, Topology};
/// use shardlite::transport::RemoteOptions;
/// use shardlite::transport::grpc::GrpcClient;
///
/// let daemon = GrpcClient::connect(RemoteOptions::new("http://127.0.0.1:61818").with_api_key("secret")).await?;
/// let june = daemon.with_route(RouteContext::new("orders_by_month", "2026-06")?);
/// june.execute_sql("SELECT count(*) FROM orders", Params::none()).await?;
/// let unhealthy = daemon.shard_status().await?.iter().filter(|shard| !shard.healthy).count();
/// daemon.query_all_shards("SELECT count(*) FROM orders", Params::none()).await?;
/// # let _ = unhealthy; Ok(()) }
/// ```
#[derive(Clone)]
pub struct GrpcClient {
    shared: Arc<Shared>,
    route: Option<RouteMetadata>,
}

struct Shared {
    /// The endpoint for messages: scheme, host and port only.
    endpoint: String,
    channel: Channel,
    api_key: Option<(AsciiMetadataKey, AsciiMetadataValue)>,
    /// The data-host shard every call addresses, as metadata.
    shard: Option<AsciiMetadataValue>,
    request_timeout: Option<Duration>,
    max_message_size: usize,
    /// Names a refused handshake that a call lost.
    probe: HandshakeProbe,
}

impl fmt::Debug for GrpcClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcClient")
            .field("endpoint", &self.shared.endpoint)
            .field("route", &self.route.as_ref().map(|r| &r.route))
            .finish_non_exhaustive()
    }
}

/// A zero duration means "no limit".
fn non_zero(duration: Duration) -> Option<Duration> {
    (!duration.is_zero()).then_some(duration)
}

impl GrpcClient {
    /// A client that connects on first use (and reconnects after failures).
    ///
    /// Fails on a malformed endpoint, API key or header name, or bad TLS settings; an unreachable
    /// daemon surfaces on the first call. Must be called inside a tokio runtime.
    pub fn new(options: RemoteOptions) -> Result<Self> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(Error::invalid_argument(
                "runtime",
                "GrpcClient must be created inside a tokio runtime",
            ));
        }
        let (endpoint, channel_endpoint) = endpoint::channel_endpoint(&options)?;
        let channel = channel_endpoint.connect_lazy();
        Self::assemble(options, endpoint, channel)
    }

    /// A client that connects now, failing within the connect timeout when the daemon cannot be
    /// reached.
    pub async fn connect(options: RemoteOptions) -> Result<Self> {
        let (endpoint, channel_endpoint) = endpoint::channel_endpoint(&options)?;
        let connecting = channel_endpoint.connect();
        let connected = match non_zero(options.connect_timeout).or(non_zero(options.request_timeout)) {
            Some(limit) => tokio::time::timeout(limit, connecting)
                .await
                .map_err(|_| transport_error(&endpoint, format!("could not connect within {limit:?}")))?,
            None => connecting.await,
        };
        let channel = match connected {
            Ok(channel) => channel,
            Err(err) => {
                let failed = transport_error(&endpoint, error_chain(&err));
                return Err(HandshakeProbe::new(&options).explain(failed).await);
            }
        };
        Self::assemble(options, endpoint, channel)
    }

    fn assemble(options: RemoteOptions, endpoint: String, channel: Channel) -> Result<Self> {
        let api_key = match &options.api_key {
            None => None,
            Some(key) => {
                let name = AsciiMetadataKey::from_bytes(options.api_key_header.trim().to_ascii_lowercase().as_bytes())
                    .map_err(|_| {
                        Error::invalid_argument(
                            "API key header",
                            format!("'{}' is not a valid header name", options.api_key_header),
                        )
                    })?;
                let mut value = AsciiMetadataValue::try_from(key.expose())
                    .map_err(|_| Error::invalid_argument("API key", "must be printable ASCII"))?;
                value.set_sensitive(true);
                Some((name, value))
            }
        };
        let shard = match &options.shard_id {
            None => None,
            Some(shard_id) => {
                let id = crate::map::data_host_shard_id(shard_id)
                    .map_err(|err| Error::invalid_argument("shard id", err.to_string()))?;
                Some(
                    AsciiMetadataValue::try_from(id.as_str())
                        .map_err(|_| Error::invalid_argument("shard id", "must be printable ASCII"))?,
                )
            }
        };
        Ok(Self {
            shared: Arc::new(Shared {
                endpoint,
                channel,
                api_key,
                shard,
                request_timeout: non_zero(options.request_timeout),
                max_message_size: options.max_message_size,
                probe: HandshakeProbe::new(&options),
            }),
            route: options.route.map(RouteMetadata::new),
        })
    }

    /// A client bound to `route` that shares this client's connection and settings.
    pub fn with_route(&self, route: RouteContext) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            route: Some(RouteMetadata::new(route)),
        }
    }

    /// A client without a route that shares this client's connection and settings.
    pub fn without_route(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            route: None,
        }
    }

    /// The route sent with every call, if any.
    pub fn route(&self) -> Option<&RouteContext> {
        self.route.as_ref().map(|r| &r.route)
    }

    /// The daemon's endpoint (scheme, host and port).
    pub fn endpoint(&self) -> &str {
        &self.shared.endpoint
    }

    fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        if let Some(limit) = self.shared.request_timeout {
            request.set_timeout(limit);
        }
        let metadata = request.metadata_mut();
        if let Some(route) = &self.route {
            route.insert(metadata);
        }
        if let Some((name, value)) = &self.shared.api_key {
            metadata.insert(name.clone(), value.clone());
        }
        if let Some(shard) = &self.shared.shard {
            metadata.insert(crate::wire::SHARD_METADATA, shard.clone());
        }
        request
    }

    /// Runs one unary call with the route, API key and timeout applied, decoding errors.
    async fn call<Req, Resp, F, Fut>(&self, message: Req, rpc: F) -> Result<Resp>
    where
        F: FnOnce(ShardliteClient<Channel>, Request<Req>) -> Fut,
        Fut: Future<Output = std::result::Result<Response<Resp>, Status>>,
    {
        let client = ShardliteClient::new(self.shared.channel.clone())
            .max_decoding_message_size(self.shared.max_message_size)
            .max_encoding_message_size(self.shared.max_message_size);
        let call = rpc(client, self.request(message));
        let outcome = match self.shared.request_timeout {
            Some(limit) => tokio::time::timeout(limit, call)
                .await
                .map_err(|_| transport_error(&self.shared.endpoint, format!("no answer within {limit:?}")))?,
            None => call.await,
        };
        match outcome {
            Ok(response) => Ok(response.into_inner()),
            Err(status) => {
                let failed = decode_status(&self.shared.endpoint, &status);
                Err(self.shared.probe.explain(failed).await)
            }
        }
    }
}

/// Sends `message` with the generated client's method `$rpc` through `GrpcClient::call`:
/// `rpc!(self, count_rows, request)` is the daemon's answer to `CountRows`, or its error.
macro_rules! rpc {
    ($client:expr, $rpc:ident, $message:expr) => {
        $client
            .call(
                $message,
                |mut client, request| async move { client.$rpc(request).await },
            )
            .await
    };
}

fn sql_request(sql: &str, params: Params) -> pb::SqlRequest {
    pb::SqlRequest {
        sql: sql.to_owned(),
        params: Some(params.into()),
    }
}

fn table_request(table: &str) -> pb::TableRequest {
    pb::TableRequest {
        table: table.to_owned(),
    }
}

fn row_key_request(table: &str, key: Value) -> pb::RowKeyRequest {
    pb::RowKeyRequest {
        table: table.to_owned(),
        key: Some(key.into()),
    }
}

fn collection_request(collection: &str) -> pb::CollectionRequest {
    pb::CollectionRequest {
        collection: collection.to_owned(),
    }
}

fn browse_request(name: &str, page: u32, page_size: u32) -> pb::BrowseRequest {
    pb::BrowseRequest {
        name: name.to_owned(),
        page,
        page_size,
    }
}

fn document_key_request(collection: &str, key: &str) -> pb::DocumentKeyRequest {
    pb::DocumentKeyRequest {
        collection: collection.to_owned(),
        key: key.to_owned(),
    }
}

fn name_request(name: &str) -> pb::NameRequest {
    pb::NameRequest { name: name.to_owned() }
}

fn transaction_request(transaction_id: &str) -> pb::TransactionRequest {
    pb::TransactionRequest {
        transaction_id: transaction_id.to_owned(),
    }
}

#[async_trait]
impl SqlData for GrpcClient {
    async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        Ok(rpc!(self, execute_sql, sql_request(sql, params))?.into())
    }

    async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        Ok(rpc!(self, execute_read_only_sql, sql_request(sql, params))?.into())
    }

    async fn info(&self) -> Result<DatabaseInfo> {
        Ok(rpc!(self, get_info, pb::Empty {})?.into())
    }
}

#[async_trait]
impl RowData for GrpcClient {
    async fn list_tables(&self) -> Result<Vec<String>> {
        Ok(rpc!(self, list_tables, pb::Empty {})?.names)
    }

    async fn table_schema(&self, table: &str) -> Result<TableSchema> {
        Ok(rpc!(self, get_table_schema, table_request(table))?.into())
    }

    async fn count_rows(&self, table: &str) -> Result<u64> {
        Ok(rpc!(self, count_rows, table_request(table))?.count)
    }

    async fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> Result<RowPage> {
        Ok(rpc!(self, browse_rows, browse_request(table, page, page_size))?.into())
    }

    async fn get_row(&self, table: &str, key: Value) -> Result<Option<Row>> {
        let found = rpc!(self, get_row, row_key_request(table, key))?;
        Ok(found.row.map(|r| row_from_pb(r.values)))
    }

    async fn insert_row(&self, table: &str, values: Row) -> Result<u64> {
        let request = pb::InsertRowRequest {
            table: table.to_owned(),
            values: row_to_pb(values),
        };
        Ok(rpc!(self, insert_row, request)?.count)
    }

    async fn update_row(&self, table: &str, key: Value, values: Row) -> Result<u64> {
        let request = pb::UpdateRowRequest {
            table: table.to_owned(),
            key: Some(key.into()),
            values: row_to_pb(values),
        };
        Ok(rpc!(self, update_row, request)?.count)
    }

    async fn delete_row(&self, table: &str, key: Value) -> Result<u64> {
        Ok(rpc!(self, delete_row, row_key_request(table, key))?.count)
    }
}

#[async_trait]
impl DocumentData for GrpcClient {
    async fn list_collections(&self) -> Result<Vec<String>> {
        Ok(rpc!(self, list_collections, pb::Empty {})?.names)
    }

    async fn count_documents(&self, collection: &str) -> Result<u64> {
        Ok(rpc!(self, count_documents, collection_request(collection))?.count)
    }

    async fn browse_documents(&self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage> {
        rpc!(self, browse_documents, browse_request(collection, page, page_size))?.try_into()
    }

    async fn get_document(&self, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
        let found = rpc!(self, get_document, document_key_request(collection, key))?;
        found.json.as_deref().map(document_from_json).transpose()
    }

    async fn put_document(&self, collection: &str, key: &str, document: serde_json::Value) -> Result<()> {
        let request = pb::PutDocumentRequest {
            collection: collection.to_owned(),
            key: key.to_owned(),
            json: document.to_string(),
        };
        rpc!(self, put_document, request)?;
        Ok(())
    }

    async fn delete_document(&self, collection: &str, key: &str) -> Result<bool> {
        Ok(rpc!(self, delete_document, document_key_request(collection, key))?.existed)
    }

    async fn drop_collection(&self, collection: &str) -> Result<bool> {
        Ok(rpc!(self, drop_collection, collection_request(collection))?.existed)
    }
}

#[async_trait]
impl StoredData for GrpcClient {
    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>> {
        let list = rpc!(self, list_saved_queries, pb::Empty {})?;
        Ok(list.items.into_iter().map(Into::into).collect())
    }

    async fn get_saved_query(&self, name: &str) -> Result<Option<SavedQuery>> {
        Ok(rpc!(self, get_saved_query, name_request(name))?
            .saved_query
            .map(Into::into))
    }

    async fn put_saved_query(&self, name: &str, sql_text: &str) -> Result<SavedQuery> {
        let request = pb::PutSavedQueryRequest {
            name: name.to_owned(),
            sql_text: sql_text.to_owned(),
        };
        Ok(rpc!(self, put_saved_query, request)?.into())
    }

    async fn delete_saved_query(&self, name: &str) -> Result<bool> {
        Ok(rpc!(self, delete_saved_query, name_request(name))?.existed)
    }

    async fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>> {
        let list = rpc!(self, list_procedures, pb::Empty {})?;
        Ok(list.items.into_iter().map(Into::into).collect())
    }

    async fn get_procedure(&self, name: &str) -> Result<Option<ProcedureDefinition>> {
        Ok(rpc!(self, get_procedure, name_request(name))?.procedure.map(Into::into))
    }

    async fn put_procedure(&self, definition: ProcedureDefinition) -> Result<ProcedureDefinition> {
        Ok(rpc!(self, put_procedure, pb::ProcedureDefinition::from(definition))?.into())
    }

    async fn delete_procedure(&self, name: &str) -> Result<bool> {
        Ok(rpc!(self, delete_procedure, name_request(name))?.existed)
    }

    async fn execute_procedure(&self, name: &str, args: Params) -> Result<SqlResult> {
        let request = pb::ExecuteProcedureRequest {
            name: name.to_owned(),
            args: Some(args.into()),
        };
        Ok(rpc!(self, execute_procedure, request)?.into())
    }
}

#[async_trait]
impl TransactionData for GrpcClient {
    async fn begin_transaction_with(&self, options: TransactionOptions) -> Result<TransactionInfo> {
        super::check_transaction_options(options)?;
        let request = pb::BeginTransactionRequest {
            maintenance: options.maintenance,
            atomic: false,
        };
        Ok(rpc!(self, begin_transaction, request)?.into())
    }

    async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        let request = pb::TransactionSqlRequest {
            transaction_id: transaction_id.to_owned(),
            sql: sql.to_owned(),
            params: Some(params.into()),
        };
        Ok(rpc!(self, execute_in_transaction, request)?.into())
    }

    async fn commit_transaction(&self, transaction_id: &str) -> Result<()> {
        rpc!(self, commit_transaction, transaction_request(transaction_id))?;
        Ok(())
    }

    async fn rollback_transaction(&self, transaction_id: &str) -> Result<()> {
        rpc!(self, rollback_transaction, transaction_request(transaction_id))?;
        Ok(())
    }

    fn atomic_participant(&self) -> Option<crate::data::SharedParticipant> {
        // Participant calls address the database itself, never a route of a sharded daemon.
        Some(Arc::new(self.without_route()))
    }
}

// The operator contract, migrations and data-host operations through the daemon (after `rpc!`, which
// they use).
mod admin;
mod directory;
mod host;
mod participant;
mod reshard;

impl GrpcClient {
    /// Begins an atomic transaction across the daemon's shards (it must serve a shard map; the
    /// API key needs `write`): each execute on the handle carries its own route.
    pub async fn begin_atomic(&self) -> Result<super::atomic::RemoteAtomicTransaction<Self>> {
        let request = pb::BeginTransactionRequest {
            maintenance: false,
            atomic: true,
        };
        let info: TransactionInfo = rpc!(self.without_route(), begin_transaction, request)?.into();
        Ok(super::atomic::RemoteAtomicTransaction::new(
            self.without_route(),
            info.transaction_id,
        ))
    }

    /// Takes a backup set of the daemon's keyspace into its backup place (`serve --backup-dir`;
    /// the API key needs `admin`) and returns the set's manifest.
    pub async fn create_backup(&self) -> Result<crate::data::BackupManifest> {
        let set = rpc!(self.without_route(), create_backup, pb::Empty {})?;
        manifest_from_json(&set.manifest_json)
    }

    /// The complete backup sets in the daemon's backup place, oldest first (`admin`).
    pub async fn backup_sets(&self) -> Result<Vec<crate::data::BackupManifest>> {
        let sets = rpc!(self.without_route(), list_backups, pb::Empty {})?;
        sets.manifest_json.iter().map(|json| manifest_from_json(json)).collect()
    }
}

fn manifest_from_json(json: &str) -> Result<crate::data::BackupManifest> {
    serde_json::from_str(json).map_err(|source| Error::Json {
        what: "a backup manifest from the daemon",
        source,
    })
}

impl super::atomic::RoutedCalls for GrpcClient {
    fn routed(&self, route: &RouteContext) -> Self {
        self.with_route(route.clone())
    }
}
