//! SQL a key with `read` and not `write` sends in transactions and procedures, over REST and
//! gRPC: its transactions run read-only (reads, commit and rollback work, a statement that
//! would write is refused naming the `write` scope and writes nothing), it may use no transaction
//! begun to write, and it runs a procedure that only reads while one that writes is refused. A
//! key with `write` is unchanged, and no request asks for a read-only transaction.
#![cfg(all(feature = "server", feature = "grpc", feature = "http"))]

use serde_json::json;
use shardlite::ErrorKind;
use shardlite::client::{DataClient, Params, ProcedureDefinition, ProcedureParameter, TransactionOptions, Value};
use shardlite::server::ServerConfig;
use shardlite::server::keys::KeyRing;
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::http::HttpClient;

use crate::support::daemon::{Daemon, http_client, routed};
use crate::support::{Fixture, route};

const READ_KEY: &str = "key-read";
const WRITE_KEY: &str = "key-write";

/// A daemon over `fixture` whose shard `s0` (the route `tenant-a`'s) holds one note, with a read
/// key (`reader`) and a read and write key (`writer`).
async fn keyed_daemon(fixture: &Fixture) -> Daemon {
    fixture.by_hand(
        "s0",
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes VALUES (1, 'one');",
    );
    let file = fixture.dir.path().join("keys.json");
    let keys = json!([
        {"name": "reader", "key": READ_KEY, "scopes": ["read"], "keyspaces": ["*"]},
        {"name": "writer", "key": WRITE_KEY, "scopes": ["read", "write"], "keyspaces": ["*"]},
    ]);
    std::fs::write(&file, serde_json::to_vec(&keys).unwrap()).unwrap();
    let config = ServerConfig {
        api_keys: Some(KeyRing::load(&file).expect("the key file loads")),
        ..ServerConfig::default()
    };
    fixture.start_with(config).await
}

