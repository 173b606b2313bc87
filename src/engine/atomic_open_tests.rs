//! [`EngineConfig::atomic_open_hook`] against real files: called once per opening of a file
//! that holds an intent or a decision record, never for a file without (no tables, or tables
//! left empty by finished transactions).

use std::sync::{Arc, Mutex};

use crate::data::Params;
use crate::engine::{AtomicOpenHook, Database, EngineConfig};

/// A configuration whose hook records the labels it is called with.
fn recording() -> (EngineConfig, Arc<Mutex<Vec<String>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&calls);
    let hook = AtomicOpenHook(Arc::new(move |label: &str| seen.lock().unwrap().push(label.to_owned())));
    let config = EngineConfig {
        atomic_open_hook: Some(hook),
        ..EngineConfig::default()
    };
    (config, calls)
}

/// Opens the file `p.db` of `dir` anew with `config` and makes one call on it.
async fn reopen(dir: &std::path::Path, config: EngineConfig) -> Database {
    let db = Database::open(dir.join("p.db"), "p", config).await.unwrap();
    db.execute("SELECT 1", Params::none()).await.unwrap();
    db
}

#[tokio::test]
async fn the_atomic_open_hook_hears_only_of_files_holding_atomic_state() {
    let dir = tempfile::tempdir().unwrap();
    let (config, calls) = recording();
    let db = reopen(dir.path(), config.clone()).await;
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER)", Params::none())
        .await
        .unwrap();
    db.execute("INSERT INTO t VALUES (1, 1)", Params::none()).await.unwrap();
    drop(db);
    drop(reopen(dir.path(), config.clone()).await);
    assert!(calls.lock().unwrap().is_empty(), "no atomic tables");

    let db = reopen(dir.path(), EngineConfig::default()).await;
    let session = db.sessions().begin_atomic().await.unwrap();
    db.sessions()
        .session_execute(&session.id, "UPDATE t SET n = 2 WHERE id = 1", Params::none())
        .await
        .unwrap();
    db.sessions()
        .session_prepare(&session.id, "tx1", vec!["q".into(), "p".into()])
        .await
        .unwrap();
    drop(db);
    drop(reopen(dir.path(), config.clone()).await);
    assert_eq!(*calls.lock().unwrap(), ["p"], "an intent");

    let db = reopen(dir.path(), EngineConfig::default()).await;
    db.atomic().commit_prepared("tx1").await.unwrap();
    drop(db);
    drop(reopen(dir.path(), config).await);
    assert_eq!(calls.lock().unwrap().len(), 1, "tables left empty");
}
