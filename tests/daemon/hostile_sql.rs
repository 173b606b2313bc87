//! SQL from a client is hostile until proven otherwise (SPEC section 10).
//!
//! One table of hostile inputs runs through every path that takes SQL text: plain execute,
//! read-only execute, transactions, read-only and write fan-out, and procedures, on every
//! surface: in-process (with the row-closure calls `query_row` and `query_map`), REST and
//! gRPC; and through the sqlx driver. Each input must be refused
//! with its error kind (the wire's `errorCode`), leave the daemon answering, and leave data and
//! files as they were.
#![cfg(all(feature = "server", feature = "http", feature = "grpc", feature = "sqlx"))]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::daemon::{http_client, start_daemon_on};
use crate::support::{files_in, path_str, route, temp_dir, tenants_options};
use shardlite::ErrorKind;
use shardlite::client::{
    DataClient, DocumentData, Params, ProcedureDefinition, RowData, ShardAdmin, ShardedClient, ShardedClientOptions,
    SqlData, StoredData, TransactionData, TransactionOptions, Value,
};
use shardlite::engine::EngineConfig;
use shardlite::server::ServerConfig;
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::http::HttpClient;

/// One hostile input and what each path must answer.
struct Case {
    name: &'static str,
    sql: String,
    params: Params,
    /// Plain execute, write fan-out and procedures.
    kind: ErrorKind,
    /// Inside a transaction, when it differs (savepoints are the session's own business).
    in_transaction: Option<Option<ErrorKind>>,
    /// Read-only execute and read-only fan-out: anything that is not a query is a read-only
    /// violation before anything else.
    read_only: ErrorKind,
    /// Whether the fan-outs refuse it on each shard (per-shard errors) rather than before any
    /// shard runs it: only the authorizer can see what it does.
    refused_per_shard: bool,
}

fn case(name: &'static str, sql: impl Into<String>, kind: ErrorKind) -> Case {
    Case {
        name,
        sql: sql.into(),
        params: Params::none(),
        kind,
        in_transaction: None,
        read_only: ErrorKind::ReadOnly,
        refused_per_shard: false,
    }
}

fn cases(dir: &Path, master: &Path) -> Vec<Case> {
    let target = |name: &str| path_str(&dir.join(name));
    let master = path_str(master);
    let mut bound_attach = case("bound ATTACH of the master", "ATTACH ? AS m", ErrorKind::Forbidden);
    bound_attach.params = Params::from(vec![master.clone()]);
    let mut bound_vacuum = case("VACUUM INTO a bound path", "VACUUM INTO ?", ErrorKind::Forbidden);
    bound_vacuum.params = Params::from(vec![target("vacuumed-bound.db")]);
    let mut named_attach = case(
        "ATTACH with a named parameter",
        "ATTACH :file AS m",
        ErrorKind::Forbidden,
    );
    named_attach.params = Params::named([("file", master.as_str())]);
    let mut savepoint = case("SAVEPOINT", "SAVEPOINT sneaky", ErrorKind::TransactionControl);
    savepoint.in_transaction = Some(None);
    let mut release = case(
        "SAVEPOINT then RELEASE",
        "SAVEPOINT s; RELEASE s",
        ErrorKind::TransactionControl,
    );
    release.in_transaction = Some(None);
    let mut load = case(
        "load_extension",
        "SELECT load_extension('/tmp/evil.so')",
        ErrorKind::Forbidden,
    );
    load.read_only = ErrorKind::Forbidden;
    vec![
        case(
            "literal ATTACH",
            format!("ATTACH DATABASE '{}' AS x", target("attached.db")),
            ErrorKind::Forbidden,
        ),
        bound_attach,
        named_attach,
        case(
            "computed ATTACH",
            format!("ATTACH '{}' || '.db' AS e", target("computed")),
            ErrorKind::Forbidden,
        ),
        case(
            "URI ATTACH",
            format!("ATTACH 'file:{}?mode=rwc' AS u", target("uri.db")),
            ErrorKind::Forbidden,
        ),
        case(
            "ATTACH of the master after a comment",
            format!("/* hi */ -- there\n attach database '{master}' as m"),
            ErrorKind::Forbidden,
        ),
        case("DETACH", "DETACH DATABASE main", ErrorKind::Forbidden),
        case(
            "VACUUM INTO a literal path",
            format!("VACUUM INTO '{}'", target("vacuumed.db")),
            ErrorKind::Forbidden,
        ),
        bound_vacuum,
        load,
        case("BEGIN", "BEGIN", ErrorKind::TransactionControl),
        case(
            "BEGIN IMMEDIATE",
            "begin immediate transaction",
            ErrorKind::TransactionControl,
        ),
        case("COMMIT", "COMMIT", ErrorKind::TransactionControl),
        case("END", "END TRANSACTION", ErrorKind::TransactionControl),
        case("ROLLBACK", "ROLLBACK", ErrorKind::TransactionControl),
        savepoint,
        release,
        case(
            "a script that writes, then commits",
            "INSERT INTO items (id, tenant) VALUES (100, 'x'); COMMIT",
            ErrorKind::TransactionControl,
        ),
        case(
            "a script that begins, then writes",
            "BEGIN; INSERT INTO items (id, tenant) VALUES (101, 'x')",
            ErrorKind::TransactionControl,
        ),
        case(
            "a script that writes, then attaches",
            format!(
                "INSERT INTO items (id, tenant) VALUES (102, 'x'); ATTACH '{}' AS late",
                target("late.db")
            ),
            ErrorKind::Forbidden,
        ),
        case("journal_mode", "PRAGMA journal_mode = DELETE", ErrorKind::Forbidden),
        case("synchronous", "PRAGMA synchronous = OFF", ErrorKind::Forbidden),
        case("writable_schema", "PRAGMA writable_schema = ON", ErrorKind::Forbidden),
        case("query_only", "PRAGMA query_only = 1", ErrorKind::Forbidden),
        case("foreign_keys", "PRAGMA main.foreign_keys = OFF", ErrorKind::Forbidden),
        case("locking_mode", "PRAGMA locking_mode = EXCLUSIVE", ErrorKind::Forbidden),
        case("schema_version", "PRAGMA schema_version = 99", ErrorKind::Forbidden),
    ]
    .into_iter()
    .chain(temp_cases())
    .chain(internal_cases())
    .collect()
}

