//! Aggregate queries across shards (`GROUP BY`, `HAVING`, aggregates): each shard returns one
//! row per group with its keys and partial states; the merge groups those rows again and
//! combines the states, then applies `HAVING`, `DISTINCT`, `ORDER BY` and `LIMIT`.
//!
//! | aggregate | each shard | merge |
//! |---|---|---|
//! | `count(*)`, `count(x)` | the same | `coalesce(sum(p), 0)` |
//! | `sum(x)`, `total(x)`, `min(x)`, `max(x)` | the same | the same over the states |
//! | `avg(x)` | `total(x)`, `count(x)` | `total(s) / sum(n)` |
//! | `f(DISTINCT x)` | `x` as one more group key | `f(DISTINCT x)` over the keys |
//!
//! A column outside an aggregate must be one of the `GROUP BY` terms as written (SQLite would
//! take it from an arbitrary row of the group, which differs between shards).

use std::ops::ControlFlow;

use sqlparser::ast::{
    DuplicateTreatment, Expr, FunctionArguments, GroupByExpr, Ident, Query, Select, SelectItem, VisitMut, VisitorMut,
};

use super::expr::{canonical, may_collate};
use super::partial::{Collation, PARTIAL_TABLE, PartialColumn};
use super::refuse::{function_name, is_merged_aggregate, plain_args};
use super::{integer_literal, limit_text, order_terms, refused};
use crate::error::{Error, Result};
use crate::sql::quote_ident;

/// Where a result column's name comes from.
#[derive(Debug)]
enum Name {
    /// Written in the query (an alias, or the text of an expression).
    Given(String),
    /// The name a shard gave the group key it is (SQLite names a column after its declaration).
    GroupKey(usize),
}

/// The plan of an aggregate query.
#[derive(Debug)]
pub(super) struct AggregatePlan {
    groups: Vec<String>,
    distinct_keys: Vec<String>,
    partials: Vec<String>,
    selection: Option<String>,
    /// The merge's result list, HAVING and ORDER BY, over the partial columns.
    items: Vec<(String, Name)>,
    having: Option<String>,
    order: Option<String>,
    limit_text: String,
    distinct: bool,
    /// The partial column each probe decides.
    probe_columns: Vec<String>,
}

