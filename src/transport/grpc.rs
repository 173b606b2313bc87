//! The gRPC client: [`GrpcClient`] speaks `shardlite.v1.Shardlite` (`proto/shardlite.proto`) to a
//! `shardlite serve` daemon and implements [`DataClient`] and [`ShardAdmin`], so code written
//! against those traits works unchanged over the network.
//!
//! - The route of a route-bound client ([`RemoteOptions::with_route`],
//!   [`GrpcClient::with_route`]) travels as metadata on **every** call; a keyspace or key that is
//!   not printable ASCII travels as UTF-8 in the `-bin` variant of the metadata key.
//! - Transaction ids pass through unchanged.
//! - Errors the daemon reports decode to [`Error::Remote`] with the daemon's [`ErrorKind`] (and
//!   SQLite code), so `err.kind()` is the same as in-process. A shard-admin call to a daemon that
//!   serves one plain database decodes to [`ErrorKind::NotSharded`].
//! - A daemon that cannot be reached, answers too slowly, or is not a shardlite daemon gives
//!   [`Error::Transport`] naming the endpoint. Every call is bounded by the request timeout
//!   (connecting included), so nothing hangs.
//! - `https://` endpoints use TLS through rustls with the `ring` provider. Trusted roots are the
//!   operating system's (tonic's `tls-native-roots`) plus any CA given with
//!   [`RemoteOptions::with_ca_certificate_pem`].
//!
//! ```no_run
//! # async fn demo() -> shardlite::Result<()> {
//! use shardlite::client::{DataClient, Params};
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

pub use crate::wire::proto;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue, BinaryMetadataValue, MetadataMap};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Request, Response, Status};

use self::convert::{document_from_json, row_from_pb, row_to_pb};
use self::proto as pb;
use self::proto::shardlite_client::ShardliteClient;
use super::RemoteOptions;
use crate::data::{
    CatalogState, DataClient, DatabaseInfo, DocumentPage, Params, ProcedureDefinition, Row, RowPage, SavedQuery,
    ShardAdmin, ShardSqlResult, ShardStatus, SqlResult, TableSchema, TransactionInfo, Value,
};
use crate::error::{Error, ErrorKind, Result};
use crate::map::ShardMapSnapshot;
use crate::routing::{ResolvedRoute, RouteContext};
use crate::wire::{
    ERROR_CODE_METADATA, KEYSPACE_METADATA, KEYSPACE_METADATA_BIN, SHARD_KEY_METADATA, SHARD_KEY_METADATA_BIN,
    SQLITE_CODE_METADATA,
};

/// A gRPC client of a shardlite daemon, implementing [`DataClient`] and [`ShardAdmin`].
///
/// Cloning is cheap; clones and [`with_route`](Self::with_route) share one HTTP/2 connection.
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
    request_timeout: Option<Duration>,
    max_message_size: usize,
}

/// A route, encoded once as the metadata values sent with every call.
#[derive(Clone)]
struct RouteMetadata {
    route: RouteContext,
    keyspace: MetadataText,
    key: MetadataText,
}

#[derive(Clone)]
enum MetadataText {
    Ascii(AsciiMetadataValue),
    Binary(BinaryMetadataValue),
}

impl MetadataText {
    fn new(text: &str) -> Self {
        match AsciiMetadataValue::try_from(text) {
            Ok(value) if text.bytes().all(|b| b.is_ascii_graphic() || b == b' ') => Self::Ascii(value),
            _ => Self::Binary(BinaryMetadataValue::from_bytes(text.as_bytes())),
        }
    }

    fn insert(&self, metadata: &mut MetadataMap, ascii_key: &'static str, binary_key: &'static str) {
        match self {
            Self::Ascii(value) => {
                metadata.insert(ascii_key, value.clone());
            }
            Self::Binary(value) => {
                metadata.insert_bin(binary_key, value.clone());
            }
        }
    }
}

impl RouteMetadata {
    fn new(route: RouteContext) -> Self {
        Self {
            keyspace: MetadataText::new(route.keyspace()),
            key: MetadataText::new(route.key()),
            route,
        }
    }
}

