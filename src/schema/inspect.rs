//! One database's schema as migrations see it (applied versions, a fingerprint of its
//! `sqlite_master`), and the drift of several databases from their majority.
//!
//! The fingerprint is SHA-256 over every table, index, view and trigger, sorted by type and name,
//! each as its type, name and normalised SQL. Normalising drops comments, folds unquoted ASCII text
//! to lower case (SQLite's keywords and unquoted names ignore case) and keeps white space only
//! where it separates two words, so `CREATE TABLE t(a INT)` and `create table t ( a int )` agree
//! while any change of a column, type, constraint or string literal does not. Internal tables
//! are left out: SQLite's own (`sqlite_*`), shardlite's (`_shardlite_*`) and `_sqlx_migrations`,
//! with the indexes and triggers on them.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::MIGRATIONS_TABLE;
use crate::data::{
    DataClient, Params, SchemaChange, SchemaObjectDiff, SchemaStatusReport, ShardSchemaStatus, SqlResult, Value,
};
use crate::error::{Error, Result};

/// A row of `_sqlx_migrations`, as far as checks need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedMigration {
    /// The version.
    pub version: i64,
    /// `false` for a migration that failed partway (or is being applied without a transaction).
    pub success: bool,
    /// The recorded checksum (SHA-384 of the SQL).
    pub checksum: Vec<u8>,
}

/// What [`inspect_database`] reads: the applied migrations and the schema objects.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DatabaseSchema {
    /// Rows of `_sqlx_migrations`, by version (empty when the table does not exist).
    pub applied: Vec<AppliedMigration>,
    /// `(type, name)` → normalised SQL, internal objects left out.
    pub objects: BTreeMap<(String, String), String>,
}

impl DatabaseSchema {
    /// Versions recorded as successfully applied, ascending.
    pub fn applied_versions(&self) -> Vec<i64> {
        self.applied.iter().filter(|m| m.success).map(|m| m.version).collect()
    }

    /// The first version recorded with `success = false`.
    pub fn dirty_version(&self) -> Option<i64> {
        self.applied.iter().find(|m| !m.success).map(|m| m.version)
    }

