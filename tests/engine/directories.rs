//! Shard directories in process: the reference suite's directory tests (5, 6, 7 and 9), every
//! map validation rule, every mutation status and refusal, paged entries, a lookup-bound client,
//! and a change writing only the changed entry's record.

use std::path::Path;

use crate::support::{seed_master, temp_dir, tenants_options};
use shardlite::catalog::Catalog;
use shardlite::client::{ShardedClient, SqlData};
use shardlite::data::{
    ActivationRequest, Audit, CatalogUpdateRequest, DirectoryEntryQuery, DirectoryLookup, DirectoryMutation,
    DirectoryOperation as Op, MutationStatus as Status,
};
use shardlite::map::{DirectoryDefinition, DirectoryEntry, EntryState, ShardMap, ShardingOptions};
use shardlite::{ErrorKind, RouteContext};

fn entry(key: &str, route_key: &str, shard: &str, version: i64, state: EntryState) -> DirectoryEntry {
    DirectoryEntry {
        directory_name: "orders_by_id".into(),
        lookup_key: key.into(),
        target_keyspace: "tenants".into(),
        route_key: route_key.into(),
        shard_id: shard.into(),
        map_version: version,
        state,
    }
}

/// The reference fixture with directory `orders_by_id` (writable or not) and `entries`.
fn with_directory(dir: &Path, writable: bool, entries: Vec<DirectoryEntry>) -> ShardingOptions {
    let mut options = tenants_options(dir);
    let mut directory = DirectoryDefinition::writable("orders_by_id", "tenants");
    directory.read_only = !writable;
    options.directories = vec![directory];
    options.directory_entries = entries;
    options
}

async fn opened(dir: &Path, options: ShardingOptions) -> (Catalog, ShardedClient) {
    let master = seed_master(dir, options).await;
    (
        Catalog::open(&master).await.unwrap(),
        ShardedClient::open(&master).await.unwrap(),
    )
}

fn lookup(key: &str) -> DirectoryLookup {
    DirectoryLookup::new("orders_by_id", key)
}

fn change(key: &str) -> DirectoryMutation {
    DirectoryMutation::new("orders_by_id", key)
}

#[tokio::test]
async fn active_entries_resolve_and_stale_ones_are_refused() {
    let dir = temp_dir();
    let options = with_directory(
        dir.path(),
        false,
        vec![
            entry("SO-1", "tenant-a", "s0", 1, EntryState::Active),
            entry("SO-stale", "tenant-b", "s1", 1, EntryState::Stale),
        ],
    );
    let sharded = ShardedClient::from_map(ShardMap::new(options).unwrap()).await.unwrap();
    let directories = sharded.directories();
    let found = directories.resolve(&lookup("SO-1")).await.unwrap();
    assert_eq!(found.entry.route_key, "tenant-a");
    assert_eq!(found.route_resolution.shard_id, "s0");

    let stale = directories.resolve(&lookup("SO-stale")).await.unwrap_err();
    assert_eq!(stale.kind(), ErrorKind::Conflict);
    assert!(stale.to_string().contains("not Active"), "{stale}");
    let inactive = directories
        .resolve(&lookup("SO-stale").including_inactive())
        .await
        .unwrap();
    assert_eq!(inactive.entry.state, EntryState::Stale);

    let missing = directories.resolve(&lookup("SO-404")).await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    assert!(
        missing.to_string().contains("'orders_by_id:SO-404' was not found"),
        "{missing}"
    );
    let unknown = directories
        .resolve(&DirectoryLookup::new("customers", "c-1"))
        .await
        .unwrap_err();
    assert_eq!(unknown.kind(), ErrorKind::NotFound);
    assert!(
        unknown.to_string().contains("'customers' is not configured"),
        "{unknown}"
    );
    let blank = directories
        .resolve(&DirectoryLookup::new(" ", "SO-1"))
        .await
        .unwrap_err();
    assert_eq!(blank.kind(), ErrorKind::InvalidInput);
    assert!(blank.to_string().contains("directoryName"), "{blank}");
    // Lookup keys match exactly (duplicates are refused ignoring case).
    assert!(directories.resolve(&lookup("so-1")).await.is_err());

    let snapshot = sharded.map_snapshot();
    assert_eq!(snapshot.directories.len(), 1);
    assert_eq!(snapshot.directories[0].entry_count, 2);
    assert!(snapshot.directories[0].read_only);
    assert!(!serde_json::to_string(&snapshot).unwrap().contains("SO-1"));
}

