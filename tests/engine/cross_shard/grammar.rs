//! The data and the small grammar of the differential test of queries across shards: rows with
//! NULLs, ties, negative and large integers, reals, mixed-case text and blobs, and queries
//! covering every construct the merge supports.

use shardlite::client::Value;

/// A small seeded generator (splitmix64), so a failing run can be repeated from its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n).unwrap()).unwrap()
    }
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    pub fn int(&mut self, n: usize) -> i64 {
        i64::try_from(self.below(n)).unwrap()
    }
    pub fn byte(&mut self, n: usize) -> u8 {
        u8::try_from(self.below(n)).unwrap()
    }
    pub fn real(&mut self, n: usize) -> f64 {
        f64::from(u32::try_from(self.below(n)).unwrap())
    }
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

pub fn generated_rows(rng: &mut Rng, count: usize) -> Vec<Vec<Value>> {
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

/// One generated query: its text, values, and whether its ORDER BY makes the row order total
/// (`Some(false)`: a LIMIT without a total order, so only the row count is compared).
pub struct Generated {
    pub sql: String,
    pub params: Vec<Value>,
    pub ordered: Option<bool>,
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

pub fn generate(rng: &mut Rng) -> Generated {
    match rng.below(10) {
        0..=3 => plain_query(rng),
        4 => distinct_query(rng),
        5..=8 => aggregate_query(rng),
        _ => join_query(rng),
    }
}
