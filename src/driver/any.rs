//! sqlx's `Any` driver for shardlite: [`DRIVER`], for `sqlx::any::install_drivers`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! sqlx::any::install_drivers(&[shardlite::driver::any::DRIVER])?;
//! let pool = sqlx::AnyPool::connect(
//!     "shardlite:///srv/data/master.db?shard_keyspace=orders_by_month&shard_key=2026-06",
//! )
//! .await?;
//! let count: i64 = sqlx::query_scalar("SELECT count(*) FROM orders").fetch_one(&pool).await?;
//! # Ok(()) }
//! ```
//!
//! The URL schemes are those of [`Shardlite`]: `shardlite:` (a local master or
//! plain file), `shardlite+http(s)://` and `shardlite+grpc(s)://` (a daemon), with the other
//! connection-string keys in the query (`shard_keyspace`, `shard_key`, `api_key`, timeouts). The
//! Any types bind as their SQLite storage class (`bool` and the integers as `INTEGER`, floats as
//! `REAL`), and values decode as `INTEGER` → `i64`, `REAL` → `f64`, `TEXT` → `String`, `BLOB` →
//! `Vec<u8>`. Transactions, savepoints and dropped transactions behave as on a
//! [`ShardliteConnection`]. `AnyQueryResult::last_insert_id` is the statement's
//! [`last_insert_rowid`](super::ShardliteQueryResult::last_insert_rowid), when it inserted.

use std::sync::Arc;

use futures_core::future::BoxFuture;
use futures_core::stream::BoxStream;
use futures_util::{FutureExt, StreamExt, TryFutureExt, stream};
use sqlx_core::any::{
    AnyArguments, AnyColumn, AnyConnectOptions, AnyConnectionBackend, AnyQueryResult, AnyRow, AnyStatement,
    AnyTypeInfo, AnyTypeInfoKind, AnyValueKind,
};
use sqlx_core::arguments::Arguments;
use sqlx_core::connection::{ConnectOptions, Connection};
use sqlx_core::database::Database;
use sqlx_core::error::Error;
use sqlx_core::ext::ustr::UStr;
use sqlx_core::sql_str::SqlStr;
use sqlx_core::{Either, HashMap};

use super::type_info::DataType;
use super::{
    Shardlite, ShardliteArguments, ShardliteColumn, ShardliteConnectOptions, ShardliteConnection, ShardliteRow,
    ShardliteTypeInfo,
};
use crate::client::{SqlResult, Value};

/// shardlite's entry for `sqlx::any::install_drivers`, as sqlx's own drivers declare theirs,
/// with migrations: `Migrator::run` on an `AnyPool` of a route migrates that route's shard.
pub const DRIVER: sqlx_core::any::driver::AnyDriver = sqlx_core::any::driver::AnyDriver::with_migrate::<Shardlite>();

impl AnyConnectionBackend for ShardliteConnection {
    fn name(&self) -> &str {
        <Shardlite as Database>::NAME
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, sqlx_core::Result<()>> {
        Connection::close(*self).boxed()
    }

    fn close_hard(self: Box<Self>) -> BoxFuture<'static, sqlx_core::Result<()>> {
        Connection::close_hard(*self).boxed()
    }

    fn ping(&mut self) -> BoxFuture<'_, sqlx_core::Result<()>> {
        Connection::ping(self).boxed()
    }

    fn begin(&mut self, statement: Option<SqlStr>) -> BoxFuture<'_, sqlx_core::Result<()>> {
        self.begin_level(statement).boxed()
    }

    fn commit(&mut self) -> BoxFuture<'_, sqlx_core::Result<()>> {
        self.commit_level().boxed()
    }

    fn rollback(&mut self) -> BoxFuture<'_, sqlx_core::Result<()>> {
        self.rollback_level().boxed()
    }

    fn start_rollback(&mut self) {
        ShardliteConnection::start_rollback(self);
    }

    fn get_transaction_depth(&self) -> usize {
        self.transaction_depth()
    }

    fn shrink_buffers(&mut self) {}

    fn flush(&mut self) -> BoxFuture<'_, sqlx_core::Result<()>> {
        Connection::flush(self).boxed()
    }

    fn should_flush(&self) -> bool {
        Connection::should_flush(self)
    }

    fn as_migrate(&mut self) -> sqlx_core::Result<&mut (dyn sqlx_core::migrate::Migrate + Send + 'static)> {
        Ok(self)
    }

    fn fetch_many(
        &mut self,
        query: SqlStr,
        _persistent: bool,
        arguments: Option<AnyArguments>,
    ) -> BoxStream<'_, sqlx_core::Result<Either<AnyQueryResult, AnyRow>>> {
        let arguments = match arguments.map(from_any_arguments).transpose() {
            Ok(arguments) => arguments,
            Err(err) => return stream::once(std::future::ready(Err(err))).boxed(),
        };
        self.run(query, arguments)
            .map(|outcome| outcome.and_then(any_steps))
            .map_ok(|steps| stream::iter(steps.into_iter().map(Ok)))
            .try_flatten_stream()
            .boxed()
    }

    fn fetch_optional(
        &mut self,
        query: SqlStr,
        _persistent: bool,
        arguments: Option<AnyArguments>,
    ) -> BoxFuture<'_, sqlx_core::Result<Option<AnyRow>>> {
        async move {
            let arguments = arguments.map(from_any_arguments).transpose()?;
            let result = self.run(query, arguments).await?;
            Ok(any_steps(result)?.into_iter().find_map(|step| match step {
                Either::Right(row) => Some(row),
                Either::Left(_) => None,
            }))
        }
        .boxed()
    }

    fn prepare_with<'c, 'q: 'c>(
        &'c mut self,
        sql: SqlStr,
        _parameters: &[AnyTypeInfo],
    ) -> BoxFuture<'c, sqlx_core::Result<AnyStatement>> {
        let statement = super::ShardliteStatement::new(sql);
        std::future::ready(AnyStatement::try_from_statement(statement, Arc::new(HashMap::new()))).boxed()
    }

    fn describe(
        &mut self,
        _sql: SqlStr,
    ) -> BoxFuture<'_, sqlx_core::Result<sqlx_core::describe::Describe<sqlx_core::any::Any>>> {
        std::future::ready(Err(Error::Protocol(
            "the shardlite driver does not describe statements (the query! macros are not supported)".to_owned(),
        )))
        .boxed()
    }
}

