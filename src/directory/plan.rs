//! What a directory mutation writes: [`plan`] turns a request and the newest stored map into the
//! entry to write (or remove), a no-op result, or a refusal. Nothing here touches a store.

use crate::data::{
    CatalogIssue, DirectoryMutation, DirectoryMutationResult, DirectoryOperation, IssueSeverity, MutationStatus,
};
use crate::map::{DirectoryEntry, EntryState, ShardMap, directory_name_eq};

/// The outcome of planning a mutation.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Nothing to write: a no-op (`succeeded`) or a refusal (`Rejected`).
    Done(DirectoryMutationResult),
    /// An entry to write as a pending map.
    Write(WriteEntry),
}

/// An entry change to write.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteEntry {
    /// The directory (trimmed, as asked).
    pub directory: String,
    /// The lookup key (trimmed).
    pub lookup_key: String,
    /// The entry to write, with the next map version; `None` removes it.
    pub entry: Option<DirectoryEntry>,
    /// The status when written.
    pub status: MutationStatus,
    /// The message when written.
    pub message: String,
    /// The history comment when the request gives none.
    pub default_comment: String,
}

impl WriteEntry {
    /// Whether `entry` is the one this change replaces (same directory ignoring case, same
    /// lookup key exactly).
    pub fn replaces(&self, entry: &DirectoryEntry) -> bool {
        directory_name_eq(&entry.directory_name, &self.directory) && entry.lookup_key.trim() == self.lookup_key
    }
}

/// A refusal: nothing written, one error issue.
pub fn rejected(code: &str, message: String, entry: Option<DirectoryEntry>) -> DirectoryMutationResult {
    DirectoryMutationResult {
        succeeded: false,
        status: MutationStatus::Rejected,
        issues: vec![CatalogIssue {
            severity: IssueSeverity::Error,
            code: code.to_owned(),
            message: message.clone(),
        }],
        message,
        entry,
        pending_map_version: None,
        requires_activation: false,
    }
}

fn no_op(status: MutationStatus, message: String, entry: &DirectoryEntry) -> Plan {
    Plan::Done(DirectoryMutationResult {
        succeeded: true,
        status,
        message,
        entry: Some(entry.clone()),
        pending_map_version: None,
        requires_activation: false,
        issues: Vec::new(),
    })
}

/// Plans `operation` on `working`, the newest map the catalog holds (the pending map, else the
/// active one); a written entry carries `working`'s version plus one.
pub fn plan(operation: DirectoryOperation, working: &ShardMap, request: &DirectoryMutation) -> Plan {
    match plan_checked(operation, working, request) {
        Ok(plan) => plan,
        Err(refusal) => Plan::Done(*refusal),
    }
}

type Refusal = Box<DirectoryMutationResult>;

fn refuse(code: &str, message: String) -> Refusal {
    Box::new(rejected(code, message, None))
}

