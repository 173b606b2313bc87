//! The properties each fuzz target checks, one function per target.
//!
//! Every function takes the raw bytes the fuzzer produced, ignores what cannot be a `&str`, and panics
//! (so the fuzzer records a crash) when a property fails. The binaries in `src/bin/` only hand their
//! input to these functions (or, built without the fuzzer, replay files through them); `tests/seeds.rs`
//! runs them over the seed corpus with plain `cargo test`.

use std::cell::RefCell;
use std::io::Read;

use rusqlite::fallible_iterator::FallibleIterator;
use rusqlite::{Batch, Connection};
use shardlite::fuzzing::{
    StatementKind, check_read_only_script, check_script, classify, is_single_statement, statements,
};
use shardlite::map::{ShardMap, ShardingOptions};
use shardlite::options::ConnectionOptions;
use shardlite::transaction::TransactionId;

/// Runs `check` over each file named on the command line, or over standard input when none is named:
/// how a target built without the fuzzer replays a crash.
pub fn replay(check: fn(&[u8])) {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        let mut input = Vec::new();
        std::io::stdin()
            .read_to_end(&mut input)
            .expect("standard input is readable");
        check(&input);
    }
    for path in paths {
        let input = std::fs::read(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
        check(&input);
        println!("{path}: ok");
    }
}

/// Connection strings in both forms: parsing never panics, and options that parse print, in each form,
/// to text that parses back to equal options. `Display` prints the same text as the unredacted ADO.NET
/// printer when there is no API key to hide.
pub fn connection_string(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let by_from_str = text.parse::<ConnectionOptions>();
    let Ok(options) = ConnectionOptions::parse(text) else {
        assert!(by_from_str.is_err(), "parse and FromStr disagree on {text:?}");
        return;
    };
    assert_eq!(
        by_from_str.ok().as_ref(),
        Some(&options),
        "parse and FromStr disagree on {text:?}"
    );

    let ado = options.to_connection_string_unredacted();
    match ConnectionOptions::parse(&ado) {
        Ok(again) => assert_eq!(again, options, "{text:?} printed as {ado:?} parses to other options"),
        Err(err) => panic!("{text:?} printed as {ado:?}, which does not parse: {err}"),
    }
    let url = options.to_url();
    match ConnectionOptions::parse(&url) {
        Ok(again) => assert_eq!(again, options, "{text:?} printed as {url:?} parses to other options"),
        Err(err) => panic!("{text:?} printed as {url:?}, which does not parse: {err}"),
    }
    if options.api_key().is_none() {
        assert_eq!(
            options.to_string(),
            ado,
            "Display differs from the ADO.NET form of {text:?}"
        );
    }
}

/// Transaction ids: parsing never panics, and an id that parses prints to text that parses to the same
/// id, and prints the same again.
pub fn transaction_id(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(id) = TransactionId::parse(text) else {
        assert!(
            text.parse::<TransactionId>().is_err(),
            "parse and FromStr disagree on {text:?}"
        );
        return;
    };
    let printed = id.to_string();
    match TransactionId::parse(&printed) {
        Ok(again) => {
            assert_eq!(again, id, "{text:?} printed as {printed:?} parses to another id");
            assert_eq!(again.to_string(), printed);
        }
        Err(err) => panic!("{text:?} printed as {printed:?}, which does not parse: {err}"),
    }
}

/// Shard-map JSON: parsing and validation never panic; options that parse serialise to JSON that parses
/// to equal options; a map that validates resolves routes (its own keyspace in two spellings, its pinned
/// keys and a few others) without panicking, and every route it resolves names one of its shards.
pub fn shard_map(data: &[u8]) {
    let Ok(json) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(options) = ShardingOptions::from_json(json) else {
        assert!(
            ShardMap::from_json(json).is_err(),
            "options refused but map accepted: {json:?}"
        );
        return;
    };
    let stored = options.to_json();
    match ShardingOptions::from_json(&stored) {
        Ok(again) => assert_eq!(again, options, "{json:?} stored as {stored:?} reads back differently"),
        Err(err) => panic!("{json:?} stored as {stored:?}, which does not parse: {err}"),
    }
    let Ok(map) = ShardMap::new(options) else {
        return;
    };
    let keyspace = map.keyspace().to_owned();
    let upper = keyspace.to_uppercase();
    let pinned: Vec<String> = map.options().exact_key_pins.keys().cloned().collect();
    let keys = [
        "",
        " ",
        "k",
        "2026-06",
        "tenant-a",
        " padded ",
        "\u{e9}\u{0}",
        keyspace.as_str(),
    ];
    for route_keyspace in [keyspace.as_str(), upper.as_str(), "other"] {
        for key in keys.iter().copied().chain(pinned.iter().map(String::as_str)) {
            if let Ok(resolution) = map.resolve(route_keyspace, key) {
                assert!(
                    map.shard(resolution.shard_id).is_some(),
                    "{route_keyspace}/{key:?} resolved to an unknown shard"
                );
                assert!(resolution.bucket < map.bucket_count());
            }
        }
    }
    let ranges = map.canonical_ranges();
    assert_eq!(ranges.first().map(|r| r.start_bucket_inclusive), Some(0));
    assert_eq!(
        ranges.last().map(|r| r.end_bucket_exclusive),
        Some(i64::from(map.bucket_count()))
    );
}

