//! Expressions of a query across shards: comparing them as SQLite would match them, finding
//! aggregates, and the names SQLite gives result columns.

use std::ops::ControlFlow;

use sqlparser::ast::{Expr, Ident, Query, Select, Visit, VisitMut, Visitor, VisitorMut};
use sqlparser::tokenizer::{Location, Token, Tokenizer};

use super::refuse::is_merged_aggregate;

/// A text for `expr` that is equal for two expressions SQLite treats as the same: identifiers
/// and function names without case or quotes.
pub(super) fn canonical(expr: &Expr) -> String {
    struct Fold;
    impl VisitorMut for Fold {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            let fold = |ident: &mut Ident| {
                ident.value = ident.value.to_ascii_lowercase();
                ident.quote_style = None;
            };
            match expr {
                Expr::Identifier(ident) => fold(ident),
                Expr::CompoundIdentifier(idents) => idents.iter_mut().for_each(fold),
                Expr::Function(function) => {
                    for part in &mut function.name.0 {
                        if let sqlparser::ast::ObjectNamePart::Identifier(ident) = part {
                            fold(ident);
                        }
                    }
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let mut folded = expr.clone();
    let _ = VisitMut::visit(&mut folded, &mut Fold);
    folded.to_string()
}

/// `expr` without the parentheses, unary plus and casts that leave its collation unchanged.
pub(super) fn strip_transparent(mut expr: &Expr) -> &Expr {
    loop {
        match expr {
            Expr::Nested(inner) => expr = inner,
            Expr::UnaryOp {
                op: sqlparser::ast::UnaryOperator::Plus,
                expr: inner,
            } => expr = inner,
            Expr::Cast { expr: inner, .. } => expr = inner,
            _ => return expr,
        }
    }
}

/// Whether `expr` can have a collation other than `BINARY`: SQLite takes a collation from an
/// explicit `COLLATE` anywhere in it, or from a column it is (through parentheses, unary plus
/// and casts); every other expression compares as `BINARY`.
pub(super) fn may_collate(expr: &Expr) -> bool {
    if matches!(
        strip_transparent(expr),
        Expr::Identifier(_) | Expr::CompoundIdentifier(_)
    ) {
        return true;
    }
    let mut found = false;
    let _ = Visit::visit(expr, &mut FindCollate(&mut found));
    found
}

struct FindCollate<'a>(&'a mut bool);

impl Visitor for FindCollate<'_> {
    type Break = ();
    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if matches!(expr, Expr::Collate { .. }) {
            *self.0 = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

/// Whether `expr` calls a merged aggregate outside any subquery of its own.
pub(super) fn has_aggregate(expr: &Expr) -> bool {
    struct Find {
        depth: usize,
        found: bool,
    }
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            if self.depth == 0
                && let Expr::Function(function) = expr
                && is_merged_aggregate(function)
            {
                self.found = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut find = Find { depth: 0, found: false };
    let _ = Visit::visit(expr, &mut find);
    find.found
}

/// The source text of each item of `select`'s result list as written, trimmed, when the text can
/// be split into as many items as the parser found: SQLite names a result column that has no
/// alias and is not a column after its text.
pub(super) fn item_texts(sql: &str, select: &Select) -> Option<Vec<String>> {
    let tokens = Tokenizer::new(&sqlparser::dialect::SQLiteDialect {}, sql)
        .tokenize_with_location()
        .ok()?;
    let start = select.select_token.0.span.start;
    let first = tokens.iter().position(|t| {
        t.span.start == start && matches!(&t.token, Token::Word(w) if w.value.eq_ignore_ascii_case("select"))
    })?;
    let mut items = Vec::new();
    let mut current: Option<(Location, Location)> = None;
    let mut depth = 0usize;
    let mut index = first + 1;
    // DISTINCT or ALL after SELECT belongs to no item.
    while let Some(t) = tokens.get(index) {
        match &t.token {
            Token::Whitespace(_) => index += 1,
            Token::Word(w) if w.value.eq_ignore_ascii_case("distinct") || w.value.eq_ignore_ascii_case("all") => {
                index += 1;
                break;
            }
            _ => break,
        }
    }
    for t in &tokens[index..] {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => break,
            Token::RParen => depth -= 1,
            Token::Comma if depth == 0 => {
                items.push(slice(sql, current.take()?)?);
                continue;
            }
            Token::SemiColon if depth == 0 => break,
            Token::Word(w) if depth == 0 && w.quote_style.is_none() && ends_result_list(&w.value) => break,
            Token::Whitespace(_) => continue,
            _ => {}
        }
        current = Some(match current {
            Some((first, _)) => (first, t.span.end),
            None => (t.span.start, t.span.end),
        });
    }
    items.push(slice(sql, current?)?);
    (items.len() == select.projection.len()).then_some(items)
}

fn ends_result_list(word: &str) -> bool {
    [
        "from",
        "where",
        "group",
        "having",
        "window",
        "order",
        "limit",
        "union",
        "intersect",
        "except",
    ]
    .iter()
    .any(|k| word.eq_ignore_ascii_case(k))
}

/// The text between two token locations (lines and columns count from 1, columns in characters).
fn slice(sql: &str, (start, end): (Location, Location)) -> Option<String> {
    let offset = |at: Location| -> Option<usize> {
        let line_start: usize = sql
            .split_inclusive('\n')
            .take(usize::try_from(at.line).ok()?.checked_sub(1)?)
            .map(str::len)
            .sum();
        let column = usize::try_from(at.column).ok()?.checked_sub(1)?;
        let rest = sql.get(line_start..)?;
        Some(line_start + rest.char_indices().nth(column).map_or(rest.len(), |(i, _)| i))
    };
    sql.get(offset(start)?..offset(end)?).map(|text| text.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use sqlparser::ast::{SetExpr, Statement};
    use sqlparser::dialect::SQLiteDialect;
    use sqlparser::parser::Parser;

    use super::*;

    fn select(sql: &str) -> Box<Select> {
        let Statement::Query(query) = Parser::parse_sql(&SQLiteDialect {}, sql).expect("parse").remove(0) else {
            panic!("not a query")
        };
        let SetExpr::Select(select) = *query.body else {
            panic!("not a select")
        };
        select
    }

    #[test]
    fn item_texts_keep_the_text_as_written() {
        let sql = "SELECT DISTINCT count( * ), a+b,\n  coalesce(x, 'a,b') FROM t WHERE 1";
        assert_eq!(
            item_texts(sql, &select(sql)).expect("split"),
            ["count( * )", "a+b", "coalesce(x, 'a,b')"]
        );
    }

    #[test]
    fn canonical_ignores_case_and_quotes_of_names() {
        let a = select("SELECT Lower(\"Name\") FROM t");
        let b = select("SELECT lower(name) FROM t");
        let item = |s: &Select| match &s.projection[0] {
            sqlparser::ast::SelectItem::UnnamedExpr(e) => canonical(e),
            _ => String::new(),
        };
        assert_eq!(item(&a), item(&b));
    }
}
