//! How SQL sent with an API key runs: as sent with the `write` scope, read-only with `read`
//! alone.
//!
//! `POST /api/sql/execute` and gRPC `ExecuteSql` need `read` or `write` ([`Needs::Sql`]). A key
//! that holds `write` runs any SQL; a key that holds `read` and not `write` runs its SQL on a
//! connection that cannot write, the engine's read-only path (`POST /api/sql/read-only`), and a
//! statement that would write is refused with `permission_denied` naming the `write` scope,
//! having written nothing.
//!
//! [`Needs::Sql`]: super::operations::Needs::Sql

use std::sync::Arc;

use crate::client::{DataClient, Params, SqlResult};
use crate::error::{Error, ErrorKind, PermissionDenial, Result};
use crate::server::keys::{Access, Caller, Scope};
use crate::server::operations::Needs;

/// How the SQL of one request may run.
#[derive(Debug, Clone)]
pub enum SqlAccess {
    /// As sent: the daemon requires no key, or the key holds `write`.
    AsSent,
    /// Read-only: the key holds `read` and not `write`.
    ReadOnly(Arc<Caller>),
}

impl SqlAccess {
    /// Allows an operation needing `needs` on `keyspace` with `access`, saying how its SQL may
    /// run, or says why not. Only [`Needs::Sql`] operations can be allowed read-only.
    pub fn permit(access: &Access, needs: Needs, keyspace: impl FnOnce() -> Option<String>) -> Result<Self> {
        match (needs, access) {
            (Needs::Sql, Access::Key(caller)) if !caller.has(Scope::Write) && caller.has(Scope::Read) => {
                caller.permit(Scope::Read, keyspace)?;
                Ok(Self::ReadOnly(Arc::clone(caller)))
            }
            _ => access.permit(needs.scope(), keyspace).map(|()| Self::AsSent),
        }
    }

    /// Runs `sql` with `params` on `client` as this access allows.
    pub async fn execute_sql(&self, client: &dyn DataClient, sql: &str, params: Params) -> Result<SqlResult> {
        match self {
            Self::AsSent => client.execute_sql(sql, params).await,
            Self::ReadOnly(caller) => client
                .execute_read_only_sql(sql, params)
                .await
                .map_err(|err| match err.kind() {
                    ErrorKind::ReadOnly => Error::from(PermissionDenial {
                        key_name: caller.name().to_owned(),
                        scope: Scope::Write.as_str(),
                        keyspace: None,
                    }),
                    _ => err,
                }),
        }
    }
}
