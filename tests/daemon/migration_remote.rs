//! Migrations over the wire: a daemon runs them for REST and gRPC clients (the same
//! `ReshardAdmin` interface as in-process), answers fenced writes with 409 `route_fenced`, and
//! a migration whose source or destination shard is itself a daemon copies through the same
//! data interface.
#![cfg(all(feature = "server", feature = "http", feature = "grpc"))]

use crate::support::daemon::{Daemon, http_client, remote_shard, start_daemon_on};
use crate::support::migrate::{
    allow_item, audit_item_writes, fill, forget_copied_pages, item_writes, items_on, key_request, migration_master,
    other, owner, refuse_item,
};
use crate::support::{path_str, temp_dir};
use serde_json::{Value as Json, json};
use shardlite::client::{Params, ShardedClient};
use shardlite::data::{ReshardAdmin, ReshardStatus, ResumeRequest};
use shardlite::map::{BucketRange, ShardDefinition, ShardingOptions};
use shardlite::reshard::{Resharder, fences_on};
use shardlite::server::ServerConfig;
use shardlite::transport::RemoteOptions;
use shardlite::transport::grpc::GrpcClient;
use shardlite::transport::http::HttpClient;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_runs_migrations_for_rest_and_grpc_clients() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let (first, second, source) = {
        let sharded = ShardedClient::open(&master).await.unwrap();
        let keys: Vec<String> = (0..100).map(|i| format!("remote-{i}")).collect();
        let source = owner(&sharded, &keys[0]);
        let same: Vec<String> = keys
            .into_iter()
            .filter(|k| owner(&sharded, k) == source)
            .take(2)
            .collect();
        fill(&sharded, &same[0], 1, 300).await;
        fill(&sharded, &same[1], 1, 30).await;
        (same[0].clone(), same[1].clone(), source)
    };
    let destination = other(&source);
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let http = HttpClient::new(RemoteOptions::new(&daemon.base_url)).unwrap();
    let grpc = GrpcClient::new(RemoteOptions::new(&daemon.base_url)).unwrap();

    // REST dry run: the plan, nothing stored.
    let mut request = key_request(&first, destination, 50);
    request.dry_run = true;
    let planned = http.start_migration(&request).await.unwrap();
    assert_eq!(planned.status, ReshardStatus::Planned);
    assert_eq!(planned.plan.unwrap().items[0].estimated_rows, 300);
    assert!(grpc.migrations().await.unwrap().is_empty());

    // A bad body names the problem (unknown field), over REST.
    let refused = http_client()
        .post(daemon.url("/api/sharding/migrations/exact-route-key"))
        .json(
            &json!({ "keyspace": "tenants", "routeKey": "x", "destinationShardId": "s1",
                       "manifest": { "tables": [] }, "dryrun": true }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let problem: Json = refused.json().await.unwrap();
    assert!(problem["detail"].as_str().unwrap().contains("dryrun"), "{problem}");

    // gRPC: migrate without activation; the key is fenced, and a write through the daemon's REST
    // data endpoint is 409 route_fenced while reads go on.
    let mut request = key_request(&first, destination, 50);
    request.activate = false;
    request.delete_source = false;
    request.migration_id = Some("over-grpc".into());
    let pending = grpc.start_migration(&request).await.unwrap();
    assert_eq!(pending.status, ReshardStatus::PendingActivation, "{pending:#?}");
    // Its map is written, so it cannot be abandoned (over either transport); unknown ids are named.
    let refused = grpc.abandon_migration("over-grpc").await.unwrap_err();
    assert_eq!(refused.kind(), shardlite::ErrorKind::InvalidInput);
    assert!(refused.to_string().contains("already wrote map version 2"), "{refused}");
    let unknown = http.abandon_migration("no-such-migration").await.unwrap_err();
    assert_eq!(unknown.kind(), shardlite::ErrorKind::NotFound, "{unknown}");
    let write = http_client()
        .post(daemon.url("/api/sql/execute"))
        .header("X-CSharpDB-Keyspace", "tenants")
        .header("X-CSharpDB-Shard-Key", &first)
        .json(&json!({ "sql": "UPDATE items SET n = 0 WHERE tenant = ?1", "parameters": [first] }))
        .send()
        .await
        .unwrap();
    assert_eq!(write.status(), 409);
    let problem: Json = write.json().await.unwrap();
    assert_eq!(problem["errorCode"], "route_fenced", "{problem}");
    let read = http_client()
        .post(daemon.url("/api/sql/execute"))
        .header("X-CSharpDB-Keyspace", "tenants")
        .header("X-CSharpDB-Shard-Key", &first)
        .json(&json!({ "sql": "SELECT count(*) FROM items WHERE tenant = ?1", "parameters": [first] }))
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);

    // REST progress and resume with activation and deletion; gRPC history.
    let progress = http.migration_progress("over-grpc").await.unwrap();
    assert_eq!(progress.status, ReshardStatus::PendingActivation);
    let done = http
        .resume_migration(
            "over-grpc",
            &ResumeRequest {
                activate: true,
                delete_source: true,
            },
        )
        .await
        .unwrap();
    assert_eq!(done.status, ReshardStatus::Activated, "{done:#?}");
    assert_eq!(done.receipts[0].source_rows_deleted, 300);
    let history = grpc.migration_history().await.unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].status, ReshardStatus::Activated);
    // Over REST: the history (GET /api/sharding/migrations) and the latest states.
    assert_eq!(http.migration_history().await.unwrap(), history);
    let latest = http.migrations().await.unwrap();
    assert_eq!(latest.len(), 1);
    assert_eq!(latest[0].migration_id, "over-grpc");
    let unknown = grpc.migration_progress("nope").await.unwrap_err();
    assert_eq!(unknown.kind(), shardlite::ErrorKind::NotFound);

    let sharded = ShardedClient::open(&master).await.unwrap();
    assert_eq!(items_on(&sharded, destination, &first).await.0, 300);
    assert_eq!(items_on(&sharded, &source, &first).await.0, 0);
    assert_eq!(items_on(&sharded, &source, &second).await.0, 30);
    daemon.stop().await.unwrap();
}

