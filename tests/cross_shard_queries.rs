//! Queries across shards, differentially: generated queries over generated rows spread on 1, 3
//! and 8 shards, each compared with the same query on one SQLite file holding every row; and
//! every construct that cannot be answered exactly, refused before any shard runs it.
//!
//! The seed comes from `SHARDLITE_QUERY_SEED` when set, else from the clock; a failure prints it.

mod common;

use std::path::Path;

use common::{path_str, temp_dir};
use shardlite::client::{Params, ShardedClient, Value};
use shardlite::map::{BucketRange, ShardDefinition, ShardMap, ShardingOptions};
use shardlite::{ErrorKind, RouteContext};

const SCHEMA: &str = "CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, \
    region TEXT COLLATE NOCASE, n INTEGER, big INTEGER, r REAL, name TEXT, b BLOB, m); \
    CREATE TABLE customers (tenant TEXT PRIMARY KEY, tier TEXT, since INTEGER);";

/// A small seeded generator (splitmix64), so a failing run can be repeated from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n).unwrap()).unwrap()
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn int(&mut self, n: usize) -> i64 {
        i64::try_from(self.below(n)).unwrap()
    }
    fn byte(&mut self, n: usize) -> u8 {
        u8::try_from(self.below(n)).unwrap()
    }
    fn real(&mut self, n: usize) -> f64 {
        f64::from(u32::try_from(self.below(n)).unwrap())
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

fn seed() -> u64 {
    std::env::var("SHARDLITE_QUERY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
                .try_into()
                .unwrap_or(u64::MAX)
        })
}

fn map_of(dir: &Path, shards: usize) -> ShardMap {
    let buckets = 64;
    let per = buckets / shards;
    ShardMap::new(ShardingOptions {
        keyspace: "tenants".into(),
        map_version: 1,
        virtual_bucket_count: i64::try_from(buckets).unwrap(),
        shards: (0..shards)
            .map(|i| ShardDefinition::local(format!("s{i}"), path_str(&dir.join(format!("s{i}.db")))))
            .collect(),
        bucket_ranges: (0..shards)
            .map(|i| {
                let end = if i + 1 == shards { buckets } else { (i + 1) * per };
                BucketRange::new(
                    i64::try_from(i * per).unwrap(),
                    i64::try_from(end).unwrap(),
                    format!("s{i}"),
                )
            })
            .collect(),
        exact_key_pins: Default::default(),
    })
    .unwrap()
}

fn generated_rows(rng: &mut Rng, count: usize) -> Vec<Vec<Value>> {
    let regions = ["East", "east", "EAST", "West", "west", "north", "North ", ""];
    let names = [
        "alpha",
        "Alpha",
        "beta",
        "BETA",
        "gamma",
        "delta",
        "Zed",
        "zed",
        "é-accent",
        "",
    ];
    (0..count)
        .map(|i| {
            let tenant = format!("tenant-{}", rng.below(12));
            let region = if rng.chance(10) {
                Value::Null
            } else {
                rng.pick(&regions).into()
            };
            let n = match rng.below(10) {
                0 => Value::Null,
                1 => Value::Integer(-(rng.int(1000))),
                _ => Value::Integer(rng.int(20) - 5),
            };
            let big = if rng.chance(30) {
                Value::Null
            } else {
                Value::Integer((1_i64 << 61) + rng.int(1 << 20))
            };
            let r = match rng.below(8) {
                0 => Value::Null,
                1 => Value::Real(-(rng.real(100)) / 8.0),
                2 => Value::Real(0.1 * rng.real(50)),
                _ => Value::Real(rng.real(40) / 4.0 - 3.0),
            };
            let name = if rng.chance(15) {
                Value::Null
            } else {
                rng.pick(&names).into()
            };
            let b = match rng.below(4) {
                0 => Value::Null,
                1 => Value::Blob(vec![]),
                _ => Value::Blob(vec![rng.byte(4), rng.byte(256)]),
            };
            let m = match rng.below(6) {
                0 => Value::Null,
                1 => Value::Integer(rng.int(7) - 3),
                // Never equal to an integer: min and max keep whichever of equal values came first.
                2 => Value::Real(rng.real(7) / 2.0 + 0.25),
                3 => Value::Text(rng.pick(&["x", "X", "y", "10"]).into()),
                4 => Value::Blob(vec![rng.byte(3)]),
                _ => Value::Integer(i64::MIN + rng.int(3)),
            };
            vec![
                Value::Integer(i64::try_from(i).unwrap() + 1),
                tenant.into(),
                region,
                n,
                big,
                r,
                name,
                b,
                m,
            ]
        })
        .collect()
}

