//! The connection-string keys, in one table: each key's spellings, where the URL form carries it,
//! whether it is a secret, and how its value is read from text and printed back.
//!
//! The ADO.NET parser and printer, the URL parser and printer, and the list of known keys in
//! error messages all read [`KEYS`], so a key is added or renamed in one place.

use std::time::Duration;

use super::draft::Draft;
use super::{ConnectionOptions, Destination, MAX_BUSY_TIMEOUT, MAX_TIMEOUT, invalid, transport_name};
use crate::error::Result;
use crate::map::{Secret, Transport};

/// One connection-string key.
pub(super) struct KeySpec {
    /// The canonical ADO.NET spelling: printed, and used in messages about the ADO.NET form.
    pub(super) name: &'static str,
    /// Other ADO.NET spellings that are accepted, compared like `name`.
    pub(super) aliases: &'static [&'static str],
    /// The URL form's spelling: `name` in snake_case.
    pub(super) url_name: &'static str,
    /// Whether the URL form carries the key in its query; the others come from its scheme and path.
    pub(super) in_url_query: bool,
    /// Whether the value is a secret, which `Display` prints as `***`.
    pub(super) secret: bool,
    /// Stores a value read from text; `name` is the key as messages should call it.
    pub(super) read: fn(draft: &mut Draft, name: &str, value: String) -> Result<()>,
    /// The value to print, when the options have one.
    pub(super) print: fn(options: &ConnectionOptions) -> Option<String>,
}

