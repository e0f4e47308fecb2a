//! The gRPC wire format of the snowmint ID service, `snowmint.v1.IdService`, generated once
//! from `proto/snowmint/v1/id.proto` for every crate that speaks it.
//!
//! - The messages are always here, in [`v1`].
//! - Feature `client`: `v1::id_service_client::IdServiceClient`, with prost's codec. The
//!   Rust client, the fault campaign, the benchmarks and the server's tests call through it.
//! - Feature `server`: `v1::id_service_server` (the `IdService` trait and its tonic
//!   service), with [`codec::RequestCodec`].
//!
//! The two sides differ in one thing, the codec. A request the server cannot decode is the
//! caller's mistake, `INVALID_ARGUMENT`; prost's codec says `INTERNAL`, which blames the
//! server. A response the client cannot decode is not the client's argument, so the client
//! keeps prost's codec. The codec depends on prost and tonic alone, not on the server, so
//! it lives here and the server side is generated here too: the server adds no build step
//! of its own, and the `.proto` is compiled by this crate only.
//!
//! The folder `proto/` also holds `thrift/snowflake.thrift`, Twitter's published Snowflake
//! IDL, which the server's Thrift API serves; nothing here is generated from it.
//!
//! ```
//! use snowmint_proto::v1::NextBatchRequest;
//! use prost::Message;
//!
//! let request = NextBatchRequest { count: 3 };
//! let bytes = request.encode_to_vec();
//! assert_eq!(NextBatchRequest::decode(bytes.as_slice())?, request);
//! # Ok::<(), prost::DecodeError>(())
//! ```

#![warn(missing_docs)]

#[cfg(feature = "server")]
pub mod codec;

/// The package `snowmint.v1`: its messages, and the client and server its features select.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod v1 {
    tonic::include_proto!("snowmint.v1");
    #[cfg(feature = "client")]
    include!(concat!(env!("OUT_DIR"), "/client/snowmint.v1.rs"));
}
