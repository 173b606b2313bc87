//! The crate-wide error type.
//!
//! Every fallible operation returns [`Error`]. Callers that need to branch do so on
//! [`Error::kind`], which groups the variants into the few categories a caller (or the
//! daemon, when it picks an HTTP or gRPC status) can act on. Messages are lowercase, name
//! the offending input, and never contain secrets.

mod details;
mod directory;
mod kind;
mod map;

use details::fenced_message;
pub use details::{
    PermissionDenial, RemoteFailure, RouteFenced, ShardDisabled, ShardProblem, SqlFailure, StaleMapVersion,
    TransactionRouteConflict, TransportFailure, UnknownKeyspace,
};
pub use directory::DirectoryProblem;
pub use kind::ErrorKind;
pub use map::MapError;

/// Result type used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in shardlite.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A route keyspace or key was empty after trimming white space.
    #[error("route {field} is required (it was empty or only white space)")]
    BlankRoutePart {
        /// `"keyspace"` or `"key"`.
        field: &'static str,
    },

    /// An operation that must run on one shard was called without a route.
    #[error(
        "a route is required for this operation: bind one with ShardedClient::for_route, or send the \
         X-CSharpDB-Keyspace and X-CSharpDB-Shard-Key headers (metadata) on remote calls"
    )]
    RouteRequired,

    /// The route named a keyspace the shard map does not serve.
    #[error("route keyspace '{}' does not match the shard map keyspace '{}'", .0.keyspace, .0.expected)]
    UnknownKeyspace(Box<UnknownKeyspace>),

    /// The route resolved to a shard that is disabled in the map.
    #[error("route key '{}' resolves to shard '{}', which is disabled", .0.key, .0.shard_id)]
    ShardDisabled(Box<ShardDisabled>),

    /// A shard id that the map does not define.
    #[error("shard '{shard_id}' is not defined in the shard map")]
    UnknownShard {
        /// The shard id that was asked for.
        shard_id: String,
    },

    /// A shard whose database file SQLite could not use while serving: an I/O error, a corrupt
    /// or foreign file, a full disk, a file it cannot open. SQLite's messages name no file.
    #[error("shard '{shard_id}' cannot use its database file ({}): {}", .failure.code_name, .failure.message)]
    ShardStorage {
        /// The shard.
        shard_id: Box<str>,
        /// What SQLite reported: its extended result code, the code's name (`SQLITE_FULL`, ...)
        /// and its message.
        failure: Box<SqlFailure>,
    },

    /// A shard that could not be opened or reached.
    #[error("shard '{}' is unavailable: {}", .0.shard_id, .0.reason)]
    ShardUnavailable(Box<ShardProblem>),

    /// A shard id that is defined but disabled was addressed directly.
    #[error("shard '{shard_id}' is disabled")]
    ShardIsDisabled {
        /// The disabled shard.
        shard_id: String,
    },

    /// The shard map failed validation.
    #[error(transparent)]
    InvalidMap(Box<MapError>),

    /// A shard directory lookup found no usable entry.
    #[error(transparent)]
    Directory(Box<DirectoryProblem>),

    /// The master catalog holds no active shard map.
    #[error("the master catalog has no active shard map")]
    NoMap,

    /// A shard-admin operation on a daemon that serves one plain, unsharded database.
    #[error(
        "shard-admin operations are unavailable: this daemon serves one unsharded database (its master has no shard map)"
    )]
    NotSharded,

    /// Another runner is driving this migration now.
    #[error(
        "migration '{migration_id}' is being run by {holder}: wait for that run to end (a runner that died releases it \
         when its lease expires)"
    )]
    ReshardRunning {
        /// The migration.
        migration_id: Box<str>,
        /// Who runs it, as far as the catalog knows.
        holder: Box<str>,
    },

    /// The catalog's store could not be reached (an etcd cluster that is down or partitioned).
    /// Nothing was written; the request may be retried. Routers keep serving the last map they
    /// know meanwhile.
    #[error("the catalog is unavailable: {reason}; retry once it answers (a change refused this way was not made)")]
    CatalogUnavailable {
        /// Which store, and what failed.
        reason: String,
    },
    /// A data-host operation on a daemon that does not serve a folder of shard files.
    #[error("this daemon is not a data host: it was not started with --shard-dir, so it serves no shard files by id")]
    NotDataHost,

    /// The master catalog is not in a state this release can use.
    #[error("master catalog problem: {reason}")]
    Catalog {
        /// What is wrong with it.
        reason: String,
    },

    /// A transaction id that is not `csdbshard:{mapVersion}:{shardId}:{inner}`.
    #[error(
        "malformed transaction id '{input}': expected 'csdbshard:{{mapVersion}}:{{shardId}}:{{innerId}}' ({reason})"
    )]
    MalformedTransactionId {
        /// The id as received.
        input: Box<str>,
        /// Which part was wrong.
        reason: &'static str,
    },

    /// A transaction id that names no open transaction (committed, rolled back, expired, or never begun).
    #[error("transaction '{transaction_id}' is not open (it was committed, rolled back, expired, or never begun)")]
    TransactionNotFound {
        /// The id as received.
        transaction_id: String,
    },

    /// A transaction that was rolled back because it stayed idle past its timeout.
    #[error("transaction '{transaction_id}' expired: it stayed idle past its timeout and was rolled back")]
    TransactionExpired {
        /// The id as received.
        transaction_id: String,
    },

    /// A transaction id was used together with a route that resolves to another shard.
    #[error(
        "the route resolves to shard '{}', but transaction '{}' belongs to shard '{}'",
        .0.route_shard_id, .0.transaction_id, .0.transaction_shard_id
    )]
    TransactionRouteConflict(Box<TransactionRouteConflict>),

    /// A transaction id was created under another shard map version.
    #[error(
        "transaction '{}' was begun under shard map version {}, but the active version is {}",
        .0.transaction_id, .0.transaction_version, .0.active_version
    )]
    StaleMapVersion(Box<StaleMapVersion>),

    /// A shard has reached its limit of open transactions, or could not take the write lock in time.
    #[error("shard '{}' is busy: {}", .0.shard_id, .0.reason)]
    Busy(Box<ShardProblem>),

    /// Read-only fan-out was given a statement that can write.
    #[error("read-only SQL accepts only SELECT, VALUES, WITH ... SELECT and EXPLAIN statements; rejected: {reason}")]
    ReadOnlyViolation {
        /// Which statement was refused and why.
        reason: String,
    },

    /// A query across every shard uses a construct whose answer could not be proven equal to
    /// the answer of one file holding every shard's rows; nothing ran.
    #[error("{construct} cannot be answered exactly across shards")]
    UnsupportedCrossShardQuery {
        /// The construct, as the SQL wrote it or by its name (`window function`, `random()`).
        construct: Box<str>,
    },

    /// A request argument was missing or malformed.
    #[error("invalid {name}: {reason}")]
    InvalidArgument {
        /// The argument's name.
        name: &'static str,
        /// What was wrong with it.
        reason: Box<str>,
    },

    /// A table, row, collection, document, saved query or procedure that does not exist.
    #[error("{what} '{name}' was not found")]
    NotFound {
        /// The kind of object (`"table"`, `"row"`, ...).
        what: &'static str,
        /// Its name or key.
        name: Box<str>,
    },

    /// SQLite refused the statement.
    #[error("sqlite error {} ({}): {}", .0.code, .0.code_name, .0.message)]
    Sql(Box<SqlFailure>),

    /// A file could not be created or opened.
    #[error("i/o error on {what}: {source}")]
    Io {
        /// What was being accessed (never a secret).
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A shard's worker stopped or the client was closed.
    #[error("shard '{shard_id}' is closed")]
    Closed {
        /// The shard (or data source) that is closed.
        shard_id: String,
    },

    /// A connection string (ADO.NET or URL form) with an unknown key or a bad value.
    #[error("connection string: {reason}")]
    ConnectionString {
        /// What is wrong, naming the key.
        reason: String,
    },

    /// A paging continuation token that was tampered with or belongs to another map version.
    #[error("invalid continuation token: {reason}")]
    InvalidCursor {
        /// What is wrong with it.
        reason: String,
    },

    /// JSON that could not be parsed.
    #[error("invalid JSON in {what}: {source}")]
    Json {
        /// What was being parsed.
        what: &'static str,
        /// The parser's error, which names line and column.
        #[source]
        source: serde_json::Error,
    },

    /// Transaction control (`BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, ...) outside the
    /// transaction API, where it would change state that other callers share.
    #[error(
        "'{statement}' is transaction control, which runs only through the transaction API: begin a \
         transaction (POST /api/transactions, the BeginTransaction RPC, or begin() in-process) and commit \
         or roll it back by its id"
    )]
    TransactionControl {
        /// The start of the refused statement.
        statement: String,
    },

    /// A statement no shared connection runs: it would reach other files, load code, or change
    /// durability, safety or connection state.
    #[error("'{statement}' is refused: {reason}")]
    ForbiddenStatement {
        /// The start of the refused statement.
        statement: String,
        /// Why it is refused.
        reason: &'static str,
    },

    /// A statement ran past its time limit and was interrupted.
    #[error(
        "the statement ran past its time limit of {limit_ms} ms and was interrupted: narrow it (WHERE, LIMIT) \
         or raise the limit ('Command Timeout', or serve --statement-timeout)"
    )]
    StatementTimeout {
        /// The limit, in milliseconds.
        limit_ms: u64,
    },

    /// The caller went away, or its deadline passed, before the work finished; it was stopped.
    #[error("the request was cancelled before it finished: the caller went away or its deadline passed")]
    Cancelled,

    /// A result grew past the rows or bytes one response may buffer.
    #[error(
        "the result exceeds the limit of {limit} {unit} per response: add LIMIT, or page through the rows \
         (LIMIT with OFFSET, or a WHERE on the last key seen)"
    )]
    ResultTooLarge {
        /// The limit that was reached.
        limit: u64,
        /// `"rows"` or `"bytes"`.
        unit: &'static str,
    },

    /// The daemon is already serving as many requests as it takes at once; it refuses more at
    /// once rather than queue them.
    #[error("the daemon is busy: {limit} requests are already in progress, the most it serves at once; retry shortly")]
    DaemonBusy {
        /// The daemon's limit on requests in progress.
        limit: usize,
    },

    /// The remote transactions open through the daemon (all API keys together) reached its limit.
    #[error(
        "{limit} remote transactions are already open through this daemon, the most it allows for all API keys \
         together (serve --max-open-transactions-per-key): commit or roll back one, or retry shortly"
    )]
    TooManyTransactions {
        /// The daemon's limit.
        limit: usize,
    },

    /// A request ran past the daemon's request timeout, or past the caller's own deadline, and
    /// was stopped; a statement it was still running was interrupted.
    #[error(
        "the request ran past its time limit of {limit_ms} ms and was stopped: the daemon's request timeout \
         (serve --request-timeout) or the caller's gRPC deadline"
    )]
    RequestTimeout {
        /// The limit, in milliseconds.
        limit_ms: u64,
    },

    /// An error a remote daemon reported, decoded from the wire with its kind preserved, so callers
    /// branch on [`Error::kind`] the same way in-process and over the network.
    #[error("{}", .0.message)]
    Remote(Box<RemoteFailure>),

    /// A catalog update named a map version that is no longer the newest: someone else changed
    /// the catalog first.
    #[error(
        "the catalog changed: the update expected map version {expected}, but the newest map version is \
         {current}; look at the catalog again and validate against it"
    )]
    MapVersionConflict {
        /// The version the caller expected.
        expected: u64,
        /// The newest version the catalog holds.
        current: u64,
    },

    /// Activation found no pending map (or another one than expected).
    #[error("there is no pending map version {expected} to activate{}", .pending.map_or_else(|| ": the catalog holds no pending map; apply an update first".to_owned(), |v| format!(": the pending map is version {v}")))]
    NoPendingMap {
        /// The version the caller asked to activate.
        expected: u64,
        /// The pending version, if any.
        pending: Option<u64>,
    },

    /// A write touched a route key or bucket that a data migration has fenced on this shard, or
    /// whose data has moved to another shard. Retryable: reads go on; writes succeed once the
    /// migration ends (or, after a move, once the writer's map is refreshed).
    #[error("{}", fenced_message(&.0))]
    RouteFenced(Box<RouteFenced>),

    /// A write touched a row that a prepared atomic transaction holds locked until its commit or
    /// abort is applied on this shard. Retryable (409, gRPC `ABORTED`): other rows are writable,
    /// and reads see the last committed values.
    #[error("a row of table '{table}' is locked by an atomic transaction that is committing; retry shortly")]
    RowLocked {
        /// The table of the locked row.
        table: Box<str>,
    },

    /// An atomic transaction wrote where its changes cannot be carried to its commit (a table
    /// without a rowid, say); nothing was prepared.
    #[error("an atomic transaction cannot write {what}; nothing was written")]
    AtomicUnsupported {
        /// What it wrote.
        what: Box<str>,
    },

    /// An atomic transaction's decision says otherwise than the caller asked: a commit that
    /// came after the transaction was aborted (presumed abort after its abandon age, or an
    /// operator's resolve), or the transaction was already finished.
    #[error("atomic transaction '{transaction_id}' was {state}; nothing more was done")]
    AtomicDecided {
        /// The atomic transaction id.
        transaction_id: Box<str>,
        /// What was decided (`committed`, `aborted`).
        state: &'static str,
    },

    /// The daemon knows the API key, but the key lacks the scope the operation needs or may not
    /// use the keyspace it reaches (403, `PERMISSION_DENIED`).
    #[error("{0}")]
    PermissionDenied(Box<PermissionDenial>),

    /// A daemon could not be reached, or did not answer within the timeout.
    #[error("call to the daemon at {} failed: {}", .0.endpoint, .0.reason)]
    Transport(Box<TransportFailure>),

    /// A schema migration recorded as applied has other SQL now than when it was applied.
    #[error(
        "migration {version} was changed after it was applied: its checksum differs from the one recorded in \
         _sqlx_migrations; restore the original file and add the change as a new migration"
    )]
    SchemaMigrationChanged {
        /// The migration's version.
        version: i64,
    },

    /// A database records a schema migration the migration set does not hold.
    #[error(
        "migration {version} is recorded as applied in _sqlx_migrations but is not in the migration set; \
         add its file back, or use the folder the database was migrated with"
    )]
    SchemaMigrationMissing {
        /// The migration's version.
        version: i64,
    },

    /// A schema migration is recorded as failed partway (`success = false`).
    #[error(
        "migration {version} is recorded with success = false: it failed partway, or another run is applying \
         it now; if no run is, repair the schema by hand and delete that row from _sqlx_migrations"
    )]
    SchemaMigrationDirty {
        /// The migration's version.
        version: i64,
    },

    /// A backup set has files missing or damaged, or a catalog that does not validate.
    #[error("backup set '{set}' cannot be used: {}", .problems.join("; "))]
    BackupDamaged {
        /// The set's manifest.
        set: Box<str>,
        /// Each file missing or damaged, named.
        problems: Box<[String]>,
    },
}

