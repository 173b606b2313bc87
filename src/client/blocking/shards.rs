//! The blocking form of [`client::Shards`](crate::client::Shards).

use super::ShardedClient;
use crate::data::{DatabaseInfo, ShardStatus, ShardStatusPage, ShardStatusQuery};
use crate::error::Result;
use crate::heat::HeatReport;

/// The shards of a blocking [`ShardedClient`]: health, counts summed over every shard, heat.
/// Handed out by [`ShardedClient::shards`].
///
/// ```no_run
/// # fn demo(sharded: &shardlite::client::blocking::ShardedClient) -> shardlite::Result<()> {
/// let unhealthy = sharded.shards().status().into_iter().filter(|shard| !shard.healthy).count();
/// println!("{unhealthy} unhealthy, {} tables", sharded.shards().info()?.table_count);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Shards<'a> {
    client: &'a ShardedClient,
}

impl<'a> Shards<'a> {
    pub(super) fn new(client: &'a ShardedClient) -> Self {
        Self { client }
    }

    /// Every shard's health, in definition order.
    pub fn status(self) -> Vec<ShardStatus> {
        self.client.wait(self.client.sharded.shards().status())
    }

    /// One page of shard status with counts by state (see [`ShardStatusQuery`]).
    pub fn status_page(self, query: &ShardStatusQuery) -> Result<ShardStatusPage> {
        self.client.wait(self.client.sharded.shards().status_page(query))
    }

    /// Counts summed over every enabled shard.
    pub fn info(self) -> Result<DatabaseInfo> {
        self.client.wait(self.client.sharded.shards().info())
    }

    /// The heat of the calls routed through this client lately.
    pub fn heat(self) -> HeatReport {
        self.client.sharded.shards().heat()
    }
}
