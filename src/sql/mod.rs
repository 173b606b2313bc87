//! Reading SQL text without running it: where its statements end, and what each one is.
//!
//! [`statements`] splits a script into statements the way SQLite's own `sqlite3_complete`
//! does, over tokens read as SQLite's tokenizer reads them (string literals, quoted identifiers,
//! comments, Tcl-style parameters such as `@a(x;y)` and `CREATE TRIGGER ... END` bodies keep
//! their semicolons), without recursion and without allocating. [`classify`] names what a
//! statement is as far as the engine's guards care; [`check_script`] refuses, before anything
//! runs anywhere, the statements that no shared connection accepts.
//!
//! This is the early, readable refusal (fan-out uses it so that no shard runs a script another
//! shard would refuse). The enforcement itself is SQLite's authorizer, set on every connection
//! by the engine, which sees every statement as SQLite compiles it, whatever its spelling.
//!
//! Here too are the one definition of each name the crate reserves in a shard file
//! ([`INTERNAL_PREFIX`] and the internal tables) and the quoting of the SQL text it writes
//! ([`quote_ident`], [`sql_literal`]).

mod quote;
mod reserved;
mod tokens;

pub(crate) use self::quote::{quote_ident, sql_literal};
pub(crate) use self::reserved::{
    CAPTURE_TRIGGER_PREFIX, CHANGES_TABLE, COLLECTIONS_TABLE, COPY_CURSORS_TABLE, FENCE_TRIGGER_PREFIX, FENCES_TABLE,
    INTERNAL_PREFIX, internal_table,
};

use self::tokens::{Keyword, State, Token, Tokens, Words, keyword};
use crate::error::{Error, Result};

/// What a statement is, as far as the engine's guards care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementKind<'a> {
    /// `SELECT`, `VALUES`, `WITH ...` or `EXPLAIN ...`: a query (SQLite decides whether it writes).
    Query,
    /// `BEGIN`, `COMMIT`, `END`, `ROLLBACK`, `SAVEPOINT` or `RELEASE`.
    TransactionControl,
    /// `ATTACH`, `DETACH` or `VACUUM ... INTO`: reaches files other than the shard.
    OtherFile,
    /// `PRAGMA [schema.]name [= value | (value)]`.
    Pragma {
        /// The pragma's name, as written.
        name: &'a str,
        /// Whether it sets a value (`= value` or `(value)`).
        has_argument: bool,
    },
    /// Anything else: writes and schema changes.
    Other,
}

/// The statements of `sql`, each without its terminating `;`, skipping empty ones (only white
/// space, comments or semicolons).
pub fn statements(sql: &str) -> Statements<'_> {
    Statements { sql, pos: 0 }
}

/// Iterator returned by [`statements`].
#[derive(Debug, Clone)]
pub struct Statements<'a> {
    sql: &'a str,
    pos: usize,
}

impl<'a> Iterator for Statements<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        while self.pos < self.sql.len() {
            let start = self.pos;
            let mut state = State::Start;
            let mut meaningful = false;
            let mut tokens = Tokens {
                sql: self.sql,
                pos: start,
            };
            let mut end = self.sql.len();
            while let Some((token, at)) = tokens.next() {
                if token != Token::Space && token != Token::Semi {
                    meaningful = true;
                }
                let word = if token == Token::Word {
                    keyword(&self.sql[at..tokens.pos])
                } else {
                    Keyword::None
                };
                state = state.after(token, word);
                if token == Token::Semi && state == State::Start {
                    end = at;
                    break;
                }
            }
            self.pos = if end == self.sql.len() { end } else { end + 1 };
            if meaningful {
                return Some(&self.sql[start..end]);
            }
        }
        None
    }
}

