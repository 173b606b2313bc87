//! An sqlx driver (feature `sqlx`): connection strings that bind a connection to one route.
//!
//! [`Shardlite`] is an sqlx-core [`Database`](sqlx_core::database::Database), laid out like sqlx's
//! own SQLite driver. A connection string with `Shard Keyspace` and `Shard Key` resolves its route
//! in-process against the master catalog's map and talks to that shard's file directly; one without
//! route keys on a plain database is an ordinary connection, and with feature `grpc` an `Endpoint`
//! reaches a daemon (the rules are at [`crate::connect::connect`]). Queries, binds, `query_as`, `query_scalar`, transactions,
//! savepoints and pools work as with any sqlx driver:
//!
//! ```no_run
//! # async fn demo() -> Result<(), sqlx_core::Error> {
//! use shardlite::driver::ShardlitePool;
//! use sqlx_core::query::query;
//! use sqlx_core::query_scalar::query_scalar;
//!
//! let pool = ShardlitePool::connect(
//!     "Data Source=data/master.db;Shard Keyspace=orders_by_month;Shard Key=2026-06",
//! )
//! .await?;
//! query("INSERT INTO orders (order_month, total) VALUES (?, ?)")
//!     .bind("2026-06")
//!     .bind(42.5)
//!     .execute(&pool)
//!     .await?;
//! let count: i64 = query_scalar("SELECT count(*) FROM orders").fetch_one(&pool).await?;
//! # Ok(()) }
//! ```
//!
//! (Applications write the same with the `sqlx` facade: `sqlx::query(..)`, `sqlx::query_as(..)`.)
//!
//! # What to know
//!
//! - **Placeholders** are positional: `?`, `?NNN` or `$N` (the first bound value is `?1` / `$1`);
//!   one statement uses one style. Named placeholders (`:name`, `@name`, `$name`) are refused with an
//!   error naming them.
//! - **Types**: see [`types`] for the Rust types and how they map to SQLite's storage classes.
//! - **Results** come back whole from the engine (its threads own the SQLite connections), so
//!   `fetch` streams rows from memory; page large reads with `LIMIT`.
//! - **Transactions** on a route-bound connection carry `csdbshard:` ids
//!   ([`ShardliteConnection::transaction_id`]); nested `begin`s are savepoints; a dropped
//!   transaction is rolled back before anything else runs on the connection (details at
//!   [`ShardliteConnection`]). Transactions idle longer than `Transaction Timeout` (default 60 s, `0` for
//!   never) are rolled back by the engine.
//! - **Errors**: SQLite's extended codes map to sqlx's kinds (`is_unique_violation()` works); see
//!   [`ShardliteDatabaseError`].
//! - **Sharing**: connections made from one [`ShardliteConnectOptions`] (so all of a pool's) share
//!   the opened shard files; see there.
//! - **Remote**: `Endpoint=…;Transport=Grpc` (feature `grpc`) connects to a daemon, which routes every
//!   call by the route the connection sends; `Transport=Http` is not wired in yet.
//! - **Not supported**: the `query!` macros (statements are not described), sqlx's `Any` driver, and
//!   `last_insert_rowid` (use `RETURNING`).

pub mod any;
mod arguments;
mod column;
mod connection;
mod database;
mod error;
mod options;
mod query_result;
mod row;
mod sharded_pool;
mod statement;
mod transaction;
mod type_info;
pub mod types;
mod value;

pub use arguments::{ShardliteArgumentBuffer, ShardliteArguments};
pub use column::ShardliteColumn;
pub use connection::ShardliteConnection;
pub use database::Shardlite;
pub use error::ShardliteDatabaseError;
pub use options::ShardliteConnectOptions;
pub use query_result::ShardliteQueryResult;
pub use row::ShardliteRow;
pub use sharded_pool::{ShardedPool, ShardedPoolConnection};
pub use statement::ShardliteStatement;
pub use transaction::ShardliteTransactionManager;
pub use type_info::ShardliteTypeInfo;
pub use value::{ShardliteValue, ShardliteValueRef};

/// A pool of [`ShardliteConnection`]s: `ShardlitePool::connect("Data Source=…;Shard Keyspace=…;Shard Key=…")`.
pub type ShardlitePool = sqlx_core::pool::Pool<Shardlite>;

/// Pool settings for [`ShardlitePool`]; [`ShardliteConnectOptions::pool_options`] reads them from
/// the connection string.
pub type ShardlitePoolOptions = sqlx_core::pool::PoolOptions<Shardlite>;

/// An open transaction on a [`ShardliteConnection`].
pub type ShardliteTransaction<'c> = sqlx_core::transaction::Transaction<'c, Shardlite>;

/// Anything that runs SQL against [`Shardlite`]: a connection, a transaction or a pool.
pub trait ShardliteExecutor<'c>: sqlx_core::executor::Executor<'c, Database = Shardlite> {}

impl<'c, T: sqlx_core::executor::Executor<'c, Database = Shardlite>> ShardliteExecutor<'c> for T {}

sqlx_core::impl_into_arguments_for_arguments!(ShardliteArguments);
sqlx_core::impl_column_index_for_row!(ShardliteRow);
sqlx_core::impl_column_index_for_statement!(ShardliteStatement);
sqlx_core::impl_acquire!(Shardlite, ShardliteConnection);
sqlx_core::impl_encode_for_option!(Shardlite);
