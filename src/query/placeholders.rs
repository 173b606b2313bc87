//! Placeholders of a query across shards: numbered once as SQLite numbers them in the caller's
//! text, then bound, statement by statement, to exactly the values each generated statement
//! uses (a shard's statement and the merge statement each take a part of them).

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Statement, Value as AstValue, Visit, VisitMut, VisitorMut};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::data::{Params, Value};
use crate::error::{Error, Result};

/// Rewrites every positional placeholder token (`?`, `?NNN`) as `?NNN` with the number SQLite
/// gives it in the text: `?` is one past the highest number so far. (A query that mixes them
/// with named placeholders is refused by [`check_found`], whichever way its values are passed.)
pub(super) fn number(tokens: &mut [TokenWithSpan]) -> Result<()> {
    let mut highest = 0usize;
    for token in tokens {
        if let Token::Placeholder(text) = &mut token.token
            && let Some(digits) = text.strip_prefix('?')
        {
            if digits.is_empty() {
                highest += 1;
                *text = format!("?{highest}");
            } else {
                let number: usize = digits.parse().map_err(|_| {
                    Error::invalid_argument("sql", format!("placeholder '{text}' is not a valid number"))
                })?;
                highest = highest.max(number);
            }
        }
    }
    Ok(())
}

/// The placeholders of `statement`, as [`number`] left them, in the order they appear.
pub(super) fn found(statement: &Statement) -> Vec<String> {
    let mut found = Vec::new();
    let _ = Visit::visit(statement, &mut Collect(&mut found));
    found
}

/// Checks `params` against the placeholders [`found`] in a statement the way the engine does:
/// positional values for positional placeholders only, none missing and none left over; named
/// values for named ones.
pub(super) fn check_found(found: &[String], params: &Params) -> Result<()> {
    let highest = found
        .iter()
        .filter_map(|p| p.strip_prefix('?')?.parse::<usize>().ok())
        .max()
        .unwrap_or(0);
    let named: BTreeSet<&String> = found.iter().filter(|p| !p.starts_with('?')).collect();
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
            if let Some(text) = found.iter().find(|t| t.starts_with('?')) {
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
    Ok(Finished::new(sql)?.bind(params))
}

/// Generated SQL parsed once, ready to be bound to any values: [`finish`] in two steps, so that
/// a plan used again binds its statements without reading them again.
#[derive(Debug, Clone)]
pub(super) struct Finished {
    sql: String,
    /// The caller's placeholder each of the statement's own stands for, in their order.
    taken: Vec<String>,
}

impl Finished {
    /// Parses `sql` and numbers its placeholders densely.
    pub(super) fn new(sql: &str) -> Result<Self> {
        let mut statements = Parser::parse_sql(&SQLiteDialect {}, sql).map_err(|err| {
            Error::from(crate::error::SqlFailure {
                code: 1,
                code_name: "SQLITE_ERROR",
                message: format!("a statement generated for the shards did not parse: {err}"),
            })
        })?;
        let Some(mut statement) = statements.pop() else {
            return Ok(Self {
                sql: String::new(),
                taken: Vec::new(),
            });
        };
        let mut taken: Vec<String> = Vec::new();
        let _ = VisitMut::visit(&mut statement, &mut Dense(&mut taken));
        Ok(Self {
            sql: statement.to_string(),
            taken,
        })
    }

    /// The statement's text and the values it takes from `params`.
    pub(super) fn bind(&self, params: &Params) -> (String, Params) {
        if self.sql.is_empty() {
            return (String::new(), Params::none());
        }
        let bound = match params {
            Params::Positional(values) => Params::Positional(
                self.taken
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
                self.taken
                    .iter()
                    .filter_map(|p| {
                        let key = p.get(1..)?;
                        Some((key.to_owned(), values.get(key)?.clone()))
                    })
                    .collect(),
            ),
        };
        (self.sql.clone(), bound)
    }
}

struct Collect<'a>(&'a mut Vec<String>);

impl sqlparser::ast::Visitor for Collect<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::Value(v) = expr
            && let AstValue::Placeholder(text) = &v.value
        {
            self.0.push(text.clone());
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
    use sqlparser::tokenizer::Tokenizer;

    use super::*;

    fn parse(sql: &str) -> Statement {
        let mut tokens = Tokenizer::new(&SQLiteDialect {}, sql)
            .tokenize_with_location()
            .expect("tokens");
        number(&mut tokens).expect("numbered");
        Parser::new(&SQLiteDialect {})
            .with_tokens_with_locations(tokens)
            .parse_statements()
            .expect("parse")
            .remove(0)
    }

    #[test]
    fn question_marks_are_numbered_in_text_order() {
        let statement = parse("SELECT a FROM t WHERE b = ? AND c = ?3 AND d = ? ORDER BY a LIMIT ?");
        check_found(&found(&statement), &Params::from(vec![1, 2, 3, 4, 5])).expect("checked");
        assert_eq!(
            statement.to_string(),
            "SELECT a FROM t WHERE b = ?1 AND c = ?3 AND d = ?4 ORDER BY a LIMIT ?5"
        );
        let (sql, bound) = finish("SELECT ?4, ?1, ?4", &Params::from(vec![1, 2, 3, 4, 5])).expect("finish");
        assert_eq!(sql, "SELECT ?1, ?2, ?1");
        assert_eq!(bound, Params::from(vec![4, 1]));
    }

    #[test]
    fn values_must_match_the_placeholders() {
        let statement = parse("SELECT a FROM t WHERE b = ?");
        assert!(check_found(&found(&statement), &Params::from(vec![1, 2])).is_err());
        let statement = parse("SELECT a FROM t WHERE b = :b");
        assert!(check_found(&found(&statement), &Params::from(vec![1])).is_err());
        check_found(&found(&statement), &Params::named([("b", 1)])).expect("named");
        let (_, bound) = finish("SELECT :b", &Params::named([("b", 1)])).expect("finish");
        assert_eq!(bound, Params::named([("b", 1)]));
    }
}
