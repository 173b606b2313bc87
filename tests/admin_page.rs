//! The admin workspace at `/admin`, against a real daemon on `127.0.0.1:0`: its headers over
//! plain HTTP, and every view in a real headless Chromium driven over WebDriver (one browser for
//! all the checks). Screenshots of each view land in `target/admin-screenshots/`.
//!
//! Without Chromium and chromedriver the browser test skips (CI sets `SHARDLITE_REQUIRE_BROWSER=1`
//! and installs them, so there it runs for real).

#[path = "support/mod.rs"]
pub mod support;

use std::path::{Path, PathBuf};

use crate::support::browser::Browser;
use crate::support::daemon::{Daemon, http_client, start_daemon_on};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS};
use serde_json::{Value, json};
use shardlite::map::{ReplicaInfo, Secret, ShardDefinition, ShardingOptions};
use shardlite::server::ServerConfig;

const KEYSPACE: &str = "orders_by_month";
const XSS: &str = "<img src=x onerror=alert(1)>";
const API_KEY: &str = "admin-browser-key";
const API_KEY_HEADER: &str = "X-Admin-Test-Key";
const REPLICA_SECRET: &str = "replica-secret-never-shown";

fn screenshots() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target folder")
        .join("admin-screenshots")
}

fn keyed_config() -> ServerConfig {
    ServerConfig {
        api_key: Some(Secret::new(API_KEY)),
        api_key_header: API_KEY_HEADER.to_owned(),
        ..ServerConfig::default()
    }
}

/// POSTs `body` to `path` on `daemon`, on `route` when given, and returns the JSON answer.
async fn post(daemon: &Daemon, path: &str, route: Option<&str>, body: Value) -> Value {
    let mut request = http_client().post(daemon.url(path)).json(&body);
    if let Some(key) = route {
        request = request
            .header("X-CSharpDB-Keyspace", KEYSPACE)
            .header("X-CSharpDB-Shard-Key", key);
    }
    let response = request.send().await.expect("call the daemon");
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "POST {path}: {status} {body}");
    body
}