/// Writes to shardlite's internal tables, and changes to their schema and triggers: refused
/// everywhere outside a maintenance transaction.
fn internal_cases() -> Vec<Case> {
    let mut cases: Vec<Case> = [
        (
            "INSERT into the collections table",
            "INSERT INTO _shardlite_collections (collection, key, document) VALUES ('c', 'k', '{}')",
        ),
        (
            "INSERT into a schema-qualified, upper-case internal table",
            "INSERT INTO main._SHARDLITE_COLLECTIONS (collection, key, document) VALUES ('c', 'k2', '{}')",
        ),
        (
            "UPDATE of the saved queries",
            "UPDATE _shardlite_saved_queries SET sql_text = 'x'",
        ),
        ("DELETE of the procedures", "DELETE FROM \"_shardlite_procedures\""),
        (
            "forged fence table",
            "CREATE TABLE _shardlite_route_fences (migration_id TEXT)",
        ),
        ("DROP of an internal table", "DROP TABLE _shardlite_saved_queries"),
        (
            "ALTER of an internal table",
            "ALTER TABLE _shardlite_procedures ADD COLUMN x",
        ),
        (
            "index on an internal table",
            "CREATE INDEX i ON _shardlite_collections (document)",
        ),
        (
            "trigger on an internal table",
            "CREATE TRIGGER t AFTER INSERT ON _shardlite_collections BEGIN SELECT 1; END",
        ),
        (
            "forged fence trigger",
            "CREATE TRIGGER _shardlite_fence_0_insert BEFORE INSERT ON items BEGIN SELECT 1; END",
        ),
        (
            "DROP of a fence trigger",
            "DROP TRIGGER IF EXISTS _shardlite_fence_0_insert",
        ),
        (
            "trigger on a user table that writes an internal table",
            "CREATE TRIGGER sneaky AFTER INSERT ON items BEGIN \
             INSERT INTO _shardlite_collections VALUES ('c', new.id, '{}'); END",
        ),
        (
            "a script that writes, then writes an internal table",
            "INSERT INTO items (id, tenant) VALUES (104, 'x'); DELETE FROM _shardlite_collections",
        ),
    ]
    .into_iter()
    .map(|(name, sql)| case(name, sql, ErrorKind::Forbidden))
    .collect();
    // Query-shaped, so only the authorizer sees the write: on a read-only connection too.
    let mut with_insert = case(
        "WITH ... INSERT into an internal table",
        "WITH x(a) AS (SELECT 1) INSERT INTO _shardlite_collections SELECT 'c', 'k3', '{}' FROM x",
        ErrorKind::Forbidden,
    );
    with_insert.read_only = ErrorKind::Forbidden;
    with_insert.refused_per_shard = true;
    cases.push(with_insert);
    cases
}

