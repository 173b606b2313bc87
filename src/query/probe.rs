//! The collation probe: one statement, run on one shard and reading no rows, that tells which
//! collation SQLite gives each compared expression there.
//!
//! SQLite takes a compound `SELECT`'s comparisons from its leftmost `SELECT`, and a subquery's
//! column keeps the collation of its expression, so a `UNION` of a collated empty column with
//! `'a'`, `'A'`, `'b'` and `'b '` keeps both of `'a'` and `'A'` unless the collation is
//! `NOCASE`, and both of `'b'` and `'b '` unless it is `RTRIM`.

use sqlparser::ast::Expr;

use super::partial::Collation;
use crate::data::{SqlResult, Value};

/// The probe of `exprs`, each read in the query's `FROM`.
pub(super) fn sql(with: &str, from: &str, exprs: &[Expr]) -> String {
    let arms: Vec<String> = exprs
        .iter()
        .enumerate()
        .map(|(index, expr)| {
            format!(
                "SELECT {index} AS shardlite_i, shardlite_v FROM (SELECT shardlite_v FROM \
                 (SELECT {expr} AS shardlite_v FROM {from} LIMIT 0) \
                 UNION SELECT 'a' UNION SELECT 'A' UNION SELECT 'b' UNION SELECT 'b ')"
            )
        })
        .collect();
    format!("{with}{}", arms.join(" UNION ALL "))
}

/// The collation of each of `count` probed expressions, from the probe's rows.
pub(super) fn collations(result: &SqlResult, count: usize) -> Vec<Collation> {
    (0..count)
        .map(|index| {
            let kept = |text: &str| {
                result.rows.iter().any(|row| {
                    row.first().and_then(Value::as_i64) == i64::try_from(index).ok()
                        && row.get(1).and_then(Value::as_str) == Some(text)
                })
            };
            if !(kept("a") && kept("A")) {
                Collation::NoCase
            } else if !(kept("b") && kept("b ")) {
                Collation::RTrim
            } else {
                Collation::Binary
            }
        })
        .collect()
}
