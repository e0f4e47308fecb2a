//! The server's tests over real sockets, one binary for all: each module starts the server
//! in this process on loopback ports and talks to it as a client would (HTTP, gRPC,
//! Thrift, a real Chromium for the page, and the budget's attacks). One binary links once;
//! `cargo nextest run` (scripts/test) still runs every test in a process of its own, and
//! `cargo test -p snowmint-server --test server MODULE::` runs one module's tests.

#[path = "support/attack.rs"]
mod attacker;
#[path = "support/grpc.rs"]
mod running;
mod support;
mod webdriver;

mod browser;
mod budget;
mod error_chains;
mod grpc;
mod grpc_props;
mod http;
mod thrift;
