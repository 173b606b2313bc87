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
//! | `Shard Keyspace` | `shard_keyspace` | the route keyspace this connection is bound to |
//! | `Shard Key` | `shard_key` | the route key this connection is bound to |
//! | `Api Key` | `api_key` | the daemon's API key (remote only; a secret) |
//! | `Api Key Header` | `api_key_header` | the header that carries it (remote only), default [`DEFAULT_API_KEY_HEADER`] |
//! | `Connect Timeout` | `connect_timeout` | whole seconds to wait while connecting; `0` = no limit |
//! | `Command Timeout` | `command_timeout` | whole seconds one command may run; `0` = no limit |
//! | `Busy Timeout` | `busy_timeout` | whole **milliseconds** SQLite waits for a lock; `0` = do not wait |
//! | `Transaction Timeout` | `transaction_timeout` | whole seconds an open transaction may stay idle; `0` = no limit |
//! | `Max Pool Size` | `max_pool_size` | the most connections a pool opens, at least 1 |
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
//! `Endpoint` needs `Transport=Http` or `Grpc`, and those transports need an `Endpoint`; `Shard Keyspace` and
//! `Shard Key` come together and are not blank; `Api Key` and `Api Key Header` are for remote connections
//! only. Every error is [`Error::ConnectionString`] and names the key (and the bad value, except for secrets).
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
//!   `Busy Timeout`).
//!
//! # Secrets
//!
//! `Display` and `Debug` never show the API key (`Api Key=***`). Use
//! [`ConnectionOptions::to_connection_string_unredacted`] or [`ConnectionOptions::to_url`], which include it,
//! only where the text is handed to something that needs it. Error messages never repeat an API key.

mod ado;
mod url_form;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::map::{Secret, Transport};
use crate::routing::RouteContext;
use crate::wire::DEFAULT_API_KEY_HEADER;

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
    target: Target,
    route: Option<RouteContext>,
    api_key: Option<Secret>,
    api_key_header: Option<String>,
    connect_timeout: Option<Duration>,
    command_timeout: Option<Duration>,
    busy_timeout: Option<Duration>,
    idle_transaction_timeout: Option<Duration>,
    max_pool_size: Option<u32>,
}

