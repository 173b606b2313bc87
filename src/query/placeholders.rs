//! Placeholders of a query across shards: numbered once as SQLite numbers them in the caller's
//! text, then bound, statement by statement, to exactly the values each generated statement
//! uses (a shard's statement and the merge statement each take a part of them).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Statement, Value as AstValue, Visit, VisitMut, VisitorMut};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

use crate::data::{Params, Value};
use crate::error::{Error, Result};

/// Rewrites every positional placeholder of `statement` (`?`, `?NNN`) as `?NNN` with the number
/// SQLite gives it in the text (`?` is one past the highest number so far), and checks `params`
/// against the placeholders the way the engine does: positional values for positional
/// placeholders only, none missing and none left over; named values for named ones.
pub(super) fn number(statement: &mut Statement, params: &Params) -> Result<()> {
    let mut found = Vec::new();
    let _ = Visit::visit(&*statement, &mut Collect(&mut found));
    // The visitor walks the tree, not the text: SQLite numbers `?` in text order.
    found.sort_by_key(|(line, column, _)| (*line, *column));
    let mut highest = 0usize;
    let mut numbers = BTreeMap::new();
    let mut named = BTreeSet::new();
    for (line, column, text) in &found {
        match text.strip_prefix('?') {
            Some("") => {
                highest += 1;
                numbers.insert((*line, *column), highest);
            }
            Some(digits) => {
                let number: usize = digits.parse().map_err(|_| {
                    Error::invalid_argument("sql", format!("placeholder '{text}' is not a valid number"))
                })?;
                highest = highest.max(number);
            }
            None => {
                if named.insert(text.clone()) {
                    highest += 1;
                }
            }
        }
    }
    match params {
        Params::Positional(values) => {
            if let Some(name) = named.first() {
                return Err(Error::invalid_argument(
                    "parameters",
                    format!("placeholder '{name}' is named: pass parameters as a JSON object, not an array"),
                ));
            }
            if values.len() != highest {
                return Err(Error::invalid_argument(
                    "parameters",
                    format!(
                        "the statement has {highest} positional placeholder(s) but {} value(s) were given",
                        values.len()
                    ),
                ));
            }
        }
        Params::Named(values) => {
            if let Some((_, _, text)) = found.iter().find(|(_, _, t)| t.starts_with('?')) {
                return Err(Error::invalid_argument(
                    "parameters",
                    format!("placeholder '{text}' is positional: pass parameters as a JSON array, not an object"),
                ));
            }
            for name in &named {
                if !values.contains_key(&name[1..]) {
                    return Err(Error::invalid_argument(
                        "parameters",
                        format!("no value was given for placeholder '{name}'"),
                    ));
                }
            }
            if let Some(unused) = values.keys().find(|k| !named.iter().any(|n| &n[1..] == k.as_str())) {
                return Err(Error::invalid_argument(
                    "parameters",
                    format!("parameter '{unused}' does not match any placeholder in the SQL"),
                ));
            }
        }
    }
    let _ = VisitMut::visit(statement, &mut Renumber(&numbers));
    Ok(())
}

/// The value a numbered or named placeholder takes.
pub(super) fn value_of<'p>(placeholder: &str, params: &'p Params) -> Option<&'p Value> {
    match (placeholder.strip_prefix('?'), params) {
        (Some(digits), Params::Positional(values)) => values.get(digits.parse::<usize>().ok()?.checked_sub(1)?),
        (None, Params::Named(values)) => values.get(placeholder.get(1..)?),
        _ => None,
    }
}

