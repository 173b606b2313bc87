//! Upgrading a master file written by an earlier release: schema version 1 kept the active and
//! pending maps as one JSON text each (`shardlite_active_map`, `shardlite_pending_map`); this
//! release keeps them as records.

use super::NewMap;
use super::file::{FileStore, INSERT_RECORDS, SCHEMA, records_json, stored_int, text};
use crate::data::{Params, Value, now_utc};
use crate::error::{Error, Result};
use crate::map::ShardingOptions;
use crate::map::records::MapRecords;

/// Rewrites a file of schema version 1 (the active and pending maps as one JSON text each)
/// as records, in one transaction: the active map's records under its version, the pending
/// map's changes under its own. Another process migrating at the same time finds version 2
/// inside its transaction and writes nothing (every insert is conditional on version 1).
pub(super) async fn from_documents(store: &FileStore) -> Result<()> {
    let result = store
        .db
        .execute_read_only(
            "SELECT 'active', map_json FROM shardlite_active_map WHERE slot = 1 \
             UNION ALL SELECT 'pending', map_json FROM shardlite_pending_map WHERE slot = 1",
            Params::none(),
        )
        .await?;
    let mut active = None;
    let mut pending = None;
    for row in &result.rows {
        let slot = text(row, 0).unwrap_or_default();
        let options = ShardingOptions::from_json(&text(row, 1).unwrap_or_default()).map_err(|err| Error::Catalog {
            reason: format!("the stored {slot} map does not parse: {err}"),
        })?;
        if slot == "active" {
            active = Some(NewMap::of(&options));
        } else {
            pending = Some(NewMap::of(&options));
        }
    }
    let mut script = SCHEMA.to_owned();
    let still_one = "(SELECT value FROM shardlite_catalog_meta WHERE key = 'schema_version') = '1'";
    let mut params = vec![("now", Value::Text(now_utc()))];
    if let Some(active) = &active {
        let first = MapRecords::of(&active.options);
        script.push_str(&format!(
            "{} WHERE {still_one};\n",
            INSERT_RECORDS
                .replace(":version", ":active")
                .replace(":records", ":active_records")
        ));
        params.push(("active", Value::Integer(stored_int(active.version))));
        params.push(("active_records", Value::Text(records_json(&first.all_changes()))));
        params.push(("keyspace", Value::from(active.keyspace.as_str())));
        let pending_version = match &pending {
            Some(pending) => {
                let changes = first.changes_to(&MapRecords::of(&pending.options));
                script.push_str(&format!(
                    "{} WHERE {still_one};\n",
                    INSERT_RECORDS
                        .replace(":version", ":pending")
                        .replace(":records", ":pending_records")
                ));
                params.push(("pending_records", Value::Text(records_json(&changes))));
                Value::Integer(stored_int(pending.version))
            }
            None => Value::Null,
        };
        params.push(("pending", pending_version));
        script.push_str(&format!(
            "INSERT INTO shardlite_map_versions (slot, keyspace, active_version, pending_version, updated_utc)
                 SELECT 1, :keyspace, :active, :pending, :now WHERE {still_one};\n"
        ));
    }
    script.push_str(
        "DROP TABLE IF EXISTS shardlite_active_map;
         DROP TABLE IF EXISTS shardlite_pending_map;
         UPDATE shardlite_catalog_meta SET value = '2' WHERE key = 'schema_version';",
    );
    store.db.execute_atomic(&script, Params::named(params)).await?;
    Ok(())
}
