//! The baselines: the plain axum service and the plain tonic service someone would write to run
//! SQL on one SQLite file, without shardlite.
//!
//! Both share [`Connections`], a small pool of rusqlite connections on the shard file, and run
//! the statement inline on the handler's thread: a point read by primary key takes a few
//! microseconds, less than handing it to `spawn_blocking` and back, so that is what a plain
//! service tuned for such reads does. Statements are prepared once per connection
//! (`prepare_cached`).
//!
//! - [`serve_axum`]: an `axum::Router` with one `POST /api/sql/execute` handler that takes the
//!   daemon's JSON request (`{"sql": ..., "parameters": [...]}`) and answers the daemon's JSON
//!   result (`isQuery`, `columnNames`, `rows`, `rowsAffected`, `elapsedMs`), cells as
//!   `serde_json::Value`.
//! - [`serve_tonic`]: a `tonic::transport::Server` serving the crate's generated
//!   `shardlite.v1.Shardlite` service (so the same protobuf messages as the daemon) with only
//!   `ExecuteSql` implemented; every other RPC answers `UNIMPLEMENTED`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::serve::ListenerExt as _;
use base64::Engine as _;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, params_from_iter};
use serde::{Deserialize, Serialize};
use shardlite::transport::grpc::proto::shardlite_server::{Shardlite, ShardliteServer};
use shardlite::transport::grpc::proto::{self as pb};
use tonic::{Request, Response, Status};

/// A few connections to one SQLite file, each behind a mutex that is never held across an
/// `.await`; a caller takes the next free one.
pub struct Connections {
    pool: Vec<Mutex<Connection>>,
    next: AtomicUsize,
}

impl Connections {
    pub fn open(file: &Path, size: usize) -> Arc<Self> {
        let pool = (0..size.max(1))
            .map(|_| {
                let conn = Connection::open(file).expect("open the shard file");
                conn.busy_timeout(std::time::Duration::from_secs(5))
                    .expect("busy timeout");
                // What the daemon's shards use; it matters only to writes.
                conn.execute_batch("PRAGMA synchronous = NORMAL;").expect("synchronous");
                Mutex::new(conn)
            })
            .collect();
        Arc::new(Self {
            pool,
            next: AtomicUsize::new(0),
        })
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let n = self.pool.len();
        for i in 0..n {
            if let Ok(conn) = self.pool[(start + i) % n].try_lock() {
                return f(&conn);
            }
        }
        f(&self.pool[start % n].lock().expect("connection"))
    }

    /// Runs one statement and returns its columns, its rows with each cell converted by `cell`,
    /// and the rows it changed.
    fn run<V>(
        &self,
        sql: &str,
        params: Vec<SqlValue>,
        cell: impl Fn(ValueRef<'_>) -> V,
    ) -> rusqlite::Result<Answer<V>> {
        let started = Instant::now();
        self.with(|conn| {
            let mut stmt = conn.prepare_cached(sql)?;
            let column_names: Vec<String> = stmt.column_names().into_iter().map(str::to_owned).collect();
            let width = column_names.len();
            let mut rows = Vec::new();
            let mut cursor = stmt.query(params_from_iter(params))?;
            while let Some(row) = cursor.next()? {
                let mut values = Vec::with_capacity(width);
                for i in 0..width {
                    values.push(cell(row.get_ref(i)?));
                }
                rows.push(values);
            }
            drop(cursor);
            let is_query = width > 0;
            Ok(Answer {
                is_query,
                column_names,
                rows,
                rows_affected: if is_query { 0 } else { conn.changes() },
                elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
            })
        })
    }
}

struct Answer<V> {
    is_query: bool,
    column_names: Vec<String>,
    rows: Vec<Vec<V>>,
    rows_affected: u64,
    elapsed_ms: f64,
}

// ------------------------------------------------------------------------------------ axum

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SqlBody {
    sql: String,
    #[serde(default)]
    parameters: Vec<serde_json::Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SqlAnswer {
    is_query: bool,
    column_names: Vec<String>,
    rows: Vec<Vec<serde_json::Value>>,
    rows_affected: u64,
    elapsed_ms: f64,
}

fn json_param(value: serde_json::Value) -> Result<SqlValue, String> {
    Ok(match value {
        serde_json::Value::Null => SqlValue::Null,
        serde_json::Value::Bool(b) => SqlValue::Integer(i64::from(b)),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => SqlValue::Integer(i),
            (None, Some(f)) => SqlValue::Real(f),
            (None, None) => return Err(format!("{n} is not a SQLite number")),
        },
        serde_json::Value::String(s) => SqlValue::Text(s),
        other => return Err(format!("{other} is not a SQL value")),
    })
}

fn json_cell(value: ValueRef<'_>) -> serde_json::Value {
    match value {
        ValueRef::Null => serde_json::Value::Null,
        ValueRef::Integer(i) => i.into(),
        ValueRef::Real(f) => serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, Into::into),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned().into(),
        ValueRef::Blob(b) => serde_json::json!({ "$blob": base64::engine::general_purpose::STANDARD.encode(b) }),
    }
}

