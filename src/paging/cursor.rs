//! Opaque, signed continuation tokens for paging without counts.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::error::{Error, Result};

/// Where the next page starts: a route key, a route-local row offset and the page size.
///
/// A cursor names its route by key, not by position, so a listing whose route list grew at
/// the front (a new month began, newest first) still resumes at the right rows.
/// [`ContinuationFill`](super::ContinuationFill) produces and consumes cursors;
/// [`CursorCodec`] turns them into tokens for clients.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageCursor {
    pub(super) route_key: String,
    pub(super) route_offset: u64,
    pub(super) page_size: u64,
}

impl PageCursor {
    /// The longest route key a cursor carries, in UTF-8 bytes.
    pub const MAX_ROUTE_KEY_BYTES: usize = 1024;

    /// A cursor that resumes `route_key` at route-local row `route_offset`, with pages of
    /// `page_size` rows.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `route_key` is empty or longer than
    /// [`MAX_ROUTE_KEY_BYTES`](Self::MAX_ROUTE_KEY_BYTES), or `page_size` is 0.
    pub fn new(route_key: impl Into<String>, route_offset: u64, page_size: u64) -> Result<Self> {
        let route_key = route_key.into();
        check_route_key("route_key", &route_key)?;
        if page_size == 0 {
            return Err(Error::invalid_argument("page_size", "must be at least 1, got 0"));
        }
        Ok(Self {
            route_key,
            route_offset,
            page_size,
        })
    }

    /// The route the next page starts in.
    pub fn route_key(&self) -> &str {
        &self.route_key
    }

    /// Rows of that route already delivered: the next read's `OFFSET`.
    pub fn route_offset(&self) -> u64 {
        self.route_offset
    }

    /// Rows per page.
    pub fn page_size(&self) -> u64 {
        self.page_size
    }
}

/// Rejects route keys a cursor cannot carry.
pub(super) fn check_route_key(argument: &'static str, route_key: &str) -> Result<()> {
    if route_key.is_empty() {
        return Err(Error::invalid_argument(argument, "a route key cannot be empty"));
    }
    if route_key.len() > PageCursor::MAX_ROUTE_KEY_BYTES {
        return Err(Error::invalid_argument(
            argument,
            format!(
                "route key is {} bytes, longer than the {} a page cursor carries",
                route_key.len(),
                PageCursor::MAX_ROUTE_KEY_BYTES
            ),
        ));
    }
    Ok(())
}

/// Encodes [`PageCursor`]s as opaque URL-safe tokens and decodes them again, rejecting
/// tokens that were altered, signed with another secret, or issued under another shard map
/// version.
///
/// A token is URL-safe base64 (no padding) of a versioned binary payload
/// `{format, map_version, route_offset, page_size, route_key}` followed by its
/// HMAC-SHA256 (RFC 2104) under the caller's secret. The payload is signed, not encrypted:
/// a client can read the route key and offset, but cannot change them. Tokens are bound to
/// the map version because a map change (a migration) can move or fence routes; a client
/// holding an old token is told to start again from the first page.
///
/// The secret should be at least 32 random bytes, kept like any other signing key, and the
/// same on every server that decodes the tokens. Rotating it invalidates outstanding tokens.
/// If one secret serves several listings, a token from one listing is accepted by another
/// (its route key must still be in the other listing's routes); use a secret per listing to
/// keep them apart.
///
/// ```
/// use shardlite::paging::{CursorCodec, PageCursor};
///
/// let codec = CursorCodec::new(b"0123456789abcdef0123456789abcdef", 7)?;
/// let cursor = PageCursor::new("2026-05", 4, 10)?;
/// let token = codec.encode(&cursor);
/// assert_eq!(codec.decode(&token)?, cursor);
///
/// let after_migration = CursorCodec::new(b"0123456789abcdef0123456789abcdef", 8)?;
/// assert!(after_migration.decode(&token).is_err());
/// # Ok::<(), shardlite::Error>(())
/// ```
#[derive(Clone)]
pub struct CursorCodec {
    secret: Vec<u8>,
    map_version: u64,
}

