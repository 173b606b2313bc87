//! `shardlite directory import`: upserts the entries of a JSON lines file in bulk.
//!
//! Each line is `{"lookupKey": "SO-1", "routeKey": "tenant-a", "state": "Active"}` (`state`
//! optional, default `Active`). Every line is read and checked before anything is written. On a
//! master catalog (`Data Source`) the whole file is one change: the entries that change are
//! written as one pending map, compare-and-set on the version read, with one history entry; a
//! refused line (named with its number) writes nothing. Through a daemon the entries go in
//! batches of `--batch`, each one such change, compare-and-set on the version the previous one
//! wrote, so a concurrent catalog change stops the import; a refused line stops it, and the
//! batches before its own stay written. With `--activate` the last pending map is activated.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};

use serde::Deserialize;

use super::data::print_json;
use super::directory::{ImportArgs, Target, open, refused};
use crate::data::{ActivationRequest, Audit, DirectoryImport, DirectoryImportEntry};
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
    /// Pending maps written (one per batch that changed anything).
    changes: u64,
    /// The last pending map version written, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_map_version: Option<u64>,
    /// Whether that map was activated.
    activated: bool,
}

/// Runs `shardlite directory import`.
pub async fn run(args: &ImportArgs) -> Result<()> {
    let target = open(&args.connection).await?;
    let keyspace = args.keyspace.clone().unwrap_or_else(|| target.keyspace.clone());
    let (entries, numbers) = read_file(args, &keyspace)?;
    let batch = if target.in_process {
        entries.len().max(1)
    } else {
        usize::try_from(args.batch).unwrap_or(usize::MAX)
    };
    let mut report = ImportReport {
        lines: entries.len() as u64,
        ..ImportReport::default()
    };
    let mut expected = args.write.expected_version;
    let mut first = 0;
    for chunk in entries.chunks(batch) {
        let last = first + chunk.len() == entries.len();
        let mut import = DirectoryImport::new(chunk.to_vec());
        import.expected_current_map_version = expected;
        import.activate = last && args.write.activate;
        import.operator = args.write.operator.clone();
        import.comment = args.write.comment.clone();
        let outcome = target.directories.import_directory_entries(&import).await?;
        if let (Some(index), Some(result)) = (outcome.refused_entry, &outcome.refusal) {
            let number = usize::try_from(index)
                .ok()
                .and_then(|i| numbers.get(first + i))
                .copied();
            let written = if first == 0 {
                "nothing was written"
            } else {
                "the batches before it stay written"
            };
            refused(result).map_err(|err| {
                Error::invalid_argument("import file", format!("line {}: {err}; {written}", number.unwrap_or(0)))
            })?;
        }
        for (status, n) in outcome.statuses {
            *report.statuses.entry(status).or_default() += n;
        }
        if let Some(version) = outcome.pending_map_version {
            expected = Some(version);
            report.pending_map_version = Some(version);
            report.changes += 1;
        }
        report.activated |= outcome.activated;
        first += chunk.len();
    }
    if args.write.activate && !report.activated {
        activate(&target, args, &mut report).await?;
    }
    print(&report, args.write.json())
}

/// Every entry of the file, with its line number; a line that is not an entry refuses the file.
fn read_file(args: &ImportArgs, keyspace: &str) -> Result<(Vec<DirectoryImportEntry>, Vec<usize>)> {
    let file = std::fs::File::open(&args.file).map_err(|source| Error::Io {
        what: format!("the import file {}", args.file.display()),
        source,
    })?;
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
        let entry: ImportLine = serde_json::from_str(&line)
            .map_err(|err| Error::invalid_argument("import file", format!("line {number} is not an entry: {err}")))?;
        entries.push(DirectoryImportEntry {
            directory_name: args.directory.clone(),
            lookup_key: entry.lookup_key,
            target_keyspace: keyspace.to_owned(),
            route_key: entry.route_key,
            state: entry.state,
        });
        numbers.push(number);
    }
    Ok((entries, numbers))
}

/// Activates the last pending map an import wrote before this call (none of its batches
/// changed anything, so none activated it).
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