/// The order-history map with an `orders` table on every shard, two orders for each of seven
/// months, the hostile row on May's route, and one `customers` document there.
async fn seeded_orders(dir: &Path) -> Daemon {
    let master = crate::support::seed_master(dir, crate::support::orders_options()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    post(
        &daemon,
        "/api/sharding/sql/execute-all",
        None,
        json!({ "sql": "CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL, \
                        customer TEXT NOT NULL, order_number TEXT NOT NULL)" }),
    )
    .await;
    for month in [
        "2025-12", "2026-01", "2026-02", "2026-03", "2026-04", "2026-05", "2026-06",
    ] {
        for n in 1..=2 {
            post(
                &daemon,
                "/api/sql/execute",
                Some(month),
                json!({
                    "sql": "INSERT INTO orders (order_month, customer, order_number) VALUES (?1, ?2, ?3)",
                    "parameters": [month, format!("customer-{n}"), format!("SO-{month}-{n}")],
                }),
            )
            .await;
        }
    }
    post(
        &daemon,
        "/api/sql/execute",
        Some("2026-05"),
        json!({
            "sql": "INSERT INTO orders (order_month, customer, order_number) VALUES ('2026-05', ?1, 'SO-2026-05-XSS')",
            "parameters": [XSS],
        }),
    )
    .await;
    let document = http_client()
        .put(daemon.url("/api/collections/customers/documents/customer-1"))
        .header("X-CSharpDB-Keyspace", KEYSPACE)
        .header("X-CSharpDB-Shard-Key", "2026-05")
        .json(&json!({ "document": { "name": "Ada", "note": XSS } }))
        .send()
        .await
        .expect("put a document");
    assert!(document.status().is_success(), "{}", document.status());
    daemon
}

/// The order numbers in a shard file, in id order, read straight from SQLite.
fn orders_in(dir: &Path, shard: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(dir.join(format!("{shard}.db"))).expect("open the shard file");
    let mut statement = conn
        .prepare("SELECT order_number FROM orders ORDER BY id")
        .expect("prepare");
    statement
        .query_map([], |row| row.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

/// The text of every cell of the table matching `css`, row by row.
async fn cells(browser: &Browser, css: &str) -> Vec<Vec<String>> {
    let rows = browser
        .run(
            "return [...document.querySelectorAll(arguments[0] + ' tbody tr')]
               .map((tr) => [...tr.cells].map((td) => td.textContent));",
            vec![json!(css)],
        )
        .await;
    serde_json::from_value(rows).expect("table cells")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_served_without_the_key_with_strict_headers() {
    let dir = crate::support::temp_dir();
    let master = crate::support::seed_master(dir.path(), tenants_with_remote_replica(dir.path())).await;
    let daemon = start_daemon_on(&master, keyed_config()).await;
    let http = http_client();

    for (path, content_type) in [
        ("/admin", "text/html"),
        ("/admin/", "text/html"),
        ("/admin/assets/main.js", "text/javascript"),
        ("/admin/assets/api.js", "text/javascript"),
        ("/admin/assets/admin.css", "text/css"),
    ] {
        let response = http.get(daemon.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let headers = response.headers();
        assert!(
            headers[CONTENT_TYPE].to_str().unwrap().starts_with(content_type),
            "{path}"
        );
        let csp = headers[CONTENT_SECURITY_POLICY].to_str().unwrap();
        for directive in [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
            "object-src 'none'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp} lacks {directive}");
        }
        assert!(!csp.contains("unsafe-inline") && !csp.contains("http"), "{path}: {csp}");
        assert_eq!(headers[X_FRAME_OPTIONS], "DENY", "{path}");
        assert_eq!(headers[X_CONTENT_TYPE_OPTIONS], "nosniff", "{path}");
        let body = response.text().await.unwrap();
        assert!(!body.contains(API_KEY), "{path} holds the key");
    }
    let page = http
        .get(daemon.url("/admin"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("<title>shardlite admin</title>"), "{page}");
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "the page names another origin"
    );

    let missing = http.get(daemon.url("/admin/assets/nope.js")).send().await.unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_eq!(missing.headers()[X_FRAME_OPTIONS], "DENY");
    // The API the page calls still needs the key.
    let refused = http.get(daemon.url("/api/sharding/map")).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let allowed = http
        .get(daemon.url("/api/sharding/map"))
        .header(API_KEY_HEADER, API_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status(), StatusCode::OK);

    // The OpenAPI document lists the page as needing no key, unlike the API.
    let doc: Value = http
        .get(daemon.url("/openapi.json"))
        .header(API_KEY_HEADER, API_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let page = &doc["paths"]["/admin"]["get"];
    assert_eq!(page["security"], json!([{}]), "{page}");
    assert!(page["responses"]["200"]["content"]["text/html"].is_object(), "{page}");
    assert!(page["responses"].get("401").is_none(), "{page}");
    assert!(doc["paths"]["/api/sharding/map"]["get"]["responses"]["401"].is_object());
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workspace_works_in_a_real_browser() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let shots = screenshots();
    let _ = std::fs::remove_dir_all(&shots);

    api_key_prompt(&browser, &shots).await;

    let dir = crate::support::temp_dir();
    let daemon = seeded_orders(dir.path()).await;
    browser.goto(&daemon.url("/admin")).await;
    shards_view(&browser, &shots).await;
    buckets_view(&browser, &daemon, &shots).await;
    route_preview(&browser, &daemon, &shots).await;
    route_tabs(&browser, dir.path(), &shots).await;
    diagnostics(&browser, &shots).await;
    catalog_actions(&browser, &daemon, &shots).await;
    migrations(&browser, &daemon, &shots).await;
    atomic_transactions(&browser, &daemon, &shots).await;
    daemon.stop().await.unwrap();
    backups(&browser, &shots).await;

    browser.close().await;
}

/// The backups view, on a daemon with a backup place and a point-in-time archive: no set at
/// first; "Take a set now" lists the new set (id, map version, taken at, shards, bytes,
/// complete); a shard being written shows the archive's lag under its shard id; a set whose
/// copy went missing is shown incomplete, naming the shard.
async fn backups(browser: &Browser, shots: &Path) {
    let dir = crate::support::temp_dir();
    // The archive is one per process: every file opened for writing from now on is archived.
    shardlite::engine::archive::start_archive(&dir.path().join("archive")).expect("start the archive");
    let place = dir.path().join("backups");
    let master = crate::support::seed_master(dir.path(), crate::support::orders_options()).await;
    let config = ServerConfig {
        backup_dir: Some(place.clone()),
        ..ServerConfig::default()
    };
    let daemon = start_daemon_on(&master, config).await;
    post(
        &daemon,
        "/api/sharding/sql/execute-all",
        None,
        json!({ "sql": "CREATE TABLE orders (id INTEGER PRIMARY KEY, order_month TEXT NOT NULL)" }),
    )
    .await;
    let sharded = daemon.state.sharded().expect("sharded").clone();
    let shard_count = sharded.map().shards().len();
    let map_version = sharded.map().version();
    let written = sharded
        .resolve_route(&crate::support::orders_route("2026-05"))
        .expect("resolve")
        .shard_id;

    browser.goto(&daemon.url("/admin#backups")).await;
    browser
        .wait_until("no set yet", "return document.getElementById('backups-none') !== null;")
        .await;
    browser.click("#backups-take").await;
    browser
        .wait_until(
            "the set taken",
            "return document.getElementById('backups-taken') !== null;",
        )
        .await;
    let rows = cells(browser, "#backups-table").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let sets = shardlite::backup::list_sets(&place).expect("list the sets");
    let manifest = &sets[0].1;
    assert_eq!(rows[0][0], manifest.id, "{rows:?}");
    assert_eq!(rows[0][1], map_version.to_string(), "{rows:?}");
    assert_eq!(rows[0][2], manifest.taken_at, "{rows:?}");
    assert_eq!(rows[0][3], format!("{shard_count} ({shard_count} copied)"), "{rows:?}");
    assert!(rows[0][4].contains(" copied)"), "{rows:?}");
    assert_eq!(rows[0][5], "complete", "{rows:?}");

    // Writes to one shard, every 100 ms, until the page shows the archive following it.
    let writer = {
        let url = daemon.url("/api/sql/execute");
        tokio::spawn(async move {
            loop {
                let response = http_client()
                    .post(&url)
                    .header("X-CSharpDB-Keyspace", KEYSPACE)
                    .header("X-CSharpDB-Shard-Key", "2026-05")
                    .json(&json!({
                        "sql": "INSERT INTO orders (order_month) VALUES (?1)",
                        "parameters": ["2026-05"],
                    }))
                    .send()
                    .await
                    .expect("insert");
                assert!(response.status().is_success(), "{}", response.status());
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        })
    };
    // The shards the schema change wrote drop out once quiet for 2 s; the written one stays.
    let shows_written = format!(
        "const shards = [...document.querySelectorAll('#archive-table tbody tr')]\
           .map((tr) => tr.cells[0].textContent).filter((shard) => shard !== '(master)'); \
         return shards.length === 1 && shards[0] === {};",
        json!(written)
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        browser.click("#backups-refresh").await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        if browser.run(&shows_written, vec![]).await == Value::Bool(true) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the page never showed {written}'s lag"
        );
    }
    writer.abort();
    let lags = cells(browser, "#archive-table").await;
    let row = lags.iter().find(|row| row[0] == written).expect("the written shard");
    assert!(row[1].ends_with(" s"), "{lags:?}");
    assert!(
        lags.iter().all(|row| row[0] == written || row[0] == "(master)"),
        "{lags:?}"
    );
    assert!(shard_count > 1, "other shards to stay out of the list");
    browser.screenshot(shots, "13-backups").await;

    // A copy gone from the place: the set is no longer complete, and the page names the shards.
    let lost = &manifest.shards[0];
    std::fs::remove_file(place.join(&lost.file)).expect("remove a copy");
    browser.click("#backups-refresh").await;
    browser
        .wait_until(
            "the set incomplete",
            "const cell = document.querySelector('#backups-table tbody tr td:last-child'); \
             return cell !== null && cell.textContent.startsWith('missing');",
        )
        .await;
    let rows = cells(browser, "#backups-table").await;
    // Equal content is stored once: every shard whose copy was that object is named.
    let sharing: Vec<&str> = manifest
        .shards
        .iter()
        .filter(|copy| copy.file == lost.file)
        .map(|copy| copy.shard_id.as_str())
        .collect();
    assert_eq!(rows[0][5], format!("missing: {}", sharing.join(", ")), "{rows:?}");
    daemon.stop().await.unwrap();
}

/// The atomic transactions view says when nothing is unresolved, and lists a transaction whose
/// coordinator stopped after its prepares on each shard that holds it: the decision record
/// (`pending`) on its first participant and the intent (`prepared`) on both, with age and
/// participants.
async fn atomic_transactions(browser: &Browser, daemon: &Daemon, shots: &Path) {
    use shardlite::client::{AtomicStep, Params, Value as SqlValue};

    browser.click("button[data-view=atomic]").await;
    browser
        .wait_until(
            "nothing unresolved",
            "return document.getElementById('atomic-none') !== null;",
        )
        .await;
    let sharded = daemon.state.sharded().expect("sharded").clone();
    let months = [
        "2025-12", "2026-01", "2026-02", "2026-03", "2026-04", "2026-05", "2026-06",
    ];
    let shard_of = |month: &str| {
        sharded
            .resolve_route(&crate::support::orders_route(month))
            .expect("resolve")
            .shard_id
    };
    let first = months[0];
    let second = *months
        .iter()
        .find(|m| shard_of(m) != shard_of(first))
        .expect("two months on different shards");
    let mut tx = sharded.begin_atomic();
    for month in [first, second] {
        tx.execute(
            &crate::support::orders_route(month),
            "UPDATE orders SET customer = 'moved' WHERE order_number = ?1",
            Params::Positional(vec![SqlValue::Text(format!("SO-{month}-1"))]),
        )
        .await
        .expect("atomic update");
    }
    tx.commit_until(Some(AtomicStep::Prepared(1))).await.expect("prepared");
    let participants = format!("{}, {}", shard_of(first), shard_of(second));

    browser.click("#atomic-refresh").await;
    browser
        .wait_until(
            "three entries",
            "return document.querySelectorAll('#atomic-table tbody tr').length === 3;",
        )
        .await;
    let rows = cells(browser, "#atomic-table").await;
    let mut seen: Vec<(String, String)> = rows
        .iter()
        .map(|row| {
            assert_eq!(row[0], tx.id(), "{rows:?}");
            assert!(row[3].ends_with(" ms") || row[3].ends_with(" s"), "an age: {rows:?}");
            assert_eq!(row[4], participants, "{rows:?}");
            (row[1].clone(), row[2].clone())
        })
        .collect();
    seen.sort();
    let mut expected = vec![
        (shard_of(first), "pending".to_owned()),
        (shard_of(first), "prepared".to_owned()),
        (shard_of(second), "prepared".to_owned()),
    ];
    expected.sort();
    assert_eq!(seen, expected);
    assert!(browser.text("#atomic-count").await.starts_with("3 unresolved"));
    browser.screenshot(shots, "12-atomic-transactions").await;
}

/// With `--api-key` the page asks for the key, refuses a wrong one clearly, keeps the right one
/// in session storage only and sends it in the header the daemon names.
async fn api_key_prompt(browser: &Browser, shots: &Path) {
    let dir = crate::support::temp_dir();
    let master = crate::support::seed_master(dir.path(), tenants_with_remote_replica(dir.path())).await;
    let daemon = start_daemon_on(&master, keyed_config()).await;
    browser.goto(&daemon.url("/admin")).await;

    let prompt = browser.text("#key-form:not([hidden]) #key-message").await;
    assert!(prompt.contains("requires an API key"), "{prompt}");
    assert!(
        browser.all("nav#views:not([hidden])").await.is_empty(),
        "views shown without a key"
    );
    browser.screenshot(shots, "01-api-key-prompt").await;

    browser.type_into("#api-key", "not-the-key").await;
    browser.click("#key-submit").await;
    browser
        .wait_until(
            "the wrong key is refused",
            "const m = document.querySelector('#key-message.error');
             return !!m && m.textContent.includes('refused that API key');",
        )
        .await;
    let stored = browser
        .run("return sessionStorage.getItem('shardlite.admin.apiKey');", vec![])
        .await;
    assert_eq!(stored, Value::Null, "a refused key is forgotten");
    browser.screenshot(shots, "02-api-key-refused").await;

    browser.type_into("#api-key", API_KEY).await;
    browser.click("#key-submit").await;
    browser
        .wait_until(
            "the shards of the keyed daemon are listed",
            "return document.querySelectorAll('#shards-table tbody tr').length === 3;",
        )
        .await;
    // The replica: its metadata and failed probe are shown, its API key never.
    let rows = cells(browser, "#shards-table").await;
    let replica = &rows[2];
    assert_eq!(replica[0], "s0-replica");
    assert_eq!(replica[1], "Replica");
    assert!(replica[3].starts_with("unhealthy"), "{replica:?}");
    assert!(replica[4].contains("127.0.0.1:9"), "{replica:?}");
    assert_eq!(
        replica[5],
        "follows s0, lag 4096 bytes, last replicated 2026-11-30T12:00:00Z, promotion eligible"
    );
    assert_eq!(rows[0][3], "healthy");
    let page_text = browser.run("return document.documentElement.outerHTML;", vec![]).await;
    assert!(
        !page_text.as_str().unwrap().contains(REPLICA_SECRET),
        "a shard's secret is on the page"
    );
    browser.screenshot(shots, "03-shards-with-a-replica").await;
    let storage = browser
        .run(
            "return [sessionStorage.getItem('shardlite.admin.apiKey'), localStorage.length,
                     document.cookie, location.href, document.body.innerText.includes(arguments[0])];",
            vec![json!(API_KEY)],
        )
        .await;
    assert_eq!(storage[0], API_KEY, "the key lives in session storage");
    assert_eq!(storage[1], 0, "nothing in local storage");
    assert_eq!(storage[2], "", "no cookie");
    assert!(!storage[3].as_str().unwrap().contains(API_KEY), "the key is in the URL");
    assert_eq!(storage[4], false, "the key is shown on the page");
    browser.run("sessionStorage.clear();", vec![]).await;
    daemon.stop().await.unwrap();
}

/// The two-shard `tenants` map plus a replica of `s0` behind an unreachable daemon, defined with
/// an API key that must never be shown.
fn tenants_with_remote_replica(dir: &Path) -> ShardingOptions {
    let mut options = crate::support::tenants_options(dir);
    options.shards.push(ShardDefinition {
        shard_id: "s0-replica".to_owned(),
        enabled: true,
        role: Some("Replica".to_owned()),
        replica: ReplicaInfo {
            primary_shard_id: Some("s0".to_owned()),
            promotion_eligible: true,
            replication_lag_bytes: Some(4096),
            last_replicated_utc: Some("2026-11-30T12:00:00Z".to_owned()),
        },
        data_source: None,
        // Nothing listens on the discard port, so the probe reports the replica unhealthy.
        endpoint: Some("http://127.0.0.1:9".to_owned()),
        transport: Some("grpc".to_owned()),
        remote_shard_id: None,
        connection_string: None,
        api_key: Some(Secret::new(REPLICA_SECRET)),
        api_key_header_name: None,
    });
    options
}

/// The shard list matches the seeded map, with a probed health for each.
async fn shards_view(browser: &Browser, shots: &Path) {
    browser
        .wait_until(
            "four shards are listed",
            "return document.querySelectorAll('#shards-table tbody tr').length === 4;",
        )
        .await;
    let rows = cells(browser, "#shards-table").await;
    let map = crate::support::orders_options();
    for (row, shard) in rows.iter().zip(&map.shards) {
        assert_eq!(row[0], shard.shard_id);
        assert_eq!(row[1], "Primary");
        assert_eq!(row[2], "yes");
        assert_eq!(row[3], "healthy");
        assert_eq!(row[6], "4", "buckets owned by {}", shard.shard_id);
        assert_eq!(row[7], "1", "pins on {}", shard.shard_id);
    }
    // The browser enforces the policy: injected inline script and style do not apply.
    let blocked = browser
        .run(
            "const script = document.createElement('script');
             script.textContent = 'window.inlineRan = true;';
             document.body.append(script);
             const probe = document.createElement('p');
             probe.setAttribute('style', 'color: rgb(255, 0, 0)');
             document.body.append(probe);
             const color = getComputedStyle(probe).color;
             probe.remove();
             script.remove();
             return [window.inlineRan === true, color];",
            vec![],
        )
        .await;
    assert_eq!(blocked[0], false, "an inline script ran");
    assert_ne!(blocked[1], "rgb(255, 0, 0)", "an inline style applied");
    let summary = browser.text("#daemon-summary").await;
    assert!(
        summary.contains("orders_by_month") && summary.contains("map version 1"),
        "{summary}"
    );
    browser.screenshot(shots, "04-shards").await;
}

/// The bucket bar has one segment per range of the seeded map, coloured by owner, and marks
/// every pin; selecting a bucket names its owner and range.
async fn buckets_view(browser: &Browser, daemon: &Daemon, shots: &Path) {
    browser.click("button[data-view=buckets]").await;
    browser.wait_for("#pins-table").await;

    // The strip under the bar carries each bucket's heat: the busiest bucket of the seeded
    // inserts is the darkest cell, an idle one is clear.
    let heat: Value = http_client()
        .get(daemon.url("/api/sharding/stats/heat"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let hottest = heat["buckets"][0]["bucket"]
        .as_u64()
        .expect("the seeded inserts heat a bucket");
    let heat_cells = browser
        .run(
            "return [...document.querySelectorAll('#bucket-heat .heat-cell')].map((c) =>
               [Number(c.dataset.start), Number(c.dataset.heat), getComputedStyle(c).backgroundColor]);",
            vec![],
        )
        .await;
    let heat_cells = heat_cells.as_array().unwrap();
    assert_eq!(heat_cells.len(), 16, "one cell per bucket: {heat_cells:?}");
    let darkest = heat_cells
        .iter()
        .max_by(|a, b| a[1].as_f64().unwrap().total_cmp(&b[1].as_f64().unwrap()))
        .unwrap();
    assert_eq!(darkest[0].as_u64(), Some(hottest), "{heat_cells:?}");
    assert_eq!(darkest[2], "rgb(197, 48, 48)", "{heat_cells:?}");
    let idle = heat_cells
        .iter()
        .find(|cell| cell[1].as_f64() == Some(0.0))
        .expect("an idle bucket");
    assert_eq!(idle[2], "rgba(197, 48, 48, 0)", "{heat_cells:?}");
    let summary = browser.text("#heat-summary").await;
    assert!(
        summary.starts_with("Heat (requests lately, halving every 60 s)"),
        "{summary}"
    );

    let segments = browser
        .run(
            "return [...document.querySelectorAll('#bucket-bar .segment')].map((s) =>
               [Number(s.dataset.start), Number(s.dataset.end), s.dataset.shard, s.className]);",
            vec![],
        )
        .await;
    let expected: Vec<Value> = crate::support::orders_options()
        .bucket_ranges
        .iter()
        .enumerate()
        .map(|(i, r)| {
            json!([
                r.start_bucket_inclusive,
                r.end_bucket_exclusive,
                r.shard_id,
                format!("segment owner-{i}")
            ])
        })
        .collect();
    assert_eq!(segments, Value::Array(expected));
    let pins = browser
        .run(
            "return [...document.querySelectorAll('#pin-markers .pin')].map((p) => p.dataset.key).sort();",
            vec![],
        )
        .await;
    assert_eq!(pins, json!(["2025-12", "2026-04", "2026-05", "2026-06"]));
    let pin_rows = cells(browser, "#pins-table").await;
    let listed: Vec<(String, String)> = pin_rows.iter().map(|r| (r[0].clone(), r[1].clone())).collect();
    let mut seeded: Vec<(String, String)> = crate::support::orders_options().exact_key_pins.into_iter().collect();
    seeded.sort();
    assert_eq!(listed, seeded);

    // Selecting a bucket on the bar: a click inside shard-2's range [8, 12).
    browser.click("#bucket-bar .segment[data-shard=shard-2]").await;
    let selected = browser.text("#bucket-selected").await;
    let clicked: u32 = selected
        .strip_prefix("bucket ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{selected}"));
    assert!((8..12).contains(&clicked), "{selected}");
    assert!(selected.ends_with("is owned by shard-2 (range [8, 12))"), "{selected}");
    let hover = browser
        .wait_for("#bucket-bar .segment[data-shard=shard-2]")
        .await
        .attr("title")
        .await
        .unwrap();
    assert_eq!(hover.as_deref(), Some("buckets [8, 12) → shard-2"));

    browser.type_into("#bucket-number", "5").await;
    browser.click("#bucket-form button[type=submit]").await;
    let selected = browser.text("#bucket-selected").await;
    assert!(
        selected.contains("bucket 5 is owned by shard-1 (range [4, 8))"),
        "{selected}"
    );
    browser.screenshot(shots, "05-bucket-space").await;
}

/// `orders_by_month` / `2026-06` previews as bucket 15 on `shard-0` by its pin, the same answer
/// as the resolve endpoint.
async fn route_preview(browser: &Browser, daemon: &Daemon, shots: &Path) {
    browser.click("button[data-view=route]").await;
    let keyspace = browser.wait_for("#route-keyspace").await.prop("value").await.unwrap();
    assert_eq!(keyspace.as_deref(), Some(KEYSPACE), "the keyspace is prefilled");
    browser.type_into("#route-key", "2026-06").await;
    browser.click("#route-submit").await;
    let table = browser.wait_for("#route-table").await;
    assert_eq!(table.attr("data-bucket").await.unwrap().as_deref(), Some("15"));
    assert_eq!(table.attr("data-shard").await.unwrap().as_deref(), Some("shard-0"));
    assert_eq!(table.attr("data-source").await.unwrap().as_deref(), Some("pin"));
    let rows = cells(browser, "#route-table").await;
    let value = |name: &str| {
        rows.iter()
            .find(|row| row[0] == name)
            .map(|row| row[1].clone())
            .unwrap_or_else(|| panic!("no '{name}' row in {rows:?}"))
    };
    let resolved = post(
        daemon,
        "/api/sharding/resolve",
        None,
        json!({ "keyspace": KEYSPACE, "key": "2026-06" }),
    )
    .await;
    assert_eq!(value("canonical text"), "15:orders_by_month|7:2026-06");
    assert_eq!(
        value("token"),
        format!("{} (0x{})", resolved["token"], resolved["tokenHex"].as_str().unwrap())
    );
    assert_eq!(value("bucket"), "15");
    assert_eq!(value("shard"), "shard-0");
    assert!(value("decided by").starts_with("pin"), "{rows:?}");
    browser.screenshot(shots, "06-route-preview").await;
}

/// A tab on 2026-05 runs SQL on shard-1 only (the rows are exactly shard-1's), renders the
/// hostile row as text, browses a table and looks up a document there; a second tab keeps its
/// own route.
async fn route_tabs(browser: &Browser, dir: &Path, shots: &Path) {
    browser.click("button[data-view=query]").await;
    browser.type_into("#newtab-key", "2026-05").await;
    browser.click("#newtab-submit").await;
    let tab = browser.wait_for(".tab-panel[data-key='2026-05']").await;
    let id = tab.attr("id").await.unwrap().expect("a tab id");
    assert_eq!(browser.text(&format!("#{id} [data-role=tab-shard]")).await, "shard-1");

    let sql = "SELECT order_number, order_month, customer FROM orders ORDER BY id";
    browser.type_into(&format!("#{id}-sql"), sql).await;
    browser.click(&format!("#{id}-run")).await;
    browser.wait_for(&format!("#{id}-sql-result table")).await;
    let rows = cells(browser, &format!("#{id}-sql-result")).await;
    let shown: Vec<String> = rows.iter().map(|row| row[0].clone()).collect();
    assert_eq!(shown, orders_in(dir, "shard-1"), "the rows are shard-1's, all of them");
    for other in ["shard-0", "shard-2", "shard-3"] {
        for order in orders_in(dir, other) {
            assert!(!shown.contains(&order), "{order} of {other} shown on the 2026-05 tab");
        }
    }
    assert!(shown.contains(&"SO-2026-05-1".to_owned()), "{shown:?}");

    // The hostile row is text: the cell holds the markup, no element was made, nothing ran.
    assert!(rows.iter().any(|row| row[2] == XSS), "{rows:?}");
    let images = browser
        .run("return document.querySelectorAll('main img').length;", vec![])
        .await;
    assert_eq!(images, 0, "the row became markup");
    assert!(browser.client.get_alert_text().await.is_err(), "an alert opened");

    browser.click(&format!("#{id}-browse")).await;
    browser.wait_for(&format!("#{id}-table-result table")).await;
    let page = cells(browser, &format!("#{id}-table-result")).await;
    assert_eq!(page.len(), orders_in(dir, "shard-1").len());

    browser
        .wait_for(&format!("#{id}-collection option[value=customers]"))
        .await;
    browser.type_into(&format!("#{id}-doc-key"), "customer-1").await;
    browser.click(&format!("#{id}-lookup")).await;
    let document = browser.text(&format!("#{id}-doc-result pre")).await;
    assert!(
        document.contains("\"name\": \"Ada\"") && document.contains(XSS),
        "{document}"
    );
    browser.screenshot(shots, "07-route-tab").await;

    // A second tab has its own route and shard; the first keeps its own.
    browser.type_into("#newtab-key", "2026-06").await;
    browser.click("#newtab-submit").await;
    let second = browser.wait_for(".tab-panel[data-key='2026-06']").await;
    let second_id = second.attr("id").await.unwrap().expect("a tab id");
    assert_eq!(
        browser.text(&format!("#{second_id} [data-role=tab-shard]")).await,
        "shard-0"
    );
    browser.type_into(&format!("#{second_id}-sql"), sql).await;
    browser.click(&format!("#{second_id}-run")).await;
    browser.wait_for(&format!("#{second_id}-sql-result table")).await;
    let second_rows: Vec<String> = cells(browser, &format!("#{second_id}-sql-result"))
        .await
        .into_iter()
        .map(|row| row[0].clone())
        .collect();
    assert_eq!(second_rows, orders_in(dir, "shard-0"));
    let first_tab_shard = browser
        .run(
            "return document.getElementById(arguments[0]).dataset.shard;",
            vec![json!(id)],
        )
        .await;
    assert_eq!(first_tab_shard, "shard-1");
}

/// Read-only fan-out shows every shard's own answer.
async fn diagnostics(browser: &Browser, shots: &Path) {
    browser.click("button[data-view=diagnostics]").await;
    browser
        .type_into("#diagnostics-sql", "SELECT count(*) AS orders FROM orders")
        .await;
    browser.click("#diagnostics-run").await;
    browser
        .wait_until(
            "every shard answered",
            "return document.querySelectorAll('.shard-outcome[data-ok=true] table').length === 4;",
        )
        .await;
    let counts = browser
        .run(
            "return [...document.querySelectorAll('.shard-outcome')].map((o) =>
               [o.dataset.shard, Number(o.querySelector('tbody td').textContent)]);",
            vec![],
        )
        .await;
    let total: i64 = counts
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| pair[1].as_i64().unwrap())
        .sum();
    assert_eq!(total, 15, "{counts}");
    assert_eq!(counts[0][0], "shard-0");
    browser.screenshot(shots, "08-diagnostics").await;

    // A write is refused before anything runs, with the daemon's reason.
    browser.type_into("#diagnostics-sql", "DELETE FROM orders").await;
    browser.click("#diagnostics-run").await;
    let refused = browser.text("#diagnostics-error").await;
    assert!(!refused.is_empty(), "no reason given");
}

/// The migrations view lists history when the daemon has the endpoints, and says clearly that
/// migrations are not available when it does not.
async fn migrations(browser: &Browser, daemon: &Daemon, shots: &Path) {
    let available = http_client()
        .get(daemon.url("/api/sharding/migrations"))
        .send()
        .await
        .unwrap()
        .status()
        != StatusCode::NOT_FOUND;
    browser.click("button[data-view=migrations]").await;
    browser
        .wait_until(
            "the migrations view loaded",
            "return document.getElementById('view-migrations').dataset.state === 'ready';",
        )
        .await;
    if available {
        browser.wait_for("#migrations-history > *").await;
        assert!(browser.all("#migrations-unavailable").await.is_empty());
        // A dry run of May's orders to shard-2 plans three rows and changes nothing.
        browser.type_into("#migration-key", "2026-05").await;
        browser.type_into("#migration-destination", "shard-2").await;
        browser.click("#migration-dry-run").await;
        browser
            .wait_until(
                "the dry run answered",
                "return !!document.querySelector('#migration-plan, #migration-action-result .message.error');",
            )
            .await;
        let refused = browser.all("#migration-action-result .message.error").await;
        if let Some(refused) = refused.first() {
            panic!("the dry run failed: {}", refused.text().await.unwrap());
        }
        let plan = cells(browser, "#migration-plan").await;
        assert!(plan.iter().any(|row| row[0] == "orders" && row[1] == "3"), "{plan:?}");
        let resolved = post(
            daemon,
            "/api/sharding/resolve",
            None,
            json!({ "keyspace": KEYSPACE, "key": "2026-05" }),
        )
        .await;
        assert_eq!(resolved["shardId"], "shard-1", "a dry run moved the key");

        // Start it for real, with activation: confirmed with what moves, then its receipt.
        browser.click("#migration-activate").await;
        browser.click("#migration-start-button").await;
        let changes = browser.text("#confirm-dialog #confirm-changes").await;
        assert!(changes.contains("key 2026-05: shard-1 → shard-2"), "{changes}");
        browser.click("#confirm-ok").await;
        browser.wait_for("#migration-detail[data-status=Activated]").await;
        let receipts = cells(browser, "#migration-receipts").await;
        let orders = receipts
            .iter()
            .find(|row| row[0] == "orders")
            .expect("a receipt for orders");
        assert_eq!(
            (orders[2].as_str(), orders[3].as_str(), orders[6].as_str()),
            ("3", "3", "yes"),
            "{receipts:?}"
        );
        assert_eq!(orders[4], orders[5], "the checksums differ: {receipts:?}");
        browser.wait_for("#migrations-table button[data-migration]").await;
        let resolved = post(
            daemon,
            "/api/sharding/resolve",
            None,
            json!({ "keyspace": KEYSPACE, "key": "2026-05" }),
        )
        .await;
        assert_eq!(resolved["shardId"], "shard-2", "the migration did not move the key");
    } else {
        let text = browser.text("#migrations-unavailable").await;
        assert!(text.contains("not available on this daemon"), "{text}");
        assert!(
            !browser.wait_for("#migrations-body").await.is_displayed().await.unwrap(),
            "the migration actions are offered without endpoints"
        );
    }
    browser.screenshot(shots, "11-migrations").await;
}

/// Validate, apply and activate a new map through the page, each confirmed with what changes;
/// the daemon's active map version changes.
async fn catalog_actions(browser: &Browser, daemon: &Daemon, shots: &Path) {
    browser.click("button[data-view=catalog]").await;
    browser.wait_for("#catalog-active-version[data-version='1']").await;
    browser.wait_for("#catalog-no-pending").await;

    // Pin July to a shard its bucket does not belong to: an ownership change, acknowledged as
    // metadata-only (July has no orders).
    let july = post(
        daemon,
        "/api/sharding/resolve",
        None,
        json!({ "keyspace": KEYSPACE, "key": "2026-07" }),
    )
    .await;
    let from = july["shardId"].as_str().unwrap().to_owned();
    let to = if from == "shard-3" { "shard-2" } else { "shard-3" };
    let proposed = browser
        .run(
            "const editor = document.getElementById('catalog-map');
             const map = JSON.parse(editor.value);
             map.exactKeyPins['2026-07'] = arguments[0];
             editor.value = JSON.stringify(map, null, 2);
             return map.mapVersion;",
            vec![json!(to)],
        )
        .await;
    assert_eq!(
        proposed, 2,
        "the editor starts from the active map with the next version"
    );
    browser.click("#catalog-ack").await;
    browser.type_into("#catalog-operator", "browser-test").await;
    browser.type_into("#catalog-comment", "July on its own shard").await;

    browser.click("#catalog-validate").await;
    browser.wait_for("#catalog-validation[data-valid=true]").await;

    browser.click("#catalog-apply").await;
    let changes = browser.text("#confirm-dialog #confirm-changes").await;
    assert!(
        changes.contains(&format!("pin 2026-07 moves from {from} to {to}")),
        "{changes}"
    );
    browser.screenshot(shots, "09-catalog-confirm-apply").await;
    browser.click("#confirm-ok").await;
    browser.wait_for("#catalog-applied").await;
    browser.wait_for("#catalog-pending[data-version='2']").await;
    let map = http_client().get(daemon.url("/api/sharding/map")).send().await.unwrap();
    let map: Value = map.json().await.unwrap();
    assert_eq!(map["mapVersion"], 1, "apply changed the active map");

    browser.click("#catalog-activate").await;
    let changes = browser.text("#confirm-dialog #confirm-changes").await;
    assert!(changes.contains("active version 1 → 2"), "{changes}");
    assert!(changes.contains("pin 2026-07 moves"), "{changes}");
    browser.click("#confirm-ok").await;
    browser.wait_for("#catalog-activated").await;
    browser.wait_for("#catalog-active-version[data-version='2']").await;
    browser.wait_for("#daemon-summary[data-map-version='2']").await;
    let history = cells(browser, "#catalog-history").await;
    assert!(
        history.iter().any(|row| row[1] == "2" && row[2] == "browser-test"),
        "{history:?}"
    );
    browser.screenshot(shots, "10-catalog").await;

    let map = http_client().get(daemon.url("/api/sharding/map")).send().await.unwrap();
    let map: Value = map.json().await.unwrap();
    assert_eq!(map["mapVersion"], 2, "{map}");
    assert_eq!(map["exactKeyPins"]["2026-07"], to, "{map}");
}

/// With keys with scopes, a `read` key sees the shards, and an admin view shows the daemon's
/// refusal naming the missing scope instead of data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_key_sees_the_shards_and_is_refused_the_catalog_by_scope() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let dir = crate::support::temp_dir();
    let master = crate::support::seed_master(dir.path(), crate::support::tenants_options(dir.path())).await;
    let keys = shardlite::server::keys::KeyRing::parse(
        r#"[{"name": "viewer", "key": "viewer-key", "scopes": ["read"], "keyspaces": ["*"]}]"#,
    )
    .expect("valid keys");
    let config = ServerConfig {
        api_keys: Some(keys),
        api_key_header: API_KEY_HEADER.to_owned(),
        ..ServerConfig::default()
    };
    let daemon = start_daemon_on(&master, config).await;
    browser.goto(&daemon.url("/admin")).await;
    browser.wait_for("#key-form:not([hidden])").await;
    browser.type_into("#api-key", "viewer-key").await;
    browser.click("#key-submit").await;
    browser
        .wait_until(
            "the shards are listed for the read key",
            "return document.querySelectorAll('#shards-table tbody tr').length === 2;",
        )
        .await;
    browser.click("button[data-view=catalog]").await;
    browser
        .wait_until(
            "the catalog view shows the scope refusal",
            "return document.body.innerText.includes(\"needs the 'admin' scope\")
                 && document.body.innerText.includes(\"'viewer'\");",
        )
        .await;
    browser.screenshot(&screenshots(), "20-read-key-refused-catalog").await;
    browser.close().await;
    daemon.stop().await.unwrap();
}

/// A page of the shard table's rows, read from the page: `[first shard, row count]`.
const SHARD_ROWS: &str = "const rows = document.querySelectorAll('#shards-table tbody tr');
    return [rows.length ? rows[0].cells[0].textContent : null, rows.length];";

/// 10,000 shards (20 enabled, one of them broken): the shard table shows a page at a time with
/// counts over the whole map, the bucket bar draws a bounded number of segments, and the page
/// keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_map_of_ten_thousand_shards_stays_usable() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let dir = crate::support::temp_dir();
    let master =
        crate::support::seed_master(dir.path(), crate::support::many::many_shards(10_000, |i| i % 500 != 0)).await;
    std::fs::write(dir.path().join("shards/s500.db"), vec![7u8; 4096]).unwrap();
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    browser.goto(&daemon.url("/admin")).await;
    browser
        .wait_until(
            "the first page of shards is listed",
            "return document.querySelectorAll('#shards-table tbody tr').length === 100;",
        )
        .await;
    assert_eq!(browser.run(SHARD_ROWS, vec![]).await, json!(["s0", 100]));
    assert_eq!(
        browser.text("#shards-summary").await,
        "10000 shard(s): 20 enabled (19 healthy, 1 unavailable), 9980 disabled"
    );
    assert_eq!(browser.text("#shards-range").await, "shards 1 to 100 of 10000");
    let elements = "return document.getElementsByTagName('*').length;";
    let dom = browser.run(elements, vec![]).await.as_u64().unwrap();
    assert!(dom < 2_500, "the shards view holds {dom} elements");

    browser.click("#shards-next").await;
    browser
        .wait_until(
            "the second page is listed",
            "return document.querySelector('#shards-range').textContent === 'shards 101 to 200 of 10000';",
        )
        .await;
    assert_eq!(browser.run(SHARD_ROWS, vec![]).await, json!(["s100", 100]));

    browser.click("#shards-unhealthy").await;
    browser
        .wait_until(
            "only the broken shard is listed",
            "const rows = document.querySelectorAll('#shards-table tbody tr');
             return rows.length === 1 && rows[0].cells[0].textContent === 's500';",
        )
        .await;
    assert_eq!(browser.text("#shards-range").await, "shards 1 to 1 of 1");

    browser.click("button[data-view=buckets]").await;
    browser.wait_for("#bucket-bar .segment").await;
    let bar = browser
        .run(
            "const segments = [...document.querySelectorAll('#bucket-bar .segment')];
             return [segments.length, Number(segments[0].dataset.start),
                     Number(segments[segments.length - 1].dataset.end),
                     document.querySelectorAll('#bucket-legend .swatch').length,
                     document.querySelector('#legend-more').textContent];",
            vec![],
        )
        .await;
    assert_eq!(
        bar,
        json!([256, 0, 40_000, 32, "and 9968 more shards (the Shards view lists them)"])
    );
    // A slice of the bar: a click names the exact owner of the bucket under the pointer.
    browser.click("#bucket-bar .segment[data-start='20000']").await;
    let selected = browser.text("#bucket-selected").await;
    let bucket: u32 = selected
        .strip_prefix("bucket ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{selected}"));
    let owner = bucket / 4;
    assert!(
        selected.ends_with(&format!(
            "is owned by s{owner} (range [{}, {}))",
            owner * 4,
            owner * 4 + 4
        )),
        "{selected}"
    );
    browser.type_into("#bucket-number", "39999").await;
    browser.click("#bucket-form button[type=submit]").await;
    let selected = browser.text("#bucket-selected").await;
    assert!(
        selected.contains("bucket 39999 is owned by s9999 (range [39996, 40000))"),
        "{selected}"
    );
    let dom = browser.run(elements, vec![]).await.as_u64().unwrap();
    assert!(dom < 2_500, "the page holds {dom} elements with the bucket view open");
    browser.screenshot(&screenshots(), "20-ten-thousand-shards").await;

    browser.close().await;
    daemon.stop().await.unwrap();
}

