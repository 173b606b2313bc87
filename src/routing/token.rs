//! Canonical route text, route tokens and buckets.

use sha2::{Digest, Sha256};

use super::normalize_route;
use crate::error::Result;

/// A route token: the first eight bytes of SHA-256 over the canonical route text, big-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RouteToken(pub u64);

impl RouteToken {
    /// The token as 16 lowercase hex digits, as printed by `shardlite token`.
    pub fn to_hex(self) -> String {
        format!("{:016x}", self.0)
    }
}

impl std::fmt::Display for RouteToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

/// Number of UTF-16 code units in `s`: the length the canonical text uses.
///
/// ```
/// assert_eq!(shardlite::routing::utf16_len("café"), 4);
/// assert_eq!(shardlite::routing::utf16_len("🙂"), 2);
/// ```
pub fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    // Most chars are one unit; only supplementary-plane chars take two.
    s.chars().map(char::len_utf16).sum()
}

/// The canonical route text `"{len}:{keyspace}|{len}:{key}"` of a route, after trimming.
///
/// ```
/// let text = shardlite::routing::canonical_route_text(" orders_by_month ", "2026-06")?;
/// assert_eq!(text, "15:orders_by_month|7:2026-06");
/// # Ok::<(), shardlite::Error>(())
/// ```
pub fn canonical_route_text(keyspace: &str, key: &str) -> Result<String> {
    let (keyspace, key) = normalize_route(keyspace, key)?;
    Ok(canonical_unchecked(keyspace, key))
}

pub(crate) fn canonical_unchecked(keyspace: &str, key: &str) -> String {
    format!("{}:{keyspace}|{}:{key}", utf16_len(keyspace), utf16_len(key))
}

/// The token of a route, hashing the keyspace exactly as given (after trimming).
///
/// Resolution against a map hashes the **map's** keyspace spelling instead; see
/// [`ShardMap::resolve`](crate::map::ShardMap::resolve).
///
/// ```
/// let token = shardlite::routing::route_token("orders_by_month", "2026-06")?;
/// assert_eq!(token.0, 16474924416982546319);
/// # Ok::<(), shardlite::Error>(())
/// ```
pub fn route_token(keyspace: &str, key: &str) -> Result<RouteToken> {
    let (keyspace, key) = normalize_route(keyspace, key)?;
    Ok(token_unchecked(keyspace, key))
}

/// Hashes the canonical text without allocating: short texts are assembled in a stack buffer
/// and hashed in one call (SHA-256 is fastest fed whole); long ones are fed piece by piece.
pub(crate) fn token_unchecked(keyspace: &str, key: &str) -> RouteToken {
    const STACK: usize = 192;
    let mut ks_digits = [0u8; 20];
    let mut key_digits = [0u8; 20];
    let ks_len = decimal(utf16_len(keyspace), &mut ks_digits);
    let key_len = decimal(utf16_len(key), &mut key_digits);
    let parts: [&[u8]; 7] = [ks_len, b":", keyspace.as_bytes(), b"|", key_len, b":", key.as_bytes()];
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let digest = if total <= STACK {
        let mut buf = [0u8; STACK];
        let mut at = 0;
        for part in parts {
            buf[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        Sha256::digest(&buf[..at])
    } else {
        let mut hasher = Sha256::new();
        for part in parts {
            hasher.update(part);
        }
        hasher.finalize()
    };
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    RouteToken(u64::from_be_bytes(first))
}

/// The bucket of a token: `token % bucket_count`. `bucket_count` must be positive.
///
/// ```
/// assert_eq!(shardlite::routing::bucket_for_token(16474924416982546319, 16), 15);
/// ```
pub fn bucket_for_token(token: u64, bucket_count: u32) -> u32 {
    assert!(bucket_count > 0, "virtual bucket count must be positive");
    // The remainder is below `bucket_count`, which fits in u32.
    u32::try_from(token % u64::from(bucket_count)).unwrap_or(u32::MAX)
}

/// Writes `n` in decimal into `buf` and returns the written digits.
fn decimal(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        // `n % 10` is a single digit.
        buf[at] = b'0' + u8::try_from(n % 10).unwrap_or(0);
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_hash_equals_hash_of_built_text() {
        for (ks, key) in [("tenants", "alpha"), ("k", "🙂"), ("a", &"x".repeat(1234) as &str)] {
            let text = canonical_unchecked(ks, key);
            let digest = Sha256::digest(text.as_bytes());
            let mut first = [0u8; 8];
            first.copy_from_slice(&digest[..8]);
            assert_eq!(token_unchecked(ks, key).0, u64::from_be_bytes(first), "{text}");
        }
    }

    #[test]
    fn reference_token_for_tenants_alpha() {
        let token = route_token(" tenants ", " alpha ").unwrap();
        assert_eq!(token.to_hex(), "a5e215518bf310a2");
        assert_eq!(token.0, 11953139800979214498);
        assert_eq!(bucket_for_token(token.0, 4), 2);
    }

    #[test]
    fn decimal_formats_zero_and_large_numbers() {
        let mut buf = [0u8; 20];
        assert_eq!(decimal(0, &mut buf), b"0");
        assert_eq!(decimal(1_234_567, &mut buf), b"1234567");
        assert_eq!(decimal(usize::MAX, &mut buf), usize::MAX.to_string().as_bytes());
    }
}
