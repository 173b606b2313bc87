//! Why a shard directory lookup failed: [`DirectoryProblem`], the payload of
//! [`Error::Directory`](super::Error::Directory).

use super::ErrorKind;

/// A shard directory lookup that found no usable entry. Each names the directory and, where
/// there is one, the entry (`directory:lookupKey`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DirectoryProblem {
    /// The map defines no directory of that name.
    #[error("shard directory '{directory}' is not configured")]
    UnknownDirectory {
        /// The directory asked for.
        directory: String,
    },
    /// The directory holds no entry for the lookup key.
    #[error("shard directory entry '{entry}' was not found")]
    EntryNotFound {
        /// The entry, `directory:lookupKey`.
        entry: String,
    },
    /// The entry is not `Active` and inactive entries were not asked for.
    #[error("shard directory entry '{entry}' is {state}, not Active")]
    EntryNotActive {
        /// The entry, `directory:lookupKey`.
        entry: String,
        /// Its state.
        state: &'static str,
    },
    /// The entry was written by a map version newer than the one served.
    #[error("shard directory entry '{entry}' names future map version {version} (the live map is version {live})")]
    FutureMapVersion {
        /// The entry, `directory:lookupKey`.
        entry: String,
        /// The entry's version.
        version: i64,
        /// The live map's version.
        live: u64,
    },
    /// The entry's route resolves to another shard than the one it names.
    #[error(
        "shard directory entry '{entry}' points to shard '{shard_id}', but route key '{route_key}' resolves to shard '{resolved}'"
    )]
    ShardMismatch {
        /// The entry, `directory:lookupKey`.
        entry: String,
        /// The shard it names.
        shard_id: String,
        /// Its route key.
        route_key: String,
        /// The shard the route resolves to.
        resolved: String,
    },
}

impl DirectoryProblem {
    /// What a caller can do about it: a missing directory or entry is `NotFound`, an entry that
    /// cannot be used now a `Conflict`.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::UnknownDirectory { .. } | Self::EntryNotFound { .. } => ErrorKind::NotFound,
            Self::EntryNotActive { .. } | Self::FutureMapVersion { .. } | Self::ShardMismatch { .. } => {
                ErrorKind::Conflict
            }
        }
    }
}