/// Where a connection goes. One enum, so that a data source and an endpoint cannot both be set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Target {
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
        self.target = Target::DataSource(data_source.into());
        self
    }

    /// Connects to a daemon at `endpoint` over `transport` (`Http` or `Grpc`), replacing any data source.
    ///
    /// A valid URL is stored in its normal form (see the module docs); an invalid one is kept as given and
    /// reported by [`validate`](Self::validate).
    pub fn with_endpoint(mut self, endpoint: impl Into<String>, transport: Transport) -> Self {
        let endpoint = endpoint.into();
        let endpoint = normalize_endpoint(&endpoint).unwrap_or(endpoint);
        self.target = Target::Endpoint { endpoint, transport };
        self
    }

    /// Binds the connection to one route.
    pub fn with_route(mut self, route: RouteContext) -> Self {
        self.route = Some(route);
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

    /// Sets how long connecting may take, rounded up to whole seconds; zero means no limit.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(round_up_to_seconds(timeout));
        self
    }

    /// Sets how long one command may run, rounded up to whole seconds; zero means no limit.
    pub fn with_command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = Some(round_up_to_seconds(timeout));
        self
    }

    /// Sets SQLite's busy timeout, rounded up to whole milliseconds; zero means do not wait for locks.
    pub fn with_busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = Some(round_up_to_millis(timeout));
        self
    }

    /// Sets how long an open transaction may stay idle before it is rolled back, rounded up to whole
    /// seconds; zero means no limit.
    pub fn with_idle_transaction_timeout(mut self, timeout: Duration) -> Self {
        self.idle_transaction_timeout = Some(round_up_to_seconds(timeout));
        self
    }

    /// Sets the most connections a pool opens (at least 1).
    pub fn with_max_pool_size(mut self, size: u32) -> Self {
        self.max_pool_size = Some(size);
        self
    }

    /// The local SQLite file, for a direct connection.
    pub fn data_source(&self) -> Option<&str> {
        match &self.target {
            Target::DataSource(path) => Some(path),
            _ => None,
        }
    }

    /// The daemon URL, for a remote connection.
    pub fn endpoint(&self) -> Option<&str> {
        match &self.target {
            Target::Endpoint { endpoint, .. } => Some(endpoint),
            _ => None,
        }
    }

    /// How the connection is made: `Direct` for a data source, `Http` or `Grpc` for an endpoint, `None`
    /// when neither is set.
    pub fn transport(&self) -> Option<Transport> {
        match &self.target {
            Target::Unset => None,
            Target::DataSource(_) => Some(Transport::Direct),
            Target::Endpoint { transport, .. } => Some(*transport),
        }
    }

    /// The route the connection is bound to, if any.
    pub fn route(&self) -> Option<&RouteContext> {
        self.route.as_ref()
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

    /// Checks the rules that the setters cannot: a data source or an endpoint is set; the data source is
    /// not blank; the endpoint is an absolute `http(s)` URL without credentials, query or fragment, reached
    /// over `Http` or `Grpc`; the API key and its header are only used remotely, and are well formed; the
    /// pool size is at least 1.
    ///
    /// Parsing calls this; options that pass it print to text that parses back to equal options.
    pub fn validate(&self) -> Result<()> {
        match &self.target {
            Target::Unset => {
                return Err(invalid(
                    "either 'Data Source' (a local file) or 'Endpoint' (a daemon) is required",
                ));
            }
            Target::DataSource(path) => {
                if path.trim().is_empty() {
                    return Err(invalid("'Data Source' is empty"));
                }
                if self.api_key.is_some() {
                    return Err(invalid(
                        "'Api Key' applies only to remote connections ('Endpoint'), not to 'Data Source'",
                    ));
                }
                if self.api_key_header.is_some() {
                    return Err(invalid(
                        "'Api Key Header' applies only to remote connections ('Endpoint'), not to 'Data Source'",
                    ));
                }
            }
            Target::Endpoint { endpoint, transport } => {
                if *transport == Transport::Direct {
                    return Err(invalid(
                        "'Transport=Direct' cannot be used with 'Endpoint': use 'Data Source' for a local file, \
                         or 'Transport=Http' or 'Grpc' for a daemon",
                    ));
                }
                normalize_endpoint(endpoint)?;
            }
        }
        if self.api_key.as_ref().is_some_and(|key| key.expose().trim().is_empty()) {
            return Err(invalid("'Api Key' is empty"));
        }
        if let Some(header) = &self.api_key_header {
            check_header_name(header)?;
        }
        if self.max_pool_size == Some(0) {
            return Err(invalid(
                "invalid value '0' for 'Max Pool Size': expected a whole number, at least 1",
            ));
        }
        Ok(())
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

    /// The ADO.NET key/value pairs after the data source or endpoint, in print order; the API key as
    /// given (the printers decide whether to redact it).
    fn settings(&self) -> Vec<(Setting, String)> {
        let mut pairs = Vec::new();
        if let Some(route) = &self.route {
            pairs.push((Setting::ShardKeyspace, route.keyspace().to_owned()));
            pairs.push((Setting::ShardKey, route.key().to_owned()));
        }
        if let Some(key) = &self.api_key {
            pairs.push((Setting::ApiKey, key.expose().to_owned()));
        }
        if let Some(header) = &self.api_key_header {
            pairs.push((Setting::ApiKeyHeader, header.clone()));
        }
        let seconds = [
            (Setting::ConnectTimeout, self.connect_timeout),
            (Setting::CommandTimeout, self.command_timeout),
        ];
        for (key, timeout) in seconds {
            if let Some(timeout) = timeout {
                pairs.push((key, timeout.as_secs().to_string()));
            }
        }
        if let Some(timeout) = self.busy_timeout {
            pairs.push((Setting::BusyTimeout, timeout.as_millis().to_string()));
        }
        if let Some(timeout) = self.idle_transaction_timeout {
            pairs.push((Setting::TransactionTimeout, timeout.as_secs().to_string()));
        }
        if let Some(size) = self.max_pool_size {
            pairs.push((Setting::MaxPoolSize, size.to_string()));
        }
        pairs
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

/// The settings a connection string may carry, one per key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setting {
    DataSource,
    Endpoint,
    Transport,
    ShardKeyspace,
    ShardKey,
    ApiKey,
    ApiKeyHeader,
    ConnectTimeout,
    CommandTimeout,
    BusyTimeout,
    TransactionTimeout,
    MaxPoolSize,
}

impl Setting {
    const ALL: [Setting; 12] = [
        Setting::DataSource,
        Setting::Endpoint,
        Setting::Transport,
        Setting::ShardKeyspace,
        Setting::ShardKey,
        Setting::ApiKey,
        Setting::ApiKeyHeader,
        Setting::ConnectTimeout,
        Setting::CommandTimeout,
        Setting::BusyTimeout,
        Setting::TransactionTimeout,
        Setting::MaxPoolSize,
    ];

    /// The canonical ADO.NET spelling.
    fn ado_name(self) -> &'static str {
        match self {
            Setting::DataSource => "Data Source",
            Setting::Endpoint => "Endpoint",
            Setting::Transport => "Transport",
            Setting::ShardKeyspace => "Shard Keyspace",
            Setting::ShardKey => "Shard Key",
            Setting::ApiKey => "Api Key",
            Setting::ApiKeyHeader => "Api Key Header",
            Setting::ConnectTimeout => "Connect Timeout",
            Setting::CommandTimeout => "Command Timeout",
            Setting::BusyTimeout => "Busy Timeout",
            Setting::TransactionTimeout => "Transaction Timeout",
            Setting::MaxPoolSize => "Max Pool Size",
        }
    }

    /// The URL query spelling: the ADO.NET name in snake_case.
    fn url_name(self) -> &'static str {
        match self {
            Setting::DataSource => "data_source",
            Setting::Endpoint => "endpoint",
            Setting::Transport => "transport",
            Setting::ShardKeyspace => "shard_keyspace",
            Setting::ShardKey => "shard_key",
            Setting::ApiKey => "api_key",
            Setting::ApiKeyHeader => "api_key_header",
            Setting::ConnectTimeout => "connect_timeout",
            Setting::CommandTimeout => "command_timeout",
            Setting::BusyTimeout => "busy_timeout",
            Setting::TransactionTimeout => "transaction_timeout",
            Setting::MaxPoolSize => "max_pool_size",
        }
    }

    /// Looks up an ADO.NET key: ASCII case ignored, surrounding white space trimmed, inner runs of white
    /// space read as one space; `DataSource` is a synonym of `Data Source`.
    fn from_ado(raw: &str) -> Option<Setting> {
        let normalized = raw.split_whitespace().collect::<Vec<_>>().join(" ");
        if normalized.eq_ignore_ascii_case("DataSource") {
            return Some(Setting::DataSource);
        }
        Setting::ALL
            .into_iter()
            .find(|key| key.ado_name().eq_ignore_ascii_case(&normalized))
    }

    /// Looks up a URL query key, ignoring ASCII case.
    fn from_url(name: &str) -> Option<Setting> {
        Setting::ALL
            .into_iter()
            .find(|key| key.url_name().eq_ignore_ascii_case(name))
    }
}

