//! A REST client of a shardlite daemon, implementing [`DataClient`](crate::data::DataClient) (all
//! five of its parts), [`ShardAdmin`](crate::data::ShardAdmin) and
//! [`DirectoryAdmin`](crate::data::DirectoryAdmin).
//!
//! The bound route travels as the `X-CSharpDB-Keyspace` / `X-CSharpDB-Shard-Key` headers on
//! every request, the API key in its configured header. Path segments (table names, keys,
//! transaction ids) are percent-encoded. Error bodies (`application/problem+json`) decode into
//! [`Error::Remote`] with the daemon's [`ErrorKind`](crate::ErrorKind) and SQLite code, so callers
//! branch exactly as they would in-process (a catalog update the daemon refuses as invalid, 400
//! with its validation, is `Ok` with `applied: false`, as in-process); a daemon that cannot be
//! reached, or does not answer within the request timeout, is [`Error::Transport`] naming the
//! endpoint. `https://` endpoints trust the system's roots plus the CA of
//! [`RemoteOptions::with_ca_certificate_pem`], and present the client certificate of
//! [`RemoteOptions::with_client_identity_pem`]; a failed handshake names its cause.
//!
//! ```no_run
//! # async fn demo() -> shardlite::Result<()> {
//! use shardlite::client::{Params, SqlData};
//! use shardlite::transport::RemoteOptions;
//! use shardlite::transport::http::HttpClient;
//! use shardlite::RouteContext;
//!
//! let daemon = HttpClient::new(RemoteOptions::new("http://127.0.0.1:61818"))?;
//! let june = daemon.with_route(RouteContext::new("orders_by_month", "2026-06")?);
//! june.execute_sql("SELECT count(*) FROM orders", Params::none()).await?;
//! # Ok(()) }
//! ```

mod admin;
mod body;
mod directory;
mod failure;
mod host;
mod participant;
mod reshard;

use std::sync::{Arc, Once};

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, RequestBuilder};
use serde::de::DeserializeOwned;
use serde_json::json;

use self::body::{Count, DocumentBody, RowsAffected, key_segment, sql_body};
use self::failure::{Failure, transport_error};
use super::probe::HandshakeProbe;
use super::{RemoteOptions, tls};
use crate::data::{
    DatabaseInfo, DocumentData, DocumentPage, Params, ProcedureDefinition, Row, RowData, RowPage, SavedQuery, SqlData,
    SqlResult, StoredData, TableSchema, TransactionData, TransactionInfo, TransactionOptions, Value,
};
use crate::error::{Error, Result, TransportFailure};
use crate::routing::RouteContext;
use crate::wire::{KEYSPACE_HEADER, SHARD_KEY_HEADER};

/// A REST client of a shardlite daemon. Cloning is cheap; clones and
/// [`with_route`](Self::with_route) share one connection pool.
#[derive(Clone)]
pub struct HttpClient {
    shared: Arc<Shared>,
    route: Option<RouteContext>,
}

struct Shared {
    http: reqwest::Client,
    base: url::Url,
    endpoint: String,
    probe: HandshakeProbe,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("endpoint", &self.shared.endpoint)
            .field("route", &self.route)
            .finish_non_exhaustive()
    }
}

pub(crate) fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    // reqwest is built without a default TLS provider; install ring once per process. An error
    // means another provider is already installed, which is just as good.
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

impl HttpClient {
    /// A client of the daemon at `options.endpoint` (`http://` or `https://`).
    pub fn new(options: RemoteOptions) -> Result<Self> {
        let invalid = |reason: String| Error::ConnectionString {
            reason: format!("Endpoint '{}': {reason}", options.endpoint),
        };
        let mut base = url::Url::parse(options.endpoint.trim()).map_err(|e| invalid(e.to_string()))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(invalid("needs an http:// or https:// URL with a host".to_owned()));
        }
        if !base.username().is_empty() || base.password().is_some() {
            return Err(invalid("must not carry credentials; use Api Key".to_owned()));
        }
        base.set_path("");
        base.set_query(None);
        base.set_fragment(None);
        let endpoint = base.as_str().trim_end_matches('/').to_owned();