/// Builds `shards` shard files and one reference file holding every row.
async fn fixture(dir: &Path, shards: usize, rows: &[Vec<Value>]) -> (ShardedClient, rusqlite::Connection) {
    let sharded = ShardedClient::from_map(map_of(dir, shards)).await.unwrap();
    sharded.execute_sql_on_all_shards(SCHEMA).await.unwrap();
    let reference = rusqlite::Connection::open(dir.join("all.db")).unwrap();
    reference.execute_batch(SCHEMA).unwrap();
    let insert = "INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
    for row in rows {
        let tenant = row[1].as_str().unwrap();
        let routed = sharded.for_route(RouteContext::new("tenants", tenant).unwrap());
        shardlite::client::DataClient::execute_sql(&routed, insert, Params::Positional(row.clone()))
            .await
            .unwrap();
        reference
            .execute(insert, rusqlite::params_from_iter(row.iter()))
            .unwrap();
    }
    for tenant in 0..12 {
        let tenant = format!("tenant-{tenant}");
        let values = vec![
            Value::from(tenant.as_str()),
            Value::from(["gold", "silver", "Gold"][tenant.len() % 3]),
            Value::Integer(i64::try_from(tenant.len()).unwrap()),
        ];
        let sql = "INSERT INTO customers VALUES (?1, ?2, ?3)";
        let routed = sharded.for_route(RouteContext::new("tenants", &tenant).unwrap());
        shardlite::client::DataClient::execute_sql(&routed, sql, Params::Positional(values.clone()))
            .await
            .unwrap();
        reference
            .execute(sql, rusqlite::params_from_iter(values.iter()))
            .unwrap();
    }
    (sharded, reference)
}

/// One generated query: its text, values, and whether its ORDER BY makes the row order total
/// (`Some(false)`: a LIMIT without a total order, so only the row count is compared).
struct Generated {
    sql: String,
    params: Vec<Value>,
    ordered: Option<bool>,
}

const WHERES: &[&str] = &[
    "n > ?",
    "n IS NULL OR r < ?",
    "region = 'east'",
    "name LIKE 'a%'",
    "tenant IN (SELECT tenant FROM customers WHERE tier = 'gold')",
    "b IS NOT NULL AND n BETWEEN -3 AND ?",
    "m > 0",
];

fn where_clause(rng: &mut Rng, params: &mut Vec<Value>) -> String {
    if rng.chance(40) {
        return String::new();
    }
    let predicate = rng.pick(WHERES);
    for _ in predicate.matches('?') {
        params.push(Value::Integer(rng.int(10) - 2));
    }
    format!(" WHERE {predicate}")
}

