//! Route keys to shards: normalisation, canonical text, token, bucket and resolution.
//!
//! This module is a persisted-format contract. A route `{keyspace, key}` is trimmed, written
//! as the canonical text `"{len(keyspace)}:{keyspace}|{len(key)}:{key}"` (lengths in UTF-16
//! code units, so tokens match the original .NET implementation byte for byte), hashed with
//! SHA-256, and the first eight bytes read big-endian give the route **token**. The token
//! modulo the map's virtual bucket count is the **bucket**. Changing any step silently moves
//! data to another shard, so the golden vectors in `tests/data/route_tokens.json` pin it.
//!
//! Resolution against a [`ShardMap`](crate::map::ShardMap) is [`ShardMap::resolve`](crate::map::ShardMap::resolve).

mod resolve;
mod token;

pub use resolve::{ResolvedRoute, RouteSource, ShardResolution};
pub use token::{RouteToken, bucket_for_token, canonical_route_text, route_token, utf16_len};

use crate::error::{Error, Result};

/// A business route: the keyspace (for example `orders_by_month`) and the key within it
/// (for example `2026-06`).
///
/// Both parts are stored trimmed of Unicode white space; constructing a route with a blank
/// part fails.
///
/// ```
/// use shardlite::routing::RouteContext;
///
/// let route = RouteContext::new(" orders_by_month ", "2026-06")?;
/// assert_eq!(route.keyspace(), "orders_by_month");
/// assert!(RouteContext::new("orders_by_month", "  ").is_err());
/// # Ok::<(), shardlite::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "RawRoute", into = "RawRoute")]
pub struct RouteContext {
    keyspace: String,
    key: String,
}

impl RouteContext {
    /// Creates a route from a keyspace and key, trimming both.
    pub fn new(keyspace: impl AsRef<str>, key: impl AsRef<str>) -> Result<Self> {
        let (keyspace, key) = normalize_route(keyspace.as_ref(), key.as_ref())?;
        Ok(Self {
            keyspace: keyspace.to_owned(),
            key: key.to_owned(),
        })
    }

    /// The trimmed keyspace.
    pub fn keyspace(&self) -> &str {
        &self.keyspace
    }

    /// The trimmed key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The canonical route text of this route (hashing the keyspace as spelled here).
    pub fn canonical_text(&self) -> String {
        token::canonical_unchecked(&self.keyspace, &self.key)
    }
}

impl std::fmt::Display for RouteContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.keyspace, self.key)
    }
}

/// Wire form of a route, validated on the way in.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    keyspace: String,
    key: String,
}

impl TryFrom<RawRoute> for RouteContext {
    type Error = Error;
    fn try_from(raw: RawRoute) -> Result<Self> {
        Self::new(raw.keyspace, raw.key)
    }
}

impl From<RouteContext> for RawRoute {
    fn from(route: RouteContext) -> Self {
        Self {
            keyspace: route.keyspace,
            key: route.key,
        }
    }
}

/// Trims both route parts, refusing blank ones. Borrowing, so the resolve path allocates nothing.
pub fn normalize_route<'a>(keyspace: &'a str, key: &'a str) -> Result<(&'a str, &'a str)> {
    let keyspace = keyspace.trim();
    if keyspace.is_empty() {
        return Err(Error::BlankRoutePart { field: "keyspace" });
    }
    let key = key.trim();
    if key.is_empty() {
        return Err(Error::BlankRoutePart { field: "key" });
    }
    Ok((keyspace, key))
}

/// Compares two keyspaces ignoring case, without allocating.
///
/// Uses simple (one-to-one) case mapping, like .NET's ordinal ignore-case comparison: a char
/// whose upper case is several chars (`ß` → `SS`) is compared as itself.
pub fn keyspace_eq(a: &str, b: &str) -> bool {
    // Spelled as the map spells it, the usual case: one memory comparison.
    if a == b || a.eq_ignore_ascii_case(b) {
        return true;
    }
    if a.is_ascii() && b.is_ascii() {
        return false;
    }
    fn simple_upper(c: char) -> char {
        let mut upper = c.to_uppercase();
        match (upper.next(), upper.next()) {
            (Some(u), None) => u,
            _ => c,
        }
    }
    a.chars().map(simple_upper).eq(b.chars().map(simple_upper))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_parts_are_trimmed_and_blank_parts_refused() {
        let route = RouteContext::new(" tenants ", " alpha ").unwrap();
        assert_eq!(route.canonical_text(), "7:tenants|5:alpha");
        assert!(matches!(
            RouteContext::new("\u{3000}", "x"),
            Err(Error::BlankRoutePart { field: "keyspace" })
        ));
        assert!(matches!(
            RouteContext::new("k", "\t\n"),
            Err(Error::BlankRoutePart { field: "key" })
        ));
    }

    #[test]
    fn keyspace_comparison_ignores_case_including_non_ascii() {
        assert!(keyspace_eq("Orders_By_Month", "orders_by_month"));
        assert!(keyspace_eq("ÉTÉ", "été"));
        assert!(!keyspace_eq("orders", "order"));
        assert!(!keyspace_eq("été", "ete"));
        assert!(!keyspace_eq("straße", "STRASSE"));
        assert!(keyspace_eq("straße", "STRAßE"));
    }

    #[test]
    fn route_json_is_validated() {
        let route: RouteContext = serde_json::from_str(r#"{"keyspace":" a ","key":"b"}"#).unwrap();
        assert_eq!(route.keyspace(), "a");
        assert!(serde_json::from_str::<RouteContext>(r#"{"keyspace":"a","key":" "}"#).is_err());
        assert!(serde_json::from_str::<RouteContext>(r#"{"keyspace":"a","key":"b","x":1}"#).is_err());
    }
}