        let mut headers = HeaderMap::new();
        if let Some(key) = &options.api_key {
            let name = HeaderName::from_bytes(options.api_key_header.trim().as_bytes()).map_err(|_| {
                Error::ConnectionString {
                    reason: format!("'{}' is not a valid header name", options.api_key_header),
                }
            })?;
            let mut value = HeaderValue::from_str(key.expose()).map_err(|_| Error::ConnectionString {
                reason: "the API key is not a valid header value".to_owned(),
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }

        if let Some(shard_id) = &options.shard_id {
            let id = crate::map::data_host_shard_id(shard_id).map_err(|err| Error::ConnectionString {
                reason: format!("Shard Id: {err}"),
            })?;
            let value = HeaderValue::from_str(&id).map_err(|_| Error::ConnectionString {
                reason: "the shard id is not a valid header value".to_owned(),
            })?;
            headers.insert(crate::wire::SHARD_HEADER, value);
        }

        install_crypto_provider();
        let mut builder = reqwest::Client::builder().default_headers(headers);
        if !options.connect_timeout.is_zero() {
            builder = builder.connect_timeout(options.connect_timeout);
        }
        if !options.request_timeout.is_zero() {
            builder = builder.timeout(options.request_timeout);
        }
        if let Some(pem) = &options.ca_certificate_pem {
            tls::certificates(pem).map_err(|reason| Error::ConnectionString {
                reason: format!("the server CA {reason}"),
            })?;
            for certificate in reqwest::Certificate::from_pem_bundle(pem).map_err(|e| Error::ConnectionString {
                reason: format!("the server CA does not parse: {e}"),
            })? {
                builder = builder.add_root_certificate(certificate);
            }
        }
        if let Some((certificate, key)) = &options.client_identity_pem {
            tls::certificates(certificate).map_err(|reason| Error::ConnectionString {
                reason: format!("the client certificate {reason}"),
            })?;
            tls::private_key(key.expose().as_bytes()).map_err(|reason| Error::ConnectionString {
                reason: format!("the client key {reason}"),
            })?;
            let mut pem = certificate.clone();
            pem.push(b'\n');
            pem.extend_from_slice(key.expose().as_bytes());
            // reqwest's message for a bad identity does not quote the key; still, say only what failed.
            let identity = reqwest::Identity::from_pem(&pem).map_err(|_| Error::ConnectionString {
                reason: "the client certificate and key do not form a usable identity".to_owned(),
            })?;
            builder = builder.identity(identity);
        }
        let http = builder.build().map_err(|e| {
            Error::from(TransportFailure {
                endpoint: endpoint.clone(),
                reason: format!("the HTTP client could not be built: {e}"),
            })
        })?;
        Ok(Self {
            shared: Arc::new(Shared {
                http,
                base,
                endpoint,
                probe: HandshakeProbe::new(&options),
            }),
            route: options.route,
        })
    }

    /// The endpoint, normalised (scheme, host and port).
    pub fn endpoint(&self) -> &str {
        &self.shared.endpoint
    }

    /// The bound route, if any.
    pub fn route(&self) -> Option<&RouteContext> {
        self.route.as_ref()
    }

    /// A client bound to `route`, sharing this client's connections.
    pub fn with_route(&self, route: RouteContext) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            route: Some(route),
        }
    }

    /// Begins an atomic transaction across the daemon's shards (it must serve a shard map; the
    /// API key needs `write`): each execute on the handle carries its own route.
    pub async fn begin_atomic(&self) -> Result<super::atomic::RemoteAtomicTransaction<Self>> {
        let request = self.without_route().post(&["transactions"]);
        let info: TransactionInfo = self.json(request.json(&serde_json::json!({ "atomic": true }))).await?;
        Ok(super::atomic::RemoteAtomicTransaction::new(
            self.without_route(),
            info.transaction_id,
        ))
    }

    /// Takes a backup set of the daemon's keyspace into its backup place (`serve --backup-dir`;
    /// the API key needs `admin`) and returns the set's manifest.
    pub async fn create_backup(&self) -> Result<crate::data::BackupManifest> {
        self.json(self.without_route().post(&["sharding", "backups"])).await
    }

    /// The complete backup sets in the daemon's backup place, oldest first (`admin`).
    pub async fn backup_sets(&self) -> Result<Vec<crate::data::BackupManifest>> {
        self.json(self.without_route().get(&["sharding", "backups"])).await
    }

    /// A client without a route, sharing this client's connections.
    pub fn without_route(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            route: None,
        }
    }

    /// The URL of `/api/{path...}`, each segment percent-encoded.
    fn url(&self, path: &[&str]) -> url::Url {
        let mut url = self.shared.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.clear().push("api").extend(path);
        }
        url
    }

    /// A request to `/api/{path...}` carrying the route headers.
    fn request(&self, method: Method, path: &[&str]) -> RequestBuilder {
        let mut request = self.shared.http.request(method, self.url(path));
        if let Some(route) = &self.route {
            // Header values may carry UTF-8 bytes; the daemon reads them as UTF-8.
            if let (Ok(keyspace), Ok(key)) = (
                HeaderValue::from_bytes(route.keyspace().as_bytes()),
                HeaderValue::from_bytes(route.key().as_bytes()),
            ) {
                request = request.header(KEYSPACE_HEADER, keyspace).header(SHARD_KEY_HEADER, key);
            }
        }
        request
    }

    fn get(&self, path: &[&str]) -> RequestBuilder {
        self.request(Method::GET, path)
    }

    fn post(&self, path: &[&str]) -> RequestBuilder {
        self.request(Method::POST, path)
    }

    fn put(&self, path: &[&str]) -> RequestBuilder {
        self.request(Method::PUT, path)
    }

    fn delete(&self, path: &[&str]) -> RequestBuilder {
        self.request(Method::DELETE, path)
    }

    /// Sends a request; a success status gives the response, an error status its decoded error
    /// and, for `not_found`, the kind of object that is missing.
    async fn call(&self, request: RequestBuilder) -> std::result::Result<reqwest::Response, Failure> {
        let response = match request.send().await {
            Ok(response) => response,
            Err(err) => {
                let mut failure = Failure::transport(&self.shared.endpoint, &err);
                failure.error = self.shared.probe.explain(failure.error).await;
                return Err(failure);
            }
        };
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let body = response.bytes().await.unwrap_or_default();
        Err(Failure::from_answer(&self.shared.endpoint, status, &body))
    }

    async fn read_json<T: DeserializeOwned>(&self, response: reqwest::Response) -> Result<T> {
        let body = response
            .bytes()
            .await
            .map_err(|e| transport_error(&self.shared.endpoint, &e))?;
        serde_json::from_slice(&body).map_err(|source| Error::Json {
            what: "a daemon response",
            source,
        })
    }

    async fn json<T: DeserializeOwned>(&self, request: RequestBuilder) -> Result<T> {
        let response = self.call(request).await.map_err(|f| f.error)?;
        self.read_json(response).await
    }

    async fn no_content(&self, request: RequestBuilder) -> Result<()> {
        self.call(request).await.map(drop).map_err(|f| f.error)
    }

    /// Like [`json`](Self::json), but a 404 for a missing `object` is `None`.
    async fn optional<T: DeserializeOwned>(&self, request: RequestBuilder, object: &str) -> Result<Option<T>> {
        match self.call(request).await {
            Ok(response) => self.read_json(response).await.map(Some),
            Err(failure) if failure.is_missing(object) => Ok(None),
            Err(failure) => Err(failure.error),
        }
    }

    /// A delete that answers 404 for a missing `object`: `false` then.
    async fn delete_if_found(&self, path: &[&str], object: &str) -> Result<bool> {
        match self.call(self.delete(path)).await {
            Ok(_) => Ok(true),
            Err(failure) if failure.is_missing(object) => Ok(false),
            Err(failure) => Err(failure.error),
        }
    }

    /// A row operation answering `{rowsAffected}`, or 404 for a missing row: 0 then.
    async fn rows_affected(&self, request: RequestBuilder) -> Result<u64> {
        match self.call(request).await {
            Ok(response) => Ok(self.read_json::<RowsAffected>(response).await?.rows_affected),
            Err(failure) if failure.is_missing("row") => Ok(0),
            Err(failure) => Err(failure.error),
        }
    }
}

