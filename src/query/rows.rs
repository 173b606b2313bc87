//! Plain queries across shards (no aggregate, no `GROUP BY`): each shard returns its rows with
//! their sort keys, at most `limit + offset` of them when the query has a `LIMIT`; the merge
//! sorts (a k-way merge done by SQLite), removes duplicates for `DISTINCT`, and applies the
//! `LIMIT` and `OFFSET`.

use sqlparser::ast::{Expr, OrderBySort, Query, Select, SelectItem};

use super::expr::{canonical, may_collate};
use super::partial::{Collation, PARTIAL_TABLE, PartialColumn};
use super::sorted::{RowMerge, SortTerm};
use super::{integer_literal, limit_parts, limit_text, order_terms, refused};
use crate::data::{SqlResult, Value};
use crate::error::{Error, Result};
use crate::sql::quote_ident;

/// A column the merge sorts on: a result column, or a key shipped after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortColumn {
    Output(usize),
    Key(usize),
}

#[derive(Debug)]
struct Term {
    target: SortColumn,
    collate: Option<String>,
    descending: bool,
    nulls_first: Option<bool>,
}

/// The plan of a plain query.
#[derive(Debug)]
pub(super) struct RowsPlan {
    distinct: bool,
    /// The result list as the shards run it (items without a name get their text as alias).
    items: Vec<String>,
    /// Sort keys shipped after the result columns.
    keys: Vec<String>,
    order: Vec<Term>,
    /// The original `ORDER BY` clause, run by the shards too.
    order_text: String,
    limit: Option<Expr>,
    offset: Option<Expr>,
    limit_text: String,
    /// The partial column each probe decides.
    probe_targets: Vec<SortColumn>,
    selection: Option<String>,
}