#[tokio::test]
async fn reserve_activate_and_repair_build_on_the_pending_map() {
    let dir = temp_dir();
    let (catalog, sharded) = opened(dir.path(), with_directory(dir.path(), true, Vec::new())).await;
    let directories = sharded.directories();
    let reserve = change("SO-2").route("tenants", "tenant-a").expecting_version(1);
    let reserved = directories.mutate(Op::Reserve, &reserve).await.unwrap();
    assert!(reserved.succeeded, "{reserved:?}");
    assert_eq!(reserved.status, Status::Reserved);
    assert_eq!(reserved.pending_map_version, Some(2));
    assert!(reserved.requires_activation);
    let written = reserved.entry.clone().unwrap();
    assert_eq!(
        (written.state, written.map_version, written.shard_id.as_str()),
        (EntryState::Reserved, 2, "s0")
    );

    let again = directories.mutate(Op::Reserve, &reserve).await.unwrap();
    assert_eq!(
        (again.succeeded, again.status, again.pending_map_version),
        (true, Status::AlreadyReserved, None)
    );

    let activated = directories
        .mutate(Op::Activate, &change("SO-2").expecting_version(2))
        .await
        .unwrap();
    assert_eq!(
        (activated.status, activated.pending_map_version),
        (Status::Activated, Some(3))
    );
    assert_eq!(activated.entry.as_ref().unwrap().state, EntryState::Active);
    let state = sharded.catalog().state().await.unwrap();
    assert_eq!(state.active_map.map_version, 1);
    let pending = state.pending_map.unwrap();
    assert_eq!((pending.map_version, pending.directories[0].entry_count), (3, 1));
    // Not live yet: the live map has no entry.
    assert_eq!(
        directories.resolve(&lookup("SO-2")).await.unwrap_err().kind(),
        ErrorKind::NotFound
    );

    sharded.catalog().activate(&ActivationRequest::new(3)).await.unwrap();
    let found = directories.resolve(&lookup("SO-2")).await.unwrap();
    assert_eq!(
        (found.entry.route_key.as_str(), found.route_resolution.shard_id.as_str()),
        ("tenant-a", "s0")
    );
    let noop = directories
        .mutate(Op::Activate, &change("SO-2").expecting_version(3))
        .await
        .unwrap();
    assert_eq!((noop.succeeded, noop.status), (true, Status::AlreadyActive));

    // Upsert moves the entry to tenant-b's route, and activates in the same call.
    let repaired = directories
        .mutate(
            Op::Upsert,
            &change("SO-2")
                .route("tenants", "tenant-b")
                .expecting_version(3)
                .activating(),
        )
        .await
        .unwrap();
    assert_eq!(
        (repaired.status, repaired.pending_map_version),
        (Status::Repaired, Some(4))
    );
    assert!(!repaired.requires_activation);
    assert_eq!(repaired.entry.as_ref().unwrap().shard_id, "s1");
    let found = directories.resolve(&lookup("SO-2")).await.unwrap();
    assert_eq!(
        (found.entry.route_key.as_str(), found.route_resolution.shard_id.as_str()),
        ("tenant-b", "s1")
    );

    let stale = directories
        .mutate(Op::MarkStale, &change("SO-2").expecting_version(4).activating())
        .await
        .unwrap();
    assert_eq!(
        (stale.status, stale.entry.as_ref().unwrap().state),
        (Status::MarkedStale, EntryState::Stale)
    );
    let again = directories.mutate(Op::MarkStale, &change("SO-2")).await.unwrap();
    assert_eq!(again.status, Status::AlreadyStale);

    // Another client on the same master sees the activated map.
    let other = ShardedClient::open(catalog.path()).await.unwrap();
    let refused = other.directories().resolve(&lookup("SO-2")).await.unwrap_err();
    assert!(refused.to_string().contains("is Stale, not Active"), "{refused}");

    // Each change is in the history with its default comment.
    let history = catalog.history().await.unwrap();
    let comments: Vec<String> = history.iter().filter_map(|h| h.audit.comment.clone()).collect();
    assert!(
        comments
            .iter()
            .any(|c| c == "reserve shard directory entry orders_by_id:SO-2"),
        "{comments:?}"
    );
    assert!(
        comments
            .iter()
            .any(|c| c == "upsert shard directory entry orders_by_id:SO-2"),
        "{comments:?}"
    );
}

