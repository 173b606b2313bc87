//! One behavioural suite, run in-process, over HTTP and over gRPC: the transcripts of results
//! and error kinds must be identical.

use std::sync::Arc;

use crate::support::{route, seeded_master};
use shardlite::client::{
    DataClient, DocumentData, Params, ProcedureDefinition, RowData, ShardAdmin, ShardedClient, SqlData, SqlResult,
    StoredData, TransactionData, Value,
};
use shardlite::{ErrorKind, RouteContext};

/// One way of reaching a sharded deployment.
struct Surface {
    name: &'static str,
    /// A data client bound to a route.
    routed: Box<dyn Fn(RouteContext) -> Arc<dyn DataClient> + Send + Sync>,
    /// What the surface offers with no route.
    unrouted: Arc<dyn Unrouted>,
    /// The shard-admin client.
    admin: Arc<dyn ShardAdmin>,
}

/// What a surface offers with no route: transaction calls routed by the id alone, and SQL,
/// which needs a route.
#[async_trait::async_trait]
trait Unrouted: Send + Sync {
    async fn execute_in_transaction(&self, id: &str, sql: &str, params: Params) -> shardlite::Result<SqlResult>;
    async fn commit_transaction(&self, id: &str) -> shardlite::Result<()>;
    /// SQL sent without a route.
    async fn execute_sql(&self, sql: &str, params: Params) -> shardlite::Result<SqlResult>;
}

#[async_trait::async_trait]
impl Unrouted for ShardedClient {
    async fn execute_in_transaction(&self, id: &str, sql: &str, params: Params) -> shardlite::Result<SqlResult> {
        self.transactions().execute(id, sql, params).await
    }
    async fn commit_transaction(&self, id: &str) -> shardlite::Result<()> {
        self.transactions().commit(id).await
    }
    async fn execute_sql(&self, _sql: &str, _params: Params) -> shardlite::Result<SqlResult> {
        // In-process the call cannot be written: a sharded client has no `execute_sql`, and a
        // connection without a route has no data client. What remote surfaces must answer:
        Err(shardlite::Error::RouteRequired)
    }
}

/// Records outcomes in a transport-neutral form: values as JSON, errors as their kind.
#[derive(Default)]
struct Transcript(Vec<String>);

impl Transcript {
    fn ok<T: serde::Serialize>(&mut self, step: &str, value: &T) {
        let mut json = serde_json::to_value(value).unwrap();
        scrub(&mut json);
        self.0.push(format!("{step}: ok {json}"));
    }

    fn record<T: serde::Serialize>(&mut self, step: &str, outcome: shardlite::Result<T>) -> Option<T> {
        match outcome {
            Ok(value) => {
                self.ok(step, &value);
                Some(value)
            }
            Err(err) => {
                self.0.push(format!("{step}: error {}", err.kind()));
                None
            }
        }
    }

    fn expect_kind<T: std::fmt::Debug>(&mut self, step: &str, outcome: shardlite::Result<T>, kind: ErrorKind) {
        match outcome {
            Ok(value) => panic!("{step}: expected {kind}, got {value:?}"),
            Err(err) => {
                assert_eq!(err.kind(), kind, "{step}: {err}");
                self.0.push(format!("{step}: error {}", err.kind()));
            }
        }
    }
}

