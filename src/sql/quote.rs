//! Quoting for SQL text the crate writes itself: identifiers and string literals. Values are
//! bound wherever SQLite allows it; these are for the places it does not (names, trigger bodies).

/// `name` as an SQL identifier: in double quotes, inner double quotes doubled.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `text` as an SQL string literal: in single quotes, inner single quotes doubled.
pub(crate) fn sql_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_inside_are_doubled() {
        assert_eq!(quote_ident(r#"a"b"#), r#""a""b""#);
        assert_eq!(sql_literal("it's"), "'it''s'");
    }
}
