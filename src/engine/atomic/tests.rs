//! A participant against real files: prepare, the locks it leaves, commit and abort, and the
//! decision record's compare-and-set.

use std::time::Duration;

use super::{DecisionState, Finished};
use crate::data::{Params, SqlResult, Value};
use crate::engine::{Database, EngineConfig};
use crate::error::{Error, ErrorKind};

async fn open() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("p.db"), "p", EngineConfig::default())
        .await
        .unwrap();
    db.execute(
        "CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT, balance REAL, photo BLOB)",
        Params::none(),
    )
    .await
    .unwrap();
    db.execute(
        "INSERT INTO accounts (id, owner, balance) VALUES (1, 'ann', 10.5), (2, 'bob', 20), (3, 'cy', 30)",
        Params::none(),
    )
    .await
    .unwrap();
    (dir, db)
}

fn rows(result: &SqlResult) -> Vec<Vec<Value>> {
    result.rows.clone()
}

async fn balances(db: &Database) -> Vec<Vec<Value>> {
    rows(
        &db.execute(
            "SELECT id, owner, balance, photo FROM accounts ORDER BY id",
            Params::none(),
        )
        .await
        .unwrap(),
    )
}

/// Runs `statements` in an atomic session and prepares it as `id`.
async fn prepare(db: &Database, id: &str, statements: &[&str]) -> crate::Result<usize> {
    let session = db.sessions().begin_atomic().await?;
    for sql in statements {
        if let Err(err) = db.sessions().session_execute(&session.id, sql, Params::none()).await {
            db.sessions().session_rollback(&session.id).await?;
            return Err(err);
        }
    }
    db.sessions()
        .session_prepare(&session.id, id, vec!["p".into(), "q".into()])
        .await
}

#[tokio::test]
async fn prepare_locks_rows_and_leaves_committed_values_until_commit() {
    let (_dir, db) = open().await;
    let before = balances(&db).await;
    let locked = prepare(
        &db,
        "tx1",
        &[
            "UPDATE accounts SET balance = balance - 5 WHERE id = 1",
            "INSERT INTO accounts (owner, balance, photo) VALUES ('dee', 5, x'00ff')",
            "DELETE FROM accounts WHERE id = 3",
        ],
    )
    .await
    .unwrap();
    assert_eq!(locked, 3);
    assert_eq!(balances(&db).await, before, "readers see the last committed values");

    for sql in [
        "UPDATE accounts SET balance = 0 WHERE id = 1",
        "DELETE FROM accounts WHERE id = 3",
        "INSERT INTO accounts (id, owner) VALUES (4, 'eve')",
    ] {
        let err = db.execute(sql, Params::none()).await.unwrap_err();
        assert!(
            matches!(&err, Error::RowLocked { table } if &**table == "accounts"),
            "{sql}: {err:?}"
        );
        assert_eq!(err.kind(), ErrorKind::RowLocked);
        assert!(err.is_retryable());
    }
    // A row no transaction holds is writable, and an insert never takes the prepared row's rowid.
    db.execute("UPDATE accounts SET owner = 'bobby' WHERE id = 2", Params::none())
        .await
        .unwrap();
    let intents = db.atomic().intents().await.unwrap();
    assert_eq!(intents.len(), 1);
    assert_eq!((intents[0].transaction_id.as_str(), intents[0].rows), ("tx1", 3));
    assert_eq!(intents[0].participants, ["p", "q"]);

    assert_eq!(db.atomic().commit_prepared("tx1").await.unwrap(), Finished::Applied);
    assert_eq!(
        balances(&db).await,
        vec![
            vec![Value::Integer(1), "ann".into(), Value::Real(5.5), Value::Null],
            vec![Value::Integer(2), "bobby".into(), Value::Real(20.0), Value::Null],
            vec![
                Value::Integer(4),
                "dee".into(),
                Value::Real(5.0),
                Value::Blob(vec![0, 255])
            ],
        ]
    );
    assert!(db.atomic().intents().await.unwrap().is_empty());
    // Repeating is safe, and the rows are free again.
    assert_eq!(db.atomic().commit_prepared("tx1").await.unwrap(), Finished::NotPrepared);
    db.execute("UPDATE accounts SET balance = 1 WHERE id = 1", Params::none())
        .await
        .unwrap();
}

