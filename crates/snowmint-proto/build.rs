//! Compiles `proto/snowmint/v1/id.proto` with a pure-Rust protobuf compiler, so a fresh
//! machine needs no `protoc`.
//!
//! Two passes over the same descriptors: the messages and the server trait, whose codec
//! refuses malformed requests as the caller's error (`crate::codec::RequestCodec`); then the
//! client alone, over the same message types, with prost's codec. The server module is
//! compiled only with the `server` feature, the client (a file of its own) only with
//! `client`.

use std::path::PathBuf;

/// The package, as the `.proto` names it; fully qualified (with a leading dot), as prost
/// matches paths; and where its messages are in this crate.
const PACKAGE: &str = "snowmint.v1";
const QUALIFIED: &str = ".snowmint.v1";
const MESSAGES: &str = "crate::v1";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = "proto";
    let proto = "proto/snowmint/v1/id.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], [root])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .server_mod_attribute(PACKAGE, "#[cfg(feature = \"server\")]")
        .codec_path("crate::codec::RequestCodec")
        .compile_fds(descriptors.clone())?;
    let client = PathBuf::from(std::env::var("OUT_DIR")?).join("client");
    std::fs::create_dir_all(&client)?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(false)
        .extern_path(QUALIFIED, MESSAGES)
        .out_dir(&client)
        .compile_fds(descriptors)?;
    Ok(())
}
