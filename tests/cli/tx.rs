//! `shardlite tx list|resolve` on a master whose atomic transaction stopped after its decision:
//! the list shows it with its state and participants, resolve applies it on the second shard
//! (the first applied with the decision), and the list is empty afterwards.

use crate::support::cli::{json_of, seeded, shardlite, stdout};
use crate::support::{route, temp_dir};
use shardlite::client::{AtomicStep, Params, ShardedClient, SqlData};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tx_list_shows_a_stopped_transaction_and_tx_resolve_finishes_it() {
    let dir = temp_dir();
    let connection = seeded(dir.path());
    let sharded = ShardedClient::open(dir.path().join("master.db")).await.unwrap();
    // tenant-a is pinned to s0, tenant-b to s1.
    for key in ["tenant-a", "tenant-b"] {
        sharded
            .for_route(route(key))
            .execute_sql(
                "CREATE TABLE stock (id INTEGER PRIMARY KEY, qty INTEGER)",
                Params::none(),
            )
            .await
            .unwrap();
    }
    let mut tx = sharded.begin_atomic();
    for key in ["tenant-a", "tenant-b"] {
        tx.execute(&route(key), "INSERT INTO stock VALUES (1, 5)", Params::none())
            .await
            .unwrap();
    }
    tx.commit_until(Some(AtomicStep::Decided)).await.unwrap();
    let id = tx.id();
    drop(tx);
    drop(sharded);

    // No daemon here: the command runs on this test's thread.
    let run = |words: &[&str]| {
        let mut args = words.to_vec();
        args.extend(["-c", connection.as_str()]);
        shardlite(&args)
    };
    let listed = json_of(&run(&["tx", "list", "--json"]));
    let entries = listed.as_array().expect("a list");
    assert!(
        entries.iter().any(|e| e["transaction_id"] == id.as_str()
            && e["state"] == "commit"
            && e["participants"] == serde_json::json!(["s0", "s1"])),
        "{listed:#}"
    );
    let resolved = stdout(&run(&["tx", "resolve"]));
    // The first participant applied with the decision; resolve applies the second.
    assert!(resolved.contains("committed on 1 participant(s)"), "{resolved}");
    let listed = json_of(&run(&["tx", "list", "--json"]));
    assert_eq!(listed, serde_json::json!([]));
}