#[tokio::test]
async fn disable_and_delete_update_the_pending_map() {
    let dir = temp_dir();
    let options = with_directory(
        dir.path(),
        true,
        vec![entry("SO-3", "tenant-a", "s0", 1, EntryState::Active)],
    );
    let (_catalog, sharded) = opened(dir.path(), options).await;
    let directories = sharded.directories();
    let audit = Audit::by("ada").because("order SO-3 was cancelled");
    let disabled = directories
        .mutate(
            Op::Disable,
            &change("SO-3").expecting_version(1).activating().audit(audit),
        )
        .await
        .unwrap();
    assert_eq!(
        (disabled.status, disabled.pending_map_version),
        (Status::Disabled, Some(2))
    );
    assert_eq!(disabled.entry.as_ref().unwrap().state, EntryState::Disabled);
    let history = sharded.catalog().state().await.unwrap().history;
    assert!(history.iter().any(|h| h.map_version == 2
        && h.audit.operator.as_deref() == Some("ada")
        && h.audit.comment.as_deref() == Some("order SO-3 was cancelled")));
    let again = directories.mutate(Op::Disable, &change("SO-3")).await.unwrap();
    assert_eq!(again.status, Status::AlreadyDisabled);

    let found = directories.resolve(&lookup("SO-3").including_inactive()).await.unwrap();
    assert_eq!(found.entry.state, EntryState::Disabled);
    let deleted = directories
        .mutate(Op::Delete, &change("SO-3").expecting_version(2).activating())
        .await
        .unwrap();
    assert_eq!(
        (deleted.status, deleted.pending_map_version),
        (Status::Deleted, Some(3))
    );
    assert_eq!(deleted.entry.as_ref().unwrap().state, EntryState::Deleted);
    let again = directories.mutate(Op::Delete, &change("SO-3")).await.unwrap();
    assert_eq!(again.status, Status::AlreadyDeleted);

    let removed = directories
        .mutate(
            Op::Delete,
            &change("SO-3").removing_entry().expecting_version(3).activating(),
        )
        .await
        .unwrap();
    assert_eq!(
        (removed.status, removed.pending_map_version),
        (Status::Removed, Some(4))
    );
    assert!(removed.entry.is_none());
    let gone = directories
        .resolve(&lookup("SO-3").including_inactive())
        .await
        .unwrap_err();
    assert!(gone.to_string().contains("was not found"), "{gone}");
    let absent = directories.mutate(Op::Delete, &change("SO-3")).await.unwrap();
    assert_eq!((absent.succeeded, absent.status), (true, Status::AlreadyDeleted));
}

