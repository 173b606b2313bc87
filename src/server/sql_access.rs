//! How SQL sent with an API key runs: as sent with the `write` scope, read-only with `read`
//! alone.
//!
//! The operations that run SQL need `read` or `write` ([`Needs::Sql`]): `POST /api/sql/execute`
//! and gRPC `ExecuteSql`, remote transactions (begin, execute, commit, rollback) and running a
//! procedure. A key that holds `write` runs any SQL. A key that holds `read` and not `write` runs
//! its SQL on a connection that cannot write, and a statement that would write is refused with
//! `permission_denied` naming the `write` scope, having written nothing:
//!
//! - its SQL runs on the engine's read-only path (`POST /api/sql/read-only`);
//! - its transactions are begun read-only, and it may use no other: a call in a transaction
//!   begun to write is refused, one in a transaction the daemon does not know is not found;
//! - its procedure runs its body read-only.
//!
//! [`Needs::Sql`]: super::operations::Needs::Sql

use std::sync::Arc;

use crate::client::{DataClient, Params, SqlResult, TransactionOptions};
use crate::error::{Error, ErrorKind, PermissionDenial, Result};
use crate::server::keys::{Access, Caller, Scope};
use crate::server::operations::Needs;
use crate::server::{ServerState, Target};

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
            Self::ReadOnly(_) => self.writes_refused(client.execute_read_only_sql(sql, params).await),
        }
    }

    /// Runs the procedure `name` with `args` on `client` as this access allows: read-only, its
    /// body runs on the read-only path with the arguments bound as the procedure binds them.
    pub async fn execute_procedure(&self, client: &dyn DataClient, name: &str, args: Params) -> Result<SqlResult> {
        match self {
            Self::AsSent => client.execute_procedure(name, args).await,
            Self::ReadOnly(_) => {
                let definition = client.get_procedure(name).await?.ok_or_else(|| Error::NotFound {
                    what: "procedure",
                    name: name.into(),
                })?;
                let bound = definition.bind(args)?;
                self.writes_refused(client.execute_read_only_sql(&definition.body_sql, bound).await)
            }
        }
    }

    /// The options a transaction begun with this access runs with: read-only, when so.
    pub fn transaction_options(&self, options: TransactionOptions) -> TransactionOptions {
        TransactionOptions {
            read_only: options.read_only || matches!(self, Self::ReadOnly(_)),
            ..options
        }
    }

    /// Allows beginning an atomic transaction with `options`: it writes, so a key that holds
    /// `read` and not `write` is refused, and it is never a maintenance transaction.
    pub fn permit_atomic(&self, options: TransactionOptions) -> Result<()> {
        if let Self::ReadOnly(caller) = self {
            return Err(write_denied(caller));
        }
        if options.maintenance {
            return Err(Error::invalid_argument(
                "maintenance",
                "an atomic transaction cannot be a maintenance transaction",
            ));
        }
        Ok(())
    }

    /// Allows a call in transaction `transaction_id` on `state`: read-only, only in a
    /// transaction the daemon began read-only.
    pub fn permit_transaction(&self, state: &ServerState, transaction_id: &str) -> Result<()> {
        let Self::ReadOnly(caller) = self else {
            return Ok(());
        };
        match state.transaction_is_read_only(transaction_id) {
            Some(true) => Ok(()),
            Some(false) => Err(write_denied(caller)),
            None => Err(Error::TransactionNotFound {
                transaction_id: transaction_id.to_owned(),
            }),
        }
    }

    /// Runs `sql` with `params` in transaction `transaction_id` on `state`, as this access
    /// allows (see [`permit_transaction`](Self::permit_transaction)).
    pub async fn execute_in_transaction(
        &self,
        state: &ServerState,
        target: &Target,
        transaction_id: &str,
        sql: &str,
        params: Params,
    ) -> Result<SqlResult> {
        self.permit_transaction(state, transaction_id)?;
        let outcome = state.execute_in_transaction(target, transaction_id, sql, params).await;
        self.writes_refused(outcome)
    }

    /// `outcome`, where a statement refused for writing is, read-only, told as the `write` scope
    /// the key lacks.
    fn writes_refused<T>(&self, outcome: Result<T>) -> Result<T> {
        match (self, outcome) {
            (Self::ReadOnly(caller), Err(err)) if err.kind() == ErrorKind::ReadOnly => Err(write_denied(caller)),
            (_, outcome) => outcome,
        }
    }
}

/// The refusal of a statement that would write, for `caller`, who lacks `write`.
fn write_denied(caller: &Caller) -> Error {
    Error::from(PermissionDenial {
        key_name: caller.name().to_owned(),
        scope: Scope::Write.as_str(),
        keyspace: None,
    })
}