/// The engine's result as Any rows, then the summary.
fn any_steps(result: SqlResult) -> sqlx_core::Result<Vec<Either<AnyQueryResult, AnyRow>>> {
    let summary = AnyQueryResult {
        rows_affected: result.rows_affected,
        last_insert_id: result.last_insert_rowid,
    };
    let names: Arc<HashMap<UStr, usize>> = Arc::new(
        result
            .column_names
            .iter()
            .enumerate()
            .rev()
            .map(|(ordinal, name)| (UStr::new(name), ordinal))
            .collect(),
    );
    let mut steps = ShardliteRow::from_result(result)
        .iter()
        .map(|row| AnyRow::map_from(row, Arc::clone(&names)).map(Either::Right))
        .collect::<sqlx_core::Result<Vec<_>>>()?;
    steps.push(Either::Left(summary));
    Ok(steps)
}

fn from_any_arguments(arguments: AnyArguments) -> sqlx_core::Result<ShardliteArguments> {
    let mut out = ShardliteArguments::default();
    for value in arguments.values.0 {
        let value = match value {
            AnyValueKind::Null(_) => Value::Null,
            AnyValueKind::Bool(v) => Value::Integer(i64::from(v)),
            AnyValueKind::SmallInt(v) => Value::Integer(i64::from(v)),
            AnyValueKind::Integer(v) => Value::Integer(i64::from(v)),
            AnyValueKind::BigInt(v) => Value::Integer(v),
            AnyValueKind::Real(v) => Value::Real(f64::from(v)),
            AnyValueKind::Double(v) => Value::Real(v),
            AnyValueKind::Text(v) => Value::Text(v.to_string()),
            AnyValueKind::TextSlice(v) => Value::Text(v.to_string()),
            AnyValueKind::Blob(v) => Value::Blob(v.to_vec()),
            other => {
                return Err(Error::AnyDriverError(
                    format!("the shardlite driver cannot bind the Any value {other:?}").into(),
                ));
            }
        };
        out.add(value).map_err(Error::Encode)?;
    }
    Ok(out)
}

impl TryFrom<&ShardliteTypeInfo> for AnyTypeInfo {
    type Error = Error;

    fn try_from(type_info: &ShardliteTypeInfo) -> Result<Self, Error> {
        Ok(AnyTypeInfo {
            kind: match type_info.0 {
                DataType::Null => AnyTypeInfoKind::Null,
                DataType::Integer => AnyTypeInfoKind::BigInt,
                DataType::Bool => AnyTypeInfoKind::Bool,
                DataType::Real => AnyTypeInfoKind::Double,
                DataType::Text => AnyTypeInfoKind::Text,
                DataType::Blob => AnyTypeInfoKind::Blob,
            },
        })
    }
}

impl TryFrom<&ShardliteColumn> for AnyColumn {
    type Error = Error;

    fn try_from(column: &ShardliteColumn) -> Result<Self, Error> {
        Ok(AnyColumn {
            ordinal: column.ordinal,
            name: UStr::Shared(Arc::clone(&column.name)),
            type_info: AnyTypeInfo::try_from(&column.type_info)?,
        })
    }
}

impl TryFrom<&AnyConnectOptions> for ShardliteConnectOptions {
    type Error = Error;

    fn try_from(options: &AnyConnectOptions) -> Result<Self, Error> {
        let mut out = ShardliteConnectOptions::from_url(&options.database_url)?;
        out.log_settings = options.log_settings.clone();
        Ok(out)
    }
}