/// The SQL classifier: nothing panics; the statements are non-empty, in order, non-overlapping slices
/// of the input; `is_single_statement` agrees with the count; a script that passes the read-only check
/// is made only of queries and passes the general check too.
pub fn classify_sql(data: &[u8]) {
    let Ok(sql) = std::str::from_utf8(data) else {
        return;
    };
    let base = sql.as_ptr() as usize;
    let mut previous_end = 0;
    let mut kinds = Vec::new();
    for statement in statements(sql) {
        let start = (statement.as_ptr() as usize)
            .checked_sub(base)
            .expect("a statement starts before the input");
        let end = start + statement.len();
        assert!(end <= sql.len(), "a statement ends past the input");
        assert!(start >= previous_end, "statements overlap or go backwards in {sql:?}");
        assert_eq!(&sql[start..end], statement);
        assert!(
            !statement.trim_matches(is_sqlite_space).is_empty(),
            "an empty statement was yielded from {sql:?}"
        );
        previous_end = end;
        kinds.push(classify(statement));
    }
    assert_eq!(is_single_statement(sql), kinds.len() == 1, "{sql:?}");
    let script_ok = check_script(sql).is_ok();
    if check_read_only_script(sql).is_ok() {
        assert!(
            kinds.iter().all(|kind| *kind == StatementKind::Query),
            "{sql:?} passed the read-only check with statements {kinds:?}"
        );
        assert!(script_ok, "{sql:?} passed the read-only check but not the general one");
    }
    if script_ok {
        assert!(
            !kinds
                .iter()
                .any(|kind| matches!(kind, StatementKind::TransactionControl | StatementKind::OtherFile)),
            "{sql:?} passed the check with statements {kinds:?}"
        );
    }
}

/// White space as SQLite's tokenizer sees it: not `\v`, nor any non-ASCII space (SQLite reads those as
/// parts of identifiers), unlike [`str::trim`].
fn is_sqlite_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0c' | '\r')
}

thread_local! {
    /// An in-memory database with a small schema, so that scripts naming these tables prepare.
    /// Statements are only prepared, never run, so it never changes.
    static SQLITE: RefCell<Connection> = RefCell::new(schema_database());
}

fn schema_database() -> Connection {
    let connection = Connection::open_in_memory().expect("an in-memory database opens");
    connection
        .execute_batch(
            "CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT);
             CREATE TABLE u (x, y);
             CREATE INDEX u_x ON u (x);
             CREATE VIEW v AS SELECT a, b FROM t;",
        )
        .expect("the schema is created");
    connection
}

/// Statement splitting against SQLite's own: when SQLite prepares every statement of the input (walking
/// it with [`Batch`]), [`statements`] yields as many statements, and each one prepares on its own as a
/// single statement with nothing left over.
pub fn sqlite_split(data: &[u8]) {
    let Ok(sql) = std::str::from_utf8(data) else {
        return;
    };
    // SQLite stops at a NUL byte; the splitter does not, so the two are only comparable without one.
    if sql.contains('\0') {
        return;
    }
    SQLITE.with(|connection| {
        let connection = connection.borrow();
        let mut batch = Batch::new(&connection, sql);
        let mut sqlite_count = 0usize;
        loop {
            match batch.next() {
                Ok(Some(_)) => sqlite_count += 1,
                Ok(None) => break,
                Err(_) => return,
            }
        }
        let ours: Vec<&str> = statements(sql).collect();
        assert_eq!(
            ours.len(),
            sqlite_count,
            "SQLite prepares {sqlite_count} statements from {sql:?}, the splitter yields {ours:?}"
        );
        for statement in ours {
            if let Err(err) = connection.prepare(statement) {
                panic!("{statement:?}, split from {sql:?}, does not prepare alone: {err}");
            }
        }
    });
}
