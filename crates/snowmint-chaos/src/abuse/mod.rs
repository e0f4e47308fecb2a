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
//! And those the budget of ids in flight is made for (`--attacks budget`): HTTP/2 streams
//! asking for large batches that they never read, or read a trickle at a time, on a few
//! connections or a thousand, from one address or several. Meanwhile a second client
//! asks for a large batch every second and reads it.
//!
//! It prints a Markdown table for each set, and exits non-zero when the well-behaved
//! client saw an error (in a budget attack: 8 s into it or later, the time the server
//! may take to see it). Everything goes to loopback; every attack is bounded in
//! connections and time.

mod args;
mod budget;
mod client;
mod flood;
mod h2;
mod hold;
mod report;
mod server;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;

pub use self::args::Args;
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
    Unread,
    Trickle,
    Crowd,
    CrowdSpread,
}

impl Attack {
    const LIMITS: [Attack; 6] = [
        Attack::Slowloris,
        Attack::Idle,
        Attack::Head,
        Attack::Body,
        Attack::Chunked,
        Attack::ZeroWindow,
    ];
    const BUDGET: [Attack; 4] = [
        Attack::Unread,
        Attack::Trickle,
        Attack::Crowd,
        Attack::CrowdSpread,
    ];

    fn on_budget(self) -> bool {
        Attack::BUDGET
            .iter()
            .any(|a| std::mem::discriminant(a) == std::mem::discriminant(&self))
    }
}

/// How long into a budget attack the server may take before the client is judged: the
/// time the issue gives it to see the attack.
pub const BUDGET_SETTLES: Duration = Duration::from_secs(8);

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
    let connections =
        args.idle.max(args.slowloris).max(args.crowd) + args.h2_connections + args.attackers;
    let fds = raise_fd_limit(connections as u64 + FD_MARGIN)?;
    let serve = Serve::start(&program, &args.serve_args)?;
    eprintln!(
        "abuse: {} serving http={} grpc={}; descriptors: {fds}",
        program.display(),
        serve.http,
        serve.grpc
    );
    let (limits, on_budget) = match args.attacks.as_str() {
        "limits" => (true, false),
        "budget" => (false, true),
        _ => (true, true),
    };
    let mut attacks = vec![Attack::Baseline];
    if limits {
        attacks.extend(Attack::LIMITS);
    }
    if on_budget {
        attacks.extend(Attack::BUDGET);
    }
    let mut rows = Vec::new();
    for attack in attacks {
        let row = run_one(&serve, &args, attack, on_budget);
        eprintln!("abuse: {}: {}", row.attack, row.saw.text);
        rows.push(row);
        if !serve.settle(1.0, SETTLE) {
            eprintln!("abuse: the server still holds connections {SETTLE:?} after the attack");
        }
    }
    if limits {
        let limit_rows: Vec<&Row> = rows.iter().filter(|r| r.budget.is_none()).collect();
        println!("{}", report::markdown(&limit_rows));
    }
    if on_budget {
        // The baseline, measured with the large reader too, and the budget's attacks.
        let budget_rows: Vec<&Row> = rows.iter().filter(|r| r.large.is_some()).collect();
        println!("{}", report::budget_markdown(&budget_rows));
    }
    let failed = rows.iter().any(|row| match &row.budget {
        None => !row.fared.errors.is_empty(),
        Some(_) => !row.fared.since(BUDGET_SETTLES).1.is_empty(),
    });
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs `attack` for one window with the client measured meanwhile, and, with
/// `large_reader`, a client that reads a large batch every second.
fn run_one(serve: &Serve, args: &Args, attack: Attack, large_reader: bool) -> Row {
    let window = Duration::from_secs(if attack.on_budget() {
        args.budget_window_s
    } else {
        args.window_s
    });
    let plan = |connections, from, trickle| budget::Plan {
        connections,
        streams: args.budget_streams,
        count: args.budget_count,
        from,
        trickle,
    };
    let budget_plan = match attack {
        Attack::Unread => Some(plan(args.budget_connections, budget::addresses(1), None)),
        Attack::Trickle => Some(plan(
            args.budget_connections,
            budget::addresses(1),
            Some(Duration::from_secs(args.trickle_s)),
        )),
        Attack::Crowd => Some(plan(args.crowd, budget::addresses(1), None)),
        Attack::CrowdSpread => Some(plan(
            args.crowd,
            budget::addresses(args.crowd_addresses),
            None,
        )),
        _ => None,
    };
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
        Attack::Unread | Attack::Trickle | Attack::Crowd | Attack::CrowdSpread => {
            let plan = budget_plan.as_ref().expect("a budget attack has its plan");
            let reads = match plan.trickle {
                None => "never read".to_string(),
                Some(every) => format!("64 KiB read every {} s", every.as_secs()),
            };
            format!(
                "{} connections x {} streams of {} ids, {reads}, from {} address{}",
                plan.connections,
                plan.streams,
                plan.count,
                plan.from.len(),
                if plan.from.len() == 1 { "" } else { "es" }
            )
        }
    };
    let abandoned_before = serve.metric("snowmint_ids_abandoned_total ").unwrap_or(0.0);
    let attacker = {
        let budget_plan = budget_plan.clone();
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
                Attack::Unread | Attack::Trickle | Attack::Crowd | Attack::CrowdSpread => {
                    let plan = budget_plan.expect("a budget attack has its plan");
                    budget::run(http, &plan, &ready, &stop)
                }
            }
        })
    };
    // The window starts once the attack is in place.
    let _ = started.recv();
    let sampler = {
        let (process, stop) = (serve.process(), Arc::clone(&stop));
        let in_flight = budget_plan.is_some().then(|| serve.metrics_reader());
        std::thread::spawn(move || {
            let mut peak = Sample::default();
            let mut held = 0.0f64;
            while !stop.load(Ordering::Relaxed) {
                let now = process.sample();
                peak.rss_kb = peak.rss_kb.max(now.rss_kb);
                peak.threads = peak.threads.max(now.threads);
                peak.fds = peak.fds.max(now.fds);
                if let Some(read) = &in_flight {
                    held = held.max(read("snowmint_ids_in_flight ").unwrap_or(0.0));
                }
                std::thread::sleep(SAMPLE_EVERY);
            }
            (peak, held)
        })
    };
    let large = large_reader.then(|| {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            client::measure(http, client::LARGE, 1, window, usize::MAX, &stop)
        })
    });
    let fared = client::measure(http, client::SMALL, args.rate, window, usize::MAX, &stop);
    stop.store(true, Ordering::Relaxed);
    let (peak, held) = sampler.join().unwrap_or_default();
    let large = large.map(|t| t.join().unwrap_or_default());
    let server = format!(
        "{} kB RSS, {} threads, {} fds",
        peak.rss_kb, peak.threads, peak.fds
    );
    let saw = attacker.join().unwrap_or_else(|_| Saw {
        text: "the attacker panicked".into(),
    });
    let budget = budget_plan.is_some().then(|| report::Budget {
        in_flight_peak: held as u64,
        abandoned: (serve.metric("snowmint_ids_abandoned_total ").unwrap_or(0.0) - abandoned_before)
            as u64,
    });
    Row {
        attack: name,
        saw,
        fared,
        server,
        large,
        budget,
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
