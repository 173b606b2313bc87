//! Statements that reach what a client's SQL must leave alone: the temp schema of a connection
//! other callers share, and shardlite's internal tables (`_shardlite_*`).
//!
//! These are the early refusals, so that a script is refused before its first statement runs;
//! the authorizer enforces the same rules on every statement SQLite compiles, whatever its
//! spelling.

use super::tokens::{Token, Tokens};

/// The prefix of shardlite's internal tables and triggers.
pub(crate) const INTERNAL_PREFIX: &str = "_shardlite_";

const INTERNAL: &[u8] = INTERNAL_PREFIX.as_bytes();

/// The name of an internal table as a literal, for SQL text written once at compile time:
/// `concat!("SELECT count(*) FROM ", internal_table!(collections))`.
macro_rules! internal_table {
    (collections) => {
        "_shardlite_collections"
    };
    (saved_queries) => {
        "_shardlite_saved_queries"
    };
    (procedures) => {
        "_shardlite_procedures"
    };
}
pub(crate) use internal_table;

/// The JSON documents of every collection, by collection and key.
pub(crate) const COLLECTIONS_TABLE: &str = internal_table!(collections);

/// The table of captured changes: one row per captured write of a moving row, in the order the
/// writes committed (`seq`).
pub(crate) const CHANGES_TABLE: &str = "_shardlite_captured_changes";

/// The name every capture trigger starts with.
pub(crate) const CAPTURE_TRIGGER_PREFIX: &str = "_shardlite_capture_";

/// The table holding a shard's route fences, one row per data move.
pub(crate) const FENCES_TABLE: &str = "_shardlite_route_fences";

/// The name every fence trigger starts with.
pub(crate) const FENCE_TRIGGER_PREFIX: &str = "_shardlite_fence_";

/// The table in which a copy records, in each page's own transaction, where it stands.
pub(crate) const COPY_CURSORS_TABLE: &str = "_shardlite_copy_cursors";

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

/// Whether `statement` names an internal table or trigger (`_shardlite_...`, bare or quoted as
/// an identifier), outside string literals and comments.
pub(super) fn names_internal(statement: &str) -> bool {
    // The name cannot be there unless its bytes are: most statements need no tokenizing.
    let bytes = statement.as_bytes();
    let present = memchr::memchr_iter(b'_', bytes).any(|at| {
        bytes
            .get(at..at + INTERNAL.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(INTERNAL))
    });
    if !present {
        return false;
    }
    let starts_internal = |name: &str| {
        name.as_bytes()
            .get(..INTERNAL.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(INTERNAL))
    };
    let mut tokens = Tokens { sql: statement, pos: 0 };
    while let Some((token, at)) = tokens.next() {
        let text = &statement[at..tokens.pos];
        let found = match token {
            Token::Word => starts_internal(text),
            Token::Quoted if !text.starts_with('\'') && text.len() >= 2 => starts_internal(&text[1..]),
            _ => false,
        };
        if found {
            return true;
        }
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

    #[test]
    fn internal_names_are_found_outside_literals() {
        for found in [
            "INSERT INTO _shardlite_collections VALUES (1)",
            "DELETE FROM main._SHARDLITE_route_fences",
            "UPDATE \"_shardlite_procedures\" SET name = 'x'",
            "DROP TRIGGER [_shardlite_fence_0_insert]",
        ] {
            assert!(names_internal(found), "{found}");
        }
        for absent in [
            "INSERT INTO t VALUES ('_shardlite_collections')",
            "INSERT INTO my_shardlite_copy VALUES (1)",
            "SELECT 1 -- _shardlite_collections",
            "INSERT INTO t (a_b) VALUES (1)",
        ] {
            assert!(!names_internal(absent), "{absent}");
        }
    }
}