/// Layout version of the token payload; bump it when the layout changes.
const FORMAT_VERSION: u8 = 1;
/// Prefixed to every signed payload so a MAC made with the same secret for another purpose
/// never verifies as a cursor.
const MAC_DOMAIN: &[u8] = b"shardlite/page-cursor\0";
const MAC_LEN: usize = 32;
/// format (1) + map version, offset, page size (8 each) + route key length (2).
const HEADER_LEN: usize = 1 + 8 + 8 + 8 + 2;
const MIN_TOKEN_BYTES: usize = HEADER_LEN + 1 + MAC_LEN;
const MAX_TOKEN_BYTES: usize = HEADER_LEN + PageCursor::MAX_ROUTE_KEY_BYTES + MAC_LEN;
/// The base64 length of the longest token.
const MAX_TOKEN_CHARS: usize = MAX_TOKEN_BYTES.div_ceil(3) * 4;

impl CursorCodec {
    /// The shortest secret accepted, in bytes (32 random bytes are recommended).
    pub const MIN_SECRET_BYTES: usize = 16;

    /// A codec signing with `secret` for shard map version `map_version`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `secret` is shorter than
    /// [`MIN_SECRET_BYTES`](Self::MIN_SECRET_BYTES).
    pub fn new(secret: impl AsRef<[u8]>, map_version: u64) -> Result<Self> {
        let secret = secret.as_ref();
        if secret.len() < Self::MIN_SECRET_BYTES {
            return Err(Error::invalid_argument(
                "secret",
                format!(
                    "is {} bytes, shorter than the minimum of {} (use 32 random bytes)",
                    secret.len(),
                    Self::MIN_SECRET_BYTES
                ),
            ));
        }
        Ok(Self {
            secret: secret.to_vec(),
            map_version,
        })
    }

    /// The shard map version tokens are issued under and accepted for.
    pub fn map_version(&self) -> u64 {
        self.map_version
    }