impl fmt::Debug for GrpcClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcClient")
            .field("endpoint", &self.shared.endpoint)
            .field("route", &self.route.as_ref().map(|r| &r.route))
            .finish_non_exhaustive()
    }
}

fn transport_error(endpoint: &str, reason: impl Into<String>) -> Error {
    Error::Transport {
        endpoint: endpoint.to_owned(),
        reason: reason.into(),
    }
}

/// Checks the endpoint and returns `(origin, is_https)`: scheme, host and port only.
fn parse_endpoint(endpoint: &str) -> Result<(String, bool)> {
    let bad = |reason: &str| Error::invalid_argument("endpoint", format!("'{endpoint}' {reason}"));
    let url = url::Url::parse(endpoint.trim()).map_err(|e| bad(&format!("is not an absolute URL ({e})")))?;
    let https = match url.scheme() {
        "http" => false,
        "https" => true,
        _ => return Err(bad("must start with http:// or https://")),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Error::invalid_argument(
            "endpoint",
            "must not contain credentials (use the API key option)",
        ));
    }
    let Some(host) = url.host_str() else {
        return Err(bad("has no host"));
    };
    let origin = match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    };
    Ok((origin, https))
}

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
        let (endpoint, channel_endpoint) = Self::channel_endpoint(&options)?;
        let channel = channel_endpoint.connect_lazy();
        Self::assemble(options, endpoint, channel)
    }

    /// A client that connects now, failing within the connect timeout when the daemon cannot be
    /// reached.
    pub async fn connect(options: RemoteOptions) -> Result<Self> {
        let (endpoint, channel_endpoint) = Self::channel_endpoint(&options)?;
        let connecting = channel_endpoint.connect();
        let connected = match non_zero(options.connect_timeout).or(non_zero(options.request_timeout)) {
            Some(limit) => tokio::time::timeout(limit, connecting)
                .await
                .map_err(|_| transport_error(&endpoint, format!("could not connect within {limit:?}")))?,
            None => connecting.await,
        };
        let channel = connected.map_err(|err| transport_error(&endpoint, error_chain(&err)))?;
        Self::assemble(options, endpoint, channel)
    }

    fn channel_endpoint(options: &RemoteOptions) -> Result<(String, Endpoint)> {
        let (origin, https) = parse_endpoint(&options.endpoint)?;
        let mut channel_endpoint = Endpoint::from_shared(origin.clone())
            .map_err(|err| Error::invalid_argument("endpoint", format!("'{origin}': {}", error_chain(&err))))?
            .tcp_nodelay(true);
        if let Some(limit) = non_zero(options.connect_timeout) {
            channel_endpoint = channel_endpoint.connect_timeout(limit);
        }
        if https {
            let mut tls = ClientTlsConfig::new().with_enabled_roots();
            if let Some(pem) = &options.ca_certificate_pem {
                tls = tls.ca_certificate(Certificate::from_pem(pem));
            }
            if let Some(domain) = &options.tls_domain_name {
                tls = tls.domain_name(domain.clone());
            }
            if let Some(limit) = non_zero(options.connect_timeout) {
                tls = tls.timeout(limit);
            }
            channel_endpoint = channel_endpoint
                .tls_config(tls)
                .map_err(|err| Error::invalid_argument("TLS settings", error_chain(&err)))?;
        }
        Ok((origin, channel_endpoint))
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
        Ok(Self {
            shared: Arc::new(Shared {
                endpoint,
                channel,
                api_key,
                request_timeout: non_zero(options.request_timeout),
                max_message_size: options.max_message_size,
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
            route
                .keyspace
                .insert(metadata, KEYSPACE_METADATA, KEYSPACE_METADATA_BIN);
            route.key.insert(metadata, SHARD_KEY_METADATA, SHARD_KEY_METADATA_BIN);
        }
        if let Some((name, value)) = &self.shared.api_key {
            metadata.insert(name.clone(), value.clone());
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
        outcome
            .map(Response::into_inner)
            .map_err(|status| decode_status(&self.shared.endpoint, &status))
    }
}

/// An error and its sources, joined with ": ".
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let next = inner.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = inner.source();
    }
    text
}

/// The kind of a status that carries no `shardlite-error-code` (a proxy or an older daemon).
fn kind_from_code(code: Code) -> ErrorKind {
    match code {
        Code::InvalidArgument | Code::OutOfRange => ErrorKind::InvalidInput,
        Code::NotFound => ErrorKind::NotFound,
        Code::AlreadyExists | Code::Aborted | Code::FailedPrecondition => ErrorKind::Conflict,
        Code::Unauthenticated | Code::PermissionDenied => ErrorKind::Unauthenticated,
        Code::ResourceExhausted => ErrorKind::Busy,
        Code::Unavailable => ErrorKind::Unavailable,
        _ => ErrorKind::Internal,
    }
}

/// Decodes a failed call into the crate's error, keeping the daemon's kind and SQLite code.
fn decode_status(endpoint: &str, status: &Status) -> Error {
    let metadata = status.metadata();
    let text = |key: &str| metadata.get(key).and_then(|v| v.to_str().ok());
    if let Some(code) = text(ERROR_CODE_METADATA) {
        let kind = ErrorKind::from_code(code).unwrap_or_else(|| kind_from_code(status.code()));
        return Error::Remote {
            kind,
            message: status.message().to_owned(),
            sqlite_code: text(SQLITE_CODE_METADATA).and_then(|c| c.parse().ok()),
        };
    }
    match status.code() {
        // Without our trailer these come from the channel (refused, reset, timed out) or from
        // something that is not a shardlite daemon.
        Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Unknown | Code::Internal => {
            transport_error(endpoint, error_chain(status))
        }
        Code::Unimplemented => transport_error(
            endpoint,
            format!(
                "the endpoint does not serve the {} gRPC service ({})",
                pb::shardlite_server::SERVICE_NAME,
                status.message()
            ),
        ),
        code => Error::Remote {
            kind: kind_from_code(code),
            message: status.message().to_owned(),
            sqlite_code: None,
        },
    }
}

fn sql_request(sql: &str, params: Params) -> pb::SqlRequest {
    pb::SqlRequest {
        sql: sql.to_owned(),
        params: Some(params.into()),
    }
}

#[async_trait]
impl DataClient for GrpcClient {
    async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        let result = self
            .call(
                sql_request(sql, params),
                |mut c, r| async move { c.execute_sql(r).await },
            )
            .await?;
        Ok(result.into())
    }

    async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        let result = self
            .call(sql_request(sql, params), |mut c, r| async move {
                c.execute_read_only_sql(r).await
            })
            .await?;
        Ok(result.into())
    }

    async fn info(&self) -> Result<DatabaseInfo> {
        let info = self
            .call(pb::Empty {}, |mut c, r| async move { c.get_info(r).await })
            .await?;
        Ok(info.into())
    }

    async fn list_tables(&self) -> Result<Vec<String>> {
        let names = self
            .call(pb::Empty {}, |mut c, r| async move { c.list_tables(r).await })
            .await?;
        Ok(names.names)
    }

    async fn table_schema(&self, table: &str) -> Result<TableSchema> {
        let request = pb::TableRequest {
            table: table.to_owned(),
        };
        let schema = self
            .call(request, |mut c, r| async move { c.get_table_schema(r).await })
            .await?;
        Ok(schema.into())
    }

    async fn count_rows(&self, table: &str) -> Result<u64> {
        let request = pb::TableRequest {
            table: table.to_owned(),
        };
        let count = self
            .call(request, |mut c, r| async move { c.count_rows(r).await })
            .await?;
        Ok(count.count)
    }

    async fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> Result<RowPage> {
        let request = pb::BrowseRequest {
            name: table.to_owned(),
            page,
            page_size,
        };
        let rows = self
            .call(request, |mut c, r| async move { c.browse_rows(r).await })
            .await?;
        Ok(rows.into())
    }

    async fn get_row(&self, table: &str, key: Value) -> Result<Option<Row>> {
        let request = pb::RowKeyRequest {
            table: table.to_owned(),
            key: Some(key.into()),
        };
        let row = self.call(request, |mut c, r| async move { c.get_row(r).await }).await?;
        Ok(row.row.map(|r| row_from_pb(r.values)))
    }

    async fn insert_row(&self, table: &str, values: Row) -> Result<u64> {
        let request = pb::InsertRowRequest {
            table: table.to_owned(),
            values: row_to_pb(values),
        };
        let count = self
            .call(request, |mut c, r| async move { c.insert_row(r).await })
            .await?;
        Ok(count.count)
    }

    async fn update_row(&self, table: &str, key: Value, values: Row) -> Result<u64> {
        let request = pb::UpdateRowRequest {
            table: table.to_owned(),
            key: Some(key.into()),
            values: row_to_pb(values),
        };
        let count = self
            .call(request, |mut c, r| async move { c.update_row(r).await })
            .await?;
        Ok(count.count)
    }

    async fn delete_row(&self, table: &str, key: Value) -> Result<u64> {
        let request = pb::RowKeyRequest {
            table: table.to_owned(),
            key: Some(key.into()),
        };
        let count = self
            .call(request, |mut c, r| async move { c.delete_row(r).await })
            .await?;
        Ok(count.count)
    }

    async fn list_collections(&self) -> Result<Vec<String>> {
        let names = self
            .call(pb::Empty {}, |mut c, r| async move { c.list_collections(r).await })
            .await?;
        Ok(names.names)
    }

    async fn count_documents(&self, collection: &str) -> Result<u64> {
        let request = pb::CollectionRequest {
            collection: collection.to_owned(),
        };
        let count = self
            .call(request, |mut c, r| async move { c.count_documents(r).await })
            .await?;
        Ok(count.count)
    }

    async fn browse_documents(&self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage> {
        let request = pb::BrowseRequest {
            name: collection.to_owned(),
            page,
            page_size,
        };
        let documents = self
            .call(request, |mut c, r| async move { c.browse_documents(r).await })
            .await?;
        documents.try_into()
    }

    async fn get_document(&self, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
        let request = pb::DocumentKeyRequest {
            collection: collection.to_owned(),
            key: key.to_owned(),
        };
        let document = self
            .call(request, |mut c, r| async move { c.get_document(r).await })
            .await?;
        document.json.as_deref().map(document_from_json).transpose()
    }

    async fn put_document(&self, collection: &str, key: &str, document: serde_json::Value) -> Result<()> {
        let request = pb::PutDocumentRequest {
            collection: collection.to_owned(),
            key: key.to_owned(),
            json: document.to_string(),
        };
        self.call(request, |mut c, r| async move { c.put_document(r).await })
            .await?;
        Ok(())
    }

    async fn delete_document(&self, collection: &str, key: &str) -> Result<bool> {
        let request = pb::DocumentKeyRequest {
            collection: collection.to_owned(),
            key: key.to_owned(),
        };
        let existed = self
            .call(request, |mut c, r| async move { c.delete_document(r).await })
            .await?;
        Ok(existed.existed)
    }

    async fn drop_collection(&self, collection: &str) -> Result<bool> {
        let request = pb::CollectionRequest {
            collection: collection.to_owned(),
        };
        let existed = self
            .call(request, |mut c, r| async move { c.drop_collection(r).await })
            .await?;
        Ok(existed.existed)
    }

    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>> {
        let list = self
            .call(pb::Empty {}, |mut c, r| async move { c.list_saved_queries(r).await })
            .await?;
        Ok(list.items.into_iter().map(Into::into).collect())
    }

    async fn get_saved_query(&self, name: &str) -> Result<Option<SavedQuery>> {
        let request = pb::NameRequest { name: name.to_owned() };
        let found = self
            .call(request, |mut c, r| async move { c.get_saved_query(r).await })
            .await?;
        Ok(found.saved_query.map(Into::into))
    }

    async fn put_saved_query(&self, name: &str, sql_text: &str) -> Result<SavedQuery> {
        let request = pb::PutSavedQueryRequest {
            name: name.to_owned(),
            sql_text: sql_text.to_owned(),
        };
        let saved = self
            .call(request, |mut c, r| async move { c.put_saved_query(r).await })
            .await?;
        Ok(saved.into())
    }

    async fn delete_saved_query(&self, name: &str) -> Result<bool> {
        let request = pb::NameRequest { name: name.to_owned() };
        let existed = self
            .call(request, |mut c, r| async move { c.delete_saved_query(r).await })
            .await?;
        Ok(existed.existed)
    }

    async fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>> {
        let list = self
            .call(pb::Empty {}, |mut c, r| async move { c.list_procedures(r).await })
            .await?;
        Ok(list.items.into_iter().map(Into::into).collect())
    }

    async fn get_procedure(&self, name: &str) -> Result<Option<ProcedureDefinition>> {
        let request = pb::NameRequest { name: name.to_owned() };
        let found = self
            .call(request, |mut c, r| async move { c.get_procedure(r).await })
            .await?;
        Ok(found.procedure.map(Into::into))
    }

    async fn put_procedure(&self, definition: ProcedureDefinition) -> Result<ProcedureDefinition> {
        let request = pb::ProcedureDefinition::from(definition);
        let stored = self
            .call(request, |mut c, r| async move { c.put_procedure(r).await })
            .await?;
        Ok(stored.into())
    }

    async fn delete_procedure(&self, name: &str) -> Result<bool> {
        let request = pb::NameRequest { name: name.to_owned() };
        let existed = self
            .call(request, |mut c, r| async move { c.delete_procedure(r).await })
            .await?;
        Ok(existed.existed)
    }

    async fn execute_procedure(&self, name: &str, args: Params) -> Result<SqlResult> {
        let request = pb::ExecuteProcedureRequest {
            name: name.to_owned(),
            args: Some(args.into()),
        };
        let result = self
            .call(request, |mut c, r| async move { c.execute_procedure(r).await })
            .await?;
        Ok(result.into())
    }

    async fn begin_transaction(&self) -> Result<TransactionInfo> {
        let info = self
            .call(pb::Empty {}, |mut c, r| async move { c.begin_transaction(r).await })
            .await?;
        Ok(info.into())
    }

    async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        let request = pb::TransactionSqlRequest {
            transaction_id: transaction_id.to_owned(),
            sql: sql.to_owned(),
            params: Some(params.into()),
        };
        let result = self
            .call(request, |mut c, r| async move { c.execute_in_transaction(r).await })
            .await?;
        Ok(result.into())
    }

    async fn commit_transaction(&self, transaction_id: &str) -> Result<()> {
        let request = pb::TransactionRequest {
            transaction_id: transaction_id.to_owned(),
        };
        self.call(request, |mut c, r| async move { c.commit_transaction(r).await })
            .await?;
        Ok(())
    }

    async fn rollback_transaction(&self, transaction_id: &str) -> Result<()> {
        let request = pb::TransactionRequest {
            transaction_id: transaction_id.to_owned(),
        };
        self.call(request, |mut c, r| async move { c.rollback_transaction(r).await })
            .await?;
        Ok(())
    }
}