/// Parses generated SQL (one statement) and binds it: its positional placeholders are numbered
/// again from 1 in the order they first appear, with the caller's values they stand for; named
/// ones keep their names and take only their own values.
pub(super) fn finish(sql: &str, params: &Params) -> Result<(String, Params)> {
    let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).map_err(|err| Error::Sql {
        code: 1,
        code_name: "SQLITE_ERROR",
        message: format!("a statement generated for the shards did not parse: {err}"),
    })?;
    let Some(mut statement) = statements.pop() else {
        return Ok((String::new(), Params::none()));
    };
    let mut taken: Vec<String> = Vec::new();
    let _ = VisitMut::visit(&mut statement, &mut Dense(&mut taken));
    let bound = match params {
        Params::Positional(values) => Params::Positional(
            taken
                .iter()
                .map(|p| {
                    p.strip_prefix('?')
                        .and_then(|d| d.parse::<usize>().ok())
                        .and_then(|n| values.get(n.checked_sub(1)?))
                        .cloned()
                        .unwrap_or(Value::Null)
                })
                .collect(),
        ),
        Params::Named(values) => Params::Named(
            taken
                .iter()
                .filter_map(|p| {
                    let key = p.get(1..)?;
                    Some((key.to_owned(), values.get(key)?.clone()))
                })
                .collect(),
        ),
    };
    Ok((statement.to_string(), bound))
}

struct Collect<'a>(&'a mut Vec<(u64, u64, String)>);

impl sqlparser::ast::Visitor for Collect<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::Value(v) = expr
            && let AstValue::Placeholder(text) = &v.value
        {
            self.0.push((v.span.start.line, v.span.start.column, text.clone()));
        }
        ControlFlow::Continue(())
    }
}

struct Renumber<'a>(&'a BTreeMap<(u64, u64), usize>);

impl VisitorMut for Renumber<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Value(v) = expr
            && let AstValue::Placeholder(text) = &mut v.value
            && let Some(number) = self.0.get(&(v.span.start.line, v.span.start.column))
        {
            *text = format!("?{number}");
        }
        ControlFlow::Continue(())
    }
}

/// Numbers positional placeholders densely (`?1`, `?2`, … in order of first appearance of each
/// original number), recording the original placeholders in `taken`.
struct Dense<'a>(&'a mut Vec<String>);

impl VisitorMut for Dense<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Value(v) = expr
            && let AstValue::Placeholder(text) = &mut v.value
        {
            let index = match self.0.iter().position(|t| t == text) {
                Some(index) => index,
                None => {
                    self.0.push(text.clone());
                    self.0.len() - 1
                }
            };
            if text.starts_with('?') {
                *text = format!("?{}", index + 1);
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(sql: &str) -> Statement {
        Parser::parse_sql(&SQLiteDialect {}, sql).expect("parse").remove(0)
    }

    #[test]
    fn question_marks_are_numbered_in_text_order() {
        let mut statement = parse("SELECT a FROM t WHERE b = ? AND c = ?3 AND d = ? ORDER BY a LIMIT ?");
        let params = Params::from(vec![1, 2, 3, 4, 5]);
        number(&mut statement, &params).expect("numbered");
        assert_eq!(
            statement.to_string(),
            "SELECT a FROM t WHERE b = ?1 AND c = ?3 AND d = ?4 ORDER BY a LIMIT ?5"
        );
        let (sql, bound) = finish("SELECT ?4, ?1, ?4", &params).expect("finish");
        assert_eq!(sql, "SELECT ?1, ?2, ?1");
        assert_eq!(bound, Params::from(vec![4, 1]));
    }

    #[test]
    fn values_must_match_the_placeholders() {
        let mut statement = parse("SELECT a FROM t WHERE b = ?");
        assert!(number(&mut statement, &Params::from(vec![1, 2])).is_err());
        let mut statement = parse("SELECT a FROM t WHERE b = :b");
        assert!(number(&mut statement, &Params::from(vec![1])).is_err());
        number(&mut statement, &Params::named([("b", 1)])).expect("named");
        let (_, bound) = finish("SELECT :b", &Params::named([("b", 1)])).expect("finish");
        assert_eq!(bound, Params::named([("b", 1)]));
    }
}