impl AggregatePlan {
    pub(super) fn new(
        query: &Query,
        select: &Select,
        names: Option<Vec<String>>,
        probes: &mut Vec<Expr>,
    ) -> Result<Self> {
        let items: Vec<(&Expr, Option<&Ident>)> = select
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::UnnamedExpr(expr) => Ok((expr, None)),
                SelectItem::ExprWithAlias { expr, alias } => Ok((expr, Some(alias))),
                _ => Err(refused("* in an aggregate query")),
            })
            .collect::<Result<_>>()?;
        let GroupByExpr::Expressions(terms, _) = &select.group_by else {
            return Err(refused("GROUP BY ALL"));
        };
        let mut groups = Vec::new();
        for term in terms {
            let expr = match integer_literal(term) {
                Some(number) => {
                    let index = usize::try_from(number).ok().and_then(|n| n.checked_sub(1));
                    match index.and_then(|i| items.get(i)) {
                        Some((expr, _)) => *expr,
                        None => {
                            return Err(Error::from(crate::error::SqlFailure {
                                code: 1,
                                code_name: "SQLITE_ERROR",
                                message: format!(
                                    "GROUP BY term out of range - should be between 1 and {}",
                                    items.len()
                                ),
                            }));
                        }
                    }
                }
                None => term,
            };
            groups.push(expr.clone());
        }
        let aliases: Vec<String> = items.iter().filter_map(|(_, a)| a.map(|a| a.value.clone())).collect();
        let mut rewrite = Rewrite {
            groups: groups.iter().map(canonical).collect(),
            distinct_keys: Vec::new(),
            partials: Vec::new(),
            probe_columns: Vec::new(),
            probes: Vec::new(),
            aliases: Vec::new(),
            error: None,
            replaced: Vec::new(),
            marker: format!("shardlite_m{}", uuid::Uuid::new_v4().simple()),
        };
        for (index, group) in groups.iter().enumerate() {
            if super::expr::has_aggregate(group) {
                return Err(Error::from(crate::error::SqlFailure {
                    code: 1,
                    code_name: "SQLITE_ERROR",
                    message: "aggregate functions are not allowed in the GROUP BY clause".to_owned(),
                }));
            }
            if may_collate(group) {
                rewrite.probe_columns.push(format!("shardlite_g{index}"));
                rewrite.probes.push(group.clone());
            }
        }
        let mut merged_items = Vec::new();
        for (index, (expr, alias)) in items.iter().enumerate() {
            let text = rewrite.run(expr)?;
            let name = match alias {
                Some(alias) => Name::Given(alias.value.clone()),
                None => match strip_nested(expr) {
                    e @ (Expr::Identifier(_) | Expr::CompoundIdentifier(_)) => {
                        let wanted = canonical(e);
                        match groups.iter().position(|g| canonical(g) == wanted) {
                            Some(group) => Name::GroupKey(group),
                            None => Name::Given(e.to_string()),
                        }
                    }
                    _ => Name::Given(
                        names
                            .as_ref()
                            .and_then(|n| n.get(index).cloned())
                            .unwrap_or_else(|| expr.to_string()),
                    ),
                },
            };
            merged_items.push((text, name));
        }
        rewrite.aliases = aliases;
        let having = select.having.as_ref().map(|h| rewrite.run(h)).transpose()?;
        let mut order = Vec::new();
        for term in order_terms(query) {
            let inner = match &term.expr {
                Expr::Collate { expr, .. } => expr.as_ref(),
                other => other,
            };
            let by_name = integer_literal(inner).is_some()
                || matches!(inner, Expr::Identifier(i) if rewrite.aliases.iter().any(|a| a.eq_ignore_ascii_case(&i.value)));
            let expr = if by_name {
                term.expr.to_string()
            } else {
                rewrite.run(&term.expr)?
            };
            order.push(format!("{expr}{}", term.options));
        }
        probes.append(&mut rewrite.probes);
        Ok(Self {
            groups: groups.iter().map(ToString::to_string).collect(),
            distinct_keys: rewrite.distinct_keys.iter().map(ToString::to_string).collect(),
            partials: rewrite.partials,
            selection: select.selection.as_ref().map(ToString::to_string),
            items: merged_items,
            having,
            order: (!order.is_empty()).then(|| order.join(", ")),
            limit_text: limit_text(query),
            distinct: select.distinct.is_some(),
            probe_columns: rewrite.probe_columns,
        })
    }

    fn columns(&self) -> Vec<String> {
        (0..self.groups.len())
            .map(|i| format!("shardlite_g{i}"))
            .chain((0..self.distinct_keys.len()).map(|i| format!("shardlite_d{i}")))
            .chain((0..self.partials.len()).map(|i| format!("shardlite_p{i}")))
            .collect()
    }

    pub(super) fn shard_sql(&self, with: &str, from: &str) -> String {
        let mut columns: Vec<String> = self.groups.clone();
        columns.extend(
            self.distinct_keys
                .iter()
                .enumerate()
                .map(|(i, key)| format!("{key} AS {}", quote_ident(&format!("shardlite_d{i}")))),
        );
        columns.extend(
            self.partials
                .iter()
                .enumerate()
                .map(|(i, partial)| format!("{partial} AS {}", quote_ident(&format!("shardlite_p{i}")))),
        );
        let selection = self
            .selection
            .as_ref()
            .map(|w| format!(" WHERE {w}"))
            .unwrap_or_default();
        let keys: Vec<&String> = self.groups.iter().chain(&self.distinct_keys).collect();
        let group_by = if keys.is_empty() {
            String::new()
        } else {
            format!(
                " GROUP BY {}",
                keys.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
            )
        };
        format!("{with}SELECT {} FROM {from}{selection}{group_by}", columns.join(", "))
    }

    pub(super) fn merge(&self, names: &[String], collations: &[Collation]) -> Result<(Vec<PartialColumn>, String)> {
        let columns: Vec<PartialColumn> = self
            .columns()
            .into_iter()
            .map(|name| {
                let collation = self
                    .probe_columns
                    .iter()
                    .position(|c| *c == name)
                    .and_then(|i| collations.get(i).copied())
                    .unwrap_or(Collation::Binary);
                PartialColumn { name, collation }
            })
            .collect();
        let select: Vec<String> = self
            .items
            .iter()
            .map(|(text, name)| {
                let name = match name {
                    Name::Given(name) => name.clone(),
                    Name::GroupKey(index) => names.get(*index).cloned().unwrap_or_default(),
                };
                format!("{text} AS {}", quote_ident(&name))
            })
            .collect();
        let mut sql = format!(
            "SELECT {}{} FROM {PARTIAL_TABLE}",
            if self.distinct { "DISTINCT " } else { "" },
            select.join(", ")
        );
        if !self.groups.is_empty() {
            let keys: Vec<String> = (0..self.groups.len())
                .map(|i| quote_ident(&format!("shardlite_g{i}")))
                .collect();
            sql.push_str(&format!(" GROUP BY {}", keys.join(", ")));
        }
        if let Some(having) = &self.having {
            sql.push_str(&format!(" HAVING {having}"));
        }
        if let Some(order) = &self.order {
            sql.push_str(&format!(" ORDER BY {order}"));
        }
        sql.push_str(&self.limit_text);
        Ok((columns, sql))
    }
}

