//! What to run next, rendered with the caller's own connection string so that every hint pastes:
//! the `hint:` line after an error, and the next command a successful step names.

use crate::error::{Error, ErrorKind};
use crate::options::ConnectionOptions;
use crate::wire::{DEFAULT_API_KEY_HEADER, SHARD_HEADER};

/// The connection string the command was given (`--connection`, `-c` or `SHARDLITE_CONNECTION`),
/// when it has one.
#[derive(Debug, Clone, Copy, Default)]
pub struct Caller<'a> {
    connection: Option<&'a str>,
}

impl<'a> Caller<'a> {
    /// The caller of a command given `connection`.
    pub fn new(connection: Option<&'a str>) -> Self {
        Self { connection }
    }

    /// `shardlite {command} -c CONN {rest}` with the caller's connection string, shell-quoted;
    /// `CONN` when the caller gave none. A string that holds an API key is not printed: the
    /// command reads it from `SHARDLITE_CONNECTION` instead.
    pub fn command(&self, command: &str, rest: &str) -> String {
        let rest = if rest.is_empty() {
            String::new()
        } else {
            format!(" {rest}")
        };
        format!("shardlite {command} -c {}{rest}", self.connection_argument(""))
    }

    /// The `-c` argument: the caller's connection string with `extra` pairs appended, quoted for
    /// a POSIX shell.
    fn connection_argument(&self, extra: &str) -> String {
        let Some(connection) = self.connection else {
            return if extra.is_empty() {
                "CONN".to_owned()
            } else {
                format!("'CONN;{extra}'")
            };
        };
        if holds_key(connection) {
            return "\"$SHARDLITE_CONNECTION\"".to_owned();
        }
        let text = match (connection.trim_end().trim_end_matches(';'), extra) {
            (text, "") => text.to_owned(),
            (text, extra) if is_url(text) => {
                // The URL form spells keys in snake case: `Api Key=KEY` is `api_key=KEY`.
                let (key, value) = extra.split_once('=').unwrap_or((extra, ""));
                let key = key.to_ascii_lowercase().replace(' ', "_");
                let separator = if text.contains('?') { '&' } else { '?' };
                format!("{text}{separator}{key}={value}")
            }
            (text, extra) => format!("{text};{extra}"),
        };
        shell_quoted(&text)
    }

    /// The `hint:` line for `err`, when there is a next step to suggest.
    pub fn after_error(&self, err: &Error) -> Option<String> {
        match err {
            Error::RouteRequired => Some(
                "pass --keyspace KEYSPACE --key KEY, or add 'Shard Keyspace=...;Shard Key=...' to the connection \
                 string (`shardlite map -c CONN` shows the keyspace)"
                    .replace("CONN", &self.connection_argument("")),
            ),
            Error::UnknownKeyspace(unknown) => {
                let expected = &unknown.expected;
                Some(format!(
                    "this map's keyspace is '{expected}': pass --keyspace {expected} (or 'Shard Keyspace={expected}')"
                ))
            }
            Error::ConnectionString { reason } if reason.contains("is not a key=value pair") => {
                self.connection.filter(|c| !c.contains('=') && !is_url(c)).map(|path| {
                    let fixed = shell_quoted(&format!("Data Source={}", path.trim()));
                    format!(
                        "a local master is 'Data Source=PATH': -c {fixed} (a daemon: \
                         -c 'Endpoint=http://HOST:PORT;Transport=Grpc')"
                    )
                })
            }
            _ if err.kind() == ErrorKind::Unauthenticated => Some(self.key_hint()),
            Error::Remote(failure)
                if failure.kind == ErrorKind::InvalidInput
                    && failure.message.contains(SHARD_HEADER)
                    && failure.message.contains("data host serving") =>
            {
                Some(format!(
                    "add 'Shard Id=ID' to the connection string: -c {} (`shardlite host shards -c {}` lists \
                     the ids)",
                    self.connection_argument("Shard Id=ID"),
                    self.connection_argument("")
                ))
            }
            _ => None,
        }
    }

    /// How to send an API key: in the connection string, and with curl.
    fn key_hint(&self) -> String {
        let held = self.connection.is_some_and(holds_key);
        let first = if held {
            "the connection string's 'Api Key' is not a key this daemon accepts (or lacks a scope): check it \
             against the daemon's --api-key or --api-keys file"
                .to_owned()
        } else {
            format!(
                "add 'Api Key=KEY' to the connection string: -c {}",
                self.connection_argument("Api Key=KEY")
            )
        };
        format!(
            "{first}; over REST send it in the {DEFAULT_API_KEY_HEADER} header (curl -H '{DEFAULT_API_KEY_HEADER}: \
             KEY'), not in Authorization, unless the daemon names another with --api-key-header"
        )
    }
}

/// Whether a connection string holds an API key (it is then never printed).
fn holds_key(connection: &str) -> bool {
    ConnectionOptions::parse(connection).is_ok_and(|options| options.api_key().is_some())
}

/// Whether a connection string is in the URL form (`shardlite+grpc://…`), not `Key=value` pairs
/// (whose `Endpoint=http://…` holds a `://` too).
fn is_url(text: &str) -> bool {
    text.split_once("://")
        .is_some_and(|(scheme, _)| !scheme.contains(['=', ';']))
}

/// `text` in single quotes for a POSIX shell.
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_next_command_carries_the_callers_connection_string() {
        let caller = Caller::new(Some("Data Source=demo/shards/master.db"));
        assert_eq!(
            caller.command("catalog activate", "--expected-version 2"),
            "shardlite catalog activate -c 'Data Source=demo/shards/master.db' --expected-version 2"
        );
        let keyed = Caller::new(Some("Endpoint=http://127.0.0.1:1;Transport=Grpc;Api Key=s3cret"));
        let command = keyed.command("catalog activate", "--expected-version 2");
        assert!(!command.contains("s3cret"), "{command}");
        assert!(command.contains("$SHARDLITE_CONNECTION"), "{command}");
        let url = Caller::new(Some("shardlite+grpc://127.0.0.1:1"));
        assert_eq!(
            url.connection_argument("Api Key=KEY"),
            "'shardlite+grpc://127.0.0.1:1?api_key=KEY'"
        );
    }

    #[test]
    fn a_path_given_as_a_connection_string_is_shown_as_a_data_source() {
        let err = ConnectionOptions::parse("demo/shards/master.db").expect_err("not a pair");
        let hint = Caller::new(Some("demo/shards/master.db"))
            .after_error(&err)
            .expect("a hint");
        assert!(hint.contains("-c 'Data Source=demo/shards/master.db'"), "{hint}");
    }

    #[test]
    fn a_refused_key_is_told_where_the_key_goes() {
        let err = Error::from(crate::error::RemoteFailure {
            kind: ErrorKind::Unauthenticated,
            message: "a valid API key is required".to_owned(),
            sqlite_code: None,
        });
        let hint = Caller::new(Some("Endpoint=http://127.0.0.1:1;Transport=Grpc"))
            .after_error(&err)
            .expect("a hint");
        assert!(
            hint.contains("-c 'Endpoint=http://127.0.0.1:1;Transport=Grpc;Api Key=KEY'"),
            "{hint}"
        );
        assert!(hint.contains("X-CSharpDB-Api-Key"), "{hint}");
    }
}