/// The order-history map with a writable directory `orders_by_id` (two entries, one of them
/// with a hostile lookup key) and a read-only `archive_by_id` (one entry).
fn orders_with_directories() -> ShardingOptions {
    use shardlite::map::{DirectoryDefinition, DirectoryEntry, EntryState, ShardMap};

    let mut map = crate::support::orders_options();
    map.directories = vec![
        DirectoryDefinition::writable("orders_by_id", KEYSPACE),
        DirectoryDefinition {
            read_only: true,
            ..DirectoryDefinition::writable("archive_by_id", KEYSPACE)
        },
    ];
    let resolved = ShardMap::new(map.clone()).expect("a valid map");
    let entry = |directory: &str, lookup_key: &str, month: &str| DirectoryEntry {
        directory_name: directory.into(),
        lookup_key: lookup_key.into(),
        target_keyspace: KEYSPACE.into(),
        route_key: month.into(),
        shard_id: resolved
            .resolve(KEYSPACE, month)
            .expect("the month resolves")
            .shard_id
            .into(),
        map_version: 1,
        state: EntryState::Active,
    };
    map.directory_entries = vec![
        entry("orders_by_id", "SO-1", "2026-05"),
        entry("orders_by_id", XSS, "2026-06"),
        entry("archive_by_id", "AR-1", "2026-05"),
    ];
    map
}

