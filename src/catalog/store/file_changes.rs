//! How a router follows a master file: the records written since the version it serves.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use super::CatalogStore as _;
use super::file::{FileStore, ReadVersions, stored_int};
use crate::data::{Params, Value};
use crate::error::Result;
use crate::map::records::{RecordChange, RecordKind};

/// Whether version `:from`'s header is stored (its count in the third column of the first
/// row), then the record rows of versions `:from + 1 ..= :to`.
const CHANGES_SQL: &str = "SELECT NULL, NULL, (SELECT count(*) FROM shardlite_map_records
        WHERE kind = 'header' AND key = 'map' AND map_version = :from), NULL
    UNION ALL
    SELECT kind, key, map_version, value FROM shardlite_map_records
    WHERE map_version > :from AND map_version <= :to";

/// The record rows written by versions `from + 1 ..= to`, newest per record, when version
/// `from`'s header is still stored (a seed replaces every record).
pub(super) async fn changes_between(store: &FileStore, from: u64, to: u64) -> Result<Option<Vec<RecordChange>>> {
    if !store.has_schema().await? {
        return Ok(None);
    }
    let params = Params::named([
        ("from", Value::Integer(stored_int(from))),
        ("to", Value::Integer(stored_int(to))),
    ]);
    let Some(ReadVersions {
        active: base,
        records: rows,
        ..
    }) = store.read_versions(CHANGES_SQL, params).await?
    else {
        return Ok(None);
    };
    if base == 0 {
        return Ok(None);
    }
    let mut newest: BTreeMap<(RecordKind, String), (u64, Option<String>)> = BTreeMap::new();
    for (kind, key, version, value) in rows {
        match newest.entry((kind, key)) {
            Entry::Occupied(mut seen) if seen.get().0 < version => {
                seen.insert((version, value));
            }
            Entry::Occupied(_) => {}
            Entry::Vacant(slot) => {
                slot.insert((version, value));
            }
        }
    }
    Ok(Some(
        newest
            .into_iter()
            .map(|((kind, key), (_, value))| RecordChange { kind, key, value })
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::data::{ActivationRequest, CatalogUpdateRequest};
    use crate::map::records::MapRecords;
    use crate::map::{BucketRange, ShardDefinition, ShardingOptions};

    fn map(pins: usize) -> ShardingOptions {
        ShardingOptions {
            keyspace: "k".into(),
            map_version: 1,
            virtual_bucket_count: 4,
            shards: vec![
                ShardDefinition::local("s0", "s0.db"),
                ShardDefinition::local("s1", "s1.db"),
            ],
            bucket_ranges: vec![BucketRange::new(0, 2, "s0"), BucketRange::new(2, 4, "s1")],
            exact_key_pins: (0..pins).map(|n| (format!("t{n}"), "s0".to_owned())).collect(),
            directories: vec![],
            directory_entries: vec![],
        }
    }

    async fn change(catalog: &Catalog, next: &ShardingOptions) {
        let mut update = CatalogUpdateRequest::new(next.clone());
        update.allow_ownership_change = true;
        assert!(catalog.apply_update(update).await.unwrap().applied);
        let version = u64::try_from(next.map_version).unwrap();
        catalog
            .activate_pending(&ActivationRequest::new(version))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_router_reads_only_the_records_written_since_its_version() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(dir.path().join("master.db")).await.unwrap();
        let v1 = map(1_000);
        catalog.seed(v1.clone(), false).await.unwrap();
        let mut v2 = v1.clone();
        v2.map_version = 2;
        v2.exact_key_pins.insert("t7".into(), "s1".into());
        change(&catalog, &v2).await;
        let mut v3 = v2.clone();
        v3.map_version = 3;
        v3.exact_key_pins.remove("t9");
        v3.exact_key_pins.insert("new".into(), "s1".into());
        change(&catalog, &v3).await;

        // Two versions on: the header once (its newest value), and the three pins.
        let changes = catalog.changes_between(1, 3).await.unwrap().unwrap();
        let ids: Vec<(RecordKind, &str, bool)> = changes
            .iter()
            .map(|c| (c.kind, c.key.as_str(), c.value.is_some()))
            .collect();
        assert_eq!(
            ids,
            vec![
                (RecordKind::Header, "map", true),
                (RecordKind::Pin, "new", true),
                (RecordKind::Pin, "t7", true),
                (RecordKind::Pin, "t9", false),
            ]
        );
        let followed = crate::map::ShardMap::new(v1).unwrap().follow_changes(&changes).unwrap();
        assert_eq!(MapRecords::of(followed.options()), MapRecords::of(&v3));
        assert_eq!(catalog.changes_between(3, 3).await.unwrap().map(|c| c.len()), Some(0));

        // A seed replaces every record: version 3 is gone, and the router reads the whole map.
        let mut v9 = map(2);
        v9.map_version = 9;
        catalog.seed(v9, true).await.unwrap();
        assert_eq!(catalog.changes_between(3, 9).await.unwrap(), None);
    }
}
