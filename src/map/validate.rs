//! The checks [`ShardMap::new`](super::ShardMap::new) runs on each part of a map: shard ids,
//! shard definitions, files, replication, bucket coverage and pins. Each returns the first
//! problem as a [`MapError`] naming the offending item.

use std::collections::{BTreeMap, HashMap};

use super::{
    MapError, ReplicaInfo, Shard, ShardDefinition, ShardRole, ShardTarget, ShardingOptions, Transport, normalize_path,
};

pub(super) enum ShardIdProblem {
    Blank,
    Colon,
    Characters,
}

impl ShardIdProblem {
    pub(super) fn into_error(self, raw: &str) -> MapError {
        let shard_id = raw.trim().to_owned();
        match self {
            Self::Blank => MapError::BlankShardId { index: 0 },
            Self::Colon => MapError::ShardIdHasColon { shard_id },
            Self::Characters => MapError::InvalidShardIdCharacters { shard_id },
        }
    }
}

pub(super) fn normalize_shard_id(raw: &str) -> Result<String, ShardIdProblem> {
    let id = raw.trim();
    if id.is_empty() {
        return Err(ShardIdProblem::Blank);
    }
    if id.contains(':') {
        return Err(ShardIdProblem::Colon);
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        return Err(ShardIdProblem::Characters);
    }
    Ok(id.to_owned())
}

/// The longest shard id a data host serves: its file name (`<shardId>.db`) must fit the 255
/// bytes file systems allow, with room to spare.
pub const MAX_DATA_HOST_SHARD_ID_LEN: usize = 200;

/// Checks a shard id that names a shard of a data host (`serve --shard-dir`), where it is also
/// the name of the shard's file, and returns it trimmed. The map's shard-id rules apply (ASCII
/// letters, digits, `_`, `-`, `.`; no `:`, `/`, `\`, NUL or white space inside), and, because the
/// id is a file name, it must not start with `.` (no `.`, `..` or hidden files) and is at most
/// [`MAX_DATA_HOST_SHARD_ID_LEN`] bytes long.
///
/// ```
/// use shardlite::map::data_host_shard_id;
///
/// assert_eq!(data_host_shard_id(" orders-7 ").unwrap(), "orders-7");
/// for bad in ["", "..", ".hidden", "a/b", "a\\b", "a:b", "a\0b", "a b"] {
///     assert!(data_host_shard_id(bad).is_err(), "{bad:?}");
/// }
/// ```
pub fn data_host_shard_id(raw: &str) -> Result<String, MapError> {
    let id = normalize_shard_id(raw).map_err(|problem| match problem {
        ShardIdProblem::Blank => MapError::InvalidDataHostShardId {
            shard_id: raw.trim().to_owned(),
            reason: "it is blank",
        },
        other => other.into_error(raw),
    })?;
    if id.starts_with('.') {
        return Err(MapError::InvalidDataHostShardId {
            shard_id: id,
            reason: "it must not start with '.' (it is a file name in the host's folder)",
        });
    }
    if id.len() > MAX_DATA_HOST_SHARD_ID_LEN {
        return Err(MapError::InvalidDataHostShardId {
            shard_id: id,
            reason: "it is longer than 200 characters",
        });
    }
    Ok(id)
}

/// A map's shards with their index by id, for the checks that look shards up by the id a range,
/// pin or `primaryShardId` names (a map may have thousands of shards and a pin per tenant).
#[derive(Clone, Copy)]
pub(super) struct ShardLookup<'a> {
    pub(super) shards: &'a [Shard],
    /// Position in `shards` by id in ASCII lower case.
    pub(super) by_id: &'a HashMap<String, u32>,
}

impl<'a> ShardLookup<'a> {
    /// Finds a defined shard for an id written in a range, pin or `primaryShardId` (ignoring case
    /// and surrounding white space).
    pub(super) fn find(self, raw: &str) -> Option<(usize, &'a Shard)> {
        let id = raw.trim();
        let index = if id.bytes().any(|b| b.is_ascii_uppercase()) {
            self.by_id.get(id.to_ascii_lowercase().as_str())
        } else {
            self.by_id.get(id)
        }?;
        let index = usize::try_from(*index).ok()?;
        self.shards.get(index).map(|shard| (index, shard))
    }
}

