//! Queries across shards: one read-only `SELECT` answered over every shard as SQLite would
//! answer it over one file holding every shard's rows.
//!
//! The SQL is read with `sqlparser` (its SQLite dialect) and planned in three statements:
//!
//! - the **shard statement**, run on every shard, returns partial results: the rows with their
//!   sort keys and `LIMIT limit+offset` for a plain query, or per group the `GROUP BY` keys and
//!   partial states (`count`, `sum`, `total`, `min`, `max`, and `total` with `count` for `avg`;
//!   the distinct values of `COUNT(DISTINCT x)` as extra keys) for an aggregate query;
//! - the **collation probe**, run on one shard and reading no rows, asks SQLite which collation
//!   each compared column has there (a column declared `COLLATE NOCASE`, an explicit `COLLATE`);
//! - the **merge statement** runs in a private in-memory SQLite database over the partial rows,
//!   whose columns are declared with those collations, and computes the final answer with
//!   SQLite's own semantics (types, NULLs, collations, integer overflow of `sum`).
//!
//! A plain query without `DISTINCT` needs no merge statement: each shard's rows come sorted by
//! its `ORDER BY`, so a k-way merge that compares values as SQLite does, and stops at
//! `limit + offset` rows, is the answer ([`RowMerge`]); rows in another order than it compares
//! by go to SQLite after all. A [`PlanCache`] keeps plans by their text, so a query sent again
//! is not read again.
//!
//! Every table a query reads is taken as partitioned: rows on different shards are different
//! rows. Joins and subqueries run on each shard over that shard's rows, which is exact for
//! tables whose rows share a route. Whatever cannot be answered exactly is refused with
//! [`Error::UnsupportedCrossShardQuery`] before any shard runs anything.

mod aggregate;
mod cache;
mod expr;
mod partial;
mod placeholders;
mod probe;
mod refuse;
mod rows;
mod sorted;

pub use cache::PlanCache;
pub(crate) use partial::{Collation, PARTIAL_TABLE, PartialColumn};
pub use sorted::RowMerge;

use std::sync::Arc;

use sqlparser::ast::{
    Distinct, Expr, GroupByExpr, LimitClause, Query, Select, SetExpr, Statement, TableFactor, TableWithJoins,
    Value as AstValue,
};
use sqlparser::dialect::SQLiteDialect;
use sqlparser::parser::Parser;

use self::placeholders::Finished;
use crate::data::{Params, SqlResult};
use crate::error::{Error, Result};

/// The most tokens a query across shards may have: enough for any query a person writes, and
/// a bound on the depth of the trees read from it.
const MAX_TOKENS: usize = 20_000;

/// How deep the trees read from a query across shards may be. A chain of operators
/// (`a + b + c …`, `x AND y AND z …`) is read into a tree as deep as the chain is long, and
/// walking, printing and dropping a tree recurses once per level: this keeps every tree far from
/// the end of a thread's stack, in debug builds too.
const MAX_DEPTH: usize = 64;

/// An upper bound of the depth of the trees `tokens` read into: the operators of every chain
/// that encloses a token (a chain ends at a comma or a parenthesis), plus the parentheses.
fn depth(tokens: &[sqlparser::tokenizer::TokenWithSpan]) -> usize {
    use sqlparser::tokenizer::Token;
    const KEYWORDS: &[&str] = &[
        "and", "or", "not", "is", "in", "like", "glob", "regexp", "match", "between", "collate", "escape", "when",
        "then", "else",
    ];
    let mut chains = vec![0usize];
    let mut deepest = 0;
    for token in tokens {
        match &token.token {
            Token::LParen => chains.push(0),
            Token::RParen => {
                if chains.len() > 1 {
                    chains.pop();
                }
            }
            Token::Comma => {
                if let Some(chain) = chains.last_mut() {
                    *chain = 0;
                }
            }
            Token::Word(word)
                if word.quote_style.is_some() || !KEYWORDS.iter().any(|k| word.value.eq_ignore_ascii_case(k)) => {}
            Token::Whitespace(_)
            | Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::HexStringLiteral(_)
            | Token::Period
            | Token::SemiColon
            | Token::Placeholder(_) => {}
            _ => {
                if let Some(chain) = chains.last_mut() {
                    *chain += 1;
                }
            }
        }
        deepest = deepest.max(chains.iter().sum::<usize>() + chains.len());
    }
    deepest
}

