//! `shardlite serve --config FILE`: every `serve` flag from a TOML file, keys spelled as the
//! flags without their dashes (`max-result-rows = 1000`, `create = true`).
//!
//! Flags given on the command line (or through their environment variable) win over the file.
//! The file's values pass the same checks as the flags, because they are parsed as flags; an
//! unknown key, a value of the wrong type and a value a flag would refuse are each an error
//! naming the key and the file.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::Path;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, FromArgMatches};

use super::ServeArgs;
use crate::error::{Error, Result};

/// The flags set on the command line or by environment variable, by argument id: what the file
/// must not override.
pub(super) fn explicit_flags(matches: &ArgMatches) -> Vec<String> {
    matches
        .ids()
        .filter(|id| {
            matches!(
                matches.value_source(id.as_str()),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            )
        })
        .map(|id| id.as_str().to_owned())
        .collect()
}

/// `args` completed from the TOML file at `path`: each flag the command line did not set takes
/// the file's value (or its default when the file has none).
pub(super) fn apply_file(args: &ServeArgs, path: &Path) -> Result<ServeArgs> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        what: format!("serve configuration file '{}'", path.display()),
        source,
    })?;
    let bad = |reason: String| Error::invalid_argument("--config", format!("'{}': {reason}", path.display()));
    let from_file = parse_file(&text).map_err(bad)?;
    Ok(merge(args.clone(), from_file, &args.explicit))
}

/// The `serve` arguments a TOML document describes (defaults for what it leaves out).
pub(super) fn parse_file(text: &str) -> std::result::Result<ServeArgs, String> {
    // The line number, not the line: it may hold a key.
    let table: toml::Table = text.parse().map_err(|err: toml::de::Error| {
        let line = err
            .span()
            .map_or(1, |span| text[..span.start].matches('\n').count() + 1);
        format!("not valid TOML at line {line}: {}", err.message())
    })?;
    let command = ServeArgs::augment_args(clap::Command::new("serve"));
    let mut argv: Vec<OsString> = vec!["serve".into()];
    for (key, value) in &table {
        let arg = command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(key.as_str()) && key != "config")
            .ok_or_else(|| {
                let known: Vec<&str> = command
                    .get_arguments()
                    .filter_map(|arg| arg.get_long())
                    .filter(|long| *long != "config")
                    .collect();
                format!(
                    "unknown key '{key}' (the keys are the serve flags: {})",
                    known.join(", ")
                )
            })?;
        let takes_value = arg.get_action().takes_values();
        match (takes_value, value) {
            (false, toml::Value::Boolean(on)) => {
                if *on {
                    argv.push(format!("--{key}").into());
                }
            }
            (false, other) => return Err(wrong_type(key, "true or false", other)),
            (true, toml::Value::String(text)) => argv.extend([format!("--{key}").into(), text.into()]),
            (true, toml::Value::Integer(n)) => argv.extend([format!("--{key}").into(), n.to_string().into()]),
            (true, other) => return Err(wrong_type(key, "a string or an integer", other)),
        }
    }
    let matches = command
        .try_get_matches_from(argv)
        .map_err(|err| clap_message(&err, &table))?;
    ServeArgs::from_arg_matches(&matches).map_err(|err| err.to_string())
}

fn wrong_type(key: &str, expected: &str, got: &toml::Value) -> String {
    // The value itself is not repeated: it may be a key.
    format!("key '{key}' must be {expected}, not a {}", got.type_str())
}

/// A flag parser's refusal, reworded to name the file's key rather than the flag.
fn clap_message(err: &clap::Error, table: &toml::Table) -> String {
    let text = err.render().to_string();
    let first = text.lines().next().unwrap_or_default().trim_start_matches("error: ");
    let key = table
        .keys()
        .find(|key| first.contains(&format!("--{key} ")) || first.contains(&format!("--{key}'")));
    match key {
        Some(key) => format!("key '{key}': {first}"),
        None => first.to_owned(),
    }
}

/// For each flag: the command line's value when it was given there, else the file's.
fn merge(cli: ServeArgs, file: ServeArgs, explicit: &[String]) -> ServeArgs {
    let explicit: HashSet<&str> = explicit.iter().map(String::as_str).collect();
    let mut merged = file;
    merged.take_explicit_from(cli, &explicit);
    merged
}

