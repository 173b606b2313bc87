//! Shard health on maps of thousands of shards: which shards a status call reports
//! ([`ShardStatusQuery`]), counts by state over the whole map ([`ShardStatusSummary`]) and one page
//! of rows ([`ShardStatusPage`]).

use serde::{Deserialize, Serialize};

use super::ShardStatus;
use crate::error::{Error, Result};

/// The most rows one status page holds.
pub const MAX_STATUS_PAGE: u32 = 1000;

/// Which shards a status call reports, and which page of them.
///
/// The default asks for every shard. Shards keep the map's definition order.
///
/// ```
/// use shardlite::data::ShardStatusQuery;
///
/// let problems = ShardStatusQuery { unhealthy_only: true, limit: Some(50), ..Default::default() };
/// assert!(problems.check().is_ok());
/// assert!(ShardStatusQuery { limit: Some(0), ..Default::default() }.check().is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema, utoipa::IntoParams))]
#[cfg_attr(feature = "server", into_params(parameter_in = Query))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShardStatusQuery {
    /// Only this shard (ignoring case); only it is probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_id: Option<String>,
    /// Only problem shards: enabled shards whose probe failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unhealthy_only: bool,
    /// How many matching shards to skip.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset: u64,
    /// At most this many rows (1 to 1000); every matching shard when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl ShardStatusQuery {
    /// Refuses a limit of 0 or above [`MAX_STATUS_PAGE`], an offset above `i64::MAX`, and a
    /// blank shard id.
    pub fn check(&self) -> Result<()> {
        if let Some(limit) = self.limit
            && !(1..=MAX_STATUS_PAGE).contains(&limit)
        {
            return Err(Error::invalid_argument(
                "limit",
                format!("must be between 1 and {MAX_STATUS_PAGE} (got {limit})"),
            ));
        }
        if self.shard_id.as_deref().is_some_and(|id| id.trim().is_empty()) {
            return Err(Error::invalid_argument("shardId", "must not be blank"));
        }
        // The contract's integers are signed 64-bit, as JSON readers and the OpenAPI document
        // take them.
        if i64::try_from(self.offset).is_err() {
            return Err(Error::invalid_argument(
                "offset",
                format!("must be at most {} (got {})", i64::MAX, self.offset),
            ));
        }
        Ok(())
    }

    /// Whether `status` is one the query asks for (leaving the page aside).
    pub fn matches(&self, status: &ShardStatus) -> bool {
        let wanted = self
            .shard_id
            .as_deref()
            .is_none_or(|id| status.shard_id.eq_ignore_ascii_case(id.trim()));
        wanted && (!self.unhealthy_only || is_unhealthy(status))
    }
}

/// A problem shard: enabled, and its probe failed.
pub fn is_unhealthy(status: &ShardStatus) -> bool {
    status.enabled && !status.healthy
}

/// Counts of the probed shards by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardStatusSummary {
    /// Shards probed (every shard of the map, or the one asked for).
    pub shards: u64,
    /// Enabled shards.
    pub enabled: u64,
    /// Disabled shards (not probed).
    pub disabled: u64,
    /// Enabled shards whose probe succeeded.
    pub healthy: u64,
    /// Enabled shards whose probe failed.
    pub unavailable: u64,
}

impl ShardStatusSummary {
    /// Counts `statuses`.
    pub fn of<'a>(statuses: impl IntoIterator<Item = &'a ShardStatus>) -> Self {
        let mut summary = Self::default();
        for status in statuses {
            summary.shards += 1;
            if !status.enabled {
                summary.disabled += 1;
            } else if status.healthy {
                summary.enabled += 1;
                summary.healthy += 1;
            } else {
                summary.enabled += 1;
                summary.unavailable += 1;
            }
        }
        summary
    }
}

/// One page of shard status, with counts over every shard probed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShardStatusPage {
    /// Counts by state over every shard probed, whatever the filter and page.
    pub summary: ShardStatusSummary,
    /// How many shards match the query (all pages).
    pub total: u64,
    /// How many matching shards come before this page.
    pub offset: u64,
    /// This page, in definition order.
    pub shards: Vec<ShardStatus>,
}

impl ShardStatusPage {
    /// The page `query` asks for out of `statuses` (every shard probed, in definition order).
    pub fn select(statuses: Vec<ShardStatus>, query: &ShardStatusQuery) -> Self {
        let summary = ShardStatusSummary::of(&statuses);
        let matching: Vec<ShardStatus> = statuses.into_iter().filter(|s| query.matches(s)).collect();
        let total = u64::try_from(matching.len()).unwrap_or(u64::MAX);
        let skip = usize::try_from(query.offset).unwrap_or(usize::MAX);
        let take = query
            .limit
            .map_or(usize::MAX, |limit| usize::try_from(limit).unwrap_or(usize::MAX));
        Self {
            summary,
            total,
            offset: query.offset,
            shards: matching.into_iter().skip(skip).take(take).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::{ReplicaInfo, ShardRole};

    fn status(id: &str, enabled: bool, healthy: bool) -> ShardStatus {
        ShardStatus {
            shard_id: id.to_owned(),
            data_source: None,
            enabled,
            healthy,
            role: ShardRole::Primary,
            replica: ReplicaInfo::default(),
            can_promote: false,
            error: (!healthy).then(|| "down".to_owned()),
            info: None,
        }
    }

    fn map() -> Vec<ShardStatus> {
        (0..10)
            .map(|i| status(&format!("s{i}"), i != 3, i != 5 && i != 7))
            .collect()
    }

    #[test]
    fn the_summary_counts_every_shard_and_the_page_only_matching_ones() {
        let query = ShardStatusQuery {
            unhealthy_only: true,
            ..Default::default()
        };
        let page = ShardStatusPage::select(map(), &query);
        let expected = ShardStatusSummary {
            shards: 10,
            enabled: 9,
            disabled: 1,
            healthy: 7,
            unavailable: 2,
        };
        assert_eq!(page.summary, expected);
        let ids: Vec<&str> = page.shards.iter().map(|s| s.shard_id.as_str()).collect();
        assert_eq!(ids, ["s5", "s7"], "a disabled shard is not a problem shard");
        assert_eq!(page.total, 2);
    }

    #[test]
    fn pages_follow_definition_order() {
        let query = ShardStatusQuery {
            offset: 8,
            limit: Some(5),
            ..Default::default()
        };
        let page = ShardStatusPage::select(map(), &query);
        let ids: Vec<&str> = page.shards.iter().map(|s| s.shard_id.as_str()).collect();
        assert_eq!(ids, ["s8", "s9"]);
        assert_eq!((page.total, page.offset), (10, 8));
        let one = ShardStatusQuery {
            shard_id: Some(" S4 ".to_owned()),
            ..Default::default()
        };
        assert_eq!(ShardStatusPage::select(map(), &one).shards[0].shard_id, "s4");
    }

    #[test]
    fn bad_limits_and_blank_ids_are_refused_by_name() {
        for limit in [0, MAX_STATUS_PAGE + 1] {
            let err = ShardStatusQuery {
                limit: Some(limit),
                ..Default::default()
            }
            .check()
            .unwrap_err();
            assert!(err.to_string().contains("limit"), "{err}");
        }
        let blank = ShardStatusQuery {
            shard_id: Some(" ".to_owned()),
            ..Default::default()
        };
        assert!(blank.check().unwrap_err().to_string().contains("shardId"));
        let far = ShardStatusQuery {
            offset: 1 << 63,
            ..Default::default()
        };
        assert!(far.check().unwrap_err().to_string().contains("offset"));
    }
}
