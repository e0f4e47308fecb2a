//! The registries against real servers, one binary for all: the conformance suite every
//! backend passes, then what only each one does (TTLs, failovers, restores, TLS and
//! passwords). One binary links once; `cargo nextest run` (scripts/test) still runs every
//! test in a process of its own, and `cargo test -p snowmint-lease --test lease BACKEND::`
//! runs one backend's tests.

mod conformance;

mod etcd;
mod file;
mod postgres;
mod postgres_pooled;
mod postgres_secured;
mod redis;
mod redis_secured;
mod zookeeper;
