//! `shardlite migrate key|buckets|resume|status|history` end to end on a local master: the dry
//! run, a verified move with activation and source deletion, progress lines off a terminal,
//! JSON output, and exit codes.

use crate::support::cli::{json_of, shardlite, stderr, stdout};
use crate::support::migrate::{fill, items_on, manifest, migration_master, other, owner};
use crate::support::temp_dir;
use shardlite::client::ShardedClient;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_walk_through_dry_run_then_migrate_then_status_and_history() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let (source, before) = {
        let sharded = ShardedClient::open(&master).await.unwrap();
        fill(&sharded, "acme", 1, 700).await;
        let source = owner(&sharded, "acme");
        (source.clone(), items_on(&sharded, &source, "acme").await)
    };
    let destination = other(&source);
    let manifest_file = dir.path().join("manifest.json");
    std::fs::write(&manifest_file, serde_json::to_string(&manifest(100)).unwrap()).unwrap();
    let connection = format!("Data Source={}", master.display());
    let base = [
        "migrate",
        "key",
        "-c",
        &connection,
        "--keyspace",
        "tenants",
        "--key",
        "acme",
        "--to",
        destination,
        "--manifest",
        manifest_file.to_str().unwrap(),
    ];

    // Dry run: the plan, nothing changed.
    let dry = shardlite(&[&base[..], &["--dry-run"]].concat());
    assert!(dry.status.success(), "{}", stderr(&dry));
    let text = stdout(&dry);
    assert!(
        text.contains("Planned") && text.contains("700") && text.contains("new map version: 2"),
        "{text}"
    );

    // A manifest naming a route column the table lacks is refused naming that column alone.
    let wrong = dir.path().join("wrong-manifest.json");
    let text = r#"{"tables": [{"tableName": "items", "routeKeyColumn": "tenant_id", "primaryKeyColumn": "id"}]}"#;
    std::fs::write(&wrong, text).unwrap();
    let mut args = base.to_vec();
    *args.last_mut().unwrap() = wrong.to_str().unwrap();
    let refused = shardlite(&[&args[..], &["--dry-run"]].concat());
    assert!(!refused.status.success());
    let said = format!("{}{}", stdout(&refused), stderr(&refused));
    assert!(said.contains("no column 'tenant_id' (its routeKeyColumn)"), "{said}");
    assert!(!said.contains("'id' or"), "{said}");

    // The migration, with activation and source deletion; progress lines go to stderr.
    let run = shardlite(
        &[
            &base[..],
            &["--activate", "--delete-source", "--id", "move-acme", "--json"],
        ]
        .concat(),
    );
    assert!(run.status.success(), "{}\n{}", stdout(&run), stderr(&run));
    let result = json_of(&run);
    assert_eq!(result["status"], "Activated");
    assert_eq!(result["receipts"][0]["sourceRows"], 700);
    assert_eq!(result["receipts"][0]["verified"], true);
    assert!(
        stderr(&run).contains("items copied 700 of 700 rows"),
        "{}",
        stderr(&run)
    );

    let sharded = ShardedClient::open(&master).await.unwrap();
    assert_eq!(owner(&sharded, "acme"), destination);
    assert_eq!(items_on(&sharded, destination, "acme").await, before);
    assert_eq!(items_on(&sharded, &source, "acme").await.0, 0);

    // Status, resume (harmless), history.
    let status = shardlite(&["migrate", "status", "-c", &connection, "move-acme", "--json"]);
    assert_eq!(json_of(&status)["status"], "Activated");
    let listed = shardlite(&["migrate", "status", "-c", &connection]);
    assert!(stdout(&listed).contains("move-acme"), "{}", stdout(&listed));
    let resumed = shardlite(&["migrate", "resume", "-c", &connection, "move-acme"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert!(stdout(&resumed).contains("Activated"));
    let history = shardlite(&["migrate", "history", "-c", &connection, "--json"]);
    let entries = json_of(&history);
    assert_eq!(entries.as_array().unwrap().len(), 1);
    assert_eq!(entries[0]["migrationId"], "move-acme");

    // A rejected migration exits non-zero and says why.
    let again = shardlite(&[&base[..], &["--activate"]].concat());
    assert!(!again.status.success());
    assert!(stdout(&again).contains("destination-is-source"), "{}", stdout(&again));
    assert!(stderr(&again).contains("Rejected"), "{}", stderr(&again));

    // A bad manifest is named.
    std::fs::write(&manifest_file, r#"{"tables": [{"tableName": "items"}], "pagesize": 3}"#).unwrap();
    let bad = shardlite(&base);
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("manifest"), "{}", stderr(&bad));
    let unknown = shardlite(&["migrate", "status", "-c", &connection, "nope"]);
    assert!(!unknown.status.success());
    assert!(
        stderr(&unknown).contains("migration 'nope' was not found"),
        "{}",
        stderr(&unknown)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_moves_default_to_the_maps_keyspace() {
    let dir = temp_dir();
    let master = migration_master(dir.path()).await;
    let manifest_file = dir.path().join("manifest.json");
    std::fs::write(&manifest_file, serde_json::to_string(&manifest(50)).unwrap()).unwrap();
    let connection = format!("Data Source={}", master.display());
    let out = shardlite(&[
        "migrate",
        "buckets",
        "-c",
        &connection,
        "--from",
        "s0",
        "--to",
        "s1",
        "--start",
        "0",
        "--end",
        "1",
        "--manifest",
        manifest_file.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result = json_of(&out);
    assert_eq!(result["status"], "PendingActivation");
    assert_eq!(result["spec"]["keyspace"], "tenants");
    assert_eq!(result["pendingMapVersion"], 2);
    // Pending, not active: the catalog holds version 2 as pending, and the fence stays.
    let sharded = ShardedClient::open(&master).await.unwrap();
    assert_eq!(sharded.map().version(), 1);
    let fences = shardlite::reshard::fences_on(&sharded.for_shard_id("s0").unwrap())
        .await
        .unwrap();
    assert_eq!(fences[0].1, "fenced");
    let id = result["migrationId"].as_str().unwrap();
    // Its map is written: abandoning is refused (finish it instead).
    let abandon = shardlite(&["migrate", "abandon", "-c", &connection, id]);
    assert!(!abandon.status.success());
    assert!(
        stderr(&abandon).contains("already wrote map version 2"),
        "{}",
        stderr(&abandon)
    );
    // Resuming with activation finishes it.
    let resumed = shardlite(&["migrate", "resume", "-c", &connection, id, "--activate", "--json"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(json_of(&resumed)["status"], "Activated");
    let fences = shardlite::reshard::fences_on(&sharded.for_shard_id("s0").unwrap())
        .await
        .unwrap();
    assert_eq!(fences[0].1, "moved");
}
