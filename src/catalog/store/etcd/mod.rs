//! A catalog under a key prefix in etcd.
//!
//! Layout under `PREFIX` (every value JSON):
//!
//! | key | value |
//! |---|---|
//! | `PREFIX/meta` | `{"schemaVersion": 2}` |
//! | `PREFIX/map/version` | `{"keyspace", "generation", "activeVersion", "pendingVersion"?, "writtenUtc"}` |
//! | `PREFIX/records/{generation}/{kind}/{key}/{mapVersion}` | one map record as of that version (see [`records`]) |
//! | `PREFIX/history/catalog/{time}-{id}` | a catalog history entry |
//! | `PREFIX/migrations/checkpoints/{migrationId}` | `{"migrationId", "keyspace", "status", "updatedUtc", "payload"}` |
//! | `PREFIX/migrations/history/{time}-{id}` | the same, once per run that ended |
//! | `PREFIX/migrations/runners/{migrationId}` | the runner's claim, attached to its lease |
//!
//! Conditional writes compare the `mod_revision` of `map/version` with the revision read, in the
//! etcd transaction that writes it and the history entry they append. Schema version 1 kept each
//! map as one value (`map/active`, `map/pending`); such a prefix is rewritten as records when
//! opened.

pub(crate) mod client;
mod lease;
mod records;
mod watch;

use async_trait::async_trait;
use serde_json::{Value as Json, json};

use self::client::{EtcdClient, delete, modified_at, prefix_end, put};
use self::lease::EtcdLease;
use self::records::{Commit, RecordRow, VersionRecord};
use super::{
    CatalogStore, HistoryRow, MapWatch, NewMap, ReshardRecord, RunnerClaim, StoredMap, StoredState, StoredVersions,
};
use crate::catalog::EtcdAddress;
use crate::catalog::store::file::CATALOG_SCHEMA_VERSION;
use crate::data::CatalogHistoryEntry;
use crate::data::now_utc;
use crate::error::{Error, Result};
use crate::map::ShardingOptions;
use crate::map::records::{MapRecords, RecordChange};

/// A catalog in etcd.
#[derive(Debug, Clone)]
pub(crate) struct EtcdStore {
    client: EtcdClient,
    prefix: String,
    address: String,
}

impl EtcdStore {
    /// Connects to the cluster and checks the catalog's schema version when there is one.
    /// [`Error::CatalogUnavailable`] when no endpoint answers.
    pub async fn open(address: &EtcdAddress) -> Result<Self> {
        let store = Self {
            client: EtcdClient::new(address)?,
            prefix: address.prefix().to_owned(),
            address: address.to_string(),
        };
        if let Some(meta) = store.get("meta").await? {
            let version = serde_json::from_slice::<Json>(&meta.value)
                .ok()
                .and_then(|v| v["schemaVersion"].as_i64());
            crate::catalog::check_schema_version(version)?;
            if version == Some(1) {
                store.migrate_from_documents(meta.mod_revision).await?;
            }
        }
        Ok(store)
    }

    /// Rewrites a prefix of schema version 1 (each map one value) as records, in a new
    /// generation committed by one transaction that also drops the old values, comparing them
    /// and the schema record with what was read: of two processes migrating at once, one
    /// writes and the other finds it done.
    async fn migrate_from_documents(&self, meta_revision: i64) -> Result<()> {
        let old = |name: &str| {
            let name = name.to_owned();
            async move {
                let Some(kv) = self.get(&name).await? else {
                    return Ok::<_, Error>((None, 0));
                };
                let value: Json = serde_json::from_slice(&kv.value).unwrap_or(Json::Null);
                let options = ShardingOptions::from_json(value["map"].as_str().unwrap_or_default()).map_err(|err| {
                    Error::Catalog {
                        reason: format!("the map stored at '{name}' in {} does not parse: {err}", self.address),
                    }
                })?;
                Ok((Some(NewMap::of(&options)), kv.mod_revision))
            }
        };
        let (active, active_revision) = old("map/active").await?;
        let (pending, pending_revision) = old("map/pending").await?;
        let meta = self.key("meta");
        let meta_value = json!({ "schemaVersion": CATALOG_SCHEMA_VERSION }).to_string();
        let mut compare = vec![
            modified_at(&meta, meta_revision),
            modified_at(&self.key("map/active"), active_revision),
            modified_at(&self.key("map/pending"), pending_revision),
        ];
        let mut operations = vec![
            put(&meta, meta_value.as_bytes(), None),
            delete(&self.key("map/active")),
            delete(&self.key("map/pending")),
        ];
        let Some(active) = active else {
            compare.truncate(1);
            operations.truncate(1);
            self.client.txn(compare, operations).await?;
            return Ok(());
        };
        let rows = rows_of(&active, pending.as_ref());
        let commit = Commit {
            expected_revision: Some(0),
            base_generation: None,
            version: VersionRecord {
                keyspace: active.keyspace.clone(),
                generation: String::new(),
                active_version: active.version,
                pending_version: pending.as_ref().map(|p| p.version),
                written_utc: String::new(),
            },
            compare,
            operations,
        };
        self.commit(rows, commit).await?;
        Ok(())
    }

