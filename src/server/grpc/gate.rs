//! What every gRPC call passes before its handler runs: the API key check and the route
//! metadata, as one tonic interceptor.

use tonic::metadata::{AsciiMetadataKey, MetadataMap};
use tonic::service::Interceptor;
use tonic::{Request, Status};

use super::status::{status_from_error, unauthenticated};
use crate::data::DirectoryLookup;
use crate::error::{Error, ErrorKind, Result};
use crate::routing::RouteContext;
use crate::server::keys::Access;
use crate::server::lookup;
use crate::server::{ServerState, Target};
use crate::wire::{
    DIRECTORY_METADATA, DIRECTORY_METADATA_BIN, KEYSPACE_METADATA, KEYSPACE_METADATA_BIN, LOOKUP_KEY_METADATA,
    LOOKUP_KEY_METADATA_BIN, SHARD_KEY_METADATA, SHARD_KEY_METADATA_BIN, SHARD_METADATA,
};

/// What a call addressed (its route metadata and data-host shard), stored in the request
/// extensions for the handler.
#[derive(Debug, Clone)]
pub(super) struct CallRoute(pub(super) Target);

/// Who made a call (the key's holder, or open access on a daemon without keys), stored in the
/// request extensions for the scope check.
#[derive(Debug, Clone)]
pub(super) struct CallAccess(pub(super) Access);

/// Checks the API key (when one is configured) and parses the route metadata of every call.
#[derive(Clone)]
pub(super) struct CallGate {
    state: ServerState,
    /// The lower-cased API key header; `None` when no key is configured.
    api_key_metadata: Option<AsciiMetadataKey>,
    /// A key is configured, but its header name cannot be a metadata key: refuse every call
    /// rather than serve without the check.
    misconfigured: bool,
}

impl CallGate {
    pub(super) fn new(state: ServerState) -> Self {
        let config = state.config();
        let (api_key_metadata, misconfigured) = match config.requires_key() {
            false => (None, false),
            true => match AsciiMetadataKey::from_bytes(config.api_key_header.trim().to_ascii_lowercase().as_bytes()) {
                Ok(key) => (Some(key), false),
                Err(_) => {
                    tracing::error!(
                        header = config.api_key_header,
                        "the API key header is not a valid gRPC metadata key; every gRPC call will be refused"
                    );
                    (None, true)
                }
            },
        };
        Self {
            state,
            api_key_metadata,
            misconfigured,
        }
    }

    fn authenticated(&self, metadata: &MetadataMap) -> Option<Access> {
        if self.misconfigured {
            return None;
        }
        match &self.api_key_metadata {
            None => Some(Access::Open),
            Some(name) => self
                .state
                .authenticate(metadata.get(name).map(|value| value.as_bytes())),
        }
    }
}

/// A call the gate refused (a missing or wrong API key, bad route or shard metadata), stored in
/// the request extensions: the handler does not run, and the call is counted as it ends, as
/// every other call is (the interceptor does not know which RPC it gates).
#[derive(Debug, Clone)]
pub(super) struct CallRefused {
    /// The refusal's kind, for the counts and the metrics.
    pub(super) kind: ErrorKind,
    /// The status the caller gets (boxed: a `Status` is large, and this travels in a `Result`).
    pub(super) status: Box<Status>,
}

impl Interceptor for CallGate {
    fn call(&mut self, mut request: Request<()>) -> std::result::Result<Request<()>, Status> {
        match self.admit(request.metadata()) {
            Ok((access, target)) => {
                request.extensions_mut().insert(CallRoute(target));
                request.extensions_mut().insert(CallAccess(access));
            }
            Err(refused) => {
                request.extensions_mut().insert(refused);
            }
        }
        Ok(request)
    }
}

impl CallGate {
    /// Who calls and what the call addresses, or why it is refused.
    fn admit(&self, metadata: &MetadataMap) -> std::result::Result<(Access, Target), CallRefused> {
        let Some(access) = self.authenticated(metadata) else {
            tracing::info!(code = "unauthenticated", "gRPC call refused: missing or wrong API key");
            let header = &self.state.config().api_key_header;
            return Err(CallRefused {
                kind: ErrorKind::Unauthenticated,
                status: Box::new(unauthenticated(header)),
            });
        };
        let refused = |err: Error, what: &str| {
            tracing::info!(code = err.kind().code(), error = %err, "gRPC call refused: bad {what} metadata");
            CallRefused {
                kind: err.kind(),
                status: Box::new(status_from_error(&err)),
            }
        };
        let mut route = route_from_metadata(metadata).map_err(|err| refused(err, "route"))?;
        if let Some(lookup) = lookup_from_metadata(metadata).map_err(|err| refused(err, "directory"))? {
            route = lookup::bind(&self.state, route, Some(lookup)).map_err(|err| refused(err, "directory"))?;
        }
        let shard = shard_from_metadata(metadata).map_err(|err| refused(err, "shard"))?;
        Ok((access, Target { route, shard }))
    }
}

