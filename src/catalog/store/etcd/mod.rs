//! A catalog under a key prefix in etcd.
//!
//! Layout under `PREFIX` (every value JSON):
//!
//! | key | value |
//! |---|---|
//! | `PREFIX/meta` | `{"schemaVersion": 1}` |
//! | `PREFIX/map/active`, `PREFIX/map/pending` | `{"keyspace", "mapVersion", "map" (the map's JSON text), "writtenUtc"}` |
//! | `PREFIX/history/catalog/{time}-{id}` | a catalog history entry |
//! | `PREFIX/migrations/checkpoints/{migrationId}` | `{"migrationId", "keyspace", "status", "updatedUtc", "payload"}` |
//! | `PREFIX/migrations/history/{time}-{id}` | the same, once per run that ended |
//! | `PREFIX/migrations/runners/{migrationId}` | the runner's claim, attached to its lease |
//!
//! Conditional writes compare the `mod_revision` of `map/active` and `map/pending` with the
//! revisions read, in one etcd transaction with the history entry they append.

pub(crate) mod client;
mod lease;
mod watch;

use async_trait::async_trait;
use serde_json::{Value as Json, json};

use self::client::{EtcdClient, delete, modified_at, prefix_end, put};
use self::lease::EtcdLease;
use self::watch::EtcdWatch;
use super::{CatalogStore, HistoryRow, MapWatch, NewMap, ReshardRecord, RunnerClaim, StoredMap, StoredState};
use crate::catalog::EtcdAddress;
use crate::catalog::store::file::CATALOG_SCHEMA_VERSION;
use crate::data::CatalogHistoryEntry;
use crate::data::now_utc;
use crate::error::{Error, Result};

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
        }
        Ok(store)
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

    /// Comparisons that hold only while both map records are as `expected` read them.
    fn unchanged(&self, expected: &StoredState) -> Vec<Json> {
        let revision = |map: &Option<StoredMap>| map.as_ref().map_or(0, |m| m.revision);
        vec![
            modified_at(&self.key("map/active"), revision(&expected.active)),
            modified_at(&self.key("map/pending"), revision(&expected.pending)),
        ]
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

    async fn ensure_schema(&self) -> Result<()> {
        let meta = self.key("meta");
        let value = json!({ "schemaVersion": CATALOG_SCHEMA_VERSION }).to_string();
        self.client
            .txn(vec![modified_at(&meta, 0)], vec![put(&meta, value.as_bytes(), None)])
            .await?;
        Ok(())
    }

    async fn state(&self) -> Result<StoredState> {
        let mut state = StoredState::default();
        let active = self.key("map/active");
        for kv in self.list("map").await? {
            let map = stored_map(&kv).ok_or_else(|| Error::Catalog {
                reason: format!(
                    "the map stored at '{}' in {} does not parse",
                    String::from_utf8_lossy(&kv.key),
                    self.address
                ),
            })?;
            if kv.key == active {
                state.active = Some(map);
            } else if kv.key == self.key("map/pending") {
                state.pending = Some(map);
            }
        }
        Ok(state)
    }

    async fn active_version(&self) -> Result<Option<u64>> {
        Ok(self
            .get("map/active")
            .await?
            .as_ref()
            .and_then(stored_map)
            .map(|m| m.version))
    }

    async fn seed(&self, map: &NewMap, history: &HistoryRow) -> Result<()> {
        self.ensure_schema().await?;
        let operations = vec![
            put(&self.key("map/active"), &map_value(map), None),
            delete(&self.key("map/pending")),
            self.history_put(history),
        ];
        self.client.txn(Vec::new(), operations).await?;
        Ok(())
    }

    async fn write_pending(&self, expected: &StoredState, map: &NewMap, history: &HistoryRow) -> Result<bool> {
        let operations = vec![
            put(&self.key("map/pending"), &map_value(map), None),
            self.history_put(history),
        ];
        self.client.txn(self.unchanged(expected), operations).await
    }

    async fn activate(&self, expected: &StoredState, history: &HistoryRow) -> Result<bool> {
        let Some(pending) = &expected.pending else {
            return Ok(false);
        };
        let Some(keyspace) = serde_json::from_str::<Json>(&pending.json)
            .ok()
            .and_then(|m| m["keyspace"].as_str().map(str::to_owned))
        else {
            return Ok(false);
        };
        let next = NewMap {
            keyspace,
            version: pending.version,
            json: pending.json.clone(),
        };
        let operations = vec![
            put(&self.key("map/active"), &map_value(&next), None),
            delete(&self.key("map/pending")),
            self.history_put(history),
        ];
        self.client.txn(self.unchanged(expected), operations).await
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
        let mut operations = vec![
            put(&self.key("map/active"), &map_value(active), None),
            self.history_put(history),
        ];
        if let Some(pending) = pending {
            operations.push(put(&self.key("map/pending"), &map_value(pending), None));
        }
        let absent = vec![modified_at(&self.key("map/active"), 0)];
        if !self.client.txn(absent, operations).await? {
            return Err(Error::Catalog {
                reason: format!(
                    "{} was given a map while the import ran: nothing of the maps was written",
                    self.address
                ),
            });
        }
        Ok(())
    }

    /// Watches the map records: every activation or pending write is an event.
    async fn watch_maps(&self) -> Result<MapWatch> {
        let start = self.key("map/");
        let response = self.client.watch(&start, &prefix_end(&start)).await?;
        Ok(MapWatch(Box::new(
            EtcdWatch::open(response, self.address.clone()).await?,
        )))
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

fn map_value(map: &NewMap) -> Vec<u8> {
    json!({
        "keyspace": map.keyspace,
        "mapVersion": map.version,
        "map": map.json,
        "writtenUtc": now_utc(),
    })
    .to_string()
    .into_bytes()
}

fn stored_map(kv: &client::Kv) -> Option<StoredMap> {
    let value: Json = serde_json::from_slice(&kv.value).ok()?;
    Some(StoredMap {
        json: value["map"].as_str()?.to_owned(),
        version: value["mapVersion"].as_u64()?,
        revision: kv.mod_revision,
    })
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
