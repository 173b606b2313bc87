//! Running SQL text on one connection: binding, script execution and read-only enforcement.

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::time::Instant;

use rusqlite::{CachedStatement, Connection, Statement};

use super::guard;
use super::sqlite_error::sql_error;
use super::value::value_from_ref;
use crate::data::{Params, RowRef, SqlResult, Value};
use crate::error::{Error, Result};
use crate::sql;

/// Whether statements may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScriptMode {
    /// Anything SQLite accepts.
    ReadWrite,
    /// Only queries; refused before anything runs otherwise.
    ReadOnly,
}

/// Binds `params` to one statement. Returns the named parameters it used.
fn bind<'p>(stmt: &mut Statement<'_>, params: &'p Params, used: &mut BTreeSet<&'p str>) -> Result<()> {
    let count = stmt.parameter_count();
    match params {
        Params::Positional(values) => {
            if count > values.len() {
                return Err(Error::invalid_argument(
                    "parameters",
                    format!(
                        "the statement has {count} positional placeholder(s) but {} value(s) were given",
                        values.len()
                    ),
                ));
            }
            for index in 1..=count {
                if let Some(name) = stmt.parameter_name(index)
                    && !name.starts_with('?')
                {
                    return Err(Error::invalid_argument(
                        "parameters",
                        format!("placeholder '{name}' is named: pass parameters as a JSON object, not an array"),
                    ));
                }
                stmt.raw_bind_parameter(index, &values[index - 1]).map_err(sql_error)?;
            }
        }
        Params::Named(values) => {
            for index in 1..=count {
                let Some(name) = stmt.parameter_name(index) else {
                    continue;
                };
                if name.starts_with('?') {
                    return Err(Error::invalid_argument(
                        "parameters",
                        format!("placeholder '{name}' is positional: pass parameters as a JSON array, not an object"),
                    ));
                }
                let bare = &name[1..];
                let Some((key, value)) = values.get_key_value(bare) else {
                    return Err(Error::invalid_argument(
                        "parameters",
                        format!("no value was given for placeholder '{name}'"),
                    ));
                };
                used.insert(key.as_str());
                stmt.raw_bind_parameter(index, value).map_err(sql_error)?;
            }
        }
    }
    Ok(())
}

/// Runs one bound statement, collecting rows if it returns any and counting rows changed.
///
/// Rows are buffered up to the job's row and byte limits; past them the statement stops with
/// [`Error::ResultTooLarge`].
fn run(conn: &Connection, statement: &str, stmt: &mut Statement<'_>, out: &mut SqlResult) -> Result<()> {
    let columns = stmt.column_count();
    let before = conn.total_changes();
    let rowid_before = conn.last_insert_rowid();
    if columns > 0 {
        let (max_rows, max_bytes) = guard::result_limits();
        out.is_query = true;
        out.column_names = stmt.column_names().into_iter().map(str::to_owned).collect();
        out.rows.clear();
        let mut bytes = 0usize;
        let mut rows = stmt.raw_query();
        while let Some(row) = rows.next().map_err(sql_error)? {
            if out.rows.len() >= max_rows {
                return Err(Error::ResultTooLarge {
                    limit: u64::try_from(max_rows).unwrap_or(u64::MAX),
                    unit: "rows",
                });
            }
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                let value = value_from_ref(row.get_ref(i).map_err(sql_error)?);
                bytes = bytes.saturating_add(match &value {
                    Value::Text(text) => text.len(),
                    Value::Blob(blob) => blob.len(),
                    _ => 8,
                });
                values.push(value);
            }
            if bytes > max_bytes {
                return Err(Error::ResultTooLarge {
                    limit: u64::try_from(max_bytes).unwrap_or(u64::MAX),
                    unit: "bytes",
                });
            }
            out.rows.push(values);
        }
    } else {
        stmt.raw_execute().map_err(sql_error)?;
    }
    let changed = conn.total_changes().saturating_sub(before);
    out.rows_affected += changed;
    if changed > 0 {
        // SQLite keeps the last rowid per connection, and a shared connection's value may be
        // another caller's: report it only when this statement inserted (the value moved, or an
        // INSERT or REPLACE changed rows, which covers a rowid equal to the previous one).
        let rowid = conn.last_insert_rowid();
        let keyword = leading_keyword(statement);
        if rowid != rowid_before || keyword.eq_ignore_ascii_case("INSERT") || keyword.eq_ignore_ascii_case("REPLACE") {
            out.last_insert_rowid = Some(rowid);
        }
    }
    Ok(())
}

