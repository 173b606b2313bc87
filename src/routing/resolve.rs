//! Resolving a route against a shard map.

use serde::{Deserialize, Serialize};

use super::{RouteToken, bucket_for_token, keyspace_eq, normalize_route, token::token_with_prefix};
use crate::error::{Error, Result, ShardDisabled, UnknownKeyspace};
use crate::map::ShardMap;

/// What decided the shard of a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum RouteSource {
    /// An exact route-key pin.
    Pin,
    /// The owner of the route's bucket.
    BucketRange,
}

/// The result of resolving a route, borrowing from the map and the input: no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardResolution<'a> {
    /// The map's keyspace (its configured spelling, which is what was hashed).
    pub keyspace: &'a str,
    /// The trimmed route key.
    pub key: &'a str,
    /// The route token.
    pub token: RouteToken,
    /// The hash bucket (reported even when a pin decided).
    pub bucket: u32,
    /// Position of the shard in the map's definition order.
    pub shard_index: usize,
    /// The shard id as defined in the map.
    pub shard_id: &'a str,
    /// The map version resolved against.
    pub map_version: u64,
    /// Whether a pin or a bucket range decided.
    pub source: RouteSource,
}

impl ShardResolution<'_> {
    /// An owned, serialisable copy.
    pub fn to_resolved(&self) -> ResolvedRoute {
        ResolvedRoute {
            keyspace: self.keyspace.to_owned(),
            key: self.key.to_owned(),
            token: self.token.0,
            token_hex: self.token.to_hex(),
            bucket: self.bucket,
            shard_id: self.shard_id.to_owned(),
            map_version: self.map_version,
            source: self.source,
        }
    }
}

/// An owned route resolution, as returned over the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResolvedRoute {
    /// The map's keyspace.
    pub keyspace: String,
    /// The trimmed route key.
    pub key: String,
    /// The route token, an unsigned 64-bit number (in JSON it may exceed 2^53).
    pub token: u64,
    /// The token as 16 lowercase hex digits.
    pub token_hex: String,
    /// The hash bucket.
    pub bucket: u32,
    /// The shard the route resolves to.
    pub shard_id: String,
    /// The map version.
    pub map_version: u64,
    /// Whether a pin or a bucket range decided.
    pub source: RouteSource,
}

impl ShardMap {
    /// The map of the version that wrote record `changes` on top of this one (see
    /// [`ShardMap::with_changes`]): how a router follows a change without reading the whole map.
    pub(crate) fn follow_changes(&self, changes: &[crate::map::records::RecordChange]) -> Result<ShardMap> {
        self.with_changes(changes)
    }

    /// The shard index that owns a (trimmed) route key, disabled or not: its pin, else its
    /// bucket's owner. For comparing two maps.
    pub(crate) fn owner_of_key(&self, key: &str) -> usize {
        match self.pinned_shard(key) {
            Some(index) => index,
            None => self.bucket_owner(bucket_for_token(
                token_with_prefix(self.route_prefix().as_bytes(), key).0,
                self.bucket_count(),
            )),
        }
    }

    /// Resolves a route to exactly one enabled shard.
    ///
    /// The keyspace must equal the map's ignoring case; the token hashes the map's spelling.
    /// An exact pin for the (trimmed, case-sensitive) key wins over the bucket owner.
    pub fn resolve<'a>(&'a self, keyspace: &'a str, key: &'a str) -> Result<ShardResolution<'a>> {
        let (keyspace, key) = normalize_route(keyspace, key)?;
        if !keyspace_eq(keyspace, self.keyspace()) {
            return Err(Error::from(UnknownKeyspace {
                keyspace: keyspace.to_owned(),
                expected: self.keyspace().to_owned(),
            }));
        }
        let prefix = self.route_prefix().as_bytes();
        let token = token_with_prefix(prefix, key);
        let bucket = bucket_for_token(token.0, self.bucket_count());
        let pin = self.pinned_shard_by_token(key, token.0, |pinned| token_with_prefix(prefix, pinned).0);
        let (shard_index, source) = match pin {
            Some(index) => (index, RouteSource::Pin),
            None => (self.bucket_owner(bucket), RouteSource::BucketRange),
        };
        let shard = &self.shards()[shard_index];
        if !shard.enabled {
            return Err(Error::from(ShardDisabled {
                key: key.to_owned(),
                shard_id: shard.id.clone(),
            }));
        }
        Ok(ShardResolution {
            keyspace: self.keyspace(),
            key,
            token,
            bucket,
            shard_index,
            shard_id: &shard.id,
            map_version: self.version(),
            source,
        })
    }
}
