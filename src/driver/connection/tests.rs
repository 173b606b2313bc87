//! Unit tests of the sqlx connection: the BEGIN statements it accepts and its savepoint SQL.

use super::*;

#[test]
fn begin_statements_are_checked() {
    assert!(check_begin_statement("BEGIN").is_ok());
    assert!(check_begin_statement(" begin immediate transaction; ").is_ok());
    assert!(check_begin_statement("BEGIN EXCLUSIVE").is_ok());
    let err = check_begin_statement("SAVEPOINT x").unwrap_err();
    assert!(err.to_string().contains("SAVEPOINT x"), "{err}");
    assert!(check_begin_statement("BEGIN; DELETE FROM t").is_err());
}

#[test]
fn savepoint_rollback_releases_the_savepoint() {
    assert_eq!(
        rollback_savepoint_sql(2),
        "ROLLBACK TO SAVEPOINT _sqlx_savepoint_2; RELEASE SAVEPOINT _sqlx_savepoint_2"
    );
}