fn plan_checked(
    operation: DirectoryOperation,
    working: &ShardMap,
    request: &DirectoryMutation,
) -> Result<Plan, Refusal> {
    let (directory, key) = super::names(&request.directory_name, &request.lookup_key)
        .map_err(|err| refuse("invalid-input", err.to_string()))?;
    let label = format!("{directory}:{key}");
    let Some(definition) = working.directory(directory) else {
        return Err(refuse(
            "unknown-directory",
            format!("shard directory '{directory}' is not configured"),
        ));
    };
    let existing = working.directory_entry(directory, key);
    let next_version = i64::try_from(working.version() + 1).unwrap_or(i64::MAX);
    if operation == DirectoryOperation::Delete && existing.is_none() {
        return Ok(Plan::Done(DirectoryMutationResult {
            succeeded: true,
            status: MutationStatus::AlreadyDeleted,
            message: format!("shard directory entry '{label}' does not exist"),
            entry: None,
            pending_map_version: None,
            requires_activation: false,
            issues: Vec::new(),
        }));
    }
    if definition.read_only {
        return Err(refuse(
            "directory-read-only",
            format!(
                "shard directory '{}' is read-only: its entries change only by catalog update or data move",
                definition.directory_name.trim()
            ),
        ));
    }
    let write = |entry: Option<DirectoryEntry>, status: MutationStatus, message: String, verb: &str| {
        Plan::Write(WriteEntry {
            directory: directory.to_owned(),
            lookup_key: key.to_owned(),
            entry,
            status,
            message,
            default_comment: format!("{verb} shard directory entry {label}"),
        })
    };
    let with_state = |entry: &DirectoryEntry, state: EntryState| DirectoryEntry {
        state,
        map_version: next_version,
        ..entry.clone()
    };
    match operation {
        DirectoryOperation::Reserve | DirectoryOperation::Upsert => {
            let state = match (operation, request.state.as_deref()) {
                (DirectoryOperation::Reserve, _) => EntryState::Reserved,
                (_, None) => EntryState::Active,
                (_, Some(name)) => EntryState::parse(name.trim()).ok_or_else(|| {
                    refuse(
                        "invalid-state",
                        format!(
                            "shard directory entry state '{name}' is invalid (expected one of Reserved, Active, \
                             Moving, Disabled, Deleted, Stale)"
                        ),
                    )
                })?,
            };
            let built = build_entry(working, definition.target_keyspace.trim(), directory, key, request)?;
            let entry = DirectoryEntry {
                state,
                map_version: next_version,
                ..built
            };
            match (operation, existing) {
                (DirectoryOperation::Reserve, Some(found)) if found.same_route(&entry) && found.state == state => {
                    Ok(no_op(
                        MutationStatus::AlreadyReserved,
                        format!("shard directory entry '{label}' is already reserved"),
                        found,
                    ))
                }
                (DirectoryOperation::Reserve, Some(_)) => Err(refuse(
                    "directory-entry-exists",
                    format!("shard directory entry '{label}' already exists and cannot be reserved again"),
                )),
                (DirectoryOperation::Reserve, None) => Ok(write(
                    Some(entry),
                    MutationStatus::Reserved,
                    format!("shard directory entry '{label}' was reserved in a pending map"),
                    "reserve",
                )),
                (_, Some(found)) if found.same_route(&entry) && found.state == state => Ok(no_op(
                    MutationStatus::AlreadyUpToDate,
                    format!("shard directory entry '{label}' is already up to date"),
                    found,
                )),
                (_, Some(_)) => Ok(write(
                    Some(entry),
                    MutationStatus::Repaired,
                    format!("shard directory entry '{label}' was repaired in a pending map"),
                    "upsert",
                )),
                (_, None) => Ok(write(
                    Some(entry),
                    MutationStatus::Upserted,
                    format!("shard directory entry '{label}' was added in a pending map"),
                    "upsert",
                )),
            }
        }
        DirectoryOperation::Activate | DirectoryOperation::Disable | DirectoryOperation::MarkStale => {
            let Some(found) = existing else {
                return Err(refuse(
                    "entry-not-found",
                    format!("shard directory entry '{label}' was not found"),
                ));
            };
            let (target, done, changed, verb) = match operation {
                DirectoryOperation::Activate => (
                    EntryState::Active,
                    MutationStatus::AlreadyActive,
                    MutationStatus::Activated,
                    "activate",
                ),
                DirectoryOperation::Disable => (
                    EntryState::Disabled,
                    MutationStatus::AlreadyDisabled,
                    MutationStatus::Disabled,
                    "disable",
                ),
                _ => (
                    EntryState::Stale,
                    MutationStatus::AlreadyStale,
                    MutationStatus::MarkedStale,
                    "mark stale",
                ),
            };
            if found.state == target {
                return Ok(no_op(
                    done,
                    format!("shard directory entry '{label}' is already {target}"),
                    found,
                ));
            }
            if operation == DirectoryOperation::Activate && found.state != EntryState::Reserved {
                return Err(Box::new(rejected(
                    "directory-entry-not-reserved",
                    format!(
                        "shard directory entry '{label}' is {}: it must be Reserved before it can be activated",
                        found.state
                    ),
                    Some(found.clone()),
                )));
            }
            let message = if operation == DirectoryOperation::Activate {
                format!("shard directory entry '{label}' was activated in a pending map")
            } else {
                format!("shard directory entry '{label}' was marked {target} in a pending map")
            };
            Ok(write(Some(with_state(found, target)), changed, message, verb))
        }
        DirectoryOperation::Delete => {
            let Some(found) = existing else {
                return Err(refuse(
                    "entry-not-found",
                    format!("shard directory entry '{label}' was not found"),
                ));
            };
            if request.remove_entry {
                return Ok(write(
                    None,
                    MutationStatus::Removed,
                    format!("shard directory entry '{label}' was removed in a pending map"),
                    "delete",
                ));
            }
            if found.state == EntryState::Deleted {
                return Ok(no_op(
                    MutationStatus::AlreadyDeleted,
                    format!("shard directory entry '{label}' is already deleted"),
                    found,
                ));
            }
            Ok(write(
                Some(with_state(found, EntryState::Deleted)),
                MutationStatus::Deleted,
                format!("shard directory entry '{label}' was marked deleted in a pending map"),
                "delete",
            ))
        }
    }
}

/// The entry a reserve or upsert writes (state and version set by the caller): the route's
/// keyspace must be the directory's, and the shard is where the route resolves on `working`.
fn build_entry(
    working: &ShardMap,
    directory_keyspace: &str,
    directory: &str,
    key: &str,
    request: &DirectoryMutation,
) -> Result<DirectoryEntry, Refusal> {
    let keyspace = request.target_keyspace.as_deref().map(str::trim).unwrap_or_default();
    let route_key = request.route_key.as_deref().map(str::trim).unwrap_or_default();
    if keyspace.is_empty() {
        return Err(refuse("invalid-input", "targetKeyspace is required".to_owned()));
    }
    if route_key.is_empty() {
        return Err(refuse("invalid-input", "routeKey is required".to_owned()));
    }
    if !directory_name_eq(keyspace, directory_keyspace) {
        return Err(refuse(
            "keyspace-mismatch",
            format!("shard directory '{directory}' targets keyspace '{directory_keyspace}', not '{keyspace}'"),
        ));
    }
    let resolved = working.resolve(keyspace, route_key).map_err(|err| {
        refuse(
            "route-unresolved",
            format!("route key '{route_key}' does not resolve: {err}"),
        )
    })?;
    Ok(DirectoryEntry {
        directory_name: working
            .directory(directory)
            .map_or(directory, |d| d.directory_name.trim())
            .into(),
        lookup_key: key.into(),
        target_keyspace: directory_keyspace.into(),
        route_key: route_key.into(),
        shard_id: resolved.shard_id.into(),
        map_version: 1,
        state: EntryState::Reserved,
    })
}
