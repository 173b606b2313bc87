//! Statements that reach what a client's SQL must leave alone: the temp schema of a connection
//! other callers share, and shardlite's internal tables (`_shardlite_*`).
//!
//! These are the early refusals, so that a script is refused before its first statement runs;
//! the authorizer enforces the same rules on every statement SQLite compiles, whatever its
//! spelling.

use super::tokens::{Token, Tokens};

/// Whether `statement` creates, drops or alters a TEMP object: `CREATE TEMP ...`,
/// `CREATE TEMPORARY ...`, or a `CREATE`, `DROP` or `ALTER` that names the temp schema
/// (`temp.x`, `"temp".x`).
pub(super) fn changes_temp_schema(statement: &str) -> bool {
    let mut tokens = Tokens { sql: statement, pos: 0 };
    let mut meaningful = std::iter::from_fn(|| {
        while let Some((token, at)) = tokens.next() {
            if token != Token::Space {
                return Some((token, &statement[at..tokens.pos]));
            }
        }
        None
    });
    let is = |text: &str, keyword: &str| text.eq_ignore_ascii_case(keyword);
    let Some((Token::Word, first)) = meaningful.next() else {
        return false;
    };
    if !(is(first, "CREATE") || is(first, "DROP") || is(first, "ALTER")) {
        return false;
    }
    let mut previous_names_temp = false;
    let mut second = true;
    for (token, text) in meaningful {
        if second && token == Token::Word && (is(text, "TEMP") || is(text, "TEMPORARY")) {
            return true;
        }
        second = false;
        if previous_names_temp && text == "." {
            return true;
        }
        previous_names_temp = match token {
            Token::Word => is(text, "temp"),
            Token::Quoted if !text.starts_with('\'') && text.len() >= 2 => is(&text[1..text.len() - 1], "temp"),
            _ => false,
        };
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_temp_object_is_found() {
        for found in [
            "CREATE TEMP TABLE t (x)",
            "create temporary trigger t after insert on x begin select 1; end",
            "/* c */ CREATE TEMP VIEW v AS SELECT 1",
            "CREATE TABLE temp.t (x)",
            "CREATE TABLE \"temp\" . \"t\" (x)",
            "CREATE TABLE [TEMP].t (x)",
            "CREATE UNIQUE INDEX IF NOT EXISTS temp.i ON t (x)",
            "DROP TABLE temp.t",
            "DROP TRIGGER IF EXISTS `temp`.t",
            "ALTER TABLE temp.t ADD COLUMN y",
            "CREATE TEMP TABLE c AS SELECT * FROM t",
        ] {
            assert!(changes_temp_schema(found), "{found}");
        }
        for absent in [
            "CREATE TABLE t (temp)",
            "CREATE TABLE temps (x)",
            "CREATE TABLE t AS SELECT 'temp.' AS x",
            "SELECT * FROM temp.sqlite_master",
            "INSERT INTO t VALUES ('temp')",
            "DROP TABLE t",
            "",
        ] {
            assert!(!changes_temp_schema(absent), "{absent}");
        }
    }
}