/// The flags a configuration file can set: each field listed here is taken from the command
/// line when it set it, and from the file otherwise (a test checks every flag is listed).
macro_rules! merged_fields {
    ($($field:ident),* $(,)?) => {
        impl ServeArgs {
            #[cfg(test)]
            const MERGED: &[&str] = &[$(stringify!($field)),*];

            fn take_explicit_from(&mut self, cli: ServeArgs, explicit: &HashSet<&str>) {
                $(if explicit.contains(stringify!($field)) {
                    self.$field = cli.$field;
                })*
                self.explicit = cli.explicit;
            }
        }
    };
}

merged_fields!(
    master,
    shard_dir,
    create,
    listen,
    metrics_listen,
    api_key,
    api_keys,
    api_key_header,
    body_limit,
    transaction_timeout,
    statement_timeout,
    moved_record_grace,
    max_result_rows,
    max_result_bytes,
    request_timeout,
    max_concurrent_requests,
    max_open_transactions,
    max_open_transactions_per_key,
    max_atomic_participant_sessions,
    readers,
    max_queued_jobs,
    max_open_shards,
    shard_idle_timeout,
    heat_half_life,
    atomic_abandon_age,
    tls_cert,
    tls_key,
    tls_client_ca,
    backup_dir,
    archive_dir,
);

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Serve {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn run(flags: &[&str], file: &str) -> std::result::Result<ServeArgs, String> {
        let argv = ["serve"].iter().chain(flags);
        let matches = <Serve as clap::CommandFactory>::command().get_matches_from(argv);
        let explicit = explicit_flags(&matches);
        let cli = Serve::from_arg_matches(&matches).expect("flags parse").args;
        parse_file(file).map(|from_file| merge(cli, from_file, &explicit))
    }

    #[test]
    fn every_flag_can_come_from_the_file() {
        let command = ServeArgs::augment_args(clap::Command::new("serve"));
        for arg in command.get_arguments() {
            let Some(long) = arg.get_long().filter(|long| *long != "config") else {
                continue;
            };
            assert!(
                ServeArgs::MERGED.contains(&arg.get_id().as_str()),
                "--{long} is not merged from the configuration file"
            );
        }
    }

    #[test]
    fn flags_win_over_the_file_and_the_file_over_defaults() {
        let file = "master = \"from-file.db\"\nreaders = 3\nmax-result-rows = 10\ncreate = true\nheat-half-life = 30\n";
        let args = run(&["--readers", "5"], file).expect("valid");
        assert_eq!(args.readers, 5, "the flag wins");
        assert_eq!(args.max_result_rows, 10, "the file sets what the flags leave out");
        assert_eq!(args.heat_half_life, 30);
        assert_eq!(args.master.as_deref(), Some(Path::new("from-file.db")));
        assert!(args.create);
        let config = super::super::server_config(&args);
        assert_eq!((config.readers, config.max_result_rows), (5, 10));
        assert_eq!(config.heat_half_life, std::time::Duration::from_secs(30));
    }

    #[test]
    fn a_shard_folder_can_come_from_the_file_and_excludes_a_master() {
        let args = run(&[], "shard-dir = \"shards\"\nmax-open-shards = 64\n").expect("valid");
        assert_eq!(args.shard_dir.as_deref(), Some(Path::new("shards")));
        assert_eq!(args.max_open_shards, Some(64));
        let err = run(&[], "shard-dir = \"shards\"\nmaster = \"m.db\"\n").expect_err("both");
        assert!(err.contains("--shard-dir") || err.contains("--master"), "{err}");
        // The command line's master and the file's folder reach the daemon's own check.
        let both = run(&["--master", "m.db"], "shard-dir = \"shards\"\n").expect("merged");
        let err = super::super::Served::of(&both).err().expect("exclusive").to_string();
        assert!(err.contains("exclusive"), "{err}");
    }

    #[test]
    fn bad_files_name_the_key() {
        for (file, expected) in [
            ("readerz = 2", "unknown key 'readerz'"),
            ("readers = \"two\"", "key 'readers'"),
            ("readers = 0", "key 'readers'"),
            ("heat-half-life = 0", "key 'heat-half-life'"),
            ("create = 1", "key 'create' must be true or false"),
            ("listen = [1]", "key 'listen' must be a string or an integer"),
            ("readers = ", "not valid TOML at line 1"),
        ] {
            let err = run(&[], file).err().unwrap_or_else(|| panic!("{file} should fail"));
            assert!(err.contains(expected), "{file}: {err}");
        }
    }
}