#[tokio::test]
async fn abort_drops_the_changes_and_releases_the_locks() {
    let (_dir, db) = open().await;
    let before = balances(&db).await;
    prepare(&db, "tx2", &["UPDATE accounts SET balance = 0"]).await.unwrap();
    assert_eq!(db.atomic().abort_prepared("tx2").await.unwrap(), Finished::Dropped);
    assert_eq!(db.atomic().abort_prepared("tx2").await.unwrap(), Finished::NotPrepared);
    assert_eq!(balances(&db).await, before);
    db.execute("UPDATE accounts SET balance = 1", Params::none())
        .await
        .unwrap();
}

#[tokio::test]
async fn an_atomic_session_cannot_write_a_locked_row_or_a_table_without_rowid() {
    let (_dir, db) = open().await;
    prepare(&db, "tx3", &["UPDATE accounts SET balance = 0 WHERE id = 1"])
        .await
        .unwrap();
    let err = prepare(&db, "tx4", &["UPDATE accounts SET balance = 1 WHERE id = 1"])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RowLocked, "{err:?}");

    db.execute("CREATE TABLE k (a TEXT PRIMARY KEY, b) WITHOUT ROWID", Params::none())
        .await
        .unwrap();
    let err = prepare(&db, "tx5", &["INSERT INTO k VALUES ('x', 1)"])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::AtomicUnsupported { .. }), "{err:?}");
    assert_eq!(
        db.atomic().intents().await.unwrap().len(),
        1,
        "nothing of tx5 was prepared"
    );
    assert_eq!(
        rows(&db.execute("SELECT count(*) FROM k", Params::none()).await.unwrap()),
        vec![vec![Value::Integer(0)]]
    );
}

#[tokio::test]
async fn the_decision_is_one_compare_and_set() {
    let (_dir, db) = open().await;
    let atomic = db.atomic();
    assert_eq!(atomic.decide("d1", DecisionState::Commit).await.unwrap(), None);
    atomic
        .create_decision("d1", vec!["p".into(), "q".into()])
        .await
        .unwrap();
    let again = atomic.create_decision("d1", vec!["p".into()]).await.unwrap_err();
    assert_eq!(again.kind(), ErrorKind::Conflict);
    assert_eq!(
        atomic.decide("d1", DecisionState::Commit).await.unwrap(),
        Some(DecisionState::Commit)
    );
    assert_eq!(
        atomic.decide("d1", DecisionState::Abort).await.unwrap(),
        Some(DecisionState::Commit),
        "the first decision stands"
    );
    atomic.create_decision("d2", vec!["p".into()]).await.unwrap();
    assert!(
        atomic
            .abort_abandoned(Duration::from_secs(60))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        atomic.abort_abandoned(Duration::ZERO).await.unwrap(),
        vec!["d2".to_owned()]
    );
    let d2 = atomic.decision("d2").await.unwrap().unwrap();
    assert_eq!(
        (d2.state, d2.participants.as_slice()),
        (DecisionState::Abort, &["p".to_owned()][..])
    );
    assert_eq!(
        atomic.decide("d2", DecisionState::Commit).await.unwrap(),
        Some(DecisionState::Abort),
        "a late commit loses to presumed abort"
    );
    assert!(atomic.forget_decision("d1").await.unwrap());
    assert_eq!(atomic.decisions().await.unwrap().len(), 1);
}

/// Runs `statements` in an atomic session and prepares it as `id` on the first participant
/// `p` (which creates the decision record), for a commit begun at `started_unix_ms`.
async fn prepare_first(db: &Database, id: &str, statements: &[&str], started_unix_ms: i64) -> crate::Result<usize> {
    let session = db.sessions().begin_atomic().await?;
    for sql in statements {
        db.sessions().session_execute(&session.id, sql, Params::none()).await?;
    }
    db.sessions()
        .session_prepare_at(&session.id, id, vec!["p".into(), "q".into()], started_unix_ms)
        .await
}