/// Every key, in the order the printers write them.
pub(super) static KEYS: &[KeySpec] = &[
    KeySpec {
        name: "Data Source",
        aliases: &["DataSource"],
        url_name: "data_source",
        in_url_query: false,
        secret: false,
        read: |draft, _, value| {
            draft.data_source = Some(value);
            Ok(())
        },
        print: |options| options.data_source().map(str::to_owned),
    },
    KeySpec {
        name: "Endpoint",
        aliases: &[],
        url_name: "endpoint",
        in_url_query: false,
        secret: false,
        read: |draft, _, value| {
            draft.endpoint = Some(value);
            Ok(())
        },
        print: |options| options.endpoint().map(str::to_owned),
    },
    KeySpec {
        name: "Transport",
        aliases: &[],
        url_name: "transport",
        in_url_query: false,
        secret: false,
        read: |draft, name, value| {
            let transport = Transport::parse(&value).ok_or_else(|| {
                invalid(format!(
                    "invalid value '{value}' for '{name}': expected Direct, Http or Grpc"
                ))
            })?;
            draft.transport = Some(transport);
            Ok(())
        },
        // A data source is always `Direct`, so only an endpoint's transport is written.
        print: |options| match &options.target {
            Destination::Endpoint { transport, .. } => Some(transport_name(*transport).to_owned()),
            Destination::Unset | Destination::DataSource(_) => None,
        },
    },
    KeySpec {
        name: "Shard Keyspace",
        aliases: &[],
        url_name: "shard_keyspace",
        in_url_query: true,
        secret: false,
        read: |draft, _, value| {
            draft.shard_keyspace = Some(value);
            Ok(())
        },
        print: |options| options.keyspace().map(str::to_owned),
    },
    KeySpec {
        name: "Shard Key",
        aliases: &[],
        url_name: "shard_key",
        in_url_query: true,
        secret: false,
        read: |draft, _, value| {
            draft.shard_key = Some(value);
            Ok(())
        },
        print: |options| options.route.as_ref().map(|route| route.key().to_owned()),
    },
    KeySpec {
        name: "Shard Directory",
        aliases: &[],
        url_name: "shard_directory",
        in_url_query: true,
        secret: false,
        read: |draft, _, value| {
            draft.shard_directory = Some(value);
            Ok(())
        },
        print: |options| options.lookup.as_ref().map(|lookup| lookup.directory_name.clone()),
    },
    KeySpec {
        name: "Lookup Key",
        aliases: &[],
        url_name: "lookup_key",
        in_url_query: true,
        secret: false,
        read: |draft, _, value| {
            draft.lookup_key = Some(value);
            Ok(())
        },
        print: |options| options.lookup.as_ref().map(|lookup| lookup.lookup_key.clone()),
    },
    KeySpec {
        name: "Shard Id",
        aliases: &[],
        url_name: "shard_id",
        in_url_query: true,
        secret: false,
        read: |draft, _, value| {
            draft.options.shard_id = Some(value);
            Ok(())
        },
        print: |options| options.shard_id.clone(),
    },
    KeySpec {
        name: "Api Key",
        aliases: &[],
        url_name: "api_key",
        in_url_query: true,
        secret: true,
        read: |draft, _, value| {
            draft.options.api_key = Some(Secret::new(value));
            Ok(())
        },
        print: |options| options.api_key.as_ref().map(|key| key.expose().to_owned()),
    },
    KeySpec {
        name: "Api Key Header",
        aliases: &[],
        url_name: "api_key_header",
        in_url_query: true,
        secret: false,
        read: |draft, _, value| {
            draft.options.api_key_header = Some(value);
            Ok(())
        },
        print: |options| options.api_key_header.clone(),
    },
    KeySpec {
        name: "Server CA",
        aliases: &[],
        url_name: "server_ca",
        in_url_query: true,
        secret: false,
        read: |draft, _, value| {
            draft.options.server_ca = Some(value);
            Ok(())
        },
        print: |options| options.server_ca.clone(),
    },
    KeySpec {
        name: "Client Certificate",
        aliases: &[],
        url_name: "client_certificate",
        in_url_query: true,
        secret: false,
        read: |draft, _, value| {
            draft.options.client_certificate = Some(value);
            Ok(())
        },
        print: |options| options.client_certificate.clone(),
    },
    KeySpec {
        name: "Client Key",
        aliases: &[],
        url_name: "client_key",
        in_url_query: true,
        // The path of the key file, not the key: printed like any other path.
        secret: false,
        read: |draft, _, value| {
            draft.options.client_key = Some(value);
            Ok(())
        },
        print: |options| options.client_key.clone(),
    },
    KeySpec {
        name: "Connect Timeout",
        aliases: &[],
        url_name: "connect_timeout",
        in_url_query: true,
        secret: false,
        read: |draft, name, value| {
            draft.options.connect_timeout = Some(seconds(name, &value)?);
            Ok(())
        },
        print: |options| options.connect_timeout.map(|timeout| timeout.as_secs().to_string()),
    },
    KeySpec {
        name: "Command Timeout",
        aliases: &[],
        url_name: "command_timeout",
        in_url_query: true,
        secret: false,
        read: |draft, name, value| {
            draft.options.command_timeout = Some(seconds(name, &value)?);
            Ok(())
        },
        print: |options| options.command_timeout.map(|timeout| timeout.as_secs().to_string()),
    },
    KeySpec {
        name: "Busy Timeout",
        aliases: &[],
        url_name: "busy_timeout",
        in_url_query: true,
        secret: false,
        read: |draft, name, value| {
            draft.options.busy_timeout = Some(milliseconds(name, &value)?);
            Ok(())
        },
        print: |options| options.busy_timeout.map(|timeout| timeout.as_millis().to_string()),
    },
    KeySpec {
        name: "Transaction Timeout",
        aliases: &[],
        url_name: "transaction_timeout",
        in_url_query: true,
        secret: false,
        read: |draft, name, value| {
            draft.options.idle_transaction_timeout = Some(seconds(name, &value)?);
            Ok(())
        },
        print: |options| {
            options
                .idle_transaction_timeout
                .map(|timeout| timeout.as_secs().to_string())
        },
    },
    KeySpec {
        name: "Max Pool Size",
        aliases: &[],
        url_name: "max_pool_size",
        in_url_query: true,
        secret: false,
        read: |draft, name, value| {
            draft.options.max_pool_size = Some(count(name, &value)?);
            Ok(())
        },
        print: |options| options.max_pool_size.map(|size| size.to_string()),
    },
    KeySpec {
        name: "Max Open Shards",
        aliases: &[],
        url_name: "max_open_shards",
        in_url_query: true,
        secret: false,
        read: |draft, name, value| {
            draft.options.max_open_shards = Some(count(name, &value)?);
            Ok(())
        },
        print: |options| options.max_open_shards.map(|shards| shards.to_string()),
    },
];

