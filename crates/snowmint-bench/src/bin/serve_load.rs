//! Load for `snowmint serve`, sent only to a loopback address, bounded in count and time.
//!
//! ```text
//! serve_load closed ADDR PATH CONNS SECONDS     requests back to back on CONNS connections
//! serve_load open   ADDR PATH CONNS SECONDS RATE  RATE requests/s spread over CONNS connections
//! ```
//!
//! Each prints one line of `key=value` pairs: requests, errors, req/s, ids/s (counting the
//! lines or ids in each body) and latency p50/p99/p999 in microseconds. The open-loop mode
//! measures from when each request was *due*, so a stalled server shows as latency instead
//! of as fewer requests (no coordinated omission). Keep-alive HTTP/1.1 over plain sockets:
//! the client costs little, so the figures are the server's.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Stops a run that cannot reach its end, whatever the arguments say.
const MAX_SECONDS: u64 = 120;

struct Outcome {
    latencies_us: Vec<u64>,
    errors: u64,
    ids: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: serve_load closed|open ADDR PATH CONNS SECONDS [RATE]";
    if args.len() < 6 {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let mode = args[1].as_str();
    let addr: SocketAddr = args[2].parse().expect("ADDR like 127.0.0.1:8080");
    assert!(
        addr.ip().is_loopback(),
        "load goes to loopback addresses only"
    );
    let path = args[3].clone();
    let conns: usize = args[4].parse().expect("CONNS");
    let seconds: u64 = args[5].parse::<u64>().expect("SECONDS").min(MAX_SECONDS);
    let rate: Option<f64> = match mode {
        "closed" => None,
        "open" => Some(args.get(6).expect(usage).parse().expect("RATE")),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let duration = Duration::from_secs(seconds);
    let start = Instant::now();
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..conns)
            .map(|i| {
                let path = path.clone();
                s.spawn(move || {
                    // Each connection takes its share of the rate, offset so they interleave.
                    let interval = rate.map(|r| Duration::from_secs_f64(conns as f64 / r));
                    let offset = interval.map(|iv| iv.mul_f64(i as f64 / conns as f64));
                    drive(
                        addr,
                        &path,
                        start,
                        duration,
                        interval,
                        offset.unwrap_or_default(),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let elapsed = start
        .elapsed()
        .as_secs_f64()
        .min(duration.as_secs_f64() + 1.0);
    let mut latencies: Vec<u64> = outcomes
        .iter()
        .flat_map(|o| o.latencies_us.iter().copied())
        .collect();
    latencies.sort_unstable();
    let errors: u64 = outcomes.iter().map(|o| o.errors).sum();
    let ids: u64 = outcomes.iter().map(|o| o.ids).sum();
    let pct = |p: f64| {
        if latencies.is_empty() {
            0
        } else {
            latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)]
        }
    };
    println!(
        "requests={} errors={} req_per_s={:.0} ids_per_s={:.0} p50_us={} p99_us={} p999_us={}",
        latencies.len(),
        errors,
        latencies.len() as f64 / elapsed,
        ids as f64 / elapsed,
        pct(0.50),
        pct(0.99),
        pct(0.999)
    );
}

fn drive(
    addr: SocketAddr,
    path: &str,
    start: Instant,
    duration: Duration,
    interval: Option<Duration>,
    offset: Duration,
) -> Outcome {
    let mut outcome = Outcome {
        latencies_us: Vec::with_capacity(1 << 16),
        errors: 0,
        ids: 0,
    };
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::with_capacity(1 << 20, stream);
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/plain\r\n\r\n");
    let mut due = start + offset;
    let mut body = Vec::new();
    let mut line = String::new();
    while start.elapsed() < duration {
        let sent_from = match interval {
            Some(interval) => {
                let now = Instant::now();
                if due > now {
                    std::thread::sleep(due - now);
                }
                let from = due;
                due += interval;
                from
            }
            None => Instant::now(),
        };
        if writer.write_all(request.as_bytes()).is_err() {
            outcome.errors += 1;
            break;
        }
        // Status line and headers, then exactly Content-Length bytes of body.
        let mut status = 0u16;
        let mut length = 0usize;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                outcome.errors += 1;
                return outcome;
            }
            if status == 0 {
                status = line.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
            } else if let Some(v) = line
                .strip_prefix("content-length: ")
                .or_else(|| line.strip_prefix("Content-Length: "))
            {
                length = v.trim().parse().unwrap_or(0);
            } else if line == "\r\n" {
                break;
            }
        }
        body.resize(length, 0);
        if reader.read_exact(&mut body).is_err() {
            outcome.errors += 1;
            return outcome;
        }
        outcome
            .latencies_us
            .push(u64::try_from(sent_from.elapsed().as_micros()).unwrap_or(u64::MAX));
        if status == 200 {
            // text/plain batches: one id per line; JSON single ids: one.
            let lines = body.iter().filter(|b| **b == b'\n').count() as u64;
            outcome.ids += lines.max(1);
        } else {
            outcome.errors += 1;
        }
    }
    outcome
}