fn strip_nested(mut expr: &Expr) -> &Expr {
    while let Expr::Nested(inner) = expr {
        expr = inner;
    }
    expr
}

/// Rewrites expressions of the result list, `HAVING` and `ORDER BY` over the partial columns.
struct Rewrite {
    groups: Vec<String>,
    distinct_keys: Vec<Expr>,
    partials: Vec<String>,
    probe_columns: Vec<String>,
    probes: Vec<Expr>,
    /// Result aliases `HAVING` may name.
    aliases: Vec<String>,
    error: Option<Error>,
    /// What each marker stands for.
    replaced: Vec<String>,
    marker: String,
}

impl Rewrite {
    fn run(&mut self, expr: &Expr) -> Result<String> {
        let mut expr = expr.clone();
        self.replaced.clear();
        let _ = VisitMut::visit(&mut expr, self);
        if let Some(err) = self.error.take() {
            return Err(err);
        }
        let mut text = expr.to_string();
        // Later markers first, so marker 1 is not found inside marker 10.
        for (index, replacement) in self.replaced.iter().enumerate().rev() {
            text = text.replace(&quote_ident(&format!("{}_{index}", self.marker)), replacement);
        }
        Ok(text)
    }

    fn mark(&mut self, replacement: String) -> Expr {
        let ident = Ident::with_quote('"', format!("{}_{}", self.marker, self.replaced.len()));
        self.replaced.push(replacement);
        Expr::Identifier(ident)
    }

    fn partial(&mut self, text: String) -> String {
        let index = match self.partials.iter().position(|p| *p == text) {
            Some(index) => index,
            None => {
                self.partials.push(text);
                self.partials.len() - 1
            }
        };
        quote_ident(&format!("shardlite_p{index}"))
    }

