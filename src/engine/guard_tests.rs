//! The guard against a real file: what client SQL may do to the shared connections' state.

use super::config::EngineConfig;
use super::database::Database;
use crate::data::{Params, Value};
use crate::error::ErrorKind;

async fn open() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let database = Database::open(dir.path().join("g.db"), "g", EngineConfig::default())
        .await
        .unwrap();
    database
        .execute(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)",
            Params::none(),
        )
        .await
        .unwrap();
    (dir, database)
}

/// TEMP objects on the shared writer's connection, counted on that connection.
fn writer_temp_objects(database: &Database) -> i64 {
    let open = database.shared.opened().unwrap();
    let conn = open.writer_conn.lock().unwrap();
    conn.query_row("SELECT count(*) FROM temp.sqlite_master", [], |row| row.get(0))
        .unwrap()
}

/// Every spelling of a TEMP object's creation, and its drop and alteration.
pub(crate) const TEMP_FORMS: &[&str] = &[
    "CREATE TEMP TRIGGER t1 AFTER INSERT ON orders BEGIN DELETE FROM orders WHERE id <> new.id; END",
    "CREATE TEMPORARY TRIGGER t2 BEFORE INSERT ON main.orders BEGIN SELECT 1; END",
    "CREATE TRIGGER temp.t3 AFTER INSERT ON orders BEGIN SELECT 1; END",
    "CREATE TEMP TABLE orders (id INTEGER PRIMARY KEY, n INTEGER)",
    "CREATE TEMPORARY TABLE shadow (x)",
    "CREATE TABLE temp.orders (id INTEGER PRIMARY KEY, n INTEGER)",
    "create table \"temp\".\"orders\" (id integer primary key, n integer)",
    "CREATE TABLE TEMP.x (y)",
    "CREATE TEMP TABLE copied AS SELECT * FROM orders",
    "CREATE TEMP VIEW v AS SELECT 1",
    "CREATE VIEW temp.v2 AS SELECT * FROM orders",
    "CREATE TEMP TABLE t (x); CREATE INDEX temp.ti ON t (x)",
    "DROP TABLE IF EXISTS temp.orders",
    "DROP TRIGGER IF EXISTS temp.t1",
    "DROP VIEW IF EXISTS temp.v",
    "ALTER TABLE temp.orders ADD COLUMN z",
];

/// Checks that `sql` was refused, or (a DROP or ALTER of a TEMP object, which cannot exist)
/// found nothing to act on before the authorizer was asked.
pub(crate) fn refused(sql: &str, outcome: crate::error::Result<crate::data::SqlResult>) {
    let acts_on_existing = sql.starts_with("DROP") || sql.starts_with("ALTER");
    match outcome {
        Err(err) if err.kind() == ErrorKind::Forbidden => {}
        Err(err) if acts_on_existing && err.kind() == ErrorKind::Sql => {}
        Ok(result) if acts_on_existing && result.rows_affected == 0 => {}
        other => panic!("{sql}: expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn no_temp_object_reaches_a_shared_connection() {
    let (_dir, database) = open().await;
    database
        .execute("INSERT INTO orders (id, n) VALUES (1, 1)", Params::none())
        .await
        .unwrap();
    for (at, sql) in TEMP_FORMS.iter().enumerate() {
        refused(sql, database.execute(sql, Params::none()).await);
        assert_eq!(writer_temp_objects(&database), 0, "{sql}");
        // The next caller's write lands in the file, next to the rows already there.
        let id = i64::try_from(at).unwrap() + 10;
        let inserted = database
            .execute(
                "INSERT INTO orders (id, n) VALUES (?1, 2)",
                Params::from(vec![Value::Integer(id)]),
            )
            .await
            .unwrap();
        assert_eq!(inserted.rows_affected, 1, "{sql}");
        let blocking = database
            .execute_blocking(
                "INSERT INTO orders (id, n) VALUES (?1, 3)",
                &Params::from(vec![Value::Integer(id + 1000)]),
            )
            .unwrap();
        assert_eq!(blocking.rows_affected, 1, "{sql}");
        refused(sql, database.execute_blocking(sql, &Params::none()));
        assert_eq!(writer_temp_objects(&database), 0, "blocking {sql}");
    }
    let file = rusqlite::Connection::open(database.path()).unwrap();
    let rows: i64 = file
        .query_row("SELECT count(*) FROM orders", [], |row| row.get(0))
        .unwrap();
    assert_eq!(rows, 1 + 2 * i64::try_from(TEMP_FORMS.len()).unwrap());
    // The readers read the temp schema (which the end of the job checks) and find it empty.
    let read = database
        .execute("SELECT count(*) FROM temp.sqlite_master", Params::none())
        .await
        .unwrap();
    assert_eq!(read.rows, vec![vec![Value::Integer(0)]]);
}

#[tokio::test]
async fn a_transaction_keeps_its_own_temp_objects() {
    let (_dir, database) = open().await;
    let session = database.sessions().begin().await.unwrap();
    database
        .sessions()
        .session_execute(
            &session.id,
            "CREATE TEMP TABLE scratch (x); INSERT INTO scratch VALUES (1); \
             INSERT INTO orders (id, n) SELECT x, 5 FROM scratch",
            Params::none(),
        )
        .await
        .unwrap();
    database.sessions().session_commit(&session.id).await.unwrap();
    let read = database
        .execute("SELECT n FROM orders WHERE id = 1", Params::none())
        .await
        .unwrap();
    assert_eq!(read.rows, vec![vec![Value::Integer(5)]]);
    assert_eq!(writer_temp_objects(&database), 0);
}

#[test]
fn a_temp_object_left_on_a_connection_is_dropped_and_fails_the_job() {
    let conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE TABLE t (x); CREATE TEMP TABLE s (x); CREATE TEMP TRIGGER tt AFTER INSERT ON t BEGIN SELECT 1; END; \
         CREATE TEMP VIEW \"odd \"\"name\" AS SELECT 1",
    )
    .unwrap();
    // Nothing named the temp schema: nothing is checked.
    super::guard::temp_left(&conn).unwrap();
    super::guard::install(&conn, super::guard::ConnectionKind::Shared, false).unwrap();
    conn.query_row("SELECT count(*) FROM temp.sqlite_master", [], |_| Ok(()))
        .unwrap();
    let err = super::guard::temp_left(&conn).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Forbidden, "{err}");
    let left: i64 = conn
        .query_row("SELECT count(*) FROM temp.sqlite_master", [], |row| row.get(0))
        .unwrap();
    assert_eq!(left, 0);
    super::guard::temp_left(&conn).unwrap();
}
