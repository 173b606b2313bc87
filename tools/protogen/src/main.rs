//! Compiles `proto/shardlite.proto` in pure Rust and writes what shardlite includes, into
//! `proto/generated/`:
//! - `shardlite.v1.rs`: the messages and the client and server stubs (`wire::proto`);
//! - `shardlite_descriptor.bin`: the encoded `FileDescriptorSet` (`wire::proto::FILE_DESCRIPTOR_SET`);
//! - `shardlite.proto.sha256`: the SHA-256 of the proto they were generated from, which a unit
//!   test of the crate compares with the proto itself, so an edit that is not regenerated fails.
//!
//! Run from anywhere: `cargo run --manifest-path tools/protogen/Cargo.toml`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use sha2::{Digest, Sha256};

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match generate(&root) {
        Ok(out) => {
            println!("wrote {}", out.display());
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn generate(root: &Path) -> Result<PathBuf, String> {
    let proto_dir = root.join("proto");
    let out = proto_dir.join("generated");
    std::fs::create_dir_all(&out).map_err(|e| format!("creating {}: {e}", out.display()))?;

    let mut compiler = protox::Compiler::new([&proto_dir]).map_err(|e| e.to_string())?;
    compiler
        .include_source_info(true)
        .include_imports(true)
        .open_files(["shardlite.proto"])
        .map_err(|e| format!("proto/shardlite.proto does not compile: {e}"))?;
    write(&out.join("shardlite_descriptor.bin"), &compiler.encode_file_descriptor_set())?;
    tonic_prost_build::configure()
        .out_dir(&out)
        .compile_fds(compiler.file_descriptor_set())
        .map_err(|e| format!("generating the gRPC code failed: {e}"))?;

    let proto_path = proto_dir.join("shardlite.proto");
    let proto = std::fs::read(&proto_path).map_err(|e| format!("reading {}: {e}", proto_path.display()))?;
    let mut hex = String::with_capacity(65);
    for byte in Sha256::digest(&proto) {
        let _ = write!(hex, "{byte:02x}");
    }
    hex.push('\n');
    write(&out.join("shardlite.proto.sha256"), hex.as_bytes())?;
    Ok(out)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("writing {}: {e}", path.display()))
}