    fn aggregate(&mut self, function: &sqlparser::ast::Function) -> Result<String> {
        let name = function_name(function).unwrap_or_default();
        let FunctionArguments::List(list) = &function.args else {
            return Err(refused(format!("{name}() without an argument list")));
        };
        if !list.clauses.is_empty() || !function.within_group.is_empty() || function.null_treatment.is_some() {
            return Err(refused(format!(
                "{name}() with ORDER BY or other clauses in its arguments"
            )));
        }
        let filter = function
            .filter
            .as_ref()
            .map(|f| format!(" FILTER (WHERE {f})"))
            .unwrap_or_default();
        let args = plain_args(function);
        let star = matches!(
            list.args.as_slice(),
            [sqlparser::ast::FunctionArg::Unnamed(
                sqlparser::ast::FunctionArgExpr::Wildcard
            )]
        ) || list.args.is_empty();
        if matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct)) {
            let Some([arg]) = args.as_deref() else {
                return Err(refused(format!("{name}(DISTINCT …) with other than one argument")));
            };
            if function.filter.is_some() {
                return Err(refused(format!("{name}(DISTINCT …) FILTER")));
            }
            let wanted = canonical(arg);
            let index = match self.distinct_keys.iter().position(|k| canonical(k) == wanted) {
                Some(index) => index,
                None => {
                    self.distinct_keys.push((*arg).clone());
                    let index = self.distinct_keys.len() - 1;
                    if may_collate(arg) {
                        self.probe_columns.push(format!("shardlite_d{index}"));
                        self.probes.push((*arg).clone());
                    }
                    index
                }
            };
            return Ok(format!(
                "{name}(DISTINCT {})",
                quote_ident(&format!("shardlite_d{index}"))
            ));
        }
        if name == "count" && star {
            let p = self.partial(format!("count(*){filter}"));
            return Ok(format!("coalesce(sum({p}), 0)"));
        }
        let Some([arg]) = args.as_deref() else {
            return Err(refused(format!("{name}() with these arguments")));
        };
        Ok(match name.as_str() {
            "count" => {
                let p = self.partial(format!("count({arg}){filter}"));
                format!("coalesce(sum({p}), 0)")
            }
            "avg" => {
                let sum = self.partial(format!("total({arg}){filter}"));
                let count = self.partial(format!("count({arg}){filter}"));
                format!("(total({sum}) / sum({count}))")
            }
            "min" | "max" => {
                let text = format!("{name}({arg}){filter}");
                let known = self.partials.contains(&text);
                let p = self.partial(text);
                if !known && may_collate(arg) {
                    self.probe_columns.push(p.trim_matches('"').to_owned());
                    self.probes.push((*arg).clone());
                }
                format!("{name}({p})")
            }
            _ => {
                let p = self.partial(format!("{name}({arg}){filter}"));
                format!("{name}({p})")
            }
        })
    }
}

impl VisitorMut for Rewrite {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let wanted = canonical(expr);
        if let Some(index) = self.groups.iter().position(|g| *g == wanted) {
            *expr = self.mark(quote_ident(&format!("shardlite_g{index}")));
            return ControlFlow::Continue(());
        }
        match expr {
            Expr::Function(function) if is_merged_aggregate(function) => match self.aggregate(function) {
                Ok(text) => *expr = self.mark(text),
                Err(err) => {
                    self.error = Some(err);
                    return ControlFlow::Break(());
                }
            },
            Expr::Identifier(ident) if ident.value.starts_with(&self.marker) => {}
            Expr::Identifier(ident) if self.aliases.iter().any(|a| a.eq_ignore_ascii_case(&ident.value)) => {}
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => {
                self.error = Some(refused(format!(
                    "column {expr} outside an aggregate function and not in GROUP BY"
                )));
                return ControlFlow::Break(());
            }
            Expr::Subquery(_)
            | Expr::In {
                target: sqlparser::ast::InTarget::Subquery(_) | sqlparser::ast::InTarget::Table { .. },
                ..
            }
            | Expr::Exists { .. } => {
                self.error = Some(refused("a subquery outside an aggregate function in a grouped query"));
                return ControlFlow::Break(());
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}
