//! Shard-prefixed transaction ids.
//!
//! A transaction begun through a route gets the id `csdbshard:{mapVersion}:{shardId}:{innerId}`,
//! so execute, commit and rollback route from the id alone. The inner id is whatever the
//! shard's own client returned and may itself contain `:`. An atomic transaction across shards
//! gets `csdbatomic:{32 hex digits}`: its participants are stored with it, not in its id.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The literal prefix of every sharded transaction id.
pub const TRANSACTION_ID_PREFIX: &str = "csdbshard";

/// A parsed sharded transaction id.
///
/// ```
/// use shardlite::transaction::TransactionId;
///
/// let id: TransactionId = "csdbshard:3:shard-0:abc:def".parse()?;
/// assert_eq!(id.map_version(), 3);
/// assert_eq!(id.shard_id(), "shard-0");
/// assert_eq!(id.inner_id(), "abc:def");
/// assert_eq!(id.to_string(), "csdbshard:3:shard-0:abc:def");
/// assert!("csdbshard:-3:shard-0:x".parse::<TransactionId>().is_err());
/// # Ok::<(), shardlite::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TransactionId {
    map_version: u64,
    shard_id: String,
    inner_id: String,
}

impl TransactionId {
    /// Builds an id from its parts.
    pub fn new(map_version: u64, shard_id: impl Into<String>, inner_id: impl Into<String>) -> Self {
        Self {
            map_version,
            shard_id: shard_id.into(),
            inner_id: inner_id.into(),
        }
    }

    /// The shard map version the transaction was begun under.
    pub fn map_version(&self) -> u64 {
        self.map_version
    }

    /// The shard that holds the transaction.
    pub fn shard_id(&self) -> &str {
        &self.shard_id
    }

    /// The shard's own transaction id.
    pub fn inner_id(&self) -> &str {
        &self.inner_id
    }

    /// Parses an id strictly: exact prefix, a version of ASCII digits only, non-blank shard and inner parts.
    pub fn parse(input: &str) -> Result<Self> {
        let malformed = |reason: &'static str| Error::MalformedTransactionId {
            input: input.chars().take(200).collect(),
            reason,
        };
        let mut parts = input.splitn(4, ':');
        let (Some(prefix), Some(version), Some(shard_id), Some(inner_id)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(malformed("it needs four ':'-separated parts"));
        };
        if prefix != TRANSACTION_ID_PREFIX {
            return Err(malformed("it must start with 'csdbshard:'"));
        }
        if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed("the map version must be ASCII digits"));
        }
        let map_version = version
            .parse::<u64>()
            .map_err(|_| malformed("the map version is too large"))?;
        if shard_id.trim().is_empty() || shard_id != shard_id.trim() {
            return Err(malformed(
                "the shard id must be non-blank without surrounding white space",
            ));
        }
        if inner_id.trim().is_empty() {
            return Err(malformed("the inner transaction id must be non-blank"));
        }
        Ok(Self::new(map_version, shard_id, inner_id))
    }
}

impl fmt::Display for TransactionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{TRANSACTION_ID_PREFIX}:{}:{}:{}",
            self.map_version, self.shard_id, self.inner_id
        )
    }
}

impl FromStr for TransactionId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

/// The literal prefix of every atomic transaction id.
pub const ATOMIC_ID_PREFIX: &str = "csdbatomic";

/// The id of an atomic transaction across shards: `csdbatomic:{32 lowercase hex digits}`. It
/// names no shard: the participants (the first holding the decision) are stored with it.
///
/// ```
/// use shardlite::transaction::AtomicTransactionId;
///
/// let id = AtomicTransactionId::new();
/// assert_eq!(id.to_string().parse::<AtomicTransactionId>()?, id);
/// assert!("csdbatomic:xyz".parse::<AtomicTransactionId>().is_err());
/// # Ok::<(), shardlite::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AtomicTransactionId(String);

impl AtomicTransactionId {
    /// A new random id.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Self(uuid::Uuid::new_v4().simple().to_string())
    }

    /// Parses an id strictly: the exact prefix, then 32 lowercase hex digits.
    pub fn parse(input: &str) -> Result<Self> {
        let malformed = |reason: &'static str| Error::MalformedTransactionId {
            input: input.chars().take(200).collect(),
            reason,
        };
        let hex = input
            .strip_prefix(ATOMIC_ID_PREFIX)
            .and_then(|rest| rest.strip_prefix(':'))
            .ok_or_else(|| malformed("an atomic transaction id starts with 'csdbatomic:'"))?;
        if hex.len() != 32 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(malformed("an atomic transaction id ends with 32 lowercase hex digits"));
        }
        Ok(Self(hex.to_owned()))
    }
}

impl fmt::Display for AtomicTransactionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{ATOMIC_ID_PREFIX}:{}", self.0)
    }
}

impl FromStr for AtomicTransactionId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_ids_round_trip_and_malformed_ones_are_refused() {
        let id = AtomicTransactionId::new();
        assert_eq!(AtomicTransactionId::parse(&id.to_string()).unwrap(), id);
        for text in [
            "",
            "csdbatomic:",
            "csdbatomic:ABCDEF0123456789abcdef0123456789",
            "csdbshard:1:s:x",
        ] {
            let err = AtomicTransactionId::parse(text).unwrap_err();
            assert!(matches!(err, Error::MalformedTransactionId { .. }), "{text}");
        }
    }

    #[test]
    fn round_trips_and_keeps_colons_in_the_inner_id() {
        for text in [
            "csdbshard:1:s0:abc",
            "csdbshard:01:s-1.x:a:b:c",
            "csdbshard:18446744073709551615:s:x",
        ] {
            let id = TransactionId::parse(text).unwrap();
            assert_eq!(TransactionId::parse(&id.to_string()).unwrap(), id);
        }
        assert_eq!(TransactionId::parse("csdbshard:01:s0:x").unwrap().map_version(), 1);
    }

    #[test]
    fn malformed_ids_are_refused_with_a_reason() {
        for (text, reason) in [
            ("", "four"),
            ("csdbshard:1:s0", "four"),
            ("CSDBSHARD:1:s0:x", "csdbshard"),
            ("other:1:s0:x", "csdbshard"),
            ("csdbshard::s0:x", "digits"),
            ("csdbshard:+1:s0:x", "digits"),
            ("csdbshard: 1:s0:x", "digits"),
            ("csdbshard:1.0:s0:x", "digits"),
            ("csdbshard:99999999999999999999:s0:x", "too large"),
            ("csdbshard:1: :x", "shard id"),
            ("csdbshard:1: s0:x", "shard id"),
            ("csdbshard:1:s0: ", "inner"),
        ] {
            let err = TransactionId::parse(text).unwrap_err();
            assert!(matches!(err, Error::MalformedTransactionId { .. }), "{text}");
            assert!(err.to_string().contains(reason), "{text}: {err}");
        }
    }
}
