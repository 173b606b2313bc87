//! The route as gRPC metadata: encoded once per client, sent with every call.
//!
//! A keyspace or key that is printable ASCII travels as-is; anything else travels as UTF-8 in the
//! `-bin` variant of the metadata key, which gRPC base64-encodes on the wire.

use tonic::metadata::{AsciiMetadataValue, BinaryMetadataValue, MetadataMap};

use crate::routing::RouteContext;
use crate::wire::{KEYSPACE_METADATA, KEYSPACE_METADATA_BIN, SHARD_KEY_METADATA, SHARD_KEY_METADATA_BIN};

/// A route, encoded once as the metadata values sent with every call.
#[derive(Clone)]
pub(super) struct RouteMetadata {
    pub(super) route: RouteContext,
    keyspace: MetadataText,
    key: MetadataText,
}

impl RouteMetadata {
    pub(super) fn new(route: RouteContext) -> Self {
        Self {
            keyspace: MetadataText::new(route.keyspace()),
            key: MetadataText::new(route.key()),
            route,
        }
    }

    /// Adds the keyspace and key to the metadata of a request.
    pub(super) fn insert(&self, metadata: &mut MetadataMap) {
        self.keyspace.insert(metadata, KEYSPACE_METADATA, KEYSPACE_METADATA_BIN);
        self.key.insert(metadata, SHARD_KEY_METADATA, SHARD_KEY_METADATA_BIN);
    }
}

#[derive(Clone)]
enum MetadataText {
    Ascii(AsciiMetadataValue),
    Binary(BinaryMetadataValue),
}

impl MetadataText {
    fn new(text: &str) -> Self {
        match AsciiMetadataValue::try_from(text) {
            Ok(value) if text.bytes().all(|b| b.is_ascii_graphic() || b == b' ') => Self::Ascii(value),
            _ => Self::Binary(BinaryMetadataValue::from_bytes(text.as_bytes())),
        }
    }

    fn insert(&self, metadata: &mut MetadataMap, ascii_key: &'static str, binary_key: &'static str) {
        match self {
            Self::Ascii(value) => {
                metadata.insert(ascii_key, value.clone());
            }
            Self::Binary(value) => {
                metadata.insert_bin(binary_key, value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_values_that_are_not_printable_ascii_use_binary_metadata() {
        assert!(matches!(MetadataText::new("2026-06"), MetadataText::Ascii(_)));
        assert!(matches!(MetadataText::new("münchen"), MetadataText::Binary(_)));
    }
}