/// Whether a statement, prepared from `text` (which reads as a query), is one that read-only SQL
/// may run: SQLite reports it read-only, and it returns rows.
fn check_read_only(stmt: &Statement<'_>, text: &str) -> Result<()> {
    if !stmt.readonly() || stmt.column_count() == 0 {
        let shown: String = text.trim().chars().take(80).collect();
        return Err(Error::ReadOnlyViolation {
            reason: format!("'{shown}' is not a read-only query"),
        });
    }
    Ok(())
}

/// The first SQL keyword of `sql` as written, skipping white space and comments. Borrowed: this
/// runs on every statement, so it must not allocate.
pub(crate) fn leading_keyword(sql: &str) -> &str {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, tail)| tail);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, tail)| tail);
        } else {
            break;
        }
    }
    let end = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
    &rest[..end]
}

/// Whether `sql` starts with a query keyword (SELECT, VALUES, WITH, EXPLAIN), in any case: what
/// [`classify`](sql::classify) calls a query.
pub(crate) fn starts_like_query(sql: &str) -> bool {
    sql::classify(sql) == sql::StatementKind::Query
}

/// Executes SQL text (one statement or a script) with bound parameters.
///
/// A single statement goes through the prepared-statement cache. A script runs statement by
/// statement, each prepared on its own, so its length costs no stack. In read-only mode every
/// statement is prepared and checked before any runs, so a script either runs whole or not at all.
/// Errors from the connection's guard (a refused statement, a time limit, a caller gone away)
/// name the statement.
pub(crate) fn execute(conn: &Connection, sql: &str, params: &Params, access: ScriptMode) -> Result<SqlResult> {
    execute_from(Instant::now(), conn, sql, params, access)
}

/// [`execute`] for a caller that read the clock at `started`: the first statement's time limit
/// and the result's elapsed time count from then.
pub(crate) fn execute_from(
    started: Instant,
    conn: &Connection,
    sql: &str,
    params: &Params,
    access: ScriptMode,
) -> Result<SqlResult> {
    if is_blank(sql) {
        return Err(Error::invalid_argument("sql", "the SQL text is empty"));
    }
    let mut out = SqlResult::default();
    let mut used = BTreeSet::new();
    let mut most_positional = 0;
    if sql::is_single_statement(sql) {
        let mut stmt = prepare_single(conn, sql, sql::classify(sql), params, access, started, &mut used)?;
        // Values no placeholder takes are refused before the statement runs, not after.
        check_positional_surplus(params, stmt.parameter_count())?;
        check_named_used(params, &used)?;
        run(conn, sql, &mut stmt, &mut out).map_err(|err| guard::explain(err, sql))?;
        most_positional = stmt.parameter_count();
    } else {
        // Nothing of a script runs if any of its statements would be refused when its turn came,
        // or if it was given values none of its placeholders can take.
        check_script_values(sql, params)?;
        for statement in sql::statements(sql) {
            if access == ScriptMode::ReadOnly {
                check_query_text(statement)?;
            }
            guard::precheck(statement)?;
        }
        if access == ScriptMode::ReadOnly {
            for statement in sql::statements(sql) {
                guard::statement_started(false);
                let stmt = conn
                    .prepare(statement)
                    .map_err(|err| guard::explain(sql_error(err), statement))?;
                check_read_only(&stmt, statement)?;
            }
        }
        // Later statements may depend on earlier ones (CREATE then INSERT): prepare each as it runs.
        for statement in sql::statements(sql) {
            if guard::cancelled() {
                return Err(Error::Cancelled);
            }
            guard::statement_started(is_vacuum(statement));
            let mut stmt = conn
                .prepare(statement)
                .map_err(|err| guard::explain(sql_error(err), statement))?;
            bind(&mut stmt, params, &mut used)?;
            run(conn, statement, &mut stmt, &mut out).map_err(|err| guard::explain(err, statement))?;
            most_positional = most_positional.max(stmt.parameter_count());
        }
    }
    check_positional_surplus(params, most_positional)?;
    check_named_used(params, &used)?;
    out.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(out)
}