    fn key(&self, name: &str) -> Vec<u8> {
        format!("{}/{name}", self.prefix).into_bytes()
    }

    async fn get(&self, name: &str) -> Result<Option<client::Kv>> {
        Ok(self.client.range(&self.key(name), None).await?.into_iter().next())
    }

    /// Every key under `PREFIX/{folder}/`, in key order.
    async fn list(&self, folder: &str) -> Result<Vec<client::Kv>> {
        let start = self.key(&format!("{folder}/"));
        self.client.range(&start, Some(&prefix_end(&start))).await
    }

    /// A key for an entry appended to `folder`, ordered by time, unique.
    fn appended(&self, folder: &str) -> Vec<u8> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let unique = uuid::Uuid::new_v4().simple().to_string();
        self.key(&format!("{folder}/{nanos:024}-{}", &unique[..12]))
    }

    fn history_put(&self, history: &HistoryRow) -> Json {
        let entry = serde_json::to_vec(&history.entry(now_utc())).unwrap_or_default();
        put(&self.appended("history/catalog"), &entry, None)
    }

    /// Appends `values` (oldest first) to `folder`, in transactions of at most 100 operations
    /// (etcd's default limit is 128).
    async fn append_all(&self, folder: &str, values: Vec<Vec<u8>>) -> Result<()> {
        for chunk in values.chunks(100) {
            let operations = chunk
                .iter()
                .map(|value| put(&self.appended(folder), value, None))
                .collect();
            self.client.txn(Vec::new(), operations).await?;
        }
        Ok(())
    }

    /// The client, for leases.
    pub(crate) fn client(&self) -> &EtcdClient {
        &self.client
    }

    /// The key of a migration runner's claim.
    pub(crate) fn runner_key(&self, migration_id: &str) -> Vec<u8> {
        self.key(&format!("migrations/runners/{migration_id}"))
    }

    /// Who holds the claim on migration `id`, as the claim says.
    pub(crate) async fn runner_of(&self, migration_id: &str) -> Result<String> {
        let kv = self.get(&format!("migrations/runners/{migration_id}")).await?;
        Ok(kv
            .and_then(|kv| serde_json::from_slice::<Json>(&kv.value).ok())
            .and_then(|v| Some(format!("{} since {}", v["holder"].as_str()?, v["sinceUtc"].as_str()?)))
            .unwrap_or_else(|| "another runner".to_owned()))
    }

    /// The catalog's URL, for messages.
    pub(crate) fn address(&self) -> &str {
        &self.address
    }
}

#[async_trait]
impl CatalogStore for EtcdStore {
    async fn has_schema(&self) -> Result<bool> {
        Ok(self.get("meta").await?.is_some())
    }

    async fn holds_anything(&self) -> Result<bool> {
        let start = self.key("");
        let (first, _) = self.client.range_page(&start, &prefix_end(&start), 1).await?;
        Ok(!first.is_empty())
    }

    async fn ensure_schema(&self) -> Result<()> {
        let meta = self.key("meta");
        let value = json!({ "schemaVersion": CATALOG_SCHEMA_VERSION }).to_string();
        self.client
            .txn(vec![modified_at(&meta, 0)], vec![put(&meta, value.as_bytes(), None)])
            .await?;
        Ok(())
    }

    async fn state(&self) -> Result<StoredState> {
        let Some((version, revision)) = self.version_record().await? else {
            return Ok(StoredState::default());
        };
        let mut versions = vec![version.active_version];
        versions.extend(version.pending_version);
        let (maps, _) = self.read_maps(&version.generation, versions).await?;
        let mut maps = maps.into_iter();
        let stored = |records: Option<MapRecords>, version: u64| -> Result<Option<StoredMap>> {
            records
                .map(|records| {
                    Ok(StoredMap {
                        options: records.to_options()?,
                        version,
                    })
                })
                .transpose()
        };
        Ok(StoredState {
            active: stored(maps.next(), version.active_version)?,
            pending: match version.pending_version {
                Some(pending) => stored(maps.next(), pending)?,
                None => None,
            },
            revision,
            generation: version.generation,
            epoch: String::new(),
        })
    }

