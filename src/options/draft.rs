//! Settings collected from text by either parser, then checked against each other and turned into
//! [`ConnectionOptions`].

use super::keys::KeySpec;
use super::validate::normalize_endpoint;
use super::{ConnectionOptions, Destination, invalid, transport_name};
use crate::data::DirectoryLookup;
use crate::error::Result;
use crate::map::Transport;
use crate::routing::RouteContext;

/// Settings collected from text, before the cross-key rules are applied.
#[derive(Default)]
pub(super) struct Draft {
    /// The canonical names of the keys read so far.
    seen: Vec<&'static str>,
    pub(super) data_source: Option<String>,
    pub(super) endpoint: Option<String>,
    pub(super) transport: Option<Transport>,
    pub(super) shard_keyspace: Option<String>,
    pub(super) shard_key: Option<String>,
    pub(super) shard_directory: Option<String>,
    pub(super) lookup_key: Option<String>,
    /// The settings that need no cross-key rule, stored as they are read.
    pub(super) options: ConnectionOptions,
}

impl Draft {
    /// Records one setting. `name` is the key as the error should call it (ADO.NET or URL spelling).
    pub(super) fn set(&mut self, key: &'static KeySpec, name: &str, value: String) -> Result<()> {
        if self.seen.contains(&key.name) {
            return Err(invalid(format!("key '{name}' is given more than once")));
        }
        self.seen.push(key.name);
        (key.read)(self, name, value)
    }

    /// Applies the rules between keys, builds the options and validates them.
    pub(super) fn finish(self) -> Result<ConnectionOptions> {
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
            (Some(path), None, _) => Destination::DataSource(path),
            (None, Some(_), None) => {
                return Err(invalid(
                    "'Transport' (Http or Grpc) is required when 'Endpoint' is given",
                ));
            }
            (None, Some(endpoint), Some(transport)) => Destination::Endpoint {
                endpoint: normalize_endpoint(&endpoint)?,
                transport,
            },
            (None, None, Some(transport @ (Transport::Http | Transport::Grpc))) => {
                return Err(invalid(format!(
                    "'Endpoint' is required when 'Transport' is {}",
                    transport_name(transport)
                )));
            }
            (None, None, _) => Destination::Unset,
        };
        options.route = match (self.shard_keyspace, self.shard_key) {
            (None, None) => None,
            (Some(keyspace), None) => {
                if keyspace.trim().is_empty() {
                    return Err(invalid("'Shard Keyspace' is empty"));
                }
                // A keyspace without a key: reads across every shard, writes need a route.
                options.keyspace = Some(keyspace.trim().to_owned());
                None
            }
            (None, Some(_)) => {
                return Err(invalid(
                    "'Shard Keyspace' is missing: 'Shard Key' binds a connection to a route together with \
                     'Shard Keyspace'",
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
        options.lookup = lookup(self.shard_directory, self.lookup_key)?;
        if options.lookup.is_some() && (options.route.is_some() || options.keyspace.is_some()) {
            return Err(invalid(
                "'Shard Directory' and 'Lookup Key' bind a connection to a directory entry's route, so 'Shard \
                 Keyspace' and 'Shard Key' cannot be given with them: use one binding or the other",
            ));
        }
        options.validate()?;
        Ok(options)
    }
}

/// The directory entry a connection is bound by: both keys or neither, neither blank.
fn lookup(directory: Option<String>, key: Option<String>) -> Result<Option<DirectoryLookup>> {
    match (directory, key) {
        (None, None) => Ok(None),
        (Some(_), None) => Err(invalid(
            "'Lookup Key' is missing: 'Shard Directory' binds a connection to a directory entry together with \
             'Lookup Key'",
        )),
        (None, Some(_)) => Err(invalid(
            "'Shard Directory' is missing: 'Lookup Key' binds a connection to a directory entry together with \
             'Shard Directory'",
        )),
        (Some(directory), Some(key)) => {
            if directory.trim().is_empty() {
                return Err(invalid("'Shard Directory' is empty"));
            }
            if key.trim().is_empty() {
                return Err(invalid("'Lookup Key' is empty"));
            }
            Ok(Some(DirectoryLookup::new(directory.trim(), key.trim())))
        }
    }
}
