//! What a query across shards may not use anywhere in its text, checked before any shard runs
//! it: functions whose answer differs between shards (or that nobody can prove deterministic),
//! window functions, and subqueries whose result would need rows of other shards.
//!
//! A subquery (in `FROM`, a `WITH` table, `IN`, `EXISTS` or a scalar) runs on each shard over
//! that shard's rows, as a join does; that is exact when it filters or looks up rows that share
//! a route with the row it serves. One that aggregates, removes duplicates, or keeps a limited
//! number of rows would compute over one shard what the query means over all of them, so it is
//! refused.

use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Query, SetExpr, SetOperator, SetQuantifier, Statement,
    Value as AstValue, Visit, Visitor,
};

use super::placeholders::value_of;
use crate::data::{Params, Value};
use crate::error::{Error, Result};

/// Aggregate functions merged across shards (with one argument for `min` and `max`, whose
/// forms with more are scalar).
pub(super) const MERGED_AGGREGATES: &[&str] = &["count", "sum", "total", "avg", "min", "max"];

/// Aggregates whose result depends on the order rows arrive in, which differs across shards.
const ORDERED_AGGREGATES: &[&str] = &[
    "group_concat",
    "string_agg",
    "json_group_array",
    "json_group_object",
    "jsonb_group_array",
    "jsonb_group_object",
];

/// Functions that return another value on every call or every connection.
const NON_DETERMINISTIC: &[&str] = &[
    "random",
    "randomblob",
    "changes",
    "total_changes",
    "last_insert_rowid",
    "sqlite_offset",
    "current_timestamp",
    "current_date",
    "current_time",
];

/// Date and time functions: deterministic unless asked for `'now'`.
const DATE_TIME: &[&str] = &[
    "date",
    "time",
    "datetime",
    "julianday",
    "unixepoch",
    "strftime",
    "timediff",
];

/// SQLite's built-in scalar functions that return the same value for the same arguments.
const DETERMINISTIC: &[&str] = &[
    "abs",
    "char",
    "coalesce",
    "concat",
    "concat_ws",
    "format",
    "glob",
    "hex",
    "ifnull",
    "iif",
    "if",
    "instr",
    "length",
    "like",
    "likelihood",
    "likely",
    "lower",
    "ltrim",
    "max",
    "min",
    "nullif",
    "octet_length",
    "printf",
    "quote",
    "replace",
    "round",
    "rtrim",
    "sign",
    "soundex",
    "substr",
    "substring",
    "trim",
    "typeof",
    "unhex",
    "unicode",
    "unistr",
    "unlikely",
    "upper",
    "zeroblob",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "ceil",
    "ceiling",
    "cos",
    "cosh",
    "degrees",
    "exp",
    "floor",
    "ln",
    "log",
    "log10",
    "log2",
    "mod",
    "pi",
    "pow",
    "power",
    "radians",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
    "json",
    "jsonb",
    "json_array",
    "jsonb_array",
    "json_array_length",
    "json_error_position",
    "json_extract",
    "jsonb_extract",
    "json_insert",
    "jsonb_insert",
    "json_object",
    "jsonb_object",
    "json_patch",
    "jsonb_patch",
    "json_pretty",
    "json_remove",
    "jsonb_remove",
    "json_replace",
    "jsonb_replace",
    "json_set",
    "jsonb_set",
    "json_type",
    "json_valid",
    "json_quote",
];

fn refused(construct: impl Into<String>) -> Error {
    Error::UnsupportedCrossShardQuery {
        construct: construct.into().into_boxed_str(),
    }
}

/// The lower-case name of a function call, or `None` for a qualified name.
pub(super) fn function_name(function: &sqlparser::ast::Function) -> Option<String> {
    match function.name.0.as_slice() {
        [part] => part.as_ident().map(|ident| ident.value.to_ascii_lowercase()),
        _ => None,
    }
}

/// The arguments of a call written with a plain list (`f(a, b)`).
pub(super) fn plain_args(function: &sqlparser::ast::Function) -> Option<Vec<&Expr>> {
    let FunctionArguments::List(list) = &function.args else {
        return match &function.args {
            FunctionArguments::None => Some(Vec::new()),
            _ => None,
        };
    };
    list.args
        .iter()
        .map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Some(expr),
            _ => None,
        })
        .collect()
}

/// Whether a call is one of the aggregates merged across shards.
pub(super) fn is_merged_aggregate(function: &sqlparser::ast::Function) -> bool {
    let Some(name) = function_name(function) else {
        return false;
    };
    match name.as_str() {
        "min" | "max" => plain_args(function).is_some_and(|args| args.len() == 1),
        "count" => true,
        _ => MERGED_AGGREGATES.contains(&name.as_str()),
    }
}