impl RowsPlan {
    pub(super) fn new(
        query: &Query,
        select: &Select,
        names: Option<Vec<String>>,
        probes: &mut Vec<Expr>,
    ) -> Result<Self> {
        let distinct = select.distinct.is_some();
        let first_star = select
            .projection
            .iter()
            .position(|item| matches!(item, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)));
        if distinct && first_star.is_some() {
            return Err(refused("SELECT DISTINCT with *"));
        }
        let before_star = |index: usize| first_star.is_none_or(|star| index < star);
        let mut items = Vec::new();
        let mut exprs: Vec<Option<(&Expr, Option<&str>)>> = Vec::new();
        for (index, item) in select.projection.iter().enumerate() {
            match item {
                SelectItem::UnnamedExpr(expr) => {
                    let plain = matches!(
                        super::expr::strip_transparent(expr),
                        Expr::Identifier(_) | Expr::CompoundIdentifier(_)
                    ) && matches!(
                        expr,
                        Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Nested(_)
                    );
                    match names.as_ref().and_then(|n| n.get(index)) {
                        Some(name) if !plain => items.push(format!("{expr} AS {}", quote_ident(name))),
                        _ => items.push(expr.to_string()),
                    }
                    exprs.push(Some((expr, None)));
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    items.push(item.to_string());
                    exprs.push(Some((expr, Some(alias.value.as_str()))));
                }
                _ => {
                    items.push(item.to_string());
                    exprs.push(None);
                }
            }
        }
        let mut keys: Vec<String> = Vec::new();
        let mut key_exprs: Vec<&Expr> = Vec::new();
        let mut order = Vec::new();
        for (position, term) in order_terms(query).iter().enumerate() {
            let (inner, collate) = match &term.expr {
                Expr::Collate { expr, collation } => (expr.as_ref(), Some(collation.to_string())),
                other => (other, None),
            };
            let target = if let Some(number) = integer_literal(inner) {
                let count = select.projection.len();
                let index = usize::try_from(number).ok().and_then(|n| n.checked_sub(1));
                match index {
                    Some(index) if index < count && before_star(index) => SortColumn::Output(index),
                    Some(_) if first_star.is_some() => return Err(refused("ORDER BY a column number at or after *")),
                    _ => return Err(out_of_range(position, count)),
                }
            } else if let Some(index) = alias_of(inner, &exprs) {
                match exprs[index] {
                    _ if before_star(index) => SortColumn::Output(index),
                    Some((expr, _)) => new_key(expr, distinct, &mut keys, &mut key_exprs)?,
                    None => return Err(refused("ORDER BY a name this query does not give")),
                }
            } else {
                let wanted = canonical(&term.expr);
                let same = exprs
                    .iter()
                    .enumerate()
                    .position(|(i, e)| before_star(i) && e.is_some_and(|(e, _)| canonical(e) == wanted));
                match same {
                    Some(index) => SortColumn::Output(index),
                    None => new_key(&term.expr, distinct, &mut keys, &mut key_exprs)?,
                }
            };
            let collate = if matches!(target, SortColumn::Key(_)) && canonical(inner) != canonical(&term.expr) {
                // The key shipped is the whole term, COLLATE included: its column carries it.
                None
            } else {
                collate
            };
            order.push(Term {
                target,
                collate,
                descending: matches!(term.options.sort, Some(OrderBySort::Desc)),
                nulls_first: term.options.nulls_first,
            });
        }
        let mut probe_targets = Vec::new();
        let mut probe = |target: SortColumn, expr: &Expr, probes: &mut Vec<Expr>| {
            if may_collate(expr) && !probe_targets.contains(&target) {
                probe_targets.push(target);
                probes.push(expr.clone());
            }
        };
        for (index, item) in exprs.iter().enumerate() {
            let compared = distinct || order.iter().any(|t| t.target == SortColumn::Output(index));
            if let Some((expr, _)) = item
                && compared
            {
                probe(SortColumn::Output(index), expr, probes);
            }
        }
        for (index, expr) in key_exprs.iter().enumerate() {
            probe(SortColumn::Key(index), expr, probes);
        }
        let (limit, offset) = limit_parts(query);
        Ok(Self {
            distinct,
            items,
            keys,
            order,
            order_text: query.order_by.as_ref().map(|o| format!(" {o}")).unwrap_or_default(),
            limit: limit.cloned(),
            offset: offset.cloned(),
            limit_text: limit_text(query),
            probe_targets,
            selection: select.selection.as_ref().map(ToString::to_string),
        })
    }

    /// `SELECT CAST(limit AS INTEGER), CAST(offset AS INTEGER)` when they are not numbers.
    pub(super) fn limit_statement(&self) -> Option<String> {
        let limit = self.limit.as_ref()?;
        let offset_literal = self.offset.as_ref().is_none_or(|o| integer_literal(o).is_some());
        if integer_literal(limit).is_some() && offset_literal {
            return None;
        }
        let offset = self.offset.as_ref().map_or_else(|| "0".to_owned(), ToString::to_string);
        // A value SQLite refuses as a LIMIT (2.5, 'ten') is refused by the merge statement, which
        // keeps the query's own LIMIT and OFFSET; the types say when the values can be used as
        // they are.
        Some(format!(
            "SELECT CAST(({limit}) AS INTEGER), CAST(({offset}) AS INTEGER), typeof(({limit})), typeof(({offset}))"
        ))
    }

    /// The merge of the shards' sorted rows without SQLite ([`RowMerge`]), when it gives
    /// SQLite's answer: no `DISTINCT`, a collation SQLite has built in for every `ORDER BY`
    /// term, and integers for `LIMIT` and `OFFSET` (`limit_values` is what the limit statement
    /// found, if one ran).
    pub(super) fn row_merge(
        &self,
        names: &[String],
        collations: &[Collation],
        limit_values: Option<&SqlResult>,
    ) -> Option<RowMerge> {
        if self.distinct {
            return None;
        }
        let outputs = names.len().checked_sub(self.keys.len())?;
        let mut terms = Vec::with_capacity(self.order.len());
        for term in &self.order {
            let collation = match &term.collate {
                Some(name) => built_in(name)?,
                None => self
                    .probe_targets
                    .iter()
                    .zip(collations)
                    .find(|(target, _)| **target == term.target)
                    .map_or(Collation::Binary, |(_, collation)| *collation),
            };
            terms.push(SortTerm {
                column: match term.target {
                    SortColumn::Output(index) => index,
                    SortColumn::Key(index) => outputs + index,
                },
                descending: term.descending,
                nulls_first: term.nulls_first.unwrap_or(!term.descending),
                collation,
            });
        }
        let (limit, offset) = match (&self.limit, limit_values.and_then(|r| r.rows.first())) {
            (None, _) if self.offset.is_some() => return None,
            (None, _) => (-1, 0),
            (Some(_), Some(row)) => {
                let integer = |index: usize| row.get(index).and_then(Value::as_str) == Some("integer");
                if !(integer(2) && integer(3)) {
                    return None;
                }
                (row.first()?.as_i64()?, row.get(1)?.as_i64()?)
            }
            (Some(limit), None) => (
                integer_literal(limit)?,
                self.offset.as_ref().map_or(Some(0), integer_literal)?,
            ),
        };
        Some(RowMerge {
            outputs,
            terms,
            // SQLite reads a negative OFFSET as none, and a negative LIMIT as no limit.
            offset: usize::try_from(offset.max(0)).unwrap_or(usize::MAX),
            limit: (limit >= 0).then(|| usize::try_from(limit).unwrap_or(usize::MAX)),
        })
    }

    /// How many rows each shard returns at most: `limit + offset`, or all for a negative limit.
    fn pushed(&self, values: Option<&SqlResult>) -> Option<i64> {
        let limit = self.limit.as_ref()?;
        let (limit, offset) = match values.and_then(|r| r.rows.first()) {
            Some(row) => (row.first().and_then(Value::as_i64), row.get(1).and_then(Value::as_i64)),
            None => (
                integer_literal(limit),
                self.offset.as_ref().map_or(Some(0), integer_literal),
            ),
        };
        let (limit, offset) = (limit?, offset.unwrap_or(0));
        (limit >= 0).then(|| limit.saturating_add(offset.max(0)))
    }

    pub(super) fn shard_sql(&self, with: &str, from: &str, limit_values: Option<&SqlResult>) -> String {
        let mut columns = self.items.clone();
        columns.extend(
            self.keys
                .iter()
                .enumerate()
                .map(|(index, key)| format!("{key} AS {}", quote_ident(&format!("shardlite_k{index}")))),
        );
        let distinct = if self.distinct { "DISTINCT " } else { "" };
        let selection = self
            .selection
            .as_ref()
            .map(|w| format!(" WHERE {w}"))
            .unwrap_or_default();
        let limit = self
            .pushed(limit_values)
            .map(|rows| format!(" LIMIT {rows}"))
            .unwrap_or_default();
        format!(
            "{with}SELECT {distinct}{} FROM {from}{selection}{}{limit}",
            columns.join(", "),
            self.order_text
        )
    }

    pub(super) fn merge(&self, names: &[String], collations: &[Collation]) -> Result<(Vec<PartialColumn>, String)> {
        let outputs = names.len().checked_sub(self.keys.len()).ok_or_else(|| {
            Error::from(crate::error::SqlFailure {
                code: 1,
                code_name: "SQLITE_ERROR",
                message: "a shard returned fewer columns than the query has sort keys".to_owned(),
            })
        })?;
        let mut columns: Vec<PartialColumn> = (0..names.len())
            .map(|index| PartialColumn {
                name: format!("shardlite_c{index}"),
                collation: Collation::Binary,
            })
            .collect();
        let index_of = |target: SortColumn| match target {
            SortColumn::Output(index) => index,
            SortColumn::Key(index) => outputs + index,
        };
        for (target, collation) in self.probe_targets.iter().zip(collations) {
            if let Some(column) = columns.get_mut(index_of(*target)) {
                column.collation = *collation;
            }
        }
        let select: Vec<String> = (0..outputs)
            .map(|index| {
                format!(
                    "{} AS {}",
                    quote_ident(&columns[index].name),
                    quote_ident(&names[index])
                )
            })
            .collect();
        let order: Vec<String> = self
            .order
            .iter()
            .map(|term| {
                let mut text = quote_ident(&columns[index_of(term.target)].name);
                if let Some(collation) = &term.collate {
                    text.push_str(&format!(" COLLATE {collation}"));
                }
                text.push_str(if term.descending { " DESC" } else { " ASC" });
                match term.nulls_first {
                    Some(true) => text.push_str(" NULLS FIRST"),
                    Some(false) => text.push_str(" NULLS LAST"),
                    None => {}
                }
                text
            })
            .collect();
        let order = if order.is_empty() {
            String::new()
        } else {
            format!(" ORDER BY {}", order.join(", "))
        };
        let distinct = if self.distinct { "DISTINCT " } else { "" };
        let sql = format!(
            "SELECT {distinct}{} FROM {PARTIAL_TABLE}{order}{}",
            select.join(", "),
            self.limit_text
        );
        Ok((columns, sql))
    }
}