    /// The token for `cursor`: URL-safe base64 without padding, at most a few hundred
    /// characters for month keys.
    pub fn encode(&self, cursor: &PageCursor) -> String {
        let key = cursor.route_key.as_bytes();
        // `PageCursor` guarantees the key fits; the fallback is never taken.
        let key_len = u16::try_from(key.len()).unwrap_or(u16::MAX);
        let mut bytes = Vec::with_capacity(HEADER_LEN + key.len() + MAC_LEN);
        bytes.push(FORMAT_VERSION);
        bytes.extend_from_slice(&self.map_version.to_be_bytes());
        bytes.extend_from_slice(&cursor.route_offset.to_be_bytes());
        bytes.extend_from_slice(&cursor.page_size.to_be_bytes());
        bytes.extend_from_slice(&key_len.to_be_bytes());
        bytes.extend_from_slice(key);
        let mac = self.mac(&bytes);
        bytes.extend_from_slice(&mac);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The cursor in `token`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidCursor`] when the token is empty, too long, not URL-safe base64, too
    /// short, of an unknown format, altered or signed with another secret (the signature does
    /// not match), or issued under another map version (the message names both versions).
    pub fn decode(&self, token: &str) -> Result<PageCursor> {
        if token.is_empty() {
            return Err(invalid_cursor("the token is empty".into()));
        }
        if token.len() > MAX_TOKEN_CHARS {
            return Err(invalid_cursor(format!(
                "the token is {} characters, longer than a page cursor can be ({MAX_TOKEN_CHARS})",
                token.len()
            )));
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(token)
            .map_err(|err| invalid_cursor(format!("the token is not URL-safe base64 without padding ({err})")))?;
        if bytes.len() < MIN_TOKEN_BYTES {
            return Err(invalid_cursor(format!(
                "the token holds {} bytes, too few for a page cursor (at least {MIN_TOKEN_BYTES})",
                bytes.len()
            )));
        }
        let (payload, mac) = bytes.split_at(bytes.len() - MAC_LEN);
        if payload[0] != FORMAT_VERSION {
            return Err(invalid_cursor(format!(
                "token format {} is not supported (this release reads format {FORMAT_VERSION})",
                payload[0]
            )));
        }
        if !constant_time_eq(&self.mac(payload), mac) {
            return Err(invalid_cursor(
                "the token's signature does not match: it was altered, or signed with another secret".into(),
            ));
        }

        let mut rest = &payload[1..];
        let map_version = u64::from_be_bytes(take(&mut rest)?);
        let route_offset = u64::from_be_bytes(take(&mut rest)?);
        let page_size = u64::from_be_bytes(take(&mut rest)?);
        let key_len = usize::from(u16::from_be_bytes(take(&mut rest)?));
        if rest.len() != key_len {
            return Err(malformed(format!(
                "the route key is said to be {key_len} bytes but {} follow",
                rest.len()
            )));
        }
        let route_key =
            std::str::from_utf8(rest).map_err(|err| malformed(format!("the route key is not UTF-8 ({err})")))?;
        if map_version != self.map_version {
            return Err(invalid_cursor(format!(
                "the token was issued under shard map version {map_version}, but the active version is {}; \
                 start again from the first page",
                self.map_version
            )));
        }
        PageCursor::new(route_key, route_offset, page_size).map_err(|err| malformed(err.to_string()))
    }

    fn mac(&self, payload: &[u8]) -> [u8; MAC_LEN] {
        hmac_sha256(&self.secret, &[MAC_DOMAIN, payload])
    }
}

impl fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CursorCodec")
            .field("secret", &"<redacted>")
            .field("map_version", &self.map_version)
            .finish()
    }
}

fn invalid_cursor(reason: String) -> Error {
    Error::InvalidCursor { reason }
}

/// A correctly signed payload this release cannot read (only a signing bug produces one).
fn malformed(detail: String) -> Error {
    invalid_cursor(format!("the token's payload is malformed: {detail}"))
}

/// Splits the next `N` bytes off `rest`.
fn take<const N: usize>(rest: &mut &[u8]) -> Result<[u8; N]> {
    let (head, tail) = rest
        .split_first_chunk::<N>()
        .ok_or_else(|| malformed("it ends early".into()))?;
    *rest = tail;
    Ok(*head)
}

/// HMAC-SHA256 (RFC 2104) of the concatenated `parts`.
fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; MAC_LEN] {
    // HMAC takes keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC accepts keys of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// Compares without stopping at the first difference, so timing does not reveal how many
/// leading bytes of a forged MAC were right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"test-secret-test-secret-test-sec";

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    fn reason(err: Error) -> String {
        match err {
            Error::InvalidCursor { reason } => reason,
            other => panic!("expected InvalidCursor, got {other:?}"),
        }
    }

    #[test]
    fn hmac_matches_rfc_4231_test_cases() {
        // Test case 1.
        assert_eq!(
            hex(&hmac_sha256(&[0x0b; 20], &[b"Hi There"])),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        // Test case 2, the message split in two parts.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"])),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                &[b"Test Using Larger Than Block-Size Key - Hash Key First"]
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn round_trips_and_is_url_safe() {
        let codec = CursorCodec::new(SECRET, 3).unwrap();
        for cursor in [
            PageCursor::new("2026-06", 0, 1).unwrap(),
            PageCursor::new("tenant/ü?&=", u64::MAX, u64::MAX).unwrap(),
            PageCursor::new("k".repeat(PageCursor::MAX_ROUTE_KEY_BYTES), 5, 10).unwrap(),
        ] {
            let token = codec.encode(&cursor);
            assert!(token.len() <= MAX_TOKEN_CHARS, "{}", token.len());
            assert!(
                token
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{token}"
            );
            assert_eq!(codec.decode(&token).unwrap(), cursor);
        }
    }

    #[test]
    fn every_flipped_bit_is_rejected() {
        let codec = CursorCodec::new(SECRET, 3).unwrap();
        let token = codec.encode(&PageCursor::new("2026-05", 4, 10).unwrap());
        let bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for index in 0..bytes.len() {
            for bit in 0..8 {
                let mut altered = bytes.clone();
                altered[index] ^= 1 << bit;
                let result = codec.decode(&URL_SAFE_NO_PAD.encode(&altered));
                assert!(result.is_err(), "byte {index} bit {bit} accepted");
            }
        }
    }

    #[test]
    fn another_secret_is_rejected() {
        let token = CursorCodec::new(SECRET, 3)
            .unwrap()
            .encode(&PageCursor::new("2026-05", 4, 10).unwrap());
        let other = CursorCodec::new(b"another-secret-another-secret-!!", 3).unwrap();
        assert!(reason(other.decode(&token).unwrap_err()).contains("signature"));
    }

    #[test]
    fn another_map_version_is_rejected_naming_both() {
        let token = CursorCodec::new(SECRET, 3)
            .unwrap()
            .encode(&PageCursor::new("2026-05", 4, 10).unwrap());
        let text = reason(CursorCodec::new(SECRET, 4).unwrap().decode(&token).unwrap_err());
        assert!(text.contains("version 3") && text.contains("version is 4"), "{text}");
    }

    #[test]
    fn garbage_is_rejected_with_a_reason() {
        let codec = CursorCodec::new(SECRET, 3).unwrap();
        let too_long = "A".repeat(MAX_TOKEN_CHARS + 1);
        let short = URL_SAFE_NO_PAD.encode([1u8; 10]);
        let cases: [(&str, &str); 6] = [
            ("", "empty"),
            ("not base64!", "base64"),
            ("abc=", "base64"),
            (&short, "too few"),
            (&too_long, "longer"),
            ("🙂🙂🙂", "base64"),
        ];
        for (token, expected) in cases {
            let text = reason(codec.decode(token).unwrap_err());
            assert!(text.contains(expected), "{token:?}: {text}");
        }
    }

    #[test]
    fn unknown_format_is_named() {
        let codec = CursorCodec::new(SECRET, 3).unwrap();
        let mut bytes = URL_SAFE_NO_PAD
            .decode(codec.encode(&PageCursor::new("2026-05", 4, 10).unwrap()))
            .unwrap();
        bytes[0] = 9;
        let text = reason(codec.decode(&URL_SAFE_NO_PAD.encode(&bytes)).unwrap_err());
        assert!(text.contains("format 9"), "{text}");
    }

    #[test]
    fn signed_but_malformed_payloads_are_rejected_not_panicking() {
        let codec = CursorCodec::new(SECRET, 3).unwrap();
        let sign = |payload: Vec<u8>| {
            let mut bytes = payload;
            let mac = codec.mac(&bytes);
            bytes.extend_from_slice(&mac);
            URL_SAFE_NO_PAD.encode(bytes)
        };
        let header = |key_len: u16, page_size: u64| {
            let mut bytes = vec![FORMAT_VERSION];
            bytes.extend_from_slice(&3u64.to_be_bytes());
            bytes.extend_from_slice(&0u64.to_be_bytes());
            bytes.extend_from_slice(&page_size.to_be_bytes());
            bytes.extend_from_slice(&key_len.to_be_bytes());
            bytes
        };
        let mut wrong_length = header(5, 10);
        wrong_length.extend_from_slice(b"abc");
        let mut not_utf8 = header(2, 10);
        not_utf8.extend_from_slice(&[0xff, 0xfe]);
        let mut zero_page = header(1, 0);
        zero_page.push(b'a');
        for (payload, expected) in [(wrong_length, "5 bytes"), (not_utf8, "UTF-8"), (zero_page, "page_size")] {
            let text = reason(codec.decode(&sign(payload)).unwrap_err());
            assert!(text.contains("malformed") && text.contains(expected), "{text}");
        }
    }

    #[test]
    fn short_secret_is_rejected_and_debug_hides_the_secret() {
        assert!(CursorCodec::new(b"short", 1).is_err());
        let text = format!("{:?}", CursorCodec::new(SECRET, 1).unwrap());
        assert!(!text.contains("test-secret"), "{text}");
    }

    #[test]
    fn cursor_rejects_unusable_parts() {
        assert!(PageCursor::new("", 0, 10).is_err());
        assert!(PageCursor::new("k".repeat(PageCursor::MAX_ROUTE_KEY_BYTES + 1), 0, 10).is_err());
        assert!(PageCursor::new("2026-06", 0, 0).is_err());
    }
}