    async fn versions(&self) -> Result<Option<StoredVersions>> {
        Ok(self.version_record().await?.map(|(record, revision)| StoredVersions {
            active: Some(record.active_version),
            pending: record.pending_version,
            revision,
            generation: record.generation,
            epoch: String::new(),
        }))
    }

    async fn map_at(&self, version: u64) -> Result<Option<MapRecords>> {
        let Some((record, _)) = self.version_record().await? else {
            return Ok(None);
        };
        let (mut maps, seen) = self.read_maps(&record.generation, vec![version]).await?;
        Ok(maps.pop().filter(|_| seen.contains(&version)))
    }

    async fn active_version(&self) -> Result<Option<u64>> {
        Ok(self.version_record().await?.map(|(record, _)| record.active_version))
    }

    async fn changes_since(&self, held: &StoredVersions, now: &StoredVersions) -> Result<Option<Vec<RecordChange>>> {
        match (held.newest(), now.newest()) {
            (Some(from), Some(to)) if held.generation == now.generation => Ok(self
                .replay(&now.generation, (held.revision, now.revision), (from, to))
                .await),
            _ => Ok(None),
        }
    }

    async fn seed(&self, map: &NewMap, history: &HistoryRow) -> Result<()> {
        self.ensure_schema().await?;
        let commit = Commit {
            expected_revision: None,
            base_generation: None,
            version: version_of(&map.keyspace, map.version, None),
            compare: Vec::new(),
            operations: vec![self.history_put(history)],
        };
        self.commit(rows_of(map, None), commit).await?;
        Ok(())
    }

    async fn write_pending(
        &self,
        expected: &StoredVersions,
        changes: &[RecordChange],
        history: &HistoryRow,
    ) -> Result<bool> {
        let Some(active) = expected.active else {
            return Ok(false);
        };
        let rows = changes.iter().map(|c| (history.version, c.clone())).collect();
        let commit = Commit {
            expected_revision: Some(expected.revision),
            base_generation: Some(expected.generation.clone()),
            version: version_of(&history.keyspace, active, Some(history.version)),
            compare: Vec::new(),
            operations: vec![self.history_put(history)],
        };
        self.commit(rows, commit).await
    }

    async fn activate(&self, expected: &StoredVersions, history: &HistoryRow) -> Result<bool> {
        let Some(pending) = expected.pending else {
            return Ok(false);
        };
        let commit = Commit {
            expected_revision: Some(expected.revision),
            base_generation: Some(expected.generation.clone()),
            version: version_of(&history.keyspace, pending, None),
            compare: Vec::new(),
            operations: vec![self.history_put(history)],
        };
        self.commit(Vec::new(), commit).await
    }

    async fn history(&self) -> Result<Vec<CatalogHistoryEntry>> {
        let mut entries: Vec<CatalogHistoryEntry> = self
            .list("history/catalog")
            .await?
            .iter()
            .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
            .collect();
        entries.reverse();
        Ok(entries)
    }

    async fn save_checkpoint(&self, record: &ReshardRecord<'_>) -> Result<()> {
        let key = self.key(&format!("migrations/checkpoints/{}", record.id));
        self.client
            .txn(Vec::new(), vec![put(&key, &record_value(record), None)])
            .await?;
        Ok(())
    }

    async fn record_end(&self, record: &ReshardRecord<'_>) -> Result<()> {
        let key = self.key(&format!("migrations/checkpoints/{}", record.id));
        let value = record_value(record);
        let operations = vec![
            put(&key, &value, None),
            put(&self.appended("migrations/history"), &value, None),
        ];
        self.client.txn(Vec::new(), operations).await?;
        Ok(())
    }

    async fn checkpoint(&self, id: &str) -> Result<Option<String>> {
        Ok(self
            .get(&format!("migrations/checkpoints/{id}"))
            .await?
            .and_then(|kv| payload(&kv.value).map(|(_, payload)| payload)))
    }

    async fn checkpoints(&self) -> Result<Vec<String>> {
        let mut records: Vec<(String, String)> = self
            .list("migrations/checkpoints")
            .await?
            .iter()
            .filter_map(|kv| payload(&kv.value))
            .collect();
        // Most recently updated first; the key order (by id) breaks ties.
        records.sort_by(|a, b| b.0.cmp(&a.0));
        Ok(records.into_iter().map(|(_, payload)| payload).collect())
    }

