//! Unit tests of the SQL reader: statement splitting, classification and the early refusals.

use super::*;

fn split(sql: &str) -> Vec<&str> {
    statements(sql).map(str::trim).collect()
}

#[test]
fn placeholders_are_read_as_sqlites_tokenizer_reads_them() {
    let sql = "SELECT ?, ?12, :a, @b_1, $c::d(e), x$y, ':no', \"@no\", [$no], `?`, /* :no */ :z -- ?9\n, #t, :";
    let found: Vec<&str> = placeholders(sql).collect();
    assert_eq!(found, ["?", "?12", ":a", "@b_1", "$c::d(e)", ":z", "#t"]);
    assert_eq!(placeholders("SELECT 1").count(), 0);
}

#[test]
fn the_plain_leading_word_is_the_tokenizers_first_word() {
    for sql in [
        "SELECT 1",
        "select\n*",
        "PRAGMA\tuser_version = 3",
        "VACUUM INTO 'x.db'",
        "SELECT1 2",
        "Sel_ect 1",
        "x$y z",
        "-- c\nSELECT 1",
        "(SELECT 1)",
        "é SELECT",
        "SELECT",
        "",
    ] {
        let mut words = Words {
            tokens: Tokens { sql, pos: 0 },
        };
        let tokenized = words.next();
        if let Some(plain) = plain_leading_word(sql) {
            assert_eq!(Some(plain), tokenized, "{sql:?}");
            assert_eq!(words.tokens.pos, plain.len(), "{sql:?}");
        }
    }
    assert_eq!(plain_leading_word("SELECT 1"), Some("SELECT"));
    assert_eq!(plain_leading_word("Sel_ect 1"), None);
    assert_eq!(classify("VACUUM INTO 'x.db'"), StatementKind::OtherFile);
    assert_eq!(
        classify("PRAGMA\tuser_version = 3"),
        StatementKind::Pragma {
            name: "user_version",
            has_argument: true
        }
    );
}

#[test]
fn splits_on_semicolons_outside_literals_comments_and_triggers() {
    assert_eq!(split("SELECT 1; SELECT 2"), ["SELECT 1", "SELECT 2"]);
    assert_eq!(
        split("SELECT ';'; SELECT \"a;b\" FROM [c;d]"),
        ["SELECT ';'", "SELECT \"a;b\" FROM [c;d]"]
    );
    assert_eq!(split("SELECT 'it''s; fine'"), ["SELECT 'it''s; fine'"]);
    assert_eq!(
        split("SELECT 1 -- a; comment\n; /* ; */ SELECT 2"),
        ["SELECT 1 -- a; comment", "/* ; */ SELECT 2"]
    );
    assert_eq!(split(" ;; ; "), Vec::<&str>::new());
    let trigger = "CREATE TEMP TRIGGER t AFTER INSERT ON a BEGIN \
                   INSERT INTO b VALUES (1); UPDATE c SET x = CASE WHEN 1 THEN 2 END; END";
    assert_eq!(split(&format!("{trigger}; SELECT 3")), [trigger, "SELECT 3"]);
    assert_eq!(
        split("EXPLAIN CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END; x").len(),
        2
    );
    assert_eq!(
        split("SELECT 'unterminated; still one"),
        ["SELECT 'unterminated; still one"]
    );
}

#[test]
fn white_space_runs_go_on_through_vertical_tabs_as_in_sqlite() {
    // SQLite's tokenizer reads "\r\v" as white space (a run started by \r goes on through \v),
    // so SQLite prepares no statement from it; a \v that starts a token is not white space.
    assert_eq!(statements("\r\u{b}").count(), 0);
    assert_eq!(statements("SELECT 1; \u{b}").count(), 1);
    assert_eq!(statements("\u{b}").count(), 1);
    assert_eq!(statements("--\t\n\u{b}\n\n;\n").count(), 0);
    assert_eq!(split("-- c\n\u{b};END\n"), ["END"]);
    // After "; \v" the trigger body ends at END, so the DELETE is a statement of its own.
    let script = "EXPLAIN CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; \u{b}END; DELETE FROM u";
    assert_eq!(split(script).len(), 2);
    assert_eq!(split(script)[1], "DELETE FROM u");
    assert!(check_read_only_script(script).is_err());
}

#[test]
fn tcl_style_parameters_keep_their_semicolons_as_in_sqlite() {
    assert_eq!(
        split("SELECT $a(x;y) FROM t; SELECT :a::b(;) ; SELECT #x(a;b) ; SELECT @y"),
        [
            "SELECT $a(x;y) FROM t",
            "SELECT :a::b(;)",
            "SELECT #x(a;b)",
            "SELECT @y"
        ]
    );
    // The suffix ends at white space or `)`, whatever comes first.
    assert_eq!(split("SELECT @a(x ;y)"), ["SELECT @a(x", "y)"]);
    // A statement hidden behind a parameter's `;` is not the start of a trigger.
    let script = "SELECT @a(;EXPLAIN/**/CREATE/**/TRIGGER); DELETE FROM u";
    assert_eq!(
        split(script),
        ["SELECT @a(;EXPLAIN/**/CREATE/**/TRIGGER)", "DELETE FROM u"]
    );
    assert!(check_read_only_script(script).is_err());
    assert!(check_script("SELECT @a(;EXPLAIN/**/CREATE/**/TRIGGER); ATTACH 'x.db' AS x").is_err());
}

#[test]
fn single_statement_detection_ignores_trailing_noise() {
    assert!(is_single_statement("SELECT 1;"));
    assert!(is_single_statement("SELECT 1; -- done\n ;"));
    assert!(!is_single_statement("SELECT 1; SELECT 2"));
    assert!(!is_single_statement("  ; -- nothing"));
}

