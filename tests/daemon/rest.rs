//! The daemon's REST surface, end to end: a real daemon on `127.0.0.1:0` over real SQLite files,
//! driven by a real HTTP client.

use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde_json::{Value, json};
use shardlite::catalog::Catalog;
use shardlite::map::Secret;
use shardlite::server::{KEYSPACE_HEADER, SHARD_KEY_HEADER, ServerConfig};

use crate::support::Fixture;
use crate::support::daemon::{Daemon, http_client, routed, tx_url};

const ITEMS_DDL: &str = "CREATE TABLE items (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, name TEXT)";

/// Sends a request; a transport failure fails the test.
trait Fetch {
    async fn fetch(self) -> Response;
}

impl Fetch for RequestBuilder {
    async fn fetch(self) -> Response {
        self.send().await.expect("the daemon answers")
    }
}

async fn json_ok(response: Response, expected: StatusCode) -> Value {
    let status = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(status, expected, "body: {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// Asserts a problem body with `status` and `code`, that it names no file path under `dir`, and
/// returns it.
async fn problem(response: Response, status: StatusCode, code: &str, dir: &str) -> Value {
    let actual = response.status();
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    let text = response.text().await.unwrap();
    assert_eq!(actual, status, "body: {text}");
    assert_eq!(
        content_type.as_ref().and_then(|v| v.to_str().ok()),
        Some("application/problem+json")
    );
    assert!(!text.contains(dir), "an error body leaks a file path: {text}");
    assert!(!text.contains(".db"), "an error body names a database file: {text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["status"], status.as_u16(), "{text}");
    assert_eq!(body["errorCode"], code, "{text}");
    assert!(body["title"].as_str().is_some_and(|t| !t.is_empty()), "{text}");
    assert!(body["detail"].as_str().is_some_and(|t| !t.is_empty()), "{text}");
    body
}

async fn create_items(http: &reqwest::Client, daemon: &Daemon) {
    let response = http
        .post(daemon.url("/api/sharding/sql/execute-all"))
        .json(&json!({ "sql": ITEMS_DDL }))
        .fetch()
        .await;
    let outcomes = json_ok(response, StatusCode::OK).await;
    for outcome in outcomes.as_array().unwrap() {
        assert!(outcome.get("error").is_none(), "{outcome}");
    }
}

async fn insert_item(http: &reqwest::Client, daemon: &Daemon, key: &str, id: i64) -> Response {
    routed(http.post(daemon.url("/api/tables/items/rows")), key)
        .json(&json!({ "values": { "id": id, "tenant": key, "name": format!("item {id}") } }))
        .fetch()
        .await
}

/// The sum of `SELECT count(*) FROM items` over every shard.
async fn total_items(http: &reqwest::Client, daemon: &Daemon) -> i64 {
    let response = http
        .post(daemon.url("/api/sharding/sql/read-all"))
        .json(&json!({ "sql": "SELECT count(*) FROM items" }))
        .fetch()
        .await;
    json_ok(response, StatusCode::OK)
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|outcome| outcome["result"]["rows"][0][0].as_i64().unwrap())
        .sum()
}

/// A POST with a chunked body (no Content-Length), written by hand: returns status and body.
async fn chunked_post(daemon: &Daemon, path: &str, chunks: &[&[u8]]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(daemon.addr).await.unwrap();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\
         {KEYSPACE_HEADER}: tenants\r\n{SHARD_KEY_HEADER}: tenant-a\r\nConnection: close\r\n\r\n",
        daemon.addr
    )
    .into_bytes();
    for chunk in chunks {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    stream.write_all(&request).await.unwrap();
    let mut response = Vec::new();
    // The daemon may close without reading the whole body; what it answered before is what counts.
    let _ = stream.read_to_end(&mut response).await;
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_data_endpoint_works_on_the_routed_shard() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    create_items(&http, &daemon).await;
    let key = "tenant-a"; // pinned to s0

    // SQL with positional and named parameters.
    let response = routed(http.post(daemon.url("/api/sql/execute")), key)
        .json(&json!({ "sql": "INSERT INTO items (id, tenant, name) VALUES (?1, ?2, ?3)", "parameters": [1, key, "one"] }))
        .fetch().await;
    assert_eq!(json_ok(response, StatusCode::OK).await["rowsAffected"], 1);
    let response = routed(http.post(daemon.url("/api/sql/execute")), key)
        .json(&json!({ "sql": "SELECT id, name FROM items WHERE tenant = :tenant", "parameters": { "tenant": key } }))
        .fetch()
        .await;
    let result = json_ok(response, StatusCode::OK).await;
    assert_eq!(result["isQuery"], true);
    assert_eq!(result["columnNames"], json!(["id", "name"]));
    assert_eq!(result["rows"], json!([[1, "one"]]));
    // Read-only SQL reads, and refuses anything that could write.
    let response = routed(http.post(daemon.url("/api/sql/read-only")), key)
        .json(&json!({ "sql": "SELECT count(*) FROM items WHERE id = ?1", "parameters": [1] }))
        .fetch()
        .await;
    assert_eq!(json_ok(response, StatusCode::OK).await["rows"], json!([[1]]));
    let response = routed(http.post(daemon.url("/api/sql/read-only")), key)
        .json(&json!({ "sql": "DELETE FROM items" }))
        .fetch()
        .await;
    problem(response, StatusCode::BAD_REQUEST, "read_only", &fixture.dir_text()).await;

    // Info: routed names the shard, aggregate names the keyspace; neither names a file.
    let info = json_ok(
        routed(http.get(daemon.url("/api/info")), key).fetch().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(info["dataSource"], "sharded://tenants?version=1&shard=s0");
    assert_eq!(info["tableCount"], 1);
    let total = json_ok(http.get(daemon.url("/api/info")).fetch().await, StatusCode::OK).await;
    assert_eq!(total["dataSource"], "sharded://tenants?version=1");
    assert_eq!(total["tableCount"], 2);

    // Tables and rows.
    let tables = json_ok(
        routed(http.get(daemon.url("/api/tables")), key).fetch().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(tables, json!(["items"]));
    let schema = routed(http.get(daemon.url("/api/tables/items/schema")), key)
        .fetch()
        .await;
    let schema = json_ok(schema, StatusCode::OK).await;
    assert_eq!(schema["primaryKey"], "id");
    assert_eq!(schema["columns"][0]["declaredType"], "INTEGER");
    let inserted = json_ok(insert_item(&http, &daemon, key, 2).await, StatusCode::CREATED).await;
    assert_eq!(inserted["rowsAffected"], 1);
    let count = routed(http.get(daemon.url("/api/tables/items/count")), key)
        .fetch()
        .await;
    assert_eq!(
        json_ok(count, StatusCode::OK).await,
        json!({ "tableName": "items", "count": 2 })
    );
    let page = routed(http.get(daemon.url("/api/tables/items/rows?page=1&pageSize=1")), key)
        .fetch()
        .await;
    let page = json_ok(page, StatusCode::OK).await;
    assert_eq!(page["totalRows"], 2);
    assert_eq!(page["totalPages"], 2);
    assert_eq!(page["rows"].as_array().unwrap().len(), 1);
    let row = routed(http.get(daemon.url("/api/tables/items/rows/2")), key)
        .fetch()
        .await;
    assert_eq!(
        json_ok(row, StatusCode::OK).await,
        json!({ "id": 2, "tenant": key, "name": "item 2" })
    );
    let updated = routed(http.put(daemon.url("/api/tables/items/rows/2")), key)
        .json(&json!({ "values": { "name": "renamed" } }))
        .fetch()
        .await;
    assert_eq!(json_ok(updated, StatusCode::OK).await["rowsAffected"], 1);
    let row = routed(http.get(daemon.url("/api/tables/items/rows/2")), key)
        .fetch()
        .await;
    assert_eq!(json_ok(row, StatusCode::OK).await["name"], "renamed");
    let deleted = routed(http.delete(daemon.url("/api/tables/items/rows/2")), key)
        .fetch()
        .await;
    assert_eq!(json_ok(deleted, StatusCode::OK).await["rowsAffected"], 1);
    let gone = routed(http.get(daemon.url("/api/tables/items/rows/2")), key)
        .fetch()
        .await;
    let body = problem(gone, StatusCode::NOT_FOUND, "not_found", &fixture.dir_text()).await;
    assert_eq!(body["missing"], "row");
    let no_table = routed(http.get(daemon.url("/api/tables/nope/rows/2")), key)
        .fetch()
        .await;
    let body = problem(no_table, StatusCode::NOT_FOUND, "not_found", &fixture.dir_text()).await;
    assert_eq!(body["missing"], "table");

    // Collections.
    let put = routed(http.put(daemon.url("/api/collections/profiles/documents/ada")), key)
        .json(&json!({ "document": { "name": "Ada", "langs": ["en"] } }))
        .fetch()
        .await;
    assert_eq!(put.status(), StatusCode::NO_CONTENT);
    let document = routed(http.get(daemon.url("/api/collections/profiles/documents/ada")), key)
        .fetch()
        .await;
    assert_eq!(
        json_ok(document, StatusCode::OK).await,
        json!({ "key": "ada", "document": { "name": "Ada", "langs": ["en"] } })
    );
    let names = routed(http.get(daemon.url("/api/collections")), key).fetch().await;
    assert_eq!(json_ok(names, StatusCode::OK).await, json!(["profiles"]));
    let count = routed(http.get(daemon.url("/api/collections/profiles/count")), key)
        .fetch()
        .await;
    assert_eq!(
        json_ok(count, StatusCode::OK).await,
        json!({ "collectionName": "profiles", "count": 1 })
    );
    let page = routed(http.get(daemon.url("/api/collections/profiles?pageSize=10")), key)
        .fetch()
        .await;
    let page = json_ok(page, StatusCode::OK).await;
    assert_eq!(page["totalCount"], 1);
    assert_eq!(page["documents"][0]["key"], "ada");
    let deleted = routed(http.delete(daemon.url("/api/collections/profiles/documents/ada")), key)
        .fetch()
        .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let deleted_again = routed(http.delete(daemon.url("/api/collections/profiles/documents/ada")), key)
        .fetch()
        .await;
    let body = problem(deleted_again, StatusCode::NOT_FOUND, "not_found", &fixture.dir_text()).await;
    assert_eq!(body["missing"], "document");
    let put = routed(http.put(daemon.url("/api/collections/profiles/documents/bob")), key)
        .json(&json!({ "document": 1 }))
        .fetch()
        .await;
    assert_eq!(put.status(), StatusCode::NO_CONTENT);
    let dropped = routed(http.delete(daemon.url("/api/collections/profiles")), key)
        .fetch()
        .await;
    assert_eq!(dropped.status(), StatusCode::NO_CONTENT);
    let dropped_again = routed(http.delete(daemon.url("/api/collections/profiles")), key)
        .fetch()
        .await;
    let body = problem(dropped_again, StatusCode::NOT_FOUND, "not_found", &fixture.dir_text()).await;
    assert_eq!(body["missing"], "collection");

    // Saved queries.
    let saved = routed(http.put(daemon.url("/api/saved-queries/by-tenant")), key)
        .json(&json!({ "sqlText": "SELECT * FROM items WHERE tenant = :tenant" }))
        .fetch()
        .await;
    assert_eq!(json_ok(saved, StatusCode::OK).await["name"], "by-tenant");
    let one = routed(http.get(daemon.url("/api/saved-queries/by-tenant")), key)
        .fetch()
        .await;
    assert_eq!(
        json_ok(one, StatusCode::OK).await["sqlText"],
        "SELECT * FROM items WHERE tenant = :tenant"
    );
    let all = routed(http.get(daemon.url("/api/saved-queries")), key).fetch().await;
    assert_eq!(json_ok(all, StatusCode::OK).await.as_array().unwrap().len(), 1);
    let deleted = routed(http.delete(daemon.url("/api/saved-queries/by-tenant")), key)
        .fetch()
        .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let missing = routed(http.get(daemon.url("/api/saved-queries/by-tenant")), key)
        .fetch()
        .await;
    problem(missing, StatusCode::NOT_FOUND, "not_found", &fixture.dir_text()).await;

    // Procedures.
    let created = routed(http.post(daemon.url("/api/procedures")), key)
        .json(&json!({
            "name": "add_item",
            "bodySql": "INSERT INTO items (id, tenant, name) VALUES (:id, :tenant, :name)",
            "parameters": [{ "name": "id" }, { "name": "tenant" }, { "name": "name", "required": false, "default": "unnamed" }]
        }))
        .fetch().await;
    assert_eq!(json_ok(created, StatusCode::CREATED).await["name"], "add_item");
    let executed = routed(http.post(daemon.url("/api/procedures/add_item/execute")), key)
        .json(&json!({ "args": { "id": 10, "tenant": key } }))
        .fetch()
        .await;
    assert_eq!(json_ok(executed, StatusCode::OK).await["rowsAffected"], 1);
    let row = routed(http.get(daemon.url("/api/tables/items/rows/10")), key)
        .fetch()
        .await;
    assert_eq!(json_ok(row, StatusCode::OK).await["name"], "unnamed");
    let replaced = routed(http.put(daemon.url("/api/procedures/add_item")), key)
        .json(&json!({ "bodySql": "INSERT INTO items (id, tenant) VALUES (:id, 'x')", "parameters": [{ "name": "id" }], "description": "v2" }))
        .fetch().await;
    assert_eq!(json_ok(replaced, StatusCode::OK).await["description"], "v2");
    let one = routed(http.get(daemon.url("/api/procedures/add_item")), key)
        .fetch()
        .await;
    assert_eq!(
        json_ok(one, StatusCode::OK).await["parameters"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let all = routed(http.get(daemon.url("/api/procedures")), key).fetch().await;
    assert_eq!(json_ok(all, StatusCode::OK).await.as_array().unwrap().len(), 1);
    let mismatch = routed(http.put(daemon.url("/api/procedures/add_item")), key)
        .json(&json!({ "name": "other", "bodySql": "SELECT 1" }))
        .fetch()
        .await;
    problem(mismatch, StatusCode::BAD_REQUEST, "invalid_input", &fixture.dir_text()).await;
    let deleted = routed(http.delete(daemon.url("/api/procedures/add_item")), key)
        .fetch()
        .await;
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let missing = routed(http.post(daemon.url("/api/procedures/add_item/execute")), key)
        .json(&json!({}))
        .fetch()
        .await;
    problem(missing, StatusCode::NOT_FOUND, "not_found", &fixture.dir_text()).await;

    // Nothing of this reached the other shard.
    let other = routed(http.get(daemon.url("/api/tables/items/count")), "tenant-b")
        .fetch()
        .await;
    assert_eq!(json_ok(other, StatusCode::OK).await["count"], 0);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_begin_execute_commit_and_roll_back() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    create_items(&http, &daemon).await;

    let begun = routed(http.post(daemon.url("/api/transactions")), "tenant-b")
        .fetch()
        .await;
    let begun = json_ok(begun, StatusCode::OK).await;
    let id = begun["transactionId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("csdbshard:1:s1:"), "{id}");
    let expires = begun["expiresAtUtc"].as_str().unwrap();
    assert!(time::OffsetDateTime::parse(expires, &time::format_description::well_known::Rfc3339).is_ok());

    // Execute and commit route by the id alone.
    let executed = http
        .post(tx_url(&daemon, &id, "execute"))
        .json(&json!({ "sql": "INSERT INTO items (id, tenant) VALUES (?1, 'tenant-b')", "parameters": [7] }))
        .fetch()
        .await;
    assert_eq!(json_ok(executed, StatusCode::OK).await["rowsAffected"], 1);
    // A matching route is accepted too.
    let executed = routed(http.post(tx_url(&daemon, &id, "execute")), "tenant-b")
        .json(&json!({ "sql": "SELECT count(*) AS n FROM items" }))
        .fetch()
        .await;
    assert_eq!(json_ok(executed, StatusCode::OK).await["rows"], json!([[1]]));
    let committed = http.post(tx_url(&daemon, &id, "commit")).fetch().await;
    assert_eq!(committed.status(), StatusCode::NO_CONTENT);
    let row = routed(http.get(daemon.url("/api/tables/items/rows/7")), "tenant-b")
        .fetch()
        .await;
    assert_eq!(json_ok(row, StatusCode::OK).await["id"], 7);
    let again = http.post(tx_url(&daemon, &id, "commit")).fetch().await;
    problem(again, StatusCode::NOT_FOUND, "not_found", &fixture.dir_text()).await;

    // Rollback discards.
    let begun = routed(http.post(daemon.url("/api/transactions")), "tenant-b")
        .fetch()
        .await;
    let id = json_ok(begun, StatusCode::OK).await["transactionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let executed = http
        .post(tx_url(&daemon, &id, "execute"))
        .json(&json!({ "sql": "INSERT INTO items (id, tenant) VALUES (8, 'tenant-b')" }))
        .fetch()
        .await;
    json_ok(executed, StatusCode::OK).await;
    let rolled_back = http.post(tx_url(&daemon, &id, "rollback")).fetch().await;
    assert_eq!(rolled_back.status(), StatusCode::NO_CONTENT);
    let row = routed(http.get(daemon.url("/api/tables/items/rows/8")), "tenant-b")
        .fetch()
        .await;
    problem(row, StatusCode::NOT_FOUND, "not_found", &fixture.dir_text()).await;

    // A constraint violation inside a transaction is 409 with the SQLite code.
    let begun = routed(http.post(daemon.url("/api/transactions")), "tenant-b")
        .fetch()
        .await;
    let id = json_ok(begun, StatusCode::OK).await["transactionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let duplicate = http
        .post(tx_url(&daemon, &id, "execute"))
        .json(&json!({ "sql": "INSERT INTO items (id, tenant) VALUES (7, 'tenant-b')" }))
        .fetch()
        .await;
    let body = problem(duplicate, StatusCode::CONFLICT, "constraint", &fixture.dir_text()).await;
    assert_eq!(body["sqliteCode"], 1555);
    let rolled_back = http.post(tx_url(&daemon, &id, "rollback")).fetch().await;
    assert_eq!(rolled_back.status(), StatusCode::NO_CONTENT);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sharding_endpoint_answers() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    let dir = fixture.dir_text();

    let map = json_ok(http.get(daemon.url("/api/sharding/map")).fetch().await, StatusCode::OK).await;
    assert_eq!(map["keyspace"], "tenants");
    assert_eq!(map["mapVersion"], 1);
    assert_eq!(map["shards"][0]["shardId"], "s0");
    assert_eq!(map["exactKeyPins"]["tenant-a"], "s0");

    let resolved = http
        .post(daemon.url("/api/sharding/resolve"))
        .json(&json!({ "keyspace": "TENANTS", "key": " tenant-a " }))
        .fetch()
        .await;
    let resolved = json_ok(resolved, StatusCode::OK).await;
    assert_eq!(resolved["shardId"], "s0");
    assert_eq!(resolved["source"], "pin");
    assert_eq!(resolved["bucket"], 3);
    assert_eq!(resolved["key"], "tenant-a");
    assert!(resolved["token"].is_u64());
    let unknown = http
        .post(daemon.url("/api/sharding/resolve"))
        .json(&json!({ "keyspace": "orders", "key": "x" }))
        .fetch()
        .await;
    problem(unknown, StatusCode::BAD_REQUEST, "unknown_keyspace", &dir).await;

    let status = json_ok(
        http.get(daemon.url("/api/sharding/status")).fetch().await,
        StatusCode::OK,
    )
    .await;
    let status = status.as_array().unwrap();
    assert_eq!(status.len(), 2);
    assert!(status.iter().all(|s| s["healthy"] == true), "{status:?}");

    create_items(&http, &daemon).await;
    let failing = http
        .post(daemon.url("/api/sharding/sql/execute-all"))
        .json(&json!({ "sql": ITEMS_DDL }))
        .fetch()
        .await;
    let failing = json_ok(failing, StatusCode::OK).await;
    for outcome in failing.as_array().unwrap() {
        assert_eq!(outcome["errorCode"], "sql", "{outcome}");
        assert!(
            outcome["error"].as_str().unwrap().contains("already exists"),
            "{outcome}"
        );
    }
    let read = http
        .post(daemon.url("/api/sharding/sql/read-all"))
        .json(&json!({ "sql": "SELECT count(*) AS n FROM items" }))
        .fetch()
        .await;
    let read = json_ok(read, StatusCode::OK).await;
    assert_eq!(read[0]["shardId"], "s0");
    assert_eq!(read[1]["shardId"], "s1");
    assert_eq!(read[1]["result"]["columnNames"], json!(["n"]));

    let catalog = json_ok(
        http.get(daemon.url("/api/sharding/catalog")).fetch().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(catalog["source"], "master-catalog");
    assert_eq!(catalog["isCatalogEnabled"], true);
    assert_eq!(catalog["activeMap"]["mapVersion"], 1);
    assert!(catalog["history"].is_array());
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_all_refuses_writes_and_runs_nothing() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    create_items(&http, &daemon).await;
    json_ok(insert_item(&http, &daemon, "tenant-a", 1).await, StatusCode::CREATED).await;

    for sql in [
        "DELETE FROM items",
        "SELECT 1; DELETE FROM items",
        "WITH x AS (SELECT 1) DELETE FROM items",
        "CREATE TABLE t2 (x)",
    ] {
        let refused = http
            .post(daemon.url("/api/sharding/sql/read-all"))
            .json(&json!({ "sql": sql }))
            .fetch()
            .await;
        problem(refused, StatusCode::BAD_REQUEST, "read_only", &fixture.dir_text()).await;
    }
    assert_eq!(total_items(&http, &daemon).await, 1);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn route_headers_must_come_in_pairs() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    let dir = fixture.dir_text();

    let only_keyspace = http
        .get(daemon.url("/api/tables"))
        .header(KEYSPACE_HEADER, "tenants")
        .fetch()
        .await;
    let body = problem(only_keyspace, StatusCode::BAD_REQUEST, "invalid_input", &dir).await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("X-CSharpDB-Shard-Key header is missing"),
        "{body}"
    );

    let only_key = http
        .get(daemon.url("/api/tables"))
        .header(SHARD_KEY_HEADER, "tenant-a")
        .header(KEYSPACE_HEADER, "   ")
        .fetch()
        .await;
    let body = problem(only_key, StatusCode::BAD_REQUEST, "invalid_input", &dir).await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("X-CSharpDB-Keyspace header is missing"),
        "{body}"
    );

    // Shard-admin endpoints check the pair too.
    let admin = http
        .get(daemon.url("/api/sharding/map"))
        .header(KEYSPACE_HEADER, "tenants")
        .fetch()
        .await;
    problem(admin, StatusCode::BAD_REQUEST, "invalid_input", &dir).await;

    let not_utf8 = http
        .get(daemon.url("/api/tables"))
        .header(KEYSPACE_HEADER, "tenants")
        .header(SHARD_KEY_HEADER, HeaderValue::from_bytes(b"\xff\xfe").unwrap())
        .fetch()
        .await;
    let body = problem(not_utf8, StatusCode::BAD_REQUEST, "invalid_input", &dir).await;
    assert!(body["detail"].as_str().unwrap().contains("not valid UTF-8"), "{body}");

    // Both blank counts as no route at all.
    let blank = http
        .get(daemon.url("/api/tables"))
        .header(KEYSPACE_HEADER, " ")
        .header(SHARD_KEY_HEADER, "")
        .fetch()
        .await;
    problem(blank, StatusCode::BAD_REQUEST, "route_required", &dir).await;

    // UTF-8 route keys travel as raw header bytes.
    create_items(&http, &daemon).await;
    let unicode = http
        .get(daemon.url("/api/tables"))
        .header(KEYSPACE_HEADER, "tenants")
        .header(
            SHARD_KEY_HEADER,
            HeaderValue::from_bytes("t\u{e9}nant-\u{fc}".as_bytes()).unwrap(),
        )
        .fetch()
        .await;
    assert_eq!(json_ok(unicode, StatusCode::OK).await, json!(["items"]));
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_unknown_routes_are_client_errors() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    let dir = fixture.dir_text();

    let no_route = http
        .post(daemon.url("/api/sql/execute"))
        .json(&json!({ "sql": "SELECT 1" }))
        .fetch()
        .await;
    let body = problem(no_route, StatusCode::BAD_REQUEST, "route_required", &dir).await;
    assert!(body["detail"].as_str().unwrap().contains(KEYSPACE_HEADER), "{body}");
    let begin = http.post(daemon.url("/api/transactions")).fetch().await;
    problem(begin, StatusCode::BAD_REQUEST, "route_required", &dir).await;
    // The document says so: the route headers are required to execute SQL, and optional to
    // begin a transaction, since an atomic one begins without a route.
    let doc: serde_json::Value = http
        .get(daemon.url("/openapi.json"))
        .fetch()
        .await
        .json()
        .await
        .unwrap();
    let required = |path: &str| -> bool {
        let parameters = doc["paths"][path]["post"]["parameters"].as_array().expect("parameters");
        let header = parameters
            .iter()
            .find(|p| {
                p["name"]
                    .as_str()
                    .is_some_and(|name| name.eq_ignore_ascii_case(KEYSPACE_HEADER))
            })
            .expect("the keyspace header");
        header["required"] == json!(true)
    };
    assert!(required("/api/sql/execute"));
    assert!(!required("/api/transactions"));
    let atomic = http
        .post(daemon.url("/api/transactions"))
        .json(&json!({ "atomic": true }))
        .fetch()
        .await;
    assert_eq!(atomic.status(), StatusCode::OK);
    for (method, path) in [
        (Method::GET, "/api/tables"),
        (Method::GET, "/api/tables/items/rows/1"),
        (Method::GET, "/api/collections"),
        (Method::GET, "/api/saved-queries"),
        (Method::GET, "/api/procedures"),
    ] {
        let response = http.request(method, daemon.url(path)).fetch().await;
        problem(response, StatusCode::BAD_REQUEST, "route_required", &dir).await;
    }

    let unknown = http
        .post(daemon.url("/api/sql/execute"))
        .header(KEYSPACE_HEADER, "orders_by_month")
        .header(SHARD_KEY_HEADER, "2026-06")
        .json(&json!({ "sql": "SELECT 1" }))
        .fetch()
        .await;
    let body = problem(unknown, StatusCode::BAD_REQUEST, "unknown_keyspace", &dir).await;
    assert!(body["detail"].as_str().unwrap().contains("orders_by_month"), "{body}");
    let unknown_info = http
        .get(daemon.url("/api/info"))
        .header(KEYSPACE_HEADER, "nope")
        .header(SHARD_KEY_HEADER, "x")
        .fetch()
        .await;
    problem(unknown_info, StatusCode::BAD_REQUEST, "unknown_keyspace", &dir).await;
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_get_problem_bodies() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    let dir = fixture.dir_text();
    create_items(&http, &daemon).await;
    let sql_url = daemon.url("/api/sql/execute");

    let syntax = routed(http.post(&sql_url), "tenant-a")
        .header(CONTENT_TYPE, "application/json")
        .body(r#"{"sql": "SELECT 1""#)
        .fetch()
        .await;
    problem(syntax, StatusCode::BAD_REQUEST, "invalid_input", &dir).await;

    let missing_field = routed(http.post(&sql_url), "tenant-a")
        .json(&json!({ "parameters": [] }))
        .fetch()
        .await;
    let body = problem(missing_field, StatusCode::BAD_REQUEST, "invalid_input", &dir).await;
    assert!(body["detail"].as_str().unwrap().contains("sql"), "{body}");

    let unknown_field = routed(http.post(&sql_url), "tenant-a")
        .json(&json!({ "sql": "SELECT 1", "paramaters": [] }))
        .fetch()
        .await;
    let body = problem(unknown_field, StatusCode::BAD_REQUEST, "invalid_input", &dir).await;
    assert!(body["detail"].as_str().unwrap().contains("paramaters"), "{body}");

    let wrong_type = routed(http.post(&sql_url), "tenant-a")
        .json(&json!({ "sql": 42 }))
        .fetch()
        .await;
    problem(wrong_type, StatusCode::BAD_REQUEST, "invalid_input", &dir).await;

    let empty_sql = routed(http.post(&sql_url), "tenant-a")
        .json(&json!({ "sql": "  " }))
        .fetch()
        .await;
    problem(empty_sql, StatusCode::BAD_REQUEST, "invalid_input", &dir).await;

    let bad_sql = routed(http.post(&sql_url), "tenant-a")
        .json(&json!({ "sql": "SELEC 1" }))
        .fetch()
        .await;
    let body = problem(bad_sql, StatusCode::BAD_REQUEST, "sql", &dir).await;
    assert_eq!(body["sqliteCode"], 1);

    let no_content_type = routed(http.post(&sql_url), "tenant-a")
        .body(r#"{"sql":"SELECT 1"}"#)
        .fetch()
        .await;
    problem(
        no_content_type,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        &dir,
    )
    .await;
    let text = routed(http.post(&sql_url), "tenant-a")
        .header(CONTENT_TYPE, "text/plain")
        .body("SELECT 1")
        .fetch()
        .await;
    problem(text, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", &dir).await;
    let no_body = routed(http.post(&sql_url), "tenant-a")
        .header(CONTENT_TYPE, "application/json")
        .fetch()
        .await;
    problem(no_body, StatusCode::BAD_REQUEST, "invalid_input", &dir).await;

    for (path, status, code) in [
        (
            "/api/tables/items/rows?page=abc",
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
        (
            "/api/tables/items/rows?page=0",
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
        (
            "/api/tables/items/rows?pageSize=100000",
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
        (
            "/api/tables/items/rows?pagesize=10",
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
        (
            "/api/tables/items/rows/1?pkType=uuid",
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
        (
            "/api/tables/items/rows/x?pkType=integer",
            StatusCode::BAD_REQUEST,
            "invalid_input",
        ),
        ("/api/tables/items/rows/%FF", StatusCode::BAD_REQUEST, "invalid_input"),
        ("/api/tables/nope/rows/1", StatusCode::NOT_FOUND, "not_found"),
    ] {
        let response = routed(http.get(daemon.url(path)), "tenant-a").fetch().await;
        problem(response, status, code, &dir).await;
    }
    let no_column = insert_item(&http, &daemon, "tenant-a", 1).await;
    json_ok(no_column, StatusCode::CREATED).await;
    let duplicate = insert_item(&http, &daemon, "tenant-a", 1).await;
    problem(duplicate, StatusCode::CONFLICT, "constraint", &dir).await;
    let empty_values = routed(http.post(daemon.url("/api/tables/items/rows")), "tenant-a")
        .json(&json!({ "values": {} }))
        .fetch()
        .await;
    problem(empty_values, StatusCode::BAD_REQUEST, "invalid_input", &dir).await;

    let wrong_method = http.delete(daemon.url("/api/info")).fetch().await;
    problem(wrong_method, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", &dir).await;
    let no_endpoint = http.get(daemon.url("/api/nope")).fetch().await;
    problem(no_endpoint, StatusCode::NOT_FOUND, "not_found", &dir).await;

    // The daemon keeps serving.
    let fine = routed(http.get(daemon.url("/api/tables/items/rows/1")), "tenant-a")
        .fetch()
        .await;
    json_ok(fine, StatusCode::OK).await;
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_keys_in_paths_follow_the_column_type() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    let setup = http
        .post(daemon.url("/api/sharding/sql/execute-all"))
        .json(
            &json!({ "sql": "CREATE TABLE codes (code TEXT PRIMARY KEY, n INTEGER); \
                               CREATE TABLE blobs (k BLOB PRIMARY KEY, n INTEGER); \
                               CREATE TABLE measures (x REAL PRIMARY KEY, n INTEGER)" }),
        )
        .fetch()
        .await;
    json_ok(setup, StatusCode::OK).await;
    let run = |sql: &'static str| {
        routed(http.post(daemon.url("/api/sql/execute")), "tenant-a")
            .json(&json!({ "sql": sql }))
            .send()
    };
    json_ok(
        run("INSERT INTO codes VALUES ('007', 1); INSERT INTO blobs VALUES (x'0001ff', 2); INSERT INTO measures VALUES (1.5, 3)")
            .await
            .unwrap(),
        StatusCode::OK,
    )
    .await;

    // A TEXT key keeps its leading zeros.
    let code = routed(http.get(daemon.url("/api/tables/codes/rows/007")), "tenant-a")
        .fetch()
        .await;
    assert_eq!(json_ok(code, StatusCode::OK).await["n"], 1);
    // A BLOB key comes as base64.
    let blob = routed(
        http.get(daemon.url("/api/tables/blobs/rows/AAH%2F?pkType=blob")),
        "tenant-a",
    )
    .fetch()
    .await;
    assert_eq!(json_ok(blob, StatusCode::OK).await["k"], json!({ "$blob": "AAH/" }));
    // A REAL key is read as a number.
    let measure = routed(http.get(daemon.url("/api/tables/measures/rows/1.5")), "tenant-a")
        .fetch()
        .await;
    assert_eq!(json_ok(measure, StatusCode::OK).await["n"], 3);
    // A TEXT key is compared as text: '7' is not '007'.
    let none = routed(http.get(daemon.url("/api/tables/codes/rows/7")), "tenant-a")
        .fetch()
        .await;
    problem(none, StatusCode::NOT_FOUND, "not_found", &fixture.dir_text()).await;
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_are_413() {
    let fixture = Fixture::new().await;
    let daemon = fixture
        .start_with(ServerConfig {
            body_limit: 1024,
            ..ServerConfig::default()
        })
        .await;
    let http = http_client();
    let dir = fixture.dir_text();
    let big = format!("SELECT '{}'", "x".repeat(4096));

    let too_large = routed(http.post(daemon.url("/api/sql/execute")), "tenant-a")
        .json(&json!({ "sql": big }))
        .fetch()
        .await;
    problem(too_large, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", &dir).await;
    // Without a Content-Length (a chunked body), the limit still holds.
    let (status, body) = chunked_post(&daemon, "/api/sql/execute", &[b"{\"sql\":\"", &[b'x'; 2000], b"\"}"]).await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("payload_too_large"), "{body}");

    let small = routed(http.post(daemon.url("/api/sql/execute")), "tenant-a")
        .json(&json!({ "sql": "SELECT 1" }))
        .fetch()
        .await;
    json_ok(small, StatusCode::OK).await;
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_transaction_ids_are_400() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    let dir = fixture.dir_text();
    for id in [
        "nonsense",
        "csdbshard:1:s0",
        "CSDBSHARD:1:s0:abc",
        "csdbshard:x:s0:abc",
        "csdbshard:-1:s0:abc",
        "csdbshard:+1:s0:abc",
        "csdbshard: 1:s0:abc",
        "csdbshard:1::abc",
        "csdbshard:1: :abc",
        "csdbshard:1:s0:",
        "csdbshard:1:s0: ",
        "csdbshard:99999999999999999999999:s0:abc",
        "csdbshard/1/s0/abc",
    ] {
        for action in ["execute", "commit", "rollback"] {
            let request = http.post(tx_url(&daemon, id, action));
            let request = if action == "execute" {
                request.json(&json!({ "sql": "SELECT 1" }))
            } else {
                request
            };
            let response = request.fetch().await;
            let body = problem(response, StatusCode::BAD_REQUEST, "invalid_input", &dir).await;
            assert!(
                body["detail"].as_str().unwrap().contains("malformed transaction id"),
                "{id}: {body}"
            );
        }
    }
    // Well-formed ids that name no shard or no open transaction are 404.
    let unknown_shard = http.post(tx_url(&daemon, "csdbshard:1:s9:abc", "commit")).fetch().await;
    problem(unknown_shard, StatusCode::NOT_FOUND, "not_found", &dir).await;
    let unknown_inner = http
        .post(tx_url(
            &daemon,
            "csdbshard:1:s0:0123456789abcdef0123456789abcdef",
            "rollback",
        ))
        .fetch()
        .await;
    problem(unknown_inner, StatusCode::NOT_FOUND, "not_found", &dir).await;
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_that_resolves_elsewhere_conflicts_with_the_transaction() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    let dir = fixture.dir_text();
    create_items(&http, &daemon).await;

    let begun = routed(http.post(daemon.url("/api/transactions")), "tenant-a")
        .fetch()
        .await;
    let id = json_ok(begun, StatusCode::OK).await["transactionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("csdbshard:1:s0:"), "{id}");
    // tenant-b is pinned to s1.
    let conflict = routed(http.post(tx_url(&daemon, &id, "execute")), "tenant-b")
        .json(&json!({ "sql": "INSERT INTO items (id, tenant) VALUES (1, 'tenant-b')" }))
        .fetch()
        .await;
    let body = problem(conflict, StatusCode::CONFLICT, "conflict", &dir).await;
    assert!(body["detail"].as_str().unwrap().contains("'s1'"), "{body}");
    let conflict = routed(http.post(tx_url(&daemon, &id, "commit")), "tenant-b")
        .fetch()
        .await;
    problem(conflict, StatusCode::CONFLICT, "conflict", &dir).await;
    // The transaction is untouched by the refused calls and still commits.
    let committed = routed(http.post(tx_url(&daemon, &id, "commit")), "tenant-a")
        .fetch()
        .await;
    assert_eq!(committed.status(), StatusCode::NO_CONTENT);
    assert_eq!(total_items(&http, &daemon).await, 0);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_from_another_map_version_are_stale() {
    let fixture = Fixture::new().await;
    let http = http_client();
    let dir = fixture.dir_text();
    let daemon = fixture.start().await;
    create_items(&http, &daemon).await;

    let future_version = http
        .post(tx_url(
            &daemon,
            "csdbshard:2:s0:0123456789abcdef0123456789abcdef",
            "commit",
        ))
        .fetch()
        .await;
    problem(future_version, StatusCode::CONFLICT, "stale_map_version", &dir).await;

    // A transaction begun under version 1 ...
    let begun = routed(http.post(daemon.url("/api/transactions")), "tenant-a")
        .fetch()
        .await;
    let id = json_ok(begun, StatusCode::OK).await["transactionId"]
        .as_str()
        .unwrap()
        .to_owned();
    daemon.stop().await.unwrap();

    // ... is stale once version 2 is active.
    let mut v2 = crate::support::tenants_options(fixture.dir.path());
    v2.map_version = 2;
    Catalog::open(&fixture.master)
        .await
        .unwrap()
        .seed(v2, true)
        .await
        .unwrap();
    let daemon = fixture.start().await;
    let stale = http
        .post(tx_url(&daemon, &id, "execute"))
        .json(&json!({ "sql": "SELECT 1" }))
        .fetch()
        .await;
    let body = problem(stale, StatusCode::CONFLICT, "stale_map_version", &dir).await;
    assert!(body["detail"].as_str().unwrap().contains("version 1"), "{body}");
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_is_required_on_every_endpoint_when_configured() {
    let fixture = Fixture::new().await;
    let daemon = fixture
        .start_with(ServerConfig {
            api_key: Some(Secret::new("c2VjcmV0==")),
            api_key_header: "X-Shardlite-Key".to_owned(),
            ..ServerConfig::default()
        })
        .await;
    let http = http_client();
    let dir = fixture.dir_text();

    for (method, path) in [
        (Method::GET, "/api/info"),
        (Method::GET, "/api/sharding/map"),
        (Method::POST, "/api/transactions"),
        (Method::GET, "/openapi.json"),
        (Method::GET, "/api/nope"),
        (Method::DELETE, "/api/info"),
    ] {
        let missing = http.request(method.clone(), daemon.url(path)).fetch().await;
        let challenge = missing.headers().get(WWW_AUTHENTICATE).cloned();
        problem(missing, StatusCode::UNAUTHORIZED, "unauthenticated", &dir).await;
        assert_eq!(challenge.unwrap(), "ApiKey header=\"X-Shardlite-Key\"");
        for wrong in ["c2VjcmV0", "c2VjcmV0==x", ""] {
            let response = http
                .request(method.clone(), daemon.url(path))
                .header("X-Shardlite-Key", wrong)
                .fetch()
                .await;
            problem(response, StatusCode::UNAUTHORIZED, "unauthenticated", &dir).await;
        }
        // The default header name does not count when another one is configured.
        let other_header = http
            .request(method.clone(), daemon.url(path))
            .header("X-CSharpDB-Api-Key", "c2VjcmV0==")
            .fetch()
            .await;
        problem(other_header, StatusCode::UNAUTHORIZED, "unauthenticated", &dir).await;
    }

    let with_key = |request: RequestBuilder| request.header("x-shardlite-key", "c2VjcmV0==");
    let info = with_key(http.get(daemon.url("/api/info"))).fetch().await;
    json_ok(info, StatusCode::OK).await;
    let doc = with_key(http.get(daemon.url("/openapi.json"))).fetch().await;
    let doc = json_ok(doc, StatusCode::OK).await;
    assert_eq!(
        doc["components"]["securitySchemes"]["apiKey"]["name"],
        "X-Shardlite-Key"
    );
    let routed_call = with_key(routed(http.get(daemon.url("/api/tables")), "tenant-a"))
        .fetch()
        .await;
    json_ok(routed_call, StatusCode::OK).await;
    let no_endpoint = with_key(http.get(daemon.url("/api/nope"))).fetch().await;
    problem(no_endpoint, StatusCode::NOT_FOUND, "not_found", &dir).await;
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsharded_daemon_serves_data_and_refuses_shard_admin() {
    let fixture = Fixture::plain();
    let daemon = fixture.start().await;
    let http = http_client();
    let dir = fixture.dir_text();

    // No route needed; a route is ignored.
    let created = http
        .post(daemon.url("/api/sql/execute"))
        .json(&json!({ "sql": ITEMS_DDL }))
        .fetch()
        .await;
    json_ok(created, StatusCode::OK).await;
    let inserted = http
        .post(daemon.url("/api/tables/items/rows"))
        .json(&json!({ "values": { "id": 1, "tenant": "t", "name": "one" } }))
        .fetch()
        .await;
    json_ok(inserted, StatusCode::CREATED).await;
    let row = routed(http.get(daemon.url("/api/tables/items/rows/1")), "whatever")
        .fetch()
        .await;
    assert_eq!(json_ok(row, StatusCode::OK).await["name"], "one");
    let info = json_ok(http.get(daemon.url("/api/info")).fetch().await, StatusCode::OK).await;
    assert_eq!(info["dataSource"], "plain.db");
    assert_eq!(info["tableCount"], 1);

    // Transactions use the database's own ids.
    let begun = json_ok(http.post(daemon.url("/api/transactions")).fetch().await, StatusCode::OK).await;
    let id = begun["transactionId"].as_str().unwrap().to_owned();
    let executed = http
        .post(tx_url(&daemon, &id, "execute"))
        .json(&json!({ "sql": "INSERT INTO items (id, tenant) VALUES (2, 't')" }))
        .fetch()
        .await;
    json_ok(executed, StatusCode::OK).await;
    let committed = http.post(tx_url(&daemon, &id, "commit")).fetch().await;
    assert_eq!(committed.status(), StatusCode::NO_CONTENT);
    let count = json_ok(
        http.get(daemon.url("/api/tables/items/count")).fetch().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(count["count"], 2);

    for (method, path, body) in [
        (Method::GET, "/api/sharding/map", None),
        (
            Method::POST,
            "/api/sharding/resolve",
            Some(json!({ "keyspace": "tenants", "key": "a" })),
        ),
        (Method::GET, "/api/sharding/status", None),
        (Method::GET, "/api/sharding/status/page", None),
        (Method::GET, "/api/sharding/stats/heat", None),
        (Method::GET, "/api/sharding/atomic-transactions", None),
        (
            Method::POST,
            "/api/sharding/sql/execute-all",
            Some(json!({ "sql": "SELECT 1" })),
        ),
        (
            Method::POST,
            "/api/sharding/sql/read-all",
            Some(json!({ "sql": "SELECT 1" })),
        ),
        (Method::GET, "/api/sharding/catalog", None),
    ] {
        let mut request = http.request(method, daemon.url(path));
        if let Some(body) = body {
            request = request.json(&body);
        }
        problem(request.fetch().await, StatusCode::NOT_FOUND, "not_sharded", &dir).await;
    }
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_a_restart_and_open_transactions_roll_back_at_shutdown() {
    let fixture = Fixture::new().await;
    let http = http_client();
    let daemon = fixture.start().await;
    create_items(&http, &daemon).await;
    json_ok(insert_item(&http, &daemon, "tenant-a", 1).await, StatusCode::CREATED).await;
    json_ok(insert_item(&http, &daemon, "tenant-b", 2).await, StatusCode::CREATED).await;
    // A transaction left open holds s0's write lock when the daemon stops.
    let begun = routed(http.post(daemon.url("/api/transactions")), "tenant-a")
        .fetch()
        .await;
    let id = json_ok(begun, StatusCode::OK).await["transactionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let executed = http
        .post(tx_url(&daemon, &id, "execute"))
        .json(&json!({ "sql": "INSERT INTO items (id, tenant) VALUES (3, 'tenant-a')" }))
        .fetch()
        .await;
    json_ok(executed, StatusCode::OK).await;
    daemon.stop().await.unwrap();
    // The transaction was rolled back at shutdown, not left to its idle expiry: s0's write
    // lock is free (the short busy timeout only covers the old daemon's connections closing).
    let shard = rusqlite::Connection::open(fixture.dir.path().join("s0.db")).unwrap();
    shard.busy_timeout(Duration::from_millis(500)).unwrap();
    shard.execute_batch("BEGIN IMMEDIATE; ROLLBACK;").unwrap();
    drop(shard);

    let daemon = fixture.start().await;
    let first = routed(http.get(daemon.url("/api/tables/items/rows/1")), "tenant-a")
        .fetch()
        .await;
    assert_eq!(json_ok(first, StatusCode::OK).await["tenant"], "tenant-a");
    let second = routed(http.get(daemon.url("/api/tables/items/rows/2")), "tenant-b")
        .fetch()
        .await;
    assert_eq!(json_ok(second, StatusCode::OK).await["tenant"], "tenant-b");
    let uncommitted = routed(http.get(daemon.url("/api/tables/items/rows/3")), "tenant-a")
        .fetch()
        .await;
    problem(uncommitted, StatusCode::NOT_FOUND, "not_found", &fixture.dir_text()).await;
    // The lock was released at shutdown: a write goes through at once, not after a busy wait.
    let started = Instant::now();
    json_ok(insert_item(&http, &daemon, "tenant-a", 4).await, StatusCode::CREATED).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "waited {:?}",
        started.elapsed()
    );
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_concurrent_clients_lose_no_rows() {
    const CLIENTS: i64 = 16;
    const ROWS_EACH: i64 = 25;
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    create_items(&http, &daemon).await;

    let writers = (0..CLIENTS).map(|client| {
        // Every client has its own connection pool, as separate processes would.
        let http = http_client();
        let url = daemon.url("/api/tables/items/rows");
        tokio::spawn(async move {
            let key = format!("tenant-{client}");
            for row in 0..ROWS_EACH {
                let response = routed(http.post(&url), &key)
                    .json(&json!({ "values": { "id": client * 1000 + row, "tenant": key } }))
                    .fetch()
                    .await;
                assert_eq!(
                    response.status(),
                    StatusCode::CREATED,
                    "{}",
                    response.text().await.unwrap()
                );
            }
            key
        })
    });
    let keys: Vec<String> = futures_util::future::join_all(writers)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();

    assert_eq!(total_items(&http, &daemon).await, CLIENTS * ROWS_EACH);
    // Each client's rows are all on the shard its key routes to.
    for key in keys {
        let response = routed(http.post(daemon.url("/api/sql/execute")), &key)
            .json(&json!({ "sql": "SELECT count(*) FROM items WHERE tenant = ?1", "parameters": [key] }))
            .fetch()
            .await;
        assert_eq!(
            json_ok(response, StatusCode::OK).await["rows"][0][0],
            ROWS_EACH,
            "{key}"
        );
    }
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_transaction_expires_and_releases_the_lock() {
    let fixture = Fixture::new().await;
    let daemon = fixture
        .start_with(ServerConfig {
            transaction_idle_timeout: Duration::from_millis(300),
            ..ServerConfig::default()
        })
        .await;
    let http = http_client();
    create_items(&http, &daemon).await;

    let begun = routed(http.post(daemon.url("/api/transactions")), "tenant-a")
        .fetch()
        .await;
    let begun = json_ok(begun, StatusCode::OK).await;
    let id = begun["transactionId"].as_str().unwrap().to_owned();
    let expires = time::OffsetDateTime::parse(
        begun["expiresAtUtc"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let until_expiry = expires - time::OffsetDateTime::now_utc();
    assert!(until_expiry <= time::Duration::milliseconds(300), "{until_expiry}");
    let executed = http
        .post(tx_url(&daemon, &id, "execute"))
        .json(&json!({ "sql": "INSERT INTO items (id, tenant) VALUES (1, 'abandoned')" }))
        .fetch()
        .await;
    json_ok(executed, StatusCode::OK).await;

    // The client vanishes. Another writer on the same shard waits for the write lock, which the
    // expiry releases well within the engine's busy timeout.
    let started = Instant::now();
    json_ok(insert_item(&http, &daemon, "tenant-a", 2).await, StatusCode::CREATED).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "waited {:?}",
        started.elapsed()
    );

    let late = http
        .post(tx_url(&daemon, &id, "execute"))
        .json(&json!({ "sql": "SELECT 1" }))
        .fetch()
        .await;
    problem(late, StatusCode::CONFLICT, "expired", &fixture.dir_text()).await;
    let late_commit = http.post(tx_url(&daemon, &id, "commit")).fetch().await;
    assert!(
        [StatusCode::CONFLICT, StatusCode::NOT_FOUND].contains(&late_commit.status()),
        "{}",
        late_commit.status()
    );
    let abandoned = routed(http.get(daemon.url("/api/tables/items/rows/1")), "tenant-a")
        .fetch()
        .await;
    problem(abandoned, StatusCode::NOT_FOUND, "not_found", &fixture.dir_text()).await;
    assert_eq!(total_items(&http, &daemon).await, 1);
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_transaction_table_answers_busy_with_retry_after() {
    let fixture = Fixture::new().await;
    let daemon = fixture
        .start_with(ServerConfig {
            max_open_transactions: 1,
            ..ServerConfig::default()
        })
        .await;
    let http = http_client();
    let first = routed(http.post(daemon.url("/api/transactions")), "tenant-a")
        .fetch()
        .await;
    let id = json_ok(first, StatusCode::OK).await["transactionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = routed(http.post(daemon.url("/api/transactions")), "tenant-a")
        .fetch()
        .await;
    let retry_after = second.headers().get(RETRY_AFTER).cloned();
    problem(second, StatusCode::SERVICE_UNAVAILABLE, "busy", &fixture.dir_text()).await;
    assert_eq!(retry_after.unwrap(), "1");
    // Another shard is not affected.
    let other = routed(http.post(daemon.url("/api/transactions")), "tenant-b")
        .fetch()
        .await;
    json_ok(other, StatusCode::OK).await;
    let rolled_back = http.post(tx_url(&daemon, &id, "rollback")).fetch().await;
    assert_eq!(rolled_back.status(), StatusCode::NO_CONTENT);
    let again = routed(http.post(daemon.url("/api/transactions")), "tenant-a")
        .fetch()
        .await;
    json_ok(again, StatusCode::OK).await;
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_covers_every_endpoint() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    let doc = json_ok(http.get(daemon.url("/openapi.json")).fetch().await, StatusCode::OK).await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    let expected = [
        ("get", "/admin"),
        ("get", "/api/info"),
        ("post", "/api/sql/execute"),
        ("post", "/api/sql/read-only"),
        ("post", "/api/transactions"),
        ("post", "/api/transactions/{id}/execute"),
        ("post", "/api/transactions/{id}/commit"),
        ("post", "/api/transactions/{id}/rollback"),
        ("post", "/api/atomic/sessions"),
        ("post", "/api/atomic/sessions/{id}/execute"),
        ("post", "/api/atomic/sessions/{id}/prepare"),
        ("post", "/api/atomic/sessions/{id}/rollback"),
        ("post", "/api/atomic/transactions/{id}/steps"),
        ("get", "/api/atomic/transactions/{id}"),
        ("get", "/api/atomic/state"),
        ("get", "/api/tables"),
        ("get", "/api/tables/{name}/schema"),
        ("get", "/api/tables/{name}/count"),
        ("get", "/api/tables/{name}/rows"),
        ("post", "/api/tables/{name}/rows"),
        ("get", "/api/tables/{name}/rows/{pk}"),
        ("put", "/api/tables/{name}/rows/{pk}"),
        ("delete", "/api/tables/{name}/rows/{pk}"),
        ("get", "/api/collections"),
        ("get", "/api/collections/{name}"),
        ("delete", "/api/collections/{name}"),
        ("get", "/api/collections/{name}/count"),
        ("get", "/api/collections/{name}/documents/{key}"),
        ("put", "/api/collections/{name}/documents/{key}"),
        ("delete", "/api/collections/{name}/documents/{key}"),
        ("get", "/api/saved-queries"),
        ("get", "/api/saved-queries/{name}"),
        ("put", "/api/saved-queries/{name}"),
        ("delete", "/api/saved-queries/{name}"),
        ("get", "/api/procedures"),
        ("post", "/api/procedures"),
        ("get", "/api/procedures/{name}"),
        ("put", "/api/procedures/{name}"),
        ("delete", "/api/procedures/{name}"),
        ("post", "/api/procedures/{name}/execute"),
        ("get", "/api/sharding/map"),
        ("post", "/api/sharding/query"),
        ("post", "/api/sharding/resolve"),
        ("get", "/api/sharding/status"),
        ("get", "/api/sharding/status/page"),
        ("get", "/api/sharding/stats/heat"),
        ("get", "/api/sharding/atomic-transactions"),
        ("post", "/api/sharding/directory/resolve"),
        ("post", "/api/sharding/directory/reserve"),
        ("post", "/api/sharding/directory/activate"),
        ("post", "/api/sharding/directory/upsert"),
        ("post", "/api/sharding/directory/disable"),
        ("post", "/api/sharding/directory/delete"),
        ("post", "/api/sharding/directory/mark-stale"),
        ("post", "/api/sharding/directory/import"),
        ("get", "/api/sharding/directory/{name}/entries"),
        ("post", "/api/sharding/backups"),
        ("get", "/api/sharding/backups"),
        ("get", "/api/sharding/backups/overview"),
        ("post", "/api/sharding/sql/execute-all"),
        ("post", "/api/sharding/sql/read-all"),
        ("get", "/api/sharding/catalog"),
        ("post", "/api/sharding/catalog/validate"),
        ("post", "/api/sharding/catalog/apply"),
        ("post", "/api/sharding/catalog/activate"),
        ("get", "/api/sharding/schema"),
        ("post", "/api/sharding/schema/migrate"),
        ("post", "/api/sharding/migrations/exact-route-key"),
        ("post", "/api/sharding/migrations/bucket-range"),
        ("get", "/api/sharding/migrations"),
        ("get", "/api/sharding/migrations/checkpoints"),
        ("get", "/api/sharding/migrations/{id}"),
        ("post", "/api/sharding/migrations/{id}/resume"),
        ("post", "/api/sharding/migrations/{id}/abandon"),
        ("get", "/api/host/shards"),
        ("put", "/api/host/shards/{shardId}"),
        ("get", "/openapi.json"),
        ("get", "/healthz"),
        ("get", "/readyz"),
    ];
    let documented: usize = paths.values().map(|item| item.as_object().unwrap().len()).sum();
    assert_eq!(documented, expected.len(), "{:?}", paths.keys().collect::<Vec<_>>());
    for (method, path) in expected {
        let operation = &paths[path][method];
        assert!(operation.is_object(), "{method} {path} is not documented");
        assert!(operation["operationId"].is_string(), "{method} {path}");
        let bad_request = &operation["responses"]["400"]["content"]["application/problem+json"]["schema"]["$ref"];
        // A refused catalog apply is a problem with the validation as an extension member, a
        // rejected migration one with the migration's result.
        let problem = match path {
            "/api/sharding/catalog/apply" => "#/components/schemas/CatalogUpdateRefused",
            "/api/sharding/migrations/exact-route-key" | "/api/sharding/migrations/bucket-range" => {
                "#/components/schemas/MigrationRejected"
            }
            "/api/sharding/directory/reserve"
            | "/api/sharding/directory/activate"
            | "/api/sharding/directory/upsert"
            | "/api/sharding/directory/disable"
            | "/api/sharding/directory/delete"
            | "/api/sharding/directory/mark-stale"
            | "/api/sharding/directory/import" => "#/components/schemas/DirectoryMutationRefused",
            _ => "#/components/schemas/Problem",
        };
        assert_eq!(bad_request, problem, "{method} {path}");
        // The request limits cover every route.
        let responses = &operation["responses"];
        assert_eq!(
            responses["408"]["content"]["application/problem+json"]["schema"]["$ref"], "#/components/schemas/Problem",
            "{method} {path}"
        );
        assert!(
            responses["503"]["headers"]["Retry-After"].is_object(),
            "{method} {path}"
        );
        let has_body = operation.get("requestBody").is_some();
        assert_eq!(operation["responses"].get("413").is_some(), has_body, "{method} {path}");
        assert_eq!(operation["responses"].get("415").is_some(), has_body, "{method} {path}");
        let parameters: Vec<&str> = operation["parameters"]
            .as_array()
            .map(|p| p.iter().filter_map(|p| p["name"].as_str()).collect())
            .unwrap_or_default();
        let is_data =
            path.starts_with("/api/") && !path.starts_with("/api/sharding/") && !path.starts_with("/api/host/");
        assert_eq!(parameters.contains(&KEYSPACE_HEADER), is_data, "{method} {path}");
        // Data operations may name a data host's shard; the header is optional off a host.
        assert_eq!(parameters.contains(&"X-Shardlite-Shard"), is_data, "{method} {path}");
        if path.starts_with("/api/sharding/") || path.starts_with("/api/host/") {
            assert!(operation["responses"].get("404").is_some(), "{method} {path}");
        }
    }
    // Constraints the handlers enforce are in the schema.
    let sql_request = &doc["components"]["schemas"]["SqlRequest"]["properties"]["sql"];
    assert_eq!(sql_request["minLength"], 1);
    assert_eq!(sql_request["pattern"], "\\S");
    let problem_schema = &doc["components"]["schemas"]["Problem"];
    for field in ["title", "status", "detail", "errorCode"] {
        assert!(
            problem_schema["required"].as_array().unwrap().contains(&json!(field)),
            "{field}"
        );
    }
    assert!(doc["components"]["schemas"]["Value"]["anyOf"].is_array());
    // No security scheme without an API key.
    assert!(doc.get("security").is_none());
    daemon.stop().await.unwrap();
}

/// Starts `shardlite serve` on `master` at port 0 with `extra` arguments and `RUST_LOG=log`, and
/// returns it with the base URL from its first stdout line.
#[cfg(all(unix, feature = "cli"))]
async fn start_serve(
    master: &std::path::Path,
    extra: &[&str],
    log: &str,
    api_key: Option<&str>,
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let mut command = Command::new(env!("CARGO_BIN_EXE_shardlite"));
    command
        .args(["serve", "--master"])
        .arg(master)
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .env_remove("SHARDLITE_API_KEY")
        .env("RUST_LOG", log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(key) = api_key {
        command.env("SHARDLITE_API_KEY", key);
    }
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    assert!(base.starts_with("http://127.0.0.1:") && !base.ends_with(":0"), "{base}");
    (child, base)
}

/// Stops a daemon from [`start_serve`] with SIGTERM, checks it exited cleanly, and returns its logs.
#[cfg(all(unix, feature = "cli"))]
async fn stop_serve(child: std::process::Child) -> String {
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let logs = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{:?}\n{logs}", output.status);
    logs
}

/// `shardlite serve` prints its bound address, serves, and exits cleanly on SIGTERM; at the
/// default log level it logs request totals, not a line per request.
#[cfg(all(unix, feature = "cli"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serve_command_prints_its_address_and_stops_on_sigterm() {
    let fixture = Fixture::new().await;
    let (child, base) = start_serve(
        &fixture.master,
        &["--transaction-timeout", "5"],
        "info",
        Some("from-the-environment"),
    )
    .await;
    let http = http_client();
    let refused = http.get(format!("{base}/api/info")).fetch().await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let info = http
        .get(format!("{base}/api/info"))
        .header("X-CSharpDB-Api-Key", "from-the-environment")
        .fetch()
        .await;
    json_ok(info, StatusCode::OK).await;

    let logs = stop_serve(child).await;
    assert!(logs.contains("SIGTERM"), "{logs}");
    assert!(!logs.contains("from-the-environment"), "the API key was logged: {logs}");
    // At the default level there is no line per request, only the totals (the refused request
    // counts as a client error).
    assert!(!logs.contains("request finished"), "a line per request at info: {logs}");
    assert!(
        logs.contains("served 2 request(s): 2 REST, 0 gRPC; 1 client error(s), 0 server error(s)"),
        "{logs}"
    );
}

/// At debug level each request has its line, with its route.
#[cfg(all(unix, feature = "cli"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serve_command_logs_each_request_at_debug_level() {
    let fixture = Fixture::new().await;
    let (child, base) = start_serve(&fixture.master, &[], "shardlite=debug", None).await;
    let answer = http_client()
        .post(format!("{base}/api/sql/execute"))
        .header("X-CSharpDB-Keyspace", "tenants")
        .header("X-CSharpDB-Shard-Key", "tenant-a")
        .json(&serde_json::json!({"sql": "SELECT 1"}))
        .fetch()
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
    let logs = stop_serve(child).await;
    assert!(logs.contains("request finished"), "{logs}");
    assert!(
        logs.contains("key=\"tenant-a\"") || logs.contains("key=tenant-a"),
        "{logs}"
    );
}

/// The crate's own REST client reads every answer of this surface back into the client types,
/// and maps 404s for missing objects to `None` / `false` / `0` as in-process clients do.
#[cfg(feature = "http")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crate_http_client_round_trips_through_the_daemon() {
    use shardlite::client::{
        CatalogAdmin, DocumentData, FanOut, Params, ProcedureDefinition, ProcedureParameter, RowData, SqlData,
        StoredData, Topology, TransactionData, Value,
    };
    use shardlite::transport::RemoteOptions;
    use shardlite::transport::http::HttpClient;
    use shardlite::{ErrorKind, RouteContext};

    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let admin = HttpClient::new(RemoteOptions::new(daemon.base_url.clone())).unwrap();
    let setup = admin.execute_sql_on_all_shards(ITEMS_DDL).await.unwrap();
    assert!(setup.iter().all(|outcome| outcome.error.is_none()), "{setup:?}");
    let client = admin.with_route(RouteContext::new("tenants", "tenant-a").unwrap());

    let none = admin.execute_sql("SELECT 1", Params::none()).await.unwrap_err();
    assert_eq!(none.kind(), ErrorKind::RouteRequired);
    client
        .execute_sql(
            "INSERT INTO items (id, tenant, name) VALUES (?1, ?2, ?3)",
            Params::from(vec![Value::Integer(1), "tenant-a".into(), Value::Blob(vec![0, 255])]),
        )
        .await
        .unwrap();
    let read = client
        .execute_read_only_sql("SELECT name FROM items WHERE id = ?1", Params::from(vec![1]))
        .await
        .unwrap();
    assert_eq!(read.rows, vec![vec![Value::Blob(vec![0, 255])]]);
    let refused = client
        .execute_read_only_sql("DELETE FROM items", Params::none())
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ReadOnly);
    assert_eq!(client.info().await.unwrap().table_count, 1);
    assert_eq!(client.list_tables().await.unwrap(), vec!["items".to_owned()]);
    assert_eq!(client.table_schema("items").await.unwrap().primary_key, "id");
    assert_eq!(client.count_rows("items").await.unwrap(), 1);
    assert_eq!(client.browse_rows("items", 1, 10).await.unwrap().total_rows, 1);

    let row = [
        ("id".to_owned(), Value::Integer(2)),
        ("tenant".to_owned(), "tenant-a".into()),
    ]
    .into();
    assert_eq!(client.insert_row("items", row).await.unwrap(), 1);
    let found = client.get_row("items", Value::Integer(2)).await.unwrap().unwrap();
    assert_eq!(found["tenant"], Value::Text("tenant-a".into()));
    assert_eq!(client.get_row("items", Value::Integer(99)).await.unwrap(), None);
    let missing_table = client.get_row("nope", Value::Integer(1)).await.unwrap_err();
    assert_eq!(missing_table.kind(), ErrorKind::NotFound);
    let rename = [("name".to_owned(), Value::from("two"))].into();
    assert_eq!(client.update_row("items", Value::Integer(2), rename).await.unwrap(), 1);
    assert_eq!(client.delete_row("items", Value::Integer(2)).await.unwrap(), 1);
    assert_eq!(client.delete_row("items", Value::Integer(2)).await.unwrap(), 0);

    client.put_document("c", "k", json!({ "a": 1 })).await.unwrap();
    assert_eq!(client.get_document("c", "k").await.unwrap(), Some(json!({ "a": 1 })));
    assert_eq!(client.get_document("c", "nope").await.unwrap(), None);
    assert_eq!(client.list_collections().await.unwrap(), vec!["c".to_owned()]);
    assert_eq!(client.count_documents("c").await.unwrap(), 1);
    assert_eq!(client.browse_documents("c", 1, 10).await.unwrap().documents.len(), 1);
    assert!(client.delete_document("c", "k").await.unwrap());
    assert!(!client.delete_document("c", "k").await.unwrap());
    client.put_document("c", "k2", json!(2)).await.unwrap();
    assert!(client.drop_collection("c").await.unwrap());
    assert!(!client.drop_collection("c").await.unwrap());

    client.put_saved_query("q", "SELECT 1").await.unwrap();
    assert_eq!(client.get_saved_query("q").await.unwrap().unwrap().sql_text, "SELECT 1");
    assert_eq!(client.list_saved_queries().await.unwrap().len(), 1);
    assert!(client.delete_saved_query("q").await.unwrap());
    assert_eq!(client.get_saved_query("q").await.unwrap(), None);

    let procedure = ProcedureDefinition {
        name: "add".into(),
        body_sql: "INSERT INTO items (id, tenant) VALUES (:id, 'tenant-a')".into(),
        parameters: vec![ProcedureParameter {
            name: "id".into(),
            required: true,
            default: Value::Null,
        }],
        description: None,
    };
    client.put_procedure(procedure).await.unwrap();
    assert_eq!(client.get_procedure("add").await.unwrap().unwrap().name, "add");
    assert_eq!(client.list_procedures().await.unwrap().len(), 1);
    let executed = client
        .execute_procedure("add", Params::named([("id", 5)]))
        .await
        .unwrap();
    assert_eq!(executed.rows_affected, 1);
    assert!(client.delete_procedure("add").await.unwrap());
    assert_eq!(client.get_procedure("add").await.unwrap(), None);

    let tx = client.begin_transaction().await.unwrap();
    assert!(tx.transaction_id.starts_with("csdbshard:1:s0:"));
    assert!(tx.expires_at_utc.is_some());
    client
        .execute_in_transaction(
            &tx.transaction_id,
            "INSERT INTO items (id, tenant) VALUES (6, 'x')",
            Params::none(),
        )
        .await
        .unwrap();
    let elsewhere = admin.with_route(RouteContext::new("tenants", "tenant-b").unwrap());
    let conflict = elsewhere.commit_transaction(&tx.transaction_id).await.unwrap_err();
    assert_eq!(conflict.kind(), ErrorKind::Conflict);
    client.commit_transaction(&tx.transaction_id).await.unwrap();
    assert_eq!(client.count_rows("items").await.unwrap(), 3);

    assert_eq!(admin.shard_map().await.unwrap().map_version, 1);
    let resolved = admin
        .resolve_route(&RouteContext::new("tenants", "tenant-b").unwrap())
        .await
        .unwrap();
    assert_eq!(resolved.shard_id, "s1");
    assert_eq!(admin.shard_status().await.unwrap().len(), 2);
    let counts = admin
        .execute_read_only_sql_on_all_shards("SELECT count(*) FROM items")
        .await
        .unwrap();
    assert_eq!(counts.len(), 2);
    assert_eq!(admin.catalog_state().await.unwrap().active_map.keyspace, "tenants");
    daemon.stop().await.unwrap();
}

/// Remote SQL cannot reach files beside the shard: ATTACH and VACUUM INTO are refused.
#[tokio::test]
async fn remote_sql_cannot_attach_or_vacuum_into_other_files() {
    let fixture = Fixture::new().await;
    let daemon = fixture.start().await;
    let http = http_client();
    let dir = fixture.dir_text();
    let target = format!("{dir}/stolen");
    for sql in [
        format!("ATTACH DATABASE '{target}' AS x"),
        format!("VACUUM INTO '{target}'"),
    ] {
        let response = routed(http.post(daemon.url("/api/sql/execute")), "tenant-a")
            .json(&json!({ "sql": sql }))
            .fetch()
            .await;
        let status = response.status();
        let text = response.text().await.unwrap();
        assert_eq!(status, StatusCode::FORBIDDEN, "{sql}: {text}");
        assert!(text.contains("\"errorCode\":\"forbidden_statement\""), "{text}");
    }
    assert!(!std::path::Path::new(&target).exists());
    let vacuum = routed(http.post(daemon.url("/api/sql/execute")), "tenant-a")
        .json(&json!({ "sql": "VACUUM" }))
        .fetch()
        .await;
    json_ok(vacuum, StatusCode::OK).await;
}

/// The probes answer without the API key: `/healthz` while the process serves, `/readyz` with
/// the active map version (null on a plain daemon); the document lists them without a key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness_probes_answer_without_a_key() {
    let keyed = ServerConfig {
        api_key: Some(Secret::new("probe-secret")),
        ..ServerConfig::default()
    };
    let sharded = Fixture::new().await;
    let plain = Fixture::plain();
    for (fixture, map_version) in [(&sharded, json!(1)), (&plain, Value::Null)] {
        let daemon = fixture.start_with(keyed.clone()).await;
        let health = json_ok(http_client().get(daemon.url("/healthz")).fetch().await, StatusCode::OK).await;
        assert_eq!(health["status"], "serving");
        let ready = json_ok(http_client().get(daemon.url("/readyz")).fetch().await, StatusCode::OK).await;
        assert_eq!(ready, json!({ "status": "ready", "mapVersion": map_version }));
        // The data API still needs the key.
        let info = http_client().get(daemon.url("/api/info")).fetch().await;
        assert_eq!(info.status(), StatusCode::UNAUTHORIZED);
        let doc = json_ok(
            http_client()
                .get(daemon.url("/openapi.json"))
                .header("X-CSharpDB-Api-Key", "probe-secret")
                .fetch()
                .await,
            StatusCode::OK,
        )
        .await;
        for path in ["/healthz", "/readyz"] {
            assert_eq!(doc["paths"][path]["get"]["security"], json!([{}]), "{path}");
        }
        daemon.stop().await.unwrap();
    }
}