/// Checks, prepares (through the statement cache), starts the clock of and binds one statement,
/// classified as `kind`.
fn prepare_single<'c, 'p>(
    conn: &'c Connection,
    sql: &str,
    kind: sql::StatementKind<'_>,
    params: &'p Params,
    access: ScriptMode,
    started: Instant,
    used: &mut BTreeSet<&'p str>,
) -> Result<CachedStatement<'c>> {
    if access == ScriptMode::ReadOnly && kind != sql::StatementKind::Query {
        return Err(not_a_query(sql));
    }
    guard::precheck_kind(sql, kind)?;
    guard::statement_started_at(kind != sql::StatementKind::Query && is_vacuum(sql), started);
    let mut stmt = conn
        .prepare_cached(sql)
        .map_err(|err| guard::explain(sql_error(err), sql))?;
    if access == ScriptMode::ReadOnly {
        check_read_only(&stmt, sql)?;
    }
    bind(&mut stmt, params, used)?;
    Ok(stmt)
}

/// Runs one statement, classified as `kind` and started at `started` (its time limit counts
/// from then), and lends each row it returns to `each`, in place (no value is copied, no column
/// name built), until the rows end or `each` breaks. The parameters are checked before the
/// statement steps, so a mistake in them runs nothing. Rows count against the job's row limit;
/// what `each` keeps of them is its own.
pub(crate) fn query_with(
    conn: &Connection,
    sql: &str,
    kind: sql::StatementKind<'_>,
    params: &Params,
    access: ScriptMode,
    started: Instant,
    each: &mut dyn FnMut(&RowRef<'_>) -> Result<ControlFlow<()>>,
) -> Result<()> {
    if is_blank(sql) {
        return Err(Error::invalid_argument("sql", "the SQL text is empty"));
    }
    require_single_statement(sql)?;
    let mut used = BTreeSet::new();
    let mut stmt = prepare_single(conn, sql, kind, params, access, started, &mut used)?;
    check_positional_surplus(params, stmt.parameter_count())?;
    check_named_used(params, &used)?;
    let columns = stmt.column_count();
    let (max_rows, _) = guard::result_limits();
    let mut seen = 0usize;
    let mut rows = stmt.raw_query();
    while let Some(row) = rows.next().map_err(|err| guard::explain(sql_error(err), sql))? {
        if seen >= max_rows {
            return Err(Error::ResultTooLarge {
                limit: u64::try_from(max_rows).unwrap_or(u64::MAX),
                unit: "rows",
            });
        }
        seen += 1;
        if each(&RowRef::sqlite(row, columns))?.is_break() {
            break;
        }
    }
    Ok(())
}

/// Refuses a script where one statement is wanted (a query whose rows go to a closure).
pub(crate) fn require_single_statement(sql: &str) -> Result<()> {
    if sql::is_single_statement(sql) {
        Ok(())
    } else {
        Err(Error::invalid_argument(
            "sql",
            "a query with a row closure takes one statement; run scripts with execute_sql",
        ))
    }
}

/// Whether `sql` is empty or white space only. It stops at the first other character, where
/// `trim` would read the text from both ends.
fn is_blank(sql: &str) -> bool {
    sql.chars().all(char::is_whitespace)
}

/// Refuses, before it is prepared, a statement that read-only SQL cannot run because it is not
/// a query at all (so `ATTACH` or `PRAGMA x = y` is a read-only violation, like any other write).
fn check_query_text(statement: &str) -> Result<()> {
    if sql::classify(statement) == sql::StatementKind::Query {
        Ok(())
    } else {
        Err(not_a_query(statement))
    }
}

fn not_a_query(statement: &str) -> Error {
    Error::ReadOnlyViolation {
        reason: format!("'{}' is not a read-only query", sql::shown(statement)),
    }
}

/// Whether a statement is a plain `VACUUM`, which attaches a temporary database of its own.
fn is_vacuum(statement: &str) -> bool {
    leading_keyword(statement).eq_ignore_ascii_case("VACUUM")
}

/// Refuses named values that no placeholder used.
fn check_named_used(params: &Params, used: &BTreeSet<&str>) -> Result<()> {
    if let Params::Named(values) = params
        && let Some(unused) = values.keys().find(|k| !used.contains(k.as_str()))
    {
        return Err(unused_name(unused));
    }
    Ok(())
}

fn unused_name(name: &str) -> Error {
    Error::invalid_argument(
        "parameters",
        format!("parameter '{name}' does not match any placeholder in the SQL"),
    )
}

/// Refuses, before any statement of a script runs, values that none of its placeholders can
/// take: a named value whose name no placeholder in the text has, or more positional values
/// than any of its statements numbers. Its statements are prepared one at a time as they run (a
/// later one may need a table an earlier one creates), so this reads the text as SQLite's
/// tokenizer would; the checks after the run still judge what SQLite itself prepared.
fn check_script_values(sql: &str, params: &Params) -> Result<()> {
    match params {
        Params::Named(values) if !values.is_empty() => {
            let mut named = BTreeSet::new();
            for statement in sql::statements(sql) {
                named.extend(sql::placeholders(statement).filter_map(|p| p.strip_prefix(['$', '@', ':', '#'])));
            }
            match values.keys().find(|k| !named.contains(k.as_str())) {
                Some(unused) => Err(unused_name(unused)),
                None => Ok(()),
            }
        }
        Params::Positional(values) if !values.is_empty() => {
            let most = sql::statements(sql).map(placeholder_count).max().unwrap_or(0);
            check_positional_surplus(params, most)
        }
        _ => Ok(()),
    }
}

/// How many values `statement` takes, read from its text as SQLite numbers its placeholders:
/// `?` takes one past the highest number so far, `?NNN` takes NNN, and a name takes one past
/// the highest the first time it appears.
fn placeholder_count(statement: &str) -> usize {
    let mut highest = 0usize;
    let mut names = BTreeSet::new();
    for placeholder in sql::placeholders(statement) {
        match placeholder.strip_prefix('?') {
            Some("") => highest = highest.saturating_add(1),
            Some(number) => highest = highest.max(number.parse().unwrap_or(usize::MAX)),
            // A name numbers a value the first time it appears only.
            None if !names.insert(placeholder) => {}
            None => highest = highest.saturating_add(1),
        }
    }
    highest
}

fn check_positional_surplus(params: &Params, most: usize) -> Result<()> {
    match params {
        Params::Positional(values) if values.len() > most => Err(Error::invalid_argument(
            "parameters",
            format!(
                "{} value(s) were given but the SQL has only {most} positional placeholder(s)",
                values.len()
            ),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RW: ScriptMode = ScriptMode::ReadWrite;
    use crate::data::Value;

    #[test]
    fn leading_keyword_skips_comments() {
        assert_eq!(leading_keyword("  -- hi\n /* x */ select 1"), "select");
        assert_eq!(leading_keyword("with x as (select 1) delete from t"), "with");
        assert_eq!(leading_keyword("/* unterminated"), "");
        assert!(starts_like_query("  -- hi\n /* x */ SeLeCt 1"));
        assert!(starts_like_query("VALUES (1)"));
        assert!(!starts_like_query("selective"));
        assert!(!starts_like_query("DELETE FROM t"));
    }

    #[test]
    fn parameters_bind_by_position_and_name() {
        let conn = Connection::open_in_memory().unwrap();
        let r = execute(&conn, "SELECT ?1 + ?2", &Params::from(vec![2, 3]), RW).unwrap();
        assert_eq!(r.rows, vec![vec![Value::Integer(5)]]);
        let r = execute(
            &conn,
            "SELECT :a || @b || $c",
            &Params::named([("a", "x"), ("b", "y"), ("c", "z")]),
            RW,
        )
        .unwrap();
        assert_eq!(r.rows, vec![vec![Value::Text("xyz".into())]]);
    }

    #[test]
    fn parameter_mismatches_are_named() {
        let conn = Connection::open_in_memory().unwrap();
        let err = execute(&conn, "SELECT ?", &Params::none(), RW).unwrap_err();
        assert!(err.to_string().contains("1 positional placeholder"), "{err}");
        let err = execute(&conn, "SELECT :a", &Params::named([("b", 1)]), RW).unwrap_err();
        assert!(err.to_string().contains(":a"), "{err}");
        let err = execute(&conn, "SELECT :a", &Params::named([("a", 1), ("zz", 2)]), RW).unwrap_err();
        assert!(err.to_string().contains("zz"), "{err}");
        let err = execute(&conn, "SELECT 1", &Params::from(vec![1]), RW).unwrap_err();
        assert!(err.to_string().contains("1 value"), "{err}");
    }

    #[test]
    fn a_script_given_values_it_cannot_take_runs_nothing() {
        let conn = Connection::open_in_memory().unwrap();
        execute(&conn, "CREATE TABLE t (v)", &Params::none(), RW).unwrap();
        let count = || -> i64 { conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap() };
        let script = "INSERT INTO t VALUES (:a); INSERT INTO t VALUES (':b'); -- :c\nINSERT INTO t VALUES (@d)";
        for (named, unused) in [
            (&[("a", 1), ("d", 2), ("b", 3)][..], "'b'"),
            (&[("a", 1), ("c", 2)][..], "'c'"),
        ] {
            let err = execute(&conn, script, &Params::named(named.iter().copied()), RW).unwrap_err();
            assert!(err.to_string().contains(unused), "{err}");
            assert_eq!(count(), 0, "nothing of the script ran");
        }
        let script = "INSERT INTO t VALUES (?); INSERT INTO t VALUES (?1 + ?2)";
        let err = execute(&conn, script, &Params::from(vec![1, 2, 3]), RW).unwrap_err();
        assert!(err.to_string().contains("3 value(s)"), "{err}");
        assert_eq!(count(), 0, "nothing of the script ran");
        // `?3` numbers itself: three values are not too many, and all of it runs.
        execute(
            &conn,
            "INSERT INTO t VALUES (?); INSERT INTO t VALUES (?3)",
            &Params::from(vec![1, 2, 3]),
            RW,
        )
        .unwrap();
        assert_eq!(count(), 2);
        execute(
            &conn,
            "INSERT INTO t VALUES (:a); INSERT INTO t VALUES ($b::x(y) || @a)",
            &Params::named([("a", 1), ("b::x(y)", 2)]),
            RW,
        )
        .unwrap();
        assert_eq!(count(), 4);
    }

    #[test]
    fn placeholders_are_counted_as_sqlite_numbers_them() {
        let conn = Connection::open_in_memory().unwrap();
        for sql in [
            "SELECT 1",
            "SELECT ?, ?",
            "SELECT ?5, ?",
            "SELECT ?, ?1, ?",
            "SELECT :a, ?, :a, @a, ?2",
            "SELECT $a::b(c), ?, $a::b(c)",
            "SELECT ':x', \"?\" -- ?9",
        ] {
            let expected = conn.prepare(sql).unwrap().parameter_count();
            assert_eq!(placeholder_count(sql), expected, "{sql}");
        }
    }

    #[test]
    fn last_insert_rowid_is_reported_only_for_inserts() {
        let conn = Connection::open_in_memory().unwrap();
        let none = Params::none();
        let r = execute(&conn, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)", &none, RW).unwrap();
        assert_eq!(r.last_insert_rowid, None);
        let r = execute(&conn, "INSERT INTO t (id, v) VALUES (41, 'a')", &none, RW).unwrap();
        assert_eq!(r.last_insert_rowid, Some(41));
        let r = execute(&conn, "INSERT INTO t (v) VALUES ('b'); UPDATE t SET v = 'c'", &none, RW).unwrap();
        assert_eq!(r.last_insert_rowid, Some(42));
        let r = execute(&conn, "UPDATE t SET v = 'd'", &none, RW).unwrap();
        assert_eq!(r.last_insert_rowid, None, "an update inserts nothing");
        let r = execute(&conn, "SELECT * FROM t", &none, RW).unwrap();
        assert_eq!(r.last_insert_rowid, None);
        // Another table, the same rowid as before: still this call's insert.
        execute(&conn, "CREATE TABLE u (id INTEGER PRIMARY KEY)", &none, RW).unwrap();
        let r = execute(&conn, "INSERT INTO u VALUES (42)", &none, RW).unwrap();
        assert_eq!(r.last_insert_rowid, Some(42));
        let r = execute(&conn, "INSERT INTO u VALUES (7) RETURNING id", &none, RW).unwrap();
        assert_eq!(r.last_insert_rowid, Some(7));
    }

    #[test]
    fn scripts_run_in_order_and_report_the_last_query() {
        let conn = Connection::open_in_memory().unwrap();
        let r = execute(
            &conn,
            "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t (v) VALUES ('a'), ('b'); SELECT count(*) AS n FROM t;",
            &Params::none(),
            RW,
        )
        .unwrap();
        assert!(r.is_query);
        assert_eq!(r.rows_affected, 2);
        assert_eq!(r.value(0, "n"), Some(&Value::Integer(2)));
    }
}
