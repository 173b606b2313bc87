//! The shapes of schema migrations across shards: a set of sqlx-style migrations, what applying
//! it did on each shard, and each shard's schema status with its drift from the majority.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha384};

/// One migration, as sqlx reads it from a file named `<VERSION>_<DESCRIPTION>.sql` (or
/// `.up.sql`): its version, its description (the file name's underscores as spaces) and its SQL.
///
/// Its checksum is SHA-384 over the SQL text, as sqlx computes it, so the rows shardlite writes to
/// `_sqlx_migrations` are the rows sqlx would write.
///
/// ```
/// use shardlite::data::SchemaScript;
///
/// let m = SchemaScript::new(1, "create orders", "CREATE TABLE orders (id INTEGER PRIMARY KEY)");
/// assert_eq!(m.checksum().len(), 48);
/// assert!(!m.no_transaction());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchemaScript {
    /// The version (the file name's number; positive).
    pub version: i64,
    /// What it does (the rest of the file name, underscores as spaces).
    pub description: String,
    /// The SQL, as the file holds it.
    pub sql: String,
}

impl SchemaScript {
    /// A migration of `version` with `description` and `sql`.
    pub fn new(version: i64, description: impl Into<String>, sql: impl Into<String>) -> Self {
        Self {
            version,
            description: description.into(),
            sql: sql.into(),
        }
    }

    /// SHA-384 over the SQL text: the checksum sqlx records and compares.
    pub fn checksum(&self) -> Vec<u8> {
        Sha384::digest(self.sql.as_bytes()).to_vec()
    }

    /// Whether the SQL opts out of the migration transaction (it starts with `-- no-transaction`,
    /// as sqlx reads it).
    pub fn no_transaction(&self) -> bool {
        self.sql.starts_with("-- no-transaction")
    }
}

/// What to apply, and where.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchemaMigrationRequest {
    /// The migrations, any order (they run by version).
    pub migrations: Vec<SchemaScript>,
    /// Report what would run on which shard, and change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Only these shards (all enabled shards when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shard_ids: Vec<String>,
}

impl SchemaMigrationRequest {
    /// A request to apply `migrations` on every enabled shard.
    pub fn new(migrations: Vec<SchemaScript>) -> Self {
        Self {
            migrations,
            dry_run: false,
            shard_ids: Vec::new(),
        }
    }

    /// Only report what would run.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Only on these shards.
    pub fn on_shards(mut self, shard_ids: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.shard_ids = shard_ids.into_iter().map(Into::into).collect();
        self
    }
}

/// Where one shard stands after a migration run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum SchemaMigrationState {
    /// Every migration was already applied (or another run applied the rest meanwhile); this run
    /// applied nothing.
    UpToDate,
    /// Migrations ran, and the shard is at the target version.
    Migrated,
    /// Dry run: `pending` would run.
    WouldMigrate,
    /// A migration failed or the shard could not be read; `error` says why.
    Failed,
}

/// One migration in a shard's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SchemaStep {
    /// Its version.
    pub version: i64,
    /// Its description.
    pub description: String,
    /// How long it ran, in milliseconds (absent for a step that did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<f64>,
}

/// One shard's outcome of a migration run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardSchemaOutcome {
    /// The shard.
    pub shard_id: String,
    /// Where it stands.
    pub state: SchemaMigrationState,
    /// Its highest applied version before the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_before: Option<i64>,
    /// Its highest applied version after the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_after: Option<i64>,
    /// What this run applied, in order.
    #[serde(default)]
    pub applied: Vec<SchemaStep>,
    /// What is still to run: on a dry run what would run, on a failure what did not.
    #[serde(default)]
    pub pending: Vec<SchemaStep>,
    /// The migration that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_version: Option<i64>,
    /// Why the shard failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The error's kind code (`ErrorKind::code`), on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
}

impl ShardSchemaOutcome {
    /// Whether the shard holds every migration of the set.
    pub fn at_target(&self) -> bool {
        matches!(
            self.state,
            SchemaMigrationState::UpToDate | SchemaMigrationState::Migrated
        )
    }
}

/// What a migration run did, shard by shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SchemaMigrationReport {
    /// The highest version of the set (absent for an empty set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_version: Option<i64>,
    /// Whether this was a dry run.
    pub dry_run: bool,
    /// One outcome per shard, in definition order.
    pub shards: Vec<ShardSchemaOutcome>,
}

impl SchemaMigrationReport {
    /// Whether every shard holds every migration of the set (never on a dry run with work left).
    pub fn all_at_target(&self) -> bool {
        self.shards.iter().all(ShardSchemaOutcome::at_target)
    }

    /// The shards that failed.
    pub fn failed(&self) -> impl Iterator<Item = &ShardSchemaOutcome> {
        self.shards
            .iter()
            .filter(|shard| shard.state == SchemaMigrationState::Failed)
    }
}

/// A schema object (table, index, view or trigger) that differs from the majority's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SchemaObjectDiff {
    /// `table`, `index`, `view` or `trigger`.
    pub object_type: String,
    /// Its name.
    pub name: String,
    /// How it differs.
    pub change: SchemaChange,
}

/// How a shard's schema object differs from the majority's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum SchemaChange {
    /// The majority has it; this shard does not.
    Missing,
    /// This shard has it; the majority does not.
    Extra,
    /// Both have it, with different SQL.
    Different,
}

/// One shard's schema: applied versions, fingerprint, and how it drifts from the majority.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardSchemaStatus {
    /// The shard.
    pub shard_id: String,
    /// Versions recorded as applied in `_sqlx_migrations`, ascending.
    #[serde(default)]
    pub applied_versions: Vec<i64>,
    /// A version recorded as failed partway (`success = false`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_version: Option<i64>,
    /// SHA-256 (hex) of the normalised `sqlite_master` SQL, internal tables left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Whether versions or fingerprint differ from the majority's (or it could not be read).
    pub drift: bool,
    /// Versions the majority has and this shard lacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_versions: Vec<i64>,
    /// Versions this shard has and the majority lacks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_versions: Vec<i64>,
    /// Tables, indexes, views and triggers that differ from the majority's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<SchemaObjectDiff>,
    /// Why the shard's schema could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The error's kind code, on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
}

/// Every shard's schema status, and the majority they are compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SchemaStatusReport {
    /// The applied versions most shards share (ties go to the group whose first shard comes
    /// first in the map).
    #[serde(default)]
    pub majority_versions: Vec<i64>,
    /// The fingerprint most shards share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub majority_fingerprint: Option<String>,
    /// One status per enabled shard, in definition order.
    pub shards: Vec<ShardSchemaStatus>,
}

impl SchemaStatusReport {
    /// The shards that drift from the majority (or could not be read).
    pub fn drifted(&self) -> impl Iterator<Item = &ShardSchemaStatus> {
        self.shards.iter().filter(|shard| shard.drift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_is_sha384_of_the_sql_text() {
        let m = SchemaScript::new(1, "x", "");
        // SHA-384 of the empty string.
        assert_eq!(
            m.checksum()[..4],
            [0x38, 0xb0, 0x60, 0xa7],
            "sqlx's checksum is SHA-384 over the file's text"
        );
        assert!(SchemaScript::new(2, "y", "-- no-transaction\nVACUUM").no_transaction());
    }

    #[test]
    fn requests_refuse_unknown_fields() {
        let err = serde_json::from_str::<SchemaMigrationRequest>(r#"{"migrations": [], "dryrun": true}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("dryrun"), "{err}");
    }
}
