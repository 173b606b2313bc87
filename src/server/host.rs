//! A data host: one daemon serving a folder of shard files (`serve --shard-dir DIR`), each
//! addressed by its shard id.
//!
//! The shard `orders-7` lives in `DIR/orders-7.db`. Its id follows the map's shard-id rules and,
//! being a file name, may not start with `.` ([`data_host_shard_id`]), so a request can never
//! reach a file outside the folder. Requests name their shard with the `X-Shardlite-Shard` header
//! (gRPC: `x-shardlite-shard` metadata); a data request never creates a file: an id without one
//! is answered "not found", and files come into existence only through
//! [`ShardHost::create_shard`] (the admin operation `createHostShard`).
//!
//! Files are opened lazily and closed when idle by the engine, all counting against one set of
//! open shards ([`EngineConfig::max_open_shards`]): starting a host of ten thousand files reads
//! nothing, and only the shards in use hold connections, threads and descriptors. The host
//! keeps a small handle per shard it has served (no descriptor, no thread).
//!
//! A transaction begun on a host gets the id `{shardId}:{innerId}`, so its later calls reach the
//! right file from the id alone (a router wraps it in its own `csdbshard:` id as for any remote
//! shard).

use std::collections::HashMap;
use std::io::ErrorKind as IoErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

pub use crate::data::{HostShardCreated, HostShardPage, HostShardQuery, MAX_HOST_SHARD_PAGE};

use crate::client::LocalClient;
use crate::engine::EngineConfig;
use crate::error::{Error, Result};
use crate::map::data_host_shard_id;
use crate::wire::SHARD_HEADER;

/// The extension of a shard file in a data host's folder.
pub const SHARD_FILE_EXTENSION: &str = "db";

/// The shard files of one folder, served by id. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ShardHost {
    inner: Arc<HostInner>,
}

#[derive(Debug)]
struct HostInner {
    dir: PathBuf,
    engine: EngineConfig,
    /// The shards served so far, by id: lazy handles that hold no file open by themselves.
    shards: Mutex<HashMap<String, LocalClient>>,
}