/// TEMP objects, in every spelling: refused on the shared connections, a transaction's own
/// business inside one.
fn temp_cases() -> Vec<Case> {
    [
        (
            "TEMP trigger",
            "CREATE TEMP TRIGGER t1 AFTER INSERT ON items BEGIN DELETE FROM items WHERE id <> new.id; END",
        ),
        (
            "TEMPORARY trigger",
            "create temporary trigger t2 before insert on main.items begin select 1; end",
        ),
        (
            "trigger qualified with temp.",
            "CREATE TRIGGER temp.t3 AFTER INSERT ON items BEGIN SELECT 1; END",
        ),
        (
            "TEMP table shadowing a real one",
            "CREATE TEMP TABLE items (id INTEGER PRIMARY KEY, tenant TEXT)",
        ),
        (
            "table qualified with \"temp\".",
            "CREATE TABLE \"temp\".\"items\" (id INTEGER PRIMARY KEY, tenant TEXT)",
        ),
        ("TEMPORARY table", "CREATE TEMPORARY TABLE scratch (x)"),
        (
            "TEMP table AS SELECT",
            "CREATE TEMP TABLE copied AS SELECT * FROM items",
        ),
        ("TEMP view", "CREATE TEMP VIEW v AS SELECT * FROM items"),
        ("view qualified with temp.", "CREATE VIEW TEMP.v2 AS SELECT 1"),
        (
            "a script that writes, then creates a TEMP table",
            "INSERT INTO items (id, tenant) VALUES (103, 'x'); CREATE TEMP TABLE late (x)",
        ),
    ]
    .into_iter()
    .map(|(name, sql)| {
        let mut case = case(name, sql, ErrorKind::Forbidden);
        case.in_transaction = Some(None);
        case
    })
    .collect()
}

/// One way of reaching the deployment.
struct Surface {
    name: &'static str,
    routed: Arc<dyn DataClient>,
    admin: Arc<dyn ShardAdmin>,
}

/// What must not change, whatever SQL arrives.
#[derive(Debug, PartialEq)]
struct Invariants {
    files: BTreeSet<PathBuf>,
    per_shard: Vec<(String, serde_json::Value)>,
}

async fn invariants(dir: &Path, admin: &dyn ShardAdmin) -> Invariants {
    let mut files: BTreeSet<PathBuf> = files_in(dir).into_iter().collect();
    files.retain(|f| {
        let name = f.to_string_lossy();
        !(name.ends_with("-wal") || name.ends_with("-shm") || name.ends_with("-journal"))
    });
    let results = admin
        .execute_read_only_sql_on_all_shards(
            "SELECT (SELECT count(*) FROM items), (SELECT group_concat(name) FROM sqlite_master), \
             (SELECT journal_mode FROM pragma_journal_mode), (SELECT foreign_keys FROM pragma_foreign_keys), \
             (SELECT user_version FROM pragma_user_version), (SELECT schema_version FROM pragma_schema_version), \
             (SELECT count(*) FROM _shardlite_collections), (SELECT count(*) FROM _shardlite_saved_queries), \
             (SELECT group_concat(name) FROM _shardlite_procedures)",
        )
        .await
        .unwrap();
    let per_shard = results
        .into_iter()
        .map(|r| {
            assert!(r.error.is_none(), "{}: {:?}", r.shard_id, r.error);
            (r.shard_id, serde_json::to_value(r.result.unwrap().rows).unwrap())
        })
        .collect();
    Invariants { files, per_shard }
}

fn expect(path: &str, case: &Case, outcome: shardlite::Result<impl std::fmt::Debug>, kind: Option<ErrorKind>) {
    match (outcome, kind) {
        (Err(err), Some(kind)) => assert_eq!(err.kind(), kind, "{path}, {}: {err}", case.name),
        (Ok(_), None) => {}
        (Ok(value), Some(kind)) => panic!("{path}, {}: expected {kind}, got {value:?}", case.name),
        (Err(err), None) => panic!("{path}, {}: expected success, got {err}", case.name),
    }
}

