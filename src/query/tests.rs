//! Plans of queries across shards: what each shard runs and what the merge runs.

use super::*;

fn shard(sql: &str, params: Params) -> String {
    plan(sql, params).expect("plan").shard_statement(None).expect("shard").0
}

fn refusal(sql: &str) -> String {
    match plan(sql, Params::none()) {
        Err(Error::UnsupportedCrossShardQuery { construct }) => construct.into(),
        other => panic!("{sql}: expected a refusal, got {other:?}"),
    }
}

#[test]
fn order_by_limit_is_pushed_down_as_limit_plus_offset() {
    assert_eq!(
        shard(
            "SELECT id FROM orders ORDER BY total DESC LIMIT 5 OFFSET 10",
            Params::none()
        ),
        "SELECT id, total AS \"shardlite_k0\" FROM orders ORDER BY total DESC LIMIT 15"
    );
}

#[test]
fn aggregates_ship_partial_states() {
    assert_eq!(
        shard(
            "SELECT region, avg(total), count(DISTINCT customer) FROM orders WHERE total > ? GROUP BY region",
            Params::from(vec![1])
        ),
        "SELECT region, customer AS \"shardlite_d0\", total(total) AS \"shardlite_p0\", count(total) AS \"shardlite_p1\" \
         FROM orders WHERE total > ?1 GROUP BY region, customer"
    );
}

#[test]
fn constructs_that_cannot_be_exact_are_refused() {
    for (sql, construct) in [
        ("SELECT a FROM t; SELECT b FROM t", "several statements"),
        ("DELETE FROM t", "DELETE"),
        ("SELECT random() FROM t", "random()"),
        ("SELECT row_number() OVER () FROM t", "window function"),
        (
            "SELECT a FROM t WHERE a IN (SELECT a FROM u LIMIT 3)",
            "LIMIT in a subquery",
        ),
        ("SELECT a, count(*) FROM t", "column a"),
        ("SELECT group_concat(a) FROM t", "group_concat"),
        ("SELECT 1", "reads no table"),
        ("SELECT a FROM t UNION SELECT a FROM u", "UNION"),
        ("SELECT * FROM t RIGHT JOIN u ON t.a = u.a", "RIGHT JOIN"),
        ("SELECT a FROM t WHERE a > (SELECT avg(a) FROM t)", "in a subquery"),
    ] {
        let found = refusal(sql);
        assert!(found.contains(construct), "{sql}: {found}");
    }
}

#[test]
fn the_longest_query_accepted_plans_within_a_small_stack() {
    // Chains are as deep as they are long; the depth cap bounds them. Debug builds use the
    // most stack per level; a runtime's threads have 2 MiB, and half is left here.
    for chain in [" + 1", " AND 1", " || 'x'"] {
        let sql = format!("SELECT a{} FROM t ORDER BY a LIMIT 3", chain.repeat(MAX_DEPTH - 4));
        let planned = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || plan(&sql, Params::none()).map(|p| p.shard_statement(None).is_ok()))
            .expect("thread")
            .join()
            .expect("no stack overflow");
        assert!(matches!(planned, Ok(true)), "{planned:?}");
        let longer = format!("SELECT a{} FROM t", chain.repeat(MAX_DEPTH + 1));
        assert!(refusal(&longer).contains("deep"));
    }
}

#[test]
fn many_operators_side_by_side_are_not_deep() {
    let items: Vec<String> = (0..60).map(|i| format!("a + {i} * 2 - b")).collect();
    let sql = format!(
        "SELECT {} FROM t WHERE a IN ({})",
        items.join(", "),
        vec!["1"; 500].join(", ")
    );
    plan(&sql, Params::none()).expect("planned");
}

#[test]
fn plain_queries_merge_without_sqlite_only_when_that_is_exact() {
    let merges = |sql: &str| {
        let params = if sql.contains('?') {
            Params::from(vec![2])
        } else {
            Params::none()
        };
        let plan = plan(sql, params).expect("plan");
        let names: Vec<String> = ["id", "amount", "shardlite_k0"].map(String::from).into();
        plan.row_merge(&names, None, None).is_some()
    };
    assert!(merges(
        "SELECT id, amount FROM orders WHERE amount > ?1 ORDER BY amount DESC, id LIMIT 100"
    ));
    assert!(merges(
        "SELECT id, amount FROM orders ORDER BY customer COLLATE NOCASE LIMIT 5 OFFSET 2"
    ));
    assert!(!merges("SELECT DISTINCT id, amount FROM orders ORDER BY 1"), "DISTINCT");
    // A COLLATE on a column number stays the merge's own; on an expression it ships with the
    // key, and the probe tells its collation (or the shards fail on an unknown one).
    assert!(
        !merges("SELECT id, amount FROM orders ORDER BY 2 COLLATE mine"),
        "unknown collation"
    );
    assert!(
        !merges("SELECT id, amount FROM orders ORDER BY id LIMIT ?1"),
        "a LIMIT not yet evaluated"
    );
    let aggregate = plan("SELECT count(*) FROM orders", Params::none()).expect("plan");
    assert!(
        aggregate.row_merge(&["c".to_owned()], None, None).is_none(),
        "aggregates"
    );
}
