//! Checks a migration manifest before anything runs.

use std::collections::BTreeSet;

use crate::data::{CatalogIssue, IssueSeverity, ReshardManifest};

/// Rows per page when the manifest names none.
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// The largest page size a manifest may ask for.
pub const MAX_PAGE_SIZE: u32 = 5000;

pub(super) fn issue(code: &str, message: String) -> CatalogIssue {
    CatalogIssue {
        severity: IssueSeverity::Error,
        code: code.to_owned(),
        message,
    }
}

/// The manifest's problems, each naming the item at fault.
pub(super) fn check(manifest: &ReshardManifest) -> Vec<CatalogIssue> {
    let mut issues = Vec::new();
    let bad = |code: &str, message: String| issue(code, format!("bad manifest: {message}"));
    if let Some(size) = manifest.page_size
        && !(1..=MAX_PAGE_SIZE).contains(&size)
    {
        issues.push(bad(
            "invalid-page-size",
            format!("pageSize {size} is outside 1..={MAX_PAGE_SIZE}"),
        ));
    }
    if manifest.tables.is_empty() && manifest.collections.is_empty() {
        issues.push(bad(
            "missing-manifest-items",
            "it names no table and no collection, so nothing would move".to_owned(),
        ));
    }
    let mut seen = BTreeSet::new();
    check_tables(manifest, &mut seen, &mut issues);
    check_collections(manifest, &mut seen, &mut issues);
    issues
}

/// What [`check`] finds in the manifest's tables (`seen` collects the names listed so far).
fn check_tables(manifest: &ReshardManifest, seen: &mut BTreeSet<String>, issues: &mut Vec<CatalogIssue>) {
    let bad = |code: &str, message: String| issue(code, format!("bad manifest: {message}"));
    for (index, table) in manifest.tables.iter().enumerate() {
        let name = table.table_name.trim();
        if name.is_empty() {
            issues.push(bad(
                "missing-manifest-value",
                format!("tables[{index}] has no tableName"),
            ));
            continue;
        }
        if !seen.insert(format!("t:{}", name.to_ascii_lowercase())) {
            issues.push(bad(
                "duplicate-manifest-item",
                format!("table '{name}' is listed twice"),
            ));
        }
        if name.to_ascii_lowercase().starts_with(crate::sql::INTERNAL_PREFIX) {
            issues.push(bad(
                "internal-table",
                format!("table '{name}' is internal to shardlite; list collections under collections"),
            ));
        }
        if table.route_key_column.trim().is_empty() {
            issues.push(bad(
                "missing-manifest-value",
                format!("table '{name}' has no routeKeyColumn"),
            ));
        }
        if table.primary_key_column.trim().is_empty() {
            issues.push(bad(
                "missing-manifest-value",
                format!("table '{name}' has no primaryKeyColumn"),
            ));
        }
    }
}

/// What [`check`] finds in the manifest's collections (`seen` collects the names listed so far).
fn check_collections(manifest: &ReshardManifest, seen: &mut BTreeSet<String>, issues: &mut Vec<CatalogIssue>) {
    let bad = |code: &str, message: String| issue(code, format!("bad manifest: {message}"));
    for (index, collection) in manifest.collections.iter().enumerate() {
        let name = collection.collection_name.trim();
        if name.is_empty() {
            issues.push(bad(
                "missing-manifest-value",
                format!("collections[{index}] has no collectionName"),
            ));
            continue;
        }
        if !seen.insert(format!("c:{name}")) {
            issues.push(bad(
                "duplicate-manifest-item",
                format!("collection '{name}' is listed twice"),
            ));
        }
        let property = collection.route_key_property.trim();
        if property.is_empty() {
            issues.push(bad(
                "missing-manifest-value",
                format!("collection '{name}' has no routeKeyProperty"),
            ));
        } else if property.contains(['"', '\\']) || property.chars().any(char::is_control) {
            issues.push(bad(
                "invalid-route-property",
                format!(
                    "collection '{name}' routeKeyProperty '{property}' contains a quote, backslash or control character"
                ),
            ));
        }
    }
}

/// The page size a manifest asks for.
pub(super) fn page_size(manifest: &ReshardManifest) -> usize {
    usize::try_from(manifest.page_size.unwrap_or(DEFAULT_PAGE_SIZE).clamp(1, MAX_PAGE_SIZE)).unwrap_or(500)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{CollectionManifest, TableManifest};

    #[test]
    fn problems_are_named() {
        let manifest = ReshardManifest {
            page_size: Some(0),
            tables: vec![TableManifest {
                table_name: "orders".into(),
                route_key_column: " ".into(),
                primary_key_column: "id".into(),
            }],
            collections: vec![CollectionManifest {
                collection_name: "docs".into(),
                route_key_property: "a\"b".into(),
            }],
        };
        let codes: Vec<String> = check(&manifest).into_iter().map(|i| i.code).collect();
        assert_eq!(
            codes,
            ["invalid-page-size", "missing-manifest-value", "invalid-route-property"]
        );
        assert_eq!(check(&ReshardManifest::default())[0].code, "missing-manifest-items");
    }
}