fn non_blank(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

pub(super) fn validate_shard(id: String, def: &ShardDefinition) -> Result<Shard, MapError> {
    let role = match def.role.as_deref().map(str::trim) {
        None => ShardRole::Primary,
        Some(r) if r.eq_ignore_ascii_case("primary") => ShardRole::Primary,
        Some(r) if r.eq_ignore_ascii_case("replica") => ShardRole::Replica,
        Some(r) => {
            return Err(MapError::InvalidRole {
                shard_id: id,
                role: r.to_owned(),
            });
        }
    };

    let data_source = non_blank(&def.data_source);
    let endpoint = non_blank(&def.endpoint);
    let connection_string = def.connection_string.clone().filter(|s| !s.is_blank());
    let mut set = Vec::new();
    if data_source.is_some() {
        set.push("dataSource");
    }
    if endpoint.is_some() {
        set.push("endpoint");
    }
    if connection_string.is_some() {
        set.push("connectionString");
    }
    if set.len() > 1 {
        return Err(MapError::MultipleTargets {
            shard_id: id,
            targets: set.join(" and "),
        });
    }

    if non_blank(&def.remote_shard_id).is_some() && endpoint.is_none() {
        return Err(MapError::RemoteShardIdWithoutEndpoint { shard_id: id });
    }

    let transport = match def.transport.as_deref() {
        None => None,
        Some(t) => Some(Transport::parse(t).ok_or_else(|| MapError::InvalidTransport {
            shard_id: id.clone(),
            transport: t.to_owned(),
            reason: "expected 'direct', 'http' or 'grpc'",
        })?),
    };
    let target = if let Some(path) = data_source {
        if matches!(transport, Some(Transport::Http | Transport::Grpc)) {
            return Err(MapError::InvalidTransport {
                shard_id: id,
                transport: def.transport.clone().unwrap_or_default(),
                reason: "a dataSource shard is opened directly; use endpoint for a daemon",
            });
        }
        ShardTarget::DataSource(path)
    } else if let Some(endpoint) = endpoint {
        match transport {
            Some(transport @ (Transport::Http | Transport::Grpc)) => {
                let remote_shard_id = match non_blank(&def.remote_shard_id) {
                    Some(remote) => Some(data_host_shard_id(&remote)?),
                    None => None,
                };
                ShardTarget::Endpoint {
                    endpoint,
                    transport,
                    remote_shard_id,
                }
            }
            _ => {
                return Err(MapError::InvalidTransport {
                    shard_id: id,
                    transport: def.transport.clone().unwrap_or_else(|| "(none)".to_owned()),
                    reason: "an endpoint shard needs transport 'http' or 'grpc'",
                });
            }
        }
    } else if let Some(cs) = connection_string {
        ShardTarget::ConnectionString(cs)
    } else {
        return Err(MapError::MissingTarget { shard_id: id });
    };

    Ok(Shard {
        enabled: def.enabled,
        role,
        replica: ReplicaInfo {
            primary_shard_id: non_blank(&def.replica.primary_shard_id),
            promotion_eligible: def.replica.promotion_eligible,
            replication_lag_bytes: def.replica.replication_lag_bytes,
            last_replicated_utc: non_blank(&def.replica.last_replicated_utc),
        },
        target,
        api_key: def.api_key.clone().filter(|k| !k.is_blank()),
        api_key_header_name: non_blank(&def.api_key_header_name),
        id,
    })
}

/// No two `dataSource` shards name the same file (compared as normalised relative or absolute paths;
/// the master's folder is not known here, so that comparison waits for opening or seeding).
pub(super) fn validate_files(shards: &[Shard]) -> Result<(), MapError> {
    let mut seen: HashMap<std::path::PathBuf, &Shard> = HashMap::new();
    for shard in shards {
        let ShardTarget::DataSource(path) = &shard.target else {
            continue;
        };
        let normal = normalize_path(std::path::Path::new(path.trim()));
        if let Some(first) = seen.get(&normal) {
            return Err(MapError::DuplicateShardFile {
                first: first.id.clone(),
                second: shard.id.clone(),
                file: path.clone(),
            });
        }
        seen.insert(normal, shard);
    }
    Ok(())
}

pub(super) fn validate_replication(lookup: ShardLookup<'_>) -> Result<(), MapError> {
    for shard in lookup.shards {
        let shard_id = || shard.id.clone();
        if let Some(value) = shard.replica.replication_lag_bytes.filter(|v| *v < 0) {
            return Err(MapError::NegativeReplicationLag {
                shard_id: shard_id(),
                value,
            });
        }
        if let Some(value) = &shard.replica.last_replicated_utc
            && time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc3339).is_err()
        {
            return Err(MapError::InvalidTimestamp {
                shard_id: shard_id(),
                value: value.clone(),
            });
        }
        match shard.role {
            ShardRole::Replica => {
                let Some(primary) = &shard.replica.primary_shard_id else {
                    return Err(MapError::ReplicaWithoutPrimary { shard_id: shard_id() });
                };
                if primary.eq_ignore_ascii_case(&shard.id) {
                    return Err(MapError::ReplicaOfItself { shard_id: shard_id() });
                }
                match lookup.find(primary) {
                    None => {
                        return Err(MapError::ReplicaOfUnknownShard {
                            shard_id: shard_id(),
                            primary_shard_id: primary.clone(),
                        });
                    }
                    Some((_, p)) if p.role != ShardRole::Primary => {
                        return Err(MapError::ReplicaOfReplica {
                            shard_id: shard_id(),
                            primary_shard_id: primary.clone(),
                        });
                    }
                    Some(_) => {}
                }
            }
            ShardRole::Primary => {
                let field = if shard.replica.primary_shard_id.is_some() {
                    Some("primaryShardId")
                } else if shard.replica.promotion_eligible {
                    Some("promotionEligible")
                } else if shard.replica.replication_lag_bytes.is_some() {
                    Some("replicationLagBytes")
                } else if shard.replica.last_replicated_utc.is_some() {
                    Some("lastReplicatedUtc")
                } else {
                    None
                };
                if let Some(field) = field {
                    return Err(MapError::PrimaryWithReplicaField {
                        shard_id: shard_id(),
                        field,
                    });
                }
            }
        }
    }
    Ok(())
}