#[tokio::test]
async fn a_catalog_update_carries_entries_and_snapshots_count_them() {
    let dir = temp_dir();
    let options = with_directory(
        dir.path(),
        false,
        vec![entry("SO-1", "tenant-a", "s0", 1, EntryState::Active)],
    );
    let (catalog, sharded) = opened(dir.path(), options.clone()).await;
    let mut proposed = options.clone();
    proposed.map_version = 2;
    proposed.directory_entries[0].map_version = 2;
    let request = CatalogUpdateRequest::new(proposed).expecting_version(1);
    let validation = sharded.catalog().validate(&request).await.unwrap();
    assert!(validation.valid, "{validation:?}");
    assert!(!validation.requires_data_migration);
    let preview = validation.preview.unwrap();
    assert_eq!((preview.map_version, preview.directories[0].entry_count), (2, 1));
    let applied = sharded.catalog().apply(&request).await.unwrap();
    assert_eq!(applied.pending_map_version, Some(2));
    let state = sharded.catalog().state().await.unwrap();
    assert_eq!(
        (state.active_map.map_version, state.pending_map.map(|m| m.map_version)),
        (1, Some(2))
    );

    sharded.catalog().activate(&ActivationRequest::new(2)).await.unwrap();
    let reloaded = ShardedClient::open(catalog.path()).await.unwrap();
    let live = reloaded.map_snapshot();
    assert_eq!((live.map_version, live.directories[0].entry_count), (2, 1));
    let found = reloaded.directories().resolve(&lookup("SO-1")).await.unwrap();
    assert_eq!(found.entry.map_version, 2);
    // The stored version 1 still has its own entry.
    let first = catalog.map_at_version(1).await.unwrap().unwrap();
    assert_eq!(first.directory_entries[0].map_version, 1);

    // A read-only directory refuses the directory mutations, and nothing is written.
    let refused = sharded
        .directories()
        .mutate(Op::Disable, &change("SO-1"))
        .await
        .unwrap();
    assert_eq!((refused.succeeded, refused.status), (false, Status::Rejected));
    assert_eq!(refused.issues[0].code, "directory-read-only");
    assert!(refused.message.contains("'orders_by_id' is read-only"), "{refused:?}");
    assert_eq!(catalog.newest_version().await.unwrap(), Some(2));
}

#[tokio::test]
async fn every_map_rule_names_its_problem() {
    let dir = temp_dir();
    let good = || entry("SO-1", "tenant-a", "s0", 1, EntryState::Active);
    let cases: Vec<(DirectoryEntry, &str)> = vec![
        (
            DirectoryEntry {
                directory_name: "customers".into(),
                ..good()
            },
            "names unknown directory 'customers'",
        ),
        (
            DirectoryEntry {
                target_keyspace: "users".into(),
                ..good()
            },
            "targets keyspace 'users', which does not match",
        ),
        (
            DirectoryEntry {
                map_version: 0,
                ..good()
            },
            "must be greater than 0",
        ),
        (
            DirectoryEntry {
                map_version: 2,
                ..good()
            },
            "names future map version 2",
        ),
        (
            DirectoryEntry {
                lookup_key: "  ".into(),
                ..good()
            },
            "lookupKey is required",
        ),
    ];
    for (bad, problem) in cases {
        let err = ShardMap::new(with_directory(dir.path(), true, vec![bad])).unwrap_err();
        assert!(err.to_string().contains(problem), "{err} should say {problem}");
    }
    let twice = with_directory(
        dir.path(),
        true,
        vec![
            good(),
            DirectoryEntry {
                lookup_key: "so-1".into(),
                directory_name: "ORDERS_BY_ID".into(),
                ..good()
            },
        ],
    );
    let err = ShardMap::new(twice).unwrap_err();
    assert!(err.to_string().contains("listed more than once"), "{err}");

    let state = r#"{"keyspace":"tenants","shards":[{"shardId":"s0","dataSource":"s0.db"}],
        "directories":[{"directoryName":"d","targetKeyspace":"tenants"}],
        "directoryEntries":[{"directoryName":"d","lookupKey":"k","targetKeyspace":"tenants","routeKey":"r",
        "shardId":"s0","mapVersion":1,"state":"Gone"}]}"#;
    let err = ShardingOptions::from_json(state).unwrap_err();
    assert!(err.to_string().contains("Gone"), "{err}");
    let unknown = r#"{"keyspace":"tenants","shards":[{"shardId":"s0","dataSource":"s0.db"}],
        "directories":[{"directoryName":"d","targetKeyspace":"tenants","readonly":false}]}"#;
    assert!(
        ShardingOptions::from_json(unknown)
            .unwrap_err()
            .to_string()
            .contains("readonly")
    );

    // An entry whose route resolves elsewhere (tenant-a is pinned to s0): every state, refused by
    // seed and by validation, nothing written.
    let elsewhere = with_directory(
        dir.path(),
        true,
        vec![entry("SO-1", "tenant-a", "s1", 1, EntryState::Deleted)],
    );
    let master = dir.path().join("master.db");
    let catalog = Catalog::open(&master).await.unwrap();
    let err = catalog.seed(elsewhere.clone(), false).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("points to shard 's1', but route key 'tenant-a' resolves to shard 's0'"),
        "{err}"
    );
    assert!(catalog.active_options().await.unwrap().is_none());
    catalog.seed(tenants_options(dir.path()), false).await.unwrap();
    let mut proposed = elsewhere;
    proposed.map_version = 2;
    let validation = catalog
        .validate_update(&CatalogUpdateRequest::new(proposed))
        .await
        .unwrap();
    assert!(!validation.valid);
    assert!(
        validation.issues[0].message.contains("points to shard 's1'"),
        "{validation:?}"
    );
}

