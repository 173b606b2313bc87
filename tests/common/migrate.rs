//! Fixtures for migration tests: the two-shard `tenants` master with an `items` table and a
//! `profiles` collection, rows for a route key, and what each shard holds of it.

use std::path::{Path, PathBuf};

use shardlite::RouteContext;
use shardlite::client::{DataClient, Params, ShardedClient, Value};
use shardlite::data::{CollectionManifest, KeyMigrationRequest, MigrationManifest, TableManifest};

/// The `tenants` map of [`super::tenants_options`] seeded into `dir/master.db`, with
/// `items (id TEXT PRIMARY KEY, tenant, n, amount, data)` indexed on `tenant` on every shard.
pub async fn migration_master(dir: &Path) -> PathBuf {
    let master = super::seed_master(dir, super::tenants_options(dir)).await;
    let sharded = ShardedClient::open(&master).await.expect("open master");
    for result in sharded
        .execute_sql_on_all_shards(
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

pub fn route(key: &str) -> RouteContext {
    RouteContext::new("tenants", key).expect("route")
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
pub fn manifest(page_size: u32) -> MigrationManifest {
    MigrationManifest {
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
pub fn key_request(key: &str, destination: &str, page_size: u32) -> KeyMigrationRequest {
    KeyMigrationRequest {
        keyspace: "tenants".into(),
        route_key: key.into(),
        destination_shard_id: destination.into(),
        manifest: manifest(page_size),
        migration_id: None,
        expected_current_map_version: None,
        dry_run: false,
        activate: true,
        delete_source: true,
        operator: Some("test".into()),
        comment: None,
    }
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
