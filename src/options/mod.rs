//! Connection strings: the options a driver connection is opened with, parsed from and printed to text.
//!
//! [`ConnectionOptions`] reads two spellings of the same thing and prints both back:
//!
//! - the **ADO.NET form**, `key=value` pairs split by `;`:
//!   `Data Source=master.db;Shard Keyspace=orders_by_month;Shard Key=2026-06`
//! - the **URL form**: `shardlite:///srv/master.db?shard_keyspace=orders_by_month&shard_key=2026-06`
//!   for a local file, `shardlite+grpc://db.internal:61818?shard_keyspace=…&shard_key=…` for a daemon.
//!
//! [`FromStr`] picks the URL form when the text starts with `shardlite:` or `shardlite+` (any case), the
//! ADO.NET form otherwise. Printing then parsing gives back equal options, in either form and across forms.
//!
//! # Keys
//!
//! | ADO.NET key | URL form | value |
//! |---|---|---|
//! | `Data Source` (also `DataSource`) | the path of `shardlite:` | a local SQLite file: a master catalog or a plain database |
//! | `Endpoint` | the authority and path of `shardlite+http:` and friends | an absolute `http://` or `https://` URL of a daemon |
//! | `Transport` | the scheme | `Direct`, `Http` or `Grpc` (any case) |
//! | `Shard Keyspace` | `shard_keyspace` | the route keyspace this connection is bound to; alone, reads are answered across every shard |
//! | `Shard Key` | `shard_key` | the route key this connection is bound to (needs `Shard Keyspace`) |
//! | `Shard Id` | `shard_id` | one shard of a data host (a daemon started with `serve --shard-dir`), sent with every call (remote only) |
//! | `Api Key` | `api_key` | the daemon's API key (remote only; a secret) |
//! | `Api Key Header` | `api_key_header` | the header that carries it (remote only), default [`DEFAULT_API_KEY_HEADER`] |
//! | `Server CA` | `server_ca` | a PEM file of the CA certificate(s) that signed the daemon's TLS certificate (`https://` only), trusted besides the system's |
//! | `Client Certificate` | `client_certificate` | a PEM file of the client certificate (chain) presented to a daemon that requires one (mTLS; `https://` only) |
//! | `Client Key` | `client_key` | the PEM file of that certificate's private key (with `Client Certificate`) |
//! | `Connect Timeout` | `connect_timeout` | whole seconds to wait while connecting; `0` = no limit; at most a year |
//! | `Command Timeout` | `command_timeout` | whole seconds one command may run; `0` = no limit; at most a year |
//! | `Busy Timeout` | `busy_timeout` | whole **milliseconds** SQLite waits for a lock; `0` = do not wait; at most `2147483647` |
//! | `Transaction Timeout` | `transaction_timeout` | whole seconds an open transaction may stay idle; `0` = no limit; at most a year |
//! | `Max Pool Size` | `max_pool_size` | the most connections a pool opens, at least 1 |
//! | `Max Open Shards` | `max_open_shards` | the most shard files open at once in this process's client (local shards), at least 1 |
//!
//! # The ADO.NET form
//!
//! - Keys ignore ASCII case and surrounding white space; a run of white space inside a key counts as one space,
//!   so `shard key`, ` SHARD KEY ` and `Shard  Key` are all `Shard Key`.
//! - A value is either unquoted, running to the next `;` with surrounding white space trimmed (it may contain
//!   `=`, as base64 API keys do: `Api Key=c2VjcmV0==`), or quoted with `"` or `'`, in which case it keeps its
//!   white space and may contain `;` and `=`; the quote is written twice to stand for itself (`"a""b"` is
//!   `a"b`). Only white space may follow the closing quote.
//! - Empty pairs (`;;`, a trailing `;`) are ignored.
//! - Unlike ADO.NET, which lets the last of two equal keys win, **a key given twice is an error**, and so is an
//!   unknown key: a typo (`Shard Kye`) must not silently drop the route binding.
//!
//! # The URL form
//!
//! | scheme | connects to | `Transport` |
//! |---|---|---|
//! | `shardlite:///abs/path.db`, `shardlite:relative/path.db` | the local file | `Direct` |
//! | `shardlite+http://host:port/base` | `Endpoint=http://host:port/base` | `Http` |
//! | `shardlite+https://host:port/base` | `Endpoint=https://host:port/base` | `Http` |
//! | `shardlite+grpc://host:port/base` | `Endpoint=http://host:port/base` (plain-text HTTP/2) | `Grpc` |
//! | `shardlite+grpcs://host:port/base` | `Endpoint=https://host:port/base` (TLS) | `Grpc` |
//!
//! The path and the query values are percent-decoded, and a `+` in a query value means a space (write `%2B` for
//! a plus sign); text that does not decode to UTF-8 is an error rather than being replaced. `shardlite://host/…`
//! (a host on a file URL) and fragments (`#…`) are refused; the other keys go in the query under the snake_case
//! names above, each at most once.
//!
//! # Validation
//!
//! Parsing finishes with [`ConnectionOptions::validate`]: exactly one of `Data Source` and `Endpoint`;
//! `Endpoint` needs `Transport=Http` or `Grpc`, and those transports need an `Endpoint`; `Shard Key` needs
//! `Shard Keyspace`, and neither is blank; `Api Key` and `Api Key Header` are for remote connections
//! only; `Server CA`, `Client Certificate` and `Client Key` need an `https://` endpoint, and the last two come
//! together (the files are read when a client is built, and an unreadable or malformed one is refused naming
//! the key and the file). Every error is [`Error::ConnectionString`] and names the key (and the bad value, except for secrets).
//!
//! # Normal forms
//!
//! So that printing and parsing agree, options are kept in one normal form:
//!
//! - `Endpoint` is stored as the `url` crate serialises it (lower-case host, default port dropped), without the
//!   lone trailing `/` of a root path: `HTTP://Example.com:80/` is stored as `http://example.com`.
//! - A `Data Source` connection always reports `Transport` `Direct`, whether or not the text said so; the
//!   ADO.NET printer leaves `Transport=Direct` out.
//! - The route parts are trimmed (see [`RouteContext::new`]); `Data Source` and `Api Key` are kept exactly
//!   as given (quote them to keep surrounding white space).
//! - Builder setters round durations up to the unit the key is written in (seconds, or milliseconds for
//!   `Busy Timeout`), and cap them at the longest value parsing accepts ([`MAX_TIMEOUT`], or
//!   [`MAX_BUSY_TIMEOUT`] for `Busy Timeout`), so built options always print to text that parses.
//!
//! # Secrets
//!
//! `Display` and `Debug` never show the API key (`Api Key=***`). Use
//! [`ConnectionOptions::to_connection_string_unredacted`] or [`ConnectionOptions::to_url`], which include it,
//! only where the text is handed to something that needs it. Error messages never repeat an API key.

