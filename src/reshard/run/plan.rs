//! Planning a data move: the clients and targets of a run, each target's row estimate and query
//! plan, the map the move proposes, and fresh copy receipts.

use super::state::{Context, Runner};
use crate::catalog::diff;
use std::ops::Range;
use std::sync::Arc;

use crate::data::{
    DataClient, PlannedItem, ReshardPlan, ReshardReceipt, ReshardScope, ReshardSpec, TableManifest, Value,
};
use crate::engine::reshard::moving::MovingRows;
use crate::error::{Error, Result};
use crate::map::{BucketRange, EntryState, ShardMap, ShardingOptions};
use crate::reshard::item_sql::{Checksum, ItemSql};
use crate::reshard::manifest;

/// The clients, item queries and moving rows of a run, with each manifest entry checked against
/// both shards' schemas.
pub(super) async fn context(migrator: &Runner, spec: &ReshardSpec, map: &ShardMap) -> Result<Context> {
    let source = migrator.sharded.for_shard_id(&spec.source_shard_id)?;
    let destination = migrator.sharded.for_shard_id(&spec.destination_shard_id)?;
    let pins: Vec<String> = map
        .options()
        .exact_key_pins
        .keys()
        .map(|k| k.trim().to_owned())
        .collect();
    let moving = MovingRows::of(&spec.scope, map.bucket_count(), pins);
    let page_size = manifest::page_size(&spec.manifest);
    let mut targets = Vec::new();
    let mut routes = Vec::new();
    for table in &spec.manifest.tables {
        let (target, route) = table_item(spec, &source, &destination, table, moving.clone(), page_size).await?;
        targets.push(target);
        routes.push(route);
    }
    for collection in &spec.manifest.collections {
        let property = collection.route_key_property.trim();
        targets.push(ItemSql::collection(
            collection.collection_name.trim(),
            property,
            moving.clone(),
            page_size,
        ));
        routes.push(property.to_owned());
    }
    let local_source = migrator
        .sharded
        .local_shard(&spec.source_shard_id)
        .map(|local| local.database().clone());
    let local_destination = migrator
        .sharded
        .local_shard(&spec.destination_shard_id)
        .map(|local| local.database().clone());
    Ok(Context {
        source,
        destination,
        _kept_open: local_source
            .iter()
            .chain(&local_destination)
            .map(crate::engine::Database::pin)
            .collect(),
        local_source,
        local_destination,
        recheck: std::sync::Mutex::new(vec![Vec::new(); targets.len()]),
        targets,
        routes,
        moving,
    })
}

/// The SQL of manifest table `table`, checked against both shards' schemas, and its route
/// column as the source spells it.
async fn table_item(
    spec: &ReshardSpec,
    source: &Arc<dyn DataClient>,
    destination: &Arc<dyn DataClient>,
    table: &TableManifest,
    moving: MovingRows,
    page_size: usize,
) -> Result<(ItemSql, String)> {
    let name = table.table_name.trim();
    let schema = source.table_schema(name).await.map_err(|err| {
        Error::invalid_argument(
            "manifest",
            format!(
                "table '{name}' cannot be read on source shard '{}': {err}",
                spec.source_shard_id
            ),
        )
    })?;
    destination.table_schema(name).await.map_err(|err| {
        Error::invalid_argument(
            "manifest",
            format!(
                "table '{name}' cannot be read on destination shard '{}' (create the schema there first): {err}",
                spec.destination_shard_id
            ),
        )
    })?;
    let columns: Vec<String> = schema.columns.iter().map(|c| c.name.clone()).collect();
    let target = ItemSql::table(
        &schema.name,
        &columns,
        table.primary_key_column.trim(),
        table.route_key_column.trim(),
        moving,
        page_size,
    )
    .ok_or_else(|| {
        // Name only the columns that are missing, and which role each has in the manifest.
        let missing: Vec<String> = [
            (table.primary_key_column.trim(), "primaryKeyColumn"),
            (table.route_key_column.trim(), "routeKeyColumn"),
        ]
        .into_iter()
        .filter(|(column, _)| !columns.iter().any(|c| c.eq_ignore_ascii_case(column)))
        .map(|(column, role)| format!("'{column}' (its {role})"))
        .collect();
        let missing = if missing.is_empty() {
            "the columns the manifest names".to_owned()
        } else {
            missing.join(" or ")
        };
        Error::invalid_argument(
            "manifest",
            format!(
                "table '{name}' has no column {missing} (its columns: {})",
                columns.join(", ")
            ),
        )
    })?;
    let route = columns
        .iter()
        .find(|c| c.eq_ignore_ascii_case(table.route_key_column.trim()))
        .cloned()
        .unwrap_or_default();
    Ok((target, route))
}