/// A query across shards, read and checked, ready to run.
#[derive(Debug)]
pub struct QueryPlan {
    template: Arc<Template>,
    params: Params,
}

/// What a query's text alone decides, the same whatever its values: kept by a [`PlanCache`] and
/// used again by every later call with the same text.
#[derive(Debug)]
struct Template {
    shape: Shape,
    /// `WITH …` (with a trailing space) or empty, and the `FROM` list, for the probe.
    with: String,
    from: String,
    /// Expressions whose collation decides a partial column's, in probe order.
    probes: Vec<Expr>,
    /// The query's placeholders, each call's values are checked against.
    placeholders: Vec<String>,
    /// The generated statements that do not depend on the values, read once.
    limit: Option<Finished>,
    shard: Option<Finished>,
    probe: Option<Finished>,
}

#[derive(Debug)]
enum Shape {
    Rows(Box<rows::RowsPlan>),
    Aggregate(Box<aggregate::AggregatePlan>),
}

/// What the merge reads and runs: the partial columns, the statement and its values.
#[derive(Debug)]
pub struct MergeStatement {
    /// The partial columns with their collations.
    pub columns: Vec<PartialColumn>,
    /// The merge statement.
    pub sql: String,
    /// Its values.
    pub params: Params,
}

fn refused(construct: impl Into<String>) -> Error {
    Error::UnsupportedCrossShardQuery {
        construct: construct.into().into_boxed_str(),
    }
}

/// Reads `sql` and plans it across shards, or refuses it naming the construct. A
/// [`PlanCache`] does the same, reading each text once.
pub fn plan(sql: &str, params: Params) -> Result<QueryPlan> {
    let (template, _) = read(sql, &params)?;
    Ok(QueryPlan {
        template: Arc::new(template),
        params,
    })
}

/// Reads and checks `sql` with `params`, and answers whether the template holds for any values
/// (no check read one of them).
fn read(sql: &str, params: &Params) -> Result<(Template, bool)> {
    if sql.trim().is_empty() {
        return Err(Error::invalid_argument("sql", "the SQL text is empty"));
    }
    let dialect = SQLiteDialect {};
    let mut tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|err| syntax(&err.to_string()))?;
    if tokens.len() > MAX_TOKENS {
        return Err(refused(format!("a query of more than {MAX_TOKENS} tokens")));
    }
    if depth(&tokens) > MAX_DEPTH {
        return Err(refused(format!(
            "an expression nested or chained more than {MAX_DEPTH} deep"
        )));
    }
    placeholders::number(&mut tokens)?;
    let mut statements = Parser::new(&dialect)
        .with_tokens_with_locations(tokens)
        .parse_statements()
        .map_err(|err| syntax(&err.to_string()))?;
    let statement = match statements.len() {
        1 => statements.remove(0),
        0 => return Err(Error::invalid_argument("sql", "the SQL text holds no statement")),
        _ => return Err(refused("several statements")),
    };
    let Statement::Query(_) = &statement else {
        let keyword = statement.to_string();
        let keyword = keyword
            .split_whitespace()
            .next()
            .unwrap_or("the statement")
            .to_ascii_uppercase();
        return Err(refused(format!(
            "{keyword} (only one SELECT is answered across shards)"
        )));
    };
    let found = placeholders::found(&statement);
    placeholders::check_found(&found, params)?;
    let read_values = refuse::check_everywhere(&statement, params)?;
    let Statement::Query(query) = statement else {
        return Err(refused("a statement that is not a SELECT"));
    };
    check_query_clauses(&query)?;
    let SetExpr::Select(select) = query.body.as_ref() else {
        return Err(match query.body.as_ref() {
            SetExpr::SetOperation { op, set_quantifier, .. } => {
                refused(format!("{op} {set_quantifier}").trim().to_owned())
            }
            SetExpr::Values(_) => refused("VALUES"),
            _ => refused("a parenthesised SELECT"),
        });
    };
    check_select_clauses(select)?;
    check_partitioned(&select.from, &query)?;
    let with = query.with.as_ref().map(|w| format!("{w} ")).unwrap_or_default();
    let from = select
        .from
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let names = expr::item_texts(sql, select);
    let mut probes = Vec::new();
    let shape = if is_aggregate(&query, select) {
        Shape::Aggregate(Box::new(aggregate::AggregatePlan::new(
            &query,
            select,
            names,
            &mut probes,
        )?))
    } else {
        Shape::Rows(Box::new(rows::RowsPlan::new(&query, select, names, &mut probes)?))
    };
    let limit = match &shape {
        Shape::Rows(rows) => rows.limit_statement().map(|sql| Finished::new(&sql)).transpose()?,
        Shape::Aggregate(_) => None,
    };
    let shard = match &shape {
        Shape::Rows(rows) if limit.is_none() => Some(Finished::new(&rows.shard_sql(&with, &from, None))?),
        Shape::Rows(_) => None,
        Shape::Aggregate(aggregate) => Some(Finished::new(&aggregate.shard_sql(&with, &from))?),
    };
    let probe = (!probes.is_empty())
        .then(|| Finished::new(&probe::sql(&with, &from, &probes)))
        .transpose()?;
    let template = Template {
        shape,
        with,
        from,
        probes,
        placeholders: found,
        limit,
        shard,
        probe,
    };
    Ok((template, !read_values))
}