/// A master with a local shard and one ("far") behind a daemon over `transport`, the items
/// table on both, and 250 rows of the pinned key "wanderer" on the local shard.
async fn local_and_far(transport: &str) -> (tempfile::TempDir, Daemon, std::path::PathBuf, ShardedClient) {
    let dir = temp_dir();
    let plain = dir.path().join("remote-shard.db");
    let daemon = start_daemon_on(&plain, ServerConfig::default()).await;
    let options = ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: 4,
        shards: vec![
            ShardDefinition::local("local", path_str(&dir.path().join("local.db"))),
            remote_shard("far", &daemon, transport),
        ],
        bucket_ranges: vec![BucketRange::new(0, 2, "local"), BucketRange::new(2, 4, "far")],
        exact_key_pins: [("wanderer".to_owned(), "local".to_owned())].into(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    };
    let master = crate::support::seed_master(dir.path(), options).await;
    let sharded = ShardedClient::open(&master).await.unwrap();
    for outcome in sharded
        .query()
        .execute_all(
            "CREATE TABLE items (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER, amount REAL, data BLOB);
             CREATE INDEX items_tenant ON items (tenant);",
        )
        .await
        .unwrap()
    {
        assert!(outcome.error.is_none(), "{:?}", outcome.error);
    }
    fill(&sharded, "wanderer", 1, 250).await;
    (dir, daemon, master, sharded)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_moves_to_a_shard_behind_a_daemon_and_back() {
    let (_dir, daemon, _master, sharded) = local_and_far("grpc").await;
    let before = items_on(&sharded, "local", "wanderer").await;
    let migrator = Resharder::new(sharded.clone());

    // Local -> remote: the destination's upserts and reads go through gRPC.
    let there = migrator.migrate(key_request("wanderer", "far", 40)).await.unwrap();
    assert_eq!(there.status, ReshardStatus::Activated, "{there:#?}");
    assert_eq!(items_on(&sharded, "far", "wanderer").await, before);
    assert_eq!(items_on(&sharded, "local", "wanderer").await.0, 0);

    // Remote -> local: the fence is installed in the daemon's file, through the daemon.
    let back = migrator.migrate(key_request("wanderer", "local", 40)).await.unwrap();
    assert_eq!(back.status, ReshardStatus::Activated, "{back:#?}");
    assert_eq!(items_on(&sharded, "local", "wanderer").await, before);
    assert_eq!(items_on(&sharded, "far", "wanderer").await.0, 0);
    let far = sharded.for_shard_id("far").unwrap();
    assert_eq!(
        fences_on(&far).await.unwrap(),
        vec![(back.migration_id.clone(), "moved".to_owned())]
    );
    // The `moved` record the first migration left on `local` was cleared when the key came back.
    let local = sharded.for_shard_id("local").unwrap();
    assert!(fences_on(&local).await.unwrap().is_empty());
    let refused = far
        .execute_sql(
            "INSERT INTO items (id, tenant) VALUES ('stale', 'wanderer')",
            Params::none(),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), shardlite::ErrorKind::RouteFenced, "{refused}");
    drop(sharded);
    daemon.stop().await.unwrap();
}