/// Runs every case through every path of one surface.
async fn run_cases(surface: &Surface, dir: &Path, master: &Path) {
    let before = invariants(dir, surface.admin.as_ref()).await;
    for case in cases(dir, master) {
        let name = surface.name;
        let plain = surface.routed.execute_sql(&case.sql, case.params.clone()).await;
        expect(&format!("{name} execute"), &case, plain, Some(case.kind));

        let read_only = surface
            .routed
            .execute_read_only_sql(&case.sql, case.params.clone())
            .await;
        expect(
            &format!("{name} read-only execute"),
            &case,
            read_only,
            Some(case.read_only),
        );

        let tx = surface.routed.begin_transaction().await.unwrap();
        let inside = surface
            .routed
            .execute_in_transaction(&tx.transaction_id, &case.sql, case.params.clone())
            .await;
        let in_transaction = case.in_transaction.unwrap_or(Some(case.kind));
        expect(&format!("{name} in a transaction"), &case, inside, in_transaction);
        // The transaction is still the caller's to end: nothing the SQL said ended it.
        surface.routed.rollback_transaction(&tx.transaction_id).await.unwrap();

        if case.params.is_empty() {
            let fan_out = surface.admin.execute_sql_on_all_shards(&case.sql).await;
            let read_all = surface.admin.execute_read_only_sql_on_all_shards(&case.sql).await;
            if case.refused_per_shard {
                for (path, outcome, kind) in [
                    ("fan-out", fan_out, case.kind),
                    ("read-only fan-out", read_all, case.read_only),
                ] {
                    let results = outcome.unwrap_or_else(|err| panic!("{name} {path}, {}: {err}", case.name));
                    for result in results {
                        assert_eq!(
                            result.error_code.as_deref(),
                            Some(kind.code()),
                            "{name} {path}, {}: {result:?}",
                            case.name
                        );
                    }
                }
            } else {
                expect(&format!("{name} fan-out"), &case, fan_out, Some(case.kind));
                expect(
                    &format!("{name} read-only fan-out"),
                    &case,
                    read_all,
                    Some(case.read_only),
                );
            }

            let procedure = ProcedureDefinition {
                name: "hostile".into(),
                body_sql: case.sql.clone(),
                parameters: Vec::new(),
                description: None,
            };
            let outcome = match surface.routed.put_procedure(procedure).await {
                Ok(_) => surface.routed.execute_procedure("hostile", Params::none()).await,
                Err(err) => Err(err),
            };
            expect(&format!("{name} procedure"), &case, outcome, Some(case.kind));
            let _ = surface.routed.delete_procedure("hostile").await;
        }
        next_write_lands(surface, dir, case.name).await;
    }
    assert_eq!(
        invariants(dir, surface.admin.as_ref()).await,
        before,
        "{}",
        surface.name
    );

    next_write_lands(surface, dir, "at the end").await;
}

/// The shared writer is not stuck inside a transaction and has no TEMP object, and no reader
/// has one: a write by another client is committed to the shard's file and visible to readers
/// at once.
async fn next_write_lands(surface: &Surface, dir: &Path, after: &str) {
    let name = format!("{}, {after}", surface.name);
    let other = surface.routed.execute_sql(
        "INSERT INTO items (id, tenant) VALUES (500, 'tenant-a') RETURNING (SELECT count(*) FROM temp.sqlite_master)",
        Params::none(),
    );
    assert_eq!(other.await.unwrap().rows, vec![vec![Value::Integer(0)]], "{name}");
    assert_eq!(rows_in_file(&dir.join("s0.db"), 500), 1, "{name}");
    let readers_temp = surface
        .routed
        .execute_read_only_sql("SELECT count(*) FROM temp.sqlite_master", Params::none())
        .await
        .unwrap();
    assert_eq!(readers_temp.rows, vec![vec![Value::Integer(0)]], "{name}");
    let seen = surface
        .routed
        .execute_read_only_sql("SELECT count(*) FROM items WHERE id = 500", Params::none())
        .await
        .unwrap();
    assert_eq!(seen.rows, vec![vec![Value::Integer(1)]], "{name}");
    surface
        .routed
        .execute_sql("DELETE FROM items WHERE id = 500", Params::none())
        .await
        .unwrap();
    assert_eq!(rows_in_file(&dir.join("s0.db"), 500), 0, "{name}");
}

/// Rows with `id` in the `items` table of the shard file at `path`, read with a connection of
/// the test's own.
fn rows_in_file(path: &Path, id: i64) -> i64 {
    let conn = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    conn.query_row("SELECT count(*) FROM items WHERE id = ?1", [id], |row| row.get(0))
        .unwrap()
}