/// Whether `sql` holds exactly one statement (a trailing `;`, comments and white space aside).
pub fn is_single_statement(sql: &str) -> bool {
    // Without a semicolon there is at most one statement, and there is one when a word starts
    // it: the common case needs no tokenizing.
    if memchr::memchr(b';', sql.as_bytes()).is_none() && starts_with_word(sql) {
        return true;
    }
    let mut parts = statements(sql);
    parts.next().is_some() && parts.next().is_none()
}

/// What `statement` (one statement, as [`statements`] yields it) is.
pub fn classify(statement: &str) -> StatementKind<'_> {
    let mut words = Words {
        tokens: Tokens { sql: statement, pos: 0 },
    };
    let first = match plain_leading_word(statement) {
        Some(word) => {
            words.tokens.pos = word.len();
            word
        }
        None => match words.next() {
            Some(word) => word,
            None => return StatementKind::Other,
        },
    };
    let is = |word: &str, keyword: &str| word.eq_ignore_ascii_case(keyword);
    if ["SELECT", "VALUES", "WITH", "EXPLAIN"].iter().any(|k| is(first, k)) {
        StatementKind::Query
    } else if ["BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"]
        .iter()
        .any(|k| is(first, k))
    {
        StatementKind::TransactionControl
    } else if is(first, "ATTACH") || is(first, "DETACH") {
        StatementKind::OtherFile
    } else if is(first, "VACUUM") {
        if words.any(|word| is(word, "INTO")) {
            StatementKind::OtherFile
        } else {
            StatementKind::Other
        }
    } else if is(first, "PRAGMA") {
        pragma(words.tokens)
    } else {
        StatementKind::Other
    }
}

/// Parses what follows `PRAGMA`: `[schema.]name [= value | (value)]`.
fn pragma(mut tokens: Tokens<'_>) -> StatementKind<'_> {
    let mut name = "";
    let mut has_argument = false;
    while let Some((token, at)) = tokens.next() {
        match token {
            Token::Space => {}
            Token::Word | Token::Quoted => {
                let text = &tokens.sql[at..tokens.pos];
                name = text.trim_matches(|c| matches!(c, '"' | '`' | '[' | ']' | '\''));
            }
            Token::Other if tokens.sql[at..].starts_with('.') => name = "",
            Token::Other if tokens.sql[at..].starts_with('=') || tokens.sql[at..].starts_with('(') => {
                has_argument = true;
                break;
            }
            _ => break,
        }
    }
    StatementKind::Pragma { name, has_argument }
}

/// Whether a pragma may run on a connection other callers share.
///
/// Reading a setting is always fine; so are the introspection pragmas whose argument names a
/// table or index, and setting the file's own `user_version` and `application_id`. Everything
/// else that sets a value changes durability, safety or connection state (`journal_mode`,
/// `synchronous`, `writable_schema`, `query_only`, `foreign_keys`, `locking_mode`, ...) and is
/// refused.
pub fn pragma_allowed(name: &str, has_argument: bool) -> bool {
    const INTROSPECTION: &[&str] = &[
        "table_info",
        "table_xinfo",
        "table_list",
        "index_info",
        "index_xinfo",
        "index_list",
        "foreign_key_list",
        "foreign_key_check",
        "integrity_check",
        "quick_check",
        "user_version",
        "application_id",
    ];
    const READ_ONLY: &[&str] = &[
        "application_id",
        "auto_vacuum",
        "busy_timeout",
        "cache_size",
        "collation_list",
        "compile_options",
        "data_version",
        "database_list",
        "encoding",
        "foreign_keys",
        "freelist_count",
        "function_list",
        "journal_mode",
        "module_list",
        "page_count",
        "page_size",
        "pragma_list",
        "query_only",
        "schema_version",
        "synchronous",
        "user_version",
    ];
    let listed = |list: &[&str]| list.iter().any(|known| known.eq_ignore_ascii_case(name));
    if has_argument {
        listed(INTROSPECTION)
    } else {
        listed(READ_ONLY) || listed(INTROSPECTION)
    }
}

/// Refuses, without running anything, a script that holds a statement no shared connection
/// accepts: transaction control, `ATTACH`/`DETACH`/`VACUUM INTO`, a pragma that sets
/// durability, safety or connection state, or a call of `load_extension`. The error names the
/// statement.
pub fn check_script(sql: &str) -> Result<()> {
    for statement in statements(sql) {
        refuse(statement, Allowances::NONE)?;
    }
    Ok(())
}

/// Refuses, without running anything, a script that is not made only of queries: the check a
/// read-only fan-out makes before any shard runs the script.
pub fn check_read_only_script(sql: &str) -> Result<()> {
    for statement in statements(sql) {
        if classify(statement) != StatementKind::Query {
            return Err(Error::ReadOnlyViolation {
                reason: format!("'{}' is not a read-only query", shown(statement)),
            });
        }
        refuse(statement, Allowances::NONE)?;
    }
    Ok(())
}

/// What a connection accepts beyond what every shared connection does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Allowances {
    /// `SAVEPOINT`, `RELEASE` and `ROLLBACK TO` (inside a transaction session).
    pub savepoints: bool,
    /// `ATTACH`, `DETACH` and `VACUUM INTO` (`EngineConfig::allow_attach`).
    pub attach: bool,
    /// TEMP tables, views, triggers and indexes (on a connection that is its caller's own).
    pub temp: bool,
    /// Writing shardlite's internal tables and changing their schema (a maintenance
    /// transaction).
    pub internal: bool,
}