#[tokio::test]
async fn refusals_name_the_problem_and_write_nothing() {
    let dir = temp_dir();
    let options = with_directory(
        dir.path(),
        true,
        vec![entry("SO-1", "tenant-a", "s0", 1, EntryState::Active)],
    );
    let (catalog, sharded) = opened(dir.path(), options).await;
    let directories = sharded.directories();
    let cases: Vec<(Op, DirectoryMutation, &str, &str)> = vec![
        (
            Op::Reserve,
            DirectoryMutation::new(" ", "SO-2").route("tenants", "t"),
            "invalid-input",
            "directoryName",
        ),
        (
            Op::Reserve,
            change("").route("tenants", "t"),
            "invalid-input",
            "lookupKey",
        ),
        (
            Op::Reserve,
            change("SO-2"),
            "invalid-input",
            "targetKeyspace is required",
        ),
        (
            Op::Activate,
            DirectoryMutation::new("customers", "c-1"),
            "unknown-directory",
            "'customers' is not configured",
        ),
        (
            Op::Delete,
            DirectoryMutation::new("customers", "c-1"),
            "unknown-directory",
            "not configured",
        ),
        (
            Op::Reserve,
            change("SO-2").route("users", "u-1"),
            "keyspace-mismatch",
            "targets keyspace 'tenants', not 'users'",
        ),
        (
            Op::Reserve,
            change("SO-1").route("tenants", "tenant-b"),
            "directory-entry-exists",
            "cannot be reserved again",
        ),
        (
            Op::Activate,
            change("SO-404"),
            "entry-not-found",
            "'orders_by_id:SO-404' was not found",
        ),
        (
            Op::Disable,
            change("SO-1").expecting_version(7),
            "map-version-mismatch",
            "expected map version 7",
        ),
        (
            Op::Upsert,
            DirectoryMutation {
                state: Some("Gone".to_owned()),
                ..change("SO-1").route("tenants", "tenant-a")
            },
            "invalid-state",
            "state 'Gone' is invalid",
        ),
    ];
    for (op, request, code, message) in cases {
        let result = directories.mutate(op, &request).await.unwrap();
        assert_eq!(
            (result.succeeded, result.status),
            (false, Status::Rejected),
            "{op:?} {request:?}"
        );
        assert_eq!(result.issues[0].code, code, "{result:?}");
        assert!(
            result.message.contains(message),
            "{} should say {message}",
            result.message
        );
    }
    // Activate needs a Reserved entry.
    let refused = directories.mutate(Op::Activate, &change("SO-1")).await;
    assert_eq!(refused.unwrap().status, Status::AlreadyActive);
    directories
        .mutate(Op::Disable, &change("SO-1").activating())
        .await
        .unwrap();
    let refused = directories.mutate(Op::Activate, &change("SO-1")).await.unwrap();
    assert_eq!(refused.issues[0].code, "directory-entry-not-reserved");
    assert_eq!(catalog.newest_version().await.unwrap(), Some(2));
    assert_eq!(catalog.history().await.unwrap().len(), 3);
}