pub(super) fn assign_buckets(
    options: &ShardingOptions,
    lookup: ShardLookup<'_>,
    bucket_count: u32,
) -> Result<Vec<u32>, MapError> {
    let shards = lookup.shards;
    let len = usize::try_from(bucket_count).unwrap_or(usize::MAX);
    if options.bucket_ranges.is_empty() {
        if shards.len() == 1 {
            return Ok(vec![0; len]);
        }
        return Err(MapError::BucketRangesRequired);
    }
    const UNASSIGNED: u32 = u32::MAX;
    let mut owners = vec![UNASSIGNED; len];
    for range in &options.bucket_ranges {
        let (start, end) = (range.start_bucket_inclusive, range.end_bucket_exclusive);
        let Some((index, shard)) = lookup.find(&range.shard_id) else {
            return Err(MapError::RangeUnknownShard {
                shard_id: range.shard_id.trim().to_owned(),
                start,
                end,
            });
        };
        if shard.role != ShardRole::Primary {
            return Err(MapError::RangeOwnedByReplica {
                shard_id: shard.id.clone(),
                start,
                end,
            });
        }
        if start < 0 || end > i64::from(bucket_count) || start >= end {
            return Err(MapError::InvalidRange {
                shard_id: shard.id.clone(),
                start,
                end,
                bucket_count,
            });
        }
        let owner = u32::try_from(index).unwrap_or(UNASSIGNED);
        // In range: 0 <= start < end <= bucket_count.
        let (lo, hi) = (usize::try_from(start).unwrap_or(0), usize::try_from(end).unwrap_or(0));
        for (offset, slot) in owners[lo..hi].iter_mut().enumerate() {
            if *slot != UNASSIGNED {
                return Err(MapError::BucketOverlap {
                    bucket: u32::try_from(lo + offset).unwrap_or(u32::MAX),
                    first: shards[usize::try_from(*slot).unwrap_or(0)].id.clone(),
                    second: shard.id.clone(),
                });
            }
            *slot = owner;
        }
    }
    if let Some(gap) = owners.iter().position(|o| *o == UNASSIGNED) {
        return Err(MapError::BucketGap {
            bucket: u32::try_from(gap).unwrap_or(u32::MAX),
        });
    }
    Ok(owners)
}

pub(super) fn validate_pins(
    options: &ShardingOptions,
    lookup: ShardLookup<'_>,
) -> Result<Vec<(String, u32)>, MapError> {
    let mut pins = BTreeMap::new();
    for (raw_key, raw_shard) in &options.exact_key_pins {
        let key = raw_key.trim();
        if key.is_empty() {
            return Err(MapError::BlankPinKey {
                shard_id: raw_shard.trim().to_owned(),
            });
        }
        let Some((index, shard)) = lookup.find(raw_shard) else {
            return Err(MapError::PinUnknownShard {
                key: key.to_owned(),
                shard_id: raw_shard.trim().to_owned(),
            });
        };
        if shard.role != ShardRole::Primary {
            return Err(MapError::PinOwnedByReplica {
                key: key.to_owned(),
                shard_id: shard.id.clone(),
            });
        }
        if pins
            .insert(key.to_owned(), u32::try_from(index).unwrap_or(u32::MAX))
            .is_some()
        {
            return Err(MapError::DuplicatePinKey { key: key.to_owned() });
        }
    }
    Ok(pins.into_iter().collect())
}
