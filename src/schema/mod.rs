//! Schema migrations on every shard, and how far shards drift from one another.
//!
//! A sharded database is many SQLite files that must share one schema. This module keeps them
//! in step the way sqlx keeps one database in step: a folder of migrations
//! (`<VERSION>_<DESCRIPTION>.sql`, read by [`read_migration_dir`]) is applied to each database
//! through its [`DataClient`](crate::data::DataClient) ([`migrate_database`]), and every database
//! records what it applied in its own `_sqlx_migrations` table, in sqlx's format (version,
//! description, installed time, success, SHA-384 checksum, execution time in nanoseconds), so
//! sqlx's own tools read it.
//!
//! - [`folder`]: reading a migration folder as sqlx does;
//! - [`apply`]: applying a migration set to one database, safe against concurrent runs;
//! - [`inspect`]: one database's applied versions and schema fingerprint, and the drift of
//!   several from their majority.
//!
//! The sharded fan-out (every shard in parallel, one failure not stopping the others) is
//! [`SchemaAdmin::migrate_schema`](crate::data::SchemaAdmin::migrate_schema) and
//! [`SchemaAdmin::schema_status`](crate::data::SchemaAdmin::schema_status).

pub mod apply;
pub mod folder;
pub mod inspect;

pub use apply::{check_migrations, migrate_database};
pub use folder::read_migration_dir;
pub use inspect::{DatabaseSchema, compare_schemas, inspect_database};

/// The table sqlx records applied migrations in, and so does shardlite.
pub const MIGRATIONS_TABLE: &str = "_sqlx_migrations";

/// The statement that creates [`MIGRATIONS_TABLE`] as sqlx's SQLite driver creates it.
pub const CREATE_MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS _sqlx_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    success BOOLEAN NOT NULL,
    checksum BLOB NOT NULL,
    execution_time BIGINT NOT NULL
)";

/// [`CREATE_MIGRATIONS_TABLE`] for a table named `table` (written into the SQL as given, as
/// sqlx's `Migrator::dangerous_set_table_name` does: it comes from the application, never from a
/// request).
pub fn create_migrations_table_sql(table: &str) -> String {
    CREATE_MIGRATIONS_TABLE.replacen(MIGRATIONS_TABLE, table, 1)
}
