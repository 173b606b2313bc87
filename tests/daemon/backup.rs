//! A backup set taken while the daemon serves a steady stream of routed writes over REST, then
//! restored: every row acknowledged before the cut is there with its value, every restored row
//! was sent, and none twice.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use serde_json::json;
use tokio::sync::watch;

use crate::support::daemon::{http_client, routed};
use crate::support::{Fixture, route, temp_dir};
use shardlite::backup::{create_backup, restore_backup};
use shardlite::client::{Params, ShardedClient, SqlData, Value};

const TENANTS: i64 = 16;

fn tenant_of(id: i64) -> String {
    format!("tenant-{}", id % TENANTS)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_steady_writes_restores_every_acknowledged_row() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let sharded = daemon.state.sharded().expect("a sharded daemon").clone();
    for pinned in ["tenant-a", "tenant-b"] {
        sharded
            .for_route(route(pinned))
            .execute_sql(
                "CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL)",
                Params::none(),
            )
            .await
            .unwrap();
    }

    // One writer, one insert at a time: `acked` is the highest id acknowledged, every id below
    // it acknowledged too.
    let (acked_tx, mut acked) = watch::channel(0i64);
    let (stop_tx, stop) = watch::channel(false);
    let url = daemon.url("/api/sql/execute");
    let writer = tokio::spawn(async move {
        let http = http_client();
        let mut id = 0;
        while !*stop.borrow() {
            id += 1;
            let tenant = tenant_of(id);
            let response = routed(http.post(&url), &tenant)
                .json(&json!({ "sql": format!("INSERT INTO items (id, tenant) VALUES ({id}, '{tenant}')") }))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{:?}", response.text().await);
            acked_tx.send_replace(id);
        }
        id
    });
    acked.wait_for(|n| *n >= 50).await.unwrap();
    let acknowledged_before_cut = *acked.borrow();
    let place = temp_dir();
    let (manifest_path, manifest) = create_backup(&sharded, place.path(), &|_| {}).await.unwrap();
    let after = *acked.borrow();
    // The writes went on through the backup and after it.
    acked.wait_for(|n| *n >= after + 20).await.unwrap();
    stop_tx.send_replace(true);
    let sent = writer.await.unwrap();
    assert_eq!(manifest.shards.len(), 2);

    let target = temp_dir();
    let restored = restore_backup(&manifest_path, &target.path().join("keyspace"))
        .await
        .unwrap();
    let restored = ShardedClient::open(&restored.master).await.unwrap();
    let mut rows = BTreeMap::new();
    for shard in restored.query().read_all("SELECT id, tenant FROM items").await.unwrap() {
        for row in shard.result.expect("a result").rows {
            let (Value::Integer(id), Value::Text(tenant)) = (&row[0], &row[1]) else {
                panic!("{row:?}");
            };
            assert!(rows.insert(*id, tenant.clone()).is_none(), "id {id} restored twice");
        }
    }
    for id in 1..=acknowledged_before_cut {
        assert_eq!(
            rows.get(&id),
            Some(&tenant_of(id)),
            "acknowledged id {id} before the cut"
        );
    }
    for (id, tenant) in &rows {
        assert!(*id <= sent, "id {id} was never sent");
        assert_eq!(*tenant, tenant_of(*id));
    }
    // Routed reads find each tenant's rows on the shard the restored map names.
    let routed_count = restored
        .for_route(route("tenant-3"))
        .execute_read_only_sql("SELECT count(*) FROM items WHERE tenant = 'tenant-3'", Params::none())
        .await
        .unwrap();
    let expected = rows.values().filter(|t| *t == "tenant-3").count();
    assert_eq!(
        routed_count.rows[0][0],
        Value::Integer(i64::try_from(expected).unwrap())
    );
    daemon.stop().await.unwrap();
}
