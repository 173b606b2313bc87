//! Fixtures for migration tests: the two-shard `tenants` master with an `items` table and a
//! `profiles` collection, rows for a route key, and what each shard holds of it.

use std::path::{Path, PathBuf};

use super::route;
use shardlite::client::{DocumentData, Params, ShardedClient, SqlData, Value};
use shardlite::data::{Audit, CollectionManifest, ReshardManifest, ReshardRequest, TableManifest};

/// The `tenants` map of [`super::tenants_options`] seeded into `dir/master.db`, with
/// `items (id TEXT PRIMARY KEY, tenant, n, amount, data)` indexed on `tenant` on every shard.
pub async fn migration_master(dir: &Path) -> PathBuf {
    let master = super::seed_master(dir, super::tenants_options(dir)).await;
    let sharded = ShardedClient::open(&master).await.expect("open master");
    for result in sharded
        .query()
        .execute_all(
            "CREATE TABLE items (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, n INTEGER, amount REAL, data BLOB);
             CREATE INDEX items_tenant ON items (tenant);",
        )
        .await
        .expect("schema")
    {
        assert!(
            result.error.is_none(),
            "schema on {}: {:?}",
            result.shard_id,
            result.error
        );
    }
    master
}

/// Inserts `rows` rows for `key` through its route (ids `{key}-{n:08}`, n from `first`), and
/// one `profiles` document.
pub async fn fill(sharded: &ShardedClient, key: &str, first: i64, rows: i64) {
    let routed = sharded.for_route(route(key));
    routed
        .execute_sql(
            "WITH RECURSIVE seq(n) AS (SELECT ?2 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2 + ?3 - 1)
             INSERT INTO items (id, tenant, n, amount, data)
             SELECT ?1 || '-' || printf('%08d', n), ?1, n, n * 1.5, zeroblob(n % 7) FROM seq",
            Params::Positional(vec![Value::from(key), Value::Integer(first), Value::Integer(rows)]),
        )
        .await
        .expect("fill");
    routed
        .put_document(
            "profiles",
            &format!("{key}-profile"),
            serde_json::json!({ "tenant": key, "plan": "gold" }),
        )
        .await
        .expect("profile");
}

/// The manifest for `items` and `profiles`, `page_size` rows a page.
pub fn manifest(page_size: u32) -> ReshardManifest {
    ReshardManifest {
        page_size: Some(page_size),
        tables: vec![TableManifest {
            table_name: "items".into(),
            route_key_column: "tenant".into(),
            primary_key_column: "id".into(),
        }],
        collections: vec![CollectionManifest {
            collection_name: "profiles".into(),
            route_key_property: "tenant".into(),
        }],
    }
}

/// A request to move `key` to `destination`, activating and deleting the source.
pub fn key_request(key: &str, destination: &str, page_size: u32) -> ReshardRequest {
    ReshardRequest::route_key("tenants", key, destination, manifest(page_size))
        .activate()
        .delete_source()
        .audit(Audit::by("test"))
}

/// `(rows, digest)` of `key`'s items on one shard, read directly: the digest lists every row.
pub async fn items_on(sharded: &ShardedClient, shard: &str, key: &str) -> (i64, String) {
    let result = sharded
        .for_shard_id(shard)
        .expect("shard")
        .execute_read_only_sql(
            "SELECT count(*), coalesce(group_concat(id || ':' || n || ':' || amount || ':' || hex(data), ','), '')
             FROM (SELECT * FROM items WHERE tenant = ?1 ORDER BY id)",
            Params::from(vec![key]),
        )
        .await
        .expect("count");
    let row = &result.rows[0];
    (
        row[0].as_i64().expect("count"),
        row[1].as_str().unwrap_or_default().to_owned(),
    )
}

/// Whether `shard` holds `key`'s profile document.
pub async fn has_profile(sharded: &ShardedClient, shard: &str, key: &str) -> bool {
    sharded
        .for_shard_id(shard)
        .expect("shard")
        .get_document("profiles", &format!("{key}-profile"))
        .await
        .expect("get")
        .is_some()
}

/// The shard `key` resolves to now.
pub fn owner(sharded: &ShardedClient, key: &str) -> String {
    sharded.resolve_route(&route(key)).expect("resolve").shard_id
}

/// The other shard of the two.
pub fn other(shard: &str) -> &'static str {
    if shard == "s0" { "s1" } else { "s0" }
}

/// Counts, in a side table `item_writes` of `shard`, every row its `items` table gets inserted
/// or updated from now on (a page copied twice is updated by the copy's upsert).
pub async fn audit_item_writes(sharded: &ShardedClient, shard: &str) {
    let client = sharded.for_shard_id(shard).expect("shard");
    for statement in [
        "CREATE TABLE item_writes (kind TEXT NOT NULL, id TEXT NOT NULL)",
        "CREATE TRIGGER items_inserted AFTER INSERT ON items BEGIN INSERT INTO item_writes VALUES ('insert', new.id); END",
        "CREATE TRIGGER items_updated AFTER UPDATE ON items BEGIN INSERT INTO item_writes VALUES ('update', new.id); END",
    ] {
        client.execute_sql(statement, Params::none()).await.expect("audit");
    }
}

