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
        // Written digit by digit: the formatting machinery costs more than the rest of a
        // resolution's owned copy.
        (0..16)
            .rev()
            .map(|nibble| {
                let digit = u32::try_from((self.0 >> (nibble * 4)) & 0xf).unwrap_or(0);
                char::from_digit(digit, 16).unwrap_or('0')
            })
            .collect()
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

/// Hashes the canonical text without allocating (see [`token_with_prefix`]).
pub(crate) fn token_unchecked(keyspace: &str, key: &str) -> RouteToken {
    let mut digits = [0u8; 20];
    let ks_len = decimal(utf16_len(keyspace), &mut digits);
    let mut prefix = [0u8; PREFIX_STACK];
    let prefix_len = ks_len.len() + 1 + keyspace.len() + 1;
    if prefix_len > PREFIX_STACK {
        let mut hasher = Sha256::new();
        for part in [ks_len, b":", keyspace.as_bytes(), b"|"] {
            hasher.update(part);
        }
        return finish_key(hasher, key);
    }
    let mut at = 0;
    for part in [ks_len, b":", keyspace.as_bytes(), b"|"] {
        prefix[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    }
    token_with_prefix(&prefix[..at], key)
}

/// Longest keyspace prefix [`token_unchecked`] builds on the stack.
const PREFIX_STACK: usize = 128;

/// The token of `key` after a canonical `prefix` (`"{len}:{keyspace}|"`, which a map builds
/// once). A canonical text that fits one SHA-256 block is assembled, already padded, in a
/// 64-byte stack block and compressed once; a longer one is fed piece by piece.
pub(crate) fn token_with_prefix(prefix: &[u8], key: &str) -> RouteToken {
    /// Bytes of message that SHA-256 hashes in one block: the padding takes the other nine.
    const ONE_BLOCK: usize = 55;
    let mut digits = [0u8; 20];
    let key_len = decimal(utf16_len(key), &mut digits);
    let total = prefix.len() + key_len.len() + 1 + key.len();
    if total > ONE_BLOCK {
        let mut hasher = Sha256::new();
        hasher.update(prefix);
        return finish_key(hasher, key);
    }
    let mut block = [0u8; 64];
    let mut at = 0;
    for part in [prefix, key_len, b":", key.as_bytes()] {
        block[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    }
    one_block_token(block, at)
}

/// SHA-256's initial state (FIPS 180-4, section 5.3.3).
const SHA256_INITIAL: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// The token of a message of `len` (at most 55) bytes at the start of `block`, the rest of
/// which is zero: SHA-256's padding (a 1 bit, zeros, the bit length) is written into the same
/// block, which is compressed once. The token is the first two words of the resulting state,
/// which are the digest's first eight bytes, big-endian.
fn one_block_token(mut block: [u8; 64], len: usize) -> RouteToken {
    block[len] = 0x80;
    // At most 55 bytes: the bit length fits easily.
    let bits = u64::try_from(len).unwrap_or(0) * 8;
    block[56..].copy_from_slice(&bits.to_be_bytes());
    let mut state = SHA256_INITIAL;
    sha2::block_api::compress256(&mut state, &[block]);
    RouteToken((u64::from(state[0]) << 32) | u64::from(state[1]))
}

/// Feeds `"{len}:{key}"` to a hasher that has taken the prefix, and takes the token.
fn finish_key(mut hasher: Sha256, key: &str) -> RouteToken {
    let mut digits = [0u8; 20];
    hasher.update(decimal(utf16_len(key), &mut digits));
    hasher.update(b":");
    hasher.update(key.as_bytes());
    first_eight(&hasher.finalize())
}

fn first_eight(digest: &[u8]) -> RouteToken {
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
    let count = u64::from(bucket_count);
    // The same remainder, without a 64-bit division, for the usual power-of-two counts.
    let bucket = if bucket_count.is_power_of_two() {
        token & (count - 1)
    } else {
        token % count
    };
    // The remainder is below `bucket_count`, which fits in u32.
    u32::try_from(bucket).unwrap_or(u32::MAX)
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
        let long = "x".repeat(1234);
        let keyspace_of_one_block = "k".repeat(40);
        for (ks, key) in [
            ("tenants", "alpha"),
            ("k", "🙂"),
            ("a", long.as_str()),
            (long.as_str(), "a"),
            // Around the one-block limit of 55 bytes: 3 + 40 + 1 = 44 bytes of prefix.
            (keyspace_of_one_block.as_str(), "12345678"),
            (keyspace_of_one_block.as_str(), "123456789"),
            (keyspace_of_one_block.as_str(), "1234567890"),
        ] {
            let text = canonical_unchecked(ks, key);
            let digest = Sha256::digest(text.as_bytes());
            let mut first = [0u8; 8];
            first.copy_from_slice(&digest[..8]);
            assert_eq!(token_unchecked(ks, key).0, u64::from_be_bytes(first), "{text}");
            let prefix = format!("{}:{ks}|", utf16_len(ks));
            assert_eq!(
                token_with_prefix(prefix.as_bytes(), key).0,
                u64::from_be_bytes(first),
                "{text}"
            );
        }
    }

    #[test]
    fn one_block_tokens_equal_the_digest_at_every_length() {
        for len in 0..=55 {
            let text: Vec<u8> = (0..len).map(|i| b'a' + u8::try_from(i % 26).unwrap()).collect();
            let mut block = [0u8; 64];
            block[..len].copy_from_slice(&text);
            let digest = Sha256::digest(&text);
            assert_eq!(one_block_token(block, len), first_eight(&digest), "length {len}");
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
    fn buckets_are_the_remainder_for_every_count() {
        for count in [1u32, 2, 3, 4, 7, 16, 1000, 1024, 65_536, u32::MAX] {
            for token in [0u64, 1, 15, 16, 17, 16474924416982546319, u64::MAX] {
                assert_eq!(
                    u64::from(bucket_for_token(token, count)),
                    token % u64::from(count),
                    "{token} % {count}"
                );
            }
        }
    }

    #[test]
    fn decimal_formats_zero_and_large_numbers() {
        let mut buf = [0u8; 20];
        assert_eq!(decimal(0, &mut buf), b"0");
        assert_eq!(decimal(1_234_567, &mut buf), b"1234567");
        assert_eq!(decimal(usize::MAX, &mut buf), usize::MAX.to_string().as_bytes());
    }
}