/// Whether `sql` only reads: each of its statements is a query (`SELECT`, `WITH … SELECT`,
/// `VALUES`, a compound `SELECT`). Any other statement (`INSERT`, `WITH … DELETE`, `CREATE`,
/// `PRAGMA`, …) is not. Text that cannot be read counts as a query, so that [`plan`] says what
/// is wrong with it.
///
/// ```
/// use shardlite::query::is_query;
///
/// assert!(is_query("SELECT count(*) FROM orders"));
/// assert!(is_query("WITH t AS (SELECT 1) SELECT * FROM t"));
/// assert!(!is_query("INSERT INTO orders (id) VALUES (1)"));
/// assert!(!is_query("WITH t AS (SELECT 1) DELETE FROM orders WHERE id IN t"));
/// assert!(!is_query("SELECT 1; DROP TABLE orders"));
/// ```
pub fn is_query(sql: &str) -> bool {
    let dialect = SQLiteDialect {};
    let Ok(mut tokens) = sqlparser::tokenizer::Tokenizer::new(&dialect, sql).tokenize_with_location() else {
        return true;
    };
    if tokens.len() > MAX_TOKENS || depth(&tokens) > MAX_DEPTH || placeholders::number(&mut tokens).is_err() {
        return true;
    }
    let Ok(statements) = Parser::new(&dialect)
        .with_tokens_with_locations(tokens)
        .parse_statements()
    else {
        return true;
    };
    statements.iter().all(|statement| match statement {
        Statement::Query(query) => body_reads(&query.body),
        _ => false,
    })
}

/// Whether a query body only reads (`WITH … INSERT` is a query whose body writes).
fn body_reads(body: &SetExpr) -> bool {
    match body {
        SetExpr::Select(_) | SetExpr::Values(_) | SetExpr::Table(_) => true,
        SetExpr::Query(query) => body_reads(&query.body),
        SetExpr::SetOperation { left, right, .. } => body_reads(left) && body_reads(right),
        _ => false,
    }
}

fn syntax(message: &str) -> Error {
    Error::from(crate::error::SqlFailure {
        code: 1,
        code_name: "SQLITE_ERROR",
        message: format!("the query could not be read: {message}"),
    })
}

impl QueryPlan {
    /// A statement (run over no table) that evaluates the `LIMIT` and `OFFSET` values, when they
    /// are not plain numbers, so they can be pushed down to the shards.
    pub fn limit_statement(&self) -> Option<Result<(String, Params)>> {
        self.template.limit.as_ref().map(|limit| Ok(limit.bind(&self.params)))
    }

    /// The statement every shard runs, with `pushed` rows at most when a limit is pushed down
    /// (`limit_values` is the result of [`limit_statement`](Self::limit_statement), if any).
    pub fn shard_statement(&self, limit_values: Option<&SqlResult>) -> Result<(String, Params)> {
        let template = &self.template;
        if let Some(shard) = &template.shard {
            return Ok(shard.bind(&self.params));
        }
        let sql = match &template.shape {
            Shape::Rows(rows) => rows.shard_sql(&template.with, &template.from, limit_values),
            Shape::Aggregate(aggregate) => aggregate.shard_sql(&template.with, &template.from),
        };
        placeholders::finish(&sql, &self.params)
    }

    /// The collation probe, run on one shard, when any compared column may have a collation
    /// other than `BINARY`.
    pub fn probe_statement(&self) -> Option<Result<(String, Params)>> {
        self.template.probe.as_ref().map(|probe| Ok(probe.bind(&self.params)))
    }