impl Allowances {
    /// What a shared connection accepts.
    pub(crate) const NONE: Self = Self {
        savepoints: false,
        attach: false,
        temp: false,
        internal: false,
    };
}

/// Why a write to an internal table, or a change to its schema or triggers, is refused.
pub(crate) const INTERNAL_REFUSAL: &str = "shardlite's internal tables and triggers (_shardlite_*) are changed only by \
     shardlite: use the collections, saved-query and procedure APIs (reading the tables is allowed)";

/// Why a TEMP object is refused on a shared connection.
pub(crate) const TEMP_REFUSAL: &str = "TEMP tables, views, triggers and indexes would stay on a connection other \
     callers share: create them inside a transaction, whose connection is its own";

/// The refusal for one statement, if a connection with `allow` refuses it.
pub(crate) fn refuse(statement: &str, allow: Allowances) -> Result<()> {
    refuse_kind(statement, classify(statement), allow)
}

/// [`refuse`] for a statement already classified as `kind`.
pub(crate) fn refuse_kind(statement: &str, kind: StatementKind<'_>, allow: Allowances) -> Result<()> {
    let forbidden = |reason| {
        Err(Error::ForbiddenStatement {
            statement: shown(statement),
            reason,
        })
    };
    match kind {
        StatementKind::TransactionControl if !(allow.savepoints && is_savepoint_control(statement)) => {
            return Err(Error::TransactionControl {
                statement: shown(statement),
            });
        }
        StatementKind::OtherFile if !allow.attach => {
            return forbidden("SQL may reach only its own shard: ATTACH, DETACH and VACUUM INTO are refused");
        }
        StatementKind::Pragma { name, has_argument } if !pragma_allowed(name, has_argument) => {
            return forbidden("this pragma changes durability, safety or connection state that other callers share");
        }
        _ => {}
    }
    if mentions_load_extension(statement) {
        return forbidden("loading extensions is not allowed");
    }
    if kind == StatementKind::Other && !allow.temp && reserved::changes_temp_schema(statement) {
        return forbidden(TEMP_REFUSAL);
    }
    // A query may read the internal tables; anything else may not name them. This also keeps a
    // client from sending the exact text of one of the engine's own cached statements.
    if kind != StatementKind::Query && !allow.internal && reserved::names_internal(statement) {
        return forbidden(INTERNAL_REFUSAL);
    }
    Ok(())
}

