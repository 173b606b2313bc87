//! Every seed input passes its target's checks, so the fuzzer starts from inputs that hold the
//! properties, and `cargo test` here checks the harness itself without the fuzzer.

use std::fs;
use std::path::Path;

fn each_seed(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds").join(target);
    let mut count = 0;
    for entry in fs::read_dir(&dir).unwrap_or_else(|err| panic!("{}: {err}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        check(&fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display())));
        count += 1;
    }
    assert!(count > 0, "no seeds in {}", dir.display());
}

#[test]
fn connection_string_seeds() {
    each_seed("connection_string", shardlite_fuzz::connection_string);
}

#[test]
fn transaction_id_seeds() {
    each_seed("transaction_id", shardlite_fuzz::transaction_id);
}

#[test]
fn shard_map_seeds() {
    each_seed("shard_map", shardlite_fuzz::shard_map);
}

#[test]
fn classify_seeds() {
    each_seed("classify", shardlite_fuzz::classify_sql);
}

#[test]
fn sqlite_split_seeds() {
    each_seed("sqlite_split", shardlite_fuzz::sqlite_split);
}
