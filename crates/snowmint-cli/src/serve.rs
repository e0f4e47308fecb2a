//! `snowmint serve`: the ID service over HTTP and gRPC.

use std::path::PathBuf;

use anyhow::Context;
use snowmint_server::{Config, Settings};

use crate::failure::{BadInput, Failure};

/// Serve ids over HTTP/JSON and gRPC, with metrics, health probes and a web page
///
/// Settings come from a TOML file (--config), then SNOWMINT_* variables, then flags: each
/// overrides the one before. The file's keys are the flags' names with underscores
/// (http_addr, worker, ...). With nothing set, it listens on 127.0.0.1:8080 (HTTP) and
/// 127.0.0.1:50051 (gRPC) as datacenter 0, worker 0 of the twitter layout, and keeps its
/// high-water mark in the per-user state directory. SIGTERM or SIGINT stops it gracefully.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// TOML file of settings (default: none)
    #[arg(long, env = "SNOWMINT_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// HTTP listen address; port 0 picks a free port (default: 127.0.0.1:8080)
    #[arg(long, env = "SNOWMINT_HTTP_ADDR", value_name = "ADDR")]
    http_addr: Option<String>,
    /// gRPC listen address, or `off` (default: 127.0.0.1:50051)
    #[arg(long, env = "SNOWMINT_GRPC_ADDR", value_name = "ADDR")]
    grpc_addr: Option<String>,
    /// Directory of the high-water-mark files (default: $XDG_STATE_HOME/snowmint or ~/.local/state/snowmint)
    #[arg(long, env = "SNOWMINT_STATE_DIR", value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Datacenter id (default: 0)
    #[arg(long, env = "SNOWMINT_DATACENTER", value_name = "D")]
    datacenter: Option<u64>,
    /// Worker id (default: 0). Two processes with the same worker id and different state
    /// directories, or on different hosts, issue the same ids: give each its own, or use --lease
    #[arg(long, env = "SNOWMINT_WORKER", value_name = "W")]
    worker: Option<u64>,
    /// Layout preset that can generate: twitter, sonyflake or baidu (default: twitter)
    #[arg(long, env = "SNOWMINT_LAYOUT", value_name = "PRESET")]
    layout: Option<String>,
    /// Epoch, as ms since the Unix epoch or RFC 3339 (default: the layout's)
    #[arg(long, env = "SNOWMINT_EPOCH", value_name = "MS|RFC3339")]
    epoch: Option<String>,
    /// Bearer token required on every endpoint but /healthz and /readyz (default: none)
    #[arg(
        long,
        env = "SNOWMINT_AUTH_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    auth_token: Option<String>,
    /// Largest count of /v1/ids and gRPC batches (default: 100000)
    #[arg(long, env = "SNOWMINT_MAX_BATCH", value_name = "N")]
    max_batch: Option<u64>,
    /// Most bytes one response of ids or serials may carry, over HTTP or gRPC (default: 33554432, 32 MiB)
    #[arg(long, env = "SNOWMINT_MAX_RESPONSE_BYTES", value_name = "BYTES")]
    max_response_bytes: Option<u64>,
    /// How long shutdown waits for requests in flight, in ms (default: 10000)
    #[arg(long, env = "SNOWMINT_SHUTDOWN_GRACE_MS", value_name = "MS")]
    shutdown_grace_ms: Option<u64>,
    /// Started behind the high-water mark: wait (not ready until the clock passes) or fail (default: wait)
    #[arg(long, env = "SNOWMINT_RESTART_BEHIND", value_name = "wait|fail")]
    restart_behind: Option<String>,
    /// Clock rollback policy: refuse, wait, logical or spare (default: wait)
    #[arg(long, env = "SNOWMINT_ROLLBACK", value_name = "POLICY")]
    rollback: Option<String>,
    /// Longest wait of the wait and spare rollback policies, in ms (default: 5000)
    #[arg(long, env = "SNOWMINT_ROLLBACK_WAIT_MS", value_name = "MS")]
    rollback_wait_ms: Option<u64>,
    /// Future time a spent tick may borrow, in ms; 0 waits for the next tick (default: 0)
    #[arg(long, env = "SNOWMINT_OVERFLOW_LEAD_MS", value_name = "MS")]
    overflow_lead_ms: Option<u64>,
    /// Sequence start of each tick: zero, random or continue (default: zero)
    #[arg(long, env = "SNOWMINT_SEQUENCE_START", value_name = "START")]
    sequence_start: Option<String>,
    /// How far ahead the high-water mark is reserved, in ms (default: 1000)
    #[arg(long, env = "SNOWMINT_RESERVE_AHEAD_MS", value_name = "MS")]
    reserve_ahead_ms: Option<u64>,
    /// Where the worker id comes from: static:W, hostname, file:DIR, redis://HOST:PORT,
    /// etcd://HOST:PORT or postgres://USER@HOST:PORT/DB (default: static: the --worker value)
    #[arg(long, env = "SNOWMINT_LEASE", value_name = "URL")]
    lease: Option<String>,
    /// This instance's name in the registry; it gets its old worker id back when free (default: the host name)
    #[arg(long, env = "SNOWMINT_IDENTITY", value_name = "NAME")]
    identity: Option<String>,
    /// Lease TTL in ms (default: 10000)
    #[arg(long, env = "SNOWMINT_LEASE_TTL_MS", value_name = "MS")]
    lease_ttl_ms: Option<u64>,
    /// Lease renewal interval in ms (default: a third of the TTL)
    #[arg(long, env = "SNOWMINT_LEASE_RENEW_MS", value_name = "MS")]
    lease_renew_ms: Option<u64>,
    /// Safety margin for clock skew, taken off the TTL, in ms (default: a tenth of the TTL)
    #[arg(long, env = "SNOWMINT_LEASE_MARGIN_MS", value_name = "MS")]
    lease_margin_ms: Option<u64>,
    /// Open connections over both ports; beyond it new ones are refused (default: 10000)
    #[arg(long, env = "SNOWMINT_MAX_CONNECTIONS", value_name = "N")]
    max_connections: Option<u64>,
    /// Longest time to receive a request head, in ms (default: 10000)
    #[arg(long, env = "SNOWMINT_HEADER_READ_TIMEOUT_MS", value_name = "MS")]
    header_read_timeout_ms: Option<u64>,
    /// Longest time a connection may make no progress (no request, no response byte taken), in ms (default: 60000)
    #[arg(long, env = "SNOWMINT_IDLE_TIMEOUT_MS", value_name = "MS")]
    idle_timeout_ms: Option<u64>,
    /// Largest request head, request line and headers together, in bytes (default: 16384)
    #[arg(long, env = "SNOWMINT_MAX_HEADER_BYTES", value_name = "BYTES")]
    max_header_bytes: Option<u64>,
    /// HTTP/2 streams one connection may have open, advertised in SETTINGS (default: 100)
    #[arg(long, env = "SNOWMINT_MAX_CONCURRENT_STREAMS", value_name = "N")]
    max_concurrent_streams: Option<u64>,
    /// Ids being issued or waiting in responses, over all connections (default: 4194304)
    #[arg(long, env = "SNOWMINT_MAX_IDS_IN_FLIGHT", value_name = "N")]
    max_ids_in_flight: Option<u64>,
    /// Ids being issued or waiting in responses, on one connection (default: 262144, or max_batch if larger)
    #[arg(
        long,
        env = "SNOWMINT_MAX_IDS_IN_FLIGHT_PER_CONNECTION",
        value_name = "N"
    )]
    max_ids_in_flight_per_connection: Option<u64>,
    /// Response bytes one HTTP/2 stream may buffer for a slow reader (default: 65536)
    #[arg(long, env = "SNOWMINT_STREAM_BUFFER_BYTES", value_name = "BYTES")]
    stream_buffer_bytes: Option<u64>,
}