/// Looks up an ADO.NET key by its name or an alias: ASCII case ignored, surrounding white space
/// trimmed, inner runs of white space read as one space.
pub(super) fn by_ado_name(raw: &str) -> Option<&'static KeySpec> {
    let normalized = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    KEYS.iter().find(|key| {
        std::iter::once(&key.name)
            .chain(key.aliases)
            .any(|spelling| spelling.eq_ignore_ascii_case(&normalized))
    })
}

/// Looks up a URL query key, ignoring ASCII case.
pub(super) fn by_url_name(name: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|key| key.url_name.eq_ignore_ascii_case(name))
}

/// ASCII digits only (no sign, no white space inside) as a `u64`.
fn whole_number(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

// The limits keep every timeout within what the engine can honour, so that a value too large for
// it fails here, naming the key, instead of when a connection or a transaction first uses it.

/// A whole number of seconds from 0 to [`MAX_TIMEOUT`] (one year).
/// A count of at least 1 that fits in 32 bits (`Max Pool Size`, `Max Open Shards`).
fn count(name: &str, value: &str) -> Result<u32> {
    whole_number(value)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n >= 1)
        .ok_or_else(|| {
            invalid(format!(
                "invalid value '{value}' for '{name}': expected a whole number from 1 to {}",
                u32::MAX
            ))
        })
}

fn seconds(name: &str, value: &str) -> Result<Duration> {
    whole_number(value)
        .map(Duration::from_secs)
        .filter(|timeout| *timeout <= MAX_TIMEOUT)
        .ok_or_else(|| {
            invalid(format!(
                "invalid value '{value}' for '{name}': expected a whole number of seconds from 0 to {} (one year)",
                MAX_TIMEOUT.as_secs()
            ))
        })
}

/// A whole number of milliseconds from 0 to [`MAX_BUSY_TIMEOUT`] (what SQLite's C `int` holds).
fn milliseconds(name: &str, value: &str) -> Result<Duration> {
    whole_number(value)
        .map(Duration::from_millis)
        .filter(|timeout| *timeout <= MAX_BUSY_TIMEOUT)
        .ok_or_else(|| {
            invalid(format!(
                "invalid value '{value}' for '{name}': expected a whole number of milliseconds from 0 to {}",
                MAX_BUSY_TIMEOUT.as_millis()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ado(spelling: &str) -> Option<&'static str> {
        by_ado_name(spelling).map(|key| key.name)
    }

    #[test]
    fn keys_match_ignoring_case_and_white_space_runs() {
        for spelling in ["Shard Key", "shard key", "SHARD KEY", " Shard Key ", "Shard \t Key"] {
            assert_eq!(ado(spelling), Some("Shard Key"), "{spelling:?}");
        }
        assert_eq!(ado("DataSource"), Some("Data Source"));
        assert_eq!(ado("datasource"), Some("Data Source"));
        assert_eq!(ado("ShardKey"), None);
        assert_eq!(by_url_name("SHARD_KEY").map(|key| key.name), Some("Shard Key"));
    }

    #[test]
    fn every_spelling_finds_its_own_key() {
        for key in KEYS {
            for spelling in std::iter::once(&key.name).chain(key.aliases) {
                assert!(
                    by_ado_name(spelling).is_some_and(|found| std::ptr::eq(found, key)),
                    "{spelling}"
                );
            }
            assert!(
                by_url_name(key.url_name).is_some_and(|found| std::ptr::eq(found, key)),
                "{}",
                key.url_name
            );
        }
    }

    #[test]
    fn url_names_are_the_ado_names_in_snake_case() {
        for key in KEYS {
            assert_eq!(key.url_name, key.name.to_ascii_lowercase().replace(' ', "_"));
        }
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