fn plain_query(rng: &mut Rng) -> Generated {
    let columns = [
        "id",
        "tenant",
        "region",
        "n",
        "big",
        "r",
        "name",
        "b",
        "m",
        "n % 3 AS n3",
        "lower(name)",
        "r * 2",
    ];
    let keys = [
        "n",
        "big",
        "r",
        "name",
        "region",
        "m",
        "b",
        "lower(name)",
        "n % 3",
        "name COLLATE NOCASE",
        "3",
    ];
    let mut params = Vec::new();
    let selected: Vec<&str> = (0..1 + rng.below(4)).map(|_| rng.pick(&columns)).collect();
    let filter = where_clause(rng, &mut params);
    let star = rng.chance(10);
    let list = if star { "*".to_owned() } else { selected.join(", ") };
    let mut sql = format!("SELECT {list} FROM orders{filter}");
    let mut ordered = None;
    if rng.chance(80) {
        let mut terms: Vec<String> = (0..rng.below(3))
            .map(|_| {
                let key = rng.pick(&keys);
                let key = match key {
                    "3" if star => "n",
                    "3" if selected.len() < 3 => "1",
                    other => other,
                };
                let direction = rng.pick(&["", " ASC", " DESC"]);
                let nulls = rng.pick(&["", "", " NULLS FIRST", " NULLS LAST"]);
                format!("{key}{direction}{nulls}")
            })
            .collect();
        terms.push(rng.pick(&["id", "id DESC"]).to_owned());
        sql.push_str(&format!(" ORDER BY {}", terms.join(", ")));
        // The id is unique, so the order is total when the id is among the selected columns.
        ordered = Some(true);
    }
    if rng.chance(60) {
        sql.push_str(&format!(" LIMIT {}", rng.below(30)));
        if rng.chance(50) {
            sql.push_str(" OFFSET ?");
            params.push(Value::Integer(rng.int(20)));
        }
        if ordered.is_none() {
            ordered = Some(false);
        }
    }
    Generated { sql, params, ordered }
}

fn distinct_query(rng: &mut Rng) -> Generated {
    let columns = ["lower(region)", "n % 3", "name", "typeof(m)", "b", "n"];
    let mut params = Vec::new();
    let mut selected: Vec<&str> = (0..1 + rng.below(2)).map(|_| rng.pick(&columns)).collect();
    selected.dedup();
    let filter = where_clause(rng, &mut params);
    let mut sql = format!("SELECT DISTINCT {} FROM orders{filter}", selected.join(", "));
    let mut ordered = None;
    if rng.chance(70) {
        let terms: Vec<String> = (1..=selected.len())
            .map(|i| format!("{i}{}", rng.pick(&["", " DESC"])))
            .collect();
        sql.push_str(&format!(" ORDER BY {}", terms.join(", ")));
        ordered = Some(true);
        if rng.chance(50) {
            sql.push_str(&format!(" LIMIT {} OFFSET {}", rng.below(8), rng.below(4)));
        }
    }
    Generated { sql, params, ordered }
}

fn aggregate_query(rng: &mut Rng) -> Generated {
    let groups = [
        "tenant",
        "lower(region)",
        "n % 3",
        "name IS NULL",
        "typeof(m)",
        "region",
    ];
    let aggregates = [
        "count(*)",
        "count(n)",
        "count(DISTINCT n)",
        "sum(n)",
        "total(r)",
        "avg(n)",
        "avg(r)",
        "min(n)",
        "max(r)",
        "min(name)",
        "max(name)",
        "sum(DISTINCT n)",
        "count(DISTINCT region)",
        "lower(max(region))",
        "sum(big)",
        "avg(big)",
        "count(b)",
        "max(b)",
        "min(m)",
        "max(m)",
        "count(*) FILTER (WHERE n > 0)",
        "sum(n) + count(*)",
        "avg(DISTINCT r)",
    ];
    let mut params = Vec::new();
    let group: Vec<&str> = if rng.chance(25) {
        Vec::new()
    } else {
        let mut g: Vec<&str> = (0..1 + rng.below(2)).map(|_| rng.pick(&groups)).collect();
        g.dedup();
        g
    };
    // A NOCASE group's own value is any of its spellings: select it lowered.
    let shown: Vec<String> = group
        .iter()
        .map(|g| {
            if *g == "region" {
                "lower(region)".to_owned()
            } else {
                (*g).to_owned()
            }
        })
        .collect();
    let mut items = shown.clone();
    items.extend((0..1 + rng.below(3)).map(|_| rng.pick(&aggregates).to_owned()));
    let filter = where_clause(rng, &mut params);
    let mut sql = format!("SELECT {} FROM orders{filter}", items.join(", "));
    if !group.is_empty() {
        sql.push_str(&format!(" GROUP BY {}", group.join(", ")));
    }
    if rng.chance(30) {
        let having = rng.pick(&[
            "count(*) > ?",
            "sum(n) < ?",
            "max(r) IS NOT NULL",
            "count(DISTINCT name) >= ?",
        ]);
        for _ in having.matches('?') {
            params.push(Value::Integer(rng.int(6)));
        }
        sql.push_str(&format!(" HAVING {having}"));
    }
    let mut ordered = group.is_empty().then_some(true);
    if !group.is_empty() && rng.chance(75) {
        // The group keys (as shown) are unique per row, so ordering by all of them is total.
        let mut terms: Vec<String> = Vec::new();
        if rng.chance(40) {
            terms.push(
                rng.pick(&["count(*) DESC", "sum(n)", "min(n) DESC NULLS FIRST"])
                    .to_owned(),
            );
        }
        terms.extend((1..=shown.len()).map(|i| format!("{i}{}", rng.pick(&["", " DESC"]))));
        sql.push_str(&format!(" ORDER BY {}", terms.join(", ")));
        ordered = Some(true);
        if rng.chance(40) {
            sql.push_str(&format!(" LIMIT {} OFFSET {}", 1 + rng.below(5), rng.below(3)));
        }
    }
    Generated { sql, params, ordered }
}