mod ado;
mod draft;
mod keys;
mod url_form;
mod validate;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use self::validate::normalize_endpoint;
use crate::data::DirectoryLookup;
use crate::error::{Error, Result};
use crate::map::{Secret, Transport};
use crate::routing::RouteContext;
use crate::wire::DEFAULT_API_KEY_HEADER;

/// The longest `Busy Timeout`: SQLite counts its busy timeout in milliseconds in a C `int`.
pub const MAX_BUSY_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

/// The longest `Connect Timeout`, `Command Timeout` and `Transaction Timeout`: a year, far beyond any
/// sensible setting and far below what would overflow a clock.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// How a connection opened with [`ConnectionOptions`] should behave: where it goes, which route it is bound
/// to, and its timeouts and pool size.
///
/// Parse it from an ADO.NET-style or URL-style connection string, or build it with the `with_*` setters.
/// See the [module documentation](self) for the syntax, the keys and the rules.
///
/// ```
/// use std::time::Duration;
/// use shardlite::options::ConnectionOptions;
/// use shardlite::map::Transport;
/// use shardlite::routing::RouteContext;
///
/// let options: ConnectionOptions =
///     "Endpoint=https://db.internal:61818;Transport=Grpc;Shard Keyspace=orders_by_month;\
///      Shard Key=2026-06;Api Key=c2VjcmV0==;Connect Timeout=5".parse()?;
/// assert_eq!(options.endpoint(), Some("https://db.internal:61818"));
/// assert_eq!(options.transport(), Some(Transport::Grpc));
/// assert_eq!(options.route().map(|r| r.key()), Some("2026-06"));
/// assert_eq!(options.api_key().map(|k| k.expose()), Some("c2VjcmV0=="));
/// assert_eq!(options.connect_timeout(), Some(Duration::from_secs(5)));
///
/// // Display hides the API key; the explicit printers keep it and parse back to the same options.
/// assert!(!options.to_string().contains("c2VjcmV0"));
/// assert_eq!(options.to_url().parse::<ConnectionOptions>()?, options);
/// assert_eq!(options.to_connection_string_unredacted().parse::<ConnectionOptions>()?, options);
///
/// let local = ConnectionOptions::new()
///     .with_data_source("master.db")
///     .with_route(RouteContext::new("orders_by_month", "2026-06")?);
/// assert_eq!(local.to_string(), "Data Source=master.db;Shard Keyspace=orders_by_month;Shard Key=2026-06");
/// assert_eq!(local.to_url(), "shardlite:master.db?shard_keyspace=orders_by_month&shard_key=2026-06");
/// # Ok::<(), shardlite::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectionOptions {
    target: Destination,
    route: Option<RouteContext>,
    /// `Shard Directory` and `Lookup Key`: bound by a directory entry's route instead.
    lookup: Option<DirectoryLookup>,
    /// `Shard Keyspace` given without `Shard Key` (trimmed); `None` when `route` is set.
    keyspace: Option<String>,
    shard_id: Option<String>,
    api_key: Option<Secret>,
    api_key_header: Option<String>,
    server_ca: Option<String>,
    client_certificate: Option<String>,
    client_key: Option<String>,
    connect_timeout: Option<Duration>,
    command_timeout: Option<Duration>,
    busy_timeout: Option<Duration>,
    idle_transaction_timeout: Option<Duration>,
    max_pool_size: Option<u32>,
    max_open_shards: Option<u32>,
}

