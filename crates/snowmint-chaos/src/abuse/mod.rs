//! Connection abuse against one `snowmint serve` on loopback, with a well-behaved client
//! measured meanwhile.
//!
//! Each attack runs for one window while the client makes a steady stream of small
//! requests, each on a new connection; a first window with no attack is the baseline. The
//! attacks are those the server's limits are made for (see `docs/OPERATIONS.md`):
//!
//! - slowloris: request heads dribbled a byte at a time on many connections;
//! - idle: many connections that never say anything;
//! - oversized heads, and oversized bodies, with a length and chunked;
//! - HTTP/2 streams held at a zero window, on the gRPC port.
//!
//! It prints a Markdown table, and exits non-zero when the well-behaved client saw an
//! error. Everything goes to loopback; every attack is bounded in connections and time.

mod client;
mod flood;
mod h2;
mod hold;
mod report;
mod server;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;

use self::flood::Oversized;
use self::report::{Row, Saw};
use self::server::{Sample, Serve};

/// Descriptors the tool needs beyond its attack connections: the client's, the log's, the
/// standard ones, with room to spare.
const FD_MARGIN: u64 = 256;
/// How often the server's memory, threads and descriptors are sampled during a window.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);
/// How long the server may take to let go of one attack's connections before the next.
const SETTLE: Duration = Duration::from_secs(10);

/// What `snowmint-chaos abuse` takes.
#[derive(clap::Args)]
pub struct Args {
    /// The `snowmint` binary to attack; default: the one next to this binary.
    #[arg(long, env = "SNOWMINT_CHAOS_SNOWMINT")]
    snowmint: Option<PathBuf>,
    /// Seconds each attack (and the baseline) runs while the client is measured; default
    /// 15, past the server's 10 s header timeout.
    #[arg(long, default_value_t = 15)]
    window_s: u64,
    /// Requests a second the well-behaved client makes; default 200.
    #[arg(long, default_value_t = 200)]
    rate: u32,
    /// Slowloris connections; default 500.
    #[arg(long, default_value_t = 500)]
    slowloris: usize,
    /// Milliseconds between the bytes slowloris sends on each connection; default 1000.
    #[arg(long, default_value_t = 1000)]
    dribble_ms: u64,
    /// Idle connections; default 2000.
    #[arg(long, default_value_t = 2000)]
    idle: usize,
    /// Attacker threads sending oversized requests; default 4.
    #[arg(long, default_value_t = 4)]
    attackers: usize,
    /// Bytes of the oversized header; default 65536 (the server takes 16384).
    #[arg(long, default_value_t = 64 * 1024)]
    header_bytes: usize,
    /// Bytes of the oversized body; default 1048576 (the server takes 16384).
    #[arg(long, default_value_t = 1024 * 1024)]
    body_bytes: usize,
    /// HTTP/2 connections holding zero-window streams; default 10.
    #[arg(long, default_value_t = 10)]
    h2_connections: usize,
    /// Zero-window streams on each of them; default 100 (the server's stream limit).
    #[arg(long, default_value_t = 100)]
    h2_streams: usize,
    /// An argument for `snowmint serve`, such as `--header-read-timeout-ms=2000`; repeat for
    /// more. Default: none, so the server's own limits are measured.
    #[arg(long = "serve-arg", allow_hyphen_values = true)]
    serve_args: Vec<String>,
}

/// One attack.
#[derive(Debug, Clone, Copy)]
enum Attack {
    Baseline,
    Slowloris,
    Idle,
    Head,
    Body,
    Chunked,
    ZeroWindow,
}