#[tokio::test]
async fn upsert_adds_then_reports_up_to_date_and_entries_list_in_pages() {
    let dir = temp_dir();
    let (catalog, sharded) = opened(dir.path(), with_directory(dir.path(), true, Vec::new())).await;
    let directories = sharded.directories();
    for n in 0..5 {
        let added = directories
            .mutate(
                Op::Upsert,
                &change(&format!("SO-{n}"))
                    .route("tenants", format!("tenant-{n}"))
                    .activating(),
            )
            .await
            .unwrap();
        assert_eq!(added.status, Status::Upserted, "{added:?}");
    }
    let same = directories
        .mutate(Op::Upsert, &change("SO-1").route("tenants", "tenant-1"))
        .await
        .unwrap();
    assert_eq!((same.status, same.pending_map_version), (Status::AlreadyUpToDate, None));

    let first = directories
        .entries(
            "ORDERS_BY_ID",
            &DirectoryEntryQuery {
                after: None,
                limit: Some(2),
            },
        )
        .await
        .unwrap();
    assert_eq!(first.entry_count, 5);
    let keys: Vec<&str> = first.entries.iter().map(|e| e.lookup_key.as_str()).collect();
    assert_eq!(keys, ["SO-0", "SO-1"]);
    let rest = directories
        .entries(
            "orders_by_id",
            &DirectoryEntryQuery {
                after: first.next_after.clone(),
                limit: Some(10),
            },
        )
        .await
        .unwrap();
    let keys: Vec<&str> = rest.entries.iter().map(|e| e.lookup_key.as_str()).collect();
    assert_eq!((keys, rest.next_after), (vec!["SO-2", "SO-3", "SO-4"], None));

    // Each change wrote its header and its one entry record.
    let conn = rusqlite::Connection::open(catalog.path()).unwrap();
    let written: i64 = conn
        .query_row(
            "SELECT count(*) FROM shardlite_map_records WHERE map_version = 6",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(written, 2);
}

#[tokio::test]
async fn a_lookup_bound_client_runs_on_the_entry_shard() {
    let dir = temp_dir();
    let options = with_directory(
        dir.path(),
        true,
        vec![entry("SO-1", "tenant-a", "s0", 1, EntryState::Active)],
    );
    let (_catalog, sharded) = opened(dir.path(), options).await;
    sharded
        .query()
        .execute_all("CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant_id TEXT)")
        .await
        .unwrap();
    let order = sharded.for_lookup("orders_by_id", "SO-1").await.unwrap();
    order
        .execute_sql("INSERT INTO orders VALUES (1, 'tenant-a')", Default::default())
        .await
        .unwrap();
    let s0 = sharded.for_shard_id("s0").unwrap();
    let rows = s0
        .execute_sql("SELECT count(*) FROM orders", Default::default())
        .await
        .unwrap();
    assert_eq!(rows.rows[0][0], shardlite::data::Value::Integer(1));
    let same = sharded.for_route(RouteContext::new("tenants", "tenant-a").unwrap());
    let rows = same
        .execute_sql("SELECT tenant_id FROM orders", Default::default())
        .await
        .unwrap();
    assert_eq!(rows.rows.len(), 1);
    let missing = sharded.for_lookup("orders_by_id", "SO-9").await.unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
}

#[tokio::test]
async fn export_and_import_carry_directories() {
    let dir = temp_dir();
    let options = with_directory(
        dir.path(),
        true,
        vec![entry("SO-1", "tenant-a", "s0", 1, EntryState::Active)],
    );
    let (catalog, _sharded) = opened(dir.path(), options).await;
    let export = catalog.export().await.unwrap();
    let other = temp_dir();
    let copy = Catalog::open(other.path().join("master.db")).await.unwrap();
    copy.import(&export).await.unwrap();
    let imported = copy.active_options().await.unwrap().unwrap();
    assert_eq!(imported.directories[0].directory_name, "orders_by_id");
    assert_eq!(imported.directory_entries[0].lookup_key, "SO-1");
}
