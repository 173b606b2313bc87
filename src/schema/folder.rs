//! Reading a folder of sqlx-style migrations.

use std::collections::BTreeMap;
use std::path::Path;

use crate::data::SchemaScript;
use crate::error::{Error, Result};

/// Reads the migrations in `dir` as sqlx's `Migrator::new(path)` does, sorted by version.
///
/// Files named `<VERSION>_<DESCRIPTION>.sql` are simple migrations; `<VERSION>_<DESCRIPTION>.up.sql`
/// the up half of a reversible one (its `.down.sql` twin is not applied, and so not returned).
/// The description is the rest of the name with underscores as spaces. Other files and
/// folders are ignored, as sqlx ignores them. A name whose version is not an integer, two files
/// of one version, or a file that is not UTF-8 text is an error naming the file.
///
/// This reads files on the calling thread.
///
/// ```no_run
/// let migrations = shardlite::schema::read_migration_dir("migrations")?;
/// for m in &migrations {
///     println!("{} {}", m.version, m.description);
/// }
/// # Ok::<(), shardlite::Error>(())
/// ```
pub fn read_migration_dir(dir: impl AsRef<Path>) -> Result<Vec<SchemaScript>> {
    let dir = dir.as_ref();
    let io = |source| Error::Io {
        what: format!("migration folder {}", dir.display()),
        source,
    };
    let mut found: BTreeMap<i64, (String, SchemaScript)> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if !entry.file_type().map_err(io)?.is_file() && !entry.path().is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((version, description)) = parse_file_name(&name)? else {
            continue;
        };
        let sql = std::fs::read(entry.path()).map_err(|source| Error::Io {
            what: format!("migration file {name}"),
            source,
        })?;
        let sql = String::from_utf8(sql).map_err(|_| {
            Error::invalid_argument("migrations", format!("the migration file {name} is not UTF-8 text"))
        })?;
        if let Some((other, _)) = found.get(&version) {
            return Err(Error::invalid_argument(
                "migrations",
                format!("the files {other} and {name} both hold migration version {version}"),
            ));
        }
        found.insert(version, (name, SchemaScript::new(version, description, sql)));
    }
    Ok(found.into_values().map(|(_, script)| script).collect())
}

/// The version and description of an up (or simple) migration file; `None` for files sqlx
/// ignores and for down migrations.
fn parse_file_name(name: &str) -> Result<Option<(i64, String)>> {
    let Some((version, rest)) = name.split_once('_') else {
        return Ok(None);
    };
    if !rest.ends_with(".sql") || rest.ends_with(".down.sql") {
        return Ok(None);
    }
    let version: i64 = version.parse().map_err(|_| {
        Error::invalid_argument(
            "migrations",
            format!(
                "the migration file name {name:?} does not start with an integer version (e.g. 0001_create_orders.sql)"
            ),
        )
    })?;
    let description = rest
        .strip_suffix(".up.sql")
        .or_else(|| rest.strip_suffix(".sql"))
        .unwrap_or(rest)
        .replace('_', " ");
    Ok(Some((version, description)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_read_as_sqlx_reads_them() {
        assert_eq!(
            parse_file_name("0001_create_orders.sql").unwrap(),
            Some((1, "create orders".to_owned()))
        );
        assert_eq!(
            parse_file_name("20260101120000_add_index.up.sql").unwrap(),
            Some((20_260_101_120_000, "add index".to_owned()))
        );
        assert_eq!(parse_file_name("2_add_index.down.sql").unwrap(), None);
        assert_eq!(parse_file_name("README.md").unwrap(), None);
        assert_eq!(parse_file_name("notes_for_later.txt").unwrap(), None);
        let err = parse_file_name("first_create.sql").unwrap_err().to_string();
        assert!(err.contains("first_create.sql"), "{err}");
    }

    #[test]
    fn a_folder_reads_sorted_and_refuses_duplicate_versions() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("2_second.sql"), "SELECT 2").unwrap();
        std::fs::write(dir.path().join("1_first.up.sql"), "SELECT 1").unwrap();
        std::fs::write(dir.path().join("1_first.down.sql"), "SELECT -1").unwrap();
        std::fs::write(dir.path().join("README.md"), "notes").unwrap();
        let read = read_migration_dir(dir.path()).unwrap();
        let versions: Vec<(i64, &str, &str)> = read
            .iter()
            .map(|m| (m.version, m.description.as_str(), m.sql.as_str()))
            .collect();
        assert_eq!(versions, [(1, "first", "SELECT 1"), (2, "second", "SELECT 2")]);

        std::fs::write(dir.path().join("02_again.sql"), "SELECT 3").unwrap();
        let err = read_migration_dir(dir.path()).unwrap_err().to_string();
        assert!(err.contains("version 2"), "{err}");
        assert!(read_migration_dir(dir.path().join("absent")).is_err());
    }
}
