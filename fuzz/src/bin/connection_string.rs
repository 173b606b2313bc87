//! Fuzz target: see [`shardlite_fuzz::connection_string`]. Built by `cargo afl build` it runs under AFL; built by
//! plain cargo it replays the files named on its command line (or standard input) through the checks.

fn main() {
    #[cfg(fuzzing)]
    afl::fuzz!(|data: &[u8]| shardlite_fuzz::connection_string(data));
    #[cfg(not(fuzzing))]
    shardlite_fuzz::replay(shardlite_fuzz::connection_string);
}