/// A collation SQLite has built in, by the name a query gave it.
fn built_in(name: &str) -> Option<Collation> {
    [Collation::Binary, Collation::NoCase, Collation::RTrim]
        .into_iter()
        .find(|collation| collation.name().eq_ignore_ascii_case(name))
}

fn alias_of(expr: &Expr, items: &[Option<(&Expr, Option<&str>)>]) -> Option<usize> {
    let Expr::Identifier(ident) = expr else {
        return None;
    };
    items.iter().position(|item| {
        item.and_then(|(_, alias)| alias)
            .is_some_and(|alias| alias.eq_ignore_ascii_case(&ident.value))
    })
}

fn new_key<'q>(
    expr: &'q Expr,
    distinct: bool,
    keys: &mut Vec<String>,
    exprs: &mut Vec<&'q Expr>,
) -> Result<SortColumn> {
    if distinct {
        return Err(refused("SELECT DISTINCT ordered by a term that is not in its result"));
    }
    keys.push(expr.to_string());
    exprs.push(expr);
    Ok(SortColumn::Key(keys.len() - 1))
}

fn out_of_range(position: usize, count: usize) -> Error {
    let ordinal = match position + 1 {
        1 => "1st".to_owned(),
        2 => "2nd".to_owned(),
        3 => "3rd".to_owned(),
        n => format!("{n}th"),
    };
    Error::from(crate::error::SqlFailure {
        code: 1,
        code_name: "SQLITE_ERROR",
        message: format!("{ordinal} ORDER BY term out of range - should be between 1 and {count}"),
    })
}