// `Result<T, Error>` travels through every layer of the hot path: large payloads are boxed so
// that an `Ok` stays cheap to move.
const _: () = assert!(std::mem::size_of::<Error>() <= 40);

/// Each boxed payload converts into its variant, so `Err(ShardDisabled { .. }.into())` builds one.
macro_rules! boxed_variants {
    ($($payload:ident => $variant:ident),* $(,)?) => {$(
        impl From<$payload> for Error {
            fn from(payload: $payload) -> Self {
                Self::$variant(Box::new(payload))
            }
        }
    )*};
}

boxed_variants! {
    UnknownKeyspace => UnknownKeyspace,
    ShardDisabled => ShardDisabled,
    TransactionRouteConflict => TransactionRouteConflict,
    StaleMapVersion => StaleMapVersion,
    SqlFailure => Sql,
    RemoteFailure => Remote,
    RouteFenced => RouteFenced,
    TransportFailure => Transport,
    MapError => InvalidMap,
    DirectoryProblem => Directory,
    PermissionDenial => PermissionDenied,
}

impl Error {
    /// Why the shard map was refused, for an [`Error::InvalidMap`].
    pub fn map_error(&self) -> Option<&MapError> {
        match self {
            Self::InvalidMap(map) => Some(map),
            _ => None,
        }
    }

    /// A [`Error::ShardUnavailable`] naming the shard and why.
    pub(crate) fn shard_unavailable(shard_id: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::ShardUnavailable(Box::new(ShardProblem::new(shard_id, reason)))
    }

    /// A [`Error::Busy`] naming the shard and why.
    pub(crate) fn busy(shard_id: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Busy(Box::new(ShardProblem::new(shard_id, reason)))
    }

    pub(crate) fn invalid_argument(name: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidArgument {
            name,
            reason: reason.into().into_boxed_str(),
        }
    }
}