/// The state and shard of `key`'s entry in `orders_by_id`, read through the REST API.
async fn entry_of(daemon: &Daemon, key: &str) -> (Value, Value) {
    let body = json!({ "directoryName": "orders_by_id", "lookupKey": key, "includeInactive": true });
    let found = post(daemon, "/api/sharding/directory/resolve", None, body).await;
    (
        found["entry"]["state"].clone(),
        found["routeResolution"]["shardId"].clone(),
    )
}

/// Picks `operation` and fills the change form for `key`.
async fn fill_change(browser: &Browser, operation: &str, key: &str) {
    browser
        .run(
            "document.getElementById('directory-operation').value = arguments[0];
             document.getElementById('directory-key').value = '';",
            vec![json!(operation)],
        )
        .await;
    browser.type_into("#directory-key", key).await;
}

/// The Directories tab: entries a page at a time (markup in a lookup key shown as text),
/// resolving, a change confirmed and written, a cancelled one not written, and a refusal shown
/// with its issue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_directories_tab_lists_resolves_and_changes_entries() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let dir = crate::support::temp_dir();
    let master = crate::support::seed_master(dir.path(), orders_with_directories()).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    let shots = screenshots();
    browser.goto(&daemon.url("/admin")).await;
    browser.click("button[data-view=directories]").await;
    browser.wait_for("#directory-entries[data-count='2']").await;
    let rows = cells(&browser, "#directory-entries").await;
    let keys: Vec<&str> = rows.iter().map(|row| row[0].as_str()).collect();
    assert_eq!(keys, [XSS, "SO-1"], "{rows:?}");
    assert!(browser.all("img").await.is_empty(), "a lookup key was parsed as HTML");

    // A page of one: next shows the second entry, previous the first again.
    browser
        .run("document.getElementById('directory-limit').value = '1';", vec![])
        .await;
    browser
        .run(
            "document.getElementById('directory-select').dispatchEvent(new Event('change'));",
            vec![],
        )
        .await;
    browser.wait_for("#directory-range").await;
    browser
        .wait_until(
            "the first page of one",
            "return document.getElementById('directory-range').textContent === 'entries 1 to 1 of 2';",
        )
        .await;
    browser.click("#directory-next").await;
    browser
        .wait_until(
            "the second page",
            "return document.getElementById('directory-range').textContent === 'entries 2 to 2 of 2';",
        )
        .await;
    assert_eq!(cells(&browser, "#directory-entries").await[0][0], "SO-1");
    assert!(
        browser
            .run("return document.getElementById('directory-next').disabled;", vec![])
            .await
            == json!(true)
    );

    browser.type_into("#directory-lookup", "SO-1").await;
    browser.click("#directory-resolve").await;
    let (_, shard) = entry_of(&daemon, "SO-1").await;
    browser
        .wait_for(&format!(
            "#directory-resolution[data-shard='{}']",
            shard.as_str().unwrap()
        ))
        .await;

    // Reserve SO-2 for June, confirmed with what it writes, and activated at once.
    fill_change(&browser, "reserve", "SO-2").await;
    browser.type_into("#directory-route-key", "2026-06").await;
    browser.type_into("#directory-operator", "browser-test").await;
    browser.click("#directory-submit").await;
    let changes = browser.text("#confirm-dialog #confirm-changes").await;
    assert!(changes.contains("reserve entry SO-2 in orders_by_id"), "{changes}");
    assert!(changes.contains(&format!("route {KEYSPACE} / 2026-06")), "{changes}");
    assert!(changes.contains("activated at once"), "{changes}");
    browser.screenshot(&shots, "21-directories-confirm").await;
    browser.click("#confirm-ok").await;
    browser.wait_for("#directory-result[data-status=Reserved]").await;
    assert_eq!(entry_of(&daemon, "SO-2").await.0, "Reserved");
    browser.wait_for("#daemon-summary[data-map-version='2']").await;

    // A cancelled change writes nothing.
    fill_change(&browser, "disable", "SO-1").await;
    browser.click("#directory-submit").await;
    browser.click("#confirm-cancel").await;
    browser.wait_for("#directory-cancelled").await;
    assert_eq!(entry_of(&daemon, "SO-1").await.0, "Active");

    fill_change(&browser, "activate", "SO-2").await;
    browser.click("#directory-submit").await;
    browser.click("#confirm-ok").await;
    browser.wait_for("#directory-result[data-status=Activated]").await;
    assert_eq!(entry_of(&daemon, "SO-2").await.0, "Active");

    // A read-only directory refuses, and the page shows why.
    browser
        .run(
            "document.getElementById('directory-select').value = 'archive_by_id';",
            vec![],
        )
        .await;
    fill_change(&browser, "disable", "AR-1").await;
    browser.click("#directory-submit").await;
    browser.click("#confirm-ok").await;
    browser.wait_for("#directory-result[data-status=Rejected]").await;
    let refused = browser.text("#directory-result").await;
    assert!(refused.contains("directory-read-only"), "{refused}");
    browser.screenshot(&shots, "22-directories").await;
    browser.close().await;
    daemon.stop().await.unwrap();
}