/// `(inserts, updates)` of `items` rows on `shard` since [`audit_item_writes`].
pub async fn item_writes(sharded: &ShardedClient, shard: &str) -> (i64, i64) {
    let result = sharded
        .for_shard_id(shard)
        .expect("shard")
        .execute_read_only_sql(
            "SELECT count(*) FILTER (WHERE kind = 'insert'), count(*) FILTER (WHERE kind = 'update') FROM item_writes",
            Params::none(),
        )
        .await
        .expect("item writes");
    let row = &result.rows[0];
    (row[0].as_i64().expect("inserts"), row[1].as_i64().expect("updates"))
}

/// Makes `shard` refuse to insert the `items` row whose `n` is `n`, so a copy stops at the page
/// holding it, until [`allow_item`].
pub async fn refuse_item(sharded: &ShardedClient, shard: &str, n: i64) {
    sharded
        .for_shard_id(shard)
        .expect("shard")
        .execute_sql(
            &format!(
                "CREATE TRIGGER refuse_item BEFORE INSERT ON items WHEN new.n = {n} \
                 BEGIN SELECT RAISE(ABORT, 'refused for the test'); END"
            ),
            Params::none(),
        )
        .await
        .expect("refuse");
}

/// Lifts [`refuse_item`].
pub async fn allow_item(sharded: &ShardedClient, shard: &str) {
    sharded
        .for_shard_id(shard)
        .expect("shard")
        .execute_sql("DROP TRIGGER refuse_item", Params::none())
        .await
        .expect("allow");
}

/// Rewinds the catalog's checkpoint of migration `id` to before its first page of `items`, as
/// if the run had stopped before checkpointing any of the pages the destination committed.
pub async fn forget_copied_pages(master: &Path, id: &str) {
    let catalog = shardlite::catalog::Catalog::open(master).await.expect("catalog");
    let mut state = catalog.migration(id).await.expect("read").expect("a checkpoint");
    let receipt = &mut state.receipts[0];
    assert_eq!(receipt.name, "items");
    receipt.source_rows = 0;
    receipt.pages_copied = 0;
    receipt.last_key = None;
    receipt.copied = false;
    receipt.source_checksum = "0".repeat(64);
    catalog.save_migration_checkpoint(&state).await.expect("rewind");
}

/// Two keys (and their shard) that resolve to the same shard without a pin.
pub fn two_keys_on_one_shard(sharded: &ShardedClient) -> (String, String, String) {
    let keys: Vec<String> = (0..64).map(|i| format!("key-{i}")).collect();
    for (i, a) in keys.iter().enumerate() {
        for b in &keys[i + 1..] {
            if owner(sharded, a) == owner(sharded, b) {
                return (a.clone(), b.clone(), owner(sharded, a));
            }
        }
    }
    unreachable!("64 keys over two shards always share one")
}

/// Adds directory `orders_by_id` (read-only, as the reference's default) to the live map, one
/// version up, with an `Active` entry `SO-<key>` and a `Deleted` entry `gone-<key>` for each
/// of `keys`, each naming the shard its key resolves to.
pub async fn add_directory(sharded: &ShardedClient, keys: &[&str]) {
    use shardlite::data::{ActivationRequest, CatalogUpdateRequest};
    use shardlite::map::{DirectoryDefinition, DirectoryEntry, EntryState};
    let live = sharded.map();
    let mut proposed = live.options().clone();
    let next = i64::try_from(live.version()).expect("version") + 1;
    proposed.map_version = next;
    proposed.directories = vec![DirectoryDefinition::writable("orders_by_id", "tenants")];
    proposed.directories[0].read_only = true;
    for key in keys {
        for (lookup, state) in [
            (format!("SO-{key}"), EntryState::Active),
            (format!("gone-{key}"), EntryState::Deleted),
        ] {
            proposed.directory_entries.push(DirectoryEntry {
                directory_name: "orders_by_id".into(),
                lookup_key: lookup.into(),
                target_keyspace: "tenants".into(),
                route_key: (*key).into(),
                shard_id: owner(sharded, key).into(),
                map_version: next,
                state,
            });
        }
    }
    let request = CatalogUpdateRequest::new(proposed).expecting_version(live.version());
    let applied = sharded.catalog().apply(&request).await.expect("apply");
    assert!(applied.applied, "{applied:?}");
    sharded
        .catalog()
        .activate(&ActivationRequest::new(live.version() + 1))
        .await
        .expect("activate");
}

/// `(shardId, mapVersion, state)` of directory entry `lookup` in `orders_by_id` on the live map.
pub fn directory_entry(sharded: &ShardedClient, lookup: &str) -> (String, i64, String) {
    let map = sharded.map();
    let entry = map
        .directory_entry("orders_by_id", lookup)
        .unwrap_or_else(|| panic!("no entry {lookup}"));
    (
        entry.shard_id.to_string(),
        entry.map_version,
        entry.state.as_str().to_owned(),
    )
}

/// The first key `{prefix}-{i}` of keyspace `tenants` whose bucket of 4 is `bucket`.
pub fn key_in_bucket(bucket: u32, prefix: &str) -> String {
    use shardlite::routing::{bucket_for_token, route_token};
    (0..)
        .map(|i| format!("{prefix}-{i}"))
        .find(|key| bucket_for_token(route_token("tenants", key).expect("token").0, 4) == bucket)
        .expect("a key in every bucket")
}