#[async_trait]
impl SqlData for HttpClient {
    async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.json(self.post(&["sql", "execute"]).json(&sql_body(sql, params)))
            .await
    }

    async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.json(self.post(&["sql", "read-only"]).json(&sql_body(sql, params)))
            .await
    }

    async fn info(&self) -> Result<DatabaseInfo> {
        self.json(self.get(&["info"])).await
    }
}

#[async_trait]
impl RowData for HttpClient {
    async fn list_tables(&self) -> Result<Vec<String>> {
        self.json(self.get(&["tables"])).await
    }

    async fn table_schema(&self, table: &str) -> Result<TableSchema> {
        self.json(self.get(&["tables", table, "schema"])).await
    }

    async fn count_rows(&self, table: &str) -> Result<u64> {
        let count: Count = self.json(self.get(&["tables", table, "count"])).await?;
        Ok(count.count)
    }

    async fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> Result<RowPage> {
        let request = self.get(&["tables", table, "rows"]);
        self.json(request.query(&[("page", page), ("pageSize", page_size)]))
            .await
    }

    async fn get_row(&self, table: &str, key: Value) -> Result<Option<Row>> {
        let Some((segment, pk_type)) = key_segment(&key) else {
            // `pk = NULL` matches no row, in-process too; still check the table exists.
            self.table_schema(table).await?;
            return Ok(None);
        };
        let request = self.get(&["tables", table, "rows", &segment]);
        self.optional(request.query(&[("pkType", pk_type)]), "row").await
    }

    async fn insert_row(&self, table: &str, values: Row) -> Result<u64> {
        let request = self.post(&["tables", table, "rows"]).json(&json!({ "values": values }));
        let inserted: RowsAffected = self.json(request).await?;
        Ok(inserted.rows_affected)
    }

