//! The `shardlite` command-line tool; all logic lives in `shardlite::cli`.

fn main() -> std::process::ExitCode {
    shardlite::cli::main()
}
