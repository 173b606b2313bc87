//! An older SQLite than the bundled one, to prove shard files stay readable by it: Debian's
//! `sqlite3` command (SQLite 3.40 on bookworm; `.ci/run` installs it when missing).

use std::path::Path;
use std::process::Command;

/// Runs `sql` on `file` with the system's `sqlite3` command; `Ok(stdout)` or `Err(stderr)`.
pub fn run(file: &Path, sql: &str) -> Result<String, String> {
    let output = Command::new("sqlite3")
        .arg("-batch")
        .arg("-bail")
        // Another connection may hold the write lock for a moment (a shard just closed).
        .args(["-cmd", ".timeout 5000"])
        .arg(file)
        .arg(sql)
        .output()
        .expect("the sqlite3 command (Debian's package `sqlite3`; .ci/run installs it)");
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// The system SQLite's version, checked to be older than 3.47 (which first parsed
/// `RAISE(ABORT, expression)`): otherwise these tests would prove nothing.
pub fn version() -> String {
    let version = Command::new("sqlite3")
        .arg("-version")
        .output()
        .expect("the sqlite3 command (Debian's package `sqlite3`; .ci/run installs it)");
    let version = String::from_utf8_lossy(&version.stdout).trim().to_owned();
    let minor: u32 = version
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .expect("a version such as 3.40.1");
    assert!(
        version.starts_with("3.") && minor < 47,
        "the system sqlite3 ({version}) must be older than 3.47 to prove compatibility"
    );
    version
}

/// Reads every table of `file` (a `count(*)` of each) with the old SQLite; the table names.
pub fn read_every_table(file: &Path) -> Vec<String> {
    let tables = run(
        file,
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
    )
    .unwrap_or_else(|err| panic!("old sqlite3 cannot open {}: {err}", file.display()));
    let tables: Vec<String> = tables.lines().map(str::to_owned).collect();
    for table in &tables {
        run(file, &format!("SELECT count(*) FROM \"{table}\""))
            .unwrap_or_else(|err| panic!("old sqlite3 cannot read {table} of {}: {err}", file.display()));
    }
    tables
}

/// The shardlite triggers and fence tables left in `file`, as the old SQLite sees them.
pub fn shardlite_fence_objects(file: &Path) -> Vec<String> {
    run(
        file,
        "SELECT type || ' ' || name FROM sqlite_master WHERE name LIKE '\\_shardlite\\_fence%' ESCAPE '\\'
         OR name LIKE '\\_shardlite\\_route\\_fence%' ESCAPE '\\' ORDER BY name",
    )
    .expect("old sqlite3 reads sqlite_master")
    .lines()
    .map(str::to_owned)
    .collect()
}

/// The change-capture triggers and change table left in `file`, as the old SQLite sees them.
pub fn shardlite_capture_objects(file: &Path) -> Vec<String> {
    run(
        file,
        "SELECT type || ' ' || name FROM sqlite_master WHERE name LIKE '\\_shardlite\\_captur%' ESCAPE '\\'
         ORDER BY name",
    )
    .expect("old sqlite3 reads sqlite_master")
    .lines()
    .map(str::to_owned)
    .collect()
}