/// Runs each attack and reports how the other clients fared.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let program = match &args.snowmint {
        Some(path) => path.clone(),
        None => std::env::current_exe()
            .context("this binary's path")?
            .with_file_name("snowmint"),
    };
    anyhow::ensure!(
        program.exists(),
        "{} does not exist: build it (cargo build -p snowmint-cli) or give --snowmint",
        program.display()
    );
    let connections = args.idle.max(args.slowloris) + args.h2_connections + args.attackers;
    let fds = raise_fd_limit(connections as u64 + FD_MARGIN)?;
    let serve = Serve::start(&program, &args.serve_args)?;
    eprintln!(
        "abuse: {} serving http={} grpc={}; descriptors: {fds}",
        program.display(),
        serve.http,
        serve.grpc
    );
    let mut rows = Vec::new();
    for attack in [
        Attack::Baseline,
        Attack::Slowloris,
        Attack::Idle,
        Attack::Head,
        Attack::Body,
        Attack::Chunked,
        Attack::ZeroWindow,
    ] {
        let row = run_one(&serve, &args, attack);
        eprintln!("abuse: {}: {}", row.attack, row.saw.text);
        rows.push(row);
        if !serve.settle(1.0, SETTLE) {
            eprintln!("abuse: the server still holds connections {SETTLE:?} after the attack");
        }
    }
    println!("{}", report::markdown(&rows));
    let failed = rows.iter().any(|row| !row.fared.errors.is_empty());
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs `attack` for one window with the client measured meanwhile.
fn run_one(serve: &Serve, args: &Args, attack: Attack) -> Row {
    let window = Duration::from_secs(args.window_s);
    let stop = Arc::new(AtomicBool::new(false));
    let (ready, started) = mpsc::channel();
    let (http, grpc) = (serve.http, serve.grpc);
    let name = match attack {
        Attack::Baseline => "none (baseline)".to_string(),
        Attack::Slowloris => format!(
            "slowloris: {} connections, a byte every {} ms",
            args.slowloris, args.dribble_ms
        ),
        Attack::Idle => format!("{} idle connections", args.idle),
        Attack::Head => format!(
            "{} header bytes, {} attackers",
            args.header_bytes, args.attackers
        ),
        Attack::Body => format!(
            "{} body bytes with Content-Length, {} attackers",
            args.body_bytes, args.attackers
        ),
        Attack::Chunked => format!(
            "{} body bytes chunked, {} attackers",
            args.body_bytes, args.attackers
        ),
        Attack::ZeroWindow => format!(
            "HTTP/2 zero window: {} connections x {} streams",
            args.h2_connections, args.h2_streams
        ),
    };
    let attacker = {
        let stop = Arc::clone(&stop);
        let (slowloris, idle, attackers) = (args.slowloris, args.idle, args.attackers);
        let dribble = Duration::from_millis(args.dribble_ms);
        let (header_bytes, body_bytes) = (args.header_bytes, args.body_bytes);
        let (h2_connections, h2_streams) = (args.h2_connections, args.h2_streams);
        std::thread::spawn(move || {
            let flood = |what| {
                let _ = ready.send(());
                flood::flood(http, what, attackers, &stop)
            };
            match attack {
                Attack::Baseline => {
                    let _ = ready.send(());
                    Saw { text: "-".into() }
                }
                Attack::Slowloris => hold::hold(http, slowloris, Some(dribble), &ready, &stop),
                Attack::Idle => hold::hold(http, idle, None, &ready, &stop),
                Attack::Head => flood(Oversized::Head(header_bytes)),
                Attack::Body => flood(Oversized::Body(body_bytes)),
                Attack::Chunked => flood(Oversized::Chunked(body_bytes)),
                Attack::ZeroWindow => {
                    h2::zero_window(grpc, h2_connections, h2_streams, &ready, &stop)
                }
            }
        })
    };
    // The window starts once the attack is in place.
    let _ = started.recv();
    let sampler = {
        let (process, stop) = (serve.process(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut peak = Sample::default();
            while !stop.load(Ordering::Relaxed) {
                let now = process.sample();
                peak.rss_kb = peak.rss_kb.max(now.rss_kb);
                peak.threads = peak.threads.max(now.threads);
                peak.fds = peak.fds.max(now.fds);
                std::thread::sleep(SAMPLE_EVERY);
            }
            peak
        })
    };
    let fared = client::measure(http, args.rate, window, usize::MAX, &stop);
    stop.store(true, Ordering::Relaxed);
    let peak = sampler.join().unwrap_or_default();
    let server = format!(
        "{} kB RSS, {} threads, {} fds",
        peak.rss_kb, peak.threads, peak.fds
    );
    let saw = attacker.join().unwrap_or_else(|_| Saw {
        text: "the attacker panicked".into(),
    });
    Row {
        attack: name,
        saw,
        fared,
        server,
    }
}

/// Raises this process's soft limit on open descriptors to at least `needed` (the server
/// it starts inherits it), up to the hard limit; returns the limit now in force.
fn raise_fd_limit(needed: u64) -> anyhow::Result<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } != 0 {
        return Err(std::io::Error::last_os_error()).context("getrlimit(RLIMIT_NOFILE)");
    }
    if limit.rlim_cur >= needed {
        return Ok(limit.rlim_cur);
    }
    anyhow::ensure!(
        limit.rlim_max >= needed,
        "{needed} descriptors needed, more than the hard limit {} (ulimit -Hn)",
        limit.rlim_max
    );
    limit.rlim_cur = needed.max(limit.rlim_cur);
    // SAFETY: setrlimit reads the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit) } != 0 {
        return Err(std::io::Error::last_os_error()).context("setrlimit(RLIMIT_NOFILE)");
    }
    Ok(limit.rlim_cur)
}