    async fn migration_history(&self) -> Result<Vec<String>> {
        let mut records: Vec<String> = self
            .list("migrations/history")
            .await?
            .iter()
            .filter_map(|kv| payload(&kv.value).map(|(_, payload)| payload))
            .collect();
        records.reverse();
        Ok(records)
    }

    async fn append_history(&self, entries: &[CatalogHistoryEntry]) -> Result<()> {
        let values: Vec<Vec<u8>> = entries
            .iter()
            .rev()
            .map(|e| serde_json::to_vec(e).unwrap_or_default())
            .collect();
        self.append_all("history/catalog", values).await
    }

    async fn append_migration_history(&self, payloads: &[String]) -> Result<()> {
        let values = payloads
            .iter()
            .rev()
            .map(|payload| {
                let value: Json = serde_json::from_str(payload).unwrap_or(Json::Null);
                json!({
                    "migrationId": value["migrationId"],
                    "keyspace": value["spec"]["keyspace"],
                    "status": value["status"],
                    "updatedUtc": value["updatedUtc"],
                    "payload": payload,
                })
                .to_string()
                .into_bytes()
            })
            .collect();
        self.append_all("migrations/history", values).await
    }

    async fn import_maps(&self, active: &NewMap, pending: Option<&NewMap>, history: &HistoryRow) -> Result<()> {
        let commit = Commit {
            expected_revision: Some(0),
            base_generation: None,
            version: version_of(&active.keyspace, active.version, pending.map(|p| p.version)),
            compare: Vec::new(),
            operations: vec![self.history_put(history)],
        };
        if !self.commit(rows_of(active, pending), commit).await? {
            return Err(Error::Catalog {
                reason: format!(
                    "{} was given a map while the import ran: nothing of the maps was written",
                    self.address
                ),
            });
        }
        Ok(())
    }

    /// Reads the maps and watches the records of their generation from then on.
    async fn watch_maps(&self) -> Result<(StoredState, MapWatch)> {
        let (state, feed) = self.follow().await?;
        Ok((state, MapWatch(Box::new(feed))))
    }

    fn active_version_blocking(&self) -> Result<Option<u64>> {
        Ok(None)
    }

    async fn claim_runner(&self, id: &str) -> Result<Box<dyn RunnerClaim>> {
        Ok(Box::new(EtcdLease::claim(self, id).await?))
    }

    fn is_watched(&self) -> bool {
        true
    }
}

/// A comparison that holds while `key` does not exist.
pub(crate) fn absent(key: &[u8]) -> Json {
    modified_at(key, 0)
}

/// A `put` of `key` attached to lease `lease`.
pub(crate) fn put_leased(key: &[u8], value: &[u8], lease: i64) -> Json {
    put(key, value, Some(lease))
}

/// The version record naming `keyspace` and the given versions.
fn version_of(keyspace: &str, active: u64, pending: Option<u64>) -> VersionRecord {
    VersionRecord {
        keyspace: keyspace.to_owned(),
        generation: String::new(),
        active_version: active,
        pending_version: pending,
        written_utc: String::new(),
    }
}

/// The rows of a fresh generation: every record of `active` under its version, and the
/// changes to `pending` under its own.
fn rows_of(active: &NewMap, pending: Option<&NewMap>) -> Vec<RecordRow> {
    let first = MapRecords::of(&active.options);
    let mut rows: Vec<RecordRow> = first.all_changes().into_iter().map(|c| (active.version, c)).collect();
    if let Some(pending) = pending {
        let next = MapRecords::of(&pending.options);
        rows.extend(first.changes_to(&next).into_iter().map(|c| (pending.version, c)));
    }
    rows
}

fn record_value(record: &ReshardRecord<'_>) -> Vec<u8> {
    json!({
        "migrationId": record.id,
        "keyspace": record.keyspace,
        "status": record.status,
        "updatedUtc": record.updated_utc,
        "payload": record.payload,
    })
    .to_string()
    .into_bytes()
}

/// `(updatedUtc, payload)` of a stored migration record.
fn payload(value: &[u8]) -> Option<(String, String)> {
    let value: Json = serde_json::from_slice(value).ok()?;
    Some((
        value["updatedUtc"].as_str().unwrap_or_default().to_owned(),
        value["payload"].as_str()?.to_owned(),
    ))
}
