//! A REST client of a shardlite daemon, implementing [`DataClient`] and [`ShardAdmin`].
//!
//! The bound route travels as the `X-CSharpDB-Keyspace` / `X-CSharpDB-Shard-Key` headers on
//! every request, the API key in its configured header. Path segments (table names, keys,
//! transaction ids) are percent-encoded. Error bodies (`application/problem+json`) decode into
//! [`Error::Remote`] with the daemon's [`ErrorKind`] and SQLite code, so callers
//! branch exactly as they would in-process; a daemon that cannot be reached, or does not answer
//! within the request timeout, is [`Error::Transport`] naming the endpoint.
//!
//! ```no_run
//! # async fn demo() -> shardlite::Result<()> {
//! use shardlite::client::{DataClient, Params};
//! use shardlite::transport::RemoteOptions;
//! use shardlite::transport::http::HttpClient;
//! use shardlite::RouteContext;
//!
//! let daemon = HttpClient::new(RemoteOptions::new("http://127.0.0.1:61818"))?;
//! let june = daemon.with_route(RouteContext::new("orders_by_month", "2026-06")?);
//! june.execute_sql("SELECT count(*) FROM orders", Params::none()).await?;
//! # Ok(()) }
//! ```

use std::sync::{Arc, Once};

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::RemoteOptions;
use crate::data::CatalogState;
use crate::data::{
    DataClient, DatabaseInfo, DocumentPage, Params, ProcedureDefinition, Row, RowPage, SavedQuery, ShardAdmin,
    ShardSqlResult, ShardStatus, SqlResult, TableSchema, TransactionInfo, Value,
};
use crate::error::{Error, ErrorKind, Result};
use crate::map::ShardMapSnapshot;
use crate::routing::{ResolvedRoute, RouteContext};
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
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("endpoint", &self.shared.endpoint)
            .field("route", &self.route)
            .finish_non_exhaustive()
    }
}

/// A problem body, as the daemon sends it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Problem {
    #[serde(default)]
    detail: String,
    #[serde(default)]
    error_code: String,
    #[serde(default)]
    sqlite_code: Option<i32>,
    /// For `not_found`: the kind of object that is missing (`row`, `document`, ...).
    #[serde(default)]
    missing: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RowsAffected {
    rows_affected: u64,
}

#[derive(Deserialize)]
struct Count {
    count: u64,
}

#[derive(Deserialize)]
struct DocumentBody {
    document: serde_json::Value,
}