    /// SHA-256 (hex) over the sorted objects' types, names and normalised SQL.
    pub fn fingerprint(&self) -> String {
        let mut hash = Sha256::new();
        for ((kind, name), sql) in &self.objects {
            for part in [kind, name, sql] {
                hash.update(part.as_bytes());
                hash.update([0]);
            }
        }
        hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl DatabaseSchema {
    /// The schema objects of `sqlite_master` rows (type, name, table name, SQL), without applied
    /// migrations: enough for [`fingerprint`](Self::fingerprint).
    pub fn from_master_rows(rows: impl IntoIterator<Item = [String; 4]>) -> Self {
        Self {
            applied: Vec::new(),
            objects: objects_of(rows),
        }
    }
}

fn objects_of(rows: impl IntoIterator<Item = [String; 4]>) -> BTreeMap<(String, String), String> {
    rows.into_iter()
        .filter(|[_, name, table, _]| !is_internal(name, table))
        .map(|[kind, name, _, sql]| ((kind, name), normalise_sql(&sql)))
        .collect()
}

/// Whether a table (or an index or trigger on `table`) is internal.
fn is_internal(name: &str, table: &str) -> bool {
    [name, table].iter().any(|n| {
        let lower = n.to_ascii_lowercase();
        lower.starts_with("sqlite_") || lower.starts_with("_shardlite_") || lower == MIGRATIONS_TABLE
    })
}

fn text(row: &[Value], index: usize) -> String {
    row.get(index).and_then(Value::as_str).unwrap_or_default().to_owned()
}

async fn master_rows(client: &dyn DataClient) -> Result<SqlResult> {
    client
        .execute_read_only_sql(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name",
            Params::none(),
        )
        .await
}

fn has_migrations_table(master: &SqlResult) -> bool {
    master
        .rows
        .iter()
        .any(|row| text(row, 0) == "table" && text(row, 1).eq_ignore_ascii_case(MIGRATIONS_TABLE))
}

async fn read_applied(client: &dyn DataClient) -> Result<Vec<AppliedMigration>> {
    let result = client
        .execute_read_only_sql(
            "SELECT version, success, checksum FROM _sqlx_migrations ORDER BY version",
            Params::none(),
        )
        .await?;
    result
        .rows
        .iter()
        .map(|row| {
            let version = row
                .first()
                .and_then(Value::as_i64)
                .ok_or_else(|| Error::invalid_argument("_sqlx_migrations", "a row's version is not an integer"))?;
            Ok(AppliedMigration {
                version,
                success: row.get(1).and_then(Value::as_i64).is_some_and(|v| v != 0),
                checksum: row.get(2).and_then(Value::as_blob).unwrap_or_default().to_vec(),
            })
        })
        .collect()
}

/// The rows of `_sqlx_migrations` by version; empty when the table does not exist.
pub async fn applied_migrations(client: &dyn DataClient) -> Result<Vec<AppliedMigration>> {
    if has_migrations_table(&master_rows(client).await?) {
        read_applied(client).await
    } else {
        Ok(Vec::new())
    }
}

/// Reads the database's applied migrations and schema objects (read-only).
pub async fn inspect_database(client: &dyn DataClient) -> Result<DatabaseSchema> {
    let master = master_rows(client).await?;
    let applied = if has_migrations_table(&master) {
        read_applied(client).await?
    } else {
        Vec::new()
    };
    let objects = objects_of(
        master
            .rows
            .iter()
            .map(|row| [text(row, 0), text(row, 1), text(row, 2), text(row, 3)]),
    );
    Ok(DatabaseSchema { applied, objects })
}

/// SQL with comments dropped, unquoted text in lower case, and white space kept only between two
/// words (as one space). Quoted runs (`'…'`, `"…"`, `` `…` ``, `[…]`) are kept as written.
pub fn normalise_sql(sql: &str) -> String {
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '$' || !c.is_ascii();
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    let mut pending_space = false;
    while let Some(c) = chars.next() {
        let close = match c {
            '\'' | '"' | '`' => Some(c),
            '[' => Some(']'),
            _ => None,
        };
        if let Some(close) = close {
            if pending_space && out.chars().next_back().is_some_and(word) {
                out.push(' ');
            }
            pending_space = false;
            out.push(c);
            while let Some(inner) = chars.next() {
                out.push(inner);
                if inner == close {
                    // A doubled quote is a quote inside the run.
                    if close != ']' && chars.peek() == Some(&close) {
                        out.push(close);
                        chars.next();
                        continue;
                    }
                    break;
                }
            }
            continue;
        }
        if c == '-' && chars.peek() == Some(&'-') {
            for skipped in chars.by_ref() {
                if skipped == '\n' {
                    break;
                }
            }
            pending_space = true;
            continue;
        }
        if c == '/' && chars.peek() == Some(&'*') {
            chars.next();
            let mut last = '\0';
            for skipped in chars.by_ref() {
                if last == '*' && skipped == '/' {
                    break;
                }
                last = skipped;
            }
            pending_space = true;
            continue;
        }
        if c.is_whitespace() {
            pending_space = true;
            continue;
        }
        if pending_space && word(c) && out.chars().next_back().is_some_and(|p| word(p) || "'\"`]".contains(p)) {
            out.push(' ');
        }
        pending_space = false;
        out.push(c.to_ascii_lowercase());
    }
    out.trim_end_matches(';').to_owned()
}

/// Compares every shard's schema with the majority's: shards whose applied versions or
/// fingerprint differ drift, with the versions and objects that differ; shards that could not be
/// read drift, with their error. The majority is the largest group of shards sharing versions
/// and fingerprint; a tie goes to the group whose first shard comes first.
pub fn compare_schemas(shards: Vec<(String, Result<DatabaseSchema>)>) -> SchemaStatusReport {
    // Groups by (versions, fingerprint), remembering the first shard of each.
    let mut groups: Vec<((Vec<i64>, String), usize, usize)> = Vec::new();
    for (index, (_, schema)) in shards.iter().enumerate() {
        if let Ok(schema) = schema {
            let key = (schema.applied_versions(), schema.fingerprint());
            match groups.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, count, _)) => *count += 1,
                None => groups.push((key, 1, index)),
            }
        }
    }
    let majority = groups
        .iter()
        .enumerate()
        .max_by_key(|(order, (_, count, _))| (*count, std::cmp::Reverse(*order)))
        .map(|(_, group)| group.clone());
    let reference = majority
        .as_ref()
        .and_then(|(_, _, first)| shards[*first].1.as_ref().ok())
        .cloned();
    let statuses = shards
        .into_iter()
        .map(|(shard_id, schema)| match schema {
            Ok(schema) => status_against(shard_id, &schema, reference.as_ref()),
            Err(err) => ShardSchemaStatus {
                shard_id,
                applied_versions: Vec::new(),
                dirty_version: None,
                fingerprint: None,
                drift: true,
                missing_versions: Vec::new(),
                extra_versions: Vec::new(),
                differences: Vec::new(),
                error_code: Some(err.kind().code().to_owned()),
                error: Some(err.to_string()),
            },
        })
        .collect();
    let (majority_versions, majority_fingerprint) = match majority {
        Some(((versions, fingerprint), _, _)) => (versions, Some(fingerprint)),
        None => (Vec::new(), None),
    };
    SchemaStatusReport {
        majority_versions,
        majority_fingerprint,
        shards: statuses,
    }
}

