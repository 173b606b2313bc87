//! Golden routing vectors: canonical text, token and bucket of every case in
//! `tests/data/route_tokens.json`, plus the reference vectors of the original implementation.
//!
//! These pin the persisted-format contract of SPEC section 1: if any of them fails, routes
//! written by an earlier release (or by the .NET implementation) would land on another shard.

use std::collections::BTreeMap;

use crate::support::swap_ascii_case;
use serde::Deserialize;
use shardlite::map::{ShardDefinition, ShardMap, ShardingOptions};
use shardlite::routing::{RouteSource, bucket_for_token, canonical_route_text, route_token, utf16_len};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VectorFile {
    rule: String,
    cases: Vec<VectorCase>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VectorCase {
    keyspace: String,
    key: String,
    canonical: String,
    /// Decimal, as a string: JSON numbers above 2^53 are not portable.
    token: String,
    /// Bucket count (decimal string) to expected bucket.
    buckets: BTreeMap<String, u32>,
}

impl VectorCase {
    fn token(&self) -> u64 {
        self.token
            .parse()
            .unwrap_or_else(|e| panic!("token {:?} of case {:?} is not a u64: {e}", self.token, self.canonical))
    }

    fn bucket_counts(&self) -> Vec<(u32, u32)> {
        self.buckets
            .iter()
            .map(|(count, bucket)| {
                let count: u32 = count
                    .parse()
                    .unwrap_or_else(|e| panic!("bucket count {count:?} is not a u32: {e}"));
                (count, *bucket)
            })
            .collect()
    }
}

fn load_vectors() -> VectorFile {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/route_tokens.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let file: VectorFile = serde_json::from_str(&text).unwrap_or_else(|e| panic!("cannot parse {path}: {e}"));
    assert!(file.rule.contains("UTF-16"), "vector file rule changed: {}", file.rule);
    // Guard against an accidentally truncated file making every loop below vacuous.
    assert!(
        file.cases.len() >= 20,
        "expected at least 20 cases, found {}",
        file.cases.len()
    );
    file
}

/// A one-shard map serving `keyspace` with `bucket_count` buckets.
fn single_shard_map(keyspace: &str, bucket_count: u32) -> ShardMap {
    ShardMap::new(ShardingOptions {
        keyspace: keyspace.to_owned(),
        map_version: 7,
        virtual_bucket_count: i64::from(bucket_count),
        shards: vec![ShardDefinition::local("only", "only.db")],
        bucket_ranges: Vec::new(),
        exact_key_pins: BTreeMap::new(),
        directories: Vec::new(),
        directory_entries: Vec::new(),
    })
    .unwrap_or_else(|e| panic!("single-shard map for {keyspace:?}/{bucket_count} is invalid: {e}"))
}

#[test]
fn every_case_has_the_golden_canonical_text() {
    for case in load_vectors().cases {
        let canonical = canonical_route_text(&case.keyspace, &case.key).unwrap();
        assert_eq!(
            canonical, case.canonical,
            "keyspace {:?} key {:?}",
            case.keyspace, case.key
        );
    }
}

#[test]
fn every_case_has_the_golden_token() {
    for case in load_vectors().cases {
        let token = route_token(&case.keyspace, &case.key).unwrap();
        assert_eq!(token.0, case.token(), "token of {:?}", case.canonical);
        assert_eq!(token.to_string(), case.token, "decimal display of {:?}", case.canonical);
        assert_eq!(
            token.to_hex(),
            format!("{:016x}", case.token()),
            "hex of {:?}",
            case.canonical
        );
    }
}

#[test]
fn every_case_has_the_golden_bucket_for_every_count() {
    let mut checked = 0;
    for case in load_vectors().cases {
        let counts = case.bucket_counts();
        assert!(!counts.is_empty(), "case {:?} lists no buckets", case.canonical);
        for (count, expected) in counts {
            assert_eq!(
                bucket_for_token(case.token(), count),
                expected,
                "bucket of {:?} with {count} buckets",
                case.canonical
            );
            checked += 1;
        }
    }
    assert!(checked >= 100, "only {checked} buckets checked");
}

#[test]
fn lengths_count_utf16_code_units_not_bytes_or_chars() {
    let mut differs_from_bytes = Vec::new();
    let mut differs_from_chars = Vec::new();
    for case in load_vectors().cases {
        let (keyspace, key) = (case.keyspace.trim(), case.key.trim());
        // The canonical text's own length prefixes are the UTF-16 lengths.
        let expected_prefix = format!("{}:{keyspace}|{}:{key}", utf16_len(keyspace), utf16_len(key));
        assert_eq!(case.canonical, expected_prefix);
        assert_eq!(utf16_len(key), key.encode_utf16().count(), "{key:?}");
        assert_eq!(utf16_len(keyspace), keyspace.encode_utf16().count(), "{keyspace:?}");
        if utf16_len(key) != key.len() {
            differs_from_bytes.push(key.to_owned());
        }
        if utf16_len(key) != key.chars().count() {
            differs_from_chars.push(key.to_owned());
        }
    }
    for non_ascii in ["café", "🙂", "日本", "naïve façade — ✓"] {
        assert!(
            differs_from_bytes.iter().any(|k| k == non_ascii),
            "{non_ascii:?} should be a case whose UTF-16 length differs from its byte length; got {differs_from_bytes:?}"
        );
    }
    // The emoji is one char but two UTF-16 units: this is what separates UTF-16 from char counts.
    assert!(differs_from_chars.iter().any(|k| k == "🙂"), "{differs_from_chars:?}");
    assert_eq!(utf16_len("café"), 4);
    assert_eq!("café".len(), 5);
    assert_eq!(utf16_len("🙂"), 2);
    assert_eq!("🙂".len(), 4);
    assert_eq!(utf16_len("日本"), 2);
    assert_eq!("日本".len(), 6);
}

#[test]
fn map_resolution_matches_every_case_with_a_differently_cased_keyspace() {
    for case in load_vectors().cases {
        let map_keyspace = case.keyspace.trim();
        let route_keyspace = format!("  {}  ", swap_ascii_case(map_keyspace));
        for (count, expected_bucket) in case.bucket_counts() {
            let map = single_shard_map(map_keyspace, count);
            let resolution = map.resolve(&route_keyspace, &case.key).unwrap();
            assert_eq!(
                resolution.token.0,
                case.token(),
                "token of {:?} via map",
                case.canonical
            );
            assert_eq!(
                resolution.bucket, expected_bucket,
                "{:?} with {count} buckets",
                case.canonical
            );
            assert_eq!(
                resolution.keyspace, map_keyspace,
                "resolution reports the map's spelling"
            );
            assert_eq!(resolution.key, case.key.trim());
            assert_eq!(resolution.shard_id, "only");
            assert_eq!(resolution.map_version, 7);
            assert_eq!(resolution.source, RouteSource::BucketRange);
        }
    }
}

#[test]
fn map_hashes_its_own_keyspace_spelling_not_the_callers() {
    let vectors = load_vectors();
    let find = |canonical: &str| {
        vectors
            .cases
            .iter()
            .find(|c| c.canonical == canonical)
            .unwrap_or_else(|| panic!("vector {canonical:?} missing"))
            .token()
    };
    let upper_token = find("5:UPPER|5:MiXeD");
    let lower_token = find("5:upper|5:MiXeD");
    assert_ne!(upper_token, lower_token, "the vectors must distinguish keyspace case");

    let upper_map = single_shard_map("UPPER", 16);
    let resolution = upper_map.resolve("upper", "MiXeD").unwrap();
    assert_eq!(resolution.token.0, upper_token, "the map's spelling 'UPPER' is hashed");
    assert_eq!(resolution.keyspace, "UPPER");
    // The free function hashes the caller's spelling, which differs.
    assert_eq!(route_token("upper", "MiXeD").unwrap().0, lower_token);

    let lower_map = single_shard_map("upper", 16);
    assert_eq!(lower_map.resolve("UPPER", "MiXeD").unwrap().token.0, lower_token);
    assert_eq!(lower_map.resolve("UpPeR", " MiXeD ").unwrap().token.0, lower_token);
}

#[test]
fn reference_vector_tenants_alpha() {
    assert_eq!(
        canonical_route_text(" tenants ", " alpha ").unwrap(),
        "7:tenants|5:alpha"
    );
    let token = route_token(" tenants ", " alpha ").unwrap();
    assert_eq!(token.0, 0xA5E2_1551_8BF3_10A2);
    assert_eq!(token.0, 11_953_139_800_979_214_498);
    assert_eq!(token.to_hex(), "a5e215518bf310a2");
}

#[test]
fn reference_vectors_tenant_a_and_tenant_b_with_four_buckets() {
    let a = route_token("tenants", "tenant-a").unwrap();
    assert_eq!(a.0, 0xFDEC_638F_8BD5_AC9F);
    assert_eq!(bucket_for_token(a.0, 4), 3);

    let b = route_token("tenants", "tenant-b").unwrap();
    assert_eq!(b.0, 0x3C67_79EC_8E12_0818);
    assert_eq!(bucket_for_token(b.0, 4), 0);

    let map = single_shard_map("Tenants", 4);
    let tenants = single_shard_map("tenants", 4);
    let ra = tenants.resolve("TENANTS", "tenant-a").unwrap();
    assert_eq!((ra.token.0, ra.bucket), (0xFDEC_638F_8BD5_AC9F, 3));
    let rb = tenants.resolve("tenants", "tenant-b").unwrap();
    assert_eq!((rb.token.0, rb.bucket), (0x3C67_79EC_8E12_0818, 0));
    // A map spelled differently hashes differently: the spelling is part of the contract.
    assert_ne!(map.resolve("tenants", "tenant-a").unwrap().token, ra.token);
}

#[test]
fn blank_route_parts_are_refused() {
    assert!(matches!(
        canonical_route_text(" \t", "k"),
        Err(shardlite::Error::BlankRoutePart { field: "keyspace" })
    ));
    assert!(matches!(
        route_token("k", "\u{3000}"),
        Err(shardlite::Error::BlankRoutePart { field: "key" })
    ));
    let map = single_shard_map("k", 4);
    assert!(matches!(
        map.resolve("k", " "),
        Err(shardlite::Error::BlankRoutePart { field: "key" })
    ));
    assert!(matches!(
        map.resolve("other", "x"),
        Err(shardlite::Error::UnknownKeyspace { .. })
    ));
}