/// Where a connection goes. One enum, so that a data source and an endpoint cannot both be set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Destination {
    #[default]
    Unset,
    DataSource(String),
    Endpoint {
        endpoint: String,
        transport: Transport,
    },
}

impl ConnectionOptions {
    /// Options with nothing set; they become valid once a data source or an endpoint is added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a connection string in either form; the same as [`str::parse`].
    pub fn parse(text: &str) -> Result<Self> {
        text.parse()
    }

    /// Connects to a local SQLite file (a master catalog or a plain database), replacing any endpoint.
    pub fn with_data_source(mut self, data_source: impl Into<String>) -> Self {
        self.target = Destination::DataSource(data_source.into());
        self
    }

    /// Connects to a daemon at `endpoint` over `transport` (`Http` or `Grpc`), replacing any data source.
    ///
    /// A valid URL is stored in its normal form (see the module docs); an invalid one is kept as given and
    /// reported by [`validate`](Self::validate).
    pub fn with_endpoint(mut self, endpoint: impl Into<String>, transport: Transport) -> Self {
        let endpoint = endpoint.into();
        let endpoint = normalize_endpoint(&endpoint).unwrap_or(endpoint);
        self.target = Destination::Endpoint { endpoint, transport };
        self
    }

    /// Binds the connection to one route, replacing a keyspace bound without a key and a
    /// directory entry.
    pub fn with_route(mut self, route: RouteContext) -> Self {
        self.route = Some(route);
        self.keyspace = None;
        self.lookup = None;
        self
    }

    /// Binds the connection to the route of directory `directory`'s entry for `lookup_key`
    /// (`Shard Directory`, `Lookup Key`), replacing a route or keyspace: the entry is resolved
    /// on the live map when the connection opens.
    ///
    /// ```
    /// use shardlite::options::ConnectionOptions;
    ///
    /// let options = ConnectionOptions::new().with_data_source("master.db").with_lookup("orders_by_id", "SO-1");
    /// assert_eq!(options.lookup().map(|l| l.lookup_key.as_str()), Some("SO-1"));
    /// assert_eq!(options.to_string(), "Data Source=master.db;Shard Directory=orders_by_id;Lookup Key=SO-1");
    /// ```
    pub fn with_lookup(mut self, directory: impl Into<String>, lookup_key: impl Into<String>) -> Self {
        self.lookup = Some(DirectoryLookup::new(directory.into().trim(), lookup_key.into().trim()));
        self.route = None;
        self.keyspace = None;
        self
    }