/// Whether a transaction-control statement only works with savepoints (`SAVEPOINT`, `RELEASE`,
/// `ROLLBACK [TRANSACTION] TO`), which a transaction session may use inside its transaction.
fn is_savepoint_control(statement: &str) -> bool {
    let mut words = Words {
        tokens: Tokens { sql: statement, pos: 0 },
    };
    let is = |word: Option<&str>, keyword: &str| word.is_some_and(|w| w.eq_ignore_ascii_case(keyword));
    let first = words.next();
    if is(first, "SAVEPOINT") || is(first, "RELEASE") {
        return true;
    }
    if !is(first, "ROLLBACK") {
        return false;
    }
    let second = words.next();
    is(second, "TO") || (is(second, "TRANSACTION") && is(words.next(), "TO"))
}

/// Whether a statement calls `load_extension` (as a word, outside literals and comments).
fn mentions_load_extension(statement: &str) -> bool {
    // The word cannot be there unless its bytes are: most statements need no tokenizing.
    const WORD: &[u8] = b"load_extension";
    let bytes = statement.as_bytes();
    let present = memchr::memchr_iter(b'_', bytes)
        .any(|at| at >= 4 && bytes.get(at - 4..at + 10).is_some_and(|w| w.eq_ignore_ascii_case(WORD)));
    if !present {
        return false;
    }
    let mut words = Words {
        tokens: Tokens { sql: statement, pos: 0 },
    };
    words.any(|word| word.eq_ignore_ascii_case("load_extension"))
}

/// The first word of `sql` when nothing needs reading to find it, as in `SELECT …`: ASCII
/// letters from the first byte, then white space. The tokenizer reads the same word there.
fn plain_leading_word(sql: &str) -> Option<&str> {
    let bytes = sql.as_bytes();
    let end = bytes.iter().position(|b| !b.is_ascii_alphabetic())?;
    (end > 0 && bytes[end].is_ascii_whitespace()).then(|| &sql[..end])
}

/// Whether the first thing in `sql` after white space and comments is a word.
fn starts_with_word(sql: &str) -> bool {
    if plain_leading_word(sql).is_some() {
        return true;
    }
    let mut tokens = Tokens { sql, pos: 0 };
    loop {
        match tokens.next() {
            Some((Token::Space, _)) => {}
            Some((Token::Word, _)) => return true,
            _ => return false,
        }
    }
}

/// The placeholders of `statement` (or of a whole script), each as written (`?`, `?2`, `:name`,
/// `@name`, `$name::x(y)`), read as SQLite's tokenizer reads them: string literals, quoted
/// identifiers and comments hold none, and `price$1` is an identifier.
///
/// A `#name` token is yielded too, though SQLite takes it as a placeholder only inside its own
/// nested statements; callers use this to tell which values a script can take before it runs,
/// and one name too many there refuses nothing that would run.
pub(crate) fn placeholders(statement: &str) -> impl Iterator<Item = &str> + '_ {
    let bytes = statement.as_bytes();
    let mut tokens = Tokens { sql: statement, pos: 0 };
    std::iter::from_fn(move || {
        while let Some((token, at)) = tokens.next() {
            match bytes[at] {
                b'?' => {
                    let digits = bytes[at + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
                    tokens.pos = at + 1 + digits;
                    return Some(&statement[at..tokens.pos]);
                }
                b'$' | b'@' | b':' | b'#' if token == Token::Other && tokens.pos > at + 1 => {
                    return Some(&statement[at..tokens.pos]);
                }
                _ => {}
            }
        }
        None
    })
}

/// The start of a statement, for error messages.
pub(crate) fn shown(statement: &str) -> String {
    let trimmed = statement.trim();
    let mut shown: String = trimmed.chars().take(80).collect();
    if shown.len() < trimmed.len() {
        shown.push_str("...");
    }
    shown
}

#[cfg(test)]
mod tests;