/// Removes what legitimately differs between runs: timings, random transaction ids, file paths.
fn scrub(json: &mut serde_json::Value) {
    match json {
        serde_json::Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match key.as_str() {
                    "elapsedMs" => *value = serde_json::Value::from(0),
                    "createdUtc" | "updatedUtc" | "expiresAtUtc" | "dataSource" | "appliedUtc" => {
                        *value = serde_json::Value::from("-")
                    }
                    "transactionId" => {
                        let text = value.as_str().unwrap_or_default();
                        let prefix = text.rfind(':').map_or(text, |i| &text[..i]);
                        *value = serde_json::Value::from(format!("{prefix}:*"));
                    }
                    _ => scrub(value),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(scrub),
        _ => {}
    }
}

async fn behaviour_suite(surface: &Surface) -> Vec<String> {
    let mut t = Transcript::default();
    let a = (surface.routed)(route("tenant-a"));
    let b = (surface.routed)(route("tenant-b"));

    // Schema on every shard, then SQL with positional and named parameters.
    t.record(
        "create",
        surface
            .admin
            .execute_sql_on_all_shards(
                "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER, price REAL, data BLOB)",
            )
            .await,
    );
    t.record(
        "insert positional",
        a.execute_sql(
            "INSERT INTO items VALUES (?1, ?2, ?3, ?4, ?5)",
            Params::from(vec![
                Value::Integer(1),
                Value::Text("alpha\0🙂".into()),
                Value::Integer(i64::MAX),
                Value::Real(-0.0),
                Value::Blob(vec![0, 255]),
            ]),
        )
        .await,
    );
    t.record(
        "insert named",
        b.execute_sql(
            "INSERT INTO items (id, name, qty, price) VALUES (:id, @name, $qty, :price)",
            Params::named([
                ("id", Value::Integer(2)),
                ("name", "beta".into()),
                ("qty", Value::Integer(i64::MIN)),
                ("price", Value::Real(f64::MIN_POSITIVE / 2.0)),
            ]),
        )
        .await,
    );
    t.record(
        "select a",
        a.execute_sql("SELECT * FROM items ORDER BY id", Params::none()).await,
    );
    t.record(
        "select b",
        b.execute_sql("SELECT * FROM items ORDER BY id", Params::none()).await,
    );
    t.expect_kind(
        "sql error",
        a.execute_sql("SELEC nonsense", Params::none()).await,
        ErrorKind::Sql,
    );
    t.expect_kind(
        "unique violation",
        a.execute_sql("INSERT INTO items (id) VALUES (1)", Params::none()).await,
        ErrorKind::Constraint,
    );
    t.expect_kind(
        "missing parameter",
        a.execute_sql("SELECT :nope", Params::none()).await,
        ErrorKind::InvalidInput,
    );
    // A script given a value none of its placeholders takes runs none of its statements.
    t.expect_kind(
        "script with an unused value",
        a.execute_sql(
            "INSERT INTO items (id) VALUES (:id); UPDATE items SET qty = 0",
            Params::named([("id", 40), ("qty", 0)]),
        )
        .await,
        ErrorKind::InvalidInput,
    );
    t.record("count after refused script", a.count_rows("items").await);

    // Rows.
    t.record("tables", a.list_tables().await);
    t.record("schema", a.table_schema("items").await);
    t.record("count", a.count_rows("items").await);
    t.record("browse", a.browse_rows("items", 1, 10).await);
    t.record(
        "insert row",
        a.insert_row(
            "items",
            [
                ("id".to_owned(), Value::Integer(3)),
                ("name".to_owned(), "gamma".into()),
            ]
            .into(),
        )
        .await,
    );
    t.record(
        "update row",
        a.update_row(
            "items",
            Value::Integer(3),
            [("qty".to_owned(), Value::Integer(7))].into(),
        )
        .await,
    );
    t.record("get row", a.get_row("items", Value::Integer(3)).await);
    t.record("get missing row", a.get_row("items", Value::Integer(99)).await);
    t.record("delete row", a.delete_row("items", Value::Integer(3)).await);
    t.expect_kind("missing table", a.count_rows("nope").await, ErrorKind::NotFound);

    // Collections.
    t.record(
        "put document",
        a.put_document("orders", "doc-1", serde_json::json!({"status": "paid", "n": 1}))
            .await,
    );
    t.record("get document", a.get_document("orders", "doc-1").await);
    t.record("get document elsewhere", b.get_document("orders", "doc-1").await);
    t.record("collections", a.list_collections().await);
    t.record("count documents", a.count_documents("orders").await);
    t.record("browse documents", a.browse_documents("orders", 1, 5).await);
    t.record("delete document", a.delete_document("orders", "doc-1").await);
    t.record("drop collection", a.drop_collection("orders").await);

    // Saved queries and procedures.
    t.record("put saved query", a.put_saved_query("all", "SELECT * FROM items").await);
    t.record("get saved query", a.get_saved_query("all").await);
    t.record("saved queries", a.list_saved_queries().await);
    t.record("delete saved query", a.delete_saved_query("all").await);
    let procedure: ProcedureDefinition = serde_json::from_value(serde_json::json!({
        "name": "bump",
        "bodySql": "UPDATE items SET qty = coalesce(qty, 0) + :by WHERE id = :id; SELECT qty FROM items WHERE id = :id",
        "parameters": [{"name": "id"}, {"name": "by", "required": false, "default": 1}],
        "description": "adds to a quantity"
    }))
    .unwrap();
    t.record("put procedure", a.put_procedure(procedure).await);
    t.record("procedures", a.list_procedures().await);
    t.record("get procedure", a.get_procedure("bump").await);
    t.record(
        "execute procedure",
        a.execute_procedure("bump", Params::named([("id", 1), ("by", -5)]))
            .await,
    );
    t.expect_kind(
        "procedure on another shard",
        b.execute_procedure("bump", Params::named([("id", 2)])).await,
        ErrorKind::NotFound,
    );
    t.expect_kind(
        "procedure missing argument",
        a.execute_procedure("bump", Params::none()).await,
        ErrorKind::InvalidInput,
    );
    t.record("delete procedure", a.delete_procedure("bump").await);
    t.record("info", a.info().await);

    // Transactions: commit, rollback, conflicting route, id-only routing.
    let tx = t.record("begin", a.begin_transaction().await).unwrap();
    t.record(
        "tx insert",
        a.execute_in_transaction(
            &tx.transaction_id,
            "INSERT INTO items (id, name) VALUES (10, 'tx')",
            Params::none(),
        )
        .await,
    );
    t.expect_kind(
        "tx conflicting route",
        b.execute_in_transaction(&tx.transaction_id, "SELECT 1", Params::none())
            .await,
        ErrorKind::Conflict,
    );
    t.record(
        "tx commit by id",
        surface.unrouted.commit_transaction(&tx.transaction_id).await,
    );
    let tx = t.record("begin 2", a.begin_transaction().await).unwrap();
    t.record(
        "tx2 insert",
        surface
            .unrouted
            .execute_in_transaction(
                &tx.transaction_id,
                "INSERT INTO items (id, name) VALUES (11, 'gone')",
                Params::none(),
            )
            .await,
    );
    t.record("tx2 rollback", a.rollback_transaction(&tx.transaction_id).await);
    t.expect_kind(
        "tx2 after rollback",
        a.commit_transaction(&tx.transaction_id).await,
        ErrorKind::NotFound,
    );
    t.record(
        "after transactions",
        a.execute_sql("SELECT id, name FROM items ORDER BY id", Params::none())
            .await,
    );
    t.expect_kind(
        "malformed transaction id",
        surface.unrouted.commit_transaction("csdbshard:one:s0:x").await,
        ErrorKind::InvalidInput,
    );
    t.expect_kind(
        "stale transaction id",
        surface.unrouted.commit_transaction("csdbshard:7:s0:x").await,
        ErrorKind::StaleMapVersion,
    );

    // Routing errors.
    t.expect_kind(
        "no route",
        surface.unrouted.execute_sql("SELECT 1", Params::none()).await,
        ErrorKind::RouteRequired,
    );
    t.expect_kind(
        "unknown keyspace",
        (surface.routed)(RouteContext::new("nope", "k").unwrap())
            .execute_sql("SELECT 1", Params::none())
            .await,
        ErrorKind::UnknownKeyspace,
    );

    // Shard admin.
    t.record("map", surface.admin.shard_map().await);
    t.record("resolve", surface.admin.resolve_route(&route("tenant-b")).await);
    t.record("status", surface.admin.shard_status().await);
    t.record(
        "read-all",
        surface
            .admin
            .execute_read_only_sql_on_all_shards("SELECT count(*) AS n FROM items")
            .await,
    );
    t.expect_kind(
        "read-all write",
        surface
            .admin
            .execute_read_only_sql_on_all_shards("DELETE FROM items")
            .await,
        ErrorKind::ReadOnly,
    );
    t.record("catalog", surface.admin.catalog_state().await);
    t.0
}

fn in_process(sharded: ShardedClient) -> Surface {
    let for_route = sharded.clone();
    Surface {
        name: "in-process",
        routed: Box::new(move |route| Arc::new(for_route.for_route(route)) as Arc<dyn DataClient>),
        unrouted: Arc::new(sharded.clone()),
        admin: Arc::new(sharded),
    }
}

async fn transcript_in_process() -> Vec<String> {
    let dir = crate::support::temp_dir();
    let master = seeded_master(dir.path()).await;
    let surface = in_process(ShardedClient::open(&master).await.unwrap());
    let transcript = behaviour_suite(&surface).await;
    assert!(!surface.name.is_empty());
    transcript
}

#[cfg(all(feature = "server", feature = "grpc", feature = "http"))]
mod remote {
    use super::*;
    use crate::support::daemon::start_daemon_on;
    use shardlite::server::ServerConfig;
    use shardlite::transport::RemoteOptions;
    use shardlite::transport::grpc::GrpcClient;
    use shardlite::transport::http::HttpClient;

    /// A remote client with no route: the daemon answers for what needs one.
    struct Daemon<C>(C);

    #[async_trait::async_trait]
    impl<C: DataClient> Unrouted for Daemon<C> {
        async fn execute_in_transaction(&self, id: &str, sql: &str, params: Params) -> shardlite::Result<SqlResult> {
            self.0.execute_in_transaction(id, sql, params).await
        }
        async fn commit_transaction(&self, id: &str) -> shardlite::Result<()> {
            self.0.commit_transaction(id).await
        }
        async fn execute_sql(&self, sql: &str, params: Params) -> shardlite::Result<SqlResult> {
            self.0.execute_sql(sql, params).await
        }
    }

    fn over_grpc(endpoint: &str) -> Surface {
        let client = GrpcClient::new(RemoteOptions::new(endpoint)).unwrap();
        let routed = client.clone();
        Surface {
            name: "grpc",
            routed: Box::new(move |route| Arc::new(routed.with_route(route)) as Arc<dyn DataClient>),
            unrouted: Arc::new(Daemon(client.clone())),
            admin: Arc::new(client),
        }
    }

    fn over_http(endpoint: &str) -> Surface {
        let client = HttpClient::new(RemoteOptions::new(endpoint)).unwrap();
        let routed = client.clone();
        Surface {
            name: "http",
            routed: Box::new(move |route| Arc::new(routed.with_route(route)) as Arc<dyn DataClient>),
            unrouted: Arc::new(Daemon(client.clone())),
            admin: Arc::new(client),
        }
    }

    async fn transcript_over(surface: fn(&str) -> Surface) -> Vec<String> {
        let dir = crate::support::temp_dir();
        let master = seeded_master(dir.path()).await;
        let daemon = start_daemon_on(&master, ServerConfig::default()).await;
        let surface = surface(&daemon.base_url);
        let transcript = behaviour_suite(&surface).await;
        daemon.stop().await.unwrap();
        transcript
    }

    fn assert_same(name: &str, expected: &[String], actual: &[String]) {
        for (i, (want, got)) in expected.iter().zip(actual).enumerate() {
            assert_eq!(want, got, "{name}: step {i} differs from in-process");
        }
        assert_eq!(expected.len(), actual.len(), "{name}: transcript lengths differ");
    }

    #[tokio::test]
    async fn grpc_behaves_exactly_like_in_process() {
        let expected = transcript_in_process().await;
        assert_same("grpc", &expected, &transcript_over(over_grpc).await);
    }

    #[tokio::test]
    async fn http_behaves_exactly_like_in_process() {
        let expected = transcript_in_process().await;
        assert_same("http", &expected, &transcript_over(over_http).await);
    }
}

/// The blocking client as a surface: every call runs on a plain thread of its own (no async
/// runtime in reach), as a blocking caller's would.
mod blocking_surface {
    use super::*;
    use shardlite::client::blocking;
    use shardlite::client::{
        CatalogState, DatabaseInfo, DocumentPage, ProcedureDefinition, Row, RowPage, SavedQuery, ShardSqlResult,
        ShardStatus, SqlResult, TableSchema, TransactionInfo, TransactionOptions,
    };
    use shardlite::data::{
        ActivationRequest, ActivationResult, CatalogAdmin, CatalogApplyResult, CatalogUpdateRequest, CatalogValidation,
        FanOut, SchemaAdmin, SchemaMigrationReport, SchemaMigrationRequest, SchemaStatusReport, Topology,
    };
    use shardlite::map::ShardMapSnapshot;
    use shardlite::routing::ResolvedRoute;

    fn on_plain_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|scope| scope.spawn(f).join().unwrap())
    }

    /// Implements `$trait` for `$ty`: the listed methods call the blocking method of the same
    /// name on a plain thread; the items after them are written out.
    macro_rules! forward {
        ($trait:ident for $ty:ty { $($name:ident($($arg:ident: $aty:ty),*) -> $out:ty;)* } $($extra:item)*) => {
            #[async_trait::async_trait]
            impl $trait for $ty {
                $(
                    async fn $name(&self $(, $arg: $aty)*) -> shardlite::Result<$out> {
                        on_plain_thread(|| self.0.$name($($arg),*))
                    }
                )*
                $($extra)*
            }
        };
    }

    struct Routed(blocking::RoutedClient);
    struct NoRoute(blocking::ShardedClient);

    forward! { SqlData for Routed {
            execute_sql(sql: &str, params: Params) -> SqlResult;
            execute_read_only_sql(sql: &str, params: Params) -> SqlResult;
            info() -> DatabaseInfo;
    } }

    forward! { RowData for Routed {
            list_tables() -> Vec<String>;
            table_schema(table: &str) -> TableSchema;
            count_rows(table: &str) -> u64;
            browse_rows(table: &str, page: u32, page_size: u32) -> RowPage;
            get_row(table: &str, key: Value) -> Option<Row>;
            insert_row(table: &str, values: Row) -> u64;
            update_row(table: &str, key: Value, values: Row) -> u64;
            delete_row(table: &str, key: Value) -> u64;
    } }

    forward! { DocumentData for Routed {
            list_collections() -> Vec<String>;
            count_documents(collection: &str) -> u64;
            browse_documents(collection: &str, page: u32, page_size: u32) -> DocumentPage;
            get_document(collection: &str, key: &str) -> Option<serde_json::Value>;
            put_document(collection: &str, key: &str, document: serde_json::Value) -> ();
            delete_document(collection: &str, key: &str) -> bool;
            drop_collection(collection: &str) -> bool;
    } }

    forward! { StoredData for Routed {
            list_saved_queries() -> Vec<SavedQuery>;
            get_saved_query(name: &str) -> Option<SavedQuery>;
            put_saved_query(name: &str, sql_text: &str) -> SavedQuery;
            delete_saved_query(name: &str) -> bool;
            list_procedures() -> Vec<ProcedureDefinition>;
            get_procedure(name: &str) -> Option<ProcedureDefinition>;
            put_procedure(definition: ProcedureDefinition) -> ProcedureDefinition;
            delete_procedure(name: &str) -> bool;
            execute_procedure(name: &str, args: Params) -> SqlResult;
    } }

    forward! { TransactionData for Routed {
            begin_transaction_with(options: TransactionOptions) -> TransactionInfo;
            execute_in_transaction(transaction_id: &str, sql: &str, params: Params) -> SqlResult;
            commit_transaction(transaction_id: &str) -> ();
            rollback_transaction(transaction_id: &str) -> ();
    } }

    // Without a route the blocking client offers only info and id-routed transaction calls; SQL
    // has no form there, as on the async client.
    #[async_trait::async_trait]
    impl Unrouted for NoRoute {
        async fn execute_in_transaction(&self, id: &str, sql: &str, params: Params) -> shardlite::Result<SqlResult> {
            on_plain_thread(|| self.0.transactions().execute(id, sql, params))
        }
        async fn commit_transaction(&self, id: &str) -> shardlite::Result<()> {
            on_plain_thread(|| self.0.transactions().commit(id))
        }
        async fn execute_sql(&self, _sql: &str, _params: Params) -> shardlite::Result<SqlResult> {
            Err(shardlite::Error::RouteRequired)
        }
    }

    #[async_trait::async_trait]
    impl FanOut for NoRoute {
        async fn execute_sql_on_all_shards(&self, sql: &str) -> shardlite::Result<Vec<ShardSqlResult>> {
            on_plain_thread(|| self.0.query().execute_all(sql))
        }
        async fn execute_read_only_sql_on_all_shards(&self, sql: &str) -> shardlite::Result<Vec<ShardSqlResult>> {
            on_plain_thread(|| self.0.query().read_all(sql))
        }
        async fn query_all_shards(&self, sql: &str, params: Params) -> shardlite::Result<SqlResult> {
            on_plain_thread(|| self.0.query().merged(sql, params))
        }
    }

    #[async_trait::async_trait]
    impl CatalogAdmin for NoRoute {
        async fn catalog_state(&self) -> shardlite::Result<CatalogState> {
            on_plain_thread(|| self.0.catalog().state())
        }
        async fn validate_catalog_update(
            &self,
            request: &CatalogUpdateRequest,
        ) -> shardlite::Result<CatalogValidation> {
            on_plain_thread(|| self.0.catalog().validate(request))
        }
        async fn apply_catalog_update(&self, request: &CatalogUpdateRequest) -> shardlite::Result<CatalogApplyResult> {
            on_plain_thread(|| self.0.catalog().apply(request))
        }
        async fn activate_pending_map(&self, request: &ActivationRequest) -> shardlite::Result<ActivationResult> {
            on_plain_thread(|| self.0.catalog().activate(request))
        }
    }

    #[async_trait::async_trait]
    impl SchemaAdmin for NoRoute {
        async fn schema_status(&self) -> shardlite::Result<SchemaStatusReport> {
            on_plain_thread(|| self.0.schema().status())
        }
        async fn migrate_schema(&self, request: &SchemaMigrationRequest) -> shardlite::Result<SchemaMigrationReport> {
            on_plain_thread(|| self.0.schema().migrate(request))
        }
    }

    #[async_trait::async_trait]
    impl Topology for NoRoute {
        async fn shard_heat(&self) -> shardlite::Result<shardlite::heat::HeatReport> {
            Ok(on_plain_thread(|| self.0.shards().heat()))
        }
        async fn shard_map(&self) -> shardlite::Result<ShardMapSnapshot> {
            Ok(on_plain_thread(|| self.0.map_snapshot()))
        }
        async fn resolve_route(&self, route: &RouteContext) -> shardlite::Result<ResolvedRoute> {
            on_plain_thread(|| self.0.resolve_route(route))
        }
        async fn shard_status(&self) -> shardlite::Result<Vec<ShardStatus>> {
            Ok(on_plain_thread(|| self.0.shards().status()))
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_blocking_client_behaves_exactly_like_the_async_client() {
        let expected = transcript_in_process().await;
        let dir = crate::support::temp_dir();
        let master = seeded_master(dir.path()).await;
        let sharded = on_plain_thread(|| blocking::ShardedClient::open(&master).unwrap());
        let for_route = sharded.clone();
        let surface = Surface {
            name: "blocking",
            routed: Box::new(move |route| Arc::new(Routed(for_route.for_route(route))) as Arc<dyn DataClient>),
            unrouted: Arc::new(NoRoute(sharded.clone())),
            admin: Arc::new(NoRoute(sharded.clone())),
        };
        let actual = behaviour_suite(&surface).await;
        for (i, (want, got)) in expected.iter().zip(&actual).enumerate() {
            assert_eq!(want, got, "{}: step {i} differs from the async client", surface.name);
        }
        assert_eq!(expected.len(), actual.len(), "transcript lengths differ");
        // A blocking client may be dropped inside an async task.
        drop(surface);
        drop(sharded);
    }
}

#[tokio::test]
async fn the_in_process_suite_behaves_as_documented() {
    let transcript = transcript_in_process().await;
    let text = transcript.join("\n");
    if std::env::var_os("SHOW_TRANSCRIPT").is_some() {
        println!("{text}");
    }
    // Spot checks that the transcript holds real results, not just "ok".
    assert!(
        text.contains(r#"select a: ok {"columnNames":["id","name","qty","price","data"]"#),
        "{text}"
    );
    assert!(text.contains("9223372036854775807"), "{text}");
    assert!(text.contains("\ncount after refused script: ok 1\n"), "{text}");
    // Inserts report the rowid they added; other statements carry no lastInsertRowid at all.
    assert!(
        text.lines()
            .any(|line| line.starts_with("insert positional: ok") && line.contains(r#""lastInsertRowid":1"#)),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|line| line.starts_with("insert named: ok") && line.contains(r#""lastInsertRowid":2"#)),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|line| line.starts_with("tx insert: ok") && line.contains(r#""lastInsertRowid":10"#)),
        "{text}"
    );
    assert!(
        text.lines()
            .filter(|line| line.starts_with("select a: ok"))
            .all(|line| !line.contains("lastInsertRowid")),
        "{text}"
    );
    assert!(text.contains(r#"tx commit by id: ok null"#), "{text}");
    assert!(text.contains(r#"execute procedure: ok {"columnNames":["qty"]"#) && text.contains("9223372036854775802"));
    assert!(
        text.contains(r#"after transactions: ok"#) && text.contains(r#"[10,"tx"]"#) && !text.contains(r#"[11,"gone"]"#)
    );
}