    /// Binds the connection to a keyspace without a key (`Shard Keyspace` alone), replacing any
    /// route: reads are answered across every shard, statements that write need a route.
    ///
    /// ```
    /// use shardlite::options::ConnectionOptions;
    ///
    /// let options = ConnectionOptions::new().with_data_source("master.db").with_keyspace(" orders_by_month ");
    /// assert_eq!(options.keyspace(), Some("orders_by_month"));
    /// assert!(options.route().is_none());
    /// assert_eq!(options.to_string(), "Data Source=master.db;Shard Keyspace=orders_by_month");
    /// ```
    pub fn with_keyspace(mut self, keyspace: impl Into<String>) -> Self {
        self.keyspace = Some(keyspace.into().trim().to_owned());
        self.route = None;
        self
    }

    /// Addresses one shard of a data host (remote connections only): the daemon serves that
    /// shard's file of its folder.
    pub fn with_shard_id(mut self, shard_id: impl Into<String>) -> Self {
        self.shard_id = Some(shard_id.into());
        self
    }

    /// Sets the daemon's API key (remote connections only).
    pub fn with_api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::new(api_key));
        self
    }

    /// Sets the header (gRPC: metadata key) that carries the API key (remote connections only).
    pub fn with_api_key_header(mut self, header: impl Into<String>) -> Self {
        self.api_key_header = Some(header.into());
        self
    }

    /// Trusts the CA certificate(s) in the PEM file at `path` for the daemon's TLS certificate
    /// (`https://` endpoints only).
    pub fn with_server_ca(mut self, path: impl Into<String>) -> Self {
        self.server_ca = Some(path.into());
        self
    }

    /// Presents the client certificate in the PEM file `certificate`, with the private key in the PEM
    /// file `key`, to a daemon that requires client certificates (mTLS; `https://` endpoints only).
    pub fn with_client_certificate(mut self, certificate: impl Into<String>, key: impl Into<String>) -> Self {
        self.client_certificate = Some(certificate.into());
        self.client_key = Some(key.into());
        self
    }

    /// Sets how long connecting may take, rounded up to whole seconds and capped at [`MAX_TIMEOUT`];
    /// zero means no limit.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(round_up_to_seconds(timeout));
        self
    }

    /// Sets how long one command may run, rounded up to whole seconds and capped at [`MAX_TIMEOUT`];
    /// zero means no limit.
    pub fn with_command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = Some(round_up_to_seconds(timeout));
        self
    }

    /// Sets SQLite's busy timeout, rounded up to whole milliseconds and capped at [`MAX_BUSY_TIMEOUT`];
    /// zero means do not wait for locks.
    pub fn with_busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = Some(round_up_to_millis(timeout));
        self
    }

    /// Sets how long an open transaction may stay idle before it is rolled back, rounded up to whole
    /// seconds and capped at [`MAX_TIMEOUT`]; zero means no limit.
    pub fn with_idle_transaction_timeout(mut self, timeout: Duration) -> Self {
        self.idle_transaction_timeout = Some(round_up_to_seconds(timeout));
        self
    }

    /// Sets the most connections a pool opens (at least 1).
    pub fn with_max_pool_size(mut self, size: u32) -> Self {
        self.max_pool_size = Some(size);
        self
    }

    /// Sets the most shard files open at once (at least 1; see
    /// [`EngineConfig::max_open_shards`](crate::engine::EngineConfig::max_open_shards)).
    pub fn with_max_open_shards(mut self, shards: u32) -> Self {
        self.max_open_shards = Some(shards);
        self
    }

    /// The local SQLite file, for a direct connection.
    pub fn data_source(&self) -> Option<&str> {
        match &self.target {
            Destination::DataSource(path) => Some(path),
            _ => None,
        }
    }

    /// The daemon URL, for a remote connection.
    pub fn endpoint(&self) -> Option<&str> {
        match &self.target {
            Destination::Endpoint { endpoint, .. } => Some(endpoint),
            _ => None,
        }
    }

    /// How the connection is made: `Direct` for a data source, `Http` or `Grpc` for an endpoint, `None`
    /// when neither is set.
    pub fn transport(&self) -> Option<Transport> {
        match &self.target {
            Destination::Unset => None,
            Destination::DataSource(_) => Some(Transport::Direct),
            Destination::Endpoint { transport, .. } => Some(*transport),
        }
    }

    /// The route the connection is bound to, if any.
    pub fn route(&self) -> Option<&RouteContext> {
        self.route.as_ref()
    }

    /// The directory entry the connection is bound by (`Shard Directory`, `Lookup Key`), if any.
    pub fn lookup(&self) -> Option<&DirectoryLookup> {
        self.lookup.as_ref()
    }

    /// The keyspace the connection is bound to: its route's, or the one given without a key.
    pub fn keyspace(&self) -> Option<&str> {
        match &self.route {
            Some(route) => Some(route.keyspace()),
            None => self.keyspace.as_deref(),
        }
    }

    /// Whether the connection names a keyspace but no key: reads run across every shard.
    pub fn is_keyspace_without_key(&self) -> bool {
        self.route.is_none() && self.keyspace.is_some()
    }

    /// The data-host shard id (`Shard Id`) a remote connection addresses, if any.
    pub fn shard_id(&self) -> Option<&str> {
        self.shard_id.as_deref()
    }

    /// The API key, if any. Its `Debug` is redacted; call [`Secret::expose`] only where it is sent.
    pub fn api_key(&self) -> Option<&Secret> {
        self.api_key.as_ref()
    }

    /// The header that carries the API key, if one was given.
    pub fn api_key_header(&self) -> Option<&str> {
        self.api_key_header.as_deref()
    }

    /// The header that carries the API key: the one given, or [`DEFAULT_API_KEY_HEADER`].
    pub fn api_key_header_or_default(&self) -> &str {
        self.api_key_header.as_deref().unwrap_or(DEFAULT_API_KEY_HEADER)
    }

    /// The PEM file of the CA that signed the daemon's TLS certificate (`Server CA`), if given.
    pub fn server_ca(&self) -> Option<&str> {
        self.server_ca.as_deref()
    }

    /// The PEM file of the client certificate for mTLS (`Client Certificate`), if given.
    pub fn client_certificate(&self) -> Option<&str> {
        self.client_certificate.as_deref()
    }

    /// The PEM file of the client certificate's private key (`Client Key`), if given.
    pub fn client_key(&self) -> Option<&str> {
        self.client_key.as_deref()
    }

    /// How long connecting may take (`Connect Timeout`); zero means no limit.
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout
    }

    /// How long one command may run (`Command Timeout`); zero means no limit.
    pub fn command_timeout(&self) -> Option<Duration> {
        self.command_timeout
    }

    /// SQLite's busy timeout (`Busy Timeout`, milliseconds); zero means do not wait for locks.
    pub fn busy_timeout(&self) -> Option<Duration> {
        self.busy_timeout
    }

    /// How long an open transaction may stay idle (`Transaction Timeout`); zero means no limit.
    pub fn idle_transaction_timeout(&self) -> Option<Duration> {
        self.idle_transaction_timeout
    }

    /// The most connections a pool opens (`Max Pool Size`).
    pub fn max_pool_size(&self) -> Option<u32> {
        self.max_pool_size
    }

    /// The most shard files open at once (`Max Open Shards`).
    pub fn max_open_shards(&self) -> Option<u32> {
        self.max_open_shards
    }

    /// The ADO.NET form **including the API key**: for handing to something that connects, never for logs.
    ///
    /// `Display` prints the same text with the key replaced by `***`.
    pub fn to_connection_string_unredacted(&self) -> String {
        ado::print(self, false)
    }

    /// The URL form (`shardlite:…`, `shardlite+http://…`, …) **including the API key**, percent-encoded.
    pub fn to_url(&self) -> String {
        url_form::print(self)
    }
}

