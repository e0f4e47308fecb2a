//! The CLI's process tests, one binary for all: each module runs the real `snowmint`
//! (and its servers, registries and clients) as a user would, on loopback. One binary
//! links once; `cargo nextest run` (scripts/test) still runs every test in a process of
//! its own, and `cargo test -p snowmint-cli --test cli MODULE::` runs one module's tests.
//! The image's tests are ignored unless asked for, as scripts/test does:
//! `cargo test -p snowmint-cli --test cli image:: -- --ignored`.

mod fleet;
mod support;

mod admin;
mod bad_input;
mod client;
mod client_tls;
mod clients;
mod clock;
mod clock_steps;
mod cluster_etcd;
mod cluster_postgres;
mod cluster_zookeeper;
mod compose;
mod failures;
mod generate;
mod identity;
mod image;
mod kubernetes;
mod layout;
mod lease_file;
mod leases;
mod limits;
mod listing;
mod monitoring;
mod parse;
mod release;
mod schemathesis;
mod secrets;
mod secured;
mod secured_leases;
mod sentinel;
mod serial;
mod serve;
mod single_id_waits;
mod systemd;
mod thrift;
mod tls;