impl ShardHost {
    /// A host serving the shard files of `dir`, which must be an existing folder. Nothing is
    /// opened or read now.
    pub fn open(dir: impl AsRef<Path>, engine: EngineConfig) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        engine.validate()?;
        let is_dir = std::fs::metadata(&dir).map_err(|source| Error::Io {
            what: format!("shard folder '{}'", dir.display()),
            source,
        })?;
        if !is_dir.is_dir() {
            return Err(Error::invalid_argument(
                "--shard-dir",
                format!("'{}' is not a folder", dir.display()),
            ));
        }
        Ok(Self {
            inner: Arc::new(HostInner {
                dir,
                engine,
                shards: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The folder served.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The file of shard `id` (an id already checked with [`data_host_shard_id`]).
    fn file_of(&self, id: &str) -> PathBuf {
        self.inner.dir.join(format!("{id}.{SHARD_FILE_EXTENSION}"))
    }

    /// The client of shard `id`. The id is checked with the shard-id rules (a bad one is
    /// `invalid_input` naming the rule), and a shard without a file is `not_found`: nothing is
    /// created.
    pub fn client(&self, id: &str) -> Result<LocalClient> {
        let id = checked_id(id)?;
        let known = self.lock().get(&id).cloned();
        // An open file exists; a closed one is looked for again, since opening a file that was
        // removed meanwhile would create it.
        if let Some(client) = &known
            && client.database().is_open()
        {
            return Ok(client.clone());
        }
        let path = self.file_of(&id);
        let missing = match std::fs::metadata(&path) {
            Ok(meta) => !meta.is_file(),
            Err(err) if err.kind() == IoErrorKind::NotFound => true,
            Err(source) => {
                return Err(Error::Io {
                    what: format!("the file of shard '{id}'"),
                    source,
                });
            }
        };
        if missing {
            if known.is_some() {
                self.lock().remove(&id);
            }
            return Err(unknown_shard(&id));
        }
        if let Some(client) = known {
            return Ok(client);
        }
        let mut shards = self.lock();
        if let Some(client) = shards.get(&id) {
            return Ok(client.clone());
        }
        let client = LocalClient::lazy(path, id.clone(), self.inner.engine.clone())?;
        shards.insert(id, client.clone());
        Ok(client)
    }

    /// Creates the file of shard `id` (with the engine's internal tables) unless it exists;
    /// idempotent. Refuses an id that breaks the shard-id rules, and one that differs only in
    /// case from an existing shard's (ids are unique ignoring case, as in a map).
    pub async fn create_shard(&self, id: &str) -> Result<HostShardCreated> {
        let id = checked_id(id)?;
        if self.client(&id).is_ok() {
            return Ok(HostShardCreated {
                shard_id: id,
                created: false,
            });
        }
        let lower = id.to_ascii_lowercase();
        let clash = self
            .ids()
            .await?
            .into_iter()
            .find(|existing| existing.to_ascii_lowercase() == lower);
        if let Some(existing) = clash {
            return Err(Error::invalid_argument(
                "shard id",
                format!(
                    "'{id}' differs only in case from the existing shard '{existing}' (ids are compared ignoring case)"
                ),
            ));
        }
        let path = self.file_of(&id);
        // The engine creates the file with its internal tables on open; the lazy handle kept for
        // requests opens it again on first use.
        drop(LocalClient::open_with(&path, id.clone(), self.inner.engine.clone()).await?);
        self.client(&id)?;
        tracing::info!(shard = %id, "created a shard file on this data host");
        Ok(HostShardCreated {
            shard_id: id,
            created: true,
        })
    }

    /// The shard ids of the folder, sorted by bytes: every `<id>.db` whose id passes the rules
    /// (other files are ignored).
    pub async fn ids(&self) -> Result<Vec<String>> {
        let dir = self.inner.dir.clone();
        tokio::task::spawn_blocking(move || list_ids(&dir))
            .await
            .map_err(|err| Error::Io {
                what: "the shard folder".to_owned(),
                source: std::io::Error::other(err),
            })?
    }

    /// One page of the folder's shard ids (at most [`MAX_HOST_SHARD_PAGE`]) with the shard and
    /// open-file counts.
    pub async fn list(&self, query: &HostShardQuery) -> Result<HostShardPage> {
        query.check()?;
        let (offset, limit) = (query.offset, query.page_size());
        let ids = self.ids().await?;
        let total = ids.len();
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(total);
        let limit = limit.clamp(1, MAX_HOST_SHARD_PAGE);
        let end = start.saturating_add(limit).min(total);
        let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        Ok(HostShardPage {
            shard_count: as_u64(total),
            open_shards: as_u64(self.open_shards()),
            max_open_shards: as_u64(self.inner.engine.max_open_shards),
            shard_ids: ids[start..end].to_vec(),
            next_offset: (end < total).then(|| as_u64(end)),
        })
    }

    /// Whether the folder can still be read (the readiness probe).
    pub async fn check_folder(&self) -> Result<()> {
        let meta = tokio::fs::metadata(&self.inner.dir).await.map_err(|source| Error::Io {
            what: "the shard folder".to_owned(),
            source,
        })?;
        if meta.is_dir() {
            Ok(())
        } else {
            Err(Error::invalid_argument(
                "--shard-dir",
                "the shard folder is no longer a folder",
            ))
        }
    }

    /// Shard files open now.
    pub fn open_shards(&self) -> usize {
        self.inner.engine.open_shards.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, LocalClient>> {
        self.inner.shards.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn checked_id(raw: &str) -> Result<String> {
    data_host_shard_id(raw).map_err(|err| Error::invalid_argument("shard id", err.to_string()))
}

fn unknown_shard(id: &str) -> Error {
    Error::NotFound {
        what: "shard on this data host",
        name: id.into(),
    }
}

fn list_ids(dir: &Path) -> Result<Vec<String>> {
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Io {
        what: "the shard folder".to_owned(),
        source,
    })?;
    let mut ids = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(id) = name.strip_suffix(".db") else { continue };
        if data_host_shard_id(id).is_ok_and(|checked| checked == id) && entry.file_type().is_ok_and(|t| t.is_file()) {
            ids.push(id.to_owned());
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// The shard a transaction id of a data host names, and its inner id: `{shardId}:{innerId}`.
pub(super) fn split_transaction_id(transaction_id: &str) -> Result<(&str, &str)> {
    match transaction_id.split_once(':') {
        Some((shard, inner)) if !shard.trim().is_empty() && !inner.trim().is_empty() => Ok((shard, inner)),
        _ => Err(Error::invalid_argument(
            "transaction id",
            format!("'{transaction_id}' is not a transaction id of this data host: expected '{{shardId}}:{{innerId}}'"),
        )),
    }
}

/// The error for a data request to a data host that names no shard.
pub(super) fn shard_required() -> Error {
    Error::invalid_argument(
        "shard header",
        format!(
            "this daemon is a data host serving a folder of shard files: name the shard with the {SHARD_HEADER} \
             header (gRPC metadata '{}'; in a connection string, 'Shard Id=ID')",
            crate::wire::SHARD_METADATA
        ),
    )
}

/// The error for a request that names a shard to a daemon that is not a data host.
pub(super) fn not_a_host() -> Error {
    Error::invalid_argument(
        "shard header",
        format!(
            "this daemon is not a data host (it was not started with --shard-dir), so it takes no {SHARD_HEADER} \
             header; route with the keyspace and key headers instead"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_ids_split_at_the_first_colon() {
        assert_eq!(split_transaction_id("s1:abc:d").unwrap(), ("s1", "abc:d"));
        for bad in ["", "abc", ":abc", "s1:", " :x"] {
            assert!(split_transaction_id(bad).is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn files_are_found_by_id_and_never_created_by_a_lookup() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        let host = ShardHost::open(dir.path(), EngineConfig::default()).unwrap();
        let err = host.client("s1").unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::NotFound, "{err}");
        assert!(!dir.path().join("s1.db").exists());
        for bad in ["..", "../x", "a/b", ".hidden", "a\0b", ""] {
            let err = host.client(bad).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{bad:?}: {err}");
        }
        let created = host.create_shard("s1").await.unwrap();
        assert!(created.created);
        assert!(!host.create_shard("s1").await.unwrap().created);
        let clash = host.create_shard("S1").await.unwrap_err();
        assert!(clash.to_string().contains("differs only in case"), "{clash}");
        host.create_shard("s2").await.unwrap();
        let page = host
            .list(&HostShardQuery {
                offset: 0,
                limit: Some(1),
            })
            .await
            .unwrap();
        assert_eq!(page.shard_count, 2);
        assert_eq!(page.shard_ids, vec!["s1".to_owned()]);
        assert_eq!(page.next_offset, Some(1));
        assert!(host.client("s2").is_ok());
        // A file removed while closed is not found again (and not created by the lookup).
        std::fs::remove_file(dir.path().join("s2.db")).unwrap();
        assert_eq!(host.client("s2").unwrap_err().kind(), crate::ErrorKind::NotFound);
        assert!(!dir.path().join("s2.db").exists());
    }
}