impl FromStr for ConnectionOptions {
    type Err = Error;

    /// Parses the URL form when `text` starts with `shardlite:` or `shardlite+` (any case), the ADO.NET form
    /// otherwise, and validates the result.
    fn from_str(text: &str) -> Result<Self> {
        let trimmed = text.trim_start();
        let draft = if url_form::is_url_form(trimmed) {
            url_form::parse(trimmed.trim_end())?
        } else {
            ado::parse(text)?
        };
        draft.finish()
    }
}

/// The ADO.NET form with the API key shown as `***`.
impl fmt::Display for ConnectionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&ado::print(self, true))
    }
}

/// An [`Error::ConnectionString`] with `reason`.
fn invalid(reason: impl Into<String>) -> Error {
    Error::ConnectionString { reason: reason.into() }
}

/// `Http` / `Grpc` / `Direct`, as written in connection strings.
fn transport_name(transport: Transport) -> &'static str {
    match transport {
        Transport::Direct => "Direct",
        Transport::Http => "Http",
        Transport::Grpc => "Grpc",
    }
}

/// `duration` in whole seconds, rounded up, at most [`MAX_TIMEOUT`]: what `Connect Timeout`,
/// `Command Timeout` and `Transaction Timeout` can say.
fn round_up_to_seconds(duration: Duration) -> Duration {
    let seconds = if duration.subsec_nanos() == 0 {
        duration
    } else {
        Duration::from_secs(duration.as_secs().saturating_add(1))
    };
    seconds.min(MAX_TIMEOUT)
}