fn join_query(rng: &mut Rng) -> Generated {
    let (sql, ordered) = match rng.below(3) {
        0 => (
            "SELECT o.id, c.tier, o.n FROM orders o JOIN customers c ON c.tenant = o.tenant ORDER BY c.tier, o.id LIMIT 15",
            Some(true),
        ),
        1 => (
            "SELECT c.tier, count(*), sum(o.n) FROM orders o JOIN customers c ON c.tenant = o.tenant GROUP BY c.tier ORDER BY 1",
            Some(true),
        ),
        _ => (
            "SELECT o.tenant, c.since FROM orders o LEFT JOIN customers c ON c.tenant = o.tenant AND c.tier = 'gold' WHERE o.n > 3",
            None,
        ),
    };
    Generated {
        sql: sql.to_owned(),
        params: Vec::new(),
        ordered,
    }
}

fn generate(rng: &mut Rng) -> Generated {
    match rng.below(10) {
        0..=3 => plain_query(rng),
        4 => distinct_query(rng),
        5..=8 => aggregate_query(rng),
        _ => join_query(rng),
    }
}

fn reference_answer(
    conn: &rusqlite::Connection,
    sql: &str,
    params: &[Value],
) -> Result<(Vec<String>, Vec<Vec<Value>>), String> {
    let mut stmt = conn.prepare(sql).map_err(|e| e.to_string())?;
    let names = stmt.column_names().into_iter().map(str::to_owned).collect();
    let width = stmt.column_count();
    let mut rows = stmt
        .query(rusqlite::params_from_iter(params.iter()))
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(|e| e.to_string())? {
        out.push((0..width).map(|i| row.get::<_, Value>(i).unwrap()).collect());
    }
    Ok((names, out))
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Real(x), Value::Real(y)) => x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

