//! A change to a map sent as a patch: an RFC 7386 JSON Merge Patch of the map document, so that
//! adding one pin to a map of a million pins does not send the million.
//!
//! Members of the patch replace the map's members, objects merge member by member, and `null`
//! removes (`{"exactKeyPins": {"tenant-7": null}}` drops a pin). One extension: `shards` may be an
//! object keyed by shard id (compared ignoring case), each value merged into that shard (a new
//! id adds a shard at the end, `null` removes one), so one shard changes without sending the
//! others; an array of shards replaces them all, as the RFC says.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use super::options::ShardingOptions;
use super::records::{Header, RecordChange, RecordKind};
use crate::error::{Error, Result};

/// An RFC 7386 JSON Merge Patch of a map document.
///
/// ```
/// use shardlite::map::{MapPatch, ShardingOptions};
///
/// let map = ShardingOptions::from_json(r#"{"mapVersion": 2, "virtualBucketCount": 4,
///     "shards": [{"shardId": "s0", "dataSource": "s0.db"}, {"shardId": "s1", "dataSource": "s1.db"}],
///     "bucketRanges": [{"startBucketInclusive": 0, "endBucketExclusive": 4, "shardId": "s0"}],
///     "exactKeyPins": {"tenant-7": "s0"}}"#)?;
/// let patch = MapPatch::from_json(r#"{"mapVersion": 3, "exactKeyPins": {"tenant-42": "s1", "tenant-7": null},
///     "shards": {"s1": {"enabled": false}}}"#)?;
/// let next = patch.apply(&map)?;
/// assert_eq!(next.map_version, 3);
/// assert_eq!(next.exact_key_pins.len(), 1);
/// assert!(!next.shards[1].enabled);
/// # Ok::<(), shardlite::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MapPatch(Json);

impl MapPatch {
    /// A patch from its JSON value; it must be an object.
    pub fn new(patch: Json) -> Result<Self> {
        if !patch.is_object() {
            return Err(Error::invalid_argument("map patch", "it must be a JSON object"));
        }
        Ok(Self(patch))
    }

    /// A patch from JSON text.
    pub fn from_json(text: &str) -> Result<Self> {
        let value = serde_json::from_str(text).map_err(|source| Error::Json {
            what: "map patch",
            source,
        })?;
        Self::new(value)
    }

    /// The patch as JSON.
    pub fn as_json(&self) -> &Json {
        &self.0
    }

    /// `base` with this patch applied. The result is parsed as a map document (unknown fields
    /// refused) but not validated: [`ShardMap::new`](super::ShardMap::new) does that.
    pub fn apply(&self, base: &ShardingOptions) -> Result<ShardingOptions> {
        let mut document = serde_json::to_value(base).map_err(|source| Error::Json {
            what: "shard map",
            source,
        })?;
        let mut patch = self.0.clone();
        let keyed = patch.get("shards").is_some_and(Json::is_object);
        if keyed
            && let (Some(Json::Object(shards)), Some(target)) = (
                patch.as_object_mut().and_then(|p| p.remove("shards")),
                document.as_object_mut(),
            )
        {
            let current = match target.remove("shards") {
                Some(Json::Array(current)) => current,
                _ => Vec::new(),
            };
            target.insert("shards".to_owned(), Json::Array(patch_shards(current, shards)));
        }
        merge(&mut document, &patch);
        serde_json::from_value(document).map_err(|source| Error::Json {
            what: "patched shard map",
            source,
        })
    }
}

impl MapPatch {
    /// The records this patch changes in `base` when it changes pins alone: members `mapVersion`
    /// (an integer) and `exactKeyPins` (shard ids, or `null` to unpin) and nothing else. `None`
    /// for any other patch, which is applied whole ([`apply`](Self::apply)).
    pub(crate) fn pin_changes(&self, base: &super::ShardMap) -> Option<Vec<RecordChange>> {
        let base = base.header_options();
        let object = self.0.as_object()?;
        if object
            .keys()
            .any(|member| member != "mapVersion" && member != "exactKeyPins")
        {
            return None;
        }
        let map_version = match object.get("mapVersion") {
            Some(version) => version.as_i64()?,
            None => base.map_version,
        };
        let header = Header {
            keyspace: base.keyspace.clone(),
            map_version,
            virtual_bucket_count: base.virtual_bucket_count,
            directories: base.directories.clone(),
        };
        let mut changes = vec![RecordChange {
            kind: RecordKind::Header,
            key: "map".to_owned(),
            value: Some(serde_json::to_string(&header).ok()?),
        }];
        let empty = Map::new();
        let pins = match object.get("exactKeyPins") {
            Some(Json::Object(pins)) => pins,
            None => &empty,
            Some(_) => return None,
        };
        for (key, shard) in pins {
            let value = match shard {
                Json::String(_) => Some(shard.to_string()),
                Json::Null => None,
                _ => return None,
            };
            changes.push(RecordChange {
                kind: RecordKind::Pin,
                key: key.clone(),
                value,
            });
        }
        Some(changes)
    }
}