fn status_against(shard_id: String, schema: &DatabaseSchema, reference: Option<&DatabaseSchema>) -> ShardSchemaStatus {
    let versions = schema.applied_versions();
    let fingerprint = schema.fingerprint();
    let reference_versions = reference.map(DatabaseSchema::applied_versions).unwrap_or_default();
    let missing_versions: Vec<i64> = reference_versions
        .iter()
        .filter(|v| !versions.contains(v))
        .copied()
        .collect();
    let extra_versions: Vec<i64> = versions
        .iter()
        .filter(|v| !reference_versions.contains(v))
        .copied()
        .collect();
    let mut differences = Vec::new();
    if let Some(reference) = reference {
        let diff = |(kind, name): &(String, String), change| SchemaObjectDiff {
            object_type: kind.clone(),
            name: name.clone(),
            change,
        };
        for (key, sql) in &reference.objects {
            match schema.objects.get(key) {
                None => differences.push(diff(key, SchemaChange::Missing)),
                Some(own) if own != sql => differences.push(diff(key, SchemaChange::Different)),
                Some(_) => {}
            }
        }
        for key in schema.objects.keys() {
            if !reference.objects.contains_key(key) {
                differences.push(diff(key, SchemaChange::Extra));
            }
        }
    }
    let drift = reference.is_some_and(|r| r.fingerprint() != fingerprint)
        || !missing_versions.is_empty()
        || !extra_versions.is_empty();
    ShardSchemaStatus {
        shard_id,
        applied_versions: versions,
        dirty_version: schema.dirty_version(),
        fingerprint: Some(fingerprint),
        drift,
        missing_versions,
        extra_versions,
        differences,
        error: None,
        error_code: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_does_not_change_the_normal_form_but_content_does() {
        let a = normalise_sql("CREATE TABLE t(a INT, b TEXT DEFAULT 'X y')");
        let b = normalise_sql("create table t ( a int , -- the key\n b text default 'X y' /* c */ )");
        assert_eq!(a, b);
        assert_eq!(a, "create table t(a int,b text default 'X y')");
        assert_ne!(a, normalise_sql("CREATE TABLE t(a INT, b TEXT DEFAULT 'x y')"));
        assert_ne!(a, normalise_sql("CREATE TABLE t(a INT, b TEXT DEFAULT 'X y', c INT)"));
        assert_eq!(
            normalise_sql("CREATE TABLE \"My T\" ([a b] INT)"),
            "create table \"My T\"([a b] int)"
        );
        assert_eq!(normalise_sql("SELECT 'it''s'  AS x"), "select 'it''s' as x");
    }

    fn schema(versions: &[i64], objects: &[(&str, &str, &str)]) -> DatabaseSchema {
        DatabaseSchema {
            applied: versions
                .iter()
                .map(|&version| AppliedMigration {
                    version,
                    success: true,
                    checksum: Vec::new(),
                })
                .collect(),
            objects: objects
                .iter()
                .map(|(kind, name, sql)| (((*kind).to_owned(), (*name).to_owned()), normalise_sql(sql)))
                .collect(),
        }
    }

    #[test]
    fn the_odd_shard_out_drifts_with_a_short_diff() {
        let base = [
            ("table", "orders", "CREATE TABLE orders (id INTEGER PRIMARY KEY)"),
            ("index", "orders_by_id", "CREATE INDEX orders_by_id ON orders (id)"),
        ];
        let altered = [
            (
                "table",
                "orders",
                "CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)",
            ),
            ("table", "scratch", "CREATE TABLE scratch (x)"),
        ];
        let report = compare_schemas(vec![
            ("s0".into(), Ok(schema(&[1, 2], &base))),
            ("s1".into(), Ok(schema(&[1], &altered))),
            ("s2".into(), Ok(schema(&[1, 2], &base))),
            ("s3".into(), Err(Error::NoMap)),
        ]);
        assert_eq!(report.majority_versions, [1, 2]);
        let drifted: Vec<&str> = report.drifted().map(|s| s.shard_id.as_str()).collect();
        assert_eq!(drifted, ["s1", "s3"]);
        let s1 = &report.shards[1];
        assert_eq!(s1.missing_versions, [2]);
        let changes: Vec<(&str, SchemaChange)> = s1.differences.iter().map(|d| (d.name.as_str(), d.change)).collect();
        assert_eq!(
            changes,
            [
                ("orders_by_id", SchemaChange::Missing),
                ("orders", SchemaChange::Different),
                ("scratch", SchemaChange::Extra)
            ]
        );
        assert!(report.shards[3].error.is_some());
        assert!(!report.shards[0].drift && report.shards[0].differences.is_empty());
    }

    #[test]
    fn internal_tables_are_left_out() {
        assert!(is_internal("_sqlx_migrations", "_sqlx_migrations"));
        assert!(is_internal("sqlite_autoindex_x", "x"));
        assert!(is_internal("idx", "_shardlite_procedures"));
        assert!(!is_internal("orders", "orders"));
    }
}
