//! Requests bound by a shard directory's lookup key instead of a route: the
//! `X-Shardlite-Directory` and `X-Shardlite-Lookup-Key` headers (gRPC: the same names as
//! metadata, lower-cased). The daemon resolves the entry on its live map, as
//! [`ShardedClient::for_lookup`](crate::client::ShardedClient::for_lookup) does, and the request
//! runs on the entry's route, so a request bound by an order number follows the entry across
//! moves.

use crate::data::DirectoryLookup;
use crate::error::{Error, Result};
use crate::routing::RouteContext;
use crate::server::ServerState;
use crate::wire::{DIRECTORY_HEADER, KEYSPACE_HEADER, LOOKUP_KEY_HEADER, SHARD_KEY_HEADER};

/// The directory entry a request that sent `directory` and `lookup_key` is bound by (blank
/// counts as absent), under the header or metadata names `names` (directory, lookup key): none
/// when neither was sent, and an error naming the missing one when only one was.
pub fn from_pair(
    directory: Option<&str>,
    lookup_key: Option<&str>,
    names: (&str, &str),
    what: &'static str,
) -> Result<Option<DirectoryLookup>> {
    match (present(directory), present(lookup_key)) {
        (None, None) => Ok(None),
        (Some(directory), Some(lookup_key)) => Ok(Some(DirectoryLookup::new(directory, lookup_key))),
        (Some(_), None) => Err(half(names.1, names, what)),
        (None, Some(_)) => Err(half(names.0, names, what)),
    }
}

fn present(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|t| !t.is_empty())
}

fn half(missing: &str, (directory, key): (&str, &str), what: &'static str) -> Error {
    Error::InvalidArgument {
        name: what,
        reason: format!("{missing} is missing: a request bound by a lookup key needs both {directory} and {key}")
            .into(),
    }
}

/// The route a request runs on: `route` as sent, or the route of the entry `lookup` names on
/// the daemon's live map. Sending both is an error, and so is a lookup key on a daemon that
/// serves no shard map; the directory's own refusals (an unknown directory or entry, an entry
/// that is not `Active`) are returned as they are.
pub fn bind(
    state: &ServerState,
    route: Option<RouteContext>,
    lookup: Option<DirectoryLookup>,
) -> Result<Option<RouteContext>> {
    let Some(lookup) = lookup else {
        return Ok(route);
    };
    if route.is_some() {
        return Err(Error::InvalidArgument {
            name: "route",
            reason: format!(
                "send a route ({KEYSPACE_HEADER} and {SHARD_KEY_HEADER}) or a lookup key ({DIRECTORY_HEADER} and \
                 {LOOKUP_KEY_HEADER}), not both"
            )
            .into(),
        });
    }
    let Some(sharded) = state.sharded() else {
        return Err(Error::InvalidArgument {
            name: "lookup key",
            reason: "this daemon serves no shard map, so it has no shard directories to look a key up in".into(),
        });
    };
    let map = sharded.map();
    let found = crate::directory::locate(&map, &lookup)?;
    Ok(Some(RouteContext::new(
        &found.entry.target_keyspace,
        &found.entry.route_key,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: (&str, &str) = ("D", "K");

    #[test]
    fn a_pair_needs_both_halves_and_blank_counts_as_absent() {
        assert_eq!(from_pair(None, Some(" "), NAMES, "x").unwrap(), None);
        let both = from_pair(Some(" orders "), Some("SO-1"), NAMES, "x").unwrap().unwrap();
        assert_eq!(
            (both.directory_name.as_str(), both.lookup_key.as_str()),
            ("orders", "SO-1")
        );
        let half = from_pair(Some("orders"), None, NAMES, "x").unwrap_err();
        assert!(half.to_string().contains("K is missing"), "{half}");
        let half = from_pair(None, Some("SO-1"), NAMES, "x").unwrap_err();
        assert!(half.to_string().contains("D is missing"), "{half}");
    }
}