#[tokio::test]
async fn a_tombstone_makes_the_first_participants_late_prepare_fail() {
    let (_dir, db) = open().await;
    let atomic = db.atomic();
    let now = crate::engine::unix_ms_now();
    let participants = vec!["p".to_owned(), "q".to_owned()];
    assert_eq!(
        atomic.abort_unknown("t1", participants.clone(), now).await.unwrap(),
        DecisionState::Abort
    );
    let before = balances(&db).await;
    let late = prepare_first(&db, "t1", &["UPDATE accounts SET balance = 0 WHERE id = 1"], now).await;
    assert!(matches!(late, Err(Error::AtomicDecided { .. })), "{late:?}");
    assert!(
        atomic.intents().await.unwrap().is_empty(),
        "the late prepare left nothing"
    );
    assert_eq!(balances(&db).await, before);

    // A record that exists wins over a tombstone.
    prepare_first(&db, "t2", &["UPDATE accounts SET balance = 1 WHERE id = 2"], now)
        .await
        .unwrap();
    assert_eq!(
        atomic.abort_unknown("t2", participants, now).await.unwrap(),
        DecisionState::Pending
    );
    assert_eq!(
        atomic.decide_commit("t2", Duration::from_secs(60)).await.unwrap(),
        Some(DecisionState::Commit)
    );
}

#[tokio::test]
async fn the_commit_point_refuses_a_commit_begun_half_an_abandon_age_ago() {
    let (_dir, db) = open().await;
    let atomic = db.atomic();
    // The coordinator began this commit 20 s ago: its record came late (after a tombstone could
    // have been written and forgotten), so the compare-and-set aborts rather than commits.
    let started = crate::engine::unix_ms_now() - 20_000;
    prepare_first(&db, "t3", &["UPDATE accounts SET balance = 0 WHERE id = 1"], started)
        .await
        .unwrap();
    let record = atomic.decision("t3").await.unwrap().unwrap();
    assert_eq!(record.created_unix_ms, started, "the record carries the commit's start");
    assert_eq!(atomic.intents().await.unwrap()[0].prepared_unix_ms, started);
    assert_eq!(
        atomic.decide_commit("t3", Duration::from_secs(15)).await.unwrap(),
        Some(DecisionState::Abort)
    );
    assert_eq!(atomic.decide_commit("t4", Duration::from_secs(15)).await.unwrap(), None);
}

#[tokio::test]
async fn decide_and_apply_is_one_commit_and_queued_records_go_with_the_next_one() {
    let (_dir, db) = open().await;
    let atomic = db.atomic();
    let now = crate::engine::unix_ms_now();
    prepare_first(&db, "t5", &["UPDATE accounts SET balance = 7 WHERE id = 1"], now)
        .await
        .unwrap();
    assert_eq!(
        atomic
            .decide_commit_and_apply("t5", Duration::from_secs(15))
            .await
            .unwrap(),
        Some(DecisionState::Commit)
    );
    assert_eq!(balances(&db).await[0][2], Value::Real(7.0), "applied with the decision");
    assert!(atomic.intents().await.unwrap().is_empty(), "and its locks released");
    assert_eq!(atomic.commit_prepared("t5").await.unwrap(), Finished::NotPrepared);

    // Queued, the record stays until the next decision here deletes it in its own commit.
    atomic.forget_later("t5");
    assert!(atomic.will_forget("t5"));
    assert_eq!(atomic.decisions().await.unwrap().len(), 1);
    prepare_first(
        &db,
        "t6",
        &["UPDATE accounts SET balance = 8 WHERE id = 2"],
        now - 20_000,
    )
    .await
    .unwrap();
    assert_eq!(
        atomic
            .decide_commit_and_apply("t6", Duration::from_secs(15))
            .await
            .unwrap(),
        Some(DecisionState::Abort),
        "a commit begun too long ago aborts, and drops its values in the same commit"
    );
    assert!(!atomic.will_forget("t5"));
    let left: Vec<String> = atomic
        .decisions()
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.transaction_id)
        .collect();
    assert_eq!(left, ["t6"]);
    assert_eq!(balances(&db).await[1][2], Value::Real(20.0));
    assert!(atomic.intents().await.unwrap().is_empty());

    // The resolver's batch forget takes queued records off the queue too.
    atomic.forget_later("t6");
    assert_eq!(atomic.forget_decisions(vec!["t6".into()]).await.unwrap(), 1);
    assert!(!atomic.will_forget("t6"));
}