    async fn update_row(&self, table: &str, key: Value, values: Row) -> Result<u64> {
        let Some((segment, pk_type)) = key_segment(&key) else {
            self.table_schema(table).await?;
            return Ok(0);
        };
        let request = self
            .put(&["tables", table, "rows", &segment])
            .query(&[("pkType", pk_type)]);
        self.rows_affected(request.json(&json!({ "values": values }))).await
    }

    async fn delete_row(&self, table: &str, key: Value) -> Result<u64> {
        let Some((segment, pk_type)) = key_segment(&key) else {
            self.table_schema(table).await?;
            return Ok(0);
        };
        let request = self.delete(&["tables", table, "rows", &segment]);
        self.rows_affected(request.query(&[("pkType", pk_type)])).await
    }
}

#[async_trait]
impl DocumentData for HttpClient {
    async fn list_collections(&self) -> Result<Vec<String>> {
        self.json(self.get(&["collections"])).await
    }

    async fn count_documents(&self, collection: &str) -> Result<u64> {
        let count: Count = self.json(self.get(&["collections", collection, "count"])).await?;
        Ok(count.count)
    }

    async fn browse_documents(&self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage> {
        let request = self.get(&["collections", collection]);
        self.json(request.query(&[("page", page), ("pageSize", page_size)]))
            .await
    }

    async fn get_document(&self, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
        let request = self.get(&["collections", collection, "documents", key]);
        let body: Option<DocumentBody> = self.optional(request, "document").await?;
        Ok(body.map(|b| b.document))
    }

    async fn put_document(&self, collection: &str, key: &str, document: serde_json::Value) -> Result<()> {
        let request = self.put(&["collections", collection, "documents", key]);
        self.no_content(request.json(&json!({ "document": document }))).await
    }

    async fn delete_document(&self, collection: &str, key: &str) -> Result<bool> {
        self.delete_if_found(&["collections", collection, "documents", key], "document")
            .await
    }

    async fn drop_collection(&self, collection: &str) -> Result<bool> {
        self.delete_if_found(&["collections", collection], "collection").await
    }
}

#[async_trait]
impl StoredData for HttpClient {
    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>> {
        self.json(self.get(&["saved-queries"])).await
    }

    async fn get_saved_query(&self, name: &str) -> Result<Option<SavedQuery>> {
        self.optional(self.get(&["saved-queries", name]), "saved query").await
    }

    async fn put_saved_query(&self, name: &str, sql_text: &str) -> Result<SavedQuery> {
        self.json(self.put(&["saved-queries", name]).json(&json!({ "sqlText": sql_text })))
            .await
    }

    async fn delete_saved_query(&self, name: &str) -> Result<bool> {
        self.delete_if_found(&["saved-queries", name], "saved query").await
    }

    async fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>> {
        self.json(self.get(&["procedures"])).await
    }

    async fn get_procedure(&self, name: &str) -> Result<Option<ProcedureDefinition>> {
        self.optional(self.get(&["procedures", name]), "procedure").await
    }

    async fn put_procedure(&self, definition: ProcedureDefinition) -> Result<ProcedureDefinition> {
        let name = definition.name.clone();
        self.json(self.put(&["procedures", &name]).json(&definition)).await
    }

    async fn delete_procedure(&self, name: &str) -> Result<bool> {
        self.delete_if_found(&["procedures", name], "procedure").await
    }

    async fn execute_procedure(&self, name: &str, args: Params) -> Result<SqlResult> {
        self.json(
            self.post(&["procedures", name, "execute"])
                .json(&json!({ "args": args })),
        )
        .await
    }
}

#[async_trait]
impl TransactionData for HttpClient {
    async fn begin_transaction_with(&self, options: TransactionOptions) -> Result<TransactionInfo> {
        super::check_transaction_options(options)?;
        let request = self.post(&["transactions"]);
        let request = if options.maintenance {
            request.query(&[("maintenance", "true")])
        } else {
            request
        };
        self.json(request).await
    }

    async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        let request = self.post(&["transactions", transaction_id, "execute"]);
        self.json(request.json(&sql_body(sql, params))).await
    }

    async fn commit_transaction(&self, transaction_id: &str) -> Result<()> {
        self.no_content(self.post(&["transactions", transaction_id, "commit"]))
            .await
    }

    async fn rollback_transaction(&self, transaction_id: &str) -> Result<()> {
        self.no_content(self.post(&["transactions", transaction_id, "rollback"]))
            .await
    }

    fn atomic_participant(&self) -> Option<crate::data::SharedParticipant> {
        // Participant calls address the database itself, never a route of a sharded daemon.
        Some(Arc::new(self.without_route()))
    }
}

impl super::atomic::RoutedCalls for HttpClient {
    fn routed(&self, route: &RouteContext) -> Self {
        self.with_route(route.clone())
    }
}