fn install_crypto_provider() {
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

        install_crypto_provider();
        let mut builder = reqwest::Client::builder().default_headers(headers);
        if !options.connect_timeout.is_zero() {
            builder = builder.connect_timeout(options.connect_timeout);
        }
        if !options.request_timeout.is_zero() {
            builder = builder.timeout(options.request_timeout);
        }
        if let Some(pem) = &options.ca_certificate_pem {
            let certificate = reqwest::Certificate::from_pem(pem).map_err(|e| Error::ConnectionString {
                reason: format!("the CA certificate does not parse: {e}"),
            })?;
            builder = builder.add_root_certificate(certificate);
        }
        let http = builder.build().map_err(|e| Error::Transport {
            endpoint: endpoint.clone(),
            reason: format!("the HTTP client could not be built: {e}"),
        })?;
        Ok(Self {
            shared: Arc::new(Shared { http, base, endpoint }),
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

    /// A client without a route, sharing this client's connections.
    pub fn without_route(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            route: None,
        }
    }

    fn url(&self, segments: &[&str]) -> url::Url {
        let mut url = self.shared.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.clear().extend(segments);
        }
        url
    }

    fn request(&self, method: Method, segments: &[&str]) -> RequestBuilder {
        let mut request = self.shared.http.request(method, self.url(segments));
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

    fn transport_error(&self, err: &reqwest::Error) -> Error {
        let reason = if err.is_timeout() {
            "no answer within the request timeout".to_owned()
        } else if err.is_connect() {
            format!("could not connect ({})", root_cause(err))
        } else {
            root_cause(err)
        };
        Error::Transport {
            endpoint: self.shared.endpoint.clone(),
            reason,
        }
    }

    /// Sends a request; a success status gives the response, an error status its decoded error
    /// and, for `not_found`, the kind of object that is missing.
    async fn call(&self, request: RequestBuilder) -> std::result::Result<reqwest::Response, Failure> {
        let response = request.send().await.map_err(|e| Failure {
            error: self.transport_error(&e),
            missing: None,
        })?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let body = response.bytes().await.unwrap_or_default();
        Err(match serde_json::from_slice::<Problem>(&body) {
            Ok(problem) if !problem.error_code.is_empty() => Failure {
                error: Error::Remote {
                    kind: ErrorKind::from_code(&problem.error_code).unwrap_or_else(|| kind_for_status(status)),
                    message: problem.detail,
                    sqlite_code: problem.sqlite_code,
                },
                missing: problem.missing,
            },
            _ => Failure {
                error: Error::Transport {
                    endpoint: self.shared.endpoint.clone(),
                    reason: format!("the daemon answered {status} without an error body; is this a shardlite daemon?"),
                },
                missing: None,
            },
        })
    }

    async fn read_json<T: DeserializeOwned>(&self, response: reqwest::Response) -> Result<T> {
        let body = response.bytes().await.map_err(|e| self.transport_error(&e))?;
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
    async fn delete(&self, segments: &[&str], object: &str) -> Result<bool> {
        match self.call(self.request(Method::DELETE, segments)).await {
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

/// A failed call: the error, and for `not_found` the kind of object that is missing.
struct Failure {
    error: Error,
    missing: Option<String>,
}

impl Failure {
    fn is_missing(&self, object: &str) -> bool {
        self.error.kind() == ErrorKind::NotFound && self.missing.as_deref() == Some(object)
    }
}

/// The messages of an error chain, outermost first, without repeats.
fn root_cause(err: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![err.to_string()];
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

/// The kind for a status whose problem body carries no crate error code.
fn kind_for_status(status: StatusCode) -> ErrorKind {
    match status {
        StatusCode::UNAUTHORIZED => ErrorKind::Unauthenticated,
        StatusCode::NOT_FOUND => ErrorKind::NotFound,
        StatusCode::CONFLICT => ErrorKind::Conflict,
        StatusCode::SERVICE_UNAVAILABLE => ErrorKind::Unavailable,
        s if s.is_client_error() => ErrorKind::InvalidInput,
        _ => ErrorKind::Internal,
    }
}

fn sql_body(sql: &str, params: Params) -> serde_json::Value {
    if params.is_empty() {
        json!({ "sql": sql })
    } else {
        json!({ "sql": sql, "parameters": params })
    }
}

/// The path segment and `pkType` of a primary-key value.
fn key_segment(key: &Value) -> Option<(String, &'static str)> {
    match key {
        Value::Null => None,
        Value::Integer(v) => Some((v.to_string(), "integer")),
        Value::Real(v) => Some((v.to_string(), "real")),
        Value::Text(v) => Some((v.clone(), "text")),
        Value::Blob(v) => Some((URL_SAFE_NO_PAD.encode(v), "blob")),
    }
}

#[async_trait]
impl DataClient for HttpClient {
    async fn execute_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.json(
            self.request(Method::POST, &["api", "sql", "execute"])
                .json(&sql_body(sql, params)),
        )
        .await
    }

    async fn execute_read_only_sql(&self, sql: &str, params: Params) -> Result<SqlResult> {
        self.json(
            self.request(Method::POST, &["api", "sql", "read-only"])
                .json(&sql_body(sql, params)),
        )
        .await
    }

    async fn info(&self) -> Result<DatabaseInfo> {
        self.json(self.request(Method::GET, &["api", "info"])).await
    }

    async fn list_tables(&self) -> Result<Vec<String>> {
        self.json(self.request(Method::GET, &["api", "tables"])).await
    }

    async fn table_schema(&self, table: &str) -> Result<TableSchema> {
        self.json(self.request(Method::GET, &["api", "tables", table, "schema"]))
            .await
    }

    async fn count_rows(&self, table: &str) -> Result<u64> {
        let count: Count = self
            .json(self.request(Method::GET, &["api", "tables", table, "count"]))
            .await?;
        Ok(count.count)
    }

    async fn browse_rows(&self, table: &str, page: u32, page_size: u32) -> Result<RowPage> {
        self.json(
            self.request(Method::GET, &["api", "tables", table, "rows"])
                .query(&[("page", page), ("pageSize", page_size)]),
        )
        .await
    }

    async fn get_row(&self, table: &str, key: Value) -> Result<Option<Row>> {
        let Some((segment, pk_type)) = key_segment(&key) else {
            // `pk = NULL` matches no row, in-process too; still check the table exists.
            self.table_schema(table).await?;
            return Ok(None);
        };
        self.optional(
            self.request(Method::GET, &["api", "tables", table, "rows", &segment])
                .query(&[("pkType", pk_type)]),
            "row",
        )
        .await
    }

    async fn insert_row(&self, table: &str, values: Row) -> Result<u64> {
        let inserted: RowsAffected = self
            .json(
                self.request(Method::POST, &["api", "tables", table, "rows"])
                    .json(&json!({ "values": values })),
            )
            .await?;
        Ok(inserted.rows_affected)
    }

    async fn update_row(&self, table: &str, key: Value, values: Row) -> Result<u64> {
        let Some((segment, pk_type)) = key_segment(&key) else {
            self.table_schema(table).await?;
            return Ok(0);
        };
        self.rows_affected(
            self.request(Method::PUT, &["api", "tables", table, "rows", &segment])
                .query(&[("pkType", pk_type)])
                .json(&json!({ "values": values })),
        )
        .await
    }

    async fn delete_row(&self, table: &str, key: Value) -> Result<u64> {
        let Some((segment, pk_type)) = key_segment(&key) else {
            self.table_schema(table).await?;
            return Ok(0);
        };
        self.rows_affected(
            self.request(Method::DELETE, &["api", "tables", table, "rows", &segment])
                .query(&[("pkType", pk_type)]),
        )
        .await
    }

    async fn list_collections(&self) -> Result<Vec<String>> {
        self.json(self.request(Method::GET, &["api", "collections"])).await
    }

    async fn count_documents(&self, collection: &str) -> Result<u64> {
        let count: Count = self
            .json(self.request(Method::GET, &["api", "collections", collection, "count"]))
            .await?;
        Ok(count.count)
    }

    async fn browse_documents(&self, collection: &str, page: u32, page_size: u32) -> Result<DocumentPage> {
        self.json(
            self.request(Method::GET, &["api", "collections", collection])
                .query(&[("page", page), ("pageSize", page_size)]),
        )
        .await
    }

    async fn get_document(&self, collection: &str, key: &str) -> Result<Option<serde_json::Value>> {
        let body: Option<DocumentBody> = self
            .optional(
                self.request(Method::GET, &["api", "collections", collection, "documents", key]),
                "document",
            )
            .await?;
        Ok(body.map(|b| b.document))
    }

    async fn put_document(&self, collection: &str, key: &str, document: serde_json::Value) -> Result<()> {
        self.no_content(
            self.request(Method::PUT, &["api", "collections", collection, "documents", key])
                .json(&json!({ "document": document })),
        )
        .await
    }

    async fn delete_document(&self, collection: &str, key: &str) -> Result<bool> {
        self.delete(&["api", "collections", collection, "documents", key], "document")
            .await
    }

    async fn drop_collection(&self, collection: &str) -> Result<bool> {
        self.delete(&["api", "collections", collection], "collection").await
    }

    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>> {
        self.json(self.request(Method::GET, &["api", "saved-queries"])).await
    }

    async fn get_saved_query(&self, name: &str) -> Result<Option<SavedQuery>> {
        self.optional(
            self.request(Method::GET, &["api", "saved-queries", name]),
            "saved query",
        )
        .await
    }

    async fn put_saved_query(&self, name: &str, sql_text: &str) -> Result<SavedQuery> {
        self.json(
            self.request(Method::PUT, &["api", "saved-queries", name])
                .json(&json!({ "sqlText": sql_text })),
        )
        .await
    }

    async fn delete_saved_query(&self, name: &str) -> Result<bool> {
        self.delete(&["api", "saved-queries", name], "saved query").await
    }

    async fn list_procedures(&self) -> Result<Vec<ProcedureDefinition>> {
        self.json(self.request(Method::GET, &["api", "procedures"])).await
    }

    async fn get_procedure(&self, name: &str) -> Result<Option<ProcedureDefinition>> {
        self.optional(self.request(Method::GET, &["api", "procedures", name]), "procedure")
            .await
    }

    async fn put_procedure(&self, definition: ProcedureDefinition) -> Result<ProcedureDefinition> {
        let name = definition.name.clone();
        self.json(
            self.request(Method::PUT, &["api", "procedures", &name])
                .json(&definition),
        )
        .await
    }

    async fn delete_procedure(&self, name: &str) -> Result<bool> {
        self.delete(&["api", "procedures", name], "procedure").await
    }

    async fn execute_procedure(&self, name: &str, args: Params) -> Result<SqlResult> {
        self.json(
            self.request(Method::POST, &["api", "procedures", name, "execute"])
                .json(&json!({ "args": args })),
        )
        .await
    }

    async fn begin_transaction(&self) -> Result<TransactionInfo> {
        self.json(self.request(Method::POST, &["api", "transactions"])).await
    }

    async fn execute_in_transaction(&self, transaction_id: &str, sql: &str, params: Params) -> Result<SqlResult> {
        self.json(
            self.request(Method::POST, &["api", "transactions", transaction_id, "execute"])
                .json(&sql_body(sql, params)),
        )
        .await
    }

    async fn commit_transaction(&self, transaction_id: &str) -> Result<()> {
        self.no_content(self.request(Method::POST, &["api", "transactions", transaction_id, "commit"]))
            .await
    }

    async fn rollback_transaction(&self, transaction_id: &str) -> Result<()> {
        self.no_content(self.request(Method::POST, &["api", "transactions", transaction_id, "rollback"]))
            .await
    }
}

#[async_trait]
impl ShardAdmin for HttpClient {
    async fn shard_map(&self) -> Result<ShardMapSnapshot> {
        self.json(self.request(Method::GET, &["api", "sharding", "map"])).await
    }

    async fn resolve_route(&self, route: &RouteContext) -> Result<ResolvedRoute> {
        self.json(
            self.request(Method::POST, &["api", "sharding", "resolve"])
                .json(&json!({ "keyspace": route.keyspace(), "key": route.key() })),
        )
        .await
    }

    async fn shard_status(&self) -> Result<Vec<ShardStatus>> {
        self.json(self.request(Method::GET, &["api", "sharding", "status"]))
            .await
    }

    async fn execute_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        self.json(
            self.request(Method::POST, &["api", "sharding", "sql", "execute-all"])
                .json(&json!({ "sql": sql })),
        )
        .await
    }

    async fn execute_read_only_sql_on_all_shards(&self, sql: &str) -> Result<Vec<ShardSqlResult>> {
        self.json(
            self.request(Method::POST, &["api", "sharding", "sql", "read-all"])
                .json(&json!({ "sql": sql })),
        )
        .await
    }

    async fn catalog_state(&self) -> Result<CatalogState> {
        self.json(self.request(Method::GET, &["api", "sharding", "catalog"]))
            .await
    }
}