#[test]
fn classifies_statements() {
    for sql in [
        "BEGIN",
        "begin deferred transaction",
        "END",
        "COMMIT",
        "ROLLBACK TO x",
        "SAVEPOINT s",
        "RELEASE s",
    ] {
        assert_eq!(classify(sql), StatementKind::TransactionControl, "{sql}");
    }
    for sql in [
        "ATTACH 'x' AS y",
        "attach ? as m",
        "DETACH m",
        "VACUUM INTO 'f'",
        "vacuum main into ?",
    ] {
        assert_eq!(classify(sql), StatementKind::OtherFile, "{sql}");
    }
    assert_eq!(classify("VACUUM"), StatementKind::Other);
    assert_eq!(classify("WITH x AS (SELECT 1) DELETE FROM t"), StatementKind::Query);
    assert_eq!(
        classify("PRAGMA \"main\".table_info('t')"),
        StatementKind::Pragma {
            name: "table_info",
            has_argument: true
        }
    );
    assert_eq!(
        classify("pragma foreign_keys"),
        StatementKind::Pragma {
            name: "foreign_keys",
            has_argument: false
        }
    );
}

#[test]
fn pragma_policy() {
    assert!(pragma_allowed("table_info", true));
    assert!(pragma_allowed("JOURNAL_MODE", false));
    assert!(pragma_allowed("user_version", true));
    for name in [
        "journal_mode",
        "synchronous",
        "writable_schema",
        "query_only",
        "foreign_keys",
        "locking_mode",
    ] {
        assert!(!pragma_allowed(name, true), "{name}");
    }
    assert!(!pragma_allowed("writable_schema", false));
}

#[test]
fn check_script_names_the_refused_statement() {
    let err = check_script("SELECT 1; PRAGMA journal_mode = DELETE").unwrap_err();
    assert!(err.to_string().contains("PRAGMA journal_mode = DELETE"), "{err}");
    assert!(check_script("PRAGMA table_info(t); SELECT 1").is_ok());
}

#[test]
fn savepoints_pass_only_where_allowed() {
    let session = Allowances {
        savepoints: true,
        temp: true,
        ..Allowances::NONE
    };
    for sql in [
        "SAVEPOINT a",
        "RELEASE a",
        "ROLLBACK TO a",
        "rollback transaction to savepoint a",
    ] {
        assert!(refuse(sql, session).is_ok(), "{sql}");
        assert!(refuse(sql, Allowances::NONE).is_err(), "{sql}");
    }
    for sql in ["ROLLBACK", "COMMIT", "BEGIN", "END TRANSACTION", "ROLLBACK TRANSACTION"] {
        assert!(refuse(sql, session).is_err(), "{sql}");
    }
    assert!(refuse("SELECT load_extension('x')", session).is_err());
    assert!(refuse("SELECT 'load_extension'", session).is_ok());
}

#[test]
fn load_extension_is_found_wherever_its_underscore_falls() {
    for found in [
        "SELECT load_extension('x')",
        "load_extension('x')",
        "SELECT a_b, LOAD_EXTENSION('x') FROM t_u",
        "SELECT\tLoad_Extension\n('x')",
        "SELECT 1;SELECT load_extension('x')",
    ] {
        assert!(mentions_load_extension(found), "{found}");
    }
    for absent in [
        "SELECT a_b FROM t_u WHERE c_d = ?1",
        "SELECT 'load_extension'",
        "SELECT 1 -- load_extension",
        "SELECT _",
        "SELECT load_",
        "SELECT xload_extension('x')",
        "",
    ] {
        assert!(!mentions_load_extension(absent), "{absent}");
    }
    assert!(is_single_statement("SELECT a_b FROM t"));
    assert!(!is_single_statement("SELECT 1; SELECT 2"));
    assert!(is_single_statement("SELECT ';'"));
}

#[test]
fn long_scripts_split_without_recursion() {
    let script = "SELECT 1;".repeat(200_000);
    assert_eq!(statements(&script).count(), 200_000);
}

#[test]
fn the_reader_splits_classifies_and_refuses_as_its_docs_say() {
    let script = "CREATE TRIGGER t AFTER INSERT ON a BEGIN INSERT INTO b VALUES (1); END; SELECT ';' -- ;\n;";
    let parts: Vec<&str> = statements(script).collect();
    assert_eq!(parts.len(), 2);
    assert!(parts[0].ends_with("END"));
    assert_eq!(parts[1].trim(), "SELECT ';' -- ;");

    assert_eq!(classify("/* hi */ begin immediate"), StatementKind::TransactionControl);
    assert_eq!(classify("VACUUM main INTO '/tmp/x.db'"), StatementKind::OtherFile);
    assert_eq!(
        classify("PRAGMA main.journal_mode = DELETE"),
        StatementKind::Pragma {
            name: "journal_mode",
            has_argument: true
        }
    );

    assert!(check_script("CREATE TABLE t (id INTEGER PRIMARY KEY); PRAGMA table_info(t)").is_ok());
    let err = check_script("SELECT 1; COMMIT").unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::TransactionControl);
    assert_eq!(
        check_script("ATTACH 'x.db' AS x").unwrap_err().kind(),
        crate::ErrorKind::Forbidden
    );

    assert!(check_read_only_script("SELECT 1; WITH x AS (SELECT 2) SELECT * FROM x").is_ok());
    assert_eq!(
        check_read_only_script("ATTACH 'x.db' AS x").unwrap_err().kind(),
        crate::ErrorKind::ReadOnly
    );
}
