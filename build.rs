//! Compiles `proto/shardlite.proto` in pure Rust (no protoc) when the `grpc` feature is on.

fn main() {
    #[cfg(feature = "grpc")]
    grpc::compile();
}

#[cfg(feature = "grpc")]
mod grpc {
    pub fn compile() {
        println!("cargo:rerun-if-changed=proto");
        let descriptors = match protox::compile(["shardlite.proto"], ["proto"]) {
            Ok(descriptors) => descriptors,
            Err(err) => panic!("proto/shardlite.proto does not compile: {err}"),
        };
        if let Err(err) = tonic_prost_build::configure().compile_fds(descriptors) {
            panic!("generating gRPC code failed: {err}");
        }
    }
}