/// Reads the route metadata, with the REST header rules: a blank value counts as absent, exactly
/// one of the two is an error naming the missing one. Values are UTF-8, in the ASCII key or (for
/// text that is not printable ASCII) in its `-bin` twin.
pub(super) fn route_from_metadata(metadata: &MetadataMap) -> Result<Option<RouteContext>> {
    let keyspace = metadata_text(metadata, KEYSPACE_METADATA, KEYSPACE_METADATA_BIN)?;
    let key = metadata_text(metadata, SHARD_KEY_METADATA, SHARD_KEY_METADATA_BIN)?;
    match (keyspace, key) {
        (None, None) => Ok(None),
        (Some(keyspace), Some(key)) => Ok(Some(RouteContext::new(keyspace, key)?)),
        (Some(_), None) => Err(half_route(SHARD_KEY_METADATA, KEYSPACE_METADATA)),
        (None, Some(_)) => Err(half_route(KEYSPACE_METADATA, SHARD_KEY_METADATA)),
    }
}

/// Reads the directory metadata that binds a call by a lookup key instead of a route (see
/// [`lookup`]), with the route metadata's rules.
pub(super) fn lookup_from_metadata(metadata: &MetadataMap) -> Result<Option<DirectoryLookup>> {
    let directory = metadata_text(metadata, DIRECTORY_METADATA, DIRECTORY_METADATA_BIN)?;
    let key = metadata_text(metadata, LOOKUP_KEY_METADATA, LOOKUP_KEY_METADATA_BIN)?;
    lookup::from_pair(
        directory.as_deref(),
        key.as_deref(),
        (DIRECTORY_METADATA, LOOKUP_KEY_METADATA),
        "directory metadata",
    )
}

/// Reads the data-host shard metadata (`x-shardlite-shard`); as over REST, a blank value is
/// refused rather than taken for no shard.
pub(super) fn shard_from_metadata(metadata: &MetadataMap) -> Result<Option<String>> {
    let Some(value) = metadata.get(SHARD_METADATA) else {
        return Ok(None);
    };
    let id = value.to_str().ok().map(str::trim).filter(|id| !id.is_empty());
    let id = id.ok_or_else(|| Error::InvalidArgument {
        name: "shard metadata",
        reason: format!(
            "the {SHARD_METADATA} metadata entry is blank or not printable ASCII: name a shard, or leave it out"
        )
        .into(),
    })?;
    Ok(Some(id.to_owned()))
}

fn half_route(missing: &str, present: &str) -> Error {
    Error::InvalidArgument {
        name: "route metadata",
        reason: format!(
            "the {missing} metadata entry is missing: a route needs both {KEYSPACE_METADATA} and \
             {SHARD_KEY_METADATA} (only {present} was sent)"
        )
        .into(),
    }
}

fn metadata_text(metadata: &MetadataMap, ascii_key: &str, binary_key: &str) -> Result<Option<String>> {
    let bad = |reason: String| Error::InvalidArgument {
        name: "route metadata",
        reason: reason.into(),
    };
    let ascii = metadata.get(ascii_key).map(|value| value.as_bytes().to_vec());
    let binary = match metadata.get_bin(binary_key) {
        None => None,
        Some(value) => Some(
            value
                .to_bytes()
                .map_err(|_| bad(format!("{binary_key} is not valid base64")))?
                .to_vec(),
        ),
    };
    let bytes = match (ascii, binary) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => return Err(bad(format!("send {ascii_key} or {binary_key}, not both"))),
        (Some(bytes), None) | (None, Some(bytes)) => bytes,
    };
    let text = String::from_utf8(bytes).map_err(|_| bad(format!("{ascii_key} is not valid UTF-8")))?;
    Ok(Some(text).filter(|t| !t.trim().is_empty()))
}

#[cfg(test)]
mod tests {
    use tonic::metadata::{AsciiMetadataValue, BinaryMetadataValue};

    use super::*;
    use crate::ErrorKind;

    fn metadata(pairs: &[(&'static str, &'static str)]) -> MetadataMap {
        let mut map = MetadataMap::new();
        for (key, value) in pairs {
            map.insert(*key, AsciiMetadataValue::from_static(value));
        }
        map
    }

    #[test]
    fn both_entries_make_a_trimmed_route_and_blank_ones_count_as_absent() {
        let route = route_from_metadata(&metadata(&[
            (KEYSPACE_METADATA, " tenants "),
            (SHARD_KEY_METADATA, "tenant-a"),
        ]))
        .expect("valid")
        .expect("a route");
        assert_eq!((route.keyspace(), route.key()), ("tenants", "tenant-a"));
        let none = route_from_metadata(&metadata(&[(KEYSPACE_METADATA, " "), (SHARD_KEY_METADATA, "")]));
        assert_eq!(none.expect("valid"), None);
    }

    #[test]
    fn one_entry_names_the_missing_one() {
        let err = route_from_metadata(&metadata(&[(KEYSPACE_METADATA, "tenants")])).expect_err("half a route");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(
            err.to_string()
                .contains("x-csharpdb-shard-key metadata entry is missing"),
            "{err}"
        );
    }

    #[test]
    fn binary_entries_carry_utf8_routes() {
        let mut map = metadata(&[(KEYSPACE_METADATA, "tenants")]);
        map.insert_bin(
            SHARD_KEY_METADATA_BIN,
            BinaryMetadataValue::from_bytes("münchen".as_bytes()),
        );
        let route = route_from_metadata(&map).expect("valid").expect("a route");
        assert_eq!(route.key(), "münchen");
        map.insert(SHARD_KEY_METADATA, AsciiMetadataValue::from_static("x"));
        assert!(route_from_metadata(&map).is_err());
    }
}