/// Settings collected from text, before the cross-key rules are applied.
#[derive(Default)]
struct Draft {
    seen: Vec<Setting>,
    data_source: Option<String>,
    endpoint: Option<String>,
    transport: Option<Transport>,
    shard_keyspace: Option<String>,
    shard_key: Option<String>,
    options: ConnectionOptions,
}

impl Draft {
    /// Records one setting. `name` is the key as the error should call it (ADO.NET or URL spelling).
    fn set(&mut self, key: Setting, name: &str, value: String) -> Result<()> {
        if self.seen.contains(&key) {
            return Err(invalid(format!("key '{name}' is given more than once")));
        }
        self.seen.push(key);
        match key {
            Setting::DataSource => self.data_source = Some(value),
            Setting::Endpoint => self.endpoint = Some(value),
            Setting::Transport => {
                self.transport = Some(Transport::parse(&value).ok_or_else(|| {
                    invalid(format!(
                        "invalid value '{value}' for '{name}': expected Direct, Http or Grpc"
                    ))
                })?);
            }
            Setting::ShardKeyspace => self.shard_keyspace = Some(value),
            Setting::ShardKey => self.shard_key = Some(value),
            Setting::ApiKey => self.options.api_key = Some(Secret::new(value)),
            Setting::ApiKeyHeader => self.options.api_key_header = Some(value),
            Setting::ConnectTimeout => self.options.connect_timeout = Some(Duration::from_secs(seconds(name, &value)?)),
            Setting::CommandTimeout => self.options.command_timeout = Some(Duration::from_secs(seconds(name, &value)?)),
            Setting::TransactionTimeout => {
                self.options.idle_transaction_timeout = Some(Duration::from_secs(seconds(name, &value)?));
            }
            Setting::BusyTimeout => {
                let millis = whole_number(&value).ok_or_else(|| {
                    invalid(format!(
                        "invalid value '{value}' for '{name}': expected a whole number of milliseconds"
                    ))
                })?;
                self.options.busy_timeout = Some(Duration::from_millis(millis));
            }
            Setting::MaxPoolSize => {
                let size = whole_number(&value)
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| {
                        invalid(format!(
                            "invalid value '{value}' for '{name}': expected a whole number from 1 to {}",
                            u32::MAX
                        ))
                    })?;
                self.options.max_pool_size = Some(size);
            }
        }
        Ok(())
    }

    /// Applies the rules between keys, builds the options and validates them.
    fn finish(self) -> Result<ConnectionOptions> {
        let mut options = self.options;
        options.target = match (self.data_source, self.endpoint, self.transport) {
            (Some(_), Some(_), _) => {
                return Err(invalid(
                    "'Data Source' and 'Endpoint' cannot both be given: use 'Data Source' for a local file or \
                     'Endpoint' for a daemon",
                ));
            }
            (Some(_), None, Some(transport @ (Transport::Http | Transport::Grpc))) => {
                return Err(invalid(format!(
                    "'Endpoint' is required when 'Transport' is {}; 'Data Source' is for local files",
                    transport_name(transport)
                )));
            }
            (Some(path), None, _) => Target::DataSource(path),
            (None, Some(_), None) => {
                return Err(invalid(
                    "'Transport' (Http or Grpc) is required when 'Endpoint' is given",
                ));
            }
            (None, Some(endpoint), Some(transport)) => Target::Endpoint {
                endpoint: normalize_endpoint(&endpoint)?,
                transport,
            },
            (None, None, Some(transport @ (Transport::Http | Transport::Grpc))) => {
                return Err(invalid(format!(
                    "'Endpoint' is required when 'Transport' is {}",
                    transport_name(transport)
                )));
            }
            (None, None, _) => Target::Unset,
        };
        options.route = match (self.shard_keyspace, self.shard_key) {
            (None, None) => None,
            (Some(_), None) => {
                return Err(invalid(
                    "'Shard Key' is missing: 'Shard Keyspace' and 'Shard Key' bind a connection to a route together",
                ));
            }
            (None, Some(_)) => {
                return Err(invalid(
                    "'Shard Keyspace' is missing: 'Shard Keyspace' and 'Shard Key' bind a connection to a route \
                     together",
                ));
            }
            (Some(keyspace), Some(key)) => {
                if keyspace.trim().is_empty() {
                    return Err(invalid("'Shard Keyspace' is empty"));
                }
                if key.trim().is_empty() {
                    return Err(invalid("'Shard Key' is empty"));
                }
                Some(RouteContext::new(keyspace, key)?)
            }
        };
        options.validate()?;
        Ok(options)
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

/// ASCII digits only (no sign, no white space inside) as a `u64`.
fn whole_number(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn seconds(name: &str, value: &str) -> Result<u64> {
    whole_number(value).ok_or_else(|| {
        invalid(format!(
            "invalid value '{value}' for '{name}': expected a whole number of seconds"
        ))
    })
}

fn round_up_to_seconds(duration: Duration) -> Duration {
    if duration.subsec_nanos() == 0 {
        duration
    } else {
        Duration::from_secs(duration.as_secs().saturating_add(1))
    }
}

fn round_up_to_millis(duration: Duration) -> Duration {
    let mut millis = duration.as_millis();
    if !duration.subsec_nanos().is_multiple_of(1_000_000) {
        millis += 1;
    }
    Duration::from_millis(u64::try_from(millis).unwrap_or(u64::MAX))
}

/// Checks an endpoint and returns its normal form: the `url` crate's serialisation without the lone `/` of
/// a root path.
fn normalize_endpoint(text: &str) -> Result<String> {
    let expected = "expected an absolute http:// or https:// URL such as http://localhost:61818";
    // An endpoint with credentials is not repeated in the message: they are secrets.
    let shown = if text.contains('@') { "<hidden>" } else { text };
    let url = ::url::Url::parse(text.trim())
        .map_err(|e| invalid(format!("invalid value '{shown}' for 'Endpoint': {e}; {expected}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(invalid(format!("invalid value '{shown}' for 'Endpoint': {expected}")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "'Endpoint' must not contain a user name or password; put the key in 'Api Key'",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(format!(
            "invalid value '{shown}' for 'Endpoint': a query ('?…') or fragment ('#…') is not allowed"
        )));
    }
    let text = url.as_str();
    Ok(match url.path() {
        "/" => text.strip_suffix('/').unwrap_or(text).to_owned(),
        _ => text.to_owned(),
    })
}

/// An HTTP header name is a non-empty RFC 9110 token.
fn check_header_name(header: &str) -> Result<()> {
    let is_token_char = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if header.is_empty() || !header.chars().all(is_token_char) {
        return Err(invalid(format!(
            "invalid value '{header}' for 'Api Key Header': expected an HTTP header name such as {DEFAULT_API_KEY_HEADER}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(text: &str) -> String {
        match text.parse::<ConnectionOptions>() {
            Err(Error::ConnectionString { reason }) => reason,
            other => panic!("expected a connection-string error for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn keys_match_ignoring_case_and_white_space_runs() {
        for spelling in ["Shard Key", "shard key", "SHARD KEY", " Shard Key ", "Shard \t Key"] {
            assert_eq!(Setting::from_ado(spelling), Some(Setting::ShardKey), "{spelling:?}");
        }
        assert_eq!(Setting::from_ado("DataSource"), Some(Setting::DataSource));
        assert_eq!(Setting::from_ado("datasource"), Some(Setting::DataSource));
        assert_eq!(Setting::from_ado("ShardKey"), None);
        assert_eq!(Setting::from_url("SHARD_KEY"), Some(Setting::ShardKey));
    }

    #[test]
    fn every_key_has_distinct_names() {
        for (i, a) in Setting::ALL.iter().enumerate() {
            assert_eq!(Setting::from_ado(a.ado_name()), Some(*a));
            assert_eq!(Setting::from_url(a.url_name()), Some(*a));
            assert_eq!(a.url_name(), a.ado_name().to_ascii_lowercase().replace(' ', "_"));
            for b in &Setting::ALL[i + 1..] {
                assert_ne!(a.ado_name(), b.ado_name());
            }
        }
    }

    #[test]
    fn endpoints_are_normalised() {
        assert_eq!(
            normalize_endpoint("HTTP://Example.COM:80/").unwrap(),
            "http://example.com"
        );
        assert_eq!(normalize_endpoint("https://h:61818").unwrap(), "https://h:61818");
        assert_eq!(normalize_endpoint("http://h:1/base/").unwrap(), "http://h:1/base/");
        assert_eq!(normalize_endpoint("http://[::1]:5").unwrap(), "http://[::1]:5");
        for bad in [
            "ftp://h",
            "localhost:61818",
            "/relative",
            "http://h/?q=1",
            "http://h/#f",
            "http://",
        ] {
            assert!(normalize_endpoint(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn endpoint_credentials_are_refused_without_echoing_them() {
        let text = reason("Endpoint=http://user:hunter2@h;Transport=Http");
        assert!(text.contains("'Endpoint'"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[test]
    fn setters_round_durations_up_to_the_printed_unit() {
        let options = ConnectionOptions::new()
            .with_connect_timeout(Duration::from_millis(1500))
            .with_command_timeout(Duration::from_secs(3))
            .with_busy_timeout(Duration::from_micros(2500))
            .with_idle_transaction_timeout(Duration::MAX);
        assert_eq!(options.connect_timeout(), Some(Duration::from_secs(2)));
        assert_eq!(options.command_timeout(), Some(Duration::from_secs(3)));
        assert_eq!(options.busy_timeout(), Some(Duration::from_millis(3)));
        assert_eq!(options.idle_transaction_timeout(), Some(Duration::from_secs(u64::MAX)));
        let options = options.with_busy_timeout(Duration::MAX);
        assert_eq!(options.busy_timeout(), Some(Duration::from_millis(u64::MAX)));
    }

    #[test]
    fn validate_reports_what_setters_cannot_prevent() {
        let remote = || ConnectionOptions::new().with_endpoint("http://h:1", Transport::Http);
        assert!(remote().validate().is_ok());
        assert!(ConnectionOptions::new().validate().is_err());
        assert!(ConnectionOptions::new().with_data_source(" ").validate().is_err());
        assert!(
            ConnectionOptions::new()
                .with_endpoint("h:1", Transport::Http)
                .validate()
                .is_err()
        );
        assert!(
            ConnectionOptions::new()
                .with_endpoint("http://h", Transport::Direct)
                .validate()
                .is_err()
        );
        assert!(remote().with_api_key(" ").validate().is_err());
        assert!(remote().with_api_key_header("X Key").validate().is_err());
        assert!(remote().with_max_pool_size(0).validate().is_err());
        let local = ConnectionOptions::new().with_data_source("a.db");
        assert!(local.clone().with_api_key("k").validate().is_err());
        assert!(local.with_api_key_header("X-Key").validate().is_err());
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

    #[test]
    fn whole_numbers_are_digits_only() {
        assert_eq!(whole_number("0"), Some(0));
        assert_eq!(whole_number("18446744073709551615"), Some(u64::MAX));
        for bad in ["", "+1", "-1", "1.5", "1 0", "18446744073709551616", "١"] {
            assert_eq!(whole_number(bad), None, "{bad}");
        }
    }
}
