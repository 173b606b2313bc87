//! Compiles `proto/shardlite.proto` in pure Rust (no protoc) when the `grpc` feature is on.

fn main() {
    #[cfg(feature = "grpc")]
    grpc::compile();
}

#[cfg(feature = "grpc")]
mod grpc {
    pub fn compile() {
        println!("cargo:rerun-if-changed=proto");
        let compiled = protox::Compiler::new(["proto"]).and_then(|mut compiler| {
            compiler
                .include_source_info(true)
                .include_imports(true)
                .open_files(["shardlite.proto"])?;
            Ok(compiler)
        });
        let compiler = match compiled {
            Ok(compiler) => compiler,
            Err(err) => panic!("proto/shardlite.proto does not compile: {err}"),
        };
        // The encoded descriptors, for `wire::proto::FILE_DESCRIPTOR_SET`.
        let out_dir = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR");
        let path = std::path::Path::new(&out_dir).join("shardlite_descriptor.bin");
        if let Err(err) = std::fs::write(&path, compiler.encode_file_descriptor_set()) {
            panic!("writing {}: {err}", path.display());
        }
        let descriptors = compiler.file_descriptor_set();
        if let Err(err) = tonic_prost_build::configure().compile_fds(descriptors) {
            panic!("generating gRPC code failed: {err}");
        }
    }
}