/// `duration` in whole milliseconds, rounded up, at most [`MAX_BUSY_TIMEOUT`]: what `Busy Timeout` can say.
fn round_up_to_millis(duration: Duration) -> Duration {
    let mut millis = duration.as_millis();
    if !duration.subsec_nanos().is_multiple_of(1_000_000) {
        millis += 1;
    }
    Duration::from_millis(u64::try_from(millis).unwrap_or(u64::MAX)).min(MAX_BUSY_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_round_durations_up_to_the_printed_unit() {
        let options = ConnectionOptions::new()
            .with_connect_timeout(Duration::from_millis(1500))
            .with_command_timeout(Duration::from_secs(3))
            .with_busy_timeout(Duration::from_micros(2500))
            .with_idle_transaction_timeout(MAX_TIMEOUT);
        assert_eq!(options.connect_timeout(), Some(Duration::from_secs(2)));
        assert_eq!(options.command_timeout(), Some(Duration::from_secs(3)));
        assert_eq!(options.busy_timeout(), Some(Duration::from_millis(3)));
        assert_eq!(options.idle_transaction_timeout(), Some(MAX_TIMEOUT));
    }

    #[test]
    fn setters_cap_durations_at_what_parsing_accepts() {
        let options = ConnectionOptions::new()
            .with_data_source("a.db")
            .with_connect_timeout(Duration::MAX)
            .with_command_timeout(MAX_TIMEOUT + Duration::from_nanos(1))
            .with_busy_timeout(Duration::MAX)
            .with_idle_transaction_timeout(Duration::from_secs(u64::MAX));
        assert_eq!(options.connect_timeout(), Some(MAX_TIMEOUT));
        assert_eq!(options.command_timeout(), Some(MAX_TIMEOUT));
        assert_eq!(options.busy_timeout(), Some(MAX_BUSY_TIMEOUT));
        assert_eq!(options.idle_transaction_timeout(), Some(MAX_TIMEOUT));
        assert_eq!(
            options.to_string().parse::<ConnectionOptions>().ok(),
            Some(options.clone())
        );
        assert_eq!(options.to_url().parse::<ConnectionOptions>().ok(), Some(options));
    }

    #[test]
    fn data_source_implies_direct_transport() {
        let implicit: ConnectionOptions = "Data Source=a.db".parse().unwrap();
        let explicit: ConnectionOptions = "Data Source=a.db;Transport=direct".parse().unwrap();
        assert_eq!(implicit, explicit);
        assert_eq!(implicit.transport(), Some(Transport::Direct));
        assert_eq!(implicit, ConnectionOptions::new().with_data_source("a.db"));
    }

    #[test]
    fn api_key_header_defaults() {
        let options = ConnectionOptions::new().with_endpoint("http://h", Transport::Http);
        assert_eq!(options.api_key_header(), None);
        assert_eq!(options.api_key_header_or_default(), DEFAULT_API_KEY_HEADER);
        assert_eq!(
            options.with_api_key_header("X-Key").api_key_header_or_default(),
            "X-Key"
        );
    }
}