fn sort_key(row: &[Value]) -> String {
    row.iter()
        .map(|v| match v {
            Value::Real(r) => format!("R{r:.6e}"),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join("|")
}

fn same_rows(mut ours: Vec<Vec<Value>>, mut theirs: Vec<Vec<Value>>, ordered: Option<bool>) -> bool {
    if ordered == Some(false) {
        return ours.len() == theirs.len();
    }
    if ordered.is_none() {
        ours.sort_by_key(|r| sort_key(r));
        theirs.sort_by_key(|r| sort_key(r));
    }
    ours.len() == theirs.len()
        && ours
            .iter()
            .zip(&theirs)
            .all(|(a, b)| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_queries_answer_as_one_file_would() {
    let seed = seed();
    let mut rng = Rng(seed);
    let rows = generated_rows(&mut rng, 300);
    let mut compared = 0;
    let mut answered = 0;
    for shards in [1, 3, 8] {
        let dir = temp_dir();
        let (sharded, reference) = fixture(dir.path(), shards, &rows).await;
        for _ in 0..170 {
            let query = generate(&mut rng);
            let expected = reference_answer(&reference, &query.sql, &query.params);
            let found = sharded
                .query_all_shards(&query.sql, Params::Positional(query.params.clone()))
                .await;
            let context = || {
                format!(
                    "seed {seed} (SHARDLITE_QUERY_SEED={seed}), {shards} shards\n  {}\n  values {:?}",
                    query.sql, query.params
                )
            };
            match (found, expected) {
                (Ok(found), Ok((names, expected))) => {
                    answered += 1;
                    assert_eq!(found.column_names, names, "{}", context());
                    assert!(
                        same_rows(found.rows.clone(), expected.clone(), query.ordered),
                        "{}\n  across shards: {:?}\n  one file:      {:?}",
                        context(),
                        found.rows,
                        expected
                    );
                }
                (Err(found), Err(expected)) => {
                    assert!(
                        found.kind() != ErrorKind::UnsupportedCrossShardQuery,
                        "{}\n  refused: {found}",
                        context()
                    );
                    if expected.contains("integer overflow") {
                        assert!(found.to_string().contains("integer overflow"), "{}: {found}", context());
                    }
                }
                (Ok(found), Err(expected)) => {
                    panic!(
                        "{}\n  one file failed ({expected}) but across shards gave {:?}",
                        context(),
                        found.rows
                    )
                }
                // Over one file SQLite stops computing groups once a LIMIT is met, so a group
                // whose sum overflows may never be finished; each shard finishes all of its
                // groups. An error where one file answers is the documented difference, never
                // a different answer.
                (Err(found), Ok(_))
                    if found.to_string().contains("integer overflow") && query.sql.contains(" LIMIT ") => {}
                (Err(found), Ok((_, expected))) => {
                    panic!(
                        "{}\n  across shards failed ({found}) but one file gave {expected:?}",
                        context()
                    )
                }
            }
            compared += 1;
        }
    }
    assert!(compared >= 500, "{compared} queries compared");
    // Errors on both sides (an overflowing sum) must stay the exception, or little is proven.
    assert!(
        answered * 10 >= compared * 8,
        "only {answered} of {compared} queries answered"
    );
}

#[tokio::test]
async fn constructs_that_cannot_be_answered_exactly_are_refused_before_any_shard_runs() {
    let dir = temp_dir();
    let mut rng = Rng(7);
    let rows = generated_rows(&mut rng, 40);
    let (sharded, _reference) = fixture(dir.path(), 3, &rows).await;
    for (sql, construct) in [
        (
            "SELECT n, row_number() OVER (ORDER BY n) FROM orders",
            "window function",
        ),
        (
            "SELECT id FROM orders WHERE n IN (SELECT n FROM orders ORDER BY n LIMIT 3)",
            "LIMIT in a subquery",
        ),
        ("SELECT random() FROM orders", "random()"),
        ("SELECT id FROM orders WHERE id > changes()", "changes()"),
        ("SELECT last_insert_rowid() FROM orders", "last_insert_rowid()"),
        ("SELECT date('now') FROM orders", "date('now')"),
        ("DELETE FROM orders", "DELETE"),
        ("INSERT INTO orders (id, tenant) VALUES (1000, 'x')", "INSERT"),
        ("SELECT id FROM orders; SELECT id FROM orders", "several statements"),
        ("SELECT tenant, n FROM orders GROUP BY tenant", "column n"),
        ("SELECT group_concat(name) FROM orders", "group_concat()"),
        (
            "SELECT count(*) FROM (SELECT DISTINCT tenant FROM orders)",
            "DISTINCT in a subquery",
        ),
        (
            "SELECT id FROM orders WHERE n > (SELECT avg(n) FROM orders)",
            "aggregate function avg() in a subquery",
        ),
        ("SELECT tenant FROM orders UNION SELECT tenant FROM customers", "UNION"),
        (
            "SELECT o.id FROM orders o RIGHT JOIN customers c ON c.tenant = o.tenant",
            "RIGHT JOIN",
        ),
        ("SELECT 1 + 1", "reads no table"),
        (
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5) SELECT x FROM c",
            "WITH RECURSIVE",
        ),
        ("SELECT my_function(n) FROM orders", "function my_function()"),
        ("SELECT DISTINCT * FROM orders", "SELECT DISTINCT with *"),
    ] {
        let err = sharded.query_all_shards(sql, Params::none()).await.expect_err(sql);
        assert_eq!(err.kind(), ErrorKind::UnsupportedCrossShardQuery, "{sql}: {err}");
        assert_eq!(err.kind().code(), "unsupported_cross_shard_query");
        assert!(err.to_string().contains(construct), "{sql}: {err}");
    }
    let count = sharded
        .query_all_shards("SELECT count(*) FROM orders", Params::none())
        .await
        .unwrap();
    assert_eq!(count.rows, vec![vec![Value::Integer(40)]], "a refused write ran");
}

#[tokio::test]
async fn the_blocking_client_answers_the_same_query() {
    let dir = temp_dir();
    let mut rng = Rng(11);
    let rows = generated_rows(&mut rng, 60);
    let (sharded, reference) = fixture(dir.path(), 3, &rows).await;
    drop(sharded);
    let map = map_of(dir.path(), 3);
    let sql = "SELECT tenant, count(*), avg(r) FROM orders GROUP BY tenant ORDER BY 2 DESC, 1 LIMIT 5";
    let found = tokio::task::spawn_blocking(move || {
        let blocking = shardlite::client::blocking::ShardedClient::from_map(map).unwrap();
        blocking.query_all_shards(sql, Params::none()).unwrap()
    })
    .await
    .unwrap();
    let (names, expected) = reference_answer(&reference, sql, &[]).unwrap();
    assert_eq!(found.column_names, names);
    assert!(same_rows(found.rows, expected, Some(true)));
}

#[tokio::test]
async fn the_result_caps_apply_to_the_whole_query_and_a_limit_keeps_partials_small() {
    let dir = temp_dir();
    let mut rng = Rng(5);
    let rows = generated_rows(&mut rng, 90);
    let (sharded, _reference) = fixture(dir.path(), 3, &rows).await;
    let mut largest = 0;
    for shard in sharded
        .execute_read_only_sql_on_all_shards("SELECT count(*) FROM orders")
        .await
        .unwrap()
    {
        largest = largest.max(shard.result.unwrap().rows[0][0].as_i64().unwrap());
    }
    drop(sharded);
    // Every shard's rows fit the cap; all of them together do not.
    let engine = shardlite::engine::EngineConfig {
        max_result_rows: usize::try_from(largest).unwrap() + 1,
        ..Default::default()
    };
    let capped = ShardedClient::from_map_with(
        map_of(dir.path(), 3),
        shardlite::client::ShardedClientOptions::with_engine(engine),
    )
    .await
    .unwrap();
    assert!(largest + 1 < 90, "one shard holds nearly every row");
    let err = capped
        .query_all_shards("SELECT id, name FROM orders", Params::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ResultTooLarge, "{err}");
    let newest = capped
        .query_all_shards(
            "SELECT id FROM orders ORDER BY id DESC LIMIT 5 OFFSET 2",
            Params::none(),
        )
        .await
        .unwrap();
    assert_eq!(
        newest.rows,
        (84..=88).rev().map(|id| vec![Value::Integer(id)]).collect::<Vec<_>>()
    );
    let grouped = capped
        .query_all_shards("SELECT tenant, count(*) FROM orders GROUP BY tenant", Params::none())
        .await
        .unwrap();
    assert_eq!(grouped.rows.len(), 12);
}