/// Refuses what no part of a query across shards may use. Answers whether the check read a
/// value of `params` (a date and time function given a placeholder): when it did not, the same
/// text passes with any values.
pub(super) fn check_everywhere(statement: &Statement, params: &Params) -> Result<bool> {
    let mut check = Everywhere {
        params,
        read_values: std::cell::Cell::new(false),
        depth: 0,
        found: None,
    };
    let _ = statement.visit(&mut check);
    match check.found {
        Some(err) => Err(err),
        None => Ok(check.read_values.get()),
    }
}

struct Everywhere<'p> {
    params: &'p Params,
    /// Whether a value of `params` decided anything.
    read_values: std::cell::Cell<bool>,
    /// Queries entered: 1 is the statement's own, more is a subquery.
    depth: usize,
    found: Option<Error>,
}

impl Everywhere<'_> {
    fn stop(&mut self, err: Error) -> ControlFlow<()> {
        self.found = Some(err);
        ControlFlow::Break(())
    }

    fn check_subquery(&self, query: &Query) -> Result<()> {
        if query.limit_clause.is_some() || query.fetch.is_some() {
            return Err(refused("LIMIT in a subquery"));
        }
        if let Some(with) = &query.with
            && with.recursive
        {
            return Err(refused("WITH RECURSIVE"));
        }
        check_subquery_body(&query.body)
    }

    fn check_function(&self, function: &sqlparser::ast::Function) -> Result<()> {
        let Some(name) = function_name(function) else {
            return Err(refused(format!("function {}()", function.name)));
        };
        if function.over.is_some() {
            return Err(refused(format!("window function {name}() OVER")));
        }
        if NON_DETERMINISTIC.contains(&name.as_str()) {
            return Err(refused(format!("{name}() (its value differs between shards)")));
        }
        if ORDERED_AGGREGATES.contains(&name.as_str()) {
            return Err(refused(format!("{name}() (its result depends on the order of rows)")));
        }
        if is_merged_aggregate(function) {
            if self.depth > 1 {
                return Err(refused(format!("aggregate function {name}() in a subquery")));
            }
            return Ok(());
        }
        let Some(args) = plain_args(function) else {
            return Err(refused(format!("{name}() with these arguments")));
        };
        if !function.within_group.is_empty() || function.filter.is_some() {
            return Err(refused(format!("{name}() with WITHIN GROUP or FILTER")));
        }
        if DATE_TIME.contains(&name.as_str()) {
            let now = args.is_empty()
                || args.iter().any(|arg| match arg {
                    Expr::Value(v) => match &v.value {
                        AstValue::SingleQuotedString(text) | AstValue::DoubleQuotedString(text) => {
                            text.trim().eq_ignore_ascii_case("now")
                        }
                        AstValue::Placeholder(p) => {
                            self.read_values.set(true);
                            matches!(
                                value_of(p, self.params),
                                Some(Value::Text(text)) if text.trim().eq_ignore_ascii_case("now")
                            )
                        }
                        _ => false,
                    },
                    _ => false,
                });
            if now {
                return Err(refused(format!("{name}('now') (the time differs between shards)")));
            }
            return Ok(());
        }
        if DETERMINISTIC.contains(&name.as_str()) {
            return Ok(());
        }
        Err(refused(format!("function {name}() (not known to be deterministic)")))
    }
}

fn check_subquery_body(body: &SetExpr) -> Result<()> {
    match body {
        SetExpr::Select(select) => {
            if select.distinct.is_some() {
                return Err(refused("DISTINCT in a subquery"));
            }
            let grouped = match &select.group_by {
                sqlparser::ast::GroupByExpr::All(_) => true,
                sqlparser::ast::GroupByExpr::Expressions(exprs, _) => !exprs.is_empty(),
            };
            if grouped || select.having.is_some() {
                return Err(refused("GROUP BY in a subquery"));
            }
            Ok(())
        }
        SetExpr::SetOperation {
            left,
            op: SetOperator::Union,
            set_quantifier: SetQuantifier::All,
            right,
        } => {
            check_subquery_body(left)?;
            check_subquery_body(right)
        }
        SetExpr::SetOperation { op, .. } => Err(refused(format!("{op} in a subquery"))),
        SetExpr::Query(query) if query.limit_clause.is_some() => Err(refused("LIMIT in a subquery")),
        SetExpr::Query(query) => check_subquery_body(&query.body),
        SetExpr::Values(_) => Ok(()),
        _ => Err(refused("a subquery that is not a SELECT")),
    }
}

impl Visitor for Everywhere<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        self.depth += 1;
        if self.depth > 1
            && let Err(err) = self.check_subquery(query)
        {
            return self.stop(err);
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if let Expr::Function(function) = expr
            && let Err(err) = self.check_function(function)
        {
            return self.stop(err);
        }
        ControlFlow::Continue(())
    }
}
