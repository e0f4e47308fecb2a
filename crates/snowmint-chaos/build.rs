//! Compiles the service's `.proto` with a pure-Rust protobuf compiler, as the server and the
//! client do: the campaign speaks the wire format, never the server's code.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = "../../proto";
    let proto = "../../proto/snowmint/v1/id.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], [root])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(false)
        .compile_fds(descriptors)?;
    Ok(())
}
