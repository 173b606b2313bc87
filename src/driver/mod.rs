//! An sqlx driver (feature `sqlx`): connection strings that bind a connection to one route, one
//! pool for many routes, and sqlx's `Any` driver.
//!
//! [`Shardlite`] is an sqlx-core [`Database`](sqlx_core::database::Database), laid out like sqlx's
//! own SQLite driver. A connection string with `Shard Keyspace` and `Shard Key` resolves its route
//! in-process against the master catalog's map and talks to that shard's file directly; one without
//! route keys on a plain database is an ordinary connection, and an `Endpoint` reaches a daemon
//! over gRPC or HTTP (the rules are at [`crate::connect::connect`]). Queries, binds, `query_as`,
//! `query_scalar`, transactions, savepoints and pools work as with any sqlx driver, and a program
//! written against sqlx's SQLite driver moves over by changing its connection string:
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
//! let done = query("INSERT INTO orders (order_month, total) VALUES (?, ?)")
//!     .bind("2026-06")
//!     .bind(42.5)
//!     .execute(&pool)
//!     .await?;
//! println!("order {}", done.last_insert_rowid());
//! let count: i64 = query_scalar("SELECT count(*) FROM orders").fetch_one(&pool).await?;
//! # Ok(()) }
//! ```
//!
//! (Applications write the same with the `sqlx` facade: `sqlx::query(..)`, `sqlx::query_as(..)`.)
//!
//! One pool for many routes (months, tenants): a [`ShardedPool`] opened without route keys keeps
//! connections per shard and hands out one bound to a route on each acquire:
//!
//! ```no_run
//! # async fn demo() -> Result<(), sqlx_core::Error> {
//! use shardlite::RouteContext;
//! use shardlite::driver::ShardedPool;
//!
//! let pool = ShardedPool::connect("Data Source=data/master.db;Max Pool Size=8").await?;
//! let mut conn = pool.acquire(RouteContext::new("tenants", "acme")?).await?;
//! sqlx_core::query::query("UPDATE accounts SET plan = ? WHERE id = ?")
//!     .bind("pro")
//!     .bind(7)
//!     .execute(&mut *conn)
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! And through sqlx's `Any` driver, with URL connection strings:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! sqlx::any::install_drivers(&[shardlite::driver::any::DRIVER])?;
//! let pool = sqlx::AnyPool::connect(
//!     "shardlite+grpc://127.0.0.1:61818?shard_keyspace=orders_by_month&shard_key=2026-06",
//! )
//! .await?;
//! let count: i64 = sqlx::query_scalar("SELECT count(*) FROM orders").fetch_one(&pool).await?;
//! # Ok(()) }
//! ```
//!
//! # What a connection is
//!
//! - **In-process** (`Data Source`): a SQLite connection of its own on the route's shard file (or
//!   the plain file), kept for the connection's lifetime on a thread of its own, as with sqlx's
//!   SQLite driver. What the connection creates for itself lasts: `TEMP` tables,
//!   `last_insert_rowid()`, `changes()`. `Data Source=:memory:` is one database per connection.
//!   Every call first checks the live map: when an activation moves the route to another shard,
//!   the next call outside a transaction reopens the connection there (its connection-local state
//!   stays behind), and a transaction open across the move fails with `StaleMapVersion`.
//! - **Through a daemon** (`Endpoint`, `Transport=Grpc` or `Http`): each call is a request that
//!   carries the route; the daemon's shared connections run it, and a transaction is a session the
//!   daemon keeps for the connection. Connection-local state does not carry between calls outside
//!   a transaction.
//! - **From a [`ShardedPool`]**: in-process, one of the pool's connections to the route's shard,
//!   bound to the route until it goes back; a route moved by an activation makes it fail (acquire
//!   again to reach the new shard). Through a daemon, the remote client bound to the route.
//!
//! # What to know
//!
//! - **Placeholders** are positional: `?`, `?NNN` or `$N` (the first bound value is `?1` / `$1`);
//!   one statement uses one style. Named placeholders (`:name`, `@name`, `$name`) are refused with an
//!   error naming them.
//! - **Types**: integers (signed and `u8`..`u32`), floats, text, blobs and `bool`, plus `time`,
//!   `chrono`, `uuid` and `json` types behind the features of those names, all stored exactly as
//!   sqlx's SQLite driver stores them; see [`types`].
//! - **Results** come back whole from the engine, so `fetch` streams rows from memory; page large
//!   reads with `LIMIT`. [`ShardliteQueryResult::last_insert_rowid`] is the rowid of the last row
//!   the statement inserted (on every transport), `0` when it inserted none.
//! - **Transactions** on a route-bound connection carry `csdbshard:` ids
//!   ([`ShardliteConnection::transaction_id`]) and begin `IMMEDIATE` (the write lock is taken at
//!   begin, so a transaction never fails later on a stale snapshot; writers wait up to `Busy
//!   Timeout` for it); nested `begin`s are savepoints; a dropped transaction is rolled back before
//!   anything else runs on the connection (details at [`ShardliteConnection`]). Transactions idle
//!   longer than `Transaction Timeout` (default 60 s, `0` for never) are rolled back.
//! - **Hostile SQL** is refused on every connection as on the daemon: `ATTACH`, transaction control
//!   outside the transaction API, pragmas that change durability or safety, `load_extension()`;
//!   statements run under `Command Timeout`.
//! - **Errors**: SQLite's extended codes map to sqlx's kinds (`is_unique_violation()` works); see
//!   [`ShardliteDatabaseError`].
//! - **Sharing**: connections made from one [`ShardliteConnectOptions`] (so all of a pool's) share
//!   the opened shard files and map; see there.
//! - **Any**: [`any::DRIVER`] serves `shardlite:`, `shardlite+http(s):` and `shardlite+grpc(s):` URLs.
//! - **Migrations**: `sqlx::migrate::Migrator::new(path).await?.run(&pool)` on a route-bound pool
//!   migrates that route's shard (locally or through a daemon), recording it in the shard's
//!   `_sqlx_migrations` as sqlx does; two processes migrating one shard at once never apply a
//!   migration twice (each migration's transaction starts by inserting its row, which takes the
//!   write lock). `shardlite schema migrate` applies the same folder to every shard.
//! - **Not supported**: the `query!` macros (statements are not described).

pub mod any;
mod arguments;
mod column;
mod connection;
mod database;
mod error;
mod migrate;
mod options;
mod query_result;
mod row;
mod sharded_atomic;
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
pub use sharded_atomic::ShardedAtomic;
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