/// REST and gRPC clients of `daemon` for the route `tenant-a`, with `key`.
async fn clients(daemon: &Daemon, key: &str) -> [(&'static str, Box<dyn DataClient>); 2] {
    let options = RemoteOptions::new(daemon.url(""))
        .with_route(route("tenant-a"))
        .with_api_key(key);
    let http = HttpClient::new(options.clone()).unwrap();
    let grpc = GrpcClient::connect(options).await.unwrap();
    [("rest", Box::new(http)), ("grpc", Box::new(grpc))]
}

fn notes_in(fixture: &Fixture) -> i64 {
    rusqlite::Connection::open(fixture.shard_file("s0"))
        .unwrap()
        .query_row("SELECT count(*) FROM notes", [], |row| row.get(0))
        .unwrap()
}

/// `outcome` is the refusal of the read key for lacking `write`.
#[track_caller]
fn assert_needs_write<T: std::fmt::Debug>(surface: &str, what: &str, outcome: shardlite::Result<T>) {
    let err = outcome.expect_err(what);
    assert_eq!(err.kind(), ErrorKind::PermissionDenied, "{surface}, {what}: {err}");
    let message = err.to_string();
    assert!(
        message.contains("'write' scope") && message.contains("'reader'"),
        "{surface}, {what}: {message}"
    );
}

fn count(result: &shardlite::client::SqlResult) -> Value {
    result.rows[0][0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_key_runs_its_transactions_read_only_over_rest_and_grpc() {
    let fixture = Fixture::new().await;
    let daemon = keyed_daemon(&fixture).await;
    let readers = clients(&daemon, READ_KEY).await;
    let writers = clients(&daemon, WRITE_KEY).await;
    for ((surface, reader), (_, writer)) in readers.iter().zip(&writers) {
        let (reader, writer) = (reader.as_ref(), writer.as_ref());
        let before = notes_in(&fixture);

        // A read key begins a transaction, reads in it and commits it.
        let tx = reader.begin_transaction().await.expect("a read key begins");
        let id = tx.transaction_id.as_str();
        let read = reader
            .execute_in_transaction(id, "SELECT count(*) FROM notes", Params::none())
            .await
            .unwrap_or_else(|err| panic!("{surface}: {err}"));
        assert_eq!(count(&read), Value::Integer(before), "{surface}");
        // Its connection cannot write.
        let query_only = reader
            .execute_in_transaction(id, "SELECT query_only FROM pragma_query_only", Params::none())
            .await
            .unwrap_or_else(|err| panic!("{surface}: {err}"));
        assert_eq!(count(&query_only), Value::Integer(1), "{surface}");
        for writing in [
            "INSERT INTO notes (body) VALUES ('read key')",
            "UPDATE notes SET body = 'read key'",
            "SELECT 1; DELETE FROM notes",
            "WITH gone AS (SELECT 1) DELETE FROM notes",
            "PRAGMA query_only = OFF",
        ] {
            let outcome = reader.execute_in_transaction(id, writing, Params::none()).await;
            assert_needs_write(surface, writing, outcome);
        }
        // A refused statement leaves the transaction open for reads.
        let read = reader
            .execute_in_transaction(id, "SELECT count(*) FROM notes", Params::none())
            .await
            .unwrap_or_else(|err| panic!("{surface}: {err}"));
        assert_eq!(count(&read), Value::Integer(before), "{surface}");
        reader.commit_transaction(id).await.expect("a read key commits");
        let tx = reader.begin_transaction().await.expect("a read key begins again");
        reader
            .rollback_transaction(&tx.transaction_id)
            .await
            .expect("a read key rolls back");

        // A read-only transaction stays one, whoever sends the statement.
        let tx = reader.begin_transaction().await.unwrap();
        let err = writer
            .execute_in_transaction(&tx.transaction_id, "DELETE FROM notes", Params::none())
            .await
            .expect_err("a read-only transaction does not write");
        assert_eq!(err.kind(), ErrorKind::ReadOnly, "{surface}: {err}");
        reader.rollback_transaction(&tx.transaction_id).await.unwrap();

        // A write key's transaction is unchanged, and closed to the read key.
        let tx = writer.begin_transaction().await.unwrap();
        let id = tx.transaction_id.as_str();
        writer
            .execute_in_transaction(id, "INSERT INTO notes (body) VALUES ('writer')", Params::none())
            .await
            .unwrap_or_else(|err| panic!("{surface}: {err}"));
        let select = reader.execute_in_transaction(id, "SELECT 1", Params::none()).await;
        assert_needs_write(surface, "a read in a write key's transaction", select);
        assert_needs_write(
            surface,
            "committing a write key's transaction",
            reader.commit_transaction(id).await,
        );
        assert_needs_write(
            surface,
            "rolling back a write key's transaction",
            reader.rollback_transaction(id).await,
        );
        writer.commit_transaction(id).await.expect("the write key commits");
        // One the daemon no longer knows is not found.
        let err = reader
            .execute_in_transaction(id, "SELECT 1", Params::none())
            .await
            .expect_err("an ended transaction");
        assert_eq!(err.kind(), ErrorKind::NotFound, "{surface}: {err}");

        assert_eq!(
            notes_in(&fixture),
            before + 1,
            "{surface}: only the write key's note was added"
        );
    }
    daemon.stop().await.unwrap();
}

fn procedure(name: &str, body_sql: &str, parameter: &str, required: bool) -> ProcedureDefinition {
    ProcedureDefinition {
        name: name.to_owned(),
        body_sql: body_sql.to_owned(),
        parameters: vec![ProcedureParameter {
            name: parameter.to_owned(),
            required,
            default: Value::Integer(0),
        }],
        description: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_key_runs_procedures_that_only_read_over_rest_and_grpc() {
    let fixture = Fixture::new().await;
    let daemon = keyed_daemon(&fixture).await;
    let readers = clients(&daemon, READ_KEY).await;
    let writers = clients(&daemon, WRITE_KEY).await;
    let (_, setup) = &writers[0];
    for definition in [
        procedure(
            "count_from",
            "SELECT count(*) AS n FROM notes WHERE id >= :min",
            "min",
            false,
        ),
        procedure("add_note", "INSERT INTO notes (body) VALUES (:body)", "body", true),
        procedure(
            "read_then_write",
            "SELECT count(*) FROM notes; DELETE FROM notes WHERE id > :keep",
            "keep",
            true,
        ),
    ] {
        setup.put_procedure(definition).await.unwrap();
    }
    for ((surface, reader), (_, writer)) in readers.iter().zip(&writers) {
        let (reader, writer) = (reader.as_ref(), writer.as_ref());
        let before = notes_in(&fixture);
        // A procedure that only reads runs, its arguments bound as the procedure binds them.
        let all = reader
            .execute_procedure("count_from", Params::none())
            .await
            .unwrap_or_else(|err| panic!("{surface}: {err}"));
        assert_eq!(count(&all), Value::Integer(before), "{surface}");
        let later = reader
            .execute_procedure("count_from", Params::named([("min", 2_i64)]))
            .await
            .unwrap_or_else(|err| panic!("{surface}: {err}"));
        assert_eq!(count(&later), Value::Integer(before - 1), "{surface}");
        let positional = reader
            .execute_procedure("count_from", Params::from(vec![2_i64]))
            .await
            .unwrap_or_else(|err| panic!("{surface}: {err}"));
        assert_eq!(count(&positional), Value::Integer(before - 1), "{surface}");
        let err = reader
            .execute_procedure("count_from", Params::named([("max", 2_i64)]))
            .await
            .expect_err("an undeclared argument");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{surface}: {err}");
        let err = reader
            .execute_procedure("no_such_procedure", Params::none())
            .await
            .expect_err("no such procedure");
        assert_eq!(err.kind(), ErrorKind::NotFound, "{surface}: {err}");

        // One that writes is refused, having written nothing.
        let outcome = reader
            .execute_procedure("add_note", Params::named([("body", "read key")]))
            .await;
        assert_needs_write(surface, "add_note", outcome);
        let outcome = reader
            .execute_procedure("read_then_write", Params::named([("keep", 0_i64)]))
            .await;
        assert_needs_write(surface, "read_then_write", outcome);
        assert_eq!(notes_in(&fixture), before, "{surface}: the read key wrote nothing");

        // The write key runs it as before.
        writer
            .execute_procedure("add_note", Params::named([("body", "writer")]))
            .await
            .unwrap_or_else(|err| panic!("{surface}: {err}"));
        assert_eq!(notes_in(&fixture), before + 1, "{surface}");
    }
    daemon.stop().await.unwrap();
}

/// Read-only is the daemon's decision for a read key, not a request parameter, and the remote
/// clients do not begin an ordinary transaction on another daemon when asked for a read-only one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_transaction_is_not_asked_for_over_the_wire() {
    let fixture = Fixture::new().await;
    let daemon = keyed_daemon(&fixture).await;
    for (surface, writer) in clients(&daemon, WRITE_KEY).await {
        let err = writer
            .begin_transaction_with(TransactionOptions::read_only())
            .await
            .expect_err("a read-only transaction on another daemon");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{surface}: {err}");
        assert!(err.to_string().contains("another daemon"), "{surface}: {err}");
    }
    let asked = routed(
        http_client().post(daemon.url("/api/transactions?readOnly=true")),
        "tenant-a",
    )
    .header("X-CSharpDB-Api-Key", WRITE_KEY)
    .send()
    .await
    .unwrap();
    assert_eq!(asked.status(), reqwest::StatusCode::BAD_REQUEST);
    assert_eq!(daemon.state.open_transaction_count(), 0, "nothing was begun");
    daemon.stop().await.unwrap();
}