async fn execute_json(
    State(connections): State<Arc<Connections>>,
    axum::Json(body): axum::Json<SqlBody>,
) -> Result<axum::Json<SqlAnswer>, (StatusCode, String)> {
    let bad = |message: String| (StatusCode::BAD_REQUEST, message);
    let params = body
        .parameters
        .into_iter()
        .map(json_param)
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad)?;
    let answer = connections
        .run(&body.sql, params, json_cell)
        .map_err(|err| bad(err.to_string()))?;
    Ok(axum::Json(SqlAnswer {
        is_query: answer.is_query,
        column_names: answer.column_names,
        rows: answer.rows,
        rows_affected: answer.rows_affected,
        elapsed_ms: answer.elapsed_ms,
    }))
}

/// Serves `POST /api/sql/execute` on `127.0.0.1:0` with `axum::serve`, `TCP_NODELAY` on as in
/// the daemon and in tonic; returns the base URL.
pub async fn serve_axum(connections: Arc<Connections>) -> String {
    let app = axum_app(connections);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("bound address");
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// The bare axum server's routes: `POST /api/sql/execute` alone.
pub fn axum_app(connections: Arc<Connections>) -> axum::Router {
    axum::Router::new()
        .route("/api/sql/execute", post(execute_json))
        .with_state(connections)
}

// ------------------------------------------------------------------------------------ tonic

/// The generated service with only `ExecuteSql` implemented.
pub struct BareTonic {
    connections: Arc<Connections>,
}

fn pb_param(value: pb::Value) -> SqlValue {
    use pb::value::Kind;
    match value.kind {
        None | Some(Kind::Null(_)) => SqlValue::Null,
        Some(Kind::Integer(i)) => SqlValue::Integer(i),
        Some(Kind::Real(f)) => SqlValue::Real(f),
        Some(Kind::Text(s)) => SqlValue::Text(s),
        Some(Kind::Blob(b)) => SqlValue::Blob(b),
    }
}

fn pb_cell(value: ValueRef<'_>) -> pb::Value {
    use pb::value::Kind;
    let kind = match value {
        ValueRef::Null => Kind::Null(pb::Null {}),
        ValueRef::Integer(i) => Kind::Integer(i),
        ValueRef::Real(f) => Kind::Real(f),
        ValueRef::Text(t) => Kind::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Kind::Blob(b.to_vec()),
    };
    pb::Value { kind: Some(kind) }
}

impl BareTonic {
    fn execute(&self, request: pb::SqlRequest) -> Result<pb::SqlResult, Status> {
        let params = match request.params.and_then(|p| p.kind) {
            None => Vec::new(),
            Some(pb::params::Kind::Positional(list)) => list.values.into_iter().map(pb_param).collect(),
            Some(pb::params::Kind::Named(_)) => return Err(Status::unimplemented("named parameters")),
        };
        let answer = self
            .connections
            .run(&request.sql, params, pb_cell)
            .map_err(|err| Status::invalid_argument(err.to_string()))?;
        Ok(pb::SqlResult {
            is_query: answer.is_query,
            column_names: answer.column_names,
            rows: answer.rows.into_iter().map(|values| pb::ValueList { values }).collect(),
            rows_affected: answer.rows_affected,
            elapsed_ms: answer.elapsed_ms,
            last_insert_rowid: None,
        })
    }
}

/// Implements the generated trait: `ExecuteSql` over rusqlite, each listed RPC `UNIMPLEMENTED`.
macro_rules! bare_service {
    ($($rpc:ident($request:ident) -> $response:ident;)*) => {
        #[tonic::async_trait]
        impl Shardlite for BareTonic {
            async fn execute_sql(&self, request: Request<pb::SqlRequest>) -> Result<Response<pb::SqlResult>, Status> {
                self.execute(request.into_inner()).map(Response::new)
            }

            $(
                async fn $rpc(&self, _request: Request<pb::$request>) -> Result<Response<pb::$response>, Status> {
                    Err(Status::unimplemented(stringify!($rpc)))
                }
            )*
        }
    };
}

bare_service! {
    get_shard_map(Empty) -> ShardMapSnapshot;
    resolve_shard_route(ResolveShardRouteRequest) -> ShardResolution;
    get_shard_status(Empty) -> ShardStatusList;
    get_shard_heat(Empty) -> ShardHeat;
    get_shard_status_page(ShardStatusPageRequest) -> ShardStatusPage;
    query_all_shards(SqlRequest) -> SqlResult;
    execute_sql_on_all_shards(FanOutSqlRequest) -> ShardSqlResultList;
    execute_read_only_sql_on_all_shards(FanOutSqlRequest) -> ShardSqlResultList;
    get_shard_catalog(Empty) -> ShardCatalogState;
    validate_shard_catalog_update(ShardCatalogUpdateRequest) -> ShardCatalogValidation;
    apply_shard_catalog_update(ShardCatalogUpdateRequest) -> ShardCatalogApplyResult;
    activate_shard_catalog(ActivateShardCatalogRequest) -> ShardCatalogActivation;
    get_shard_schema_status(Empty) -> ShardSchemaStatusReport;
    migrate_shard_schema(MigrateShardSchemaRequest) -> ShardSchemaMigrationReport;
    migrate_exact_route_key(ShardMigrationRequest) -> ShardMigrationResult;
    migrate_bucket_range(ShardMigrationRequest) -> ShardMigrationResult;
    get_shard_migration_progress(ShardMigrationProgressRequest) -> ShardMigrationList;
    get_shard_migration_history(Empty) -> ShardMigrationList;
    resume_shard_migration(ResumeShardMigrationRequest) -> ShardMigrationResult;
    abandon_shard_migration(ShardMigrationProgressRequest) -> ShardMigrationResult;
    resolve_shard_directory_entry(ShardDirectoryLookup) -> ShardDirectoryResolution;
    reserve_shard_directory_entry(ShardDirectoryMutation) -> ShardDirectoryMutationResult;
    activate_shard_directory_entry(ShardDirectoryMutation) -> ShardDirectoryMutationResult;
    upsert_shard_directory_entry(ShardDirectoryMutation) -> ShardDirectoryMutationResult;
    disable_shard_directory_entry(ShardDirectoryMutation) -> ShardDirectoryMutationResult;
    delete_shard_directory_entry(ShardDirectoryMutation) -> ShardDirectoryMutationResult;
    mark_shard_directory_entry_stale(ShardDirectoryMutation) -> ShardDirectoryMutationResult;
    import_shard_directory_entries(ShardDirectoryImport) -> ShardDirectoryImportOutcome;
    list_shard_directory_entries(ShardDirectoryEntriesRequest) -> ShardDirectoryEntryPage;
    create_backup(Empty) -> BackupSet;
    list_backups(Empty) -> BackupSetList;
    list_host_shards(HostShardQuery) -> HostShardPage;
    create_host_shard(CreateHostShardRequest) -> HostShardCreated;
    execute_read_only_sql(SqlRequest) -> SqlResult;
    begin_transaction(BeginTransactionRequest) -> TransactionInfo;
    execute_in_transaction(TransactionSqlRequest) -> SqlResult;
    commit_transaction(TransactionRequest) -> Empty;
    rollback_transaction(TransactionRequest) -> Empty;
    get_info(Empty) -> DatabaseInfo;
    list_tables(Empty) -> NameList;
    get_table_schema(TableRequest) -> TableSchema;
    count_rows(TableRequest) -> Count;
    browse_rows(BrowseRequest) -> RowPage;
    get_row(RowKeyRequest) -> OptionalRow;
    insert_row(InsertRowRequest) -> Count;
    update_row(UpdateRowRequest) -> Count;
    delete_row(RowKeyRequest) -> Count;
    list_collections(Empty) -> NameList;
    count_documents(CollectionRequest) -> Count;
    browse_documents(BrowseRequest) -> DocumentPage;
    get_document(DocumentKeyRequest) -> OptionalDocument;
    put_document(PutDocumentRequest) -> Empty;
    delete_document(DocumentKeyRequest) -> Existed;
    drop_collection(CollectionRequest) -> Existed;
    list_saved_queries(Empty) -> SavedQueryList;
    get_saved_query(NameRequest) -> OptionalSavedQuery;
    put_saved_query(PutSavedQueryRequest) -> SavedQuery;
    delete_saved_query(NameRequest) -> Existed;
    list_procedures(Empty) -> ProcedureList;
    get_procedure(NameRequest) -> OptionalProcedure;
    put_procedure(ProcedureDefinition) -> ProcedureDefinition;
    delete_procedure(NameRequest) -> Existed;
    execute_procedure(ExecuteProcedureRequest) -> SqlResult;
    begin_atomic_session(Empty) -> TransactionInfo;
    execute_in_atomic_session(AtomicSessionSqlRequest) -> SqlResult;
    prepare_atomic_session(PrepareAtomicSessionRequest) -> AtomicPrepared;
    rollback_atomic_session(AtomicSessionRequest) -> Empty;
    run_atomic_step(AtomicStepRequest) -> AtomicStepOutcome;
    get_atomic_decision(AtomicDecisionRequest) -> AtomicDecisionFound;
    get_atomic_state(Empty) -> AtomicParticipantState;
}

/// Serves the service on `127.0.0.1:0` with `tonic::transport::Server` (`TCP_NODELAY` on, as
/// tonic's own `serve` sets it); returns the base URL.
pub fn serve_tonic(connections: Arc<Connections>) -> String {
    serve_tonic_with(connections, None)
}

/// [`serve_tonic`], over TLS with `identity` when there is one (the URL is then `https://`).
pub fn serve_tonic_with(connections: Arc<Connections>, identity: Option<tonic::transport::Identity>) -> String {
    let any_port: SocketAddr = "127.0.0.1:0".parse().expect("address");
    let incoming = tonic::transport::server::TcpIncoming::bind(any_port)
        .expect("bind 127.0.0.1:0")
        .with_nodelay(Some(true));
    let addr = incoming.local_addr().expect("bound address");
    let scheme = if identity.is_some() { "https" } else { "http" };
    let mut builder = tonic::transport::Server::builder();
    if let Some(identity) = identity {
        let tls = tonic::transport::ServerTlsConfig::new().identity(identity);
        builder = builder.tls_config(tls).expect("server TLS configuration");
    }
    let server = builder.add_service(ShardliteServer::new(BareTonic { connections }));
    tokio::spawn(server.serve_with_incoming(incoming));
    format!("{scheme}://{addr}")
}