/// A map past the echo limit (1,500 pins): the catalog view counts it instead of listing it,
/// and its editor holds a patch, so applying from the page adds a pin without dropping the
/// others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summarised_map_is_counted_and_changed_by_a_patch() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let dir = crate::support::temp_dir();
    let mut map = crate::support::tenants_options(dir.path());
    map.exact_key_pins = (0..1_500)
        .map(|n| (format!("tenant-{n:05}"), "s0".to_owned()))
        .collect();
    let master = crate::support::seed_master(dir.path(), map).await;
    let daemon = start_daemon_on(&master, ServerConfig::default()).await;
    browser.goto(&daemon.url("/admin")).await;
    browser.click("button[data-view=catalog]").await;
    browser.wait_for("#catalog-active[data-summarised=true]").await;
    let counts = cells(&browser, "#catalog-active").await;
    assert_eq!(counts[0][5], "1500", "{counts:?}");
    let proposed = browser
        .run(
            "const editor = document.getElementById('catalog-map');
             const patch = JSON.parse(editor.value);
             patch.exactKeyPins['tenant-new'] = 's0';
             editor.value = JSON.stringify(patch);
             return patch;",
            vec![],
        )
        .await;
    assert_eq!(
        proposed,
        json!({ "mapVersion": 2, "exactKeyPins": { "tenant-new": "s0" } })
    );
    browser.click("#catalog-ack").await;
    browser.click("#catalog-apply").await;
    browser.wait_for("#confirm-dialog #confirm-changes").await;
    browser.click("#confirm-ok").await;
    browser.wait_for("#catalog-applied").await;
    let state = http_client()
        .get(daemon.url("/api/sharding/catalog"))
        .send()
        .await
        .unwrap();
    let state: Value = state.json().await.unwrap();
    assert_eq!(state["pendingMap"]["summary"]["pinCount"], 1_501, "{state}");
    browser.close().await;
    daemon.stop().await.unwrap();
}
