//! What `snowmint-chaos abuse` takes: the server to attack, the size of each attack, and
//! which attacks to run.

use std::path::PathBuf;

/// What `snowmint-chaos abuse` takes.
#[derive(clap::Args)]
pub struct Args {
    /// The `snowmint` binary to attack; default: the one next to this binary.
    #[arg(long, env = "SNOWMINT_CHAOS_SNOWMINT")]
    pub(super) snowmint: Option<PathBuf>,
    /// Seconds each attack (and the baseline) runs while the client is measured; default
    /// 15, past the server's 10 s header timeout.
    #[arg(long, default_value_t = 15)]
    pub(super) window_s: u64,
    /// Requests a second the well-behaved client makes; default 200.
    #[arg(long, default_value_t = 200)]
    pub(super) rate: u32,
    /// Slowloris connections; default 500.
    #[arg(long, default_value_t = 500)]
    pub(super) slowloris: usize,
    /// Milliseconds between the bytes slowloris sends on each connection; default 1000.
    #[arg(long, default_value_t = 1000)]
    pub(super) dribble_ms: u64,
    /// Idle connections; default 2000.
    #[arg(long, default_value_t = 2000)]
    pub(super) idle: usize,
    /// Attacker threads sending oversized requests; default 4.
    #[arg(long, default_value_t = 4)]
    pub(super) attackers: usize,
    /// Bytes of the oversized header; default 65536 (the server takes 16384).
    #[arg(long, default_value_t = 64 * 1024)]
    pub(super) header_bytes: usize,
    /// Bytes of the oversized body; default 1048576 (the server takes 16384).
    #[arg(long, default_value_t = 1024 * 1024)]
    pub(super) body_bytes: usize,
    /// HTTP/2 connections holding zero-window streams; default 10.
    #[arg(long, default_value_t = 10)]
    pub(super) h2_connections: usize,
    /// Zero-window streams on each of them; default 100 (the server's stream limit).
    #[arg(long, default_value_t = 100)]
    pub(super) h2_streams: usize,
    /// Which attacks: `limits` (connection abuse), `budget` (ids in flight), or `all`.
    #[arg(long, default_value = "all", value_parser = ["all", "limits", "budget"])]
    pub(super) attacks: String,
    /// Seconds each attack on the budget runs; default 30: past the 8 s after which the
    /// well-behaved client must be answered within 1 s, and past one trickle.
    #[arg(long, default_value_t = 30)]
    pub(super) budget_window_s: u64,
    /// Connections asking for batches they do not read; default 16.
    #[arg(long, default_value_t = 16)]
    pub(super) budget_connections: usize,
    /// Streams on each; default 4.
    #[arg(long, default_value_t = 4)]
    pub(super) budget_streams: usize,
    /// Ids each stream asks for; default 65536 (16 x 4 x 65536 is the default budget).
    #[arg(long, default_value_t = 65_536)]
    pub(super) budget_count: u64,
    /// Seconds between the 64 KiB a trickling stream takes; default 20.
    #[arg(long, default_value_t = 20)]
    pub(super) trickle_s: u64,
    /// Connections of the crowd attacks, each with --budget-streams unread streams;
    /// default 1000.
    #[arg(long, default_value_t = 1000)]
    pub(super) crowd: usize,
    /// Addresses the second crowd comes from (127.0.0.2 and up); default 8.
    #[arg(long, default_value_t = 8)]
    pub(super) crowd_addresses: usize,
    /// An argument for `snowmint serve`, such as `--header-read-timeout-ms=2000`; repeat for
    /// more. Default: none, so the server's own limits are measured.
    #[arg(long = "serve-arg", allow_hyphen_values = true)]
    pub(super) serve_args: Vec<String>,
}