/// A master with the two-shard `tenants` map and an `items` table on both shards.
async fn seed(dir: &Path) -> PathBuf {
    let master = crate::support::seed_master(dir, tenants_options(dir)).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    sharded
        .query()
        .execute_all("CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL)")
        .await
        .unwrap();
    sharded
        .for_route(route("tenant-a"))
        .execute_sql("INSERT INTO items (id, tenant) VALUES (1, 'tenant-a')", Params::none())
        .await
        .unwrap();
    master
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_refuses_every_hostile_input_and_changes_nothing() {
    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let surface = Surface {
        name: "in-process",
        routed: Arc::new(sharded.for_route(route("tenant-a"))),
        admin: Arc::new(sharded.clone()),
    };
    run_cases(&surface, dir.path(), &master).await;

    // The row-closure calls take one statement; each is refused as execute refuses it, and a
    // script before anything runs.
    let routed = sharded.for_route(route("tenant-a"));
    let before = invariants(dir.path(), &sharded).await;
    for case in cases(dir.path(), &master) {
        let kind = if shardlite::fuzzing::is_single_statement(&case.sql) {
            case.kind
        } else {
            ErrorKind::InvalidInput
        };
        let mapped = routed
            .query_map(&case.sql, case.params.clone(), |row| row.get::<Value>(0))
            .await;
        expect("in-process query_map", &case, mapped, Some(kind));
        let first = routed
            .query_row(&case.sql, case.params.clone(), |row| row.get::<Value>(0))
            .await;
        expect("in-process query_row", &case, first, Some(kind));
    }
    assert_eq!(invariants(dir.path(), &sharded).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_refuses_every_hostile_input_over_rest_and_grpc_and_keeps_serving() {
    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let options = RemoteOptions::new(daemon.url("")).with_route(route("tenant-a"));
    let http = HttpClient::new(options.clone()).unwrap();
    let grpc = GrpcClient::connect(options).await.unwrap();
    for surface in [
        Surface {
            name: "rest",
            routed: Arc::new(http.clone()),
            admin: Arc::new(http.clone()),
        },
        Surface {
            name: "grpc",
            routed: Arc::new(grpc.clone()),
            admin: Arc::new(grpc.clone()),
        },
    ] {
        run_cases(&surface, dir.path(), &master).await;
    }
    // Refusals are client errors with a stable code, never a 500.
    let client = http_client();
    for (sql, status, code) in [
        ("ATTACH ? AS m", 403, "forbidden_statement"),
        ("BEGIN", 400, "transaction_control"),
        ("PRAGMA writable_schema = ON", 403, "forbidden_statement"),
    ] {
        let response = client
            .post(daemon.url("/api/sql/execute"))
            .header("X-CSharpDB-Keyspace", "tenants")
            .header("X-CSharpDB-Shard-Key", "tenant-a")
            .json(&serde_json::json!({ "sql": sql, "parameters": [path_str(&master)] }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), status, "{sql}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["errorCode"], code, "{sql}: {body}");
        assert!(!body.to_string().contains(&path_str(dir.path())), "{body}");
    }
    assert_eq!(http.info().await.unwrap().table_count, 1);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlx_driver_refuses_transaction_control_and_attach_on_pooled_connections() {
    use shardlite::driver::ShardlitePool;

    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let route_keys = "Shard Keyspace=tenants;Shard Key=tenant-a";
    for connection_string in [
        format!("Data Source={};{route_keys}", path_str(&master)),
        format!("Endpoint={};Transport=Grpc;{route_keys}", daemon.url("")),
        format!("Endpoint={};Transport=Http;{route_keys}", daemon.url("")),
    ] {
        let pool = ShardlitePool::connect(&connection_string).await.unwrap();
        for (sql, code) in [
            ("BEGIN", "transaction_control"),
            ("COMMIT", "transaction_control"),
            ("ATTACH 'x.db' AS x", "forbidden_statement"),
            ("PRAGMA journal_mode = MEMORY", "forbidden_statement"),
        ] {
            let err = sqlx::query(sql).execute(&pool).await.unwrap_err();
            let code_seen = err.as_database_error().and_then(|e| e.code()).map(|c| c.into_owned());
            assert_eq!(code_seen.as_deref(), Some(code), "{connection_string}: {sql}: {err}");
        }
        // Savepoints inside a driver transaction still work.
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("INSERT INTO items (id, tenant) VALUES (7, 'tenant-a')")
            .execute(&mut *tx)
            .await
            .unwrap();
        let mut nested = sqlx::Connection::begin(&mut *tx).await.unwrap();
        sqlx::query("INSERT INTO items (id, tenant) VALUES (8, 'tenant-a')")
            .execute(&mut *nested)
            .await
            .unwrap();
        nested.rollback().await.unwrap();
        tx.rollback().await.unwrap();
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM items")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(count, 1, "{connection_string}");
        pool.close().await;
    }
    assert!(!dir.path().join("x.db").exists());
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlx_driver_keeps_temp_objects_on_its_own_connections_only_and_never_writes_internal_tables() {
    use shardlite::driver::ShardlitePool;

    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let route_keys = "Shard Keyspace=tenants;Shard Key=tenant-a";
    let local = format!("Data Source={};{route_keys}", path_str(&master));
    for (id, connection_string) in [
        format!("Endpoint={};Transport=Grpc;{route_keys}", daemon.url("")),
        format!("Endpoint={};Transport=Http;{route_keys}", daemon.url("")),
        local.clone(),
    ]
    .into_iter()
    .enumerate()
    {
        let pool = ShardlitePool::connect(&connection_string).await.unwrap();
        for case in temp_cases() {
            let mut conn = pool.acquire().await.unwrap();
            let outcome = sqlx::raw_sql(sqlx::AssertSqlSafe(case.sql.clone()))
                .execute(&mut *conn)
                .await;
            if connection_string == local {
                // A local driver connection is the caller's own: its TEMP objects are its own
                // business and die with it.
                outcome.unwrap_or_else(|err| panic!("{connection_string}: {}: {err}", case.name));
                conn.detach();
                continue;
            }
            let err = outcome.unwrap_err();
            let code = err.as_database_error().and_then(|e| e.code()).map(|c| c.into_owned());
            assert_eq!(
                code.as_deref(),
                Some("forbidden_statement"),
                "{connection_string}: {}: {err}",
                case.name
            );
        }
        // No driver connection writes the internal tables, its own connection included.
        for case in internal_cases() {
            let mut conn = pool.acquire().await.unwrap();
            let err = sqlx::raw_sql(sqlx::AssertSqlSafe(case.sql.clone()))
                .execute(&mut *conn)
                .await
                .unwrap_err();
            let code = err.as_database_error().and_then(|e| e.code()).map(|c| c.into_owned());
            assert_eq!(
                code.as_deref(),
                Some("forbidden_statement"),
                "{connection_string}: {}: {err}",
                case.name
            );
        }
        // The next write lands in the shard's file, through the shared writer with an empty
        // temp schema.
        let id = 600 + i64::try_from(id).unwrap();
        let temp_objects: i64 = sqlx::query_scalar(
            "INSERT INTO items (id, tenant) VALUES ($1, 'tenant-a') RETURNING (SELECT count(*) FROM temp.sqlite_master)",
        )
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(rows_in_file(&dir.path().join("s0.db"), id), 1, "{connection_string}");
        if connection_string != local {
            assert_eq!(temp_objects, 0, "{connection_string}");
        }
        pool.close().await;
    }
    // Nothing any driver connection created reached the daemon's connections.
    let http = HttpClient::new(RemoteOptions::new(daemon.url("")).with_route(route("tenant-a"))).unwrap();
    let probe = http
        .execute_sql(
            "INSERT INTO items (id, tenant) VALUES (700, 'tenant-a') RETURNING (SELECT count(*) FROM temp.sqlite_master)",
            Params::none(),
        )
        .await
        .unwrap();
    assert_eq!(probe.rows, vec![vec![Value::Integer(0)]]);
    assert_eq!(rows_in_file(&dir.path().join("s0.db"), 700), 1);
    daemon.stop().await.unwrap();
}

/// What a maintenance transaction may do, through one surface: write the internal tables with
/// top-level statements, never through a trigger.
async fn maintenance_writes(name: &str, client: &dyn DataClient, key: &str) {
    let tx = client
        .begin_transaction_with(TransactionOptions::maintenance())
        .await
        .unwrap();
    client
        .execute_in_transaction(
            &tx.transaction_id,
            "INSERT INTO _shardlite_collections (collection, key, document) VALUES ('moved', ?1, '{\"n\": 1}')",
            Params::from(vec![key]),
        )
        .await
        .unwrap_or_else(|err| panic!("{name}: {err}"));
    // A trigger is not the maintenance transaction's own statement, even one it defined.
    client
        .execute_in_transaction(
            &tx.transaction_id,
            "CREATE TEMP TRIGGER relay AFTER INSERT ON items BEGIN \
             INSERT INTO _shardlite_saved_queries VALUES ('q', 'SELECT 1', '', ''); END",
            Params::none(),
        )
        .await
        .unwrap_or_else(|err| panic!("{name}: {err}"));
    let err = client
        .execute_in_transaction(
            &tx.transaction_id,
            "INSERT INTO items (id, tenant) VALUES (900, 'tenant-a')",
            Params::none(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{name}: {err}");
    client.commit_transaction(&tx.transaction_id).await.unwrap();
    assert_eq!(
        client.get_document("moved", key).await.unwrap(),
        Some(serde_json::json!({ "n": 1 })),
        "{name}"
    );
    assert!(client.list_saved_queries().await.unwrap().is_empty(), "{name}");
    // An ordinary transaction is refused the same write.
    let tx = client.begin_transaction().await.unwrap();
    let err = client
        .execute_in_transaction(&tx.transaction_id, "DELETE FROM _shardlite_collections", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{name}: {err}");
    client.rollback_transaction(&tx.transaction_id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_maintenance_transaction_writes_the_internal_tables() {
    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    maintenance_writes("in-process", &sharded.for_route(route("tenant-a")), "k-local").await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let options = RemoteOptions::new(daemon.url("")).with_route(route("tenant-a"));
    let http = HttpClient::new(options.clone()).unwrap();
    let grpc = GrpcClient::connect(options).await.unwrap();
    maintenance_writes("rest", &http, "k-rest").await;
    maintenance_writes("grpc", &grpc, "k-grpc").await;
    assert_eq!(http.count_documents("moved").await.unwrap(), 3);
    daemon.stop().await.unwrap();
}

/// A shard with a short statement time limit and small result caps, in-process.
async fn bounded_shard(dir: &Path) -> Arc<dyn DataClient> {
    let master = seed(dir).await;
    let engine = EngineConfig {
        statement_timeout: Some(Duration::from_millis(300)),
        max_result_rows: 1000,
        max_result_bytes: 64 * 1024,
        ..EngineConfig::default()
    };
    let sharded = ShardedClient::open_with(&master, ShardedClientOptions::with_engine(engine))
        .await
        .unwrap();
    Arc::new(sharded.for_route(route("tenant-a")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runaway_and_oversized_work_is_bounded() {
    let dir = temp_dir();
    let shard = bounded_shard(dir.path()).await;
    let runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
    let started = Instant::now();
    let err = shard.execute_sql(runaway, Params::none()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(err.to_string().contains("300 ms"), "{err}");

    // The same runaway query, streaming rows instead of counting: the row cap stops it first.
    let err = shard
        .execute_sql(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
            Params::none(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ResultTooLarge, "{err}");
    assert!(err.to_string().contains("LIMIT"), "{err}");
    let err = shard
        .execute_sql(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 10) SELECT zeroblob(10000) FROM c",
            Params::none(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ResultTooLarge, "{err}");
    assert!(err.to_string().contains("bytes"), "{err}");

    // Inside a transaction too; the interrupted transaction is over, and the shard still works.
    let tx = shard.begin_transaction().await.unwrap();
    let err = shard
        .execute_in_transaction(&tx.transaction_id, runaway, Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    // SQLite rolled the interrupted transaction back; rolling it back by its id ends it, or
    // finds it already over.
    match shard.rollback_transaction(&tx.transaction_id).await {
        Ok(()) => {}
        Err(err) => assert!(matches!(err.kind(), ErrorKind::NotFound | ErrorKind::Expired), "{err}"),
    }
    // It is over: nothing more runs in it.
    let err = shard
        .execute_in_transaction(&tx.transaction_id, "SELECT 1", Params::none())
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotFound | ErrorKind::Expired), "{err}");
    let ok = shard
        .execute_sql("SELECT count(*) FROM items", Params::none())
        .await
        .unwrap();
    assert_eq!(ok.rows, vec![vec![Value::Integer(1)]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_scripts_deep_nesting_and_big_blobs_do_not_take_the_process_down() {
    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let http = HttpClient::new(RemoteOptions::new(daemon.url("")).with_route(route("tenant-a"))).unwrap();

    // 100,000 statements in one request: run one by one, no stack growth.
    let reads = "SELECT 1;".repeat(100_000);
    let result = http.execute_sql(&reads, Params::none()).await.unwrap();
    assert_eq!(result.rows, vec![vec![Value::Integer(1)]]);
    let writes: String = (1000..11_000)
        .map(|id| format!("INSERT INTO items (id, tenant) VALUES ({id}, 'tenant-a');"))
        .collect();
    let result = http.execute_sql(&writes, Params::none()).await.unwrap();
    assert_eq!(result.rows_affected, 10_000);
    let tx = http.begin_transaction().await.unwrap();
    http.execute_in_transaction(&tx.transaction_id, &reads, Params::none())
        .await
        .unwrap();
    http.rollback_transaction(&tx.transaction_id).await.unwrap();

    // Deeply nested expressions are a clear SQL error, not a crash.
    for depth in [2_000, 100_000] {
        let nested = format!("SELECT {}1{}", "abs(".repeat(depth), ")".repeat(depth));
        let err = http.execute_sql(&nested, Params::none()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Sql, "{depth}: {err}");
        let parenthesised = format!("SELECT {}1{}", "(".repeat(depth), ")".repeat(depth));
        match http.execute_sql(&parenthesised, Params::none()).await {
            Ok(result) => assert_eq!(result.rows, vec![vec![Value::Integer(1)]]),
            Err(err) => assert_eq!(err.kind(), ErrorKind::Sql, "{depth}: {err}"),
        }
    }

    // A 4 MiB blob as a parameter round-trips; the daemon is still serving.
    let blob = vec![0xA5u8; 4 * 1024 * 1024];
    http.execute_sql(
        "INSERT INTO items (id, tenant) VALUES (2, ?1)",
        Params::from(vec![Value::Blob(blob.clone())]),
    )
    .await
    .unwrap();
    let back = http
        .execute_sql("SELECT tenant FROM items WHERE id = 2", Params::none())
        .await
        .unwrap();
    assert_eq!(back.rows, vec![vec![Value::Blob(blob)]]);
    assert_eq!(http.count_rows("items").await.unwrap(), 10_002);
    daemon.stop().await.unwrap();
}

#[tokio::test]
async fn read_only_pragmas_and_plain_vacuum_keep_working() {
    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let shard = sharded.for_route(route("tenant-a"));
    for sql in [
        "PRAGMA table_info(items)",
        "PRAGMA index_list('items')",
        "PRAGMA journal_mode",
        "PRAGMA foreign_keys",
        "PRAGMA user_version = 3",
        "VACUUM",
        "SELECT * FROM pragma_table_info('items')",
    ] {
        shard
            .execute_sql(sql, Params::none())
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let version = shard.execute_sql("PRAGMA user_version", Params::none()).await.unwrap();
    assert_eq!(version.rows, vec![vec![Value::Integer(3)]]);
    // A transaction may use savepoints of its own.
    let tx = shard.begin().await.unwrap();
    tx.execute(
        "SAVEPOINT s; INSERT INTO items (id, tenant) VALUES (3, 'x'); ROLLBACK TO s; RELEASE s",
        Params::none(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let count = shard
        .execute_sql("SELECT count(*) FROM items", Params::none())
        .await
        .unwrap();
    assert_eq!(count.rows, vec![vec![Value::Integer(1)]]);
}

#[tokio::test]
async fn procedures_stay_atomic_and_refuse_transaction_control_when_stored() {
    let dir = temp_dir();
    let master = seed(dir.path()).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    let shard = sharded.for_route(route("tenant-a"));
    let body = |sql: &str| ProcedureDefinition {
        name: "p".into(),
        body_sql: sql.into(),
        parameters: Vec::new(),
        description: None,
    };
    let err = shard
        .put_procedure(body("INSERT INTO items (id, tenant) VALUES (50, 'x'); COMMIT"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TransactionControl, "{err}");
    assert!(shard.get_procedure("p").await.unwrap().is_none());
    // A body that fails half-way leaves nothing behind.
    shard
        .put_procedure(body(
            "INSERT INTO items (id, tenant) VALUES (51, 'x'); INSERT INTO items (id, tenant) VALUES (1, 'dup')",
        ))
        .await
        .unwrap();
    let err = shard.execute_procedure("p", Params::none()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Constraint, "{err}");
    let count = shard
        .execute_sql("SELECT count(*) FROM items", Params::none())
        .await
        .unwrap();
    assert_eq!(count.rows, vec![vec![Value::Integer(1)]]);
}