impl ServeArgs {
    /// The flags and variables as a settings layer (the config file path aside).
    fn into_settings(self) -> (Option<PathBuf>, Settings) {
        let settings = Settings {
            http_addr: self.http_addr,
            grpc_addr: self.grpc_addr,
            state_dir: self.state_dir,
            datacenter: self.datacenter,
            worker: self.worker,
            layout: self.layout,
            epoch: self.epoch,
            auth_token: self.auth_token,
            max_batch: self.max_batch,
            max_response_bytes: self.max_response_bytes,
            shutdown_grace_ms: self.shutdown_grace_ms,
            restart_behind: self.restart_behind,
            rollback: self.rollback,
            rollback_wait_ms: self.rollback_wait_ms,
            overflow_lead_ms: self.overflow_lead_ms,
            sequence_start: self.sequence_start,
            reserve_ahead_ms: self.reserve_ahead_ms,
            lease: self.lease,
            identity: self.identity,
            lease_ttl_ms: self.lease_ttl_ms,
            lease_renew_ms: self.lease_renew_ms,
            lease_margin_ms: self.lease_margin_ms,
            max_connections: self.max_connections,
            header_read_timeout_ms: self.header_read_timeout_ms,
            idle_timeout_ms: self.idle_timeout_ms,
            max_header_bytes: self.max_header_bytes,
            max_concurrent_streams: self.max_concurrent_streams,
            max_ids_in_flight: self.max_ids_in_flight,
            max_ids_in_flight_per_connection: self.max_ids_in_flight_per_connection,
            stream_buffer_bytes: self.stream_buffer_bytes,
        };
        (self.config, settings)
    }
}

impl TryFrom<ServeArgs> for Config {
    type Error = anyhow::Error;

    fn try_from(args: ServeArgs) -> anyhow::Result<Config> {
        let (file, flags) = args.into_settings();
        let base = match file {
            Some(path) => Settings::from_file(&path)?,
            None => Settings::default(),
        };
        Ok(Config::try_from(base.overlay(flags))?)
    }
}

/// Resolves when SIGTERM or SIGINT arrives.
async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        // Without signal handlers the process can still be stopped; it just won't drain.
        _ => std::future::pending().await,
    }
}

pub fn run(args: ServeArgs) -> Result<(), Failure> {
    let config = Config::try_from(args).bad_input()?;
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SNOWMINT_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("snowmint-serve")
        .build()
        .context("cannot start the async runtime")?;
    runtime
        .block_on(snowmint_server::serve(config, terminated()))
        .context("serve")?;
    Ok(())
}
