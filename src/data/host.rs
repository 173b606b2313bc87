//! What a data host (a daemon serving a folder of shard files) reports about its shards.

use serde::{Deserialize, Serialize};

/// The most shard ids one page of a data host's shard list holds.
pub const MAX_HOST_SHARD_PAGE: usize = 1000;

/// One page of a data host's shards, with its counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HostShardPage {
    /// Shard files in the folder.
    pub shard_count: u64,
    /// Shard files open now (connections held); bounded by the daemon's `--max-open-shards`.
    pub open_shards: u64,
    /// The most shard files the daemon keeps open at once.
    pub max_open_shards: u64,
    /// Shard ids of this page, in byte order.
    pub shard_ids: Vec<String>,
    /// The offset of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
}

/// The answer of creating a shard file on a data host (idempotent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct HostShardCreated {
    /// The shard id.
    pub shard_id: String,
    /// Whether the file was created now (false: it existed already).
    pub created: bool,
}

/// Which page of a data host's shard ids to list.
///
/// ```
/// use shardlite::data::HostShardQuery;
///
/// assert!(HostShardQuery { offset: 0, limit: Some(50) }.check().is_ok());
/// assert!(HostShardQuery { offset: 0, limit: Some(0) }.check().is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema, utoipa::IntoParams))]
#[cfg_attr(feature = "server", into_params(parameter_in = Query))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostShardQuery {
    /// How many shard ids (in byte order) to skip.
    #[serde(default)]
    #[cfg_attr(feature = "server", param(maximum = 9_223_372_036_854_775_807_i64))]
    pub offset: u64,
    /// At most this many ids (1 to 1000; default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", param(minimum = 1, maximum = 1000))]
    pub limit: Option<u32>,
}

impl HostShardQuery {
    /// The page size when none is asked for.
    pub const DEFAULT_LIMIT: u32 = 100;

    /// Refuses a limit of 0 or above [`MAX_HOST_SHARD_PAGE`] and an offset above `i64::MAX`.
    pub fn check(&self) -> crate::error::Result<()> {
        if let Some(limit) = self.limit
            && !(1..=MAX_HOST_SHARD_PAGE).contains(&usize::try_from(limit).unwrap_or(usize::MAX))
        {
            return Err(crate::error::Error::invalid_argument(
                "limit",
                format!("must be between 1 and {MAX_HOST_SHARD_PAGE} (got {limit})"),
            ));
        }
        if i64::try_from(self.offset).is_err() {
            return Err(crate::error::Error::invalid_argument(
                "offset",
                "must be at most 9223372036854775807",
            ));
        }
        Ok(())
    }

    /// The page size: [`limit`](Self::limit) or [`DEFAULT_LIMIT`](Self::DEFAULT_LIMIT).
    pub fn page_size(&self) -> usize {
        usize::try_from(self.limit.unwrap_or(Self::DEFAULT_LIMIT)).unwrap_or(MAX_HOST_SHARD_PAGE)
    }
}

/// The operations of a data host, implemented remotely by the HTTP and gRPC clients.
#[async_trait::async_trait]
pub trait HostAdmin: Send + Sync {
    /// One page of the host's shard ids, with its shard and open-file counts.
    async fn list_host_shards(&self, query: &HostShardQuery) -> crate::error::Result<HostShardPage>;
    /// Creates the file of shard `shard_id` on the host unless it exists (idempotent).
    async fn create_host_shard(&self, shard_id: &str) -> crate::error::Result<HostShardCreated>;
}