/// Row estimates and query plans of every target, and the map diff the move proposes.
pub(super) async fn plan(
    _migrator: &Runner,
    spec: &ReshardSpec,
    map: &ShardMap,
    context: &Context,
) -> Result<ReshardPlan> {
    let mut items = Vec::new();
    for target in &context.targets {
        let (sql, params) = target.count_query();
        let count = context.source.execute_read_only_sql(&sql, params).await?;
        let (sql, params) = target.explain_query();
        let explained = context.source.execute_read_only_sql(&sql, params).await?;
        let detail_index = explained.column_names.iter().position(|c| c == "detail").unwrap_or(3);
        let query_plan: Vec<String> = explained
            .rows
            .iter()
            .filter_map(|row| row.get(detail_index).and_then(Value::as_str).map(str::to_owned))
            .collect();
        let route_index = query_plan
            .iter()
            .any(|step| (step.contains("USING INDEX") || step.contains("USING COVERING INDEX")) && step.contains("=?"));
        items.push(PlannedItem {
            name: target.name.clone(),
            collection: target.collection,
            estimated_rows: first_u64(&count.rows),
            route_index,
            query_plan: query_plan.join("; "),
        });
    }
    let proposed = ShardMap::new(proposed_options(map, spec))?;
    let changes = diff(map, &proposed);
    Ok(ReshardPlan {
        items,
        moved_buckets: changes.moved_buckets,
        moved_pins: changes.moved_pins,
        proposed_map_version: proposed.version(),
    })
}

/// The active map with the moving key pinned (or the range owned) by the destination, one
/// version up, and the directory entries of the moving routes pointing there.
pub(super) fn proposed_options(map: &ShardMap, spec: &ReshardSpec) -> ShardingOptions {
    let mut options = map.options().clone();
    options.map_version = i64::try_from(map.version() + 1).unwrap_or(i64::MAX);
    let destination = map
        .shard(&spec.destination_shard_id)
        .map_or_else(|| spec.destination_shard_id.clone(), |s| s.id.clone());
    match &spec.scope {
        ReshardScope::RouteKey { route_key, .. } => {
            options.exact_key_pins.insert(route_key.clone(), destination.clone());
        }
        ReshardScope::BucketRange {
            start_bucket_inclusive,
            end_bucket_exclusive,
            ..
        } => {
            options.bucket_ranges = owners_with(map, *start_bucket_inclusive..*end_bucket_exclusive, &destination);
        }
    }
    follow_entries(&mut options, &destination);
    options
}

/// Points the directory entries whose route now resolves to `destination` at it: an entry goes
/// where its route's data goes. A non-`Deleted` entry also takes the new map version; a `Deleted`
/// one keeps its version and state, and only names the new shard, so that the map stays valid
/// (every entry's route must resolve to the shard it names). Entries of routes that do not move
/// keep their version.
fn follow_entries(options: &mut ShardingOptions, destination: &str) {
    if options.directory_entries.is_empty() {
        return;
    }
    let mut entries = std::mem::take(&mut options.directory_entries);
    // The proposed map without its entries, only to resolve routes on it.
    if let Ok(next) = ShardMap::new(options.clone()) {
        for entry in &mut entries {
            let moves = next
                .resolve(&entry.target_keyspace, &entry.route_key)
                .is_ok_and(|to| to.shard_id.eq_ignore_ascii_case(destination));
            if moves && !entry.shard_id.trim().eq_ignore_ascii_case(destination) {
                entry.shard_id = destination.into();
                if entry.state != EntryState::Deleted {
                    entry.map_version = options.map_version;
                }
            }
        }
    }
    options.directory_entries = entries;
}

/// The map's bucket ranges with `buckets` owned by `destination`, coalesced.
fn owners_with(map: &ShardMap, buckets: Range<u32>, destination: &str) -> Vec<BucketRange> {
    let mut ranges: Vec<BucketRange> = Vec::new();
    for bucket in 0..map.bucket_count() {
        let owner = if buckets.contains(&bucket) {
            destination
        } else {
            map.shards()[map.bucket_owner(bucket)].id.as_str()
        };
        let at = i64::from(bucket);
        match ranges.last_mut() {
            Some(last) if last.shard_id == owner => last.end_bucket_exclusive = at + 1,
            _ => ranges.push(BucketRange::new(at, at + 1, owner)),
        }
    }
    ranges
}

/// A receipt of a copy not yet begun.
pub(super) fn fresh_receipt(name: &str, collection: bool) -> ReshardReceipt {
    ReshardReceipt {
        name: name.to_owned(),
        collection,
        source_rows: 0,
        pages_copied: 0,
        last_key: None,
        copied: false,
        source_checksum: Checksum::empty().to_hex(),
        destination_rows: None,
        destination_checksum: None,
        verified: false,
        source_rows_deleted: 0,
        error: None,
    }
}

/// The first cell of a count query's answer.
pub(super) fn first_u64(rows: &[Vec<Value>]) -> u64 {
    rows.first()
        .and_then(|row| row.first())
        .and_then(Value::as_i64)
        .and_then(|v| u64::try_from(v).ok())
        .unwrap_or(0)
}
