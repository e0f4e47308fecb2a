//! Compiles the service's `.proto` with a pure-Rust protobuf compiler, so a fresh machine
//! needs no `protoc`.
//!
//! Two passes: the messages and the server, whose codec refuses malformed requests as the
//! client's error; then the client alone, over the same message types, with prost's codec.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = "../../proto";
    let proto = "../../proto/snowmint/v1/id.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], [root])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .codec_path("crate::grpc::codec::RequestCodec")
        .compile_fds(descriptors.clone())?;
    let client = PathBuf::from(std::env::var("OUT_DIR")?).join("client");
    std::fs::create_dir_all(&client)?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(false)
        .extern_path(".snowmint.v1", "crate::grpc::proto")
        .out_dir(&client)
        .compile_fds(descriptors)?;
    Ok(())
}
