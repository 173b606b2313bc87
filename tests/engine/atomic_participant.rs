//! An atomic transaction's participant file against an older SQLite than the bundled one
//! (Debian's `sqlite3`): while a transaction is prepared, the plain tool opens the file, reads
//! the last committed values, writes rows no transaction holds, and is refused on a locked row
//! with the `row_locked` message; after the commit nothing of the transaction is left.

use std::path::Path;

use crate::support::old_sqlite::{self, read_every_table};
use crate::support::temp_dir;
use shardlite::client::Params;
use shardlite::engine::{Database, EngineConfig, Finished};

async fn prepared_file(path: &Path) -> Database {
    let db = Database::open(path, "p", EngineConfig::default()).await.unwrap();
    db.execute(
        "CREATE TABLE stock (id INTEGER PRIMARY KEY, item TEXT NOT NULL, qty INTEGER NOT NULL)",
        Params::none(),
    )
    .await
    .unwrap();
    db.execute(
        "INSERT INTO stock (id, item, qty) VALUES (1, 'bolt', 10), (2, 'nut', 20)",
        Params::none(),
    )
    .await
    .unwrap();
    let session = db.sessions().begin_atomic().await.unwrap();
    db.sessions()
        .session_execute(
            &session.id,
            "UPDATE stock SET qty = qty - 3 WHERE id = 1",
            Params::none(),
        )
        .await
        .unwrap();
    let locked = db
        .sessions()
        .session_prepare(&session.id, "move-1", vec!["p".into(), "q".into()])
        .await
        .unwrap();
    assert_eq!(locked, 1);
    db
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_sqlite_reads_a_prepared_file_and_is_refused_on_a_locked_row() {
    let version = old_sqlite::version();
    let dir = temp_dir();
    let file = dir.path().join("p.db");
    let db = prepared_file(&file).await;

    let tables = read_every_table(&file);
    assert!(
        tables.iter().any(|t| t == "_shardlite_atomic_locks"),
        "sqlite3 {version} lists {tables:?}"
    );
    assert_eq!(
        old_sqlite::run(&file, "SELECT qty FROM stock ORDER BY id").unwrap(),
        "10\n20\n",
        "readers see the last committed values"
    );
    old_sqlite::run(&file, "UPDATE stock SET qty = 21 WHERE id = 2").expect("a row no transaction holds");
    let refused = old_sqlite::run(&file, "UPDATE stock SET qty = 0 WHERE id = 1").unwrap_err();
    assert!(refused.contains("shardlite row_locked"), "sqlite3 {version}: {refused}");
    let refused = old_sqlite::run(&file, "DELETE FROM stock WHERE id = 1").unwrap_err();
    assert!(refused.contains("row_locked"), "sqlite3 {version}: {refused}");

    assert_eq!(db.atomic().commit_prepared("move-1").await.unwrap(), Finished::Applied);
    assert_eq!(
        old_sqlite::run(&file, "SELECT qty FROM stock ORDER BY id").unwrap(),
        "7\n21\n"
    );
    assert_eq!(
        old_sqlite::run(
            &file,
            "SELECT (SELECT count(*) FROM _shardlite_atomic_locks) + (SELECT count(*) FROM _shardlite_atomic_intents) \
             + (SELECT count(*) FROM _shardlite_atomic_rows) + (SELECT count(*) FROM _shardlite_atomic_values)"
        )
        .unwrap(),
        "0\n",
        "no lock or intent is left"
    );
    old_sqlite::run(&file, "UPDATE stock SET qty = 0 WHERE id = 1").expect("the row is free again");
}