/// Through the data clients each page is checkpointed once the destination committed it, so a
/// run can stop with one page on the destination beyond the checkpoint. On resume that page is
/// read back from the destination, found there exactly as on the source, and not written again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_does_not_write_again_the_page_a_daemon_committed_after_the_checkpoint() {
    let (_dir, daemon, master, sharded) = local_and_far("http").await;
    let before = items_on(&sharded, "local", "wanderer").await;
    audit_item_writes(&sharded, "far").await;

    // The second page (40 rows a page) cannot land: the run stops after the first, which the
    // catalog then forgets, as a crash between the daemon's commit and the checkpoint leaves it.
    refuse_item(&sharded, "far", 41).await;
    let migrator = Resharder::new(sharded.clone());
    let mut request = key_request("wanderer", "far", 40);
    request.migration_id = Some("over-the-wire".into());
    let stopped = migrator.migrate(request).await.unwrap();
    assert_eq!(stopped.status, ReshardStatus::Failed, "{stopped:#?}");
    assert_eq!(stopped.receipts[0].pages_copied, 1);
    assert_eq!(item_writes(&sharded, "far").await, (40, 0));
    forget_copied_pages(&master, "over-the-wire").await;
    allow_item(&sharded, "far").await;

    let resumed = migrator
        .resume("over-the-wire", ResumeRequest::default())
        .await
        .unwrap();
    assert_eq!(resumed.status, ReshardStatus::Activated, "{resumed:#?}");
    assert!(resumed.receipts.iter().all(|r| r.verified));
    assert_eq!(
        (resumed.receipts[0].source_rows, resumed.receipts[0].pages_copied),
        (250, 7)
    );
    assert_eq!(items_on(&sharded, "far", "wanderer").await, before);
    assert_eq!(
        item_writes(&sharded, "far").await,
        (250, 0),
        "(inserts, updates): the committed page was written again"
    );
    drop(sharded);
    daemon.stop().await.unwrap();
}

/// A request rejected before anything moved is a 400 over REST, with the whole result (its
/// issues naming the problem) as the member `migration`, and the history records it; the REST
/// client turns it back into a `Rejected` result, as in-process, and so does the gRPC client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_migration_request_is_a_400_with_the_result() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let request = key_request("some-tenant", "no-such-shard", 10);
    // The body `request` travels as (what the REST and gRPC clients below send).
    let body = json!({
        "keyspace": "tenants",
        "routeKey": "some-tenant",
        "destinationShardId": "no-such-shard",
        "manifest": crate::support::migrate::manifest(10),
        "activate": true,
        "deleteSource": true,
        "operator": "test"
    });

    let answer = http_client()
        .post(daemon.url("/api/sharding/migrations/exact-route-key"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 400);
    assert_eq!(answer.headers()["content-type"], "application/problem+json");
    let problem: Json = answer.json().await.unwrap();
    assert_eq!(problem["errorCode"], "invalid_input", "{problem}");
    assert_eq!(problem["migration"]["status"], "Rejected", "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains("no-such-shard"),
        "the detail names the problem: {problem}"
    );
    let issues = problem["migration"]["issues"].as_array().unwrap();
    assert!(!issues.is_empty(), "{problem}");

    let http = HttpClient::new(RemoteOptions::new(&daemon.base_url)).unwrap();
    let grpc = GrpcClient::new(RemoteOptions::new(&daemon.base_url)).unwrap();
    for rejected in [
        http.start_migration(&request).await.unwrap(),
        grpc.start_migration(&request).await.unwrap(),
    ] {
        assert_eq!(rejected.status, ReshardStatus::Rejected, "{rejected:#?}");
    }
    let history = http.migration_history().await.unwrap();
    assert_eq!(history.len(), 3, "every rejection is recorded: {history:#?}");
    assert!(history.iter().all(|m| m.status == ReshardStatus::Rejected));
    daemon.stop().await.unwrap();
}