    fn collations(&self, probe: Option<&SqlResult>) -> Vec<Collation> {
        match probe {
            Some(result) => probe::collations(result, self.template.probes.len()),
            None => vec![Collation::Binary; self.template.probes.len()],
        }
    }

    /// The merge statement over the shards' partial results (`columns` are the names a shard
    /// gave its result columns; `probe` is the probe's answer, if one ran).
    pub fn merge_statement(&self, columns: &[String], probe: Option<&SqlResult>) -> Result<MergeStatement> {
        let collations = self.collations(probe);
        let (columns, sql) = match &self.template.shape {
            Shape::Rows(rows) => rows.merge(columns, &collations)?,
            Shape::Aggregate(aggregate) => aggregate.merge(columns, &collations)?,
        };
        let (sql, params) = placeholders::finish(&sql, &self.params)?;
        Ok(MergeStatement { columns, sql, params })
    }

    /// The merge of a plain query's sorted partial rows without SQLite, when it gives the same
    /// answer as the [merge statement](Self::merge_statement); `None` when only SQLite can.
    /// Its arguments are those of `merge_statement`, and the limit statement's result.
    pub fn row_merge(
        &self,
        columns: &[String],
        probe: Option<&SqlResult>,
        limit_values: Option<&SqlResult>,
    ) -> Option<RowMerge> {
        match &self.template.shape {
            Shape::Rows(rows) => rows.row_merge(columns, &self.collations(probe), limit_values),
            Shape::Aggregate(_) => None,
        }
    }
}

fn is_aggregate(query: &Query, select: &Select) -> bool {
    let grouped = match &select.group_by {
        GroupByExpr::All(_) => true,
        GroupByExpr::Expressions(exprs, _) => !exprs.is_empty(),
    };
    grouped
        || select.having.is_some()
        || select.projection.iter().any(|item| match item {
            sqlparser::ast::SelectItem::UnnamedExpr(e) | sqlparser::ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                expr::has_aggregate(e)
            }
            _ => false,
        })
        || order_terms(query).iter().any(|term| expr::has_aggregate(&term.expr))
}

/// The `ORDER BY` terms of a query.
fn order_terms(query: &Query) -> &[sqlparser::ast::OrderByExpr] {
    match query.order_by.as_ref().map(|o| &o.kind) {
        Some(sqlparser::ast::OrderByKind::Expressions(terms)) => terms,
        _ => &[],
    }
}

/// The `LIMIT` and `OFFSET` expressions of a query.
fn limit_parts(query: &Query) -> (Option<&Expr>, Option<&Expr>) {
    match &query.limit_clause {
        Some(LimitClause::LimitOffset { limit, offset, .. }) => (limit.as_ref(), offset.as_ref().map(|o| &o.value)),
        Some(LimitClause::OffsetCommaLimit { offset, limit }) => (Some(limit), Some(offset)),
        None => (None, None),
    }
}

/// ` LIMIT l OFFSET o` as SQLite reads it, or empty.
fn limit_text(query: &Query) -> String {
    match limit_parts(query) {
        (Some(limit), Some(offset)) => format!(" LIMIT {limit} OFFSET {offset}"),
        (Some(limit), None) => format!(" LIMIT {limit}"),
        _ => String::new(),
    }
}

/// An integer literal's value (with an optional sign).
fn integer_literal(expr: &Expr) -> Option<i64> {
    match expr {
        Expr::Value(v) => match &v.value {
            AstValue::Number(text, _) => text.parse().ok(),
            _ => None,
        },
        Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Minus,
            expr,
        } => integer_literal(expr).and_then(i64::checked_neg),
        Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Plus,
            expr,
        }
        | Expr::Nested(expr) => integer_literal(expr),
        _ => None,
    }
}

fn check_query_clauses(query: &Query) -> Result<()> {
    if query.fetch.is_some() || !query.locks.is_empty() || query.for_clause.is_some() {
        return Err(refused("FETCH, FOR or locking clauses"));
    }
    if query.settings.is_some() || query.format_clause.is_some() || !query.pipe_operators.is_empty() {
        return Err(refused("clauses SQLite does not have"));
    }
    if let Some(with) = &query.with
        && with.recursive
    {
        return Err(refused("WITH RECURSIVE"));
    }
    if let Some(order_by) = &query.order_by
        && !matches!(order_by.kind, sqlparser::ast::OrderByKind::Expressions(_))
    {
        return Err(refused("ORDER BY ALL"));
    }
    if let Some(LimitClause::LimitOffset { limit_by, .. }) = &query.limit_clause
        && !limit_by.is_empty()
    {
        return Err(refused("LIMIT BY"));
    }
    let (limit, offset) = limit_parts(query);
    for expr in limit.into_iter().chain(offset) {
        if !is_constant(expr) {
            return Err(refused("a LIMIT or OFFSET that reads a column or a subquery"));
        }
    }
    Ok(())
}

