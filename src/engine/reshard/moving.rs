//! Which rows a data move moves, as the engine's fences and change capture and the runner's
//! queries all read it.

use crate::data::ReshardScope;

/// Which rows move: those of one route key, or those whose route value falls in a range of
/// virtual buckets, less the map's pinned keys (their pins keep them where they are).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MovingRows {
    /// Rows whose route value equals the key.
    Key(String),
    /// Rows whose route value's bucket (of `bucket_count` in `keyspace`) is in `[start, end)`
    /// and is not one of `pins`.
    Buckets {
        keyspace: String,
        bucket_count: u32,
        start: u32,
        end: u32,
        /// Every pinned key of the map (trimmed): pins override buckets. A fence read back from
        /// a file leaves them empty: its triggers read them from the fence's pins table.
        pins: Vec<String>,
    },
}

impl MovingRows {
    /// The rows `scope` moves, in a map of `bucket_count` buckets whose pinned keys are `pins`.
    pub(crate) fn of(scope: &ReshardScope, bucket_count: u32, pins: Vec<String>) -> Self {
        match scope {
            ReshardScope::RouteKey { route_key, .. } => Self::Key(route_key.clone()),
            ReshardScope::BucketRange {
                keyspace,
                start_bucket_inclusive,
                end_bucket_exclusive,
                ..
            } => Self::Buckets {
                keyspace: keyspace.clone(),
                bucket_count,
                start: *start_bucket_inclusive,
                end: *end_bucket_exclusive,
                pins,
            },
        }
    }

    /// The pinned keys a bucket range leaves out (none for a route key).
    pub(crate) fn pins(&self) -> &[String] {
        match self {
            Self::Key(_) => &[],
            Self::Buckets { pins, .. } => pins,
        }
    }

    /// How messages name them: the key itself, or `buckets [start, end)`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Key(key) => key.clone(),
            Self::Buckets { start, end, .. } => format!("buckets [{start}, {end})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_becomes_the_rows_it_moves() {
        let key = ReshardScope::RouteKey {
            keyspace: "tenants".into(),
            route_key: "acme".into(),
        };
        assert_eq!(
            MovingRows::of(&key, 16, vec!["p".into()]),
            MovingRows::Key("acme".into())
        );
        let range = ReshardScope::BucketRange {
            keyspace: "tenants".into(),
            source_shard_id: "s0".into(),
            start_bucket_inclusive: 2,
            end_bucket_exclusive: 5,
        };
        let rows = MovingRows::of(&range, 16, vec!["p".into()]);
        assert_eq!(
            rows,
            MovingRows::Buckets {
                keyspace: "tenants".into(),
                bucket_count: 16,
                start: 2,
                end: 5,
                pins: vec!["p".into()],
            }
        );
        assert_eq!(rows.pins(), ["p"]);
        assert_eq!(rows.describe(), "buckets [2, 5)");
    }
}
