//! `shardlite directory import`: upserts the entries of a JSON lines file.
//!
//! Each line is `{"lookupKey": "SO-1", "routeKey": "tenant-a", "state": "Active"}` (`state`
//! optional, default `Active`). On a master catalog (`Data Source`) the whole file is one
//! change: every entry is checked, and those that change are written as one pending map,
//! compare-and-set on the version read, with one history entry; a refused line (named with its
//! number) writes nothing. Through a daemon the file is read a line at a time and each entry
//! that changes is written as a pending map of its own, each compare-and-set on the version the
//! previous one wrote, so a concurrent catalog change stops the import; the first refused line
//! stops it, and the lines before it stay written. With `--activate` the last pending map is
//! activated at the end.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};

use serde::Deserialize;

use super::data::print_json;
use super::directory::{ImportArgs, Target, open, refused};
use crate::data::{ActivationRequest, Audit, DirectoryMutation, DirectoryOperation, MutationStatus};
use crate::error::{Error, Result};

/// One line of the file.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ImportLine {
    lookup_key: String,
    route_key: String,
    #[serde(default)]
    state: Option<String>,
}

/// What an import did, printed at its end.
#[derive(Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ImportReport {
    /// Lines read (blank lines not counted).
    lines: u64,
    /// How many lines ended with each status.
    statuses: BTreeMap<String, u64>,
    /// The last pending map version written, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_map_version: Option<u64>,
    /// Whether that map was activated.
    activated: bool,
}

/// Runs `shardlite directory import`.
pub async fn run(args: &ImportArgs) -> Result<()> {
    let file = std::fs::File::open(&args.file).map_err(|source| Error::Io {
        what: format!("the import file {}", args.file.display()),
        source,
    })?;
    let target = open(&args.connection).await?;
    let keyspace = args.keyspace.clone().unwrap_or_else(|| target.keyspace.clone());
    if let Some(sharded) = &target.local {
        return import_at_once(sharded, args, &keyspace, file).await;
    }
    let mut report = ImportReport::default();
    let mut expected = args.write.expected_version;
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let number = index + 1;
        let line = line.map_err(|source| Error::Io {
            what: format!("line {number} of {}", args.file.display()),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let mut mutation = parse_line(&line, number, args, &keyspace)?;
        mutation.expected_current_map_version = expected;
        let mutation = mutation.audit(Audit::new(args.write.operator.clone(), args.write.comment.clone()));
        let result = target
            .directories
            .mutate_directory_entry(DirectoryOperation::Upsert, &mutation)
            .await?;
        refused(&result).map_err(|err| Error::invalid_argument("import file", format!("line {number}: {err}")))?;
        report.lines += 1;
        *report.statuses.entry(format!("{:?}", result.status)).or_default() += 1;
        if result.status != MutationStatus::AlreadyUpToDate
            && let Some(version) = result.pending_map_version
        {
            expected = Some(version);
            report.pending_map_version = Some(version);
        }
    }
    if args.write.activate {
        activate(&target, args, &mut report).await?;
    }
    print(&report, args.write.json())
}

/// One line of the file as an upsert of `args.directory`.
fn parse_line(line: &str, number: usize, args: &ImportArgs, keyspace: &str) -> Result<DirectoryMutation> {
    let entry: ImportLine = serde_json::from_str(line)
        .map_err(|err| Error::invalid_argument("import file", format!("line {number} is not an entry: {err}")))?;
    let mut mutation = DirectoryMutation::new(&args.directory, entry.lookup_key).route(keyspace, entry.route_key);
    mutation.state = entry.state;
    Ok(mutation)
}

/// The import on a master catalog opened here: the whole file as one pending map.
async fn import_at_once(
    sharded: &crate::client::ShardedClient,
    args: &ImportArgs,
    keyspace: &str,
    file: std::fs::File,
) -> Result<()> {
    let mut entries = Vec::new();
    let mut numbers = Vec::new();
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let number = index + 1;
        let line = line.map_err(|source| Error::Io {
            what: format!("line {number} of {}", args.file.display()),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        entries.push(parse_line(&line, number, args, keyspace)?);
        numbers.push(number);
    }
    let audit = Audit::new(args.write.operator.clone(), args.write.comment.clone());
    let outcome = sharded
        .directories()
        .import(&entries, args.write.expected_version, audit, args.write.activate)
        .await?;
    if let Some((index, result)) = &outcome.refused {
        let number = numbers.get(*index).copied().unwrap_or(0);
        refused(result).map_err(|err| {
            Error::invalid_argument("import file", format!("line {number}: {err}; nothing was written"))
        })?;
    }
    let report = ImportReport {
        lines: entries.len() as u64,
        statuses: outcome.statuses,
        activated: args.write.activate && outcome.pending_map_version.is_some(),
        pending_map_version: outcome.pending_map_version,
    };
    print(&report, args.write.json())
}

async fn activate(target: &Target, args: &ImportArgs, report: &mut ImportReport) -> Result<()> {
    let Some(version) = report.pending_map_version else {
        return Ok(());
    };
    let audit = Audit::new(args.write.operator.clone(), args.write.comment.clone())
        .or_because(|| format!("activated with shard directory import into {}", args.directory.trim()));
    target
        .admin
        .activate_pending_map(&ActivationRequest::new(version).audit(audit))
        .await?;
    report.activated = true;
    Ok(())
}

fn print(report: &ImportReport, json: bool) -> Result<()> {
    if json {
        return print_json(report);
    }
    let statuses: Vec<String> = report
        .statuses
        .iter()
        .map(|(status, n)| format!("{n} {status}"))
        .collect();
    println!("{} entries: {}", report.lines, statuses.join(", "));
    if let Some(version) = report.pending_map_version {
        let state = if report.activated {
            "activated"
        } else {
            "pending activation"
        };
        println!("map version {version}, {state}");
    }
    Ok(())
}