/// Whether an expression reads no column and runs no subquery.
fn is_constant(expr: &Expr) -> bool {
    let mut constant = true;
    let _ = sqlparser::ast::visit_expressions(expr, |e| {
        if matches!(
            e,
            Expr::Identifier(_)
                | Expr::CompoundIdentifier(_)
                | Expr::Subquery(_)
                | Expr::In {
                    target: sqlparser::ast::InTarget::Subquery(_) | sqlparser::ast::InTarget::Table { .. },
                    ..
                }
                | Expr::Exists { .. }
        ) {
            constant = false;
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    });
    constant
}

fn check_select_clauses(select: &Select) -> Result<()> {
    if matches!(select.distinct, Some(Distinct::On(_))) {
        return Err(refused("DISTINCT ON"));
    }
    if !select.named_window.is_empty() {
        return Err(refused("a WINDOW clause"));
    }
    if select.top.is_some()
        || select.into.is_some()
        || !select.lateral_views.is_empty()
        || select.prewhere.is_some()
        || !select.connect_by.is_empty()
        || !select.cluster_by.is_empty()
        || !select.distribute_by.is_empty()
        || !select.sort_by.is_empty()
        || select.qualify.is_some()
        || select.value_table_mode.is_some()
        || select.exclude.is_some()
        || select.select_modifiers.is_some()
    {
        return Err(refused("clauses SQLite does not have"));
    }
    match &select.group_by {
        GroupByExpr::All(_) => Err(refused("GROUP BY ALL")),
        GroupByExpr::Expressions(_, modifiers) if !modifiers.is_empty() => Err(refused("GROUP BY modifiers")),
        GroupByExpr::Expressions(..) => Ok(()),
    }
}

/// Refuses a query whose rows are not split between the shards: one that reads no table, one
/// whose first table is a constant or a table function (each shard would give its rows again),
/// and outer joins that keep the rows of a later table (`RIGHT`, `FULL`).
fn check_partitioned(from: &[TableWithJoins], query: &Query) -> Result<()> {
    let Some(first) = from.first() else {
        return Err(refused("a SELECT that reads no table"));
    };
    for table in from {
        for join in &table.joins {
            use sqlparser::ast::JoinOperator as J;
            match &join.join_operator {
                J::Right(_) | J::RightOuter(_) | J::RightSemi(_) | J::RightAnti(_) => {
                    return Err(refused("RIGHT JOIN"));
                }
                J::FullOuter(_) => return Err(refused("FULL JOIN")),
                J::CrossApply | J::OuterApply | J::AsOf { .. } => return Err(refused("this join")),
                _ => {}
            }
        }
    }
    if partitioned(&first.relation, query, 0) {
        Ok(())
    } else {
        Err(refused("a first table in FROM that is not a table of the shards"))
    }
}

fn partitioned(factor: &TableFactor, query: &Query, depth: usize) -> bool {
    if depth > 16 {
        return false;
    }
    match factor {
        TableFactor::Table { name, args: None, .. } => {
            let cte = query.with.as_ref().and_then(|with| {
                with.cte_tables
                    .iter()
                    .find(|cte| name.0.len() == 1 && cte.alias.name.value.eq_ignore_ascii_case(&name.to_string()))
            });
            match cte {
                Some(cte) => body_partitioned(&cte.query.body, query, depth + 1),
                None => true,
            }
        }
        TableFactor::Derived { subquery, .. } => body_partitioned(&subquery.body, query, depth + 1),
        TableFactor::NestedJoin { table_with_joins, .. } => partitioned(&table_with_joins.relation, query, depth + 1),
        _ => false,
    }
}

fn body_partitioned(body: &SetExpr, query: &Query, depth: usize) -> bool {
    match body {
        SetExpr::Select(select) => select
            .from
            .first()
            .is_some_and(|first| partitioned(&first.relation, query, depth)),
        SetExpr::SetOperation { left, right, .. } => {
            body_partitioned(left, query, depth) && body_partitioned(right, query, depth)
        }
        SetExpr::Query(inner) => body_partitioned(&inner.body, query, depth),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