#[async_trait]
impl ShardAdmin for GrpcClient {
    async fn shard_map(&self) -> Result<ShardMapSnapshot> {
        let map = self
            .call(pb::Empty {}, |mut c, r| async move { c.get_shard_map(r).await })
            .await?;
        map.try_into()
    }

    async fn resolve_route(&self, route: &RouteContext) -> Result<ResolvedRoute> {
        let request = pb::ResolveShardRouteRequest {
            keyspace: route.keyspace().to_owned(),
            key: route.key().to_owned(),
        };
        let resolution = self
            .call(request, |mut c, r| async move { c.resolve_shard_route(r).await })
            .await?;
        resolution.try_into()
    }

    async fn shard_status(&self) -> Result<Vec<ShardStatus>> {
        let list = self
            .call(pb::Empty {}, |mut c, r| async move { c.get_shard_status(r).await })
            .await?;
        list.items.into_iter().map(TryInto::try_into).collect()
    }

    async fn execute_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        let request = pb::FanOutSqlRequest { sql: sql.to_owned() };
        let list = self
            .call(request, |mut c, r| async move { c.execute_sql_on_all_shards(r).await })
            .await?;
        Ok(list.items.into_iter().map(Into::into).collect())
    }

    async fn execute_read_only_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        let request = pb::FanOutSqlRequest { sql: sql.to_owned() };
        let list = self
            .call(request, |mut c, r| async move {
                c.execute_read_only_sql_on_all_shards(r).await
            })
            .await?;
        Ok(list.items.into_iter().map(Into::into).collect())
    }

    async fn catalog_state(&self) -> Result<CatalogState> {
        let state = self
            .call(pb::Empty {}, |mut c, r| async move { c.get_shard_catalog(r).await })
            .await?;
        state.try_into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_checked_and_reduced_to_their_origin() {
        assert_eq!(
            parse_endpoint("http://127.0.0.1:61818/base").expect("valid"),
            ("http://127.0.0.1:61818".to_owned(), false)
        );
        assert_eq!(
            parse_endpoint("https://db.internal").expect("valid"),
            ("https://db.internal".to_owned(), true)
        );
        assert_eq!(
            parse_endpoint("http://[::1]:5000").expect("valid").0,
            "http://[::1]:5000"
        );
        for bad in ["ftp://host", "127.0.0.1:61818", "", "http://user:pw@host"] {
            let err = parse_endpoint(bad).expect_err(bad);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad}");
            assert!(!err.to_string().contains("pw"), "{err}");
        }
    }

    #[test]
    fn statuses_with_a_shardlite_code_keep_their_kind_and_sqlite_code() {
        let mut metadata = MetadataMap::new();
        metadata.insert(ERROR_CODE_METADATA, AsciiMetadataValue::from_static("constraint"));
        metadata.insert(SQLITE_CODE_METADATA, AsciiMetadataValue::from_static("2067"));
        let status = Status::with_metadata(Code::FailedPrecondition, "UNIQUE constraint failed", metadata);
        let err = decode_status("http://h:1", &status);
        assert_eq!(err.kind(), ErrorKind::Constraint);
        assert_eq!(err.sqlite_code(), Some(2067));
        assert_eq!(err.to_string(), "UNIQUE constraint failed");

        let mut metadata = MetadataMap::new();
        metadata.insert(ERROR_CODE_METADATA, AsciiMetadataValue::from_static("not_sharded"));
        let status = Status::with_metadata(Code::FailedPrecondition, "not sharded", metadata);
        assert_eq!(decode_status("http://h:1", &status).kind(), ErrorKind::NotSharded);
    }

    #[test]
    fn statuses_without_a_shardlite_code_name_the_endpoint() {
        let err = decode_status("http://h:1", &Status::unavailable("tcp connect error"));
        assert!(matches!(err, Error::Transport { .. }), "{err:?}");
        assert!(err.to_string().contains("http://h:1"), "{err}");
        assert_eq!(err.kind(), ErrorKind::Unavailable);
        let err = decode_status("http://h:1", &Status::unimplemented(""));
        assert!(err.to_string().contains("shardlite.v1.Shardlite"), "{err}");
        assert_eq!(
            decode_status("http://h:1", &Status::unauthenticated("no key")).kind(),
            ErrorKind::Unauthenticated
        );
    }

    #[test]
    fn route_values_that_are_not_printable_ascii_use_binary_metadata() {
        assert!(matches!(MetadataText::new("2026-06"), MetadataText::Ascii(_)));
        assert!(matches!(MetadataText::new("münchen"), MetadataText::Binary(_)));
    }
}