/// RFC 7386's MergePatch(target, patch), in place.
fn merge(target: &mut Json, patch: &Json) {
    let Json::Object(members) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Json::Object(Map::new());
    }
    if let Json::Object(target) = target {
        for (name, value) in members {
            if value.is_null() {
                target.remove(name);
            } else {
                merge(target.entry(name.clone()).or_insert(Json::Null), value);
            }
        }
    }
}

/// The shards array with each member of `patch` (keyed by shard id) merged into its shard.
fn patch_shards(mut shards: Vec<Json>, patch: Map<String, Json>) -> Vec<Json> {
    for (id, change) in patch {
        let position = shards.iter().position(|shard| {
            shard["shardId"]
                .as_str()
                .is_some_and(|existing| existing.trim().eq_ignore_ascii_case(id.trim()))
        });
        match (position, change.is_null()) {
            (Some(index), true) => {
                shards.remove(index);
            }
            (Some(index), false) => merge(&mut shards[index], &change),
            (None, true) => {}
            (None, false) => {
                let mut shard = serde_json::json!({ "shardId": id });
                merge(&mut shard, &change);
                shards.push(shard);
            }
        }
    }
    shards
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> ShardingOptions {
        ShardingOptions::from_json(
            r#"{"keyspace":"k","mapVersion":2,"virtualBucketCount":4,
                "shards":[{"shardId":"s0","dataSource":"s0.db"},{"shardId":"S1","endpoint":"http://a:1","transport":"http"}],
                "bucketRanges":[{"startBucketInclusive":0,"endBucketExclusive":4,"shardId":"s0"}],
                "exactKeyPins":{"t1":"s0","t2":"S1"}}"#,
        )
        .unwrap()
    }

    #[test]
    fn members_replace_objects_merge_and_null_removes() {
        let patch = MapPatch::from_json(r#"{"mapVersion":3,"exactKeyPins":{"t3":"s0","t1":null}}"#).unwrap();
        let next = patch.apply(&base()).unwrap();
        assert_eq!(next.map_version, 3);
        assert_eq!(
            next.exact_key_pins.into_iter().collect::<Vec<_>>(),
            vec![("t2".to_owned(), "S1".to_owned()), ("t3".to_owned(), "s0".to_owned())]
        );
        assert_eq!(next.shards, base().shards);
    }

    #[test]
    fn shards_keyed_by_id_change_add_and_remove_one_shard() {
        let patch =
            MapPatch::from_json(r#"{"shards":{"s1":{"endpoint":"http://b:2"},"s2":{"dataSource":"s2.db"},"s0":null}}"#)
                .unwrap();
        let next = patch.apply(&base()).unwrap();
        let ids: Vec<&str> = next.shards.iter().map(|s| s.shard_id.as_str()).collect();
        assert_eq!(ids, vec!["S1", "s2"]);
        assert_eq!(next.shards[0].endpoint.as_deref(), Some("http://b:2"));
        assert_eq!(next.shards[1].data_source.as_deref(), Some("s2.db"));
    }

    #[test]
    fn an_array_of_shards_replaces_them_and_typos_are_refused() {
        let patch = MapPatch::from_json(r#"{"shards":[{"shardId":"x","dataSource":"x.db"}]}"#).unwrap();
        assert_eq!(patch.apply(&base()).unwrap().shards.len(), 1);
        let typo = MapPatch::from_json(r#"{"exactKeyPinz":{"t":"s0"}}"#).unwrap();
        assert!(typo.apply(&base()).unwrap_err().to_string().contains("exactKeyPinz"));
        assert!(MapPatch::from_json("[1]").is_err());
    }
}
